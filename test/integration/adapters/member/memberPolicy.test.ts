/**
 * `cpsync doctor`'s reading of whether a GKE or AKS member bounds what cpsync's identity writes there
 * (adapters/grants/memberPolicy.ts), against what the member does. The shipped access-grants manifests are
 * applied to a real kube-apiserver in generated ways an operator may apply them: cpsync's identity bound as a
 * User or only through a group it is in, the admission policy or its binding missing, the binding warning or
 * auditing instead of denying, its parameter another binding. The oracle is the API server: the check says
 * "bounded" exactly when the server refuses cpsync's identity a binding that RBAC allows it and the policy
 * forbids. A setup's effect is waited for (the server takes a changed policy up on its own time) until the
 * server answers as the setup says; the check is read once it has.
 */
import assert from 'node:assert/strict';
import { setTimeout as pause } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import {
  AdmissionregistrationV1Api,
  RbacAuthorizationV1Api,
  type KubeConfig,
  type V1ClusterRoleBinding,
} from '@kubernetes/client-node';
import fc from 'fast-check';
import { checkMemberPolicy } from '../../../../adapters/grants/memberPolicy.ts';
import { accessGrantsManifests } from '../../../env/member.ts';
import { adminKubeConfig, answer, localHub, userKubeConfig } from '../../../support/hub.ts';
import { rulesNamed, type PolicyAsked } from '../../../support/hubManifests.ts';

const SEED = Number(process.env.CPSYNC_PROPERTY_SEED ?? 20261129);
const suffix = Math.random().toString(36).slice(2, 8);
/** cpsync's identity on the member (a Google service account), in a group of the member's operators. */
const IDENTITY = `cpsync-${suffix}@example-project.iam.gserviceaccount.com`;
const GROUP = `cpsync-operators-${suffix}`;
/** How many times the server is asked while it takes a setup up. */
const MAX_ATTEMPTS = 300;

/** One way of applying the shipped manifests. */
interface Setup {
  /** The subjects of the ClusterRoleBinding cpsync:access-grants (the policy's parameter). */
  boundAs: 'user' | 'group' | 'user-and-group';
  policy: boolean;
  policyBinding: boolean;
  actions: Array<'Deny' | 'Warn' | 'Audit'>;
  /** The ClusterRoleBinding the policy binding reads cpsync's identity from. */
  paramRef: 'cpsync:access-grants' | 'cpsync:someone-else';
  /** The policy and binding as shipped, or changed to ask less while keeping their names and Deny. */
  content: PolicyAsked | 'binding-narrowed';
}

const setups: fc.Arbitrary<Setup> = fc.record({
  boundAs: fc.constantFrom('user', 'group', 'user-and-group'),
  policy: fc.boolean(),
  policyBinding: fc.boolean(),
  // The API server takes no Deny beside Warn.
  actions: fc.constantFrom<Setup['actions']>(
    ['Deny'],
    ['Deny', 'Audit'],
    ['Warn'],
    ['Audit'],
    ['Warn', 'Audit'],
  ),
  paramRef: fc.constantFrom('cpsync:access-grants', 'cpsync:someone-else'),
  content: fc.constantFrom<Setup['content']>(
    'shipped',
    'shipped',
    'validation-gutted',
    'rules-narrowed',
    'rules-named',
    'match-condition',
    'binding-narrowed',
  ),
});

/** The manifests as shipped, cpsync's identity bound as their comments ask. */
const AS_SHIPPED: Setup = {
  boundAs: 'user',
  policy: true,
  policyBinding: true,
  actions: ['Deny'],
  paramRef: 'cpsync:access-grants',
  content: 'shipped',
};

/** What the shipped manifest promises: the policy applies to cpsync's identity and denies. */
const boundedBy = (s: Setup) =>
  s.content === 'shipped' &&
  s.policy &&
  s.policyBinding &&
  s.actions.includes('Deny') &&
  s.paramRef === 'cpsync:access-grants' &&
  s.boundAs !== 'group';

