import type { ManagedCluster } from '@azure/arm-containerservice';
import type { ObservedCluster, ObservedEndpoint } from '../../core/domain/model/observedCluster.ts';
import { arr, isoTime, num, obj, str, strings } from '../shared/read.ts';
import { foldCase } from '../../core/domain/naming.ts';

/** The resource group of an ARM resource id (`/subscriptions/s/resourceGroups/<rg>/providers/...`). */
export function resourceGroupOf(id: string): string | undefined {
  return /\/resourceGroups\/([^/]+)\//i.exec(id)?.[1];
}

/** An AKS cluster's subscription, resource group and name, from its resource id (its provider id). */
export function aksClusterOfId(
  providerId: string,
): { subscription: string; resourceGroup: string; name: string } | undefined {
  const match =
    /^\/subscriptions\/([^/]+)\/resourcegroups\/([^/]+)\/providers\/microsoft\.containerservice\/managedclusters\/([^/]+)$/i.exec(
      providerId,
    );
  return match ? { subscription: match[1]!, resourceGroup: match[2]!, name: match[3]! } : undefined;
}

function endpoints(cluster: Record<string, unknown>): ObservedEndpoint[] {
  const found: ObservedEndpoint[] = [];
  const fqdn = str(cluster.fqdn);
  const privateFqdn = str(cluster.privateFqdn);
  if (fqdn) found.push({ url: `https://${fqdn}:443`, visibility: 'public' });
  if (privateFqdn) found.push({ url: `https://${privateFqdn}:443`, visibility: 'private' });
  return found;
}

/** An AKS managed cluster (as the SDK returns it) as an ObservedCluster of `subscription`. Never throws. */
export function mapAksCluster(cluster: ManagedCluster, subscription: string): ObservedCluster {
  const c = obj(cluster);
  const id = str(c.id) ?? '';
  const pools = arr(c.agentPoolProfiles).map(obj);
  const counts = pools.map((pool) => num(pool.count)).filter((n): n is number => n !== undefined);
  // What runs: nothing in a stopped cluster, nothing in a stopped pool (each keeps its configured count).
  const stopped = (state: unknown) => str(obj(state).code)?.toLowerCase() === 'stopped';
  const running = stopped(c.powerState)
    ? 0
    : pools.reduce((sum, pool) => sum + (stopped(pool.powerState) ? 0 : (num(pool.count) ?? 0)), 0);
  const configured = counts.reduce((a, b) => a + b, 0);
  const error = obj(obj(c.status).provisioningError);
  const resourceGroup = resourceGroupOf(id);
  const version = str(c.currentKubernetesVersion) || str(c.kubernetesVersion);
  const powerState = str(obj(c.powerState).code);
  const autoscales = pools.some((pool) => pool.enableAutoScaling === true);
  const bound = (pick: 'minCount' | 'maxCount') =>
    pools.reduce(
      (sum, pool) => sum + ((pool.enableAutoScaling === true ? num(pool[pick]) : num(pool.count)) ?? 0),
      0,
    );
  const createdAt = isoTime(obj(c.systemData).createdAt);
  const tenantId = str(obj(c.aadProfile).tenantID);
  return {
    provider: 'aks',
    providerId: id,
    name: str(c.name) ?? '',
    account: subscription,
    region: str(c.location) ?? '',
    ...(resourceGroup ? { resourceGroup } : {}),
    ...(tenantId ? { tenantId } : {}),
    endpoints: endpoints(c),
    ...(version ? { kubernetesVersion: version } : {}),
    health: {
      status: str(c.provisioningState) ?? '',
      ...(powerState ? { powerState } : {}),
      issues:
        Object.keys(error).length > 0
          ? [{ code: str(error.code) ?? 'ProvisioningError', message: str(error.message) ?? '' }]
          : [],
    },
    nodes: {
      ...(counts.length > 0 ? { count: running } : {}),
      ...(counts.length > 0 && running !== configured ? { configured } : {}),
      instanceTypes: pools.map((pool) => str(pool.vmSize)).filter((t): t is string => !!t),
      ...(autoscales ? { autoscaling: { min: bound('minCount'), max: bound('maxCount') } } : {}),
    },
    tags: strings(c.tags),
    ...(createdAt ? { createdAt } : {}),
  };
}

/** Whether `providerId` is the resource id of the managed cluster `name` in `subscription`'s `resourceGroup` (ASCII case aside, as ARM compares ids: `foldCase`). */
export function isAksResourceId(
  providerId: string,
  subscription: string,
  resourceGroup: string,
  name: string,
): boolean {
  return (
    foldCase(providerId) ===
    foldCase(
      `/subscriptions/${subscription}/resourcegroups/${resourceGroup}/providers/microsoft.containerservice/managedclusters/${name}`,
    )
  );
}
