import type { Cluster, Nodegroup } from '@aws-sdk/client-eks';
import type { ObservedCluster } from '../../core/model/observedCluster.ts';

/**
 * An EKS cluster and its managed node groups as an ObservedCluster. `account` and `region` are the
 * scope's; the ARN is the provider id. A cluster still being created has no endpoint yet.
 */
export function mapEksCluster(
  cluster: Cluster,
  nodegroups: Nodegroup[],
  account: string,
  region: string,
): ObservedCluster {
  const vpc = cluster.resourcesVpcConfig;
  const visibility = vpc?.endpointPublicAccess === false && vpc.endpointPrivateAccess ? 'private' : 'public';
  const scaling = nodegroups.map((group) => group.scalingConfig).filter((c) => c !== undefined);
  const autoscales = scaling.some((c) => c.minSize !== c.maxSize);
  const sum = (values: Array<number | undefined>) => values.reduce<number>((a, b) => a + (b ?? 0), 0);
  const sizes = nodegroups
    .map((group) => group.scalingConfig?.desiredSize)
    .filter((size): size is number => typeof size === 'number');
  return {
    provider: 'eks',
    providerId: cluster.arn ?? '',
    name: cluster.name ?? '',
    account,
    region,
    endpoints: cluster.endpoint ? [{ url: cluster.endpoint.replace(/\/+$/, ''), visibility }] : [],
    ...(cluster.certificateAuthority?.data
      ? { certificateAuthorityData: cluster.certificateAuthority.data }
      : {}),
    ...(cluster.version ? { kubernetesVersion: cluster.version } : {}),
    ...(cluster.platformVersion ? { platformVersion: cluster.platformVersion } : {}),
    health: {
      status: cluster.status ?? '',
      issues: (cluster.health?.issues ?? []).map((issue) => ({
        code: issue.code ?? 'Unknown',
        message: issue.message ?? '',
      })),
    },
    nodes: {
      ...(sizes.length > 0 ? { count: sizes.reduce((a, b) => a + b, 0) } : {}),
      instanceTypes: nodegroups.flatMap((group) => group.instanceTypes ?? []),
      ...(autoscales
        ? {
            autoscaling: { min: sum(scaling.map((c) => c.minSize)), max: sum(scaling.map((c) => c.maxSize)) },
          }
        : {}),
    },
    tags: { ...cluster.tags },
    ...(cluster.createdAt ? { createdAt: new Date(cluster.createdAt).toISOString() } : {}),
  };
}
