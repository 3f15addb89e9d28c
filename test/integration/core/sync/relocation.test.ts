/**
 * A cluster placed somewhere else (a namespace rule changed, a projection removed): its profile where it
 * was goes only once its profile where it is now exists. The file hub, with a fault injected into the
 * writes of one namespace (as a hub that refuses them would).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FileHub } from '../../../../adapters/hub/FileHub.ts';
import type { ClusterProfile } from '../../../../core/domain/model/clusterProfile.ts';
import type { ObservedCluster } from '../../../../core/domain/model/observedCluster.ts';
import type { Hub } from '../../../../core/sync/ports.ts';
import { syncScope } from '../../../support/absences.ts';
import { eksCluster } from '../../../support/fixtures.ts';
import { inventoryOptions } from '../../../support/settings.ts';
import { temporaryDirectory } from '../../../support/tmp.ts';

type Refused = 'whole' | 'object' | 'status' | 'delete' | 'list';

/**
 * The file hub, refusing whole writes (object and status at once), object or status writes, or deletes in
 * `namespace` while `refusing.what` is set.
 */
class RefusingHub extends FileHub {
  refusing: { namespace: string; what: Refused } | undefined;
  override async applyWhole(profile: ClusterProfile) {
    if (this.refusing?.what === 'whole' && profile.metadata.namespace === this.refusing.namespace)
      throw new Error(`refused: ${profile.metadata.namespace}`);
    return super.applyWhole(profile);
  }
  override async list(namespace: string, selector: Record<string, string>) {
    // As a Kubernetes hub answers a namespace whose RoleBinding went with its rule.
    if (this.refusing?.what === 'list' && namespace === this.refusing.namespace)
      throw Object.assign(new Error(`forbidden: ${namespace}`), { status: 403 });
    return super.list(namespace, selector);
  }
  override async delete(ref: Parameters<FileHub['delete']>[0]) {
    if (this.refusing?.what === 'delete' && ref.namespace === this.refusing.namespace)
      throw new Error(`refused: ${ref.namespace}`);
    return super.delete(ref);
  }
  override async applyObject(profile: ClusterProfile) {
    if (this.refusing?.what === 'object' && profile.metadata.namespace === this.refusing.namespace)
      throw new Error(`refused: ${profile.metadata.namespace}`);
    return super.applyObject(profile);
  }
  override async applyStatus(profile: ClusterProfile) {
    if (this.refusing?.what === 'status' && profile.metadata.namespace === this.refusing.namespace)
      throw new Error(`refused: ${profile.metadata.namespace}`);
    return super.applyStatus(profile);
  }
}

/** The hub as one that writes a status only apart from its object, as a Kubernetes hub does (no `applyWhole`). */
const apart = (hub: FileHub): Hub => ({
  ensureNamespace: (namespace) => hub.ensureNamespace(namespace),
  dropClusterSet: (name) => hub.dropClusterSet(name),
  get: (ref) => hub.get(ref),
  list: (namespace, selector) => hub.list(namespace, selector),
  applyObject: (profile) => hub.applyObject(profile),
  applyStatus: (profile) => hub.applyStatus(profile),
  delete: (ref) => hub.delete(ref),
  updateConfigMap: (ref, change) => hub.updateConfigMap(ref, change),
  malformed: () => hub.malformed(),
});

/** A complete listing of the cluster's scope that lists it. */
const completeListing = (cluster: ObservedCluster) => ({
  outcome: {
    scope: { provider: cluster.provider, account: cluster.account, region: cluster.region },
    kind: 'complete' as const,
  },
  clusters: [cluster],
});

/** A cluster synced once with a projection rule: its profile and its copy in `copies`. */
async function projectedOnce() {
  const hub = new RefusingHub({ directory: temporaryDirectory('cpsync-relocation-') });
  const listing = completeListing(eksCluster({ name: 'projected' }));
  const projecting = inventoryOptions({ projections: [{ provider: 'eks', namespaces: ['copies'] }] });
  await syncScope({ hub, listing, options: projecting, now: '2026-03-01T00:00:00Z' });
  const own = async () => (await hub.list('cluster-inventory', {}))[0]!;
  return { hub, listing, own };
}

