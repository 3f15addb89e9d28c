import type { Cluster, Nodegroup } from '@aws-sdk/client-eks';
import type { ObservedCluster } from '../../core/domain/model/observedCluster.ts';
import { EKS_CLUSTER_ARN } from '../../core/domain/scopes.ts';
import { arr, isoTime, num, obj, str, strings } from '../shared/read.ts';

/** EKS managed node group states the cloud moves on from by itself. */
const NODE_GROUP_IN_CHANGE = new Set(['CREATING', 'UPDATING', 'DELETING']);

/**
 * An EKS cluster and its managed node groups as an ObservedCluster. `account` and `region` are the
 * scope's; the ARN is the provider id. A cluster still being created has no endpoint yet.
 * Never throws: unreadable fields are left out.
 */
export function mapEksCluster(
  cluster: Cluster,
  nodegroups: Nodegroup[],
  account: string,
  region: string,
): ObservedCluster {
  const c = obj(cluster);
  const vpc = obj(c.resourcesVpcConfig);
  const visibility =
    vpc.endpointPublicAccess === false && vpc.endpointPrivateAccess === true ? 'private' : 'public';
  const groups = arr(nodegroups).map(obj);
  const scaling = groups.map((g) => obj(g.scalingConfig)).filter((s) => Object.keys(s).length > 0);
  const sizes = scaling.map((s) => num(s.desiredSize)).filter((n): n is number => n !== undefined);
  const autoscales = scaling.some((s) => num(s.minSize) !== num(s.maxSize));
  const sum = (values: Array<number | undefined>) => values.reduce<number>((a, b) => a + (b ?? 0), 0);
  const endpoint = str(c.endpoint)?.replace(/\/+$/, '');
  const ca = str(obj(c.certificateAuthority).data);
  const version = str(c.version);
  const platformVersion = str(c.platformVersion);
  const createdAt = isoTime(c.createdAt);
  const changing = groups
    .map((g) => [str(g.nodegroupName) ?? '', (str(g.status) ?? '').toUpperCase()] as const)
    .filter(([, status]) => NODE_GROUP_IN_CHANGE.has(status))
    .map(([name, status]) => `${name} ${status}`);
  return {
    provider: 'eks',
    providerId: str(c.arn) ?? '',
    name: str(c.name) ?? '',
    account,
    region,
    endpoints: endpoint ? [{ url: endpoint, visibility }] : [],
    ...(ca ? { certificateAuthorityData: ca } : {}),
    ...(version ? { kubernetesVersion: version } : {}),
    ...(platformVersion ? { platformVersion } : {}),
    health: {
      status: str(c.status) ?? '',
      issues: arr(obj(c.health).issues).map((issue) => ({
        code: str(obj(issue).code) ?? 'Unknown',
        message: str(obj(issue).message) ?? '',
      })),
    },
    nodes: {
      ...(sizes.length > 0 ? { count: sum(sizes) } : {}),
      instanceTypes: groups.flatMap((g) =>
        arr(g.instanceTypes)
          .map(str)
          .filter((t): t is string => t !== undefined),
      ),
      ...(autoscales
        ? {
            autoscaling: {
              min: sum(scaling.map((s) => num(s.minSize))),
              max: sum(scaling.map((s) => num(s.maxSize))),
            },
          }
        : {}),
      ...(changing.length > 0 ? { inChange: changing } : {}),
    },
    tags: strings(c.tags),
    ...(createdAt ? { createdAt } : {}),
  };
}

/** An EKS cluster's partition, account, region and name, from its ARN (its provider id). */
export function eksClusterOfArn(providerId: string): {
  partition: string;
  account: string;
  region: string;
  name: string;
} {
  const match = EKS_CLUSTER_ARN.exec(providerId);
  if (!match) throw new Error(`not an EKS cluster ARN: ${providerId}`);
  return { partition: match[1]!, region: match[2]!, account: match[3]!, name: match[4]! };
}

/**
 * Whether `providerId` is the ARN of the cluster `name` of `account` in `region`, exactly: EKS cluster names are
 * case-sensitive (`prod` and `Prod` are two clusters of one account and region), as ARNs are. The partition is not
 * compared: a region is of one partition, and EKS names each cluster in it (comparing would load the AWS SDK's
 * partition table wherever a cloud event is matched, for every cloud; `eksClusterArn` spells the partition).
 */
export function isEksClusterArn(providerId: string, account: string, region: string, name: string): boolean {
  const match = EKS_CLUSTER_ARN.exec(providerId);
  return match !== null && match[2] === region && match[3] === account && match[4] === name;
}
