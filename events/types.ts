import type { ClusterProfile } from '../core/domain/model/clusterProfile.ts';
import type { Provider } from '../core/domain/model/observedCluster.ts';
import type { ScopeFailureReason, ScopeOutcomeKind } from '../core/domain/model/scope.ts';
import type { DetailType } from './detailTypes.ts';

export interface EventScope {
  provider: Provider;
  account: string;
  region: string;
}

interface DetailBase {
  schemaVersion: string;
  /** Deterministic: the same change published again carries the same id. */
  eventId: string;
  syncId: string;
  occurredAt: string;
  scope: EventScope;
}

/** What the events of a scope's sync carry beside the sync's own id. */
interface RunPart {
  /**
   * The run the sync was part of (since 1.6): every scope of one scheduled full sync (one scope enumerator
   * invocation) carries the same one, each with a `syncId` of its own. Absent when the sync was a run of its
   * own, which its `syncId` names: group by `runId ?? syncId` to tell one run.
   */
  runId?: string;
}

export interface EventFieldChange {
  field: string;
  before?: unknown;
  after?: unknown;
}

/** Detail of ClusterProfile Created / Updated / Deleted. */
export interface ProfileChangeDetail extends DetailBase, RunPart {
  namespace: string;
  name: string;
  /**
   * The profile's uid and, after the change (for Deleted, before it), its resourceVersion in the hub
   * (since 1.3): which object and version the event is of, even when the profile is left out for size.
   */
  uid?: string;
  resourceVersion?: string;
  cluster: {
    provider: Provider;
    region: string;
    displayName: string;
    providerId: string;
    account: string;
    /** The profile's `multicluster.x-k8s.io/inventory-member-id` (since 1.4): the same on every profile of the cluster. */
    inventoryMemberId?: string;
  };
  /** Flat list of the fields that changed, for EventBridge patterns (e.g. `status.version.kubernetes`). */
  changedFields: string[];
  changes: EventFieldChange[];
  /** The profile as written; absent for Deleted, or when it would make the event too large. */
  profile?: ClusterProfile;
  /** True when the profile was left out for size. */
  profileOmitted?: boolean;
  /**
   * How many changes were left out for size (since 1.3): `changes` and `changedFields` hold the first
   * ones only, without values; the profile as it is now is in the hub.
   */
  changesOmitted?: number;
}

/** Detail of Inventory Scope Synced. */
export interface ScopeSyncedDetail extends DetailBase, RunPart {
  outcome: ScopeOutcomeKind;
  counts: {
    listed: number;
    created: number;
    updated: number;
    deleted: number;
    unchanged: number;
    failed: number;
    invalid: number;
  };
  durationMs: number;
  missing?: string[];
  error?: { reason: ScopeFailureReason | 'HubError' | 'InvalidCluster'; message: string };
  /**
   * Each optional feature's state over the scope's profiles after the sync: `desired` as configured,
   * `actual` `turning-off` while `profiles` of the scope still carry what it wrote, and how many do.
   */
  features?: Record<
    string,
    { desired: 'on' | 'off'; actual: 'on' | 'off' | 'turning-off'; profiles: number }
  >;
}

/**
 * Profiles of a scope the configuration no longer covers: kept (never deleted for being absent from the
 * configuration), announced by every full sync while they are there.
 */
export interface ScopeOrphanedDetail extends DetailBase {
  /** How many profiles of the scope are left. */
  profiles: number;
  /** Their names (namespace/name), the first 100. */
  names: string[];
}

/**
 * Detail of ClusterProfile Announced: a profile as it is in the hub now, re-announced on demand
 * (`cpsync announce`) so that a subscriber can rebuild its state. Not a change.
 */
export interface ProfileAnnouncedDetail extends DetailBase {
  namespace: string;
  name: string;
  cluster: ProfileChangeDetail['cluster'];
  /** The profile's resourceVersion in the hub when it was announced. */
  resourceVersion: string;
  /** The profile as it is; absent only when it would make the event too large. */
  profile?: ClusterProfile;
  profileOmitted?: boolean;
}

/**
 * Detail of Consumer Access Granted / Revoked (the `accessGrants` feature): a grant cpsync made on a cluster for
 * a consumer of the inventory, or took back.
 */
export interface ConsumerAccessDetail extends DetailBase, RunPart {
  /** The consumer's name in the configuration. */
  consumer: string;
  /** The identity granted (an IAM role ARN, a Google principal, an Entra object id). */
  identity: string;
  /** The level granted (Granted only). */
  level?: 'view' | 'edit' | 'admin';
  cluster: ProfileChangeDetail['cluster'];
  message: string;
}

/** The detail of each detail-type. */
export interface DetailOf {
  'ClusterProfile Created': ProfileChangeDetail;
  'ClusterProfile Updated': ProfileChangeDetail;
  'ClusterProfile Deleted': ProfileChangeDetail;
  'ClusterProfile Announced': ProfileAnnouncedDetail;
  'Inventory Scope Synced': ScopeSyncedDetail;
  'Inventory Scope Orphaned': ScopeOrphanedDetail;
  'Consumer Access Granted': ConsumerAccessDetail;
  'Consumer Access Revoked': ConsumerAccessDetail;
}

/** Any detail cpsync publishes. */
export type AnyDetail = DetailOf[DetailType];

/**
 * One event as EventBridge delivers it to a subscriber (rule target, archive replay, SQS body):
 * a union discriminated by `detail-type`.
 */
export type CpsyncEventBridgeEvent = {
  [T in DetailType]: {
    version: string;
    id: string;
    'detail-type': T;
    source: string;
    account: string;
    time: string;
    region: string;
    resources: string[];
    detail: DetailOf[T];
    'replay-name'?: string;
  };
}[DetailType];

/** One event as cpsync hands it to a bus. */
export interface CpsyncEvent<D = AnyDetail> {
  source: string;
  detailType: DetailType;
  detail: D;
  /** Resources the event is about (the provider id), as EventBridge carries them. */
  resources: string[];
  time: string;
}
