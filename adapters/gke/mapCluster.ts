import type { protos } from '@google-cloud/container';
import type { ObservedCluster, ObservedEndpoint } from '../../core/domain/model/observedCluster.ts';
import { arr, isoTime, num, obj, str, strings } from '../shared/read.ts';

type Cluster = protos.google.container.v1.ICluster;
type Json = Record<string, unknown>;

/** A zone is a region plus `-<letter>` (us-central1-a); a region has no such suffix. */
const ZONE = /^(.+-[a-z]+\d+)-[a-z]$/;

const present = (value: unknown): value is string => typeof value === 'string' && value !== '';

function url(address: string): string {
  return /^https?:\/\//.test(address) ? address : `https://${address}`;
}

function endpoints(cluster: Json): ObservedEndpoint[] {
  const privateConfig = obj(cluster.privateClusterConfig);
  const ip = obj(obj(cluster.controlPlaneEndpointsConfig).ipEndpointsConfig);
  const dns = obj(obj(cluster.controlPlaneEndpointsConfig).dnsEndpointConfig);
  const found: ObservedEndpoint[] = [];
  const privateOnly = privateConfig.enablePrivateEndpoint === true || ip.enablePublicEndpoint === false;
  const privateAddress = [privateConfig.privateEndpoint, ip.privateEndpoint].find(present);
  const publicAddress = [
    ip.publicEndpoint,
    privateConfig.publicEndpoint,
    privateOnly ? undefined : cluster.endpoint,
  ].find(present);
  if (publicAddress && !privateOnly) found.push({ url: url(publicAddress), visibility: 'public' });
  if (privateAddress) found.push({ url: url(privateAddress), visibility: 'private' });
  else if (privateOnly && present(cluster.endpoint))
    found.push({ url: url(cluster.endpoint), visibility: 'private' });
  if (present(dns.endpoint))
    found.push({
      url: url(dns.endpoint),
      visibility: dns.allowExternalTraffic === true ? 'public' : 'private',
    });
  return found;
}

function zonesOf(pool: Json): number {
  return Math.max(1, arr(pool.locations).length);
}

function nodeCount(cluster: Json, pools: Json[]): number | undefined {
  const current = num(cluster.currentNodeCount);
  if (current !== undefined && current > 0) return current;
  if (pools.length === 0) return current;
  return pools.reduce((sum, pool) => sum + (num(pool.initialNodeCount) ?? 0) * zonesOf(pool), 0);
}

/** Bounds of the node count over all pools, when some pool autoscales (per-zone limits × the pool's zones). */
function autoscaling(pools: Json[]): { min: number; max: number } | undefined {
  if (!pools.some((pool) => obj(pool.autoscaling).enabled === true)) return undefined;
  let min = 0;
  let max = 0;
  for (const pool of pools) {
    const a = obj(pool.autoscaling);
    if (a.enabled === true) {
      min += num(a.totalMinNodeCount) || (num(a.minNodeCount) ?? 0) * zonesOf(pool);
      max += num(a.totalMaxNodeCount) || (num(a.maxNodeCount) ?? 0) * zonesOf(pool);
    } else {
      const fixed = (num(pool.initialNodeCount) ?? 0) * zonesOf(pool);
      min += fixed;
      max += fixed;
    }
  }
  return { min, max };
}

/** A GKE cluster (REST JSON as the client returns it) as an ObservedCluster of `project`. Never throws. */
export function mapGkeCluster(cluster: Cluster, project: string): ObservedCluster {
  const c = obj(cluster);
  const location = str(c.location) || str(c.zone) || '';
  const zonal = ZONE.exec(location);
  const pools = arr(c.nodePools).map(obj);
  const count = nodeCount(c, pools);
  const bounds = autoscaling(pools);
  const name = str(c.name) ?? '';
  const ca = str(obj(c.masterAuth).clusterCaCertificate);
  const version = str(c.currentMasterVersion);
  const createdAt = isoTime(c.createTime);
  return {
    provider: 'gke',
    providerId:
      str(c.selfLink) ||
      `https://container.googleapis.com/v1/projects/${project}/locations/${location}/clusters/${name}`,
    name,
    account: project,
    region: zonal ? zonal[1]! : location,
    ...(zonal ? { zone: location } : {}),
    endpoints: endpoints(c),
    ...(ca ? { certificateAuthorityData: ca } : {}),
    ...(version ? { kubernetesVersion: version } : {}),
    health: {
      status: str(c.status) ?? '',
      issues: arr(c.conditions).map((condition) => {
        const x = obj(condition);
        return { code: str(x.code) || str(x.canonicalCode) || 'UNKNOWN', message: str(x.message) ?? '' };
      }),
    },
    nodes: {
      ...(count !== undefined ? { count } : {}),
      instanceTypes: pools.map((pool) => str(obj(pool.config).machineType)).filter(present),
      ...(bounds ? { autoscaling: bounds } : {}),
    },
    tags: strings(c.resourceLabels),
    ...(createdAt ? { createdAt } : {}),
  };
}

/** The GCP project a GKE cluster's selfLink (its provider id) names. */
export function projectOfSelfLink(providerId: string): string {
  const project = /\/projects\/([^/]+)\//.exec(providerId)?.[1];
  if (!project) throw new Error(`not a GKE cluster id: ${providerId}`);
  return project;
}

/**
 * Whether `providerId` is the selfLink of the cluster `name` of `project` at `location` (`zones/` and
 * `locations/` spellings alike). Exactly: GKE's names, projects and locations are lowercase, and a name spelled
 * otherwise is no cluster of GKE's, never another spelling of one (only Azure's ids ignore case).
 */
export function isGkeSelfLink(providerId: string, project: string, location: string, name: string): boolean {
  const kind = providerId.includes('/zones/') ? 'zones' : 'locations';
  return providerId.endsWith(`/projects/${project}/${kind}/${location}/clusters/${name}`);
}
