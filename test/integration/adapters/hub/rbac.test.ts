import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { before, describe, it } from 'node:test';
import {
  AdmissionregistrationV1Api,
  CoreV1Api,
  KubernetesObjectApi,
  type KubeConfig,
  type KubernetesObject,
  type V1ConfigMap,
} from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { HubForbiddenError } from '../../../../adapters/hub/errors.ts';
import { KubernetesHub } from '../../../../adapters/hub/KubernetesHub.ts';
import { KubernetesLeaseStore } from '../../../../adapters/hub/KubernetesLeases.ts';
import type { ObservedCluster } from '../../../../core/domain/model/observedCluster.ts';
import { inventoryOptions } from '../../../support/settings.ts';
import { syncScope } from '../../../support/absences.ts';
import { eksCluster } from '../../../support/fixtures.ts';
import { adminKubeConfig, localHub, userKubeConfig } from '../../../support/hub.ts';
import { installAdmissionPolicy } from '../../../support/hubManifests.ts';

const RBAC = new URL('../../../../adapters/hub/manifests/rbac.yaml', import.meta.url);
const scope = { provider: 'eks' as const, account: '111122223333', region: 'us-east-1' };
const listing = (clusters: ObservedCluster[]) => ({
  outcome: { scope, kind: 'complete' as const },
  clusters,
});

async function forbidden(call: Promise<unknown>): Promise<number> {
  try {
    await call;
    return 200;
  } catch (error) {
    return (error as { code?: number }).code ?? 0;
  }
}

