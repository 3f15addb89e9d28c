/**
 * The plan of one scope (`plan` below): what to create, update and delete so the hub matches the scope's
 * listing, with each field that changes. One file because the diff of a profile (object and status apart, kept
 * times, keyed lists) and the rules of deletion (grace listings, confirmed gone, placement) decide one plan
 * together, and it is pure: its property tests drive it whole.
 */
import {
  ANNOTATION_DELETED_AT,
  ANNOTATION_PROVIDER_ID,
  CONDITION_CONTROL_PLANE_HEALTHY,
  CONDITION_JOINED,
  HealthReason,
  JoinedReason,
  LABEL_CLUSTER_MANAGER,
  LABEL_PROJECTED_FROM,
  PROPERTY_MISSED_LISTINGS,
} from './constants.ts';
import { sameJson } from './json.ts';
import { canonicalProviderId, sameProviderId } from './naming.ts';
import { deletedByCpsync, ownedMetadata, ownedStatusOf } from './ownership.ts';
import { matchesSelector, scopeSelector } from './labels.ts';
import { listingSpeaksFor } from './scopes.ts';
import {
  profileKey,
  type AccessProvider,
  type ClusterProfile,
  type ClusterProfileStatus,
  type Condition,
  type Property,
} from './model/clusterProfile.ts';
import type { ScopeOutcome } from './model/scope.ts';

/** One field that differs between the hub and the clouds; `before`/`after` absent when the field is. */
export interface FieldChange {
  /** e.g. `spec.displayName`, `status.version.kubernetes`, `status.properties[count.node.k8s.io]`. */
  field: string;
  before?: unknown;
  after?: unknown;
}

export interface PlannedCreate {
  profile: ClusterProfile;
  /** The status fields the create's status write sets (as an update of the new object would name them). */
  statusChanges: FieldChange[];
}

export interface PlannedUpdate {
  /** The whole owned state to apply, times kept from the hub where nothing changed. */
  profile: ClusterProfile;
  current: ClusterProfile;
  changes: FieldChange[];
  /** Labels, annotations or spec changed: apply the object. */
  writeObject: boolean;
  /** Status changed: apply the status subresource. */
  writeStatus: boolean;
}

/**
 * `NotPlacedHere`: the cluster is listed, but its profile no longer belongs in this namespace (a namespace
 * rule sends it elsewhere, or a projection no longer copies it here).
 */
export type DeleteReason = 'MissingFromListings' | 'ConfirmedNotFound' | 'NotPlacedHere' | 'NoLongerCovered';

export interface PlannedDelete {
  current: ClusterProfile;
  reason: DeleteReason;
}

/**
 * Why a desired profile is not written: the name is another manager's; the stored object is malformed; the
 * stored profile (of this manager) is of another cloud cluster, whose name this one's collides with; every
 * name the cluster may be given is held by something else (core/sync/names.ts).
 */
export type SkipReason =
  'OwnedByAnotherManager' | 'Malformed' | 'ProviderIdConflict' | 'Terminating' | 'NameUnavailable';

export interface Skipped {
  namespace: string;
  name: string;
  reason: SkipReason;
  detail: string;
}

export interface Plan {
  outcome: ScopeOutcome;
  creates: PlannedCreate[];
  updates: PlannedUpdate[];
  deletes: PlannedDelete[];
  skipped: Skipped[];
  /** Profiles that already match the clouds: no write. */
  unchanged: number;
  /**
   * The clusters a complete listing did not show: by canonical provider id, the listings in a row that have not
   * shown each, this one counted (what the absence store keeps). Those at the grace are deleted, and keep their count
   * until their profiles are gone (a deletion that does not land is tried again at the next listing).
   */
  missed: Map<string, { providerId: string; missed: number }>;
}

