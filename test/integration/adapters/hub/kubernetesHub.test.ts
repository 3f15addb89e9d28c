import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import fc from 'fast-check';
import { CoreV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { HubRejectedError } from '../../../../adapters/hub/errors.ts';
import { KubernetesHub } from '../../../../adapters/hub/KubernetesHub.ts';
import type { ClusterProfile } from '../../../../core/domain/model/clusterProfile.ts';
import type { ObservedCluster } from '../../../../core/domain/model/observedCluster.ts';
import type { ScopeOutcomeKind } from '../../../../core/domain/model/scope.ts';
import { normalize } from '../../../../core/domain/normalize.ts';
import type { InventoryOptions } from '../../../../core/domain/options.ts';
import { inventoryOptions } from '../../../support/settings.ts';
import type { ScopeListing } from '../../../../core/sync/ports.ts';
import { syncScope } from '../../../support/absences.ts';
import { aksCluster, eksCluster, gkeCluster } from '../../../support/fixtures.ts';
import { adminKubeConfig, localHub, uniqueNamespace } from '../../../support/hub.ts';
import { countedByApiserver } from '../../../support/hubCounts.ts';

const scope = { provider: 'eks' as const, account: '111122223333', region: 'us-east-1' };

function listing(clusters: ObservedCluster[], kind: ScopeOutcomeKind = 'complete'): ScopeListing {
  return { outcome: { scope, kind }, clusters };
}

function strip(profile: ClusterProfile) {
  return {
    metadata: {
      name: profile.metadata.name,
      labels: profile.metadata.labels,
      annotations: profile.metadata.annotations,
    },
    spec: profile.spec,
    status: profile.status,
  };
}

function versions(profiles: ClusterProfile[]): Record<string, string | undefined> {
  return Object.fromEntries(profiles.map((p) => [p.metadata.name, p.metadata.resourceVersion]));
}

describe('Kubernetes hub against a real kube-apiserver with the upstream CRD', () => {
  let hub: KubernetesHub;
  let options: InventoryOptions;
  let namespace: string;
  const selector = { 'x-k8s.io/cluster-manager': 'cpsync' };

  before(async () => {
    const state = await localHub();
    hub = new KubernetesHub({ kubeConfig: adminKubeConfig(state) });
    namespace = uniqueNamespace('hub-it');
    options = inventoryOptions({
      namespace,
      clusterSets: { [namespace]: 'prod-set' },
      tagAllowList: ['team'],
    });
  });

  it('accepts every profile the normalizer makes, status included', async () => {
    const types = Array.from({ length: 80 }, (_, i) => `Standard_E${i}as_v5`);
    const clusters = [
      eksCluster({ name: 'Prod_Cluster.Main' }),
      eksCluster({
        name: 'creating',
        endpoints: [],
        certificateAuthorityData: undefined,
        kubernetesVersion: undefined,
        health: { status: 'CREATING', issues: [] },
        nodes: { instanceTypes: [] },
      }),
      eksCluster({ name: '生产集群' }),
      gkeCluster({ account: scope.account, zone: 'europe-west1-b' }),
      aksCluster({
        account: scope.account,
        nodes: { count: 80, instanceTypes: types },
        health: { status: 'Succeeded', powerState: 'Stopped', issues: [] },
      }),
    ].map((c) => ({ ...c, provider: 'eks' as const, account: scope.account, region: 'us-east-1' }));
    const now = '2026-02-01T00:00:00Z';
    const result = await syncScope({ hub, listing: listing(clusters), options, now });
    assert.deepEqual(result.applied.failed, []);
    assert.equal(result.applied.applied.length, clusters.length);

    const stored = await hub.list(namespace, selector);
    assert.equal(stored.length, clusters.length);
    const wanted = clusters.map((c) => strip(normalize(c, options, now)));
    assert.deepEqual(
      stored.map(strip).sort((x, y) => x.metadata.name.localeCompare(y.metadata.name)),
      wanted.sort((x, y) => x.metadata.name.localeCompare(y.metadata.name)),
    );
  });

  it('labels the namespace of a ClusterSet', async () => {
    const state = await localHub();
    const core = adminKubeConfig(state).makeApiClient(CoreV1Api);
    const ns = await core.readNamespace({ name: namespace });
    assert.equal(ns.metadata?.labels?.['multicluster.x-k8s.io/clusterset'], 'prod-set');
  });

  it('refuses a change of spec.clusterManager through the CRD rule', async () => {
    const [profile] = await hub.list(namespace, selector);
    const changed: ClusterProfile = {
      ...profile!,
      spec: { ...profile!.spec, clusterManager: { name: 'someone-else' } },
    };
    await assert.rejects(hub.applyObject(changed), (error: unknown) => {
      assert.ok(error instanceof HubRejectedError, String(error));
      assert.match(error.message, /ClusterManager is immutable/);
      return true;
    });
  });

  it('performs zero writes when the same state is applied again', async () => {
    const ns = uniqueNamespace('hub-zero');
    const opts = inventoryOptions({ namespace: ns });
    const clusters = [eksCluster({ name: 'a' }), eksCluster({ name: 'b' }), eksCluster({ name: 'c' })];
    await syncScope({ hub, listing: listing(clusters), options: opts, now: '2026-02-01T00:00:00Z' });
    const before = versions(await hub.list(ns, selector));

    let second: Awaited<ReturnType<typeof syncScope>> | undefined;
    const counted = await countedByApiserver(await localHub(), async () => {
      second = await syncScope({
        hub: new KubernetesHub({ kubeConfig: adminKubeConfig(await localHub()) }),
        listing: listing(clusters),
        options: opts,
        now: '2026-02-01T00:15:00Z',
      });
    });
    assert.equal(second!.plan.unchanged, 3);
    assert.deepEqual(counted, { reads: 1, writes: 0, byVerb: { LIST: 1 } });
    assert.deepEqual(versions(await hub.list(ns, selector)), before);
  });

  it('turns one changed cloud value into exactly one status write', async () => {
    const ns = uniqueNamespace('hub-one');
    const opts = inventoryOptions({ namespace: ns });
    const clusters = [eksCluster({ name: 'a' }), eksCluster({ name: 'b' })];
    await syncScope({ hub, listing: listing(clusters), options: opts, now: '2026-02-01T00:00:00Z' });
    const before = versions(await hub.list(ns, selector));

    const upgraded = [{ ...clusters[0]!, kubernetesVersion: '1.32' }, clusters[1]!];
    let applied: Awaited<ReturnType<typeof syncScope>> | undefined;
    const counted = await countedByApiserver(await localHub(), async () => {
      applied = await syncScope({
        hub: new KubernetesHub({ kubeConfig: adminKubeConfig(await localHub()) }),
        listing: listing(upgraded),
        options: opts,
        now: '2026-02-01T00:15:00Z',
      });
    });
    const result = applied!;
    assert.deepEqual(counted, { reads: 1, writes: 1, byVerb: { LIST: 1, APPLY: 1 } });
    assert.deepEqual(
      result.applied.applied.map((c) => [c.kind, c.changes.map((f) => f.field)]),
      [['updated', ['status.version.kubernetes']]],
    );

    const after = await hub.list(ns, selector);
    const changedName = result.applied.applied[0]!.profile.metadata.name;
    for (const profile of after) {
      if (profile.metadata.name === changedName) {
        assert.notEqual(profile.metadata.resourceVersion, before[changedName]);
        assert.equal(profile.status?.version?.kubernetes, '1.32');
      } else {
        assert.equal(profile.metadata.resourceVersion, before[profile.metadata.name]);
      }
    }
  });

  it('never modifies or deletes a profile of another cluster manager in the same namespace', async () => {
    const ns = uniqueNamespace('hub-foreign');
    const opts = inventoryOptions({ namespace: ns });
    const state = await localHub();
    const ocm = new KubernetesHub({ kubeConfig: adminKubeConfig(state), fieldManager: 'ocm' });
    const mine = eksCluster({ name: 'mine' });
    const theirs = normalize(
      eksCluster({ name: 'theirs' }),
      inventoryOptions({ manager: 'ocm', namespace: ns }),
      '2026-02-01T00:00:00Z',
    );
    // The other manager's profile carries the cpsync scope labels too, and a name cpsync would also choose.
    const clash = normalize(eksCluster({ name: 'clash' }), opts, '2026-02-01T00:00:00Z');
    const clashOwned: ClusterProfile = {
      ...clash,
      metadata: {
        ...clash.metadata,
        labels: { ...clash.metadata.labels, 'x-k8s.io/cluster-manager': 'ocm' },
      },
      spec: { ...clash.spec, clusterManager: { name: 'ocm' } },
    };
    await ocm.ensureNamespace({ name: ns });
    for (const p of [theirs, clashOwned]) {
      await ocm.applyObject(p);
      await ocm.applyStatus(p);
    }
    const allBefore = versions(await ocm.list(ns, {}));

    for (let run = 0; run < 3; run++) {
      const result = await syncScope({
        hub,
        listing: listing([mine, eksCluster({ name: 'clash' })]),
        options: opts,
        now: `2026-02-01T00:${run}0:00Z`,
      });
      assert.equal(result.plan.deletes.length, 0);
      // The clashing name is found before a create is tried: the cluster is written under no other name (a sync
      // never renames, and a name someone took is not the hub's to move it from), said so at every run, and the
      // other manager's profile is not written at all.
      assert.deepEqual(result.applied.failed, []);
      assert.deepEqual(result.collisions, []);
      assert.deepEqual(
        result.plan.skipped.map((s) => [s.name, s.reason]),
        [[clash.metadata.name, 'NameUnavailable']],
      );
      assert.match(result.plan.skipped[0]!.detail, /held by a profile of another manager \("ocm"\)/);
    }
    assert.equal((await hub.list(ns, selector)).filter((p) => p.spec.displayName === 'clash').length, 0);
    const allAfter = versions(await ocm.list(ns, {}));
    assert.equal(allAfter[theirs.metadata.name], allBefore[theirs.metadata.name]);
    assert.equal(allAfter[clash.metadata.name], allBefore[clash.metadata.name]);
    const stillTheirs = (await ocm.list(ns, {})).find((p) => p.metadata.name === clash.metadata.name)!;
    assert.equal(stillTheirs.spec.clusterManager.name, 'ocm');

    // Once the name is free, the cluster is written under it: its own, the only one it is ever given.
    await ocm.delete({ namespace: ns, name: clash.metadata.name });
    const freed = await syncScope({
      hub,
      listing: listing([mine, eksCluster({ name: 'clash' })]),
      options: opts,
      now: '2026-02-01T00:40:00Z',
    });
    assert.deepEqual(freed.plan.skipped, []);
    const own = (await hub.list(ns, selector)).find((p) => p.spec.displayName === 'clash')!;
    assert.equal(own.metadata.name, clash.metadata.name);
    assert.equal(own.spec.clusterManager.name, 'cpsync');
  });

  it('deletes a cluster that is gone only after the grace of complete listings, never after a failed one', async () => {
    const ns = uniqueNamespace('hub-del');
    const opts = inventoryOptions({ namespace: ns });
    const a = eksCluster({ name: 'a' });
    const b = eksCluster({ name: 'b' });
    await syncScope({ hub, listing: listing([a, b]), options: opts, now: '2026-02-01T00:00:00Z' });
    await syncScope({ hub, listing: listing([], 'failed'), options: opts, now: '2026-02-01T00:05:00Z' });
    assert.equal((await hub.list(ns, selector)).length, 2);

    await syncScope({ hub, listing: listing([a]), options: opts, now: '2026-02-01T00:10:00Z' });
    const marked = (await hub.list(ns, selector)).find((p) => p.spec.displayName === 'b')!;
    const joined = marked.status!.conditions!.find((c) => c.type === 'Joined')!;
    assert.deepEqual([joined.status, joined.reason], ['False', 'NotFoundInProvider']);

    await syncScope({ hub, listing: listing([a], 'partial'), options: opts, now: '2026-02-01T00:15:00Z' });
    assert.equal((await hub.list(ns, selector)).length, 2);
    await syncScope({ hub, listing: listing([a]), options: opts, now: '2026-02-01T00:20:00Z' });
    assert.deepEqual(
      (await hub.list(ns, selector)).map((p) => p.spec.displayName),
      ['a'],
    );
  });

  it('lists across pages', async () => {
    const ns = uniqueNamespace('hub-page');
    const opts = inventoryOptions({ namespace: ns });
    const clusters = Array.from({ length: 7 }, (_, i) => eksCluster({ name: `c${i}` }));
    await syncScope({ hub, listing: listing(clusters), options: opts, now: '2026-02-01T00:00:00Z' });
    const paged = new KubernetesHub({ kubeConfig: adminKubeConfig(await localHub()), pageSize: 3 });
    let listed = 0;
    const counted = await countedByApiserver(await localHub(), async () => {
      listed = (await paged.list(ns, selector)).length;
    });
    assert.equal(listed, 7);
    assert.deepEqual(counted, { reads: 3, writes: 0, byVerb: { LIST: 3 } });
  });

  it("removes what another writer put under cpsync's own keys (an apply would leave it), then writes nothing again", async () => {
    const ns = uniqueNamespace('hub-stray');
    const opts = inventoryOptions({ namespace: ns });
    const now = '2026-02-01T00:00:00Z';
    await syncScope({ hub, listing: listing([eksCluster({ name: 'kept' })]), options: opts, now });
    const [written] = await hub.list(ns, selector);
    // Another identity (field manager) writes a grants record and a projection label cpsync does not want.
    const objects = adminKubeConfig(await localHub()).makeApiClient(CustomObjectsApi);
    await objects.patchNamespacedCustomObject(
      {
        group: 'multicluster.x-k8s.io',
        version: 'v1alpha1',
        plural: 'clusterprofiles',
        namespace: ns,
        name: written!.metadata.name,
        body: {
          metadata: {
            annotations: { 'cpsync.io/access-grants': '{"intruder":"arn:aws:iam::999999999999:role/x"}' },
            labels: { 'cpsync.io/projected-from': 'elsewhere', 'team.example.com/own': 'kept' },
          },
        },
        fieldManager: 'someone-else',
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await syncScope({ hub, listing: listing([eksCluster({ name: 'kept' })]), options: opts, now });
    const [after] = await hub.list(ns, selector);
    assert.equal(after!.metadata.annotations?.['cpsync.io/access-grants'], undefined);
    assert.equal(after!.metadata.labels?.['cpsync.io/projected-from'], undefined);
    assert.equal(after!.metadata.labels?.['team.example.com/own'], 'kept', "another writer's own key stays");
    const counted = await countedByApiserver(await localHub(), () =>
      syncScope({ hub, listing: listing([eksCluster({ name: 'kept' })]), options: opts, now }).then(() => {}),
    );
    assert.equal(counted.writes, 0);
  });
  it("takes only cpsync's own ClusterSet labels off a namespace no longer a ClusterSet, and makes no namespace", async () => {
    const state = await localHub();
    const core = adminKubeConfig(state).makeApiClient(CoreV1Api);
    const KEYS = ['multicluster.x-k8s.io/clusterset', 'clusterset.multicluster.x-k8s.io'];
    // Another writer's values are never cpsync's: a merge patch that repeats a value changes nothing, so no
    // server could tell it was set again.
    const value = (prefix: string) =>
      fc.stringMatching(/^[a-z0-9-]{0,10}[a-z0-9]$/).map((v) => `${prefix}${v}`);
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          // The ClusterSet cpsync labelled the namespace with before, if any.
          ours: fc.option(value('c'), { nil: undefined }),
          // What another writer set afterwards: any of the ClusterSet keys and a key of its own, by server-side
          // apply (forced) or by a merge patch.
          theirs: fc.dictionary(fc.constantFrom(...KEYS, 'team.example.com/own'), value('p'), {
            maxKeys: 3,
          }),
          how: fc.constantFrom('apply', 'merge'),
        }),
        async ({ ours, theirs, how }) => {
          const name = uniqueNamespace('unset');
          await core.createNamespace({ body: { metadata: { name } } });
          try {
            if (ours !== undefined) await hub.ensureNamespace({ name, clusterSet: ours });
            if (Object.keys(theirs).length > 0)
              await core.patchNamespace(
                how === 'apply'
                  ? {
                      name,
                      body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels: theirs } },
                      fieldManager: 'someone-else',
                      force: true,
                    }
                  : { name, body: { metadata: { labels: theirs } }, fieldManager: 'someone-else' },
                setHeaderOptions(
                  'Content-Type',
                  how === 'apply' ? PatchStrategy.ServerSideApply : PatchStrategy.MergePatch,
                ),
              );
            const before = await core.readNamespace({ name });
            await hub.dropClusterSet(name);
            const after = await core.readNamespace({ name });
            const labels = (ns: typeof after) =>
              Object.fromEntries(
                Object.entries(ns.metadata?.labels ?? {}).filter(
                  ([key]) => !key.startsWith('kubernetes.io/'),
                ),
              );
            // Every label another writer set stays as it set it; those only cpsync set are gone.
            assert.deepEqual(labels(after), { ...theirs });
            const cpsyncOnly = ours !== undefined && KEYS.some((key) => theirs[key] === undefined);
            if (!cpsyncOnly)
              assert.equal(
                after.metadata?.resourceVersion,
                before.metadata?.resourceVersion,
                'nothing written',
              );
            // Taking them off again writes nothing.
            await hub.dropClusterSet(name);
            assert.equal(
              (await core.readNamespace({ name })).metadata?.resourceVersion,
              after.metadata?.resourceVersion,
            );
          } finally {
            await core.deleteNamespace({ name });
          }
        },
      ),
      { numRuns: 25 },
    );
    const absent = uniqueNamespace('absent');
    await hub.dropClusterSet(absent);
    await assert.rejects(
      core.readNamespace({ name: absent }),
      (error: { code?: number }) => error.code === 404,
    );
  });
});
