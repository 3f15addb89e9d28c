/**
 * Whether a ValidatingAdmissionPolicy cpsync ships is in force on a cluster, read without changing anything: the
 * hub's (adapters/hub/manifests/admission-policy.yaml) and a member's for the access grants
 * (adapters/member/manifests/access-grants-rbac.yaml). Each ships the policy and its binding under one name.
 */
import {
  AdmissionregistrationV1Api,
  ApiException,
  type ConfigurationOptions,
  type KubeConfig,
  type V1ValidatingAdmissionPolicy,
  type V1ValidatingAdmissionPolicyBinding,
} from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { messageOf } from '../../core/domain/errors.ts';
import { celLiteral } from './celLiteral.ts';

/** The policy and its binding of one name, each undefined when the cluster has none. */
export interface PolicyOnCluster {
  policy?: V1ValidatingAdmissionPolicy;
  binding?: V1ValidatingAdmissionPolicyBinding;
}

/** The policy and its binding as the manifest `file` (its text) ships them. */
export function shippedPolicyIn(
  text: string,
  file: string,
): { policy: V1ValidatingAdmissionPolicy; binding: V1ValidatingAdmissionPolicyBinding } {
  const docs = parseAllDocuments(text).map((d) => d.toJS() as { kind?: string });
  const policy = docs.find((d) => d.kind === 'ValidatingAdmissionPolicy');
  const binding = docs.find((d) => d.kind === 'ValidatingAdmissionPolicyBinding');
  if (!policy || !binding) throw new Error(`${file} has lost its admission policy or its binding`);
  return {
    policy: policy as V1ValidatingAdmissionPolicy,
    binding: binding as V1ValidatingAdmissionPolicyBinding,
  };
}

/** `read`'s answer, or undefined when the API server says there is none (404). */
export async function absentIfNotFound<T>(read: Promise<T>): Promise<T | undefined> {
  try {
    return await read;
  } catch (error) {
    if (error instanceof ApiException && error.code === 404) return undefined;
    throw error;
  }
}

/** Reads the policy `name` and its binding of the same name. Rejects when either cannot be read (not a 404). */
export async function readPolicy(
  config: KubeConfig,
  name: string,
  options?: ConfigurationOptions,
): Promise<PolicyOnCluster> {
  const api = config.makeApiClient(AdmissionregistrationV1Api);
  const [policy, binding] = await Promise.all([
    absentIfNotFound(api.readValidatingAdmissionPolicy({ name }, options)),
    absentIfNotFound(api.readValidatingAdmissionPolicyBinding({ name }, options)),
  ]);
  return { ...(policy ? { policy } : {}), ...(binding ? { binding } : {}) };
}

/**
 * Why the policy `name` and its binding do not refuse what the policy refuses, or undefined when they do: both
 * there, the binding binding that policy and denying, the policy not letting through what it cannot evaluate.
 */
export function policyNotInForce(
  name: string,
  { policy, binding }: PolicyOnCluster,
  /** The cluster, as a message names it: `the hub`, `the member`. */
  where: string,
): string | undefined {
  if (!policy) return `the ValidatingAdmissionPolicy ${name} is not on ${where}`;
  if (!binding) return `the ValidatingAdmissionPolicyBinding ${name} is not on ${where}`;
  if (binding.spec?.policyName !== name)
    return `the binding ${name} binds ${JSON.stringify(binding.spec?.policyName ?? '')}, not the policy ${name}`;
  const actions = binding.spec.validationActions ?? [];
  if (!actions.includes('Deny'))
    return `the binding ${name} does not deny (validationActions: ${actions.join(', ') || 'none'})`;
  if (policy.spec?.failurePolicy === 'Ignore')
    return `the policy's failurePolicy is Ignore (a request it cannot evaluate is let through)`;
  return undefined;
}

/** A CEL expression or message with its whitespace runs made one space (YAML folds them as it likes). */
const folded = (text: string | undefined) => (text ?? '').replace(/\s+/g, ' ').trim();
const empty = (selector: { matchLabels?: object; matchExpressions?: unknown[] } | undefined) =>
  Object.keys(selector?.matchLabels ?? {}).length === 0 && (selector?.matchExpressions ?? []).length === 0;

/**
 * The string a policy variable's expression is, when it is a plain CEL string literal: single-quoted without
 * escapes (`'cpsync'`, as the shipped file writes it) or double-quoted with JSON's escapes (how an install writes a
 * name holding a quote or a backslash).
 */
