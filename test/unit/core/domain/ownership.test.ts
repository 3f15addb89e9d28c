import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { ClusterProfile } from '../../../../core/domain/model/clusterProfile.ts';
import { normalize } from '../../../../core/domain/normalize.ts';
import { inventoryOptions } from '../../../support/settings.ts';
import {
  mergeObjectApply,
  objectApplyBody,
  ownedState,
  statusApplyBody,
  strayOwnedKeys,
} from '../../../../core/domain/ownership.ts';
import { plan } from '../../../../core/domain/plan.ts';
import { fingerprint } from '../../../../core/sync/intents.ts';
import { eksCluster, LATER, NOW } from '../../../support/fixtures.ts';

const options = inventoryOptions();
const names = Object.values(options.accessProviderNames);
const scope = { provider: 'eks' as const, account: '111122223333', region: 'us-east-1' };
const desired = normalize(eksCluster({ name: 'owned' }), options, NOW);
/** The profile as cpsync stored it. */
const mine: ClusterProfile = {
  ...desired,
  metadata: { ...desired.metadata, resourceVersion: '7', uid: 'u-1' },
};

/** What other writers may put on a profile: labels, annotations, properties, conditions, access providers of their own. */
const foreign = fc.record({
  labels: fc.dictionary(
    fc.constantFrom('team', 'example.com/tier', 'app.kubernetes.io/part-of'),
    fc.string({ maxLength: 8 }),
  ),
  annotations: fc.dictionary(fc.constantFrom('note', 'example.com/owner'), fc.string({ maxLength: 8 })),
  properties: fc.uniqueArray(
    fc.record({
      name: fc.constantFrom('example.com/cost-center', 'kueue.x-k8s.io/quota', 'id.k8s.io'),
      value: fc.string({ minLength: 1, maxLength: 8 }),
    }),
    { selector: (p) => p.name },
  ),
  conditions: fc.uniqueArray(
    fc.record({
      type: fc.constantFrom('ExampleReady', 'AddonsHealthy'),
      status: fc.constantFrom('True', 'False', 'Unknown'),
      reason: fc.constant('Other'),
      message: fc.string({ maxLength: 8 }),
      lastTransitionTime: fc.constant(NOW),
    }),
    { selector: (c) => c.type },
  ),
  accessProviders: fc.uniqueArray(
    fc.record({
      name: fc.constantFrom('secretreader', 'kubeconfig'),
      cluster: fc.record({ server: fc.constant('https://example.test') }),
    }),
    { selector: (a) => a.name },
  ),
});

type Foreign = typeof foreign extends fc.Arbitrary<infer T> ? T : never;

function withForeign(profile: ClusterProfile, extra: Foreign): ClusterProfile {
  return {
    ...profile,
    metadata: {
      ...profile.metadata,
      labels: { ...extra.labels, ...profile.metadata.labels },
      annotations: { ...extra.annotations, ...profile.metadata.annotations },
    },
    status: {
      ...profile.status,
      properties: [...(profile.status?.properties ?? []), ...extra.properties],
      conditions: [...(profile.status?.conditions ?? []), ...extra.conditions],
      accessProviders: [...(profile.status?.accessProviders ?? []), ...extra.accessProviders],
    },
  };
}

