/**
 * The shipped access-grants manifests of a GKE or AKS member (adapters/member/manifests/access-grants-rbac.yaml) on
 * a real kube-apiserver, cpsync's identity bound as an operator binds it and nothing else changed: the RBAC lets
 * cpsync write bindings and bind view, edit and admin, and the admission policy bounds what RBAC cannot. cpsync's
 * own writes (the MemberBindings adapter) pass; anything else its identity asks — another binding's name, a
 * binding without cpsync's labels, a group, a service account or a system identity as subject, another role —
 * is refused, generated over every field the policy reads. The oracle is the API server's answer.
 */
import assert from 'node:assert/strict';
import { setTimeout as pause } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import {
  AdmissionregistrationV1Api,
  CoreV1Api,
  RbacAuthorizationV1Api,
  type KubeConfig,
  type RbacV1Subject,
  type V1ClusterRoleBinding,
} from '@kubernetes/client-node';
import fc from 'fast-check';
import { MemberBindings } from '../../../../adapters/grants/memberBindings.ts';
import { accessGrantsManifests, applyAccessGrantsManifests } from '../../../env/member.ts';
import { adminKubeConfig, answer, localHub, uniqueNamespace, userKubeConfig } from '../../../support/hub.ts';

const SEED = Number(process.env.CPSYNC_PROPERTY_SEED ?? 20261129);
/** cpsync's identity in this member, as the operator bound it (a Google service account, an Entra application). */
const IDENTITY = `cpsync-${Math.random().toString(36).slice(2, 8)}@example-project.iam.gserviceaccount.com`;
const MANAGER = 'cpsync';
/** How many times a request is tried while the API server takes the new policy up. */
const MAX_ATTEMPTS = 300;

/** A request the test generates: one binding of cpsync's identity's making, or a change to one already there. */
interface Asked {
  operation: 'create' | 'update' | 'delete';
  namespaced: boolean;
  /** The binding's name: cpsync's for the consumer, another, or cpsync's for another consumer. */
  name: 'consumer' | 'other' | 'mismatch';
  labels: { manager: boolean; consumer: boolean };
  role: 'view' | 'edit' | 'admin' | 'cluster-admin';
  subjects: Array<'user' | 'system-user' | 'group' | 'service-account' | 'itself'>;
  /** update, delete: whether the binding already there carries cpsync's marks (else the subject of a change). */
  existingMarked: boolean;
}

const asked: fc.Arbitrary<Asked> = fc.record({
  operation: fc.constantFrom('create', 'update', 'delete'),
  namespaced: fc.boolean(),
  name: fc.constantFrom('consumer', 'other', 'mismatch'),
  labels: fc.record({ manager: fc.boolean(), consumer: fc.boolean() }),
  role: fc.constantFrom('view', 'edit', 'admin', 'cluster-admin'),
  subjects: fc.array(fc.constantFrom('user', 'system-user', 'group', 'service-account', 'itself'), {
    minLength: 1,
    maxLength: 3,
  }),
  existingMarked: fc.boolean(),
});

