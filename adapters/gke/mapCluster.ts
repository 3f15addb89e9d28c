import type { protos } from '@google-cloud/container';
import type { ObservedCluster, ObservedEndpoint } from '../../core/model/observedCluster.ts';

type Cluster = protos.google.container.v1.ICluster;

/** A zone is a region plus `-<letter>` (us-central1-a); a region has no such suffix. */
const ZONE = /^(.+-[a-z]+\d+)-[a-z]$/;

const present = (value: string | null | undefined): value is string =>
  typeof value === 'string' && value !== '';

function url(address: string): string {
  return /^https?:\/\//.test(address) ? address : `https://${address}`;
}

function endpoints(cluster: Cluster): ObservedEndpoint[] {
  const privateConfig = cluster.privateClusterConfig;
  const ip = cluster.controlPlaneEndpointsConfig?.ipEndpointsConfig;
  const dns = cluster.controlPlaneEndpointsConfig?.dnsEndpointConfig;
  const found: ObservedEndpoint[] = [];
  const privateOnly = privateConfig?.enablePrivateEndpoint === true || ip?.enablePublicEndpoint === false;
  const privateAddress = [privateConfig?.privateEndpoint, ip?.privateEndpoint].find(present);
  const publicAddress = [
    ip?.publicEndpoint,
    privateConfig?.publicEndpoint,
    privateOnly ? undefined : cluster.endpoint,
  ].find(present);
  if (publicAddress && !privateOnly) found.push({ url: url(publicAddress), visibility: 'public' });
  if (privateAddress) found.push({ url: url(privateAddress), visibility: 'private' });
  else if (privateOnly && present(cluster.endpoint))
    found.push({ url: url(cluster.endpoint), visibility: 'private' });
  if (present(dns?.endpoint))
    found.push({ url: url(dns.endpoint), visibility: dns.allowExternalTraffic ? 'public' : 'private' });
  return found;
}

function nodeCount(cluster: Cluster): number | undefined {
  if (typeof cluster.currentNodeCount === 'number' && cluster.currentNodeCount > 0)
    return cluster.currentNodeCount;
  const pools = cluster.nodePools ?? [];
  if (pools.length === 0)
    return typeof cluster.currentNodeCount === 'number' ? cluster.currentNodeCount : undefined;
  return pools.reduce(
    (sum, pool) => sum + Number(pool.initialNodeCount ?? 0) * Math.max(1, (pool.locations ?? []).length),
    0,
  );
}

/** Bounds of the node count over all pools, when some pool autoscales (per-zone limits × the pool's zones). */
function autoscaling(cluster: Cluster): { min: number; max: number } | undefined {
  const pools = cluster.nodePools ?? [];
  if (!pools.some((pool) => pool.autoscaling?.enabled)) return undefined;
  let min = 0;
  let max = 0;
  for (const pool of pools) {
    const zones = Math.max(1, (pool.locations ?? []).length);
    const a = pool.autoscaling;
    if (a?.enabled) {
      min += a.totalMinNodeCount ? Number(a.totalMinNodeCount) : Number(a.minNodeCount ?? 0) * zones;
      max += a.totalMaxNodeCount ? Number(a.totalMaxNodeCount) : Number(a.maxNodeCount ?? 0) * zones;
    } else {
      const fixed = Number(pool.initialNodeCount ?? 0) * zones;
      min += fixed;
      max += fixed;
    }
  }
  return { min, max };
}

/** A GKE cluster (REST JSON as the client returns it) as an ObservedCluster of `project`. */
export function mapGkeCluster(cluster: Cluster, project: string): ObservedCluster {
  const location = cluster.location || cluster.zone || '';
  const zonal = ZONE.exec(location);
  const count = nodeCount(cluster);
  const bounds = autoscaling(cluster);
  return {
    provider: 'gke',
    providerId:
      cluster.selfLink ||
      `https://container.googleapis.com/v1/projects/${project}/locations/${location}/clusters/${cluster.name ?? ''}`,
    name: cluster.name ?? '',
    account: project,
    region: zonal ? zonal[1]! : location,
    ...(zonal ? { zone: location } : {}),
    endpoints: endpoints(cluster),
    ...(present(cluster.masterAuth?.clusterCaCertificate)
      ? { certificateAuthorityData: cluster.masterAuth.clusterCaCertificate }
      : {}),
    ...(present(cluster.currentMasterVersion) ? { kubernetesVersion: cluster.currentMasterVersion } : {}),
    health: {
      status: cluster.status === null || cluster.status === undefined ? '' : String(cluster.status),
      issues: (cluster.conditions ?? []).map((c) => ({
        code: String(c.code || c.canonicalCode || 'UNKNOWN'),
        message: c.message ?? '',
      })),
    },
    nodes: {
      ...(count !== undefined ? { count } : {}),
      instanceTypes: (cluster.nodePools ?? []).map((pool) => pool.config?.machineType ?? '').filter(present),
      ...(bounds ? { autoscaling: bounds } : {}),
    },
    tags: { ...(cluster.resourceLabels ?? {}) },
    ...(present(cluster.createTime) ? { createdAt: new Date(cluster.createTime).toISOString() } : {}),
  };
}
