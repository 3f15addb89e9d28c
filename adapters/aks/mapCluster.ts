import type { ManagedCluster } from '@azure/arm-containerservice';
import type { ObservedCluster, ObservedEndpoint } from '../../core/model/observedCluster.ts';

/** The resource group of an ARM resource id (`/subscriptions/s/resourceGroups/<rg>/providers/...`). */
export function resourceGroupOf(id: string): string | undefined {
  return /\/resourceGroups\/([^/]+)\//i.exec(id)?.[1];
}

function endpoints(cluster: ManagedCluster): ObservedEndpoint[] {
  const found: ObservedEndpoint[] = [];
  if (cluster.fqdn) found.push({ url: `https://${cluster.fqdn}:443`, visibility: 'public' });
  if (cluster.privateFqdn) found.push({ url: `https://${cluster.privateFqdn}:443`, visibility: 'private' });
  return found;
}

/** An AKS managed cluster (as the SDK returns it) as an ObservedCluster of `subscription`. */
export function mapAksCluster(
  cluster: ManagedCluster,
  subscription: string,
  certificateAuthorityData?: string,
): ObservedCluster {
  const id = cluster.id ?? '';
  const pools = cluster.agentPoolProfiles ?? [];
  const counts = pools
    .map((pool) => pool.count)
    .filter((count): count is number => typeof count === 'number');
  const error = cluster.status?.provisioningError;
  const autoscales = pools.some((pool) => pool.enableAutoScaling);
  const bound = (pick: 'minCount' | 'maxCount') =>
    pools.reduce((sum, pool) => sum + ((pool.enableAutoScaling ? pool[pick] : pool.count) ?? 0), 0);
  const resourceGroup = resourceGroupOf(id);
  const version = cluster.currentKubernetesVersion || cluster.kubernetesVersion;
  return {
    provider: 'aks',
    providerId: id,
    name: cluster.name ?? '',
    account: subscription,
    region: cluster.location ?? '',
    ...(resourceGroup ? { resourceGroup } : {}),
    endpoints: endpoints(cluster),
    ...(certificateAuthorityData ? { certificateAuthorityData } : {}),
    ...(version ? { kubernetesVersion: version } : {}),
    health: {
      status: cluster.provisioningState ?? '',
      ...(cluster.powerState?.code ? { powerState: cluster.powerState.code } : {}),
      issues: error ? [{ code: error.code ?? 'ProvisioningError', message: error.message ?? '' }] : [],
    },
    nodes: {
      ...(counts.length > 0 ? { count: counts.reduce((a, b) => a + b, 0) } : {}),
      instanceTypes: pools.map((pool) => pool.vmSize ?? '').filter(Boolean),
      ...(autoscales ? { autoscaling: { min: bound('minCount'), max: bound('maxCount') } } : {}),
    },
    tags: { ...(cluster.tags ?? {}) },
    ...(cluster.systemData?.createdAt
      ? { createdAt: new Date(cluster.systemData.createdAt).toISOString() }
      : {}),
  };
}
