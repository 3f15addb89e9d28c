/**
 * Whether the hub keeps others from writing cpsync's profiles, namespace by namespace: the admission policy of
 * manifests/admission-policy.yaml in force (its binding denying), asking at least what the shipped one asks, for
 * the configured manager, and its binding matching the namespace. Read without changing anything, for the Argo
 * CD subscriber, which turns profiles into credentials Argo CD sends to the profile's server, and acts only where
 * no one but cpsync can have written them.
 */
import {
  CoreV1Api,
  type KubeConfig,
  type V1LabelSelector,
  type V1ValidatingAdmissionPolicy,
  type V1ValidatingAdmissionPolicyBinding,
} from '@kubernetes/client-node';
import {
  absentIfNotFound,
  apiMessage,
  literalOf,
  policyNotInForce,
  readPolicy,
  refusedByServer,
  shippedPolicyIn,
  weakerThanShipped,
} from '../shared/admissionPolicy.ts';
import { shippedText } from '../shared/shipped.ts';

const unauthenticated = (error: unknown) => (error as { code?: number }).code === 401;

/** The policy and its binding (one name for both), and the file that ships them. */
export const HUB_POLICY = 'cpsync-clusterprofiles';
const MANIFEST = 'adapters/hub/manifests/admission-policy.yaml';
/** The label the API server gives every namespace: its name. */
const NAMESPACE_NAME_LABEL = 'kubernetes.io/metadata.name';
/** How an install sets who cpsync is: a user (as shipped), or any member of a group (`cpsync hub install`). */
const BY_CPSYNC = [
  'request.userInfo.username == variables.identity',
  'variables.identity in request.userInfo.groups',
];

/** Whether profiles of a namespace can have been written by anyone but cpsync's identity. */
export interface HubGuard {
  /** Why others could write profiles in `namespace`, or undefined when the hub refuses them there. */
  unguarded(namespace: string): Promise<string | undefined>;
  /** Set when every namespace is taken as guarded without a look (the hub's writers trusted). */
  readonly trusted?: true;
  /** Whom the policy lets write the profiles where it guards, when it is in force at all. */
  readonly writer?: HubWriter;
}

/** cpsync's identity as the hub's policy names it: a user, or any member of a group. */
export type HubWriter = { user: string } | { group: string };

/** The writer in words: `the user cpsync`, `the members of the group cpsync-writers`. */
export const writerText = (writer: HubWriter) =>
  'user' in writer ? `the user ${writer.user}` : `the members of the group ${writer.group}`;

/** Whether a request by `user` (its name and groups, as the API server authenticated it) passes as cpsync's. */
export const writesAs = (writer: HubWriter, user: { username?: string; groups?: string[] }) =>
  'user' in writer ? user.username === writer.user : (user.groups ?? []).includes(writer.group);

/** A guard that takes every namespace as guarded (a deployment that chose to trust the hub's writers). */
export const TRUSTED_HUB: HubGuard = { unguarded: async () => undefined, trusted: true };

async function shippedPolicy() {
  const text = await shippedText(
    () => import('./manifests/admission-policy.yaml', { with: { type: 'text' } }),
    new URL('./manifests/admission-policy.yaml', import.meta.url),
  );
  return shippedPolicyIn(text, MANIFEST);
}

/** Whether `labels` match `selector` (Kubernetes label selector semantics; an empty selector matches all). */
function selects(selector: V1LabelSelector, labels: Readonly<Record<string, string>>): boolean {
  // Own keys only: a selector key such as `constructor` is a label the namespace lacks, not a property it has.
  const has = (key: string) => Object.hasOwn(labels, key);
  const equal = Object.entries(selector.matchLabels ?? {}).every(
    ([key, value]) => has(key) && labels[key] === value,
  );
  return (
    equal &&
    (selector.matchExpressions ?? []).every(({ key, operator, values = [] }) => {
      switch (operator) {
        case 'In':
          return has(key) && values.includes(labels[key]!);
        case 'NotIn':
          return !has(key) || !values.includes(labels[key]!);
        case 'Exists':
          return has(key);
        case 'DoesNotExist':
          return !has(key);
        default:
          // An operator the API server would not have taken: nothing is taken as matched.
          return false;
      }
    })
  );
}

/** The keys a selector reads. */
const keysOf = (selector: V1LabelSelector) => [
  ...Object.keys(selector.matchLabels ?? {}),
  ...(selector.matchExpressions ?? []).map((e) => e.key),
];

/**
 * The hub's answer, read once: its policy and binding judged as a whole, then each namespace by the binding's
 * namespace selector (the namespace's labels read only when the selector names more than its name). Rejects when
 * the hub cannot answer (not when it refuses this identity: that is a namespace taken as unguarded, saying why).
 */
