/**
 * A profile another writer deleted, held by a finalizer nobody removes, on the real kube-apiserver. While its cluster
 * is listed, cpsync leaves the object alone (it cannot write it again until it is gone) and says who deleted it; the
 * object carries no mark of cpsync's, so consumers take it for the cluster's. Once the cloud no longer lists the
 * cluster, cpsync deletes it in turn at the grace, marking it as its own deletion, with one Deleted event; later runs
 * neither write nor announce it again.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { KubeConfig, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { KubernetesHub } from '../../../../adapters/hub/KubernetesHub.ts';
import type { KubernetesLeaseStore } from '../../../../adapters/hub/KubernetesLeases.ts';
import { ANNOTATION_DELETED_AT } from '../../../../core/domain/constants.ts';
import {
  CLUSTER_PROFILE_GROUP,
  CLUSTER_PROFILE_PLURAL,
  CLUSTER_PROFILE_VERSION,
  type ClusterProfile,
} from '../../../../core/domain/model/clusterProfile.ts';
import type { ObservedCluster } from '../../../../core/domain/model/observedCluster.ts';
import type { Scope } from '../../../../core/domain/model/scope.ts';
import { runSync } from '../../../../core/sync/engine.ts';
import type { ClusterSource } from '../../../../core/sync/ports.ts';
import { startHubProxy } from '../../../env/hubProxy.ts';
import { normalize } from '../../../../core/domain/normalize.ts';
import { eksCluster, NOW } from '../../../support/fixtures.ts';
import { adminHubIn } from '../../../support/engineHub.ts';
import { filePorts } from '../../../support/filePorts.ts';
import { localHub, uniqueNamespace } from '../../../support/hub.ts';
import { inventoryOptions, runSettings } from '../../../support/settings.ts';

const PROFILES = {
  group: CLUSTER_PROFILE_GROUP,
  version: CLUSTER_PROFILE_VERSION,
  plural: CLUSTER_PROFILE_PLURAL,
};
const SCOPE: Scope = { provider: 'eks', account: '111122223333', region: 'us-east-1' };
const HOLD = 'example.com/hold';

describe('a profile another writer deleted, held by a finalizer, on the real kube-apiserver', () => {
  const namespace = uniqueNamespace('another');
  let core: CoreV1Api;
  let objects: CustomObjectsApi;
  let hub: KubernetesHub;
  let leases: KubernetesLeaseStore;

  before(async () => {
    ({ core, objects, hub, leases } = await adminHubIn(namespace));
  });

  after(async () => {
    if (!objects) return;
    const left = (await objects.listNamespacedCustomObject({ ...PROFILES, namespace })) as {
      items: ClusterProfile[];
    };
    for (const profile of left.items)
      await objects.patchNamespacedCustomObject(
        { ...PROFILES, namespace, name: profile.metadata.name, body: { metadata: { finalizers: null } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
    await core.deleteNamespace({ name: namespace });
  });

  it('is left alone while its cluster is listed, then deleted by cpsync in turn at the grace, marked, announced once', async () => {
    let clusters: ObservedCluster[] = [eksCluster({ name: 'kept' })];
    const source: ClusterSource = {
      listScope: async (listed) => ({ outcome: { scope: listed, kind: 'complete' }, clusters }),
      getCluster: async (ref) => clusters.find((c) => c.name === ref.name),
      isProviderIdOf: () => false,
    };
    const { ports, events: published } = filePorts({ eks: source }, 'cpsync-another-', { hub, leases });
    const settings = runSettings(inventoryOptions({ namespace, deletionGraceListings: 2 }));
    let runs = 0;
    /** One run of the scope: what it skipped, and the change events the bus received. */
    const sync = async () => {
      const before = published().length;
      const report = await runSync(ports, { ...settings, syncId: `another-${++runs}`, scopes: [SCOPE] });
      return {
        skipped: (report.scopes[0]?.plan?.skipped ?? []).map((s) => `${s.reason}: ${s.detail}`),
        changes: published()
          .slice(before)
          .filter((type) => type.startsWith('ClusterProfile')),
      };
    };
    const stored = async () =>
      ((await objects.listNamespacedCustomObject({ ...PROFILES, namespace })) as { items: ClusterProfile[] })
        .items[0];

    assert.deepEqual((await sync()).changes, ['ClusterProfile Created']);
    const made = (await stored())!;
    const name = made.metadata.name;
    // Another writer holds it with a finalizer and deletes it.
    await objects.patchNamespacedCustomObject(
      { ...PROFILES, namespace, name, body: { metadata: { finalizers: [HOLD] } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await objects.deleteNamespacedCustomObject({ ...PROFILES, namespace, name });
    const deleting = (await stored())!;
    assert.ok(deleting.metadata.deletionTimestamp);

    // Its cluster listed: left alone, saying who deleted it; nothing written, nothing announced.
    const listed = await sync();
    assert.deepEqual(listed.changes, []);
    assert.deepEqual(listed.skipped, [
      `Terminating: ${namespace}/${name} of a listed cluster was deleted by another writer, and is held by ${HOLD}; created again once it is gone`,
    ]);
    assert.equal((await stored())!.metadata.resourceVersion, deleting.metadata.resourceVersion);

    // The cluster gone: counted, not written, at the first listing; deleted by cpsync in turn at the second.
    clusters = [];
    const missed = await sync();
    assert.deepEqual(missed.changes, []);
    assert.equal((await stored())!.metadata.resourceVersion, deleting.metadata.resourceVersion);
    const gone = await sync();
    assert.deepEqual(gone.changes, ['ClusterProfile Deleted']);
    const marked = (await stored())!;
    assert.equal(marked.metadata.uid, made.metadata.uid, 'the same object, still held');
    assert.ok(marked.metadata.annotations?.[ANNOTATION_DELETED_AT], 'marked as cpsync’s deletion');

    // Later runs: neither written nor announced again.
    const later = await sync();
    assert.deepEqual(later.changes, []);
    assert.equal((await stored())!.metadata.resourceVersion, marked.metadata.resourceVersion);
  });

  it('takes its mark off a profile whose deletion the hub refused', async () => {
    const proxy = await startHubProxy(await localHub());
    try {
      const through = new KubeConfig();
      through.loadFromString(proxy.kubeconfig);
      const viaProxy = new KubernetesHub({ kubeConfig: through });
      const profile = normalize(eksCluster({ name: 'refused' }), inventoryOptions({ namespace }), NOW);
      const stored = await hub.applyObject(profile);
      const ref = { namespace, name: stored.metadata.name };
      proxy.rule = ({ method }) => (method === 'DELETE' ? { status: 500 } : undefined);
      await assert.rejects(viaProxy.delete({ ...ref, resourceVersion: stored.metadata.resourceVersion! }));
      assert.ok(
        proxy.requests.some((r) => r.method === 'DELETE'),
        'the deletion was asked for',
      );
      const after = (await hub.get(ref))!;
      assert.equal(after.metadata.deletionTimestamp, undefined, 'not deleted');
      assert.equal(after.metadata.annotations?.[ANNOTATION_DELETED_AT], undefined, 'no mark left');
      proxy.rule = undefined;
      await viaProxy.delete(ref);
      assert.equal(await hub.get(ref), undefined);
    } finally {
      await proxy.stop();
    }
  });
});