describe('a cluster placed elsewhere', () => {
  for (const what of ['whole', 'object', 'status'] as const)
    it(`keeps its old profile while its new one cannot be written whole (${what === 'whole' ? 'the one write' : `${what}, written apart,`} refused), and moves once it can`, async () => {
      const files = new RefusingHub({ directory: temporaryDirectory('cpsync-relocation-') });
      const hub = what === 'whole' ? files : apart(files);
      const cluster = eksCluster({ name: 'moving' });
      const listing = completeListing(cluster);
      await syncScope({ hub, listing, options: inventoryOptions(), now: '2026-03-01T00:00:00Z' });
      const moved = inventoryOptions({ namespaceRules: [{ provider: 'eks', namespace: 'elsewhere' }] });
      files.refusing = { namespace: 'elsewhere', what };
      const refused = await syncScope({ hub, listing, options: moved, now: '2026-03-01T00:15:00Z' });
      assert.deepEqual(
        refused.applied.failed.map((f) => f.kind).sort(),
        ['created', 'deleted'],
        'the create failed, and the delete of the old place was held back',
      );
      assert.equal((await hub.list('cluster-inventory', {})).length, 1, 'the old profile is kept');
      files.refusing = undefined;
      const done = await syncScope({ hub, listing, options: moved, now: '2026-03-01T00:30:00Z' });
      assert.deepEqual(done.applied.failed, []);
      assert.equal((await hub.list('cluster-inventory', {})).length, 0);
      const there = await hub.list('elsewhere', {});
      assert.equal(there.length, 1);
      assert.ok(there[0]!.status?.accessProviders?.length, 'the new profile is whole');
    });

  it('keeps a copy a removed rule leaves listed on its cluster’s profile until the copy is really gone', async () => {
    const { hub, listing, own } = await projectedOnce();
    assert.equal((await own()).metadata.annotations?.['cpsync.io/projected-to'], 'copies');

    // The rule is removed, and the copy's delete fails: the profile still says where the copy is.
    hub.refusing = { namespace: 'copies', what: 'delete' };
    const refused = await syncScope({
      hub,
      listing,
      options: inventoryOptions(),
      now: '2026-03-01T00:15:00Z',
    });
    assert.deepEqual(refused.applied.failed.map((f) => f.kind).sort(), ['deleted', 'updated']);
    assert.equal((await own()).metadata.annotations?.['cpsync.io/projected-to'], 'copies');
    assert.equal((await hub.list('copies', {})).length, 1);

    // Found again through it, and gone; then the profile forgets it.
    hub.refusing = undefined;
    const done = await syncScope({ hub, listing, options: inventoryOptions(), now: '2026-03-01T00:30:00Z' });
    assert.deepEqual(done.applied.failed, []);
    assert.deepEqual(done.applied.applied.map((c) => [c.kind, c.profile.metadata.namespace]).sort(), [
      ['deleted', 'copies'],
      ['updated', 'cluster-inventory'],
    ]);
    assert.equal((await own()).metadata.annotations?.['cpsync.io/projected-to'], undefined);
    assert.equal((await own()).metadata.labels?.['cpsync.io/cluster'], undefined);
  });

  it('keeps listing a copy in a namespace it cannot read now (its RoleBinding gone with the rule), so it is found and deleted once it can', async () => {
    const { hub, listing, own } = await projectedOnce();

    // The rule is removed, and the namespace cannot be read: the copy is not seen, and the profile still says where
    // it is, at every run while it cannot be read.
    hub.refusing = { namespace: 'copies', what: 'list' };
    for (const now of ['2026-03-01T00:15:00Z', '2026-03-01T00:30:00Z']) {
      const unread = await syncScope({ hub, listing, options: inventoryOptions(), now });
      assert.deepEqual(unread.applied.failed, []);
      assert.deepEqual(
        unread.unreadable.map((u) => u.namespace),
        ['copies'],
      );
      assert.equal((await own()).metadata.annotations?.['cpsync.io/projected-to'], 'copies');
    }

    // Readable again: found through it, deleted, and forgotten.
    hub.refusing = undefined;
    const done = await syncScope({ hub, listing, options: inventoryOptions(), now: '2026-03-01T00:45:00Z' });
    assert.deepEqual(done.applied.failed, []);
    assert.deepEqual(done.applied.applied.map((c) => [c.kind, c.profile.metadata.namespace]).sort(), [
      ['deleted', 'copies'],
      ['updated', 'cluster-inventory'],
    ]);
    assert.equal((await hub.list('copies', {})).length, 0);
    assert.equal((await own()).metadata.annotations?.['cpsync.io/projected-to'], undefined);
  });
});
