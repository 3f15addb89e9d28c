/**
 * AKS listed through Azure Resource Graph, over random sequences of cloud changes and of an index that lags
 * ARM, through every way the engine reads a scope or a cluster: the whole run, a run of one subscription (what
 * `sync --scope` and the deployed scope worker run) and the one-cluster sync (what a cloud's event and a
 * follow-up look run). The real Resource Graph and Container Service SDKs talk to the local ARM, whose index is
 * held at a random older copy; the profiles are read from the file hub's own files.
 *
 * The oracle is ARM's state as the test set it, never cpsync's plan:
 *   G1 no profile of a cluster ARM holds is deleted, whatever the graph shows;
 *   G2 no profile goes back to a version older than one it showed while its cluster lives;
 *   G3 once the graph is in step, a whole run leaves the hub equal to ARM: every cluster, its version;
 *   G4 after a cluster's own sync, its profile is as ARM holds it (or gone, when ARM has it no more);
 *   G5 no sync makes a profile for a cluster ARM no longer holds (a graph behind a deletion brings nothing back).
 * Seeded; a failure prints the seed and the sequence of steps.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { load } from 'js-yaml';
import { AksSource } from '../../adapters/aks/AksSource.ts';
import { JsonLinesFileBus } from '../../adapters/bus/JsonLinesBus.ts';
import { FileHub } from '../../adapters/hub/FileHub.ts';
import { FileAnswerStore } from '../../adapters/outbox/FileAnswerStore.ts';
import { FileIntentLog } from '../../adapters/outbox/FileIntentLog.ts';
import { FileAbsenceStore } from '../../adapters/outbox/FileAbsenceStore.ts';
import { FileOutbox } from '../../adapters/outbox/FileOutbox.ts';
import { runSync, syncCluster } from '../../core/sync/engine.ts';
import type { Scope } from '../../core/domain/model/scope.ts';
import type { ManagedClusterJson } from '../env/fakes/armServer.ts';
import { armForSuite } from '../support/arm.ts';
import { inventoryOptions, runSettings } from '../support/settings.ts';
import { temporaryDirectory } from '../support/tmp.ts';

const SEED = Number(process.env.CPSYNC_PROPERTY_SEED ?? 20261126);
const SUBS = ['00000000-1111-2222-3333-b00000000001', '00000000-1111-2222-3333-b00000000002'];
const NAMES = ['alpha', 'bravo'] as const;
const NAMESPACE = 'graph';
const ANNOTATION_PROVIDER_ID = 'cpsync.io/provider-id';

type Step =
  | { kind: 'add' | 'remove' | 'upgrade' | 'busy' | 'event'; sub: number; name: number }
  | { kind: 'index' | 'inStep' | 'all' }
  | { kind: 'one'; sub: number };

const cluster = { sub: fc.nat(SUBS.length - 1), name: fc.nat(NAMES.length - 1) };
const on = <K extends 'add' | 'remove' | 'upgrade' | 'busy' | 'event'>(kind: K) =>
  fc.record({ kind: fc.constant(kind), ...cluster });
/** Weighted so that clusters live long enough to be changed, indexed, told by events and listed. */
const step: fc.Arbitrary<Step> = fc.oneof(
  { arbitrary: on('add'), weight: 4 },
  { arbitrary: on('remove'), weight: 2 },
  { arbitrary: on('upgrade'), weight: 3 },
  { arbitrary: on('busy'), weight: 1 },
  { arbitrary: on('event'), weight: 3 },
  { arbitrary: fc.constant({ kind: 'index' as const }), weight: 3 },
  { arbitrary: fc.constant({ kind: 'inStep' as const }), weight: 1 },
  { arbitrary: fc.constant({ kind: 'all' as const }), weight: 3 },
  { arbitrary: fc.record({ kind: fc.constant('one' as const), sub: cluster.sub }), weight: 2 },
);

