/**
 * The deletion grace is counted by cpsync alone: a stateful property over random sequences of clouds changing
 * (clusters going and coming back), listings of every kind (complete, partial, failed) through every entry point
 * that reaches the count — a full run, one scope (`--scope`, a scope message), one cluster's own sync (a cloud event,
 * a follow-up's look) — and a hub writer setting each profile's `cpsync.io/missed-listings` to anything (a count near
 * the grace, zero, junk, nothing).
 *
 * The oracle counts from the listings the test made the clouds give, not from cpsync: a profile of a cluster exists
 * exactly while the cluster has been listed and has not since been missed by `grace` complete listings in a row of a
 * scope that covers it (or answered not found by its own sync); and a missed cluster's profile shows the oracle's
 * count, whatever the hub writer wrote.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { JsonLinesFileBus } from '../../adapters/bus/JsonLinesBus.ts';
import { FileHub } from '../../adapters/hub/FileHub.ts';
import { FileAbsenceStore } from '../../adapters/outbox/FileAbsenceStore.ts';
import { FileIntentLog } from '../../adapters/outbox/FileIntentLog.ts';
import { FileOutbox } from '../../adapters/outbox/FileOutbox.ts';
import {
  ANNOTATION_PROVIDER_ID,
  LABEL_ACCOUNT,
  LABEL_PROVIDER,
  LABEL_REGION,
  PROPERTY_MISSED_LISTINGS,
} from '../../core/domain/constants.ts';
import type { ClusterProfile } from '../../core/domain/model/clusterProfile.ts';
import type { ObservedCluster, Provider } from '../../core/domain/model/observedCluster.ts';
import { ALL_REGIONS, type Scope, type ScopeOutcomeKind } from '../../core/domain/model/scope.ts';
import { sameProviderId } from '../../core/domain/naming.ts';
import { syncCluster } from '../../core/sync/cluster.ts';
import { runSync } from '../../core/sync/engine.ts';
import type { ClusterSource } from '../../core/sync/ports.ts';
import type { EnginePorts } from '../../core/sync/types.ts';
import { aksCluster, eksCluster } from '../support/fixtures.ts';
import { inventoryOptions, runSettings } from '../support/settings.ts';
import { temporaryDirectory } from '../support/tmp.ts';

const SEED = Number(process.env.CPSYNC_PROPERTY_SEED ?? 20261203);
const ACCOUNT = '111122223333';
const SUBSCRIPTION = '00000000-1111-2222-3333-444444444444';

/** The clusters the clouds may hold: EKS in two regions, AKS in two locations of one subscription. */
const CLUSTERS: ObservedCluster[] = [
  eksCluster({ name: 'pay', account: ACCOUNT, region: 'us-east-1' }),
  eksCluster({ name: 'ship', account: ACCOUNT, region: 'us-east-1' }),
  eksCluster({ name: 'pay', account: ACCOUNT, region: 'eu-west-1' }),
  aksCluster({ name: 'web', account: SUBSCRIPTION, region: 'westeurope', resourceGroup: 'rg-web' }),
  aksCluster({ name: 'api', account: SUBSCRIPTION, region: 'eastus', resourceGroup: 'rg-api' }),
];
/** The scopes a full run lists. */
const CONFIGURED: Scope[] = [
  { provider: 'eks', account: ACCOUNT, region: 'us-east-1' },
  { provider: 'eks', account: ACCOUNT, region: 'eu-west-1' },
  { provider: 'aks', account: SUBSCRIPTION, region: ALL_REGIONS },
];
/** The scopes one scope's sync may be of (`--scope`, a scope message): the configured ones and an AKS location. */
const ONE_SCOPE: Scope[] = [...CONFIGURED, { provider: 'aks', account: SUBSCRIPTION, region: 'eastus' }];

const covers = (scope: Scope, cluster: ObservedCluster) =>
  scope.provider === cluster.provider && (scope.region === ALL_REGIONS || scope.region === cluster.region);

type Step =
  | { kind: 'gone' | 'back'; cluster: number }
  | { kind: 'full'; listings: ScopeOutcomeKind[]; kept: boolean[] }
  | { kind: 'scope'; scope: number; listing: ScopeOutcomeKind; kept: boolean[] }
  | { kind: 'cluster'; cluster: number }
  | { kind: 'hub'; cluster: number; value: string | undefined }
  | { kind: 'relabel'; cluster: number; label: string; value: string };

