/**
 * One chase per cluster, and one share of its account's lease (so that two syncs of one cluster never run at
 * once): the key a cluster's follow-up is known by, and its share's, are one for every spelling its cloud gives
 * the same cluster (an AKS resource group and name in another ASCII case; a GKE or AKS cluster found through a
 * scope of any region, or of every region), and two for clusters the cloud tells apart (an EKS name in another
 * case, or in another region; an AKS resource group in letters only a wider fold makes one).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { clusterKey, clusterShare } from '../../../../core/sync/clusterKeys.ts';

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

  it('is two for clusters the cloud tells apart, and so is their share', () => {
    assert.notEqual(clusterKey(eks('Orders')), clusterKey(eks('orders')), 'EKS names are case-sensitive');
    assert.notEqual(clusterShare(eks('Orders')), clusterShare(eks('orders')), 'EKS names are case-sensitive');
    assert.equal(
      clusterShare(aks('RG-Web', 'Orders')),
      clusterShare(aks('rg-web', 'orders')),
      'ARM ignores case',
    );
    assert.notEqual(
      clusterShare(aks('\u212Aube-rg', 'orders')),
      clusterShare(aks('kube-rg', 'orders')),
      'KELVIN SIGN is not k to ARM',
    );
    assert.notEqual(
      clusterKey(aks('\u212Aube-rg', 'orders')),
      clusterKey(aks('kube-rg', 'orders')),
      'KELVIN SIGN is not k to ARM',
    );
  });

  it('is one for a GKE or AKS cluster, and its share one, whatever region the scope that names it is of; two for an EKS cluster of another region (property)', () => {
    const region = fc.constantFrom('*', 'europe-west1', 'us-central1', 'westeurope', 'eastus');
    fc.assert(
      fc.property(
        fc.constantFrom('gke' as const, 'aks' as const),
        region,
        region,
        fc.stringMatching(/^[a-z][a-z0-9-]{0,20}$/),
        (provider, one, other, name) => {
          const at = (scopeRegion: string) => ({
            scope: {
              provider,
              account: provider === 'aks' ? SUBSCRIPTION : 'acme-data',
              region: scopeRegion,
            },
            name,
            ...(provider === 'gke' ? { location: 'europe-west1-b' } : { resourceGroup: 'rg-web' }),
          });
          assert.equal(clusterKey(at(one)), clusterKey(at(other)));
          assert.equal(clusterShare(at(one)), clusterShare(at(other)));
        },
      ),
    );
    const east = eks('orders');
    const west = { ...east, scope: { ...east.scope, region: 'eu-west-1' } };
    assert.notEqual(clusterKey(east), clusterKey(west));
    assert.notEqual(clusterShare(east), clusterShare(west));
    // Two GKE clusters of one name in two locations stay two.
    const gke = (location: string) => ({
      scope: { provider: 'gke' as const, account: 'acme-data', region: '*' },
      name: 'orders',
      location,
    });
    assert.notEqual(clusterKey(gke('europe-west1')), clusterKey(gke('europe-west1-b')));
    assert.notEqual(clusterShare(gke('europe-west1')), clusterShare(gke('europe-west1-b')));
  });
});
