import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  applyGrantOutcome,
  carriesGrants,
  consumerCondition,
  grantBlocked,
  heldGrants,
  planGrants,
  type Consumer,
  type GrantResult,
} from '../../../../core/domain/grants.ts';
import type { ClusterProfile } from '../../../../core/domain/model/clusterProfile.ts';
import { normalizeAll } from '../../../../core/domain/normalize.ts';
import { ownedState } from '../../../../core/domain/ownership.ts';
import { crdViolations } from '../../../support/crdSchema.ts';
import { aksCluster, eksCluster, gkeCluster, LATER, NOW } from '../../../support/fixtures.ts';
import { inventoryOptions } from '../../../support/settings.ts';

const GRANTS = 'cpsync.io/access-grants';
const options = inventoryOptions({
  projections: [
    { provider: 'eks', namespaces: ['argocd'] },
    { provider: 'gke', namespaces: ['kueue-system'] },
  ],
});
const clusters = [eksCluster(), gkeCluster(), aksCluster()];
const desired = normalizeAll(clusters, options, NOW).profiles;
const ids = {
  eks: 'arn:aws:iam::111122223333:role/argocd',
  gke: 'argocd@ops.iam.gserviceaccount.com',
  aks: '5d1c0e2a-7b3f-4c6d-9e8a-0f1b2c3d4e5f',
};
const argocd: Consumer = { name: 'argocd', namespaces: ['argocd'], level: 'edit', identities: ids };
const everywhere: Consumer = {
  name: 'auditor',
  namespaces: ['cluster-inventory'],
  level: 'view',
  identities: { eks: 'arn:aws:iam::111122223333:role/auditor' },
};
const providerOf = (p: ClusterProfile) => p.metadata.labels?.['cpsync.io/provider'];
const withRecord = (p: ClusterProfile, record: Record<string, string>): ClusterProfile => ({
  ...p,
  metadata: { ...p.metadata, annotations: { ...p.metadata.annotations, [GRANTS]: JSON.stringify(record) } },
});
const granted = (held: string): GrantResult => ({ held, status: 'True', reason: 'Granted', message: 'in' });