/** The file hub's profiles, read from its files: provider id (lower case) → Kubernetes version. */
function hubProfiles(directory: string): Map<string, string> {
  const found = new Map<string, string>();
  const folder = join(directory, NAMESPACE);
  if (!existsSync(folder)) return found;
  for (const file of readdirSync(folder).filter((f) => f.endsWith('.yaml') && !f.startsWith('_'))) {
    const profile = load(readFileSync(join(folder, file), 'utf8')) as {
      metadata: { annotations?: Record<string, string> };
      status?: { version?: { kubernetes?: string } };
    };
    const id = profile.metadata.annotations?.[ANNOTATION_PROVIDER_ID];
    if (id) found.set(id.toLowerCase(), profile.status?.version?.kubernetes ?? '');
  }
  return found;
}

describe('AKS through a lagging Resource Graph, over random cloud changes and every entry point', () => {
  const arm = armForSuite();

  it('never deletes a live cluster’s profile nor takes it back in time, and ends equal to ARM', async () => {
    const { server, credential } = arm;
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 6, maxLength: 28 }), async (steps) => {
        run += 1;
        const directory = temporaryDirectory('cpsync-graph-property-');
        const hubDirectory = join(directory, 'hub');
        const options = inventoryOptions({ namespace: NAMESPACE, deletionGraceListings: 1 });
        const settings = runSettings(options);
        const idOf = (sub: number, name: number) =>
          `/subscriptions/${SUBS[sub]}/resourcegroups/rg-${run}/providers/Microsoft.ContainerService/managedClusters/${NAMES[name]}-${run}`;
        server.graph = undefined;
        for (const sub of SUBS) server.clusters.set(sub, []);
        let minor = 0;
        const make = (sub: number, name: number): ManagedClusterJson => ({
          id: idOf(sub, name),
          name: `${NAMES[name]}-${run}`,
          location: 'westeurope',
          systemData: { createdAt: '2025-01-01T00:00:00Z' },
          properties: {
            provisioningState: 'Succeeded',
            kubernetesVersion: `1.${++minor}`,
            currentKubernetesVersion: `1.${minor}.0`,
            fqdn: `${NAMES[name]}-${run}-${sub}.hcp.westeurope.azmk8s.io`,
            agentPoolProfiles: [{ name: 'system', count: 1, vmSize: 'Standard_D2s_v5' }],
          },
        });
        const inArm = (sub: number, name: number) =>
          server.clusters.get(SUBS[sub]!)!.find((c) => c.id === idOf(sub, name));
        /** ARM's clusters now: provider id (lower case) → version. */
        const arm = () =>
          new Map(
            SUBS.flatMap((sub) => server.clusters.get(sub)!).map((c) => [
              c.id.toLowerCase(),
              String(c.properties.currentKubernetesVersion),
            ]),
          );
        const source = new AksSource({
          credential,
          endpoint: server.endpoint,
          answers: new FileAnswerStore(join(directory, 'answers')),
          listing: 'resourceGraph',
          graphSubscriptions: SUBS,
          graphShareMillis: 0,
        });
        const ports = {
          sources: { aks: source },
          hub: new FileHub({ directory: hubDirectory }),
          bus: new JsonLinesFileBus(join(directory, 'events.jsonl')),
          outbox: new FileOutbox(join(directory, 'outbox')),
          intents: new FileIntentLog(join(directory, 'outbox')),
          absences: new FileAbsenceStore(join(directory, 'outbox')),
        };
        const scope = (sub: number): Scope => ({ provider: 'aks', account: SUBS[sub]!, region: '*' });
        const sync = (scopes: Scope[]) =>
          runSync(ports, { syncId: `graph-${run}-${Math.random()}`, scopes, ...settings });
        /** The highest minor version each live cluster's profile has shown. */
        const shown = new Map<string, number>();
        const minorOf = (version: string) => Number(version.split('.')[1] ?? 0);
        const check = (before: Map<string, string>, what: string) => {
          const after = hubProfiles(hubDirectory);
          const live = arm();
          for (const id of before.keys())
            if (live.has(id))
              assert.ok(after.has(id), `G1: ${what} deleted the profile of ${id}, which ARM holds`);
          for (const id of after.keys())
            if (!before.has(id))
              assert.ok(live.has(id), `G5: ${what} made a profile for ${id}, which ARM no longer holds`);
          for (const [id, version] of after) {
            if (!live.has(id)) {
              shown.delete(id);
              continue;
            }
            const seen = shown.get(id) ?? 0;
            assert.ok(
              minorOf(version) >= seen,
              `G2: ${what} took ${id} back to ${version} (it showed 1.${seen})`,
            );
            shown.set(id, minorOf(version));
          }
          for (const id of shown.keys()) if (!live.has(id)) shown.delete(id);
          return after;
        };
        try {
          for (const s of steps) {
            const before = hubProfiles(hubDirectory);
            switch (s.kind) {
              case 'add':
                if (!inArm(s.sub, s.name)) server.clusters.get(SUBS[s.sub]!)!.push(make(s.sub, s.name));
                break;
              case 'remove':
                server.clusters.set(
                  SUBS[s.sub]!,
                  server.clusters.get(SUBS[s.sub]!)!.filter((c) => c.id !== idOf(s.sub, s.name)),
                );
                break;
              case 'upgrade': {
                const c = inArm(s.sub, s.name);
                if (c) c.properties.currentKubernetesVersion = `1.${++minor}.0`;
                break;
              }
              case 'busy': {
                const c = inArm(s.sub, s.name);
                if (c)
                  c.properties.provisioningState =
                    c.properties.provisioningState === 'Succeeded' ? 'Updating' : 'Succeeded';
                break;
              }
              case 'index':
                server.indexGraph();
                break;
              case 'inStep':
                server.graph = undefined;
                break;
              case 'all':
                await sync(SUBS.map((_, i) => scope(i)));
                check(before, 'a whole run');
                break;
              case 'one':
                await sync([scope(s.sub)]);
                check(before, `a run of ${SUBS[s.sub]}`);
                break;
              case 'event': {
                await syncCluster(ports, {
                  syncId: `graph-event-${run}-${Math.random()}`,
                  ref: { scope: scope(s.sub), name: `${NAMES[s.name]}-${run}`, resourceGroup: `rg-${run}` },
                  ...settings,
                });
                const after = check(before, 'a cluster’s own sync');
                const id = idOf(s.sub, s.name).toLowerCase();
                assert.equal(after.get(id), arm().get(id), `G4: ${id} after its own sync`);
                break;
              }
            }
          }
          // G3: the graph catches up; a whole run leaves the hub equal to ARM.
          server.graph = undefined;
          const before = hubProfiles(hubDirectory);
          await sync(SUBS.map((_, i) => scope(i)));
          const final = check(before, 'the last whole run');
          assert.deepEqual(
            [...final].sort(),
            [...arm()].sort(),
            'G3: once the graph is in step, the hub is ARM',
          );
        } catch (error) {
          throw new Error(`seed ${SEED}, steps ${JSON.stringify(steps)}: ${(error as Error).message}`, {
            cause: error,
          });
        } finally {
          server.graph = undefined;
        }
      }),
      {
        seed: SEED,
        numRuns: 60,
        endOnFailure: true,
        // The paths through the graph's lag named when it was built, run first every time.
        examples: [
          // Made after the graph was indexed, told by its event: a whole run must not take it for gone.
          [
            [
              { kind: 'index' },
              { kind: 'add', sub: 0, name: 0 },
              { kind: 'event', sub: 0, name: 0 },
              { kind: 'all' },
            ],
          ],
          // Upgraded after the graph was indexed, told by its event: the graph's older row must not undo it.
          [
            [
              { kind: 'add', sub: 0, name: 0 },
              { kind: 'all' },
              { kind: 'index' },
              { kind: 'upgrade', sub: 0, name: 0 },
              { kind: 'event', sub: 0, name: 0 },
              { kind: 'one', sub: 0 },
            ],
          ],
          // Deleted after the graph was indexed, told by its event: the graph's row must not bring it back.
          [
            [
              { kind: 'add', sub: 1, name: 1 },
              { kind: 'all' },
              { kind: 'index' },
              { kind: 'remove', sub: 1, name: 1 },
              { kind: 'event', sub: 1, name: 1 },
              { kind: 'all' },
            ],
          ],
        ],
      },
    );
  });
});
