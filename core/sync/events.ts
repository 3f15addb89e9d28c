import { createHash } from 'node:crypto';
import type { AppliedChange, EventContext } from './changes.ts';
import { canonicalJson } from '../domain/json.ts';
import {
  ANNOTATION_PROVIDER_ID,
  LABEL_ACCOUNT,
  LABEL_INVENTORY_MEMBER_ID,
  LABEL_PROVIDER,
  LABEL_REGION,
} from '../domain/constants.ts';
import type { ClusterProfile } from '../domain/model/clusterProfile.ts';
import type { Provider } from '../domain/model/observedCluster.ts';
import type { ScopeOutcome } from '../domain/model/scope.ts';
import { DEFAULT_SOURCE, DetailType, MAX_DETAIL_BYTES, SCHEMA_VERSION } from '../../events/detailTypes.ts';
import { fitText } from '../domain/properties.ts';
import { cut } from '../domain/text.ts';
import type { GrantAction } from './grants.ts';
import type {
  ConsumerAccessDetail,
  CpsyncEvent,
  EventFieldChange,
  ProfileAnnouncedDetail,
  ProfileChangeDetail,
  ScopeOrphanedDetail,
  ScopeSyncedDetail,
} from '../../events/types.ts';

/** A UUID-shaped id hashed from `parts`: the same parts always give the same id. */
function deterministicId(...parts: unknown[]): string {
  const hex = createHash('sha256').update(canonicalJson(parts)).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

const DETAIL_TYPE_OF = {
  created: DetailType.Created,
  updated: DetailType.Updated,
  deleted: DetailType.Deleted,
} as const;

/** The fields every detail starts with. */
function detailBase(context: EventContext, eventId: string) {
  return {
    schemaVersion: SCHEMA_VERSION,
    eventId,
    syncId: context.syncId,
    ...(context.runId ? { runId: context.runId } : {}),
    occurredAt: context.occurredAt,
    scope: context.scope,
  };
}

/** An event as a bus takes it. */
function envelope<D>(
  detailType: DetailType,
  detail: D,
  context: EventContext,
  resources: string[] = [],
): CpsyncEvent<D> {
  return {
    source: context.source ?? DEFAULT_SOURCE,
    detailType,
    detail,
    resources,
    time: context.occurredAt,
  };
}

/** The longest field path a change keeps once values are left out (paths hold label keys and property names). */
const MAX_FIELD_CHARS = 1024;

function bytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value), 'utf8');
}

/** The cluster a profile is of, as its labels and annotations say. */
function clusterOf(profile: ClusterProfile, context: EventContext): ProfileChangeDetail['cluster'] {
  const labels = profile.metadata.labels ?? {};
  return {
    provider: (labels[LABEL_PROVIDER] ?? context.scope.provider) as Provider,
    region: labels[LABEL_REGION] ?? '',
    account: labels[LABEL_ACCOUNT] ?? context.scope.account,
    displayName: profile.spec?.displayName ?? '',
    providerId: profile.metadata.annotations?.[ANNOTATION_PROVIDER_ID] ?? '',
    ...(labels[LABEL_INVENTORY_MEMBER_ID] ? { inventoryMemberId: labels[LABEL_INVENTORY_MEMBER_ID] } : {}),
  };
}

/**
 * The event for one change applied to the hub. Its id is a function of the change itself: the
 * object's identity (namespace, name, uid) and, for an update, the version it was made from and the
 * fields it changed. The same change announced again — after a retry, by recovery, or by a second run
 * that made it at the same moment — has the same id, so subscribers can de-duplicate.
 */
export function buildChangeEvent(
  change: AppliedChange,
  context: EventContext,
): CpsyncEvent<ProfileChangeDetail> {
  const profile: ClusterProfile = change.profile;
  const { namespace, name, uid } = profile.metadata;
  const providerId = profile.metadata.annotations?.[ANNOTATION_PROVIDER_ID] ?? '';
  const detailType = DETAIL_TYPE_OF[change.kind];
  // A creation or deletion happens once per object (uid); an update, once per version it starts from.
  const identity =
    change.kind === 'updated'
      ? [detailType, namespace, name, uid ?? '', change.previousResourceVersion ?? '', change.changes]
      : [detailType, namespace, name, uid ?? ''];
  const detail: ProfileChangeDetail = {
    ...detailBase(context, deterministicId(...identity)),
    namespace,
    name,
    ...(uid ? { uid } : {}),
    ...(profile.metadata.resourceVersion ? { resourceVersion: profile.metadata.resourceVersion } : {}),
    cluster: clusterOf(profile, context),
    changedFields: [...new Set(change.changes.map((c) => c.field))],
    changes: change.changes,
    ...(change.kind === 'deleted' ? {} : { profile }),
  };
  return envelope(detailType, fitChangeDetail(detail), context, providerId ? [providerId] : []);
}

/**
 * A change detail cut to MAX_DETAIL_BYTES, each step only when the one before was not enough: the
 * profile left out (`profileOmitted`); the changes' values left out; then the changes cut to the first
 * that fit, with `changedFields` cut to theirs and `changesOmitted` saying how many were left out. The
 * detail always keeps its first change, its identity and its cluster; the profile is in the hub.
 */
