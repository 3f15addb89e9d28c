/**
 * Whether the hub keeps others from writing cpsync's profiles in a namespace (adapters/hub/hubPolicy.ts, what the
 * Argo CD subscriber acts on), against what the hub does. The shipped admission policy is applied to a real
 * kube-apiserver in generated ways: the policy or its binding missing, the binding warning or auditing instead of
 * denying, matching the namespace by its name, by a label or not at all, the policy asking less than shipped, or
 * guarding another manager. The oracle is the API server: a user RBAC allows to write ClusterProfiles there
 * creates a profile the subscriber would take for cpsync's (its manager label and name, a provider id). The guard
 * says "guarded" only where the server refuses that profile, and does for the policy as shipped. A setup's effect
 * is waited for (the server takes a changed policy up on its own time) until the server answers as the setup says;
 * the guard is read once it has.
 */
import assert from 'node:assert/strict';
import { setTimeout as pause } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import {
  AdmissionregistrationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  RbacAuthorizationV1Api,
  type KubeConfig,
  type V1ValidatingAdmissionPolicy,
  type V1ValidatingAdmissionPolicyBinding,
} from '@kubernetes/client-node';
import fc from 'fast-check';
import { parseAllDocuments } from 'yaml';
import { readFileSync } from 'node:fs';
import { HUB_POLICY, readHubGuard } from '../../../../adapters/hub/hubPolicy.ts';
import { hubManifests } from '../../../../adapters/hub/hubManifests.ts';
import {
  CLUSTER_PROFILE_API_VERSION,
  CLUSTER_PROFILE_GROUP,
  CLUSTER_PROFILE_KIND,
  CLUSTER_PROFILE_PLURAL,
  CLUSTER_PROFILE_VERSION,
} from '../../../../core/domain/model/clusterProfile.ts';
import { adminKubeConfig, answer, localHub, uniqueNamespace, userKubeConfig } from '../../../support/hub.ts';
import {
  applyPrinted,
  ensureShippedRbac,
  rulesNamed,
  type PolicyAsked,
} from '../../../support/hubManifests.ts';
import { consumerSetup } from '../../../../adapters/compose/consumers.ts';
import { parseConfig } from '../../../../adapters/compose/config.ts';
import { stringify } from 'yaml';

const SEED = Number(process.env.CPSYNC_PROPERTY_SEED ?? 20261129);
const namespace = uniqueNamespace('guarded');
const LABEL = 'test.cpsync.io/hub-policy';
/** A user RBAC allows to write every ClusterProfile in the namespace: a consumer, or anyone given that. */
const WRITER = `writer-${namespace}`;
const MANAGER = 'cpsync';
/** How many times the server is asked while it takes a setup up. */
const MAX_ATTEMPTS = 300;

/** One way of applying the shipped policy and its binding. */
interface Setup {
  policy: boolean;
  binding: boolean;
  actions: Array<'Deny' | 'Warn' | 'Audit'>;
  /** How the binding matches the namespace. */
  where:
    | 'everywhere'
    | 'name-in'
    | 'name-not-in-another'
    | 'label'
    | 'another-name'
    | 'another-label'
    | 'a-key-objects-have';
  /** The policy as shipped, changed to ask less, or guarding another manager. */
  content:
    | PolicyAsked
    | 'binding-object-selector'
    | 'anyone-is-cpsync'
    | 'another-manager'
    | 'a-variable-twice'
    | 'a-parameter-not-found'
    | 'every-resource-but-status'
    | 'status-misspelled'
    | 'a-group-of-everyone';
}

