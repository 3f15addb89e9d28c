import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { controlPlaneHealth } from '../../../../core/domain/health.ts';
import type { ObservedCluster } from '../../../../core/domain/model/observedCluster.ts';
import { aksCluster, eksCluster, gkeCluster } from '../../../support/fixtures.ts';

type Row = [title: string, cluster: ObservedCluster, status: string, reason: string];

const issue = { code: 'Ec2SubnetNotFound', message: 'subnet-1 was deleted' };

const rows: Row[] = [
  ['EKS ACTIVE is healthy', eksCluster(), 'True', 'Running'],
  [
    'EKS ACTIVE with health issues is unhealthy',
    eksCluster({ health: { status: 'ACTIVE', issues: [issue] } }),
    'False',
    'HealthIssues',
  ],
  [
    'EKS UPDATING still serves',
    eksCluster({ health: { status: 'UPDATING', issues: [] } }),
    'True',
    'Updating',
  ],
  [
    'EKS CREATING is not known yet',
    eksCluster({ health: { status: 'CREATING', issues: [] } }),
    'Unknown',
    'Provisioning',
  ],
  ['EKS FAILED is unhealthy', eksCluster({ health: { status: 'FAILED', issues: [] } }), 'False', 'Failed'],
  [
    'EKS DELETING is unhealthy',
    eksCluster({ health: { status: 'DELETING', issues: [] } }),
    'False',
    'Deleting',
  ],
  ['GKE RUNNING is healthy', gkeCluster(), 'True', 'Running'],
  [
    'GKE RECONCILING still serves',
    gkeCluster({ health: { status: 'RECONCILING', issues: [] } }),
    'True',
    'Updating',
  ],
  [
    'GKE DEGRADED is unhealthy',
    gkeCluster({
      health: { status: 'DEGRADED', issues: [{ code: 'GCE_STOCKOUT', message: 'no capacity' }] },
    }),
    'False',
    'Degraded',
  ],
  ['GKE ERROR is unhealthy', gkeCluster({ health: { status: 'ERROR', issues: [] } }), 'False', 'Failed'],
  [
    'GKE status as an enum number (2 = RUNNING)',
    gkeCluster({ health: { status: '2', issues: [] } }),
    'True',
    'Running',
  ],
  [
    'GKE status as an enum number (6 = DEGRADED)',
    gkeCluster({ health: { status: '6', issues: [] } }),
    'False',
    'Degraded',
  ],
  ['AKS Succeeded and Running is healthy', aksCluster(), 'True', 'Running'],
  [
    'AKS stopped is not healthy',
    aksCluster({ health: { status: 'Succeeded', powerState: 'Stopped', issues: [] } }),
    'False',
    'Stopped',
  ],
  [
    'AKS failed provisioning is unhealthy',
    aksCluster({ health: { status: 'Failed', powerState: 'Running', issues: [] } }),
    'False',
    'Failed',
  ],
  [
    'AKS Upgrading still serves',
    aksCluster({ health: { status: 'Upgrading', powerState: 'Running', issues: [] } }),
    'True',
    'Updating',
  ],
  [
    'AKS Creating is not known yet',
    aksCluster({ health: { status: 'Creating', issues: [] } }),
    'Unknown',
    'Provisioning',
  ],
  [
    'an unknown status is Unknown',
    eksCluster({ health: { status: 'SOMETHING_NEW', issues: [] } }),
    'Unknown',
    'StatusUnknown',
  ],
  [
    'an empty status is Unknown',
    gkeCluster({ health: { status: '', issues: [] } }),
    'Unknown',
    'StatusUnknown',
  ],
];

describe('ControlPlaneHealthy', () => {
  for (const [title, cluster, status, reason] of rows) {
    it(title, () => {
      const verdict = controlPlaneHealth(cluster);
      assert.equal(verdict.status, status);
      assert.equal(verdict.reason, reason);
      assert.match(verdict.reason, /^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/);
    });
  }

  it('names the provider status and every issue in the message', () => {
    const verdict = controlPlaneHealth(eksCluster({ health: { status: 'ACTIVE', issues: [issue] } }));
    assert.match(verdict.message, /EKS status ACTIVE/);
    assert.match(verdict.message, /Ec2SubnetNotFound: subnet-1 was deleted/);
  });
});