describe('the shipped hub RBAC', () => {
  let hub: KubernetesHub;
  let core: CoreV1Api;
  let identity: KubeConfig;

  before(async () => {
    const state = await localHub();
    const objects = adminKubeConfig(state).makeApiClient(KubernetesObjectApi);
    for (const document of parseAllDocuments(readFileSync(RBAC, 'utf8'))) {
      await objects.create(document.toJS() as KubernetesObject);
    }
    identity = userKubeConfig(state, 'cpsync');
    hub = new KubernetesHub({ kubeConfig: identity });
    core = identity.makeApiClient(CoreV1Api);
  });

  it('lets a cpsync identity run a sync: label the namespace, create, update and delete profiles', async () => {
    const options = inventoryOptions({
      clusterSets: { 'cluster-inventory': 'prod' },
      deletionGraceListings: 1,
    });
    const a = eksCluster({ name: 'rbac-a' });
    const b = eksCluster({ name: 'rbac-b' });
    const first = await syncScope({ hub, listing: listing([a, b]), options, now: '2026-03-01T00:00:00Z' });
    assert.deepEqual(first.applied.failed, []);
    assert.equal(first.applied.applied.length, 2);
    const second = await syncScope({
      hub,
      listing: listing([{ ...a, kubernetesVersion: '1.33' }]),
      options,
      now: '2026-03-01T00:15:00Z',
    });
    assert.deepEqual(second.applied.failed, []);
    assert.deepEqual(second.applied.applied.map((c) => c.kind).sort(), ['deleted', 'updated']);
    const left = await hub.list('cluster-inventory', { 'x-k8s.io/cluster-manager': 'cpsync' });
    assert.deepEqual(
      left.map((p) => p.spec.displayName),
      ['rbac-a'],
    );
    const ns = await core.readNamespace({ name: 'cluster-inventory' });
    assert.equal(ns.metadata?.labels?.['multicluster.x-k8s.io/clusterset'], 'prod');
  });

  it('lets a cpsync identity take, renew, list and give up its leases and their shares in the inventory namespace, and nowhere else', async () => {
    const leases = new KubernetesLeaseStore({ kubeConfig: identity, namespace: 'cluster-inventory' });
    assert.deepEqual(await leases.acquire('cpsync-lease-rbac', 'run-1', 30_000), { acquired: true });
    assert.deepEqual(await leases.acquire('cpsync-lease-rbac', 'run-1', 30_000), { acquired: true });
    assert.deepEqual(await leases.acquire('cpsync-lease-rbac-a', 'event-1', 30_000, 'cpsync-lease-rbac'), {
      acquired: true,
    });
    assert.deepEqual(
      (await leases.sharers('cpsync-lease-rbac')).map((h) => h.holder),
      ['event-1'],
    );
    await leases.release('cpsync-lease-rbac-a', 'event-1');
    await leases.release('cpsync-lease-rbac', 'run-1');
    assert.equal(await leases.holderOf('cpsync-lease-rbac'), undefined);
    assert.deepEqual(await leases.sharers('cpsync-lease-rbac'), []);
    const elsewhere = new KubernetesLeaseStore({ kubeConfig: identity, namespace: 'kube-system' });
    const refused = await elsewhere.acquire('cpsync-lease-rbac', 'run-1', 30_000).catch((e: unknown) => e);
    assert.ok(refused instanceof HubForbiddenError, String(refused));
    const unlisted = await elsewhere.sharers('cpsync-lease-rbac').catch((e: unknown) => e);
    assert.ok(unlisted instanceof HubForbiddenError, String(unlisted));
  });

  it('lets a cpsync identity record the feature states in its one ConfigMap, and apply no other', async () => {
    const ref = { namespace: 'cluster-inventory', name: 'cpsync-features' };
    await hub.updateConfigMap(ref, () => ({ 'features.json': '{}' }));
    await hub.updateConfigMap(ref, (data) => ({
      ...data,
      'scope.eks.111122223333.us-east-1': '{"tagProperties":1}',
    }));
    const stored = await core.readNamespacedConfigMap(ref);
    assert.deepEqual(stored.data, {
      'features.json': '{}',
      'scope.eks.111122223333.us-east-1': '{"tagProperties":1}',
    });
    const other = await hub
      .updateConfigMap({ namespace: 'cluster-inventory', name: 'other' }, () => ({ a: 'b' }))
      .catch((e: unknown) => e);
    assert.ok(other instanceof HubForbiddenError, String(other));
  });

  it('lets a cpsync identity read the admission policy and its binding, by name, and nothing else of admission control', async () => {
    const installed = await installAdmissionPolicy(adminKubeConfig(await localHub()));
    try {
      const admission = identity.makeApiClient(AdmissionregistrationV1Api);
      const name = 'cpsync-clusterprofiles';
      assert.equal((await admission.readValidatingAdmissionPolicy({ name })).spec?.failurePolicy, 'Fail');
      assert.equal((await admission.readValidatingAdmissionPolicyBinding({ name })).spec?.policyName, name);
      const refused: Array<() => Promise<unknown>> = [
        () => admission.listValidatingAdmissionPolicy(),
        () => admission.listValidatingAdmissionPolicyBinding(),
        () => admission.readValidatingAdmissionPolicy({ name: 'another' }),
        () => admission.readValidatingAdmissionPolicyBinding({ name: 'another' }),
        () => admission.readValidatingWebhookConfiguration({ name }),
        () => admission.deleteValidatingAdmissionPolicyBinding({ name }),
        () => admission.deleteValidatingAdmissionPolicy({ name }),
        () => admission.replaceValidatingAdmissionPolicyBinding({ name, body: installed.binding }),
        () =>
          admission.createValidatingAdmissionPolicy({
            body: { ...installed.policy, metadata: { name: 'another' } },
          }),
      ];
      for (const [index, call] of refused.entries())
        assert.equal(await forbidden(call()), 403, `call ${index}`);
    } finally {
      await installed.remove();
    }
  });

  it('is forbidden from reading Secrets, here or anywhere', async () => {
    assert.equal(await forbidden(core.listNamespacedSecret({ namespace: 'cluster-inventory' })), 403);
    assert.equal(await forbidden(core.listNamespacedSecret({ namespace: 'kube-system' })), 403);
    assert.equal(await forbidden(core.listSecretForAllNamespaces()), 403);
  });

  it('is forbidden from writing other kinds', async () => {
    const configMap: V1ConfigMap = { metadata: { name: 'probe' }, data: { a: 'b' } };
    assert.equal(
      await forbidden(core.createNamespacedConfigMap({ namespace: 'cluster-inventory', body: configMap })),
      403,
    );
  });

  it('is forbidden from writing profiles in other namespaces', async () => {
    const options = inventoryOptions({ namespace: 'default' });
    const result = await syncScope({
      hub,
      listing: listing([eksCluster({ name: 'elsewhere' })]),
      options,
      now: '2026-03-01T00:00:00Z',
    }).catch((e: unknown) => e);
    assert.ok(result instanceof HubForbiddenError, String(result));
    assert.equal(result.status, 403);
  });

  it('refuses a projection into a namespace without the RoleBinding, naming it, before writing anywhere', async () => {
    const admin = new KubernetesHub({ kubeConfig: adminKubeConfig(await localHub()) });
    const options = inventoryOptions({
      projections: [{ provider: 'eks', namespaces: ['kube-public'] }],
    });
    const cluster = eksCluster({ name: 'projected-nowhere' });
    const result = await syncScope({
      hub,
      listing: listing([cluster]),
      options,
      now: '2026-03-01T00:00:00Z',
    }).catch((e: unknown) => e);
    assert.ok(result instanceof HubForbiddenError, String(result));
    assert.match(
      result.message,
      /namespace kube-public needs the RoleBinding cpsync:clusterprofiles \(ClusterRole cpsync:clusterprofiles/,
    );
    // Not written in the namespace it may write to either.
    const own = await admin.list('cluster-inventory', { 'x-k8s.io/cluster-manager': 'cpsync' });
    assert.deepEqual(
      own.filter((p) => p.spec.displayName === 'projected-nowhere'),
      [],
    );
    assert.deepEqual(await admin.list('kube-public', {}), []);
  });

  it('goes on with a scope whose removed projection left copies in a namespace it may no longer read, naming it', async () => {
    const admin = new KubernetesHub({ kubeConfig: adminKubeConfig(await localHub()) });
    // A scope of its own (other tests' profiles in the inventory are not this scope's).
    const alone = { ...scope, region: 'ap-south-1' };
    const cluster = eksCluster({ name: 'once-projected', region: 'ap-south-1' });
    const listing = (clusters: ObservedCluster[]) => ({
      outcome: { scope: alone, kind: 'complete' as const },
      clusters,
    });
    // Written when a rule still sent copies to kube-public (by an identity that could).
    await syncScope({
      hub: admin,
      listing: listing([cluster]),
      options: inventoryOptions({ projections: [{ provider: 'eks', namespaces: ['kube-public'] }] }),
      now: '2026-03-01T00:00:00Z',
    });
    const result = await syncScope({
      hub,
      listing: listing([{ ...cluster, kubernetesVersion: '1.34' }]),
      options: inventoryOptions(),
      now: '2026-03-01T00:15:00Z',
    });
    assert.deepEqual(
      result.unreadable.map((u) => u.namespace),
      ['kube-public'],
    );
    assert.match(result.unreadable[0]!.reason, /needs the RoleBinding cpsync:clusterprofiles/);
    assert.deepEqual(
      result.applied.applied.map((c) => [c.kind, c.profile.metadata.namespace]),
      [['updated', 'cluster-inventory']],
    );
    // The copy it could not reach is left as it was, not deleted by anyone else, and the profile still names its
    // namespace, so the copy is looked for again at every run until it can be read (and deleted).
    assert.equal((await admin.list('kube-public', {})).length, 1);
    const own = (await admin.list('cluster-inventory', {})).find(
      (p) => p.metadata.annotations?.['cpsync.io/provider-id'] === cluster.providerId,
    );
    assert.equal(own?.metadata.annotations?.['cpsync.io/projected-to'], 'kube-public');
    assert.equal(own?.status?.version?.kubernetes, '1.34', 'its other changes written all the same');
  });
});
