/**
 * Whether a profile read from the hub is taken as one cpsync wrote. Anyone allowed to write ClusterProfiles in an
 * inventory namespace can make one that looks like cpsync's (the hub's admission policy, when applied, stops them);
 * the Argo CD subscriber and `cpsync announce` take only a profile whose manager label, `spec.clusterManager.name`
 * and `cpsync.io/provider-id` annotation all say cpsync wrote it. Pure: no I/O.
 */
import { ANNOTATION_PROVIDER_ID, LABEL_CLUSTER_MANAGER } from './constants.ts';
import type { ClusterProfile } from './model/clusterProfile.ts';

/** Why `profile` is not taken as `manager`'s, or undefined when it is. */
export function untrustedReason(profile: ClusterProfile, manager: string): string | undefined {
  const { namespace, name, labels = {}, annotations = {} } = profile.metadata;
  const key = `${namespace}/${name}`;
  const label = labels[LABEL_CLUSTER_MANAGER];
  if (label !== manager)
    return `${key} is not managed by ${manager} (${LABEL_CLUSTER_MANAGER}: ${JSON.stringify(label ?? null)})`;
  const named = profile.spec?.clusterManager?.name;
  if (named !== manager)
    return `${key} is not managed by ${manager} (spec.clusterManager.name: ${JSON.stringify(named ?? null)})`;
  if (!annotations[ANNOTATION_PROVIDER_ID])
    return `${key} has no ${ANNOTATION_PROVIDER_ID} annotation: not a profile ${manager} wrote`;
  return undefined;
}
