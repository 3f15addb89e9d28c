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
import { messageOf } from '../../core/domain/errors.ts';

/** The policy and its binding of one name, each undefined when the cluster has none. */
export interface PolicyOnCluster {
  policy?: V1ValidatingAdmissionPolicy;
  binding?: V1ValidatingAdmissionPolicyBinding;
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
