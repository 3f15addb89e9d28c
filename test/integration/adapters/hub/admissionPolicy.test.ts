/**
 * The shipped admission policy (adapters/hub/manifests/admission-policy.yaml) on the real kube-apiserver: cpsync's
 * identity writes its profiles through the KubernetesHub adapter, another identity's forgeries are refused, what
 * consumers need (the Argo CD integration's finalizer, their own labels, profiles of their own) is accepted. The
 * policy is the shipped one; only its binding is narrowed to this file's namespace.
 */
import assert from 'node:assert/strict';
import { setTimeout as pause } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import {
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  RbacAuthorizationV1Api,
  setHeaderOptions,
  type KubeConfig,
} from '@kubernetes/client-node';
import { HubForbiddenError } from '../../../../adapters/hub/errors.ts';
import { KubernetesHub } from '../../../../adapters/hub/KubernetesHub.ts';
import {
  CLUSTER_PROFILE_API_VERSION,
  CLUSTER_PROFILE_GROUP,
  CLUSTER_PROFILE_KIND,
  CLUSTER_PROFILE_PLURAL,
  CLUSTER_PROFILE_VERSION,
  type ClusterProfile,
} from '../../../../core/domain/model/clusterProfile.ts';
import { normalize } from '../../../../core/domain/normalize.ts';
import { ANNOTATION_DELETED_AT } from '../../../../core/domain/constants.ts';
import { eksCluster, LATER, NOW } from '../../../support/fixtures.ts';
import { adminKubeConfig, answer, localHub, uniqueNamespace, userKubeConfig } from '../../../support/hub.ts';
import {
  ensureShippedRbac,
  installAdmissionPolicy,
  POLICY_NAMESPACE_LABEL,
  type InstalledPolicy,
} from '../../../support/hubManifests.ts';
import { cpsyncEntriesAs, writeClaims, type ManagedProfile } from '../../../support/claims.ts';
import { inventoryOptions } from '../../../support/settings.ts';

/** Another identity allowed by RBAC to write ClusterProfiles here: a consumer (the Argo CD integration, Kueue). */
const CONSUMER = 'consumer';
const ARGOCD_FINALIZER = 'argoproj.io/cluster-profile-finalizer';
/** How many times a request is tried while the API server takes the new policy up. */
const MAX_ATTEMPTS = 300;

const namespace = uniqueNamespace('admission');
const options = inventoryOptions({ namespace });
const PROFILES = {
  group: CLUSTER_PROFILE_GROUP,
  version: CLUSTER_PROFILE_VERSION,
  plural: CLUSTER_PROFILE_PLURAL,
};
const MERGE_PATCH = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

/** A profile written by hand: `labels`, `annotations` and the spec's manager of the writer's choosing. */
function handMade(
  name: string,
  manager: string,
  metadata: { labels?: Record<string, string>; annotations?: Record<string, string> } = {},
): ClusterProfile {
  return {
    apiVersion: CLUSTER_PROFILE_API_VERSION,
    kind: CLUSTER_PROFILE_KIND,
    metadata: { name, namespace, ...metadata },
    spec: { displayName: name, clusterManager: { name: manager } },
  };
}

