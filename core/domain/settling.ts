/**
 * Readings that will change by themselves: the cloud is creating, updating, deleting, starting or
 * stopping the cluster (or one of its node groups). A profile written from such a reading is looked at again until it settles.
 */
import type { ObservedCluster, Provider } from './model/observedCluster.ts';

/** Each cloud's states in change, as its API spells them (upper-cased; GKE also by number). */
const IN_CHANGE: Readonly<Record<Provider, ReadonlySet<string>>> = {
  // EKS `status`.
  eks: new Set(['CREATING', 'UPDATING', 'DELETING', 'PENDING']),
  // GKE `status`: PROVISIONING (1), RECONCILING (3), STOPPING (4).
  gke: new Set(['PROVISIONING', 'RECONCILING', 'STOPPING', '1', '3', '4']),
  // AKS `provisioningState`.
  aks: new Set([
    'CREATING',
    'UPDATING',
    'UPGRADING',
    'SCALING',
    'DELETING',
    'STARTING',
    'STOPPING',
    'MIGRATING',
  ]),
};
const GKE_NAMES: Readonly<Record<string, string>> = {
  '1': 'PROVISIONING',
  '3': 'RECONCILING',
  '4': 'STOPPING',
};

/**
 * The state in change a reading shows (`EKS CREATING`, `GKE RECONCILING`, `AKS Upgrading`, or a node
 * group's: `EKS node group workers UPDATING`), or undefined when the cluster and its node groups are
 * settled (running, stopped, failed, or in a state no table knows).
 */
export function settlingState(cluster: ObservedCluster): string | undefined {
  const status = cluster.health.status.trim();
  const key = status.toUpperCase();
  const provider = cluster.provider.toUpperCase();
  if (IN_CHANGE[cluster.provider].has(key))
    return `${provider} ${cluster.provider === 'gke' ? (GKE_NAMES[key] ?? key) : status}`;
  const group = cluster.nodes.inChange?.[0];
  return group ? `${provider} node group ${group}` : undefined;
}