const setups: fc.Arbitrary<Setup> = fc.record({
  policy: fc.boolean(),
  binding: fc.boolean(),
  actions: fc.constantFrom<Setup['actions']>(
    ['Deny'],
    ['Deny', 'Audit'],
    ['Warn'],
    ['Audit'],
    ['Warn', 'Audit'],
  ),
  where: fc.constantFrom<Setup['where']>(
    'everywhere',
    'name-in',
    'name-not-in-another',
    'label',
    'another-name',
    'another-label',
    'a-key-objects-have',
  ),
  content: fc.constantFrom<Setup['content']>(
    'shipped',
    'shipped',
    'validation-gutted',
    'rules-narrowed',
    'rules-named',
    'match-condition',
    'binding-object-selector',
    'anyone-is-cpsync',
    'another-manager',
    'a-variable-twice',
    'a-parameter-not-found',
    'every-resource-but-status',
    'status-misspelled',
    'a-group-of-everyone',
  ),
});

const AS_SHIPPED: Setup = {
  policy: true,
  binding: true,
  actions: ['Deny'],
  where: 'everywhere',
  content: 'shipped',
};

const matchesHere = (s: Setup) => !['another-name', 'another-label', 'a-key-objects-have'].includes(s.where);
/**
 * What the server does with the writer's profile: refuses it where the policy applies and denies, as shipped,
 * guarding another manager (the profile's `cpsync.io/` annotation makes it one the policy guards all the same), or
 * matching every resource but no subresource (the profile is refused; its status, the server Argo CD is sent to,
 * would be anyone's to change).
 */
const serverRefuses = (s: Setup) =>
  s.policy &&
  s.binding &&
  s.actions.includes('Deny') &&
  matchesHere(s) &&
  ['shipped', 'another-manager', 'every-resource-but-status', 'status-misspelled'].includes(s.content);
/** What the guard may say guarded: the policy as shipped for this manager, in force here. */
const guarded = (s: Setup) => serverRefuses(s) && s.content === 'shipped';

function shipped(): { policy: V1ValidatingAdmissionPolicy; binding: V1ValidatingAdmissionPolicyBinding } {
  const docs = parseAllDocuments(
    readFileSync(
      new URL('../../../../adapters/hub/manifests/admission-policy.yaml', import.meta.url),
      'utf8',
    ),
  ).map((d) => d.toJS() as { kind: string });
  return {
    policy: docs.find((d) => d.kind === 'ValidatingAdmissionPolicy') as V1ValidatingAdmissionPolicy,
    binding: docs.find(
      (d) => d.kind === 'ValidatingAdmissionPolicyBinding',
    ) as V1ValidatingAdmissionPolicyBinding,
  };
}