export interface PlanInput {
  /** How the listing of the scope ended; only `complete` may lead to deletion by absence. */
  outcome: ScopeOutcome;
  /** Profiles normalized from what the scope listed. */
  desired: readonly ClusterProfile[];
  /** Profiles the hub holds for the scope (others in the same namespaces may be included; they are left alone). */
  current: readonly ClusterProfile[];
  manager: string;
  /** Consecutive complete listings a cluster may be missing from before its profile is deleted. */
  deletionGraceListings: number;
  /**
   * By canonical provider id, the complete listings in a row that did not show each cluster before this one, as
   * cpsync's own store counted them (never the hub's `missed-listings` property, which is shown, not read back).
   */
  missedBefore: ReadonlyMap<string, number>;
  /** Names of the access provider entries cpsync writes (the others are someone else's). */
  accessProviderNames: readonly string[];
  /** Stamp for conditions and properties that change in this plan. */
  now: string;
  /** Provider ids the provider has confirmed gone (answered not found): deleted at once. */
  confirmedGone?: ReadonlySet<string>;
  /** Provider ids of profiles no configured scope covers, pruned: deleted at once (`NoLongerCovered`). */
  pruned?: ReadonlySet<string>;
}

function isManagedBy(profile: ClusterProfile, manager: string): boolean {
  return (
    profile.metadata.labels?.[LABEL_CLUSTER_MANAGER] === manager &&
    profile.spec?.clusterManager?.name === manager
  );
}

/** Keep the hub's times where the value (property) or status (condition) did not change. */
function keepTimes(
  desired: ClusterProfileStatus,
  current: ClusterProfileStatus | undefined,
): ClusterProfileStatus {
  const currentProps = new Map((current?.properties ?? []).map((p) => [p.name, p]));
  const currentConds = new Map((current?.conditions ?? []).map((c) => [c.type, c]));
  return {
    ...desired,
    properties: desired.properties?.map((p): Property => {
      const before = currentProps.get(p.name);
      return before?.value === p.value && before.lastObservedTime
        ? { ...p, lastObservedTime: before.lastObservedTime }
        : p;
    }),
    conditions: desired.conditions?.map((c): Condition => {
      const before = currentConds.get(c.type);
      return before?.status === c.status && before.lastTransitionTime
        ? { ...c, lastTransitionTime: before.lastTransitionTime }
        : c;
    }),
  };
}

function diffKeyed<T>(
  field: string,
  before: readonly T[],
  after: readonly T[],
  key: (item: T) => string,
  comparable: (item: T) => unknown,
): FieldChange[] {
  const beforeMap = new Map(before.map((item) => [key(item), item]));
  const afterMap = new Map(after.map((item) => [key(item), item]));
  const changes: FieldChange[] = [];
  for (const name of [...new Set([...beforeMap.keys(), ...afterMap.keys()])].sort()) {
    const b = beforeMap.get(name);
    const a = afterMap.get(name);
    const bv = b === undefined ? undefined : comparable(b);
    const av = a === undefined ? undefined : comparable(a);
    if (!sameJson(bv, av))
      changes.push({ field: `${field}[${name}]`, ...(b ? { before: bv } : {}), ...(a ? { after: av } : {}) });
  }
  return changes;
}

function diffRecord(
  field: string,
  before: Record<string, string>,
  after: Record<string, string>,
): FieldChange[] {
  const changes: FieldChange[] = [];
  for (const key of [...new Set([...Object.keys(before), ...Object.keys(after)])].sort()) {
    if (before[key] !== after[key]) {
      changes.push({
        field: `${field}[${key}]`,
        ...(before[key] !== undefined ? { before: before[key] } : {}),
        ...(after[key] !== undefined ? { after: after[key] } : {}),
      });
    }
  }
  return changes;
}

function diffValue(field: string, before: unknown, after: unknown): FieldChange[] {
  if (sameJson(before, after)) return [];
  return [{ field, ...(before !== undefined ? { before } : {}), ...(after !== undefined ? { after } : {}) }];
}

const conditionView = (c: Condition) => ({ status: c.status, reason: c.reason, message: c.message });

/** Field-by-field changes of the owned metadata and spec. */
function objectChanges(current: ClusterProfile, desired: ClusterProfile): FieldChange[] {
  return [
    ...diffRecord(
      'metadata.labels',
      ownedMetadata(current.metadata).labels,
      ownedMetadata(desired.metadata).labels,
    ),
    ...diffRecord(
      'metadata.annotations',
      ownedMetadata(current.metadata).annotations,
      ownedMetadata(desired.metadata).annotations,
    ),
    ...diffValue('spec.displayName', current.spec?.displayName, desired.spec.displayName),
    ...diffValue(
      'spec.clusterManager.name',
      current.spec?.clusterManager?.name,
      desired.spec.clusterManager.name,
    ),
  ];
}