const listingKind = fc.constantFrom<ScopeOutcomeKind>('complete', 'complete', 'partial', 'failed');
/** Which of the present clusters a partial listing shows. */
const kept = fc.array(fc.boolean(), { minLength: CLUSTERS.length, maxLength: CLUSTERS.length });
const cluster = fc.nat({ max: CLUSTERS.length - 1 });
// Weighted towards what makes a count matter: clusters gone, listings, and the hub writer between them.
const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('gone' as const), cluster }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('back' as const), cluster }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('full' as const),
      listings: fc.array(listingKind, { minLength: CONFIGURED.length, maxLength: CONFIGURED.length }),
      kept,
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('scope' as const),
      scope: fc.nat({ max: ONE_SCOPE.length - 1 }),
      listing: listingKind,
      kept,
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('cluster' as const), cluster }) },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('hub' as const),
      cluster,
      value: fc.option(fc.constantFrom('0', '1', '2', '3', '99', '-1', 'x', ''), { nil: undefined }),
    }),
  },
  {
    weight: 1,
    // The labels a scope selects its profiles by, each set to another scope's value.
    arbitrary: fc.oneof(
      fc.record({
        kind: fc.constant('relabel' as const),
        cluster,
        label: fc.constant(LABEL_REGION),
        value: fc.constantFrom('us-east-1', 'eu-west-1', 'westeurope', 'eastus'),
      }),
      fc.record({
        kind: fc.constant('relabel' as const),
        cluster,
        label: fc.constant(LABEL_ACCOUNT),
        value: fc.constantFrom(ACCOUNT, SUBSCRIPTION),
      }),
      fc.record({
        kind: fc.constant('relabel' as const),
        cluster,
        label: fc.constant(LABEL_PROVIDER),
        value: fc.constantFrom('eks', 'aks'),
      }),
    ),
  },
);

const ALL_LISTED: Step = {
  kind: 'full',
  listings: CONFIGURED.map(() => 'complete'),
  kept: CLUSTERS.map(() => true),
};
const GONE: Step = { kind: 'gone', cluster: 0 };
const BACK: Step = { kind: 'back', cluster: 0 };

/** The clouds as the steps leave them, and what they list next. */
class Clouds {
  readonly present = new Set(CLUSTERS.map((_, i) => i));
  /** What each scope's next listing is, and which present clusters a partial one shows. */
  next = new Map<string, { kind: ScopeOutcomeKind; kept: boolean[] }>();

  source(provider: Provider): ClusterSource {
    return {
      listScope: async (scope) => {
        const { kind, kept } = this.next.get(JSON.stringify(scope)) ?? { kind: 'complete', kept: [] };
        if (kind === 'failed')
          return {
            outcome: { scope, kind, failure: { reason: 'Unknown', message: 'the cloud did not answer' } },
            clusters: [],
          };
        const clusters = CLUSTERS.filter(
          (c, i) => this.present.has(i) && covers(scope, c) && (kind === 'complete' || kept[i]),
        );
        return {
          outcome: { scope, kind, ...(kind === 'partial' ? { missing: ['some'] } : {}) },
          clusters,
        };
      },
      getCluster: async (ref) =>
        CLUSTERS.find(
          (c, i) =>
            this.present.has(i) &&
            c.provider === ref.scope.provider &&
            c.name === ref.name &&
            (provider !== 'eks' || c.region === ref.scope.region) &&
            (provider !== 'aks' || c.resourceGroup === ref.resourceGroup),
        ),
      isProviderIdOf: (providerId, ref) =>
        CLUSTERS.some(
          (c) =>
            c.provider === provider &&
            c.name === ref.name &&
            (provider !== 'eks' || c.region === ref.scope.region) &&
            (provider !== 'aks' || c.resourceGroup === ref.resourceGroup) &&
            sameProviderId(provider, c.providerId, providerId),
        ),
    };
  }
}

/** A listing of one Azure location does not say an AKS cluster is gone: an AKS id names no region. */
const speaksForAbsences = (scope: Scope) => scope.provider !== 'aks' || scope.region === ALL_REGIONS;

/** The oracle: from the listings given, whether each cluster has a profile and how many listings missed it. */
class Model {
  readonly profiled = new Set<number>();
  readonly missed = new Map<number, number>();
  /**
   * Clusters whose profile a hub writer gave another scope's label (region, account, cloud), until cpsync writes it again (its cluster listed
   * or seen): which listings select such a profile is the writer's choice, so it may be kept past its grace (a
   * deletion put off), never deleted before it.
   */
  readonly relabeled = new Set<number>();
  readonly clouds: Clouds;
  readonly grace: number;
  constructor(clouds: Clouds, grace: number) {
    this.clouds = clouds;
    this.grace = grace;
  }

