/** Reading the inventory: the manager's profiles in every inventory namespace, and orphaned scopes as reports carry them. */
import { type OrphanScope } from '../domain/orphans.ts';
import { profileProblem } from '../domain/model/validate.ts';
import type { InventoryOptions } from '../domain/options.ts';
import type { Hub, MalformedObject } from './ports.ts';
import { ANNOTATION_PROVIDER_ID, LABEL_CLUSTER_MANAGER } from '../domain/constants.ts';
import type { ClusterProfile } from '../domain/model/clusterProfile.ts';
import { profileKey } from '../domain/model/clusterProfile.ts';
import { inventoryNamespaces } from '../domain/options.ts';
import type { OrphanReport } from './types.ts';

/** An orphaned scope as reports carry it: the names of its profiles, and their provider ids (what a prune deletes). */
export function orphanReport(orphan: OrphanScope): OrphanReport {
  return {
    scope: orphan.scope,
    names: orphan.profiles.map((p) => profileKey(p.metadata)).sort(),
    providerIds: orphan.profiles
      .map((p) => p.metadata.annotations?.[ANNOTATION_PROVIDER_ID] ?? '')
      .filter((id) => id !== ''),
  };
}

/**
 * The manager's well-formed profiles in every inventory namespace, and the objects there that are not
 * (left out, named).
 */
export async function inventoryProfiles(
  hub: Hub,
  options: InventoryOptions,
): Promise<{ profiles: ClusterProfile[]; malformed: MalformedObject[] }> {
  const profiles: ClusterProfile[] = [];
  const malformed: MalformedObject[] = [];
  for (const namespace of inventoryNamespaces(options))
    for (const profile of await hub.list(namespace.name, { [LABEL_CLUSTER_MANAGER]: options.manager })) {
      const problem = profileProblem(profile);
      if (problem)
        malformed.push({ namespace: namespace.name, name: String(profile.metadata?.name), reason: problem });
      else profiles.push(profile);
    }
  malformed.push(...(hub.malformed?.() ?? []));
  return { profiles, malformed };
}
