import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ClusterProfile } from '../../../../core/domain/model/clusterProfile.ts';
import { untrustedReason } from '../../../../core/domain/untrustedReason.ts';

function profile(
  labels: Record<string, string> | undefined,
  annotations: Record<string, string> | undefined,
  manager: string,
): ClusterProfile {
  return {
    apiVersion: 'multicluster.x-k8s.io/v1alpha1',
    kind: 'ClusterProfile',
    metadata: {
      name: 'p',
      namespace: 'inv',
      ...(labels ? { labels } : {}),
      ...(annotations ? { annotations } : {}),
    },
    spec: { displayName: 'p', clusterManager: { name: manager } },
  };
}

const LABEL = { 'x-k8s.io/cluster-manager': 'cpsync' };
const ID = { 'cpsync.io/provider-id': 'arn:aws:eks:us-east-1:111122223333:cluster/p' };

describe('untrustedReason: which hub profiles a subscriber takes as cpsync’s', () => {
  const cases: Array<[string, ClusterProfile, string | undefined]> = [
    ['label, spec and provider id say cpsync', profile(LABEL, ID, 'cpsync'), undefined],
    [
      'no labels at all',
      profile(undefined, ID, 'cpsync'),
      'inv/p is not managed by cpsync (x-k8s.io/cluster-manager: null)',
    ],
    [
      'the label of another manager',
      profile({ 'x-k8s.io/cluster-manager': 'fleet' }, ID, 'cpsync'),
      'inv/p is not managed by cpsync (x-k8s.io/cluster-manager: "fleet")',
    ],
    [
      "cpsync's label, another manager in the spec",
      profile(LABEL, ID, 'someone-else'),
      'inv/p is not managed by cpsync (spec.clusterManager.name: "someone-else")',
    ],
    [
      "only cpsync's label and spec: no provider id",
      profile(LABEL, undefined, 'cpsync'),
      'inv/p has no cpsync.io/provider-id annotation: not a profile cpsync wrote',
    ],
    [
      'an empty provider id',
      profile(LABEL, { 'cpsync.io/provider-id': '' }, 'cpsync'),
      'inv/p has no cpsync.io/provider-id annotation: not a profile cpsync wrote',
    ],
  ];
  for (const [name, given, reason] of cases)
    it(name, () => assert.equal(untrustedReason(given, 'cpsync'), reason));

  it('judges by the configured manager', () => {
    const acme = profile({ 'x-k8s.io/cluster-manager': 'acme' }, ID, 'acme');
    assert.equal(untrustedReason(acme, 'acme'), undefined);
    assert.match(untrustedReason(acme, 'cpsync')!, /is not managed by cpsync/);
  });
});
