/**
 * A hub writer's claim on cpsync's fields: a profile written back (a PUT) with entries added to its
 * `metadata.managedFields` (copies of cpsync's own under another manager), which the admission policy does not see.
 */
import type { CustomObjectsApi, V1ManagedFieldsEntry } from '@kubernetes/client-node';
import {
  CLUSTER_PROFILE_GROUP,
  CLUSTER_PROFILE_PLURAL,
  CLUSTER_PROFILE_VERSION,
  type ClusterProfile,
} from '../../core/domain/model/clusterProfile.ts';

/** A profile as the API server gives it, its managedFields included. */
export type ManagedProfile = ClusterProfile & { metadata: { managedFields?: V1ManagedFieldsEntry[] } };

/** cpsync's own entries of `profile` (`status`: its status's alone), copied as an Update of `manager`. */
export function cpsyncEntriesAs(
  profile: ManagedProfile,
  manager: string,
  which: 'all' | 'status' = 'all',
): V1ManagedFieldsEntry[] {
  return (profile.metadata.managedFields ?? [])
    .filter((e) => e.manager === 'cpsync' && (which === 'all' || e.subresource === 'status'))
    .map((e) => ({ ...e, manager, operation: 'Update' }));
}

/** Writes `current` back through `objects` (whoever they authenticate as) with `claims` added to its managedFields. */
export function writeClaims(
  objects: CustomObjectsApi,
  current: ManagedProfile,
  claims: readonly V1ManagedFieldsEntry[],
): Promise<unknown> {
  const { namespace, name } = current.metadata;
  return objects.replaceNamespacedCustomObject({
    group: CLUSTER_PROFILE_GROUP,
    version: CLUSTER_PROFILE_VERSION,
    plural: CLUSTER_PROFILE_PLURAL,
    namespace: namespace!,
    name,
    body: {
      ...current,
      metadata: {
        ...current.metadata,
        managedFields: [...(current.metadata.managedFields ?? []), ...claims],
      },
    },
  });
}