describe('access grants: who is granted what, and what is recorded', () => {
  it('binds a consumer to exactly the clusters profiled or projected in its namespaces', () => {
    const plans = planGrants(desired, [], [argocd, everywhere]);
    const byProvider = Object.fromEntries(plans.map((p) => [p.provider, p]));
    // argocd reads `argocd`, where only the EKS cluster is projected; auditor reads the inventory's own.
    assert.deepEqual(
      byProvider.eks!.wanted.map((c) => c.name),
      ['argocd', 'auditor'],
    );
    assert.deepEqual(
      byProvider.gke!.wanted.map((c) => c.name),
      ['auditor'],
    );
    assert.deepEqual(
      byProvider.aks!.wanted.map((c) => c.name),
      ['auditor'],
    );
    assert.ok(plans.every((p) => p.revoke.length === 0 && p.ready));
    assert.deepEqual(planGrants(desired, [], []), [], 'no consumer, nothing held: nothing to do');
  });

  it('revokes what it holds for a consumer no longer bound, removed, or with another identity; nothing it does not hold', () => {
    const eks = desired.filter((p) => providerOf(p) === 'eks');
    const current = eks.map((p) =>
      withRecord(p, {
        argocd: 'arn:aws:iam::111122223333:role/old',
        gone: 'arn:aws:iam::111122223333:role/gone',
      }),
    );
    const [plan] = planGrants(eks, current, [argocd]);
    assert.deepEqual(plan!.revoke, [
      { consumer: 'argocd', identity: 'arn:aws:iam::111122223333:role/old' },
      { consumer: 'gone', identity: 'arn:aws:iam::111122223333:role/gone' },
    ]);
    // The feature off: every grant it holds goes; nothing else.
    const [off] = planGrants(eks, current, []);
    assert.deepEqual(off!.wanted, []);
    assert.equal(off!.revoke.length, 2);
  });

  it('grants nothing on a cluster that is not running, nor to a consumer without an identity for its cloud', () => {
    const creating = normalizeAll(
      [eksCluster({ health: { status: 'CREATING', issues: [] } })],
      options,
      NOW,
    ).profiles;
    const [plan] = planGrants(creating, [], [argocd]);
    assert.equal(plan!.ready, false);
    assert.equal(grantBlocked(plan!, argocd)?.reason, 'ClusterNotReady');
    const [gke] = planGrants(
      desired.filter((p) => providerOf(p) === 'gke'),
      [],
      [everywhere],
    );
    assert.equal(grantBlocked(gke!, { ...everywhere, identities: {} })?.reason, 'NoIdentity');
  });

  it('records what it holds on every profile of the cluster, and each consumer’s condition on its own namespace’s profiles only', () => {
    const eks = desired.filter((p) => providerOf(p) === 'eks');
    const [plan] = planGrants(eks, [], [argocd, everywhere]);
    const results = new Map([
      ['argocd', granted(ids.eks)],
      ['auditor', { status: 'False', reason: 'Refused', message: 'AccessDenied' } as GrantResult],
    ]);
    const written = eks.map((p) => applyGrantOutcome(p, plan!, { results, revoked: [] }, undefined, LATER));
    for (const profile of written) {
      assert.deepEqual(JSON.parse(profile.metadata.annotations![GRANTS]!), {
        argocd: { identity: ids.eks, level: 'edit' },
      });
      assert.deepEqual(crdViolations(profile), []);
      const types = (profile.status?.conditions ?? [])
        .map((c) => c.type)
        .filter((t) => t.startsWith('consumers.'));
      assert.deepEqual(
        types,
        profile.metadata.namespace === 'argocd'
          ? [consumerCondition('argocd')]
          : [consumerCondition('auditor')],
      );
    }
    // Unchanged next time: the condition keeps its time (no write).
    const again = applyGrantOutcome(
      eks[0]!,
      plan!,
      { results, revoked: [] },
      written[0],
      '2026-01-02T00:00:00Z',
    );
    assert.deepEqual(ownedState(again, ['eks']), ownedState(written[0]!, ['eks']));
  });

  it('keeps the record of a grant it could not check or revoke, and drops one it revoked', () => {
    const eks = desired.filter((p) => providerOf(p) === 'eks');
    const current = eks.map((p) =>
      withRecord(p, { argocd: ids.eks, gone: 'arn:aws:iam::111122223333:role/gone' }),
    );
    const [plan] = planGrants(eks, current, [argocd]);
    const unreachable: GrantResult = { status: 'False', reason: 'MemberUnreachable', message: 'timeout' };
    const kept = applyGrantOutcome(
      eks[0]!,
      plan!,
      { results: new Map([['argocd', unreachable]]), revoked: [] },
      current[0],
      LATER,
    );
    assert.deepEqual(
      heldGrants(kept).map((g) => g.consumer),
      ['argocd', 'gone'],
    );
    const revoked = applyGrantOutcome(
      eks[0]!,
      plan!,
      { results: new Map([['argocd', granted(ids.eks)]]), revoked: [plan!.revoke[0]!] },
      current[0],
      LATER,
    );
    assert.deepEqual(heldGrants(revoked), [{ consumer: 'argocd', identity: ids.eks, level: 'edit' }]);
    // A dry run (no outcome): what the hub holds stays.
    const dry = applyGrantOutcome(eks[0]!, plan!, undefined, current[0], LATER);
    assert.equal(dry.metadata.annotations![GRANTS], current[0]!.metadata.annotations![GRANTS]);
  });

  it('reads an unreadable record as nothing held, and knows a profile that carries the feature', () => {
    const profile = desired[0]!;
    for (const text of ['not json', '[]', '{"a": 1}', 'null'])
      assert.deepEqual(
        heldGrants({ ...profile, metadata: { ...profile.metadata, annotations: { [GRANTS]: text } } }),
        [],
      );
    assert.equal(carriesGrants(profile), false);
    assert.equal(carriesGrants(withRecord(profile, {})), true);
  });

  it('never revokes a grant it does not hold, and revokes every held grant no wanted consumer holds the same way (property)', () => {
    const names = ['a', 'b', 'c', 'd'];
    const identity = fc.constantFrom('arn:aws:iam::111122223333:role/x', 'arn:aws:iam::111122223333:role/y');
    fc.assert(
      fc.property(
        fc.subarray(names),
        fc.dictionary(fc.constantFrom(...names), identity),
        fc.dictionary(fc.constantFrom(...names), identity),
        fc.subarray(['cluster-inventory', 'argocd', 'kueue-system']),
        (consumerNames, identities, held, namespaces) => {
          const consumers: Consumer[] = consumerNames.map((name) => ({
            name,
            namespaces: namespaces.length > 0 ? namespaces : ['elsewhere'],
            level: 'view',
            identities: identities[name] ? { eks: identities[name] } : {},
          }));
          const eks = desired.filter((p) => providerOf(p) === 'eks');
          const current = eks.map((p) => withRecord(p, held));
          const plans = planGrants(eks, current, consumers);
          const plan = plans[0];
          const wanted = new Map(
            consumers
              .filter((c) => c.namespaces.some((ns) => ['cluster-inventory', 'argocd'].includes(ns)))
              .map((c) => [c.name, c.identities.eks]),
          );
          if (!plan) return Object.keys(held).length === 0 && wanted.size === 0;
          for (const grant of plan.revoke) assert.equal(held[grant.consumer], grant.identity);
          for (const [consumer, id] of Object.entries(held))
            assert.equal(
              plan.revoke.some((g) => g.consumer === consumer),
              wanted.get(consumer) !== id,
            );
          assert.deepEqual(plan.wanted.map((c) => c.name).sort(), [...wanted.keys()].sort());
          return true;
        },
      ),
    );
  });
});
