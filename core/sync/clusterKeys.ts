/** What a cluster is known by among its account's: its chase's key and its share of the account's lease. */
import { ALL_REGIONS, scopeKey } from '../domain/model/scope.ts';
import { foldCase } from '../domain/naming.ts';
import type { ClusterRef } from './ports.ts';

/**
 * The region of `ref`'s scope that is part of what names its cluster: an EKS cluster's (its name is unique in
 * its region only); none for a GKE or AKS cluster, named by its location or resource group within its project or
 * subscription whichever scope found it (a webhook's event says `*`, `--scope gke/<project>/<region>` a region).
 */
function namingRegion(ref: ClusterRef): string {
  return ref.scope.provider === 'eks' ? ref.scope.region : ALL_REGIONS;
}

/**
 * `cluster`'s key, for one chase per cluster: an AKS cluster's resource group and name in ASCII lower case, as
 * ARM compares them (Event Grid and the Activity Log may spell them otherwise than the listing), and the same
 * whatever region its scope names where that region does not name the cluster.
 */
export function clusterKey(ref: ClusterRef): string {
  const scope = { ...ref.scope, region: namingRegion(ref) };
  const key = [scopeKey(scope), ref.location ?? ref.resourceGroup, ref.name].filter(Boolean).join('/');
  return ref.scope.provider === 'aks' ? foldCase(key) : key;
}

/**
 * What names one cluster among its account's (its share of the account's lease): ASCII case aside for AKS, as
 * Azure ignores it (EKS tells `Orders` from `orders`), and the same whatever region its scope names where that
 * region does not name the cluster.
 */
export function clusterShare(ref: ClusterRef): string {
  const share = [namingRegion(ref), ref.location ?? '', ref.resourceGroup ?? '', ref.name].join('/');
  return ref.scope.provider === 'aks' ? foldCase(share) : share;
}