describe("which fields are cpsync's (one owner for the plan, the intents and both hubs)", () => {
  it('sees nothing of what other writers add: no planned change, the same fingerprint, the same owned state', () => {
    fc.assert(
      fc.property(foreign, (extra) => {
        const shared = withForeign(mine, extra);
        assert.deepEqual(ownedState(shared, names), ownedState(mine, names));
        assert.equal(fingerprint(shared, names), fingerprint(mine, names));
        const planned = plan({
          outcome: { scope, kind: 'complete' },
          desired: [mine],
          current: [shared],
          manager: options.manager,
          deletionGraceListings: 2,
          missedBefore: new Map(),
          accessProviderNames: names,
          now: LATER,
        });
        assert.equal(planned.unchanged, 1);
        assert.equal(planned.updates.length + planned.creates.length + planned.deletes.length, 0);
      }),
    );
  });

  it('applies only its own metadata, and keeps every other writer’s labels and annotations when it merges', () => {
    fc.assert(
      fc.property(foreign, (extra) => {
        const shared = withForeign(mine, extra);
        const body = objectApplyBody(shared);
        assert.deepEqual(body.metadata.labels, mine.metadata.labels);
        assert.deepEqual(body.metadata.annotations, mine.metadata.annotations);
        assert.equal(statusApplyBody(mine).metadata.name, mine.metadata.name);
        const merged = mergeObjectApply(shared, mine);
        assert.deepEqual(merged.labels, shared.metadata.labels);
        assert.deepEqual(merged.annotations, shared.metadata.annotations);
        assert.deepEqual(merged.status, shared.status, 'an object apply leaves the status alone');
      }),
    );
  });

  describe('labels from tags', () => {
    const bare = inventoryOptions({ labels: { fromTags: ['env'], prefix: '' } });
    const stored = (profile: ClusterProfile): ClusterProfile => ({
      ...profile,
      metadata: { ...profile.metadata, resourceVersion: '9' },
    });
    const plannedFrom = (current: ClusterProfile, wanted: ClusterProfile) =>
      plan({
        outcome: { scope, kind: 'complete' },
        desired: [wanted],
        current: [current],
        manager: options.manager,
        deletionGraceListings: 2,
        missedBefore: new Map(),
        accessProviderNames: names,
        now: LATER,
      });

    it('owns a label outside cpsync.io/ while its record names it: a tag gone is a planned change, and the merge removes its label', () => {
      const tagged = stored(normalize(eksCluster({ name: 'owned', tags: { env: 'prod' } }), bare, NOW));
      assert.equal(tagged.metadata.labels?.env, 'prod');
      const untagged = normalize(eksCluster({ name: 'owned', tags: {} }), bare, LATER);
      const planned = plannedFrom(tagged, untagged);
      assert.equal(planned.updates.length, 1);
      assert.deepEqual(
        planned.updates[0]!.changes.filter((c) => c.field.startsWith('metadata.')),
        [
          { field: 'metadata.labels[env]', before: 'prod' },
          { field: 'metadata.annotations[cpsync.io/labels-from-tags]', before: 'env' },
        ],
      );
      assert.equal(mergeObjectApply(tagged, untagged).labels.env, undefined);
    });

    it('leaves a label of the same key it does not record to its writer: no change planned, kept by the merge', () => {
      const current = normalize(eksCluster({ name: 'owned', tags: {} }), bare, NOW);
      const theirs = stored({
        ...current,
        metadata: { ...current.metadata, labels: { ...current.metadata.labels, env: 'staging' } },
      });
      assert.equal(plannedFrom(theirs, current).unchanged, 1);
      assert.equal(mergeObjectApply(theirs, current).labels.env, 'staging');
      assert.deepEqual(strayOwnedKeys(theirs, current).labels, []);
    });

    it("takes every label under cpsync.io/ another writer set as stray (a forged tag label), and no one else's", () => {
      const wanted = normalize(eksCluster({ name: 'owned' }), options, NOW);
      const forged = stored({
        ...wanted,
        metadata: {
          ...wanted.metadata,
          labels: { ...wanted.metadata.labels, 'cpsync.io/tag-env': 'prod', team: 'pay' },
        },
      });
      assert.deepEqual(strayOwnedKeys(forged, wanted), { labels: ['cpsync.io/tag-env'], annotations: [] });
      assert.deepEqual(plannedFrom(forged, wanted).updates[0]!.changes, [
        { field: 'metadata.labels[cpsync.io/tag-env]', before: 'prod' },
      ]);
    });
  });
});