describe('cpsync doctor on a member: whether its admission policy bounds cpsync’s identity', () => {
  let admin: KubeConfig;
  let rbac: RbacAuthorizationV1Api;
  let admission: AdmissionregistrationV1Api;
  let asCpsync: KubeConfig;
  let probes = 0;
  const shipped = accessGrantsManifests();

  const subjectsOf = (boundAs: Setup['boundAs']) => [
    ...(boundAs !== 'group' ? [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: IDENTITY }] : []),
    ...(boundAs !== 'user' ? [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: GROUP }] : []),
  ];

  async function clear(): Promise<void> {
    const name = shipped.policy.metadata!.name!;
    await admission.deleteValidatingAdmissionPolicyBinding({ name }).catch(() => {});
    await admission.deleteValidatingAdmissionPolicy({ name }).catch(() => {});
    await rbac.deleteClusterRoleBinding({ name: shipped.binding.metadata!.name! }).catch(() => {});
  }

  /** The manifests applied as `s` says (the ClusterRole always as shipped). */
  async function apply(s: Setup): Promise<void> {
    await clear();
    await rbac.createClusterRoleBinding({ body: { ...shipped.binding, subjects: subjectsOf(s.boundAs) } });
    const spec = shipped.policy.spec!;
    const policySpec =
      {
        'validation-gutted': { ...spec, validations: [{ expression: 'true' }] },
        'rules-narrowed': {
          ...spec,
          matchConstraints: {
            resourceRules: spec.matchConstraints!.resourceRules!.map((r) => ({
              ...r,
              resources: ['rolebindings'],
            })),
          },
        },
        'rules-named': rulesNamed(spec),
        'match-condition': { ...spec, matchConditions: [{ name: 'never', expression: 'false' }] },
      }[s.content as string] ?? spec;
    if (s.policy)
      await admission.createValidatingAdmissionPolicy({ body: { ...shipped.policy, spec: policySpec } });
    if (s.policyBinding)
      await admission.createValidatingAdmissionPolicyBinding({
        body: {
          ...shipped.policyBinding,
          spec: {
            ...shipped.policyBinding.spec!,
            validationActions: s.actions,
            paramRef: { ...shipped.policyBinding.spec!.paramRef!, name: s.paramRef },
            ...(s.content === 'binding-narrowed'
              ? { matchResources: { objectSelector: { matchLabels: { 'cpsync.io/never': 'set' } } } }
              : {}),
          },
        },
      });
  }

  /**
   * Whether the server refuses cpsync's identity a binding RBAC allows it and the policy forbids (not named
   * as cpsync's), asked until it answers `expected` (then true), or false when it never does.
   */
  async function serverAnswers(expected: 'refused' | 'allowed'): Promise<boolean> {
    const asked = asCpsync.makeApiClient(RbacAuthorizationV1Api);
    for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
      const body: V1ClusterRoleBinding = {
        metadata: { name: `member-policy-probe-${suffix}-${++probes}` },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'view' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'someone@example.com' }],
      };
      const got = await answer(asked.createClusterRoleBinding({ body }));
      if (got.code === 200) await rbac.deleteClusterRoleBinding({ name: body.metadata!.name! });
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

  /** The check, read as cpsync's identity, fails saying `why`. */
  async function saysNotOk(why: RegExp): Promise<void> {
    const check = await checkMemberPolicy(asCpsync, {});
    assert.equal(check.ok, false, check.detail);
    assert.match(check.detail, why);
  }

  before(async () => {
    const state = await localHub();
    admin = adminKubeConfig(state);
    rbac = admin.makeApiClient(RbacAuthorizationV1Api);
    admission = admin.makeApiClient(AdmissionregistrationV1Api);
    await rbac.createClusterRole({ body: shipped.role });
    asCpsync = userKubeConfig(state, IDENTITY, GROUP);
  });

  after(async () => {
    if (!rbac) return;
    await clear();
    await rbac.deleteClusterRole({ name: shipped.role.metadata!.name! }).catch(() => {});
  });

  it('says bounded exactly when the member refuses cpsync’s identity what the policy forbids (generated)', async () => {
    await fc.assert(
      fc.asyncProperty(setups, async (s) => {
        await apply(s);
        const bounded = boundedBy(s);
        assert.ok(
          await serverAnswers(bounded ? 'refused' : 'allowed'),
          `${JSON.stringify(s)}: the server never answered as the setup says`,
        );
        const check = await checkMemberPolicy(asCpsync, {});
        assert.equal(check.ok, bounded, `${JSON.stringify(s)}: ${check.detail}`);
        if (bounded) assert.match(check.detail, new RegExp(`^bounded: the user "${IDENTITY}"`));
        else assert.match(check.detail, /^not bounded: .* — (apply|bind)/);
        if (bounded || !s.policy || !s.policyBinding) return;
        // The reason named is the first the setup breaks.
        if (!s.actions.includes('Deny')) assert.match(check.detail, /does not deny/);
        else if (s.content !== 'shipped' && s.paramRef === 'cpsync:access-grants')
          assert.match(check.detail, /asks less than the shipped one/);
        else if (s.paramRef !== 'cpsync:access-grants')
          assert.match(check.detail, /parameter is ClusterRoleBinding "cpsync:someone-else"/);
        else
          assert.match(
            check.detail,
            new RegExp(
              `cpsync is the user "${IDENTITY}" \\(groups ${GROUP}\\) on the member, which is not a User subject`,
            ),
          );
      }),
      {
        seed: SEED,
        numRuns: 40,
        endOnFailure: true,
        // The manifests as shipped, and each one way of breaking them, beside the generated combinations.
        examples: [
          {},
          { boundAs: 'group' },
          { boundAs: 'user-and-group' },
          { policy: false },
          { policyBinding: false },
          { actions: ['Warn'] },
          { actions: ['Audit'] },
          { paramRef: 'cpsync:someone-else' },
          { content: 'validation-gutted' },
          { content: 'rules-narrowed' },
          { content: 'rules-named' },
          { content: 'match-condition' },
          { content: 'binding-narrowed' },
        ].map((fault): [Setup] => [{ ...AS_SHIPPED, ...(fault as Partial<Setup>) }]),
      },
    );
  });

  it('says not bounded when the policy lets through what it cannot evaluate', async () => {
    await apply({ ...AS_SHIPPED, policy: false });
    await admission.createValidatingAdmissionPolicy({
      body: { ...shipped.policy, spec: { ...shipped.policy.spec!, failurePolicy: 'Ignore' } },
    });
    await saysNotOk(/^not bounded: the policy's failurePolicy is Ignore/);
  });

  it('says it cannot tell, and what to apply, when the member does not let cpsync read the policy', async () => {
    await apply(AS_SHIPPED);
    // The ClusterRole as an earlier manifest shipped it: without the rule that reads the policy.
    const older = {
      ...shipped.role,
      rules: shipped.role.rules!.filter((r) => !r.apiGroups?.includes('admissionregistration.k8s.io')),
    };
    assert.ok(older.rules.length < shipped.role.rules!.length, 'the shipped ClusterRole reads the policy');
    await rbac.replaceClusterRole({ name: shipped.role.metadata!.name!, body: older });
    try {
      await saysNotOk(
        new RegExp(
          `^cannot tell whether the admission policy cpsync-access-grants is in force: the member does not let cpsync \\(the user "${IDENTITY}"\\) read it .* — apply the ClusterRole of adapters/member/manifests/access-grants-rbac.yaml as shipped`,
        ),
      );
    } finally {
      await rbac.replaceClusterRole({ name: shipped.role.metadata!.name!, body: shipped.role });
    }
  });

  it('says not bounded when no ClusterRoleBinding names cpsync’s identity for the policy', async () => {
    await apply({ ...AS_SHIPPED, boundAs: 'group' });
    await rbac.deleteClusterRoleBinding({ name: shipped.binding.metadata!.name! });
    // cpsync's identity reaches the RBAC through another binding of its group, which the policy does not read.
    const other = `member-policy-${suffix}`;
    await rbac.createClusterRoleBinding({
      body: { ...shipped.binding, metadata: { name: other }, subjects: subjectsOf('group') },
    });
    try {
      await saysNotOk(
        new RegExp(
          `^not bounded: the ClusterRoleBinding cpsync:access-grants is not on the member, so the policy knows no identity of cpsync's — apply .* with cpsync's identity \\(the user "${IDENTITY}"\\) as its User subject`,
        ),
      );
      assert.ok(
        await serverAnswers('allowed'),
        'and the member lets cpsync’s identity write what the policy forbids',
      );
    } finally {
      await rbac.deleteClusterRoleBinding({ name: other }).catch(() => {});
    }
  });
});
