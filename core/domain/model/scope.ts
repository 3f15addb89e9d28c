import type { Provider } from './observedCluster.ts';

/** `region` value of a scope that lists every region/location of its account at once. */
export const ALL_REGIONS = '*';

/** One (provider, account/project/subscription, region-or-all) listing: the unit of completeness. */
export interface Scope {
  provider: Provider;
  account: string;
  /** A region, or `*` for every region of the account. */
  region: string;
}

export type ScopeOutcomeKind = 'complete' | 'partial' | 'failed';

export type ScopeFailureReason =
  | 'AccessDenied'
  | 'ApiNotEnabled'
  | 'NotRegistered'
  | 'Throttled'
  | 'Timeout'
  | 'NotFound'
  | 'InvalidResponse'
  /** Another run was applying the same account (its lease was held beyond the wait). */
  | 'Busy'
  /** The run was stopped (SIGINT, SIGTERM) before the scope finished. */
  | 'Interrupted'
  | 'Unknown';

export interface ScopeOutcome {
  scope: Scope;
  kind: ScopeOutcomeKind;
  /** For `partial`: what was not listed (e.g. GKE `missingZones`). */
  missing?: string[];
  /** For `failed`: the classified reason and the provider's message. */
  failure?: { reason: ScopeFailureReason; message: string };
}

export function scopeKey(scope: Scope): string {
  return `${scope.provider}/${scope.account}/${scope.region}`;
}
