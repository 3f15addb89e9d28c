/**
 * EventBridge event patterns for cpsync's events, typed: `patterns.changed({ fields: ['status.version.kubernetes'],
 * provider: 'eks' })` is the pattern of a rule that receives only Kubernetes version changes of EKS
 * clusters. Each builder returns the pattern as EventBridge takes it (`PutRule`'s `EventPattern` is its
 * JSON); `Cpsync.onProfileChange` and `CpsyncSubscription` take it as it is.
 */
import type { Provider } from '../core/domain/model/observedCluster.ts';
import type { ScopeOutcomeKind } from '../core/domain/model/scope.ts';
import { DEFAULT_SOURCE, DetailType } from './detailTypes.ts';

type OneOrMany<T> = T | readonly T[];

/** An EventBridge event pattern, as JSON. */
export interface EventPattern {
  source: string[];
  'detail-type': string[];
  detail?: Record<string, unknown>;
}

/** Which events of a kind: every field given narrows the pattern; a list matches any of its values. */
export interface ProfileFilter {
  /** The `source` cpsync publishes with. @default 'cpsync' */
  source?: string;
  provider?: OneOrMany<Provider>;
  /** The cluster's region (`us-east-1`, `europe-west1`, `westeurope`). */
  region?: OneOrMany<string>;
  /** The cluster's AWS account, Google project or Azure subscription. */
  account?: OneOrMany<string>;
  /** The hub namespace the profile is in. */
  namespace?: OneOrMany<string>;
}

export interface ChangedFilter extends ProfileFilter {
  /** Updates that changed any of these fields exactly (`status.version.kubernetes`). */
  fields?: readonly string[];
  /** Updates that changed a field starting with any of these (`status.conditions`, `metadata.labels`). */
  fieldPrefixes?: readonly string[];
}

export interface ScopeFilter {
  source?: string;
  provider?: OneOrMany<Provider>;
  account?: OneOrMany<string>;
  region?: OneOrMany<string>;
}

/** Which grants: of these consumers, on clusters of these providers, regions, accounts. */
export interface AccessFilter extends Omit<ProfileFilter, 'namespace'> {
  consumer?: OneOrMany<string>;
}

export interface ScopeSyncedFilter extends ScopeFilter {
  outcome?: OneOrMany<ScopeOutcomeKind>;
}

/** `value` as a non-empty pattern list, or an error naming `option` (EventBridge refuses empty lists). */
function list<T>(option: string, value: OneOrMany<T>): T[] {
  const values = (Array.isArray(value) ? [...(value as readonly T[])] : [value as T]).filter(
    (v) => v !== undefined,
  );
  if (values.length === 0) throw new Error(`pattern option ${option} is an empty list: leave it out instead`);
  for (const v of values)
    if (typeof v !== 'string' || v.length === 0)
      throw new Error(`pattern option ${option} has ${JSON.stringify(v)}: values are non-empty strings`);
  return [...new Set(values)];
}

function base(detailTypes: readonly string[], source: string | undefined): EventPattern {
  return { source: [source ?? DEFAULT_SOURCE], 'detail-type': [...detailTypes] };
}

/** `pattern` with a `detail` of the filters given (none when none is). */
function withDetail(pattern: EventPattern, detail: Record<string, unknown>): EventPattern {
  return Object.keys(detail).length > 0 ? { ...pattern, detail } : pattern;
}

/** `{ [field]: { provider: [...], region: [...], account: [...] } }` for the location filters given; empty when none is. */
function located(field: 'cluster' | 'scope', filter: ScopeFilter): Record<string, unknown> {
  const given = (['provider', 'region', 'account'] as const).filter((key) => filter[key] !== undefined);
  if (given.length === 0) return {};
  return { [field]: Object.fromEntries(given.map((key) => [key, list(key, filter[key]!)])) };
}

function clusterFilter(filter: ProfileFilter): Record<string, unknown> {
  return {
    ...located('cluster', filter),
    ...(filter.namespace !== undefined ? { namespace: list('namespace', filter.namespace) } : {}),
  };
}

function profilePattern(detailTypes: readonly string[], filter: ProfileFilter = {}): EventPattern {
  return withDetail(base(detailTypes, filter.source), clusterFilter(filter));
}

function scopePattern(detailType: string, filter: ScopeFilter, extra: Record<string, unknown> = {}) {
  return withDetail(base([detailType], filter.source), { ...located('scope', filter), ...extra });
}

export const patterns = {
  /** A profile was created: a cluster joined the inventory. */
  created: (filter?: ProfileFilter) => profilePattern([DetailType.Created], filter),
  /** A profile's spec, labels or status changed. */
  updated: (filter?: ProfileFilter) => profilePattern([DetailType.Updated], filter),
  /** A profile was deleted: the cluster is gone (or no longer placed in that namespace). */
  deleted: (filter?: ProfileFilter) => profilePattern([DetailType.Deleted], filter),
  /** Created, Updated and Deleted: every change to the inventory. */
  profileChanges: (filter?: ProfileFilter) =>
    profilePattern([DetailType.Created, DetailType.Updated, DetailType.Deleted], filter),
  /** Created, Updated, Deleted and Announced: what a subscriber mirroring the inventory needs. */
  inventory: (filter?: ProfileFilter) =>
    profilePattern(
      [DetailType.Created, DetailType.Updated, DetailType.Deleted, DetailType.Announced],
      filter,
    ),
  /** Re-announcements of the current inventory (`cpsync announce`). */
  announced: (filter?: ProfileFilter) => profilePattern([DetailType.Announced], filter),
  /** Updates that changed given fields (`changedFields`), exactly or by prefix. */
  changed(filter: ChangedFilter): EventPattern {
    const { fields, fieldPrefixes, ...rest } = filter;
    if (fields === undefined && fieldPrefixes === undefined)
      throw new Error('patterns.changed needs fields or fieldPrefixes (patterns.updated takes every update)');
    const changedFields = [
      ...(fields !== undefined ? list('fields', fields) : []),
      ...(fieldPrefixes !== undefined
        ? list('fieldPrefixes', fieldPrefixes).map((prefix) => ({ prefix }))
        : []),
    ];
    return withDetail(base([DetailType.Updated], rest.source), {
      ...clusterFilter(rest),
      changedFields,
    });
  },
  /** The one summary of each scope in each run; `outcome: 'failed'` for the failures alone. */
  scopeSynced: (filter: ScopeSyncedFilter = {}) =>
    scopePattern(
      DetailType.ScopeSynced,
      filter,
      filter.outcome !== undefined ? { outcome: list('outcome', filter.outcome) } : {},
    ),
  /** Scopes the configuration no longer covers whose profiles are still in the hub. */
  scopeOrphaned: (filter: ScopeFilter = {}) => scopePattern(DetailType.ScopeOrphaned, filter),
  /** Consumers' grants made and taken back (the `accessGrants` feature): an audit trail of who was let in where. */
  access: (filter: AccessFilter = {}) =>
    withDetail(base([DetailType.AccessGranted, DetailType.AccessRevoked], filter.source), {
      ...located('cluster', filter),
      ...(filter.consumer !== undefined ? { consumer: list('consumer', filter.consumer) } : {}),
    }),
} as const;
