import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { normalize } from '../../../../core/domain/normalize.ts';
import { inventoryOptions } from '../../../support/settings.ts';
import { canonicalScope, clusterInScope, InvalidScopeError } from '../../../../core/domain/scopes.ts';
import { matchesSelector, scopeSelector } from '../../../../core/domain/labels.ts';
import { aksCluster, eksCluster, gkeCluster } from '../../../support/fixtures.ts';

const SUB = '00000000-1111-2222-3333-444444444444';

describe('scope identity', () => {
  const same: Array<[string, { provider: string; account: string; region?: string }, string]> = [
    ['an AKS subscription in capitals', { provider: 'aks', account: SUB.toUpperCase() }, `aks/${SUB}/*`],
    [
      'an Azure location as the portal writes it',
      { provider: 'aks', account: SUB, region: 'West Europe' },
      `aks/${SUB}/westeurope`,
    ],
    [
      'an Azure location in camel case',
      { provider: 'aks', account: SUB, region: 'WestEurope' },
      `aks/${SUB}/westeurope`,
    ],
    [
      'a GCP project in capitals',
      { provider: 'gke', account: 'ACME-DATA', region: 'Europe-West1' },
      'gke/acme-data/europe-west1',
    ],
    [
      'a domain-scoped GCP project',
      { provider: 'gke', account: 'example.com:acme-data' },
      'gke/example.com:acme-data/*',
    ],
    [
      'an AWS region in capitals, padded',
      { provider: 'eks', account: ' 111122223333 ', region: 'US-EAST-1' },
      'eks/111122223333/us-east-1',
    ],
    [
      'an empty region (the whole account)',
      { provider: 'eks', account: '111122223333', region: '' },
      'eks/111122223333/*',
    ],
  ];
  for (const [title, scope, expected] of same)
    it(`spells ${title} one way`, () => {
      const c = canonicalScope(scope);
      assert.equal(`${c.provider}/${c.account}/${c.region}`, expected);
    });

  const refused: Array<[string, { provider: string; account: string; region?: string }, RegExp]> = [
    [
      'a GKE zone',
      { provider: 'gke', account: 'acme-data', region: 'europe-west1-b' },
      /is a zone: a GKE scope is a project or a project and a region \(europe-west1 covers/,
    ],
    [
      'an AWS account that is not 12 digits',
      { provider: 'eks', account: '1234' },
      /eks account "1234" is not a 12-digit AWS account id/,
    ],
    [
      'a region of another cloud',
      { provider: 'eks', account: '111122223333', region: 'westeurope' },
      /eks region "westeurope" is not an AWS region/,
    ],
    [
      'a subscription that is not a GUID',
      { provider: 'aks', account: 'prod' },
      /aks account "prod" is not an Azure subscription id/,
    ],
    ['an unknown provider', { provider: 'oci', account: 'x' }, /provider must be one of eks, gke, aks/],
  ];
  for (const [title, scope, expected] of refused)
    it(`refuses ${title}, naming it`, () => {
      assert.throws(
        () => canonicalScope(scope),
        (e: unknown) => e instanceof InvalidScopeError && expected.test(e.message),
      );
    });

  it('selects exactly the profiles of the clusters it lists, whatever the spelling (property)', () => {
    const options = inventoryOptions();
    const clusters = fc.oneof(
      fc
        .record({ region: fc.constantFrom('us-east-1', 'eu-west-1') })
        .map(({ region }) => eksCluster({ name: 'c', account: '111122223333', region })),
      fc.constantFrom('europe-west1', 'europe-west1-b', 'us-central1-a').map((location) =>
        gkeCluster({
          name: 'g',
          region: location.replace(/-[a-z]$/, ''),
          ...(/-[a-z]$/.test(location) ? { zone: location } : {}),
        }),
      ),
      fc.constant(aksCluster({ name: 'a' })),
    );
    fc.assert(
      fc.property(clusters, fc.boolean(), fc.boolean(), (cluster, wide, shout) => {
        const region = cluster.region;
        const asked = {
          provider: cluster.provider,
          account: shout ? cluster.account.toUpperCase() : cluster.account,
          region: wide ? '*' : shout ? region.toUpperCase() : region,
        };
        const scope = canonicalScope(asked);
        const profile = normalize(cluster, options, '2026-01-01T00:00:00Z');
        // What the scope lists, its labels select; what its labels select, it lists.
        assert.equal(clusterInScope(cluster, scope), true);
        assert.equal(matchesSelector(profile.metadata.labels, scopeSelector('cpsync', scope)), true);
      }),
      { numRuns: 200 },
    );
  });

  it('puts a cluster of another region outside a region scope, and inside the account-wide one', () => {
    const cluster = gkeCluster({ name: 'g', region: 'us-central1', zone: 'us-central1-a' });
    assert.equal(
      clusterInScope(
        cluster,
        canonicalScope({ provider: 'gke', account: cluster.account, region: 'europe-west1' }),
      ),
      false,
    );
    assert.equal(
      clusterInScope(
        cluster,
        canonicalScope({ provider: 'gke', account: cluster.account, region: 'us-central1' }),
      ),
      true,
    );
    assert.equal(
      clusterInScope(cluster, canonicalScope({ provider: 'gke', account: cluster.account })),
      true,
    );
  });
});