/** Field-by-field changes of the owned status (times ignored). */
function statusChanges(
  current: ClusterProfile,
  desired: ClusterProfile,
  accessProviderNames: readonly string[],
): FieldChange[] {
  const before = ownedStatusOf(current.status, accessProviderNames);
  const after = ownedStatusOf(desired.status, accessProviderNames);
  return [
    ...diffValue('status.version.kubernetes', before.version?.kubernetes, after.version?.kubernetes),
    ...diffKeyed(
      'status.properties',
      before.properties,
      after.properties,
      (p) => p.name,
      (p) => p.value,
    ),
    ...diffKeyed('status.conditions', before.conditions, after.conditions, (c) => c.type, conditionView),
    ...diffKeyed(
      'status.accessProviders',
      before.accessProviders,
      after.accessProviders,
      (a: AccessProvider) => a.name,
      (a) => a.cluster,
    ),
  ];
}

/** Owned metadata without cpsync's deletion mark: one a deletion that did not go through left is not kept. */
function withoutDeletionMark(metadata: ReturnType<typeof ownedMetadata>): ReturnType<typeof ownedMetadata> {
  const { [ANNOTATION_DELETED_AT]: _mark, ...annotations } = metadata.annotations;
  return { ...metadata, annotations };
}

/**
 * The profile's owned state with Joined=False/NotFoundInProvider, ControlPlaneHealthy=Unknown (a cluster
 * the provider no longer lists is not known to be healthy: consumers that engage healthy clusters let it
 * go), and the miss count raised to `missed`. Both conditions come back from the listing once it is
 * listed again.
 */
function markMissing(current: ClusterProfile, missed: number, input: PlanInput): ClusterProfile {
  const owned = ownedStatusOf(current.status, input.accessProviderNames);
  const s = missed === 1 ? '' : 's';
  const joined: Condition = {
    type: CONDITION_JOINED,
    status: 'False',
    reason: JoinedReason.NotFoundInProvider,
    message: `Not listed by the provider in ${missed} consecutive complete listing${s}; deleted after ${input.deletionGraceListings}`,
    lastTransitionTime: input.now,
  };
  const properties = [
    ...owned.properties.filter((p) => p.name !== PROPERTY_MISSED_LISTINGS),
    { name: PROPERTY_MISSED_LISTINGS, value: String(missed), lastObservedTime: input.now },
  ].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const previousHealth = owned.conditions.find((c) => c.type === CONDITION_CONTROL_PLANE_HEALTHY);
  const health: Condition = {
    type: CONDITION_CONTROL_PLANE_HEALTHY,
    status: 'Unknown',
    reason: HealthReason.NotFoundInProvider,
    message: `Not listed by the provider in ${missed} consecutive complete listing${s}: its control plane's health is not known`,
    // The time it became Unknown, kept while it stays so.
    lastTransitionTime:
      previousHealth?.status === 'Unknown' && previousHealth.lastTransitionTime
        ? previousHealth.lastTransitionTime
        : input.now,
  };
  const conditions = [
    ...owned.conditions.filter(
      (c) => c.type !== CONDITION_JOINED && c.type !== CONDITION_CONTROL_PLANE_HEALTHY,
    ),
    health,
    joined,
  ];
  return {
    apiVersion: current.apiVersion,
    kind: current.kind,
    metadata: {
      name: current.metadata.name,
      namespace: current.metadata.namespace,
      ...withoutDeletionMark(ownedMetadata(current.metadata)),
    },
    spec: { ...current.spec },
    status: { ...owned, properties, conditions },
  };
}

/**
 * `wanted` with the provider id as the profile on the hub spells it, when the cloud now spells the same id
 * otherwise (an Azure id in another ASCII case): the id a profile is of never changes (the hub's admission
 * policy refuses that), and it is the same cluster.
 */
