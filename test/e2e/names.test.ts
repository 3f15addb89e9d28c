/**
 * Names no one can take (SPEC §3 "Name"), end to end: the `cpsync` command built with a name scheme weak
 * enough to collide (two clusters of the same display name want the same name: test/support/weakNames.ts)
 * runs against the local clouds and the real hub. Whatever the order the clusters arrive in — two scopes
 * synced one after the other through `--scope` or the full sync, or one listing in either order — the
 * profile already on the hub keeps its name and is not written, the newcomer gets a name of its own, the run
 * says so, and no profile of a live cluster is marked missing or deleted. And an upgrade from the 40-bit
 * names of earlier versions renames nothing: the hub counts no write.
 *
 * Judged apart from cpsync's plan: the clouds' own state (test/support/oracle.ts), the hub's objects and its
 * request counters, and the events the bus delivered.
 */
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, beforeEach, describe, it } from 'node:test';
import { parse, stringify } from 'yaml';
import { KubernetesHub } from '../../adapters/hub/KubernetesHub.ts';
import type { ClusterProfile } from '../../core/domain/model/clusterProfile.ts';
import { PROFILE_NAMES } from '../../core/domain/naming.ts';
import { EKS_ACCOUNT, GCP_PROJECT, gkeCluster, type Emulators } from '../env/emulators.ts';
import type { HubState } from '../env/hub.ts';
import { CLI, cliWithNames, runCli, type CliRun } from '../support/cli.ts';
import { cloudSnapshot, estateOnHub } from '../support/estate.ts';
import { drainQueue, type ReceivedEvent } from '../support/events.ts';
import { adminKubeConfig } from '../support/hub.ts';
import { apiserverProfileRequests, requestsBetween } from '../support/hubCounts.ts';
import { convergenceProblems, liveClusters } from '../support/oracle.ts';
import { weakName } from '../support/weakNames.ts';

const EAST = `arn:aws:eks:us-east-1:${EKS_ACCOUNT}:cluster/payments`;
const WEST = `arn:aws:eks:eu-west-1:${EKS_ACCOUNT}:cluster/payments`;
const gkeId = (location: string, name: string) =>
  `https://container.googleapis.com/v1/projects/${GCP_PROJECT}/locations/${location}/clusters/${name}`;

