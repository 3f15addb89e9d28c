/** Reading the inventory: the manager's profiles in every inventory namespace, and orphaned scopes as reports carry them. */
import { findOrphans, type OrphanScope } from '../domain/orphans.ts';
import { profileProblem } from '../domain/model/validate.ts';
import type { InventoryOptions } from '../domain/options.ts';
import { labelsOf, type Hub, type MalformedObject } from './ports.ts';
import {
  ANNOTATION_PROVIDER_ID,
  LABEL_ACCOUNT,
  LABEL_CLUSTER_MANAGER,
  LABEL_PROVIDER,
  LABEL_REGION,
} from '../domain/constants.ts';
import type { Provider } from '../domain/model/observedCluster.ts';
import type { Scope } from '../domain/model/scope.ts';
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

/**
 * The manager's profiles no configured scope covers, by scope, as `findOrphans` finds them in the whole
 * inventory. Only labels tell a profile's scope, so every profile's labels are listed and only the orphaned
 * scopes' profiles are read whole (and, as in `inventoryProfiles`, the malformed ones left out): a run whose
 * scopes are all configured reads no profile here.
 */
export async function inventoryOrphans(
  hub: Pick<Hub, 'list' | 'listLabels'>,
  options: InventoryOptions,
  configured: readonly Scope[],
  determined: ReadonlySet<Provider>,
): Promise<OrphanScope[]> {
  const manager = { [LABEL_CLUSTER_MANAGER]: options.manager };
  const orphans: ClusterProfile[] = [];
  for (const { name: namespace } of inventoryNamespaces(options)) {
    const labelled = (await labelsOf(hub, namespace, manager)).map(({ labels }) => ({
      metadata: { labels },
    }));
    for (const { scope } of findOrphans(labelled, configured, determined)) {
      // The labels as the profiles carry them (findOrphans takes its scope from them, unchanged).
      const selector = {
        ...manager,
        [LABEL_PROVIDER]: scope.provider,
        [LABEL_ACCOUNT]: scope.account,
        [LABEL_REGION]: scope.region,
      };
      for (const profile of await hub.list(namespace, selector))
        if (!profileProblem(profile)) orphans.push(profile);
    }
  }
  // Judged again from the profiles as read: a profile changed since its labels were listed is judged as it is now.
  return findOrphans(orphans, configured, determined);
}