describe('the access-grants manifests of a member: what cpsync’s identity may write there', () => {
  let admin: KubeConfig;
  let adminRbac: RbacAuthorizationV1Api;
  let asCpsync: RbacAuthorizationV1Api;
  let core: CoreV1Api;
  const namespace = uniqueNamespace('grant-bounds');
  let made = 0;

  const subjectOf = (kind: Asked['subjects'][number], n: number): RbacV1Subject =>
    ({
      user: { apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: `consumer-${n}@example.com` },
      'system-user': { apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: `system:kube-proxy-${n}` },
      group: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'system:authenticated' },
      'service-account': { kind: 'ServiceAccount', name: 'default', namespace: 'kube-system' },
      itself: { apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: IDENTITY },
    })[kind];

  /** The binding `a` asks for, under a name of its own (each case its own consumer). */
  function bindingOf(a: Asked, consumer: string, labelled = a.labels): V1ClusterRoleBinding {
    const name = {
      consumer: `cpsync:consumer:${consumer}`,
      other: `someone-else-${consumer}`,
      mismatch: `cpsync:consumer:${consumer}-other`,
    }[a.name];
    return {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: a.namespaced ? 'RoleBinding' : 'ClusterRoleBinding',
      metadata: {
        name,
        ...(a.namespaced ? { namespace } : {}),
        labels: {
          ...(labelled.manager ? { 'app.kubernetes.io/managed-by': MANAGER } : {}),
          ...(labelled.consumer ? { 'cpsync.io/consumer': consumer } : {}),
        },
      },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: a.role },
      subjects: a.subjects.map(subjectOf),
    };
  }

  const create = (rbac: RbacAuthorizationV1Api, body: V1ClusterRoleBinding) =>
    body.metadata!.namespace
      ? rbac.createNamespacedRoleBinding({ namespace, body })
      : rbac.createClusterRoleBinding({ body });
  const replace = (rbac: RbacAuthorizationV1Api, body: V1ClusterRoleBinding) =>
    body.metadata!.namespace
      ? rbac.replaceNamespacedRoleBinding({ name: body.metadata!.name!, namespace, body })
      : rbac.replaceClusterRoleBinding({ name: body.metadata!.name!, body });
  const remove = (rbac: RbacAuthorizationV1Api, body: V1ClusterRoleBinding) =>
    body.metadata!.namespace
      ? rbac.deleteNamespacedRoleBinding({ name: body.metadata!.name!, namespace })
      : rbac.deleteClusterRoleBinding({ name: body.metadata!.name! });
  const removeQuietly = (body: V1ClusterRoleBinding) => remove(adminRbac, body).catch(() => {});

  before(async () => {
    const state = await localHub();
    admin = adminKubeConfig(state);
    adminRbac = admin.makeApiClient(RbacAuthorizationV1Api);
    core = admin.makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: namespace } } });
    await applyAccessGrantsManifests(admin, [IDENTITY]);
    asCpsync = userKubeConfig(state, IDENTITY).makeApiClient(RbacAuthorizationV1Api);
    // Held until the API server enforces the policy: a binding not cpsync's, asked for until it is refused.
    const probe = bindingOf(
      {
        operation: 'create',
        namespaced: false,
        name: 'other',
        labels: { manager: false, consumer: false },
        role: 'view',
        subjects: ['user'],
        existingMarked: false,
      },
      'probe',
    );
    for (let attempt = 1; ; attempt++) {
      const { code } = await answer(create(asCpsync, probe));
      if (code !== 200) break;
      await remove(adminRbac, probe);
      assert.ok(attempt < MAX_ATTEMPTS, `the policy was not enforced after ${MAX_ATTEMPTS} attempts`);
      await pause(100);
    }
  });

  after(async () => {
    const { role, binding, policy, policyBinding } = accessGrantsManifests();
    const admission = admin?.makeApiClient(AdmissionregistrationV1Api);
    await admission
      ?.deleteValidatingAdmissionPolicyBinding({ name: policyBinding.metadata!.name! })
      .catch(() => {});
    await admission?.deleteValidatingAdmissionPolicy({ name: policy.metadata!.name! }).catch(() => {});
    await adminRbac?.deleteClusterRoleBinding({ name: binding.metadata!.name! }).catch(() => {});
    await adminRbac?.deleteClusterRole({ name: role.metadata!.name! }).catch(() => {});
    const left = (await adminRbac?.listClusterRoleBinding())?.items ?? [];
    for (const b of left.filter((b) => b.metadata?.name?.includes('grant-bounds-')))
      await adminRbac.deleteClusterRoleBinding({ name: b.metadata!.name! }).catch(() => {});
    await core?.deleteNamespace({ name: namespace }).catch(() => {});
  });

  it('lets cpsync’s own writes through: a consumer bound, changed, and taken out, cluster-wide and in a namespace', async () => {
    const consumer = `grant-bounds-${++made}`;
    const bindings = new MemberBindings(asCpsync, {}, MANAGER, consumer, undefined, ['alice@example.com']);
    for (const place of [{}, { namespace }]) {
      assert.equal(await bindings.bind(place, 'view', 'alice@example.com'), true, 'bound');
      assert.equal(await bindings.bind(place, 'admin', 'alice@example.com'), true, 'its level changed');
      await bindings.unbind(place, 'alice@example.com');
    }
    const read = await answer(adminRbac.readClusterRoleBinding({ name: bindings.name }));
    assert.equal(read.code, 404, 'the cluster-wide binding, once its last identity was taken out, is gone');
  });

  it('revokes through a binding someone planted subjects in: never stuck, never carrying them', async () => {
    const plant = (consumer: string, users: string[]): V1ClusterRoleBinding => ({
      metadata: {
        name: `cpsync:consumer:${consumer}`,
        labels: { 'app.kubernetes.io/managed-by': MANAGER, 'cpsync.io/consumer': consumer },
      },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'view' },
      subjects: users.map((name) => ({ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name })),
    });
    const planted = ['system:kube-proxy', IDENTITY, 'mallory@example.com'];
    const revoked = plant(`grant-bounds-${++made}`, ['alice@example.com', ...planted]);
    const kept = plant(`grant-bounds-${++made}`, ['alice@example.com', 'bob@example.com', ...planted]);
    const nameOf = (b: V1ClusterRoleBinding) => b.metadata!.name!;
    try {
      for (const body of [revoked, kept])
        assert.equal((await answer(adminRbac.createClusterRoleBinding({ body }))).code, 200);
      // A revocation knows no identities of the consumer (it may be configured no more), and the member refuses
      // to keep cpsync's own identity bound: the binding goes whole.
      const revoking = new MemberBindings(
        asCpsync,
        {},
        MANAGER,
        revoked.metadata!.labels!['cpsync.io/consumer']!,
      );
      assert.match(await revoking.unbind({}, 'alice@example.com'), /deleted whole/);
      assert.equal((await answer(adminRbac.readClusterRoleBinding({ name: nameOf(revoked) }))).code, 404);
      // Knowing the consumer's identities, cpsync keeps only those.
      const granting = new MemberBindings(
        asCpsync,
        {},
        MANAGER,
        kept.metadata!.labels!['cpsync.io/consumer']!,
        undefined,
        ['alice@example.com', 'bob@example.com'],
      );
      assert.match(await granting.unbind({}, 'alice@example.com'), /taken out/);
      const left = await adminRbac.readClusterRoleBinding({ name: nameOf(kept) });
      assert.deepEqual(
        left.subjects?.map((s) => s.name),
        ['bob@example.com'],
        'the consumer’s other identity alone',
      );
    } finally {
      await removeQuietly(revoked);
      await removeQuietly(kept);
    }
  });

  it('refuses cpsync’s identity every other binding, subject, role and change (generated)', async () => {
    await fc.assert(
      fc.asyncProperty(asked, async (a) => {
        const consumer = `grant-bounds-${++made}`;
        const wanted = bindingOf(a, consumer);
        const marked = (b: V1ClusterRoleBinding) =>
          b.metadata!.name === `cpsync:consumer:${consumer}` &&
          b.metadata!.labels?.['app.kubernetes.io/managed-by'] !== undefined &&
          b.metadata!.labels?.['cpsync.io/consumer'] === consumer;
        const bounded = (b: V1ClusterRoleBinding) =>
          marked(b) &&
          ['view', 'edit', 'admin'].includes(b.roleRef.name) &&
          (b.subjects ?? []).every(
            (s) => s.kind === 'User' && !s.name.startsWith('system:') && s.name !== IDENTITY,
          );
        // What is there before an update or a delete: made by someone else, marked as cpsync's or not.
        const existing = bindingOf(
          { ...a, role: 'view', subjects: ['user'] },
          consumer,
          a.existingMarked ? { manager: true, consumer: true } : { manager: false, consumer: false },
        );
        try {
          let got: { code: number; message: string };
          let allowed: boolean;
          if (a.operation === 'create') {
            got = await answer(create(asCpsync, wanted));
            allowed = bounded(wanted);
          } else {
            assert.equal((await answer(create(adminRbac, existing))).code, 200, 'the binding there before');
            if (a.operation === 'delete') {
              got = await answer(remove(asCpsync, existing));
              allowed = marked(existing);
            } else {
              // roleRef cannot change: an update keeps the existing one.
              const changed = { ...wanted, roleRef: existing.roleRef };
              got = await answer(replace(asCpsync, changed));
              allowed = marked(existing) && bounded(changed);
            }
          }
          assert.equal(
            got.code === 200,
            allowed,
            `${JSON.stringify(a)}: ${allowed ? 'refused' : 'allowed'} (${got.code} ${got.message})`,
          );
          if (!allowed) assert.ok([403, 422].includes(got.code), `refused as such: ${got.code}`);
        } finally {
          await removeQuietly(wanted);
          await removeQuietly(existing);
        }
      }),
      { seed: SEED, numRuns: 60, endOnFailure: true },
    );
  });

  it('bounds cpsync’s identity alone: another identity’s bindings are not the policy’s', async () => {
    const consumer = `grant-bounds-${++made}`;
    const foreign = bindingOf(
      {
        operation: 'create',
        namespaced: false,
        name: 'other',
        labels: { manager: false, consumer: false },
        role: 'view',
        subjects: ['group'],
        existingMarked: false,
      },
      consumer,
    );
    try {
      assert.equal((await answer(create(adminRbac, foreign))).code, 200, 'the cluster admin binds a group');
      assert.equal(
        (await answer(remove(asCpsync, foreign))).code !== 200,
        true,
        'cpsync’s identity may not delete it',
      );
      assert.equal((await answer(remove(adminRbac, foreign))).code, 200, 'its admin may');
    } finally {
      await removeQuietly(foreign);
    }
  });
});
