import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  applyMemberReading,
  carryMemberState,
  memberDue,
  type MemberReading,
} from '../../../../core/domain/member.ts';
import type { ClusterProfile } from '../../../../core/domain/model/clusterProfile.ts';
import { normalize } from '../../../../core/domain/normalize.ts';
import { ownedStatusOf } from '../../../../core/domain/ownership.ts';
import { plan } from '../../../../core/domain/plan.ts';
import { inventoryOptions } from '../../../support/settings.ts';
import { crdViolations } from '../../../support/crdSchema.ts';
import { eksCluster, LATER, NOW } from '../../../support/fixtures.ts';

const options = inventoryOptions({ clusterSets: { 'cluster-inventory': 'prod' } });
const names = Object.values(options.accessProviderNames);
const prop = (p: ClusterProfile, name: string) => p.status?.properties?.find((q) => q.name === name)?.value;
const reachable = (condition: ClusterProfile) =>
  condition.status?.conditions?.find((c) => c.type === 'MemberReachable');

const reading: MemberReading = {
  reachable: true,
  properties: [
    { name: 'example.com/rack', value: 'r12' },
    { name: 'clusterset.k8s.io', value: 'member-set' },
    { name: 'cpsync.io/status', value: 'not the member’s to say' },
    { name: 'example.com/huge', value: 'x'.repeat(2000) },
  ],
  clusterPropertyVersion: 'v1beta1',
  kubeSystemUid: '9a1f0c52-7d0e-4b8e-9f0a-3c5d2e1b7a64',
  crdGroups: ['kueue.x-k8s.io', 'argoproj.io', 'argoproj.io'],
};

