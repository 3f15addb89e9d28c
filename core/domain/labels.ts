import { LABEL_ACCOUNT, LABEL_CLUSTER_MANAGER, LABEL_PROVIDER, LABEL_REGION } from './constants.ts';
import { ALL_REGIONS, type Scope } from './model/scope.ts';

const LABEL_VALUE_MAX = 63;
const VALID_LABEL_VALUE = /^(?:[A-Za-z0-9](?:[A-Za-z0-9._-]{0,61}[A-Za-z0-9])?)?$/;
/** The name part of a label key: 1-63 characters, alphanumeric at both ends, `-_.` inside. */
const LABEL_NAME = /^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$/;
/** A DNS-1123 subdomain (the prefix of a label key): lower-case labels joined by dots, at most 253 characters. */
const DNS_SUBDOMAIN = /^[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*$/;
const DNS_SUBDOMAIN_MAX = 253;

/** Whether `value` is a valid label value (empty, or 1-63 characters, alphanumeric at both ends, `-_.` inside). */
export function isLabelValue(value: string): boolean {
  return VALID_LABEL_VALUE.test(value);
}

/**
 * Whether `key` is a valid label key, as the API server checks it (a qualified name): `[<prefix>/]<name>`,
 * the prefix a DNS-1123 subdomain of at most 253 characters, the name 1-63 characters, alphanumeric at both
 * ends, `-_.` inside.
 */
export function isLabelKey(key: string): boolean {
  const parts = key.split('/');
  if (parts.length > 2) return false;
  const name = parts.at(-1)!;
  const prefix = parts.length === 2 ? parts[0]! : undefined;
  if (
    prefix !== undefined &&
    (prefix.length === 0 || prefix.length > DNS_SUBDOMAIN_MAX || !DNS_SUBDOMAIN.test(prefix))
  )
    return false;
  return LABEL_NAME.test(name);
}

/**
 * A valid label value for any provider string (regions, account ids, project ids): characters outside
 * `[A-Za-z0-9._-]` become `-`, cut to 63, trimmed to start and end alphanumeric.
 */
export function labelValue(value: string): string {
  // Most values (regions, account ids, tags) are valid already: one test instead of three passes.
  if (VALID_LABEL_VALUE.test(value)) return value;
  return value
    .replace(/[^A-Za-z0-9._-]+/g, '-')
    .slice(0, LABEL_VALUE_MAX)
    .replace(/^[^A-Za-z0-9]+|[^A-Za-z0-9]+$/g, '');
}

/** The labels that select every profile a scope of this manager may own. */
export function scopeSelector(manager: string, scope: Scope): Record<string, string> {
  const selector: Record<string, string> = {
    [LABEL_CLUSTER_MANAGER]: manager,
    [LABEL_PROVIDER]: scope.provider,
    [LABEL_ACCOUNT]: labelValue(scope.account),
  };
  if (scope.region !== ALL_REGIONS) selector[LABEL_REGION] = labelValue(scope.region);
  return selector;
}

export function matchesSelector(
  labels: Record<string, string> | undefined,
  selector: Record<string, string>,
): boolean {
  return Object.entries(selector).every(([key, value]) => labels?.[key] === value);
}

/** `k=v,k2=v2` form of a selector, as the Kubernetes API takes it. */
export function selectorString(selector: Record<string, string>): string {
  return Object.entries(selector)
    .map(([key, value]) => `${key}=${value}`)
    .join(',');
}