describe('the shipped admission policy on the real kube-apiserver', () => {
  let admin: KubeConfig;
  let core: CoreV1Api;
  let adminProfiles: CustomObjectsApi;
  let cpsync: KubernetesHub;
  let consumer: CustomObjectsApi;
  let installed: InstalledPolicy | undefined;
  let removeRbac: (() => Promise<void>) | undefined;
  /** cpsync's profile the consumer's cases act on. */
  let guarded: ClusterProfile;

  const read = async (name: string) =>
    (await adminProfiles.getNamespacedCustomObject({ ...PROFILES, namespace, name })) as ClusterProfile;
  const patchAsConsumer = (name: string, body: object) =>
    answer(consumer.patchNamespacedCustomObject({ ...PROFILES, namespace, name, body }, MERGE_PATCH));

  /**
   * Waits until the API server enforces the policy here: a forged profile (a dry run, so nothing is made while the
   * policy is not yet taken up) is let through until it is refused, in the policy's words. (The policy's
   * `status.typeChecking` is written by kube-controller-manager, which this hub does not run; an expression that
   * did not compile would refuse every request here, cpsync's and the accepted cases' too.)
   */
  async function untilEnforced(): Promise<void> {
    const probe = handMade('probe', 'someone-else', { labels: { 'x-k8s.io/cluster-manager': 'cpsync' } });
    for (let attempt = 1; ; attempt++) {
      const { code, message } = await answer(
        consumer.createNamespacedCustomObject({ ...PROFILES, namespace, body: probe, dryRun: 'All' }),
      );
      if (code === 403) {
        assert.match(
          message,
          /ValidatingAdmissionPolicy 'cpsync-clusterprofiles' with binding 'cpsync-clusterprofiles' denied request/,
        );
        return;
      }
      assert.equal(code, 200, `the probe is let through (not yet enforced) or refused: ${message}`);
      assert.ok(attempt < MAX_ATTEMPTS, `the policy was not enforced after ${MAX_ATTEMPTS} attempts`);
      await pause(100);
    }
  }

  before(async () => {
    const state = await localHub();
    admin = adminKubeConfig(state);
    core = admin.makeApiClient(CoreV1Api);
    adminProfiles = admin.makeApiClient(CustomObjectsApi);
    await core.createNamespace({
      body: { metadata: { name: namespace, labels: { [POLICY_NAMESPACE_LABEL]: namespace } } },
    });
    removeRbac = await ensureShippedRbac(admin, ['ClusterRole/cpsync:clusterprofiles']);
    const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
    const bind = (name: string, kind: 'Role' | 'ClusterRole', user: string) =>
      rbac.createNamespacedRoleBinding({
        namespace,
        body: {
          metadata: { name },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind, name },
          subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }],
        },
      });
    // cpsync as rbac.yaml binds it; the consumer allowed to write every ClusterProfile here, status included.
    await bind('cpsync:clusterprofiles', 'ClusterRole', 'cpsync');
    await rbac.createNamespacedRole({
      namespace,
      body: {
        metadata: { name: 'profile-writer' },
        rules: [
          {
            apiGroups: [CLUSTER_PROFILE_GROUP],
            resources: ['clusterprofiles', 'clusterprofiles/status'],
            verbs: ['get', 'list', 'create', 'update', 'patch'],
          },
        ],
      },
    });
    await bind('profile-writer', 'Role', CONSUMER);
    cpsync = new KubernetesHub({ kubeConfig: userKubeConfig(state, 'cpsync') });
    consumer = userKubeConfig(state, CONSUMER).makeApiClient(CustomObjectsApi);

    installed = await installAdmissionPolicy(admin, { selects: namespace });
    await untilEnforced();
    const profile = normalize(eksCluster({ name: 'guarded' }), options, NOW);
    await cpsync.applyObject(profile);
    guarded = await cpsync.applyStatus(profile);
  });

  after(async () => {
    try {
      await installed?.remove();
      if (!core) return;
      // A finalizer a failed case left would hold the namespace's deletion.
      const left = (await adminProfiles.listNamespacedCustomObject({ ...PROFILES, namespace })) as {
        items: ClusterProfile[];
      };
      for (const profile of left.items.filter((p) => p.metadata.finalizers?.length))
        await adminProfiles.patchNamespacedCustomObject(
          { ...PROFILES, namespace, name: profile.metadata.name, body: { metadata: { finalizers: null } } },
          MERGE_PATCH,
        );
      await core.deleteNamespace({ name: namespace });
    } finally {
      await removeRbac?.();
    }
  });

  it('lets cpsync create and update a profile and its status through the KubernetesHub adapter', async () => {
    const profile = normalize(eksCluster({ name: 'written' }), options, NOW);
    await cpsync.applyObject(profile);
    await cpsync.applyStatus(profile);
    const upgraded = normalize(eksCluster({ name: 'written', kubernetesVersion: '1.33' }), options, LATER);
    upgraded.metadata.annotations = {
      ...upgraded.metadata.annotations,
      'cpsync.io/projected-to': 'elsewhere',
    };
    await cpsync.applyObject(upgraded);
    await cpsync.applyStatus(upgraded);
    const stored = await read(profile.metadata.name);
    assert.equal(stored.status?.version?.kubernetes, '1.33');
    assert.equal(stored.metadata.annotations?.['cpsync.io/projected-to'], 'elsewhere');
    assert.equal(
      stored.metadata.annotations?.['cpsync.io/provider-id'],
      profile.metadata.annotations?.['cpsync.io/provider-id'],
    );
  });

  it("refuses another identity that creates a profile with cpsync's manager label, its spec.clusterManager.name or a cpsync.io/ key", async () => {
    const forgeries = [
      handMade('forged-label', 'someone-else', { labels: { 'x-k8s.io/cluster-manager': 'cpsync' } }),
      handMade('forged-spec', 'cpsync'),
      handMade('forged-annotation', 'someone-else', {
        annotations: { 'cpsync.io/provider-id': 'arn:aws:eks:us-east-1:111122223333:cluster/payments' },
      }),
      handMade('forged-key', 'someone-else', { labels: { 'cpsync.io/provider': 'eks' } }),
    ];
    for (const forgery of forgeries) {
      const { code, message } = await answer(
        consumer.createNamespacedCustomObject({ ...PROFILES, namespace, body: forgery }),
      );
      assert.equal(code, 403, forgery.metadata.name);
      assert.match(
        message,
        /ValidatingAdmissionPolicy 'cpsync-clusterprofiles' .*denied request: only cpsync may create a ClusterProfile of manager cpsync .*; consumer may not/,
      );
      assert.equal(
        (
          await answer(
            adminProfiles.getNamespacedCustomObject({ ...PROFILES, namespace, name: forgery.metadata.name }),
          )
        ).code,
        404,
        `${forgery.metadata.name} was not made`,
      );
    }
  });

  it("refuses another identity that adds a cpsync.io/ annotation to cpsync's profile", async () => {
    const { code, message } = await patchAsConsumer(guarded.metadata.name, {
      metadata: {
        annotations: { 'cpsync.io/access-grants': '{"intruder":"arn:aws:iam::444455556666:role/x"}' },
      },
    });
    assert.equal(code, 403);
    assert.match(
      message,
      /only cpsync may add, change or remove the cpsync\.io\/\* annotations of ClusterProfile/,
    );
    assert.equal(
      (await read(guarded.metadata.name)).metadata.annotations?.['cpsync.io/access-grants'],
      undefined,
    );
  });

  it("refuses another identity that changes cpsync's provider id annotation", async () => {
    const { code, message } = await patchAsConsumer(guarded.metadata.name, {
      metadata: {
        annotations: { 'cpsync.io/provider-id': 'arn:aws:eks:us-east-1:111122223333:cluster/victim' },
      },
    });
    assert.equal(code, 403);
    assert.match(
      message,
      /only cpsync may add, change or remove the cpsync\.io\/\* annotations of ClusterProfile/,
    );
    assert.equal(
      (await read(guarded.metadata.name)).metadata.annotations?.['cpsync.io/provider-id'],
      guarded.metadata.annotations?.['cpsync.io/provider-id'],
    );
  });

  it("refuses another identity that changes the status of cpsync's profile: a server of its choosing", async () => {
    const before = await read(guarded.metadata.name);
    const { code, message } = await answer(
      consumer.patchNamespacedCustomObjectStatus(
        {
          ...PROFILES,
          namespace,
          name: guarded.metadata.name,
          body: {
            status: {
              accessProviders: [{ name: 'cpsync', cluster: { server: 'https://collector.example.com' } }],
            },
          },
        },
        MERGE_PATCH,
      ),
    );
    assert.equal(code, 403);
    assert.match(message, /only cpsync may change the status of ClusterProfile .*; consumer may not/);
    assert.deepEqual((await read(guarded.metadata.name)).status, before.status);
  });

  it("lets another identity claim cpsync's fields in managedFields, which the policy cannot see; cpsync removes what it takes away all the same", async () => {
    const first = normalize(eksCluster({ name: 'claimed' }), options, NOW);
    const name = first.metadata.name;
    await cpsync.applyObject(first);
    await cpsync.applyStatus(first);
    // The consumer copies cpsync's own managedFields entries under its name and writes them back with the profile.
    const current = (await consumer.getNamespacedCustomObject({
      ...PROFILES,
      namespace,
      name,
    })) as ManagedProfile;
    const claims = cpsyncEntriesAs(current, CONSUMER);
    assert.equal(claims.length, 2, "cpsync's entries: the object's and the status's");
    const claimed = await answer(writeClaims(consumer, current, claims));
    assert.equal(claimed.code, 200, `the policy lets the claim through: ${claimed.message}`);
    assert.equal(
      ((await read(name)) as ManagedProfile).metadata.managedFields?.filter(
        (entry) => entry.manager === CONSUMER,
      ).length,
      2,
      'the server kept the claims',
    );

    // cpsync's next write takes away node figures, a condition, the CA, the version, the display name and a label.
    const second = structuredClone(first);
    const status = second.status!;
    status.properties = status.properties!.filter((p) => !p.name.endsWith('.node.k8s.io'));
    status.conditions = status.conditions!.filter((c) => c.type !== 'Joined');
    const [provider] = status.accessProviders!;
    assert.ok(provider?.cluster, 'the access provider');
    delete provider.cluster['certificate-authority-data'];
    delete status.version;
    delete second.spec.displayName;
    delete second.metadata.labels!['topology.kubernetes.io/region'];
    assert.notDeepEqual(status, first.status, 'the second write takes something away');
    await cpsync.applyObject(second);
    await cpsync.applyStatus(second);

    const stored = await read(name);
    assert.deepEqual(stored.status, JSON.parse(JSON.stringify(status)));
    assert.deepEqual(stored.spec, second.spec);
    assert.deepEqual(stored.metadata.labels, second.metadata.labels);
  });

  it("refuses another identity that marks cpsync's profile, being deleted, as cpsync's own deletion", async () => {
    const profile = normalize(eksCluster({ name: 'held' }), options, NOW);
    const name = profile.metadata.name;
    await cpsync.applyObject(profile);
    await adminProfiles.patchNamespacedCustomObject(
      { ...PROFILES, namespace, name, body: { metadata: { finalizers: ['example.com/hold'] } } },
      MERGE_PATCH,
    );
    try {
      await adminProfiles.deleteNamespacedCustomObject({ ...PROFILES, namespace, name });
      assert.ok((await read(name)).metadata.deletionTimestamp, 'being deleted');
      const { code, message } = await patchAsConsumer(name, {
        metadata: { annotations: { [ANNOTATION_DELETED_AT]: NOW } },
      });
      assert.equal(code, 403);
      assert.match(
        message,
        /only cpsync may add, change or remove the cpsync\.io\/\* annotations of ClusterProfile/,
      );
      assert.equal((await read(name)).metadata.annotations?.[ANNOTATION_DELETED_AT], undefined);
      // cpsync's own deletion marks it.
      await cpsync.delete({ namespace, name });
      assert.ok((await read(name)).metadata.annotations?.[ANNOTATION_DELETED_AT]);
    } finally {
      await adminProfiles.patchNamespacedCustomObject(
        { ...PROFILES, namespace, name, body: { metadata: { finalizers: null } } },
        MERGE_PATCH,
      );
    }
  });

  it("refuses another identity that changes the spec of cpsync's profile", async () => {
    const { code, message } = await patchAsConsumer(guarded.metadata.name, {
      spec: { displayName: 'renamed' },
    });
    assert.equal(code, 403);
    assert.match(message, /only cpsync may change the spec of ClusterProfile/);
    assert.equal((await read(guarded.metadata.name)).spec.displayName, guarded.spec.displayName);
  });

  it("refuses another identity that removes cpsync's manager label", async () => {
    const { code, message } = await patchAsConsumer(guarded.metadata.name, {
      metadata: { labels: { 'x-k8s.io/cluster-manager': null } },
    });
    assert.equal(code, 403);
    assert.match(
      message,
      /only cpsync may add, change or remove the labels x-k8s\.io\/cluster-manager, multicluster\.x-k8s\.io\/inventory-member-id, topology\.kubernetes\.io\/region, topology\.kubernetes\.io\/zone, cpsync\.io\/\* and those copied from cloud tags of ClusterProfile/,
    );
    assert.equal((await read(guarded.metadata.name)).metadata.labels?.['x-k8s.io/cluster-manager'], 'cpsync');
  });

  it('refuses another identity that changes the topology labels or the labels cpsync copied from tags, whatever their prefix; lets cpsync remove them', async () => {
    // Tag labels under no prefix: outside cpsync.io/, named by the profile's cpsync.io/labels-from-tags annotation.
    const bare = inventoryOptions({ namespace, labels: { fromTags: ['env', 'example.com/*'], prefix: '' } });
    const tags = { env: 'prod', 'example.com/tier': 'gold' };
    const tagged = normalize(eksCluster({ name: 'tagged', tags }), bare, NOW);
    await cpsync.applyObject(tagged);
    await cpsync.applyStatus(tagged);
    const name = tagged.metadata.name;
    for (const labels of [
      { env: 'staging' },
      { env: null },
      { 'example.com/tier': null },
      { 'topology.kubernetes.io/region': 'eu-west-1' },
      { 'topology.kubernetes.io/zone': 'us-east-1a' },
      { 'cpsync.io/tag-env': 'prod' },
    ]) {
      const { code, message } = await patchAsConsumer(name, { metadata: { labels } });
      assert.equal(code, 403, JSON.stringify(labels));
      assert.match(message, /those copied from cloud tags of ClusterProfile .*; consumer may not/);
    }
    const stored = await read(name);
    assert.equal(stored.metadata.labels?.env, 'prod');
    assert.equal(stored.metadata.labels?.['example.com/tier'], 'gold');
    assert.equal(stored.metadata.labels?.['topology.kubernetes.io/region'], 'us-east-1');
    // A label of that kind cpsync did not record is the consumer's own.
    assert.equal((await patchAsConsumer(name, { metadata: { labels: { team: 'pay' } } })).code, 200);
    // The tag goes in the cloud: cpsync removes its label and its record.
    const untagged = normalize(
      eksCluster({ name: 'tagged', tags: { 'example.com/tier': 'gold' } }),
      bare,
      LATER,
    );
    await cpsync.applyObject(untagged);
    const after = await read(name);
    assert.equal(after.metadata.labels?.env, undefined);
    assert.equal(after.metadata.labels?.team, 'pay');
    assert.equal(after.metadata.annotations?.['cpsync.io/labels-from-tags'], 'example.com/tier');
  });

  it("accepts the Argo CD integration's finalizer on cpsync's profile, and its removal", async () => {
    assert.equal(
      (await patchAsConsumer(guarded.metadata.name, { metadata: { finalizers: [ARGOCD_FINALIZER] } })).code,
      200,
    );
    assert.deepEqual((await read(guarded.metadata.name)).metadata.finalizers, [ARGOCD_FINALIZER]);
    assert.equal(
      (await patchAsConsumer(guarded.metadata.name, { metadata: { finalizers: null } })).code,
      200,
    );
    assert.equal((await read(guarded.metadata.name)).metadata.finalizers, undefined);
  });

  it("accepts another identity's own label and annotation on cpsync's profile", async () => {
    const { code } = await patchAsConsumer(guarded.metadata.name, {
      metadata: { labels: { 'kueue.x-k8s.io/foo': 'bar' }, annotations: { 'argocd.argoproj.io/note': 'x' } },
    });
    assert.equal(code, 200);
    const stored = await read(guarded.metadata.name);
    assert.equal(stored.metadata.labels?.['kueue.x-k8s.io/foo'], 'bar');
    assert.equal(stored.metadata.annotations?.['argocd.argoproj.io/note'], 'x');
  });

  it("accepts another identity's profile of another manager, and its changes — but not one making it cpsync's", async () => {
    const own = handMade('kueue-made', 'kueue-admin', {
      labels: { 'x-k8s.io/cluster-manager': 'kueue-admin' },
    });
    assert.equal(
      (await answer(consumer.createNamespacedCustomObject({ ...PROFILES, namespace, body: own }))).code,
      200,
    );
    assert.equal((await patchAsConsumer('kueue-made', { spec: { displayName: 'renamed' } })).code, 200);
    assert.equal((await read('kueue-made')).spec.displayName, 'renamed');
    const takeover = await patchAsConsumer('kueue-made', {
      metadata: { labels: { 'x-k8s.io/cluster-manager': 'cpsync' } },
    });
    assert.equal(takeover.code, 403);
    assert.match(
      takeover.message,
      /no one may make ClusterProfile kueue-made of another manager into one of cpsync/,
    );
    assert.equal((await read('kueue-made')).metadata.labels?.['x-k8s.io/cluster-manager'], 'kueue-admin');
  });

  it('refuses cpsync itself a change of an existing profile’s cpsync.io/provider-id, naming the policy’s reason', async () => {
    const moved = structuredClone(guarded);
    moved.metadata.annotations = {
      ...moved.metadata.annotations,
      'cpsync.io/provider-id': 'arn:aws:eks:us-east-1:111122223333:cluster/another',
    };
    const refused = await cpsync.applyObject(moved).catch((error: unknown) => error);
    assert.ok(refused instanceof HubForbiddenError, String(refused));
    assert.match(
      refused.message,
      /the annotation cpsync\.io\/provider-id of ClusterProfile .* is arn:aws:eks:us-east-1:111122223333:cluster\/guarded and never changes/,
    );
    assert.doesNotMatch(
      refused.message,
      /RoleBinding|"kind":"Status"/,
      "the policy's words alone, not taken for missing RBAC",
    );
    assert.equal(
      (await read(guarded.metadata.name)).metadata.annotations?.['cpsync.io/provider-id'],
      guarded.metadata.annotations?.['cpsync.io/provider-id'],
    );
  });
});