function keptProviderId(current: ClusterProfile, wanted: ClusterProfile, input: PlanInput): ClusterProfile {
  const storedId = current.metadata.annotations?.[ANNOTATION_PROVIDER_ID];
  const wantedId = wanted.metadata.annotations?.[ANNOTATION_PROVIDER_ID];
  if (
    storedId === undefined ||
    wantedId === undefined ||
    storedId === wantedId ||
    !sameProviderId(input.outcome.scope.provider, storedId, wantedId)
  )
    return wanted;
  return {
    ...wanted,
    metadata: {
      ...wanted.metadata,
      annotations: { ...wanted.metadata.annotations, [ANNOTATION_PROVIDER_ID]: storedId },
    },
  };
}

function planUpdate(
  current: ClusterProfile,
  wanted: ClusterProfile,
  input: PlanInput,
): PlannedUpdate | undefined {
  const profile: ClusterProfile = {
    ...keptProviderId(current, wanted, input),
    status: keepTimes(wanted.status ?? {}, current.status),
  };
  const object = objectChanges(current, profile);
  const status = statusChanges(current, profile, input.accessProviderNames);
  if (object.length === 0 && status.length === 0) return undefined;
  return {
    profile,
    current,
    changes: [...object, ...status],
    writeObject: object.length > 0,
    writeStatus: status.length > 0,
  };
}

/**
 * What to create, update and delete so the hub matches one scope's listing (SPEC §3).
 * - Profiles of another cluster manager are never updated or deleted, even on a name clash.
 * - A profile missing from a `complete` listing is first marked Joined=False/NotFoundInProvider and
 *   deleted once it has been missing from `deletionGraceListings` consecutive complete listings, as cpsync's own
 *   store counts them (`missedBefore`): what the hub's status says of them is never read back.
 * - `partial` and `failed` listings never delete and never mark missing.
 * - A profile whose cluster the provider confirmed gone is deleted at once.
 * - A profile of a listed cluster in a namespace its placement no longer names (a namespace rule or a
 *   projection changed) is deleted at once: the cluster's profile lives on where it is placed now.
 * - A profile being deleted (another controller's finalizer holds it) is never written; one cpsync deleted is
 *   neither deleted again nor counted; one another writer deleted is counted, and deleted by cpsync in turn when it
 *   would delete it. Its cluster, listed again, gets a new profile once it is gone.
 * Pure: the same input always gives the same plan.
 */