export function literalOf(policy: V1ValidatingAdmissionPolicy, variable: string): string | undefined {
  return celLiteral(policy.spec?.variables?.find((v) => v.name === variable)?.expression);
}

/**
 * Where the policy and binding on a cluster ask less than the shipped ones, or undefined when they ask at least
 * as much: every shipped variable and validation there as shipped (more may be), every shipped rule matched, and
 * nothing that narrows what they apply to (a match condition, a selector, excluded or narrower resources).
 */
export function weakerThanShipped(
  found: { policy: V1ValidatingAdmissionPolicy; binding: V1ValidatingAdmissionPolicyBinding },
  shipped: { policy: V1ValidatingAdmissionPolicy; binding: V1ValidatingAdmissionPolicyBinding },
  options: {
    /** Variables an install sets to its own values (the caller judges them). */
    settable?: readonly string[];
    /** Whether the binding may select namespaces (the caller judges which it covers). */
    namespaceSelector?: boolean;
  } = {},
): string | undefined {
  const spec = found.policy.spec ?? {};
  const variables = new Map((spec.variables ?? []).map((v) => [v.name, folded(v.expression)]));
  for (const v of shipped.policy.spec?.variables ?? [])
    if (!options.settable?.includes(v.name) && variables.get(v.name) !== folded(v.expression))
      return `its variable ${v.name} is not the shipped one`;
  const validations = new Set((spec.validations ?? []).map((v) => folded(v.expression)));
  for (const v of shipped.policy.spec?.validations ?? [])
    if (!validations.has(folded(v.expression)))
      return `a shipped validation is missing or changed (${JSON.stringify(folded(v.message))})`;
  if ((spec.matchConditions ?? []).length > 0)
    return `it has match conditions (${spec.matchConditions!.map((c) => c.name).join(', ')}): requests they leave out are not checked`;
  const constraints = spec.matchConstraints ?? {};
  if (!empty(constraints.namespaceSelector) || !empty(constraints.objectSelector))
    return 'its matchConstraints select namespaces or objects: what they leave out is not checked';
  if ((constraints.excludeResourceRules ?? []).length > 0) return 'its matchConstraints exclude resources';
  const covers = (list: string[] | undefined, wanted: string) =>
    (list ?? []).includes('*') || (list ?? []).includes(wanted);
  // A resource as the API server's rule matcher reads a rule's entry: split at its first `/` only; `*` before it is
  // every resource, after it every subresource and the resource itself; no `/`, the resource alone.
  const split = (entry: string) => {
    const at = entry.indexOf('/');
    return at < 0 ? [entry, ''] : [entry.slice(0, at), entry.slice(at + 1)];
  };
  const coversResource = (list: string[] | undefined, wanted: string) => {
    const [resource, sub] = split(wanted);
    return (list ?? []).some((entry) => {
      const [r, s] = split(entry);
      return (r === '*' || r === resource) && (s === '*' || s === sub);
    });
  };
  for (const rule of shipped.policy.spec?.matchConstraints?.resourceRules ?? [])
    for (const group of rule.apiGroups ?? [])
      for (const resource of rule.resources ?? [])
        for (const operation of rule.operations ?? [])
          if (
            !(constraints.resourceRules ?? []).some(
              (r) =>
                covers(r.apiGroups, group) &&
                coversResource(r.resources, resource) &&
                covers(r.operations, operation) &&
                covers(r.apiVersions, '*') &&
                (r.scope === undefined || r.scope === '*') &&
                // A rule naming its objects applies to those alone.
                (r.resourceNames ?? []).length === 0,
            )
          )
            return `its matchConstraints do not match ${operation} of ${resource}`;
  const resources = found.binding.spec?.matchResources;
  if (
    resources &&
    ((!options.namespaceSelector && !empty(resources.namespaceSelector)) ||
      !empty(resources.objectSelector) ||
      (resources.resourceRules ?? []).length > 0 ||
      (resources.excludeResourceRules ?? []).length > 0)
  )
    return 'its binding narrows the resources it applies to (matchResources)';
  return undefined;
}

/** Whether the API server refused the identity (401, 403) rather than failing to answer. */
export const refusedByServer = (error: unknown) =>
  error instanceof ApiException && (error.code === 401 || error.code === 403);

/** The API server's own words for a failed request. */
export function apiMessage(error: unknown): string {
  if (!(error instanceof ApiException)) return messageOf(error);
  const body: unknown = typeof error.body === 'string' ? safeJson(error.body) : error.body;
  const message = (body as { message?: unknown } | undefined)?.message;
  return typeof message === 'string' ? message : `HTTP ${error.code}`;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return { message: text };
  }
}
