import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  carriesGrants,
  consumerCondition,
  grantBlocked,
  ledgerKey,
  planGrants,
  recordAfter,
  recordBefore,
  showGrants,
  type Consumer,
  type GrantRecord,
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
/** The ledger's records of `profiles`' clusters, each holding `held` (consumer → identity). */
function ledgerOf(
  profiles: readonly ClusterProfile[],
  held: Record<string, string>,
): Map<string, GrantRecord> {
  const records = new Map<string, GrantRecord>();
  for (const p of profiles) {
    const record: GrantRecord = {
      providerId: p.metadata.annotations!['cpsync.io/provider-id']!,
      provider: providerOf(p) as GrantRecord['provider'],
      account: p.metadata.labels!['cpsync.io/account']!,
      region: p.metadata.labels!['cpsync.io/region']!,
      grants: Object.entries(held).map(([consumer, identity]) => ({ consumer, identity })),
    };
    records.set(ledgerKey(record), record);
  }
  return records;
}
const none = new Map<string, GrantRecord>();
const granted = (held: string): GrantResult => ({ held, status: 'True', reason: 'Granted', message: 'in' });

describe('access grants: who is granted what, and what is recorded', () => {
  it('binds a consumer to exactly the clusters profiled or projected in its namespaces', () => {
    const plans = planGrants(desired, none, [argocd, everywhere]);
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
    assert.deepEqual(planGrants(desired, none, []), [], 'no consumer, nothing held: nothing to do');
  });

  it('revokes what its ledger holds for a consumer no longer bound, removed, or with another identity; nothing it does not hold', () => {
    const eks = desired.filter((p) => providerOf(p) === 'eks');
    const current = ledgerOf(eks, {
      argocd: 'arn:aws:iam::111122223333:role/old',
      gone: 'arn:aws:iam::111122223333:role/gone',
    });
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
    const [plan] = planGrants(creating, none, [argocd]);
    assert.equal(plan!.ready, false);
    assert.equal(grantBlocked(plan!, argocd)?.reason, 'ClusterNotReady');
    const [gke] = planGrants(
      desired.filter((p) => providerOf(p) === 'gke'),
      none,
      [everywhere],
    );
    assert.equal(grantBlocked(gke!, { ...everywhere, identities: {} })?.reason, 'NoIdentity');
  });

  it('shows what its ledger holds on every profile of the cluster, and each consumer’s condition on its own namespace’s profiles only', () => {
    const eks = desired.filter((p) => providerOf(p) === 'eks');
    const [plan] = planGrants(eks, none, [argocd, everywhere]);
    const results = new Map([
      ['argocd', granted(ids.eks)],
      [
        'auditor',
        { status: 'False', reason: 'Refused', message: 'AccessDenied', untouched: true } as GrantResult,
      ],
    ]);
    const record = recordAfter(plan!, { results, revoked: [] }, recordBefore(plan!));
    assert.deepEqual(
      record.grants,
      [{ consumer: 'argocd', identity: ids.eks, level: 'edit' }],
      'refused: not made',
    );
    const written = eks.map((p) => showGrants(p, plan!, record, undefined, LATER));
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
    const again = showGrants(eks[0]!, plan!, record, written[0], '2026-01-02T00:00:00Z');
    assert.deepEqual(ownedState(again, ['eks']), ownedState(written[0]!, ['eks']));
  });

  it('shows what the ledger holds whatever the hub carries: a record written on the hub is not read', () => {
    const eks = desired.filter((p) => providerOf(p) === 'eks');
    const forged = eks.map((p) => withRecord(p, { intruder: 'arn:aws:iam::999999999999:role/intruder' }));
    const [plan] = planGrants(eks, none, [argocd]);
    assert.deepEqual(plan!.held, [], 'nothing held: the hub is not the record');
    const shown = showGrants(eks[0]!, plan!, recordAfter(plan!, undefined), forged[0], LATER);
    assert.equal(shown.metadata.annotations?.[GRANTS], undefined, 'the forged record is written over');
  });

  it('records a grant before the cloud is asked (pending), keeps one it could not check, and drops one it revoked or that the look left untouched', () => {
    const eks = desired.filter((p) => providerOf(p) === 'eks');
    const [plan] = planGrants(eks, ledgerOf(eks, { gone: 'arn:aws:iam::111122223333:role/gone' }), [argocd]);
    const ahead = recordBefore(plan!);
    assert.deepEqual(
      ahead.grants.map((g) => [g.consumer, g.identity, g.pending ?? false]),
      [
        ['argocd', ids.eks, true],
        ['gone', 'arn:aws:iam::111122223333:role/gone', false],
      ],
    );
    const unreachable: GrantResult = { status: 'False', reason: 'MemberUnreachable', message: 'timeout' };
    const kept = recordAfter(plan!, { results: new Map([['argocd', unreachable]]), revoked: [] }, ahead);
    assert.deepEqual(
      kept.grants.map((g) => [g.consumer, g.pending ?? false]),
      [
        ['argocd', true],
        ['gone', false],
      ],
      'what may have been made stays recorded (pending)',
    );
    const revoked = recordAfter(
      plan!,
      { results: new Map([['argocd', granted(ids.eks)]]), revoked: [plan!.revoke[0]!] },
      ahead,
    );
    assert.deepEqual(revoked.grants, [{ consumer: 'argocd', identity: ids.eks, level: 'edit' }]);
    const after = (result: GrantResult, from = plan!, written = ahead) =>
      recordAfter(from, { results: new Map([['argocd', result]]), revoked: [] }, written).grants.map((g) => [
        g.consumer,
        g.pending ?? false,
      ]);
    const refused: GrantResult = { status: 'False', reason: 'Refused', message: 'AccessDenied' };
    assert.deepEqual(
      after({ ...refused, untouched: true }),
      [['gone', false]],
      'refused before anything was made',
    );
    // Refused, or granted through what cpsync did not make, after the look made something (a first namespace's
    // binding, an access entry before its policy): what may be there stays named.
    const elsewhere: GrantResult = { status: 'True', reason: 'GrantedElsewhere', message: 'not cpsync’s' };
    for (const result of [refused, elsewhere, unreachable])
      assert.deepEqual(
        after(result),
        [
          ['argocd', true],
          ['gone', false],
        ],
        result.reason,
      );
    // Recorded pending by an earlier look (which may have made it): a look that left nothing keeps it named.
    const [again] = planGrants(eks, new Map([[ledgerKey(ahead), ahead]]), [argocd]);
    assert.deepEqual(after({ ...refused, untouched: true }, again!, recordBefore(again!)), [
      ['argocd', true],
      ['gone', false],
    ]);
    // Held on other terms (a ledger record without terms): the new terms are recorded pending ahead; a look
    // that did not make them leaves the grant held as it was, whatever it made meanwhile.
    const [held] = planGrants(eks, ledgerOf(eks, { argocd: ids.eks }), [argocd]);
    const heldAhead = recordBefore(held!);
    assert.equal(heldAhead.grants[0]?.pending, true, 'the new terms, pending');
    for (const result of [refused, elsewhere, unreachable, { ...refused, untouched: true as const }])
      assert.deepEqual(
        recordAfter(held!, { results: new Map([['argocd', result]]), revoked: [] }, heldAhead).grants,
        [{ consumer: 'argocd', identity: ids.eks }],
        result.reason,
      );
    // A dry run (no outcome): the record stays as it was.
    assert.deepEqual(recordAfter(plan!, undefined, plan!.record), plan!.record);
  });

  it('knows a profile that carries the feature', () => {
    const profile = desired[0]!;
    assert.equal(carriesGrants(profile), false);
    assert.equal(carriesGrants(withRecord(profile, {})), true);
  });

  it('never revokes a grant its ledger does not hold, and revokes every held grant no wanted consumer holds the same way (property)', () => {
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
          const plans = planGrants(eks, ledgerOf(eks, held), consumers);
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