export async function readHubGuard(config: KubeConfig, manager: string): Promise<HubGuard> {
  let found;
  try {
    found = await readPolicy(config, HUB_POLICY);
  } catch (error) {
    // Refused (403) is an answer; unauthenticated (401: a token gone stale) is retried with the invocation.
    if (!refusedByServer(error) || unauthenticated(error)) throw error;
    const why = `cannot tell whether the hub's admission policy ${HUB_POLICY} is in force: the hub does not let this identity read it (${apiMessage(error)}) — bind the ClusterRole cpsync:admission-policy (adapters/hub/manifests/rbac.yaml)`;
    return { unguarded: async () => why };
  }
  const whole = await judged(found, manager);
  if ('why' in whole) {
    const why = `the hub's admission policy is not in force: ${whole.why} — apply ${MANIFEST} (cpsync hub install)`;
    return { unguarded: async () => why };
  }
  const selector = found.binding!.spec?.matchResources?.namespaceSelector ?? {};
  const core = config.makeApiClient(CoreV1Api);
  return {
    writer: whole.writer,
    async unguarded(namespace) {
      let labels: Record<string, string> = { [NAMESPACE_NAME_LABEL]: namespace };
      if (keysOf(selector).some((key) => key !== NAMESPACE_NAME_LABEL)) {
        let read;
        try {
          read = await absentIfNotFound(core.readNamespace({ name: namespace }));
        } catch (error) {
          if (!refusedByServer(error) || unauthenticated(error)) throw error;
          return `cannot tell whether the hub's admission policy binding ${HUB_POLICY} matches the namespace ${namespace}: the hub does not let this identity read it (${apiMessage(error)})`;
        }
        if (!read) return `the namespace ${namespace} is not on the hub`;
        labels = { ...read.metadata?.labels, [NAMESPACE_NAME_LABEL]: namespace };
      }
      return selects(selector, labels)
        ? undefined
        : `the hub's admission policy binding ${HUB_POLICY} does not match the namespace ${namespace} (its namespaceSelector) — bind it there (cpsync hub install)`;
    },
  };
}

/**
 * Why the policy and binding do not refuse others' writes of `manager`'s profiles, wherever they apply; or, when
 * they do, who they let write them.
 */
async function judged(
  found: { policy?: V1ValidatingAdmissionPolicy; binding?: V1ValidatingAdmissionPolicyBinding },
  manager: string,
): Promise<{ why: string } | { writer: HubWriter }> {
  const refused = (why: string) => ({ why });
  const why = policyNotInForce(HUB_POLICY, found, 'the hub');
  if (why) return refused(why);
  const policy = found.policy!;
  // The server keeps the last of two variables of one name, a reader of the first would judge the wrong one.
  const names = (policy.spec?.variables ?? []).map((v) => v.name);
  const twice = names.find((name, i) => names.indexOf(name) !== i);
  if (twice !== undefined) return refused(`its variables name ${JSON.stringify(twice)} more than once`);
  // A binding whose parameter is not found may be skipped (parameterNotFoundAction: Allow): the shipped one has none.
  if (policy.spec?.paramKind || found.binding!.spec?.paramRef)
    return refused(
      'it takes a parameter (paramKind, paramRef), which the shipped one does not: a parameter not found can let every request through',
    );
  const guarded = literalOf(policy, 'manager');
  if (guarded !== manager)
    return refused(
      `the policy guards the manager ${JSON.stringify(guarded ?? null)}, this configuration's is ${JSON.stringify(manager)} (set its manager variable)`,
    );
  const identity = literalOf(policy, 'identity');
  if (!identity) return refused('its identity variable is not a plain string naming cpsync');
  const byCpsync = (policy.spec?.variables?.find((v) => v.name === 'byCpsync')?.expression ?? '')
    .replace(/\s+/g, ' ')
    .trim();
  if (!BY_CPSYNC.includes(byCpsync)) return refused('its byCpsync variable is neither of the shipped ones');
  // A group the API server puts others in (system:authenticated, system:serviceaccounts, …), or the anonymous user.
  const group = byCpsync === BY_CPSYNC[1];
  if (group ? identity.startsWith('system:') : identity === 'system:anonymous')
    return refused(`it takes ${JSON.stringify(identity)} for cpsync, which others are too`);
  const weaker = weakerThanShipped({ policy, binding: found.binding! }, await shippedPolicy(), {
    settable: ['identity', 'manager', 'byCpsync'],
    namespaceSelector: true,
  });
  return weaker ? refused(weaker) : { writer: group ? { group: identity } : { user: identity } };
}
