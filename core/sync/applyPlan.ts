import type { ClusterProfile } from '../domain/model/clusterProfile.ts';
import { ANNOTATION_PROJECTED_TO, ANNOTATION_PROVIDER_ID } from '../domain/constants.ts';
import { profileKey } from '../domain/model/clusterProfile.ts';
import { canonicalProviderId } from '../domain/naming.ts';
import type { FieldChange, Plan } from '../domain/plan.ts';
import type { Hub } from './ports.ts';
import type { AppliedChange, ApplyFailure } from './changes.ts';

export interface ApplyResult {
  applied: AppliedChange[];
  failed: ApplyFailure[];
  /** Changes not attempted because the run was stopped (`signal`); they did not reach the hub. */
  notAttempted?: number;
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

function createdChanges(profile: ClusterProfile): FieldChange[] {
  return [{ field: 'metadata.name', after: profile.metadata.name }];
}

/**
 * Applies a plan item by item — creates, copies no longer wanted where they are, updates, other deletes;
 * objects before status — errors collected per profile rather than stopping at the first. A profile whose
 * object write failed gets no status write. Once `signal` aborts, the write in flight finishes and no
 * further one is started.
 */
export async function applyPlan(hub: Hub, plan: Plan, signal?: AbortSignal): Promise<ApplyResult> {
  const result: ApplyResult = { applied: [], failed: [] };
  const total = plan.creates.length + plan.updates.length + plan.deletes.length;
  let attempted = 0;
  const stopped = () => {
    if (!signal?.aborted) return ((attempted += 1), false);
    result.notAttempted = total - attempted;
    return true;
  };
  /** Clusters whose profile could not be created where they are placed now: their old copies stay. */
  const notCreated = new Set<string>();
  /** The key a cluster's id is known by: an Azure id in another ASCII case is the same cluster. */
  const idKey = (providerId: string) =>
    canonicalProviderId({ provider: plan.outcome.scope.provider, providerId });
  /** Deletes a planned profile; whether it is gone. */
  const remove = async ({ current, reason }: Plan['deletes'][number]): Promise<boolean> => {
    const providerId = current.metadata.annotations?.[ANNOTATION_PROVIDER_ID];
    if (reason === 'NotPlacedHere' && providerId !== undefined && notCreated.has(idKey(providerId))) {
      result.failed.push({
        kind: 'deleted',
        key: profileKey(current.metadata),
        error: new Error(
          'kept: the profile of its cluster could not be created where it is placed now (see the failed create); deleted once that one exists',
        ),
      });
      return false;
    }
    try {
      const { namespace, name, resourceVersion } = current.metadata;
      await hub.delete(resourceVersion ? { namespace, name, resourceVersion } : { namespace, name });
      result.applied.push({
        kind: 'deleted',
        profile: current,
        changes: [{ field: 'metadata.name', before: name }],
      });
      return true;
    } catch (error) {
      result.failed.push({ kind: 'deleted', key: profileKey(current.metadata), error: asError(error) });
      return false;
    }
  };
  for (const { profile, statusChanges } of plan.creates) {
    if (stopped()) return result;
    const written: WrittenParts = {};
    try {
      const stored = await applyBoth(hub, profile, written);
      result.applied.push({ kind: 'created', profile: stored, changes: createdChanges(profile) });
    } catch (error) {
      // Not whole (no object, or no status): the cluster's old place stays until the new one is.
      const providerId = profile.metadata.annotations?.[ANNOTATION_PROVIDER_ID];
      if (providerId !== undefined) notCreated.add(idKey(providerId));
      // The object exists even if its status write failed: that creation is announced now, the status
      // follows as an update (from the created version) in the next run.
      const created = written.object;
      if (created)
        result.applied.push({ kind: 'created', profile: created, changes: createdChanges(profile) });
      const version = created?.metadata.resourceVersion;
      result.failed.push({
        kind: 'created',
        key: profileKey(profile.metadata),
        error: asError(error),
        ...(version
          ? { remainder: { profile, previousResourceVersion: version, changes: statusChanges } }
          : {}),
      });
    }
  }
  // Copies no longer wanted where they are go before the updates: should one stay (its delete failed), the
  // update that would forget where it is (`cpsync.io/projected-to`) waits too, so the next run finds it again.
  const notRemoved = new Set<string>();
  for (const planned of plan.deletes.filter((d) => d.reason === 'NotPlacedHere')) {
    if (stopped()) return result;
    if (!(await remove(planned))) {
      const providerId = planned.current.metadata.annotations?.[ANNOTATION_PROVIDER_ID];
      if (providerId !== undefined) notRemoved.add(idKey(providerId));
    }
  }
  for (const update of plan.updates) {
    if (stopped()) return result;
    const updatedId = update.profile.metadata.annotations?.[ANNOTATION_PROVIDER_ID];
    if (
      updatedId !== undefined &&
      notRemoved.has(idKey(updatedId)) &&
      update.changes.some((c) => c.field === `metadata.annotations[${ANNOTATION_PROJECTED_TO}]`)
    ) {
      result.failed.push({
        kind: 'updated',
        key: profileKey(update.profile.metadata),
        error: new Error(
          'held back: a copy of this cluster that is no longer wanted could not be deleted; both are retried by the next run',
        ),
      });
      continue;
    }
    const previous = update.current.metadata.resourceVersion;
    const applied = (stored: ClusterProfile, changes: FieldChange[]): AppliedChange => ({
      kind: 'updated',
      profile: stored,
      changes,
      ...(previous ? { previousResourceVersion: previous } : {}),
    });
    const written: WrittenParts = {};
    try {
      let stored = update.current;
      if (update.writeObject && update.writeStatus)
        stored = await applyBoth(hub, update.profile, written, update.current);
      else if (update.writeObject) stored = written.object = await hub.applyObject(update.profile);
      else if (update.writeStatus) stored = await hub.applyStatus(update.profile, update.current);
      result.applied.push(applied(stored, update.changes));
    } catch (error) {
      // What did reach the hub (the object part) is announced; the rest is retried by the next run.
      const objectStored = written.object;
      if (objectStored)
        result.applied.push(
          applied(
            objectStored,
            update.changes.filter((c) => !c.field.startsWith('status.')),
          ),
        );
      const version = objectStored?.metadata.resourceVersion;
      result.failed.push({
        kind: 'updated',
        key: profileKey(update.profile.metadata),
        error: asError(error),
        ...(version && update.writeStatus
          ? {
              remainder: {
                profile: update.profile,
                previousResourceVersion: version,
                changes: update.changes.filter((c) => c.field.startsWith('status.')),
              },
            }
          : {}),
      });
    }
  }
  for (const planned of plan.deletes.filter((d) => d.reason !== 'NotPlacedHere')) {
    if (stopped()) return result;
    await remove(planned);
  }
  return result;
}

/** What reached the hub of a profile written in two parts: its object, once stored. */
interface WrittenParts {
  object?: ClusterProfile;
}

/**
 * Writes a profile's object and status: in one write where the hub can (then nothing is ever half written),
 * else the object then the status, `written.object` set once the object is stored; `before`: as the plan read it.
 */
async function applyBoth(
  hub: Hub,
  profile: ClusterProfile,
  written: WrittenParts,
  before?: ClusterProfile,
): Promise<ClusterProfile> {
  if (hub.applyWhole) return hub.applyWhole(profile);
  written.object = await hub.applyObject(profile);
  return hub.applyStatus(profile, before);
}