describe('names no one can take: colliding names through the CLI, on the real hub', () => {
  let emulators: Emulators;
  let state: HubState;
  let hub: KubernetesHub;
  let base: string;
  let namespace: string;
  let configPath: string;
  let scenes = 0;
  let restoreClouds: () => void;
  let weak: string;
  let legacy: string;

  const run = (command: string, ...args: string[]): Promise<CliRun> =>
    runCli([...args, '--config', configPath], {
      command,
      cwd: emulators.directory,
      env: emulators.env,
    });
  const sync = (...args: string[]) => run(weak, 'sync', ...args);
  const profiles = async (): Promise<ClusterProfile[]> =>
    hub.list(namespace, { 'x-k8s.io/cluster-manager': 'cpsync' });
  const byId = async (id: string) => {
    const found = (await profiles()).filter((p) => p.metadata.annotations?.['cpsync.io/provider-id'] === id);
    assert.equal(found.length, 1, `one profile of ${id}`);
    return found[0]!;
  };
  const changes = async (): Promise<ReceivedEvent[]> =>
    (await drainQueue(emulators.queueUrl)).filter((e) => e['detail-type'] !== 'Inventory Scope Synced');
  /** The hub equals the clouds (of `provider`, or all), as the clouds say. */
  const converged = async (provider?: string) => {
    const live = await liveClusters(emulators, { account: EKS_ACCOUNT, regions: ['us-east-1', 'eu-west-1'] });
    const of = (id: string) => (id.startsWith('arn:') ? 'eks' : id.startsWith('https:') ? 'gke' : 'aks');
    assert.deepEqual(
      convergenceProblems(
        new Map([...live].filter(([id]) => !provider || of(id) === provider)),
        (await profiles()).filter((p) => !provider || p.metadata.labels?.['cpsync.io/provider'] === provider),
      ),
      [],
    );
  };
  const joined = (profile: ClusterProfile) =>
    profile.status?.conditions?.find((c) => c.type === 'Joined')?.status;
  /** A run that changes nothing: no write the hub counts, no change on the bus, nothing reported. */
  const quiet = async () => {
    const before = await apiserverProfileRequests(state);
    const again = await sync();
    assert.equal(again.code, 0, again.stderr);
    assert.doesNotMatch(again.stderr, /name collision/);
    assert.equal(requestsBetween(before, await apiserverProfileRequests(state)).writes, 0, 'no write');
    assert.deepEqual(await changes(), []);
  };

  before(async () => {
    const estate = await estateOnHub('names');
    ({ emulators, state } = estate);
    base = estate.namespace;
    hub = new KubernetesHub({ kubeConfig: adminKubeConfig(state) });
    restoreClouds = cloudSnapshot(emulators);
    [weak, legacy] = await Promise.all([cliWithNames('weak'), cliWithNames('legacy')]);
  });

  beforeEach(async () => {
    restoreClouds();
    namespace = `${base}-${++scenes}`;
    const scene = join(emulators.directory, `scene-${scenes}`);
    mkdirSync(scene, { recursive: true });
    const document = parse(readFileSync(emulators.configPath, 'utf8')) as Record<string, unknown>;
    configPath = join(scene, 'cpsync.yaml');
    writeFileSync(
      configPath,
      stringify({
        ...document,
        inventory: { ...(document.inventory as Record<string, unknown>), namespace },
        hub: { kubeconfig: state.kubeconfig },
        outbox: { directory: join(scene, 'outbox') },
      }),
    );
    await drainQueue(emulators.queueUrl);
  });

  after(async () => emulators?.stop());

  for (const [first, second] of [
    [EAST, WEST],
    [WEST, EAST],
  ] as const)
    it(`keeps the name of the profile of ${first === EAST ? 'us-east-1' : 'eu-west-1'}, synced first, when the cluster of the other scope wants it too (--scope, then the full sync)`, async () => {
      const scopeOf = (id: string) => `eks/${EKS_ACCOUNT}/${id === EAST ? 'us-east-1' : 'eu-west-1'}`;
      const taken = weakName('eks', 'payments');
      const one = await sync('--scope', scopeOf(first));
      assert.equal(one.code, 0, one.stderr);
      const incumbent = await byId(first);
      assert.equal(incumbent.metadata.name, taken);
      await changes();

      // The newcomer's scope alone (us-east-1 first), or the full sync (eu-west-1 first).
      const collided = first === EAST ? await sync('--scope', scopeOf(second)) : await sync();
      assert.equal(collided.code, 1, 'a collision needs a look');
      assert.match(
        collided.stderr,
        new RegExp(
          `name collision: .*${namespace}/${taken} is the profile of ${first.replace(/[/.]/g, '\\$&')}.*is written as ${namespace}/`,
        ),
      );
      const after = await byId(first);
      assert.equal(after.metadata.resourceVersion, incumbent.metadata.resourceVersion, 'not written');
      assert.equal(joined(after), 'True');
      const newcomer = await byId(second);
      assert.equal(
        newcomer.metadata.name,
        PROFILE_NAMES.candidates('cpsync', { provider: 'eks', providerId: second, name: 'payments' })[0],
      );
      assert.equal(newcomer.spec.displayName, 'payments');
      // The full sync creates the other clouds' profiles too; of the two clusters, only the newcomer is announced.
      const events = (await changes()).filter(
        (e) =>
          e.detail.displayName === 'payments' ||
          ([first, second] as string[]).includes((e.detail.cluster as { providerId: string }).providerId),
      );
      assert.deepEqual(
        events.map((e) => [
          e['detail-type'],
          e.detail.name,
          (e.detail.cluster as { providerId: string }).providerId,
        ]),
        [['ClusterProfile Created', newcomer.metadata.name, second]],
        'the newcomer is announced under its own name; nothing else',
      );

      if (first === EAST) {
        const full = await sync();
        assert.equal(full.code, 0, full.stderr);
        assert.ok(
          (await changes()).every(
            (e) =>
              !([first, second] as string[]).includes(
                (e.detail.cluster as { providerId: string }).providerId,
              ),
          ),
          'the full sync writes neither',
        );
      }
      await converged();
      await quiet();
    });

  for (const order of ['the newcomer listed first', 'the newcomer listed last'] as const)
    it(`keeps the incumbent's name within one listing, ${order}, and never marks it missing`, async () => {
      const taken = weakName('gke', 'analytics');
      const incumbentId = gkeId('europe-west1', 'analytics');
      const twinId = gkeId('us-central1', 'analytics');
      const one = await sync('--provider', 'gke');
      assert.equal(one.code, 0, one.stderr);
      const incumbent = await byId(incumbentId);
      assert.equal(incumbent.metadata.name, taken);
      await changes();

      const twin = gkeCluster('analytics', 'us-central1');
      const listed = emulators.gke.clusters.get(GCP_PROJECT)!;
      emulators.gke.clusters.set(
        GCP_PROJECT,
        order === 'the newcomer listed first' ? [twin, ...listed] : [...listed, twin],
      );
      for (let i = 0; i < 3; i++) {
        // Three complete listings: more than the deletion grace, had the incumbent been taken for missing.
        const again = await sync('--provider', 'gke');
        assert.equal(again.code, i === 0 ? 1 : 0, again.stderr);
      }
      const after = await byId(incumbentId);
      assert.equal(after.metadata.resourceVersion, incumbent.metadata.resourceVersion, 'not written');
      assert.equal(joined(after), 'True');
      assert.notEqual((await byId(twinId)).metadata.name, taken);
      const events = await changes();
      assert.deepEqual(
        events.map((e) => [e['detail-type'], (e.detail.cluster as { providerId: string }).providerId]),
        [['ClusterProfile Created', twinId]],
      );
      await converged('gke');
    });

  it('gives one name to one cluster when the newcomers of two scopes synced at once want the same name', async () => {
    const full = await sync();
    assert.equal(full.code, 1, full.stderr);
    assert.match(full.stderr, /name collision: .*is written as/);
    const names = [(await byId(EAST)).metadata.name, (await byId(WEST)).metadata.name];
    assert.ok(names.includes(weakName('eks', 'payments')), 'one of them has the name both want');
    assert.notEqual(names[0], names[1]);
    const created = (await changes()).filter(
      (e) =>
        e.detail.displayName === 'payments' ||
        ([EAST, WEST] as string[]).includes((e.detail.cluster as { providerId: string }).providerId),
    );
    assert.deepEqual(
      created.map((e) => e.detail.name).sort(),
      [...names].sort(),
      'each announced once, under its own name',
    );
    await converged();
    await quiet();
  });

  it('gives two newcomers of one listing the same names whatever their order: the lower id gets the name both want', async () => {
    const ids = [gkeId('europe-west1', 'analytics'), gkeId('us-central1', 'analytics')];
    const names: Array<Record<string, string>> = [];
    for (const reversed of [false, true]) {
      namespace = `${namespace}-${reversed ? 'b' : 'a'}`;
      writeFileSync(
        configPath,
        readFileSync(configPath, 'utf8').replace(/namespace: .*/, `namespace: ${namespace}`),
      );
      const twins = [gkeCluster('analytics', 'europe-west1'), gkeCluster('analytics', 'us-central1')];
      emulators.gke.clusters.set(GCP_PROJECT, reversed ? twins.reverse() : twins);
      const one = await sync('--provider', 'gke');
      assert.equal(one.code, 1, one.stderr);
      names.push(
        Object.fromEntries(await Promise.all(ids.map(async (id) => [id, (await byId(id)).metadata.name]))),
      );
    }
    assert.deepEqual(names[0], names[1]);
    assert.equal(names[0]![[...ids].sort()[0]!], weakName('gke', 'analytics'));
  });

  it('renames nothing on upgrade: profiles named as earlier versions named them keep their names, and the hub counts no write', async () => {
    const written = await run(legacy, 'sync');
    assert.equal(written.code, 0, written.stderr);
    const before = await profiles();
    assert.equal(before.length, emulators.clusters);
    assert.ok(
      before.every((p) => /-[0-9a-f]{10}$/.test(p.metadata.name)),
      'the 40-bit names',
    );
    await changes();
    const counted = await apiserverProfileRequests(state);
    const upgraded = await run(CLI, 'sync');
    assert.equal(upgraded.code, 0, upgraded.stderr);
    assert.equal(requestsBetween(counted, await apiserverProfileRequests(state)).writes, 0, 'no write');
    assert.deepEqual(await changes(), [], 'no event');
    assert.deepEqual(
      (await profiles()).map((p) => [p.metadata.name, p.metadata.resourceVersion]).sort(),
      before.map((p) => [p.metadata.name, p.metadata.resourceVersion]).sort(),
    );
    // A cluster that comes after the upgrade gets a name of today's (64 bits).
    emulators.gke.clusters.set(GCP_PROJECT, [
      ...emulators.gke.clusters.get(GCP_PROJECT)!,
      gkeCluster('fresh', 'europe-west1'),
    ]);
    const fresh = await run(CLI, 'sync', '--provider', 'gke');
    assert.equal(fresh.code, 0, fresh.stderr);
    assert.match(
      (await byId(gkeId('europe-west1', 'fresh'))).metadata.name,
      /^cpsync-gke-fresh-[0-9a-f]{16}$/,
    );
    await changes();
  });
});
