import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { settlingState } from '../../../../core/domain/settling.ts';
import { aksCluster, eksCluster, gkeCluster } from '../../../support/fixtures.ts';

describe('readings in change', () => {
  it('names every state in change of each cloud, and no settled one', () => {
    const cases: Array<[ReturnType<typeof eksCluster>, string | undefined]> = [
      ...['CREATING', 'UPDATING', 'DELETING', 'PENDING'].map(
        (s) =>
          [eksCluster({ health: { status: s, issues: [] } }), `EKS ${s}`] as [
            ReturnType<typeof eksCluster>,
            string,
          ],
      ),
      ...['ACTIVE', 'FAILED', ''].map(
        (s) =>
          [eksCluster({ health: { status: s, issues: [] } }), undefined] as [
            ReturnType<typeof eksCluster>,
            undefined,
          ],
      ),
      [gkeCluster({ health: { status: 'PROVISIONING', issues: [] } }), 'GKE PROVISIONING'],
      [gkeCluster({ health: { status: '3', issues: [] } }), 'GKE RECONCILING'],
      [gkeCluster({ health: { status: 'STOPPING', issues: [] } }), 'GKE STOPPING'],
      [gkeCluster({ health: { status: 'RUNNING', issues: [] } }), undefined],
      [gkeCluster({ health: { status: '2', issues: [] } }), undefined],
      [gkeCluster({ health: { status: 'DEGRADED', issues: [] } }), undefined],
      ...[
        'Creating',
        'Updating',
        'Upgrading',
        'Scaling',
        'Deleting',
        'Starting',
        'Stopping',
        'Migrating',
      ].map(
        (s) =>
          [aksCluster({ health: { status: s, issues: [] } }), `AKS ${s}`] as [
            ReturnType<typeof eksCluster>,
            string,
          ],
      ),
      [aksCluster({ health: { status: 'Succeeded', powerState: 'Stopped', issues: [] } }), undefined],
      [aksCluster({ health: { status: 'Failed', issues: [] } }), undefined],
    ];
    for (const [cluster, expected] of cases)
      assert.equal(settlingState(cluster), expected, `${cluster.provider} ${cluster.health.status}`);
  });

  it('an active EKS cluster whose node group is still changing is in change too, named by the group', () => {
    const nodes = (inChange?: string[]) => ({ instanceTypes: [], ...(inChange ? { inChange } : {}) });
    assert.equal(
      settlingState(eksCluster({ nodes: nodes(['workers UPDATING', 'spot CREATING']) })),
      'EKS node group workers UPDATING',
    );
    assert.equal(settlingState(eksCluster({ nodes: nodes() })), undefined);
    // The cluster's own state comes first.
    assert.equal(
      settlingState(
        eksCluster({ health: { status: 'UPDATING', issues: [] }, nodes: nodes(['workers DELETING']) }),
      ),
      'EKS UPDATING',
    );
  });
});
