/**
 * The records the sync layer passes between its parts and keeps in its stores: a change applied to
 * the hub (or one that failed), the context events are made in, and the write-ahead intent of a
 * change about to be made. Data only: no behaviour, nothing imported but domain and contract types.
 */
import type { ClusterProfile } from '../domain/model/clusterProfile.ts';
import type { FieldChange } from '../domain/plan.ts';
import type { EventScope } from '../../events/types.ts';

export type AppliedKind = 'created' | 'updated' | 'deleted';

/** A change that reached the hub. */
export interface AppliedChange {
  kind: AppliedKind;
  /** As stored after the write; for `deleted`, as it was before. */
  profile: ClusterProfile;
  changes: FieldChange[];
  /** For `updated`: the resourceVersion the change was made from. */
  previousResourceVersion?: string;
}

export interface ApplyFailure {
  kind: AppliedKind;
  key: string;
  error: Error;
  /**
   * Set when the object write reached the hub and the status write then failed: the status change
   * that may or may not have reached it (a write that timed out can have), to be settled as an update
   * from the object's version.
   */
  remainder?: { profile: ClusterProfile; previousResourceVersion: string; changes: FieldChange[] };
}

export interface EventContext {
  syncId: string;
  /** The run the sync is part of, when that is not the sync itself (a scheduled run's scope). */
  runId?: string;
  occurredAt: string;
  scope: EventScope;
  /** @default 'cpsync' */
  source?: string;
}

export interface ChangeIntent {
  id: string;
  kind: AppliedKind;
  namespace: string;
  name: string;
  changes: FieldChange[];
  /** Fingerprint of the owned state the change leads to (created: of the object part only). */
  target: string;
  /**
   * For an update of both the object and the status: the fingerprint of the object part alone, so
   * that an object write that reached the hub (its answer lost) is announced even if the status
   * write never happened.
   */
  objectTarget?: string;
  previousResourceVersion?: string;
  /** For deletes: the profile as it was, to announce it. */
  previous?: ClusterProfile;
  context: EventContext;
  /**
   * Until then the intent belongs to a run that may still be going (here or in another process); only
   * later may another run settle it — or sooner, once the run no longer holds `lease`.
   */
  notBefore: string;
  /** The run (its lease holder id) that wrote the intent. */
  holder?: string;
  /** The lease the run held while it applied the change. */
  lease?: string;
  /**
   * When the run gave up waiting for the change's write (it failed or timed out): a write it sent may still land
   * after that, so another run settles the intent no sooner than its settle delay after this time (after
   * `context.occurredAt` when absent: the run stopped before it learnt how the write went).
   */
  givenUpAt?: string;
  /**
   * The intent this one, written when its run gave up on the write, stands for in its place (its id and target, as
   * `givenUp` names them).
   */
  replaces?: string;
}