function fitChangeDetail(detail: ProfileChangeDetail): ProfileChangeDetail {
  if (bytes(detail) <= MAX_DETAIL_BYTES) return detail;
  const fitted: ProfileChangeDetail = { ...detail };
  if (fitted.profile) {
    delete fitted.profile;
    fitted.profileOmitted = true;
  }
  if (bytes(fitted) <= MAX_DETAIL_BYTES) return fitted;
  fitted.changes = fitted.changes.map((c) => ({ field: fitText(c.field, MAX_FIELD_CHARS) }));
  fitted.changedFields = [...new Set(fitted.changes.map((c) => c.field))];
  if (bytes(fitted) <= MAX_DETAIL_BYTES) return fitted;
  // Each change kept costs its entry in `changes` and (when new) in `changedFields`.
  const budget = MAX_DETAIL_BYTES - bytes({ ...fitted, changes: [], changedFields: [], changesOmitted: 0 });
  const kept: EventFieldChange[] = [];
  const fields = new Set<string>();
  let used = 0;
  for (const change of fitted.changes) {
    const cost = bytes(change) + 1 + (fields.has(change.field) ? 0 : bytes(change.field) + 1);
    if (kept.length > 0 && used + cost > budget - 16) break;
    kept.push(change);
    fields.add(change.field);
    used += cost;
  }
  const omitted = fitted.changes.length - kept.length;
  return {
    ...fitted,
    changes: kept,
    changedFields: [...fields],
    ...(omitted > 0 ? { changesOmitted: omitted } : {}),
  };
}

export interface ScopeSummary {
  outcome: ScopeOutcome;
  counts: ScopeSyncedDetail['counts'];
  durationMs: number;
  error?: ScopeSyncedDetail['error'];
  /** Each feature's state over the scope's profiles (absent when the scope was not planned). */
  features?: ScopeSyncedDetail['features'];
}

/** The one `Inventory Scope Synced` event of a scope in a run. */
export function buildScopeEvent(
  summary: ScopeSummary,
  context: EventContext,
): CpsyncEvent<ScopeSyncedDetail> {
  const { outcome } = summary;
  const error =
    summary.error ??
    (outcome.failure ? { reason: outcome.failure.reason, message: outcome.failure.message } : undefined);
  const missing = outcome.missing && outcome.missing.length > 0 ? outcome.missing.slice(0, 100) : undefined;
  const said = error ? { reason: error.reason, message: cut(error.message, 2000) } : undefined;
  // The same summary published again keeps its id; another summary of the scope in the same sync (a retried scope,
  // the queue's next delivery of its message, says how it went then) is another event, not a duplicate to drop.
  const eventId = deterministicId(DetailType.ScopeSynced, context.syncId, context.scope, {
    outcome: outcome.kind,
    counts: summary.counts,
    missing: missing ?? [],
    error: said ?? null,
  });
  const detail: ScopeSyncedDetail = {
    ...detailBase(context, eventId),
    outcome: outcome.kind,
    counts: summary.counts,
    durationMs: summary.durationMs,
    ...(missing ? { missing } : {}),
    ...(said ? { error: said } : {}),
    ...(summary.features ? { features: summary.features } : {}),
  };
  return envelope(DetailType.ScopeSynced, detail, context);
}

/** The `Inventory Scope Orphaned` event of one orphaned scope (the context's) in a run. */
export function buildOrphanEvent(
  names: readonly string[],
  context: EventContext,
): CpsyncEvent<ScopeOrphanedDetail> {
  const detail: ScopeOrphanedDetail = {
    // As a scope's summary: the same report keeps its id, another of the scope in the same sync is another event.
    ...detailBase(
      context,
      deterministicId(
        DetailType.ScopeOrphaned,
        context.syncId,
        context.scope,
        names.length,
        names.slice(0, 100),
      ),
    ),
    profiles: names.length,
    names: names.slice(0, 100),
  };
  return envelope(DetailType.ScopeOrphaned, detail, context);
}

/**
 * The `ClusterProfile Announced` event of a profile as it is now (`cpsync announce`). Its id is a function
 * of the announcement (`context.syncId`) and the profile's identity and version, so publishing one
 * announcement again gives the same ids, and a new announcement new ones.
 */
export function buildAnnounceEvent(
  profile: ClusterProfile,
  context: EventContext,
): CpsyncEvent<ProfileAnnouncedDetail> {
  const { namespace, name, uid, resourceVersion = '' } = profile.metadata;
  const cluster = clusterOf(profile, context);
  const detail: ProfileAnnouncedDetail = {
    ...detailBase(
      context,
      deterministicId(DetailType.Announced, context.syncId, namespace, name, uid ?? '', resourceVersion),
    ),
    namespace,
    name,
    cluster,
    resourceVersion,
    profile,
  };
  if (bytes(detail) > MAX_DETAIL_BYTES) {
    delete detail.profile;
    detail.profileOmitted = true;
  }
  return envelope(DetailType.Announced, detail, context, cluster.providerId ? [cluster.providerId] : []);
}

/**
 * The `Consumer Access Granted` or `Revoked` event of a grant cpsync made or took back (the `accessGrants`
 * feature). Its id is a function of the run, the cluster, the consumer and the identity.
 */
export function buildAccessEvent(
  action: GrantAction,
  context: EventContext,
): CpsyncEvent<ConsumerAccessDetail> {
  const detailType = action.action === 'grant' ? DetailType.AccessGranted : DetailType.AccessRevoked;
  const cluster = clusterOf(action.profile, context);
  const detail: ConsumerAccessDetail = {
    ...detailBase(
      context,
      deterministicId(detailType, context.syncId, action.providerId, action.consumer, action.identity),
    ),
    consumer: action.consumer,
    identity: action.identity,
    ...(action.level ? { level: action.level } : {}),
    cluster,
    message: fitText(action.message, 1000),
  };
  return envelope(detailType, detail, context, cluster.providerId ? [cluster.providerId] : []);
}
