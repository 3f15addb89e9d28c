/**
 * A hub writer's claim on cpsync's fields (a copy of cpsync's managedFields entry under another manager) keeps
 * nothing the cloud took away, along both ways the engine writes a profile: a scope's listing (the full sync, `cpsync
 * sync --scope`, a scope message all run it) and a one-cluster sync (a cloud event, a follow-up look). The cluster
 * loses its node groups and its version; after the sync the profile shows neither, and the next sync writes nothing
 * (the profile's resourceVersion, as the kube-apiserver keeps it, is unchanged, and no event is published), where a
 * claim that stood would have the plan find a difference at every sync.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { type V1ManagedFieldsEntry } from '@kubernetes/client-node';
import type { KubernetesHub } from '../../../../adapters/hub/KubernetesHub.ts';
import type { KubernetesLeaseStore } from '../../../../adapters/hub/KubernetesLeases.ts';
import {
  CLUSTER_PROFILE_GROUP,
  CLUSTER_PROFILE_PLURAL,
  CLUSTER_PROFILE_VERSION,
  type ClusterProfile,
} from '../../../../core/domain/model/clusterProfile.ts';
import type { ObservedCluster } from '../../../../core/domain/model/observedCluster.ts';
import type { Scope } from '../../../../core/domain/model/scope.ts';
import { runSync, syncCluster } from '../../../../core/sync/engine.ts';
import type { ClusterSource } from '../../../../core/sync/ports.ts';
import { eksCluster } from '../../../support/fixtures.ts';
import { adminHubIn } from '../../../support/engineHub.ts';
import { filePorts } from '../../../support/filePorts.ts';
import { uniqueNamespace } from '../../../support/hub.ts';
import { cpsyncEntriesAs, writeClaims } from '../../../support/claims.ts';
import { inventoryOptions, runSettings } from '../../../support/settings.ts';

const PROFILES = {
  group: CLUSTER_PROFILE_GROUP,
  version: CLUSTER_PROFILE_VERSION,
  plural: CLUSTER_PROFILE_PLURAL,
};
const SCOPE: Scope = { provider: 'eks', account: '111122223333', region: 'us-east-1' };
const NODE_PROPERTIES = ['count.node.k8s.io', 'type.node.k8s.io'];

describe("a hub writer's claim on cpsync's fields, through the engine on the real kube-apiserver", () => {
  const namespace = uniqueNamespace('claims');
  let core: CoreV1Api;
  let objects: CustomObjectsApi;
  let hub: KubernetesHub;
  let leases: KubernetesLeaseStore;

  before(async () => {
    ({ core, objects, hub, leases } = await adminHubIn(namespace));
  });

  after(async () => {
    await core?.deleteNamespace({ name: namespace });
  });

  for (const entry of ['a scope listing', 'a one-cluster sync'] as const)
    it(`keeps nothing the cloud took away, written by ${entry}; the next sync writes nothing`, async () => {
      const name = entry === 'a scope listing' ? 'listed' : 'looked';
      // The cloud's answer, as the test changes it.
      let cluster: ObservedCluster = eksCluster({ name });
      const source: ClusterSource = {
        listScope: async (listed) => ({ outcome: { scope: listed, kind: 'complete' }, clusters: [cluster] }),
        getCluster: async () => cluster,
        isProviderIdOf: () => false,
      };
      const { ports, events } = filePorts({ eks: source }, 'cpsync-claims-', { hub, leases });
      const settings = runSettings(inventoryOptions({ namespace }));
      let syncs = 0;
      const sync = async () => {
        const syncId = `claims-${++syncs}`;
        if (entry === 'a scope listing') await runSync(ports, { ...settings, syncId, scopes: [SCOPE] });
        else await syncCluster(ports, { ...settings, syncId, ref: { scope: SCOPE, name } });
      };
      const stored = async () => {
        const list = (await objects.listNamespacedCustomObject({ ...PROFILES, namespace })) as {
          items: Array<ClusterProfile & { metadata: { managedFields?: V1ManagedFieldsEntry[] } }>;
        };
        const found = list.items.filter((p) => p.spec.displayName === name);
        assert.equal(found.length, 1, `one profile of ${name}`);
        return found[0]!;
      };

      await sync();
      const first = await stored();
      assert.deepEqual(
        (first.status?.properties ?? []).map((p) => p.name).filter((n) => NODE_PROPERTIES.includes(n)),
        NODE_PROPERTIES,
        'the node figures shown',
      );

      // A writer claims every field of cpsync's: its entries copied under another manager, written back.
      await writeClaims(objects, first, cpsyncEntriesAs(first, 'intruder'));
      assert.ok(
        (await stored()).metadata.managedFields?.some((e) => e.manager === 'intruder'),
        'the server kept the claim',
      );

      // The cloud takes the node groups and the version away.
      const { kubernetesVersion: _version, ...rest } = cluster;
      cluster = { ...rest, nodes: { instanceTypes: [] } };
      const before = events().length;
      await sync();
      const second = await stored();
      assert.deepEqual(
        (second.status?.properties ?? []).map((p) => p.name).filter((n) => NODE_PROPERTIES.includes(n)),
        [],
        'no node figures the cloud no longer gives',
      );
      assert.equal(second.status?.version, undefined, 'no version the cloud no longer gives');
      const updated = events().slice(before);
      assert.deepEqual(updated, [
        'ClusterProfile Updated',
        ...(entry === 'a scope listing' ? ['Inventory Scope Synced'] : []),
      ]);

      // Nothing left to write: the hub's resourceVersion stands, and no change is announced.
      await sync();
      const third = await stored();
      assert.equal(third.metadata.resourceVersion, second.metadata.resourceVersion, 'no write');
      assert.deepEqual(
        events()
          .slice(before + updated.length)
          .filter((type) => type.startsWith('ClusterProfile')),
        [],
      );
    });
});