export function plan(input: PlanInput): Plan {
  const result: Plan = {
    outcome: input.outcome,
    creates: [],
    updates: [],
    deletes: [],
    skipped: [],
    unchanged: 0,
    missed: new Map(),
  };
  const selector = scopeSelector(input.manager, input.outcome.scope);
  const current = new Map(input.current.map((p) => [profileKey(p.metadata), p]));
  const desiredKeys = new Set<string>();
  /** Provider ids of the clusters whose own profile (not a projected copy) the plan keeps written where placed now. */
  const placed = new Set<string>();
  /** Provider ids of the clusters the listing showed: some profile of each is wanted (a copy, if nothing else). */
  const listed = new Set<string>();

  for (const wanted of input.desired) {
    const key = profileKey(wanted.metadata);
    const existing = current.get(key);
    const providerId = wanted.metadata.annotations?.[ANNOTATION_PROVIDER_ID];
    // A profile of this manager under the same name, made for another cloud cluster: never written over.
    const storedId = existing?.metadata.annotations?.[ANNOTATION_PROVIDER_ID];
    const collides =
      existing !== undefined &&
      isManagedBy(existing, input.manager) &&
      storedId !== undefined &&
      providerId !== undefined &&
      !sameProviderId(input.outcome.scope.provider, storedId, providerId);
    if (providerId !== undefined)
      listed.add(canonicalProviderId({ provider: input.outcome.scope.provider, providerId }));
    if (
      providerId !== undefined &&
      !collides &&
      (existing === undefined || isManagedBy(existing, input.manager)) &&
      // A copy stands for its cluster only beside its own profile: placed alone, the cluster has none.
      wanted.metadata.labels?.[LABEL_PROJECTED_FROM] === undefined
    )
      placed.add(canonicalProviderId({ provider: input.outcome.scope.provider, providerId }));
    // A collision leaves the stored profile to its own cluster (kept while listed, deleted once it is gone).
    if (!collides) desiredKeys.add(key);
    if (collides) {
      result.skipped.push({
        ...wanted.metadata,
        reason: 'ProviderIdConflict',
        detail: `${key} is the profile of ${storedId}; ${providerId} has the same name and is not written over it`,
      });
    } else if (existing === undefined) {
      result.creates.push({
        profile: wanted,
        statusChanges: statusChanges({ ...wanted, status: undefined }, wanted, input.accessProviderNames),
      });
    } else if (existing.metadata.deletionTimestamp !== undefined) {
      // Being deleted, held by another controller's finalizer: never written to (a write would fail every
      // run); the cluster's profile is created again once the old one is gone.
      const holders = (existing.metadata.finalizers ?? []).join(', ') || 'finalizers';
      result.skipped.push({
        ...wanted.metadata,
        reason: 'Terminating',
        detail: deletedByCpsync(existing)
          ? `${key} is being deleted, held by ${holders}; created again once it is gone`
          : `${key} of a listed cluster was deleted by another writer, and is held by ${holders}; created again once it is gone`,
      });
    } else if (!isManagedBy(existing, input.manager)) {
      result.skipped.push({
        ...wanted.metadata,
        reason: 'OwnedByAnotherManager',
        detail: `${key} is managed by ${JSON.stringify(existing.spec?.clusterManager?.name ?? existing.metadata.labels?.[LABEL_CLUSTER_MANAGER] ?? 'unknown')}`,
      });
    } else {
      const update = planUpdate(existing, wanted, input);
      if (update) result.updates.push(update);
      else result.unchanged += 1;
    }
  }

  for (const [key, existing] of current) {
    if (
      desiredKeys.has(key) ||
      !isManagedBy(existing, input.manager) ||
      !matchesSelector(existing.metadata.labels, selector) ||
      // Deleted by cpsync already, waiting for another controller's finalizer: not deleted (nor announced) again.
      // One another writer deleted is deleted by cpsync in turn (marked as its own) when cpsync would delete it.
      deletedByCpsync(existing)
    )
      continue;
    const terminating = existing.metadata.deletionTimestamp !== undefined;
    const providerId = existing.metadata.annotations?.[ANNOTATION_PROVIDER_ID];
    if (providerId !== undefined && input.confirmedGone?.has(providerId)) {
      result.deletes.push({ current: existing, reason: 'ConfirmedNotFound' });
      continue;
    }
    if (providerId !== undefined && input.pruned?.has(providerId)) {
      result.deletes.push({ current: existing, reason: 'NoLongerCovered' });
      continue;
    }
    const id = providerId && canonicalProviderId({ provider: input.outcome.scope.provider, providerId });
    // A listed cluster whose own profile is written where it is placed now: this one is no longer wanted here (any
    // listing).
    if (id && placed.has(id)) {
      result.deletes.push({ current: existing, reason: 'NotPlacedHere' });
      continue;
    }
    // A listed cluster whose own profile cannot be written where it is placed now (its name there held by another):
    // what it has in its old places stays, as it is, until it can be.
    if (id && listed.has(id)) {
      result.unchanged += 1;
      continue;
    }
    if (input.outcome.kind !== 'complete') continue;
    // A listing says which clusters of its own account and region are gone, no others: a profile the scope's
    // labels select whose id is another scope's (label values cut or rewritten into one), or that has no id of
    // the provider's, or (AKS, in a listing of one location) whose id places it in no region, is neither marked
    // missing nor deleted by it.
    if (!providerId || !id || !listingSpeaksFor(providerId, input.outcome.scope)) continue;
    const missed = (input.missedBefore.get(id) ?? 0) + 1;
    result.missed.set(id, { providerId, missed });
    if (missed >= input.deletionGraceListings) {
      result.deletes.push({ current: existing, reason: 'MissingFromListings' });
      continue;
    }
    // A profile being deleted is never written to: its count is kept all the same.
    const update = !terminating && planUpdate(existing, markMissing(existing, missed, input), input);
    if (update) result.updates.push(update);
    else result.unchanged += 1;
  }
  return result;
}