describe('the hub guard: whether only cpsync can have written the profiles of a namespace', () => {
  let admin: KubeConfig;
  let admission: AdmissionregistrationV1Api;
  let writer: CustomObjectsApi;
  let asCpsync: KubeConfig;
  let removeRbac: (() => Promise<void>) | undefined;
  let probes = 0;
  const { policy: shippedPolicy, binding: shippedBinding } = shipped();

  async function clear(): Promise<void> {
    await admission.deleteValidatingAdmissionPolicyBinding({ name: HUB_POLICY }).catch(() => {});
    await admission.deleteValidatingAdmissionPolicy({ name: HUB_POLICY }).catch(() => {});
  }

  /** The policy and binding applied as `s` says. */
  async function apply(s: Setup): Promise<void> {
    await clear();
    const spec = shippedPolicy.spec!;
    const variables = spec.variables!.map((v) =>
      v.name === 'manager' && s.content === 'another-manager'
        ? { ...v, expression: "'someone-else'" }
        : v.name === 'byCpsync' && s.content === 'anyone-is-cpsync'
          ? { ...v, expression: 'true' }
          : v.name === 'byCpsync' && s.content === 'a-group-of-everyone'
            ? { ...v, expression: 'variables.identity in request.userInfo.groups' }
            : v.name === 'identity' && s.content === 'a-group-of-everyone'
              ? { ...v, expression: "'system:authenticated'" }
              : v,
    );
    // The server keeps the last of two variables of one name.
    if (s.content === 'a-variable-twice') variables.push({ name: 'byCpsync', expression: 'true' });
    const policySpec = {
      'validation-gutted': { ...spec, validations: [{ expression: 'true' }] },
      'rules-narrowed': {
        ...spec,
        matchConstraints: {
          resourceRules: spec.matchConstraints!.resourceRules!.map((r) => ({
            ...r,
            resources: ['clusterprofiles/status'],
          })),
        },
      },
      'rules-named': rulesNamed(spec),
      'match-condition': { ...spec, matchConditions: [{ name: 'never', expression: 'false' }] },
      'every-resource-but-status': {
        ...spec,
        matchConstraints: {
          resourceRules: spec.matchConstraints!.resourceRules!.map((r) => ({ ...r, resources: ['*'] })),
        },
      },
      // The API server splits a rule's entry at its first `/`: `clusterprofiles/status/x` matches no request.
      'status-misspelled': {
        ...spec,
        matchConstraints: {
          resourceRules: spec.matchConstraints!.resourceRules!.map((r) => ({
            ...r,
            resources: ['clusterprofiles', 'clusterprofiles/status/x'],
          })),
        },
      },
      'a-parameter-not-found': { ...spec, variables, paramKind: { apiVersion: 'v1', kind: 'ConfigMap' } },
    }[s.content as string] ?? { ...spec, variables };
    if (s.policy)
      await admission.createValidatingAdmissionPolicy({ body: { ...shippedPolicy, spec: policySpec } });
    const selector = {
      everywhere: undefined,
      'name-in': {
        matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: [namespace] }],
      },
      'name-not-in-another': {
        matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: ['elsewhere'] }],
      },
      label: { matchLabels: { [LABEL]: 'yes' } },
      'another-name': {
        matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: ['elsewhere'] }],
      },
      'another-label': { matchLabels: { [LABEL]: 'no' } },
      'a-key-objects-have': { matchExpressions: [{ key: 'constructor', operator: 'Exists' }] },
    }[s.where];
    const matchResources = {
      ...(selector ? { namespaceSelector: selector } : {}),
      ...(s.content === 'binding-object-selector'
        ? { objectSelector: { matchLabels: { 'cpsync.io/never': 'set' } } }
        : {}),
    };
    if (s.binding)
      await admission.createValidatingAdmissionPolicyBinding({
        body: {
          ...shippedBinding,
          spec: {
            ...shippedBinding.spec!,
            validationActions: s.actions,
            ...(s.content === 'a-parameter-not-found'
              ? { paramRef: { name: 'absent', namespace, parameterNotFoundAction: 'Allow' } }
              : {}),
            ...(Object.keys(matchResources).length > 0 ? { matchResources } : {}),
          },
        },
      });
  }

  /**
   * Whether the server refuses the writer a profile the subscriber would take for cpsync's, asked until it answers
   * `expected` (then true), or false when it never does.
   */
  async function serverAnswers(expected: 'refused' | 'allowed'): Promise<boolean> {
    for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
      const name = `planted-${++probes}`;
      const got = await answer(
        writer.createNamespacedCustomObject({
          group: CLUSTER_PROFILE_GROUP,
          version: CLUSTER_PROFILE_VERSION,
          namespace,
          plural: CLUSTER_PROFILE_PLURAL,
          body: {
            apiVersion: CLUSTER_PROFILE_API_VERSION,
            kind: CLUSTER_PROFILE_KIND,
            metadata: {
              name,
              labels: { 'x-k8s.io/cluster-manager': MANAGER },
              annotations: { 'cpsync.io/provider-id': 'arn:aws:eks:us-east-1:111122223333:cluster/real' },
            },
            spec: { displayName: name, clusterManager: { name: MANAGER } },
          },
        }),
      );
      if (got.code === 200)
        await admin.makeApiClient(CustomObjectsApi).deleteNamespacedCustomObject({
          group: CLUSTER_PROFILE_GROUP,
          version: CLUSTER_PROFILE_VERSION,
          namespace,
          plural: CLUSTER_PROFILE_PLURAL,
          name,
        });
      else
        assert.match(
          got.message,
          /ValidatingAdmissionPolicy/,
          `refused by the policy, not RBAC: ${got.message}`,
        );
      if ((got.code === 200 ? 'allowed' : 'refused') === expected) return true;
      await pause(100);
    }
    return false;
  }

  before(async () => {
    const state = await localHub();
    admin = adminKubeConfig(state);
    admission = admin.makeApiClient(AdmissionregistrationV1Api);
    const core = admin.makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: namespace, labels: { [LABEL]: 'yes' } } } });
    const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
    await rbac.createNamespacedRole({
      namespace,
      body: {
        metadata: { name: 'profile-writer' },
        rules: [
          {
            apiGroups: [CLUSTER_PROFILE_GROUP],
            resources: ['clusterprofiles'],
            verbs: ['create', 'delete'],
          },
        ],
      },
    });
    await rbac.createNamespacedRoleBinding({
      namespace,
      body: {
        metadata: { name: 'profile-writer' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'profile-writer' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: WRITER }],
      },
    });
    writer = userKubeConfig(state, WRITER).makeApiClient(CustomObjectsApi);
    // cpsync as rbac.yaml binds it: the policy read through the ClusterRole cpsync:admission-policy; the namespace
    // (for a selector by label) through cpsync:namespaces, which names the inventory namespaces.
    removeRbac = await ensureShippedRbac(admin, [
      'ClusterRole/cpsync:admission-policy',
      'ClusterRoleBinding/cpsync:admission-policy',
    ]);
    await rbac.createClusterRole({
      body: {
        metadata: { name: `cpsync:namespaces:${namespace}` },
        rules: [{ apiGroups: [''], resources: ['namespaces'], resourceNames: [namespace], verbs: ['get'] }],
      },
    });
    await rbac.createClusterRoleBinding({
      body: {
        metadata: { name: `cpsync:namespaces:${namespace}` },
        roleRef: {
          apiGroup: 'rbac.authorization.k8s.io',
          kind: 'ClusterRole',
          name: `cpsync:namespaces:${namespace}`,
        },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'cpsync' }],
      },
    });
    asCpsync = userKubeConfig(state, 'cpsync');
  });

  after(async () => {
    if (!admission) return;
    await clear();
    const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
    await rbac.deleteClusterRoleBinding({ name: `cpsync:namespaces:${namespace}` }).catch(() => {});
    await rbac.deleteClusterRole({ name: `cpsync:namespaces:${namespace}` }).catch(() => {});
    await removeRbac?.();
    await admin
      .makeApiClient(CoreV1Api)
      .deleteNamespace({ name: namespace })
      .catch(() => {});
  });

  it('says guarded only where the hub refuses others a profile like cpsync’s, and does for the policy as shipped (generated)', async () => {
    await fc.assert(
      fc.asyncProperty(setups, async (s) => {
        await apply(s);
        const refuses = serverRefuses(s);
        assert.ok(
          await serverAnswers(refuses ? 'refused' : 'allowed'),
          `${JSON.stringify(s)}: the server never answered as the setup says`,
        );
        const why = await (await readHubGuard(asCpsync, MANAGER)).unguarded(namespace);
        assert.equal(why === undefined, guarded(s), `${JSON.stringify(s)}: ${why ?? 'guarded'}`);
        if (why === undefined) return;
        // The reason names what to do.
        assert.match(why, / — (apply|bind)/);
        if (!s.policy)
          assert.match(why, /ValidatingAdmissionPolicy cpsync-clusterprofiles is not on the hub/);
        else if (!s.binding)
          assert.match(why, /ValidatingAdmissionPolicyBinding cpsync-clusterprofiles is not on the hub/);
        else if (!s.actions.includes('Deny')) assert.match(why, /does not deny/);
      }),
      {
        seed: SEED,
        numRuns: 30,
        endOnFailure: true,
        // The policy as shipped everywhere and by each way of matching, and each one way of breaking it.
        examples: [
          {},
          { where: 'name-in' },
          { where: 'name-not-in-another' },
          { where: 'label' },
          { where: 'another-name' },
          { where: 'another-label' },
          { policy: false },
          { binding: false },
          { actions: ['Warn'] },
          { actions: ['Audit'] },
          { content: 'validation-gutted' },
          { content: 'rules-narrowed' },
          { content: 'rules-named' },
          { content: 'match-condition' },
          { content: 'binding-object-selector' },
          { content: 'anyone-is-cpsync' },
          { content: 'another-manager' },
          { content: 'a-variable-twice' },
          { content: 'a-parameter-not-found' },
          { content: 'every-resource-but-status' },
          { content: 'status-misspelled' },
          { content: 'a-group-of-everyone' },
          { where: 'a-key-objects-have' },
        ].map((fault): [Setup] => [{ ...AS_SHIPPED, ...(fault as Partial<Setup>) }]),
      },
    );
  });

  it('reads the policy as the Argo CD subscriber bound only by the RBAC `cpsync consumers argocd-subscriber` prints', async () => {
    await apply(AS_SHIPPED);
    const subscriber = `argocd-subscriber-${namespace}`;
    const setup = consumerSetup(parseConfig({ inventory: { namespace } }, 'test'), {
      kind: 'argocd-subscriber',
      subject: { kind: 'User', name: subscriber },
      argocdNamespace: namespace,
    });
    const state = await localHub();
    const bare = await (await readHubGuard(userKubeConfig(state, subscriber), MANAGER)).unguarded(namespace);
    assert.match(bare ?? 'guarded', /^cannot tell/, 'unbound, it cannot read the policy');
    const remove = await applyPrinted(admin, setup.rbac!.map((m) => `---\n${stringify(m)}`).join(''));
    try {
      const why = await (await readHubGuard(userKubeConfig(state, subscriber), MANAGER)).unguarded(namespace);
      assert.equal(why, undefined);
    } finally {
      await remove();
    }
  });

  it('says guarded for the policy as `cpsync hub install` writes it: a user with a backslash in its name, or a group, bound in the inventory namespaces', async () => {
    for (const identity of [
      { kind: 'User' as const, name: 'CORP\\cpsync' },
      { kind: 'Group' as const, name: 'cpsync-writers' },
    ]) {
      await clear();
      const manifests = await hubManifests({
        manager: MANAGER,
        namespaces: [namespace],
        identity,
        admissionPolicy: { namespaces: [namespace] },
      });
      const policy = manifests.find((m) => m.kind === 'ValidatingAdmissionPolicy')!;
      const binding = manifests.find((m) => m.kind === 'ValidatingAdmissionPolicyBinding')!;
      await admission.createValidatingAdmissionPolicy({
        body: policy as unknown as V1ValidatingAdmissionPolicy,
      });
      await admission.createValidatingAdmissionPolicyBinding({
        body: binding as unknown as V1ValidatingAdmissionPolicyBinding,
      });
      assert.ok(await serverAnswers('refused'), `${identity.name}: the server never refused the writer`);
      const why = await (await readHubGuard(asCpsync, MANAGER)).unguarded(namespace);
      assert.equal(why, undefined, `${identity.name}: ${why}`);
    }
  });

  it('says unguarded when the policy lets through what it cannot evaluate', async () => {
    await apply({ ...AS_SHIPPED, policy: false });
    await admission.createValidatingAdmissionPolicy({
      body: { ...shippedPolicy, spec: { ...shippedPolicy.spec!, failurePolicy: 'Ignore' } },
    });
    const why = await (await readHubGuard(asCpsync, MANAGER)).unguarded(namespace);
    assert.match(why ?? 'guarded', /failurePolicy is Ignore/);
  });

  it('says it cannot tell, and what to bind, when the hub does not let the reader see the policy', async () => {
    await apply(AS_SHIPPED);
    const stranger = userKubeConfig(await localHub(), `stranger-${namespace}`);
    const why = await (await readHubGuard(stranger, MANAGER)).unguarded(namespace);
    assert.match(
      why ?? 'guarded',
      /^cannot tell whether the hub's admission policy cpsync-clusterprofiles is in force: the hub does not let this identity read it .* — bind the ClusterRole cpsync:admission-policy/,
    );
  });
});
