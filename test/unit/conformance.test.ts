/** The conformance checks (test/support/conformance.ts) fail an inventory that breaks each spec. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ClusterProfile } from '../../core/domain/model/clusterProfile.ts';
import { normalize } from '../../core/domain/normalize.ts';
import { inventoryOptions } from '../support/settings.ts';
import { eksCluster, gkeCluster, NOW } from '../support/fixtures.ts';
import { conformance } from '../support/conformance.ts';

const a = normalize(eksCluster(), inventoryOptions(), NOW);
const b = normalize(gkeCluster(), inventoryOptions(), NOW);
/** The specs `inventory` fails, each as `<label>: <spec>`. */
const failing = (inventory: ClusterProfile[], manager = 'cpsync') =>
  conformance(inventory, manager)
    .filter((r) => r.failure)
    .map((r) => `${r.label}: ${r.spec}`);
/** `failed` is exactly the specs that `fragments` pick, one each. */
const exactly = (failed: string[], fragments: string[]) => {
  assert.equal(failed.length, fragments.length, failed.join('\n'));
  fragments.forEach((fragment, i) => assert.ok(failed[i]!.includes(fragment), `${failed[i]} ∌ ${fragment}`));
};
const changed = (profile: ClusterProfile, change: (p: ClusterProfile) => void) => {
  const copy = structuredClone(profile);
  change(copy);
  return copy;
};

describe('the conformance specs, as checks', () => {
  it('pass an inventory cpsync wrote', () => assert.deepEqual(failing([a, b]), []));

  it('fail each broken convention, and only the specs it breaks', () => {
    assert.equal(failing([]).length, 7, 'an empty inventory: nothing to verify is no pass');
    exactly(failing([changed(a, (p) => (p.metadata.labels!['x-k8s.io/cluster-manager'] = 'other'))]), [
      'Required: The cluster manager must add the x-k8s.io/cluster-manager label',
    ]);
    exactly(
      failing([changed(a, (p) => (p.metadata.labels!['multicluster.x-k8s.io/inventory-member-id'] = ''))]),
      [
        'Required: A ClusterProfile carrying the multicluster.x-k8s.io/inventory-member-id label',
        'Optional: The cluster manager should add the multicluster.x-k8s.io/inventory-member-id label',
      ],
    );
    exactly(
      failing(
        [a, changed(b, (p) => (p.metadata.labels!['multicluster.x-k8s.io/inventory-member-id'] = 'x'))].map(
          (p) => changed(p, (q) => (q.metadata.labels!['multicluster.x-k8s.io/inventory-member-id'] = 'x')),
        ),
      ),
      ['Optional: Each member cluster should be represented by at most one ClusterProfile'],
    );
    exactly(
      failing([
        changed(a, (p) => (p.status!.conditions = p.status!.conditions!.filter((c) => c.type !== 'Joined'))),
      ]),
      ['Optional: The cluster manager should report the Joined condition'],
    );
    exactly(failing([changed(a, (p) => delete p.status!.version)]), [
      'Optional: The cluster manager should report the Kubernetes version of the memb',
    ]);
  });
});