describe('member readings in a profile', () => {
  const base = normalize(eksCluster(), options, NOW);
  const read = applyMemberReading(base, reading, undefined, NOW);

  it('copies the labelled properties unchanged, the id from kube-system recorded as such, and the CRD groups', () => {
    assert.equal(prop(read, 'example.com/rack'), 'r12');
    assert.equal(prop(read, 'cluster.clusterset.k8s.io'), reading.reachable && reading.kubeSystemUid);
    assert.equal(prop(read, 'cpsync.io/cluster-id-source'), 'kube-system-uid');
    assert.equal(prop(read, 'group.customResource.k8s.io'), '["argoproj.io","kueue.x-k8s.io"]');
    // A cpsync.io/ name is cpsync's own; a value the ClusterProfile CRD cannot hold is not cut, it is left out.
    assert.equal(prop(read, 'cpsync.io/status'), prop(base, 'cpsync.io/status'));
    assert.equal(prop(read, 'example.com/huge'), undefined);
    assert.match(
      reachable(read)?.message ?? '',
      /not copied: clusterset\.k8s\.io \(cpsync's, from the clouds and the configuration\), cpsync\.io\/status \(a cpsync\.io\/ name\), example\.com\/huge/,
    );
    assert.deepEqual(crdViolations(read), []);
  });

  it('writes what the CRD holds however many properties a member labels, and names every one it copied, so that a later reading takes them out', () => {
    const property = fc.record({
      name: fc
        .tuple(
          fc.stringMatching(/^[a-z][a-z0-9-]{0,40}(\.[a-z][a-z0-9-]{0,20}){1,3}$/),
          fc.stringMatching(/^[a-z][a-z0-9-]{0,60}$/),
        )
        .map(([domain, key]) => `${domain}/${key}`),
      value: fc.string({ minLength: 1, maxLength: 40 }),
    });
    fc.assert(
      fc.property(fc.array(property, { maxLength: 300, size: 'max' }), fc.boolean(), (properties, withId) => {
        const given: MemberReading = {
          ...reading,
          properties: [
            ...properties,
            ...(withId ? [{ name: 'cluster.clusterset.k8s.io', value: 'member-id' }] : []),
          ],
        };
        const profile = applyMemberReading(base, given, undefined, NOW);
        assert.deepEqual(crdViolations(profile), []);
        const listed = JSON.parse(prop(profile, 'cpsync.io/member-properties') ?? '[]') as string[];
        const foreign = (profile.status?.properties ?? [])
          .map((p) => p.name)
          .filter((name) => !name.startsWith('cpsync.io/') && !prop(base, name));
        // Every property the reading put there is named, so the next reading (or the probe turned off) can take it out.
        assert.deepEqual([...new Set(foreign)].sort(), [...listed].sort());
        if (withId) assert.equal(prop(profile, 'cluster.clusterset.k8s.io'), 'member-id');
        // What was not copied is said.
        const copied = new Set(listed);
        for (const p of properties)
          if (!copied.has(p.name))
            assert.ok(
              reachable(profile)?.message.includes(p.name.slice(0, 40)) ||
                (reachable(profile)?.message.length ?? 0) >= 32000,
            );
        // A reading with none of them takes every one out.
        const emptied = applyMemberReading(base, { ...reading, properties: [] }, profile, LATER);
        for (const name of listed)
          if (
            !prop(base, name) &&
            name !== 'cluster.clusterset.k8s.io' &&
            name !== 'group.customResource.k8s.io'
          )
            assert.equal(prop(emptied, name), undefined, name);
      }),
      { numRuns: 60 },
    );
  });

  it('keeps the configured ClusterSet, and says the member names another', () => {
    assert.equal(prop(base, 'clusterset.k8s.io'), 'prod');
    assert.equal(prop(read, 'clusterset.k8s.io'), 'prod');
    assert.equal(prop(read, 'cpsync.io/clusterset-conflict'), 'configured prod, member member-set');
  });

  it('carries the disagreement as each profile’s own: a copy in another ClusterSet’s namespace says its own set', () => {
    const copy = { ...normalize(eksCluster(), options, NOW) };
    copy.metadata = { ...copy.metadata, namespace: 'kueue' };
    copy.status = {
      ...copy.status,
      properties: copy.status!.properties!.map((p) =>
        p.name === 'clusterset.k8s.io' ? { ...p, value: 'batch' } : p,
      ),
    };
    const carried = carryMemberState(copy, read);
    assert.equal(prop(carried, 'clusterset.k8s.io'), 'batch');
    assert.equal(prop(carried, 'cpsync.io/clusterset-conflict'), 'configured batch, member member-set');
    // What a reading of the member gives that copy is the same: nothing to write between the two.
    assert.deepEqual(
      applyMemberReading(copy, reading, undefined, NOW).status?.properties,
      carried.status?.properties,
    );
  });

  it('takes the member’s own cluster id over the kube-system UID', () => {
    const own = applyMemberReading(
      base,
      { ...reading, properties: [{ name: 'cluster.clusterset.k8s.io', value: 'id-7' }] },
      undefined,
      NOW,
    );
    assert.equal(prop(own, 'cluster.clusterset.k8s.io'), 'id-7');
    assert.equal(prop(own, 'cpsync.io/cluster-id-source'), 'ClusterProperty');
  });

  it('owns what it copied, so that the plan compares it and removes it when the member drops it', () => {
    const owned = ownedStatusOf(read.status, names).properties.map((p) => p.name);
    for (const name of ['example.com/rack', 'cluster.clusterset.k8s.io', 'group.customResource.k8s.io'])
      assert.ok(owned.includes(name), name);
    const stored = { ...read, metadata: { ...read.metadata, resourceVersion: '5' } };
    const input = {
      outcome: {
        scope: { provider: 'eks' as const, account: '111122223333', region: 'us-east-1' },
        kind: 'complete' as const,
      },
      manager: 'cpsync',
      deletionGraceListings: 2,
      missedBefore: new Map(),
      accessProviderNames: names,
      now: LATER,
    };
    const dropped = applyMemberReading(
      normalize(eksCluster(), options, LATER),
      { ...reading, properties: [] },
      stored,
      LATER,
    );
    const changed = plan({ ...input, desired: [dropped], current: [stored] });
    assert.deepEqual(
      changed.updates[0]!.changes.map((c) => c.field).filter((f) => f.startsWith('status.properties')),
      [
        'status.properties[cpsync.io/clusterset-conflict]',
        'status.properties[cpsync.io/member-properties]',
        'status.properties[example.com/rack]',
      ],
    );
    // The same reading again: nothing to write.
    const again = applyMemberReading(normalize(eksCluster(), options, LATER), reading, stored, LATER);
    assert.equal(plan({ ...input, desired: [again], current: [stored] }).unchanged, 1);
    // Not read this run: what the hub holds is carried, nothing to write.
    const carried = carryMemberState(normalize(eksCluster(), options, LATER), stored);
    assert.equal(plan({ ...input, desired: [carried], current: [stored] }).unchanged, 1);
  });

  it('never lets a member, or what the hub holds of one, stand for what the clouds and the configuration say (property)', () => {
    const derivedNames = [
      'cluster-endpoints.k8s.io',
      'location.topology.k8s.io',
      'topology.kubernetes.io/region',
      'topology.kubernetes.io/zone',
      'count.node.k8s.io',
      'type.node.k8s.io',
      'clusterset.k8s.io',
    ];
    const name = fc.oneof(
      fc.constantFrom(...derivedNames, 'example.com/rack', 'cluster.clusterset.k8s.io'),
      fc.string({ minLength: 1, maxLength: 20 }),
    );
    const property = fc.record({ name, value: fc.string({ minLength: 1, maxLength: 40 }) });
    // What the hub may hold: a profile written by any version, or by someone else, listing any names as the probe's.
    const held = fc.record({
      listed: fc.uniqueArray(name, { maxLength: 6 }),
      properties: fc.array(property, { maxLength: 8 }),
      conflict: fc.option(fc.string({ maxLength: 40 }), { nil: undefined }),
    });
    fc.assert(
      fc.property(
        fc.array(property, { maxLength: 8 }),
        fc.option(held, { nil: undefined }),
        fc.constantFrom('read', 'unreachable', 'carried'),
        fc.constantFrom('cluster-inventory', 'elsewhere'),
        (properties, hub, how, namespace) => {
          const desired = normalize(eksCluster(), { ...options, namespace }, LATER);
          const previous: ClusterProfile | undefined = hub && {
            ...base,
            status: {
              ...base.status,
              properties: [
                ...hub.properties.map((p) => ({ ...p, lastObservedTime: NOW })),
                { name: 'cpsync.io/member-properties', value: JSON.stringify(hub.listed) },
                ...(hub.conflict === undefined
                  ? []
                  : [{ name: 'cpsync.io/clusterset-conflict', value: hub.conflict }]),
              ],
            },
          };
          const result =
            how === 'carried'
              ? carryMemberState(desired, previous)
              : applyMemberReading(
                  desired,
                  how === 'read'
                    ? { ...reading, properties }
                    : { reachable: false, reason: 'Unreachable', message: 'no route' },
                  previous,
                  LATER,
                );
          for (const derivedName of derivedNames)
            assert.deepEqual(
              result.status?.properties?.filter((p) => p.name === derivedName),
              desired.status?.properties?.filter((p) => p.name === derivedName),
              derivedName,
            );
          // Nor does the list of what the member gave name one of them.
          const listed = result.status?.properties?.find((p) => p.name === 'cpsync.io/member-properties');
          if (listed) {
            const names = JSON.parse(listed.value) as string[];
            assert.ok(names.length > 0 && names.every((n) => !derivedNames.includes(n)), listed.value);
          }
          assert.deepEqual(crdViolations(result), []);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('changes nothing but its condition when the member cannot be read', () => {
    const failed = applyMemberReading(
      base,
      { reachable: false, reason: 'Unreachable', message: 'reading the member: ECONNREFUSED' },
      read,
      LATER,
    );
    assert.deepEqual(failed.status?.properties, read.status?.properties);
    assert.deepEqual(
      failed.status?.conditions?.filter((c) => c.type !== 'MemberReachable'),
      read.status?.conditions?.filter((c) => c.type !== 'MemberReachable'),
    );
    assert.deepEqual(
      { status: reachable(failed)?.status, reason: reachable(failed)?.reason },
      { status: 'False', reason: 'Unreachable' },
    );
  });
});

describe('member pacing', () => {
  const pacing = { everyMillis: 60 * 60_000, slotMillis: 15 * 60_000 };

  it('reads every member exactly once in each period, whatever the ids (property)', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.string({ minLength: 1 }), { minLength: 1, maxLength: 50 }),
        fc.integer({ min: 0, max: 10_000 }),
        (ids, period) => {
          const start = period * pacing.everyMillis;
          for (const id of ids) {
            const slots = [0, 1, 2, 3].filter((slot) =>
              memberDue(id, start + slot * pacing.slotMillis + 1_000, pacing),
            );
            if (slots.length !== 1) return false;
          }
          return true;
        },
      ),
    );
  });

  it('spreads a large inventory over the slots (a quarter a run, give or take)', () => {
    const ids = Array.from({ length: 10_000 }, (_, i) => `arn:aws:eks:us-east-1:111122223333:cluster/c${i}`);
    for (let slot = 0; slot < 4; slot++) {
      const due = ids.filter((id) => memberDue(id, slot * pacing.slotMillis, pacing)).length;
      assert.ok(due > 2_300 && due < 2_700, `slot ${slot}: ${due}`);
    }
    assert.ok(ids.every((id) => memberDue(id, 0, { everyMillis: 60_000, slotMillis: 60_000 })));
  });
});
