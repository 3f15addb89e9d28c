import type { ClusterProfile } from './model/clusterProfile.ts';
import { profileKey } from './model/clusterProfile.ts';
import type { FieldChange, Plan } from './plan.ts';
import type { Hub } from './ports.ts';

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
}

export interface ApplyResult {
  applied: AppliedChange[];
  failed: ApplyFailure[];
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

function createdChanges(profile: ClusterProfile): FieldChange[] {
  return [{ field: 'metadata.name', after: profile.metadata.name }];
}

/**
 * Applies a plan item by item: objects before status, errors collected per profile rather than
 * stopping at the first. A profile whose object write failed gets no status write.
 */
export async function applyPlan(hub: Hub, plan: Plan): Promise<ApplyResult> {
  const result: ApplyResult = { applied: [], failed: [] };
  for (const { profile } of plan.creates) {
    try {
      await hub.applyObject(profile);
      const stored = await hub.applyStatus(profile);
      result.applied.push({ kind: 'created', profile: stored, changes: createdChanges(profile) });
    } catch (error) {
      result.failed.push({ kind: 'created', key: profileKey(profile.metadata), error: asError(error) });
    }
  }
  for (const update of plan.updates) {
    try {
      let stored = update.current;
      if (update.writeObject) stored = await hub.applyObject(update.profile);
      if (update.writeStatus) stored = await hub.applyStatus(update.profile);
      const previous = update.current.metadata.resourceVersion;
      result.applied.push({
        kind: 'updated',
        profile: stored,
        changes: update.changes,
        ...(previous ? { previousResourceVersion: previous } : {}),
      });
    } catch (error) {
      result.failed.push({
        kind: 'updated',
        key: profileKey(update.profile.metadata),
        error: asError(error),
      });
    }
  }
  for (const { current } of plan.deletes) {
    try {
      const { namespace, name, resourceVersion } = current.metadata;
      await hub.delete(resourceVersion ? { namespace, name, resourceVersion } : { namespace, name });
      result.applied.push({
        kind: 'deleted',
        profile: current,
        changes: [{ field: 'metadata.name', before: name }],
      });
    } catch (error) {
      result.failed.push({ kind: 'deleted', key: profileKey(current.metadata), error: asError(error) });
    }
  }
  return result;
}
