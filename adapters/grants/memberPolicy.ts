/**
 * Whether a GKE or AKS member bounds what cpsync's identity writes there for the access grants, read without
 * changing anything (`cpsync doctor`). RBAC lets that identity write any (Cluster)RoleBinding; the admission
 * policy of adapters/member/manifests/access-grants-rbac.yaml bounds which bindings and subjects, for the Users
 * its parameter (the ClusterRoleBinding `cpsync:access-grants`) names. An identity the member knows under
 * another name, or reaches the RBAC through a group or another binding, is not bounded by it: the member says
 * who cpsync is there (a SelfSubjectReview), and that name must be one of those Users.
 */
import {
  AuthenticationV1Api,
  RbacAuthorizationV1Api,
  type ConfigurationOptions,
  type KubeConfig,
} from '@kubernetes/client-node';
import {
  absentIfNotFound,
  apiMessage,
  policyNotInForce,
  readPolicy,
  refusedByServer,
  shippedPolicyIn,
  weakerThanShipped,
} from '../shared/admissionPolicy.ts';
import type { CheckOutcome } from '../../core/sync/ports.ts';
import { shippedText } from '../shared/shipped.ts';

/** The names the shipped manifest gives the policy (and its binding) and the ClusterRoleBinding it reads. */
const MEMBER_POLICY = 'cpsync-access-grants';
const MEMBER_GRANTS_BINDING = 'cpsync:access-grants';
const MANIFEST = 'adapters/member/manifests/access-grants-rbac.yaml';

/** The shipped manifest's text (see `shippedText`). */
function manifestText(): Promise<string> {
  return shippedText(
    () => import('../member/manifests/access-grants-rbac.yaml', { with: { type: 'text' } }),
    new URL('../member/manifests/access-grants-rbac.yaml', import.meta.url),
  );
}

/** The identity the member authenticates cpsync's requests as. */
async function whoAmI(config: KubeConfig, options: ConfigurationOptions) {
  const review = await config
    .makeApiClient(AuthenticationV1Api)
    .createSelfSubjectReview(
      { body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' } },
      options,
    );
  const user = review.status?.userInfo;
  return { username: user?.username ?? '', groups: user?.groups ?? [] };
}

/**
 * Reads, as cpsync's identity on the member `config` reaches: who the member takes it for, the ClusterRoleBinding
 * the policy reads it from, and the policy with its binding. Never rejects: a member that cannot be read is a
 * failed check saying why.
 */
export async function checkMemberPolicy(
  config: KubeConfig,
  options: ConfigurationOptions,
): Promise<CheckOutcome> {
  let me: { username: string; groups: string[] };
  try {
    me = await whoAmI(config, options);
  } catch (error) {
    return { ok: false, detail: `cannot tell who cpsync is on the member: ${apiMessage(error)}` };
  }
  const shown = `the user ${JSON.stringify(me.username)}`;
  let parameter;
  let found;
  try {
    [parameter, found] = await Promise.all([
      absentIfNotFound(
        config
          .makeApiClient(RbacAuthorizationV1Api)
          .readClusterRoleBinding({ name: MEMBER_GRANTS_BINDING }, options),
      ),
      readPolicy(config, MEMBER_POLICY, options),
    ]);
  } catch (error) {
    return {
      ok: false,
      detail: refusedByServer(error)
        ? `cannot tell whether the admission policy ${MEMBER_POLICY} is in force: the member does not let cpsync (${shown}) read it or its parameter (${apiMessage(error)}) — apply the ClusterRole of ${MANIFEST} as shipped`
        : `cannot tell whether the admission policy ${MEMBER_POLICY} is in force: ${apiMessage(error)}`,
    };
  }
  const why = policyNotInForce(MEMBER_POLICY, found, 'the member');
  if (why) return { ok: false, detail: `not bounded: ${why} — apply ${MANIFEST} (Kubernetes 1.30 or later)` };
  const paramRef = found.binding?.spec?.paramRef;
  const paramKind = found.policy?.spec?.paramKind;
  if (
    paramRef?.name !== MEMBER_GRANTS_BINDING ||
    paramKind?.kind !== 'ClusterRoleBinding' ||
    paramKind.apiVersion !== 'rbac.authorization.k8s.io/v1'
  )
    return {
      ok: false,
      detail: `not bounded: the policy ${MEMBER_POLICY} does not read cpsync's identity from the ClusterRoleBinding ${MEMBER_GRANTS_BINDING} (its parameter is ${paramKind?.kind ?? 'none'} ${JSON.stringify(paramRef?.name ?? '')}) — apply ${MANIFEST}`,
    };
  if (!parameter)
    return {
      ok: false,
      detail: `not bounded: the ClusterRoleBinding ${MEMBER_GRANTS_BINDING} is not on the member, so the policy knows no identity of cpsync's — apply ${MANIFEST} with cpsync's identity (${shown}) as its User subject`,
    };
  const weaker = weakerThanShipped(
    { policy: found.policy!, binding: found.binding! },
    shippedPolicyIn(await manifestText(), MANIFEST),
  );
  if (weaker)
    return {
      ok: false,
      detail: `not bounded: the policy ${MEMBER_POLICY} asks less than the shipped one: ${weaker} — apply ${MANIFEST}`,
    };
  const named = (parameter.subjects ?? []).some((s) => s.kind === 'User' && s.name === me.username);
  if (!named) {
    const groups = me.groups.filter((g) => g !== 'system:authenticated');
    return {
      ok: false,
      detail: `not bounded: cpsync is ${shown}${groups.length > 0 ? ` (groups ${groups.join(', ')})` : ''} on the member, which is not a User subject of the ClusterRoleBinding ${MEMBER_GRANTS_BINDING}: the policy does not bound what cpsync writes there — bind that user there, not through a group or another binding`,
    };
  }
  return {
    ok: true,
    detail: `bounded: ${shown} writes only cpsync's consumer bindings, to view, edit or admin, of non-system users (admission policy ${MEMBER_POLICY}, Deny)`,
  };
}
