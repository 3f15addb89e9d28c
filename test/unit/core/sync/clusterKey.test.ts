/**
 * One chase per cluster: the key a cluster's follow-up is known by is one for every spelling its cloud gives the
 * same cluster (an AKS resource group and name in another ASCII case), and two for clusters the cloud tells apart
 * (an EKS name in another case; an AKS resource group in letters only a wider fold makes one).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { clusterKey } from '../../../../core/sync/follow.ts';

const SUBSCRIPTION = '00000000-1111-2222-3333-444444444444';
const aks = (resourceGroup: string, name: string) => ({
  scope: { provider: 'aks' as const, account: SUBSCRIPTION, region: 'westeurope' },
  resourceGroup,
  name,
});
const eks = (name: string) => ({
  scope: { provider: 'eks' as const, account: '111122223333', region: 'us-east-1' },
  name,
});
const flipped = (text: string, flips: boolean[]) =>
  [...text].map((c, i) => (flips[i % flips.length] ? c.toUpperCase() : c)).join('');

describe('clusterKey', () => {
  it('is one for an AKS cluster whatever the ASCII case of its resource group and name', () => {
    fc.assert(
      fc.property(
        fc.stringMatching(/^[a-z][a-z0-9_.()-]{0,20}$/),
        fc.stringMatching(/^[a-z][a-z0-9-]{0,20}$/),
        fc.array(fc.boolean(), { minLength: 1, maxLength: 6 }),
        (group, name, flips) => {
          assert.equal(
            clusterKey(aks(flipped(group, flips), flipped(name, flips))),
            clusterKey(aks(group, name)),
          );
        },
      ),
    );
  });

  it('is two for clusters the cloud tells apart', () => {
    assert.notEqual(clusterKey(eks('Orders')), clusterKey(eks('orders')), 'EKS names are case-sensitive');
    assert.notEqual(
      clusterKey(aks('\u212Aube-rg', 'orders')),
      clusterKey(aks('kube-rg', 'orders')),
      'KELVIN SIGN is not k to ARM',
    );
  });
});