  listed(scope: Scope, kind: ScopeOutcomeKind, kept: boolean[]): void {
    if (kind === 'failed') return;
    const speaks = speaksForAbsences(scope);
    CLUSTERS.forEach((c, i) => {
      if (!covers(scope, c)) return;
      if (this.clouds.present.has(i) && (kind === 'complete' || kept[i])) {
        this.profiled.add(i);
        this.missed.delete(i);
        this.relabeled.delete(i);
      } else if (kind === 'complete' && speaks && this.profiled.has(i)) {
        const missed = (this.missed.get(i) ?? 0) + 1;
        if (missed >= this.grace) {
          this.profiled.delete(i);
          this.missed.delete(i);
        } else this.missed.set(i, missed);
      }
    });
  }

  seenAlone(i: number): void {
    if (this.clouds.present.has(i)) {
      this.profiled.add(i);
      this.missed.delete(i);
      this.relabeled.delete(i);
    } else {
      this.profiled.delete(i);
      this.missed.delete(i);
    }
  }
}

describe('the deletion grace, counted by cpsync alone', () => {
  it('deletes a profile after exactly its grace of complete listings in a row that missed its cluster, whatever the hub says of the count, through every entry point (stateful property)', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 4 }),
        fc.array(step, { minLength: 1, maxLength: 30 }),
        async (grace, steps) => {
          run += 1;
          const directory = temporaryDirectory('cpsync-missed-');
          const clouds = new Clouds();
          const model = new Model(clouds, grace);
          const hub = new FileHub({ directory: join(directory, 'hub') });
          let time = Date.parse('2026-12-01T00:00:00Z');
          const ports: EnginePorts = {
            sources: { eks: clouds.source('eks'), aks: clouds.source('aks') },
            hub,
            bus: new JsonLinesFileBus(join(directory, 'events.jsonl')),
            outbox: new FileOutbox(join(directory, 'outbox')),
            intents: new FileIntentLog(join(directory, 'outbox')),
            absences: new FileAbsenceStore(join(directory, 'outbox')),
            clock: () => new Date((time += 1000)),
          };
          const options = inventoryOptions({ namespace: 'missed', deletionGraceListings: grace });
          const settings = runSettings(options);
          const profiles = async (): Promise<ClusterProfile[]> =>
            (await hub.list('missed', {})).filter((p) => p.metadata.annotations?.[ANNOTATION_PROVIDER_ID]);
          const indexOf = (profile: ClusterProfile) =>
            CLUSTERS.findIndex(
              (c) => c.providerId === profile.metadata.annotations?.[ANNOTATION_PROVIDER_ID],
            );
          const done: string[] = [];
          const check = async (after: Step, synced: readonly Scope[]) => {
            done.push(JSON.stringify(after));
            const held = await profiles();
            const path = `grace ${grace}, run ${run}:\n  ${done.join('\n  ')}`;
            const kept = held.map(indexOf);
            assert.deepEqual(
              kept.filter((i) => !model.relabeled.has(i)).sort(),
              [...model.profiled].filter((i) => !model.relabeled.has(i)).sort(),
              `the profiles are those of the clusters listed and not missed ${grace} times in a row since\n${path}`,
            );
            for (const i of model.relabeled)
              assert.ok(
                !model.profiled.has(i) || kept.includes(i),
                `${CLUSTERS[i]!.providerId}'s profile, relabelled, is not deleted before its grace\n${path}`,
              );
            // What a profile a listing just counted shows is the count, not what the hub writer wrote.
            for (const profile of held) {
              const i = indexOf(profile);
              if (model.relabeled.has(i) || !synced.some((scope) => covers(scope, CLUSTERS[i]!))) continue;
              const shown = profile.status?.properties?.find((p) => p.name === PROPERTY_MISSED_LISTINGS);
              assert.equal(
                shown?.value,
                model.missed.has(i) ? String(model.missed.get(i)) : undefined,
                `${CLUSTERS[i]!.providerId} shows the listings that missed it\n${path}`,
              );
            }
          };
          for (const s of steps) {
            switch (s.kind) {
              case 'gone':
                clouds.present.delete(s.cluster);
                await check(s, []);
                break;
              case 'back':
                clouds.present.add(s.cluster);
                await check(s, []);
                break;
              case 'full': {
                clouds.next = new Map(
                  CONFIGURED.map((scope, i) => [
                    JSON.stringify(scope),
                    { kind: s.listings[i]!, kept: s.kept },
                  ]),
                );
                await runSync(ports, {
                  syncId: `full-${run}-${done.length}`,
                  scopes: CONFIGURED,
                  ...settings,
                });
                CONFIGURED.forEach((scope, i) => model.listed(scope, s.listings[i]!, s.kept));
                await check(
                  s,
                  CONFIGURED.filter((_, i) => s.listings[i] === 'complete'),
                );
                break;
              }
              case 'scope': {
                const scope = ONE_SCOPE[s.scope]!;
                clouds.next = new Map([[JSON.stringify(scope), { kind: s.listing, kept: s.kept }]]);
                await runSync(ports, { syncId: `scope-${run}-${done.length}`, scopes: [scope], ...settings });
                model.listed(scope, s.listing, s.kept);
                await check(s, s.listing === 'complete' && speaksForAbsences(scope) ? [scope] : []);
                break;
              }
              case 'cluster': {
                const c = CLUSTERS[s.cluster]!;
                await syncCluster(ports, {
                  ...settings,
                  syncId: `cluster-${run}-${done.length}`,
                  ref: {
                    scope: {
                      provider: c.provider,
                      account: c.account,
                      region: c.provider === 'eks' ? c.region : ALL_REGIONS,
                    },
                    name: c.name,
                    ...(c.resourceGroup ? { resourceGroup: c.resourceGroup } : {}),
                  },
                });
                model.seenAlone(s.cluster);
                await check(s, []);
                break;
              }
              case 'relabel': {
                // A hub writer past the admission policy moves a profile to another scope's listings.
                const profile = (await profiles()).find((p) => indexOf(p) === s.cluster);
                if (profile) {
                  await hub.applyObject({
                    ...profile,
                    metadata: {
                      ...profile.metadata,
                      labels: { ...profile.metadata.labels, [s.label]: s.value },
                    },
                  });
                  model.relabeled.add(s.cluster);
                }
                await check(s, []);
                break;
              }
              case 'hub': {
                // A hub writer past the admission policy: the profile's shown count set to anything, or taken away.
                // Rather a profile of a cluster that is gone, whose count is the one that matters.
                const held = await profiles();
                const missing = held.filter((p) => !clouds.present.has(indexOf(p)));
                const among = missing.length > 0 ? missing : held;
                const profile = among[s.cluster % Math.max(among.length, 1)];
                if (profile) {
                  const others = (profile.status?.properties ?? []).filter(
                    (p) => p.name !== PROPERTY_MISSED_LISTINGS,
                  );
                  await hub.applyStatus({
                    ...profile,
                    status: {
                      ...profile.status,
                      properties:
                        s.value === undefined
                          ? others
                          : [...others, { name: PROPERTY_MISSED_LISTINGS, value: s.value }],
                    },
                  });
                }
                await check(s, []);
                break;
              }
            }
          }
        },
      ),
      {
        numRuns: 120,
        seed: SEED,
        // Besides the random ones: a cluster seen by its own sync between two misses begins its count again; a hub
        // writer's count near the grace hastens nothing.
        examples: [
          [2, [ALL_LISTED, GONE, ALL_LISTED, BACK, { kind: 'cluster', cluster: 0 }, GONE, ALL_LISTED]],
          [3, [ALL_LISTED, GONE, { kind: 'hub', cluster: 0, value: '2' }, ALL_LISTED, ALL_LISTED]],
        ],
      },
    );
  });

  it('syncs no scope whose counts cannot be kept: the scope fails naming the store, and nothing on the hub is marked or deleted', async () => {
    const directory = temporaryDirectory('cpsync-uncounted-');
    const clouds = new Clouds();
    const ports: EnginePorts = {
      sources: { eks: clouds.source('eks'), aks: clouds.source('aks') },
      hub: new FileHub({ directory: join(directory, 'hub') }),
      bus: new JsonLinesFileBus(join(directory, 'events.jsonl')),
      outbox: new FileOutbox(join(directory, 'outbox')),
      intents: new FileIntentLog(join(directory, 'outbox')),
      absences: new FileAbsenceStore(join(directory, 'outbox')),
    };
    // One missed listing deletes: nothing to count, yet nothing is deleted without the counts.
    const settings = runSettings(inventoryOptions({ namespace: 'missed', deletionGraceListings: 1 }));
    const scope = CONFIGURED[0]!;
    await runSync(ports, { syncId: 'listed', scopes: [scope], ...settings });
    const before = await ports.hub.list('missed', {});
    assert.equal(before.length, 2);
    // The store out of reach: its directory is a file, so every read and write of it fails.
    writeFileSync(join(directory, 'not-a-directory'), '');
    ports.absences = new FileAbsenceStore(join(directory, 'not-a-directory'));
    clouds.present.delete(0);
    const missed = await runSync(ports, { syncId: 'missed', scopes: [scope], ...settings });
    const [report] = missed.scopes;
    assert.equal(report!.outcome.kind, 'failed');
    assert.match(
      report!.summary.error?.message ?? '',
      /^cannot keep how many listings of eks\/111122223333\/us-east-1 missed its clusters \(cpsync's absence store\)/,
    );
    assert.deepEqual(
      (await ports.hub.list('missed', {})).map((p) => p.metadata.resourceVersion),
      before.map((p) => p.metadata.resourceVersion),
      'neither marked nor deleted',
    );
  });
});
