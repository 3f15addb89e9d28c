/**
 * `providers.eks.homeRegion` and the partition it puts every listed region in: cpsync's AWS credentials, the member
 * roles it assumes and the ARNs it names them by are of one partition. Loaded with the EKS source only (the
 * partition table is the AWS SDK's).
 */
import { AWS_REGION } from '../../../core/domain/scopes.ts';
import { awsPartitionOf } from '../../shared/awsPartition.ts';
import { ConfigError } from '../config.ts';

/** A region outside the `aws` partition, if `region` is one. */
const otherPartition = (region: string | undefined) =>
  region !== undefined && AWS_REGION.test(region) && awsPartitionOf(region).name !== 'aws'
    ? region
    : undefined;

/**
 * The home region: as configured. Unset: the first listed region when the regions are of another partition than
 * `aws`; with no regions listed, the environment's region (`AWS_REGION`, as the AWS SDK reads it, a function's own
 * region in Lambda) when it is of another partition; else `us-east-1`. ConfigError names each listed region of
 * another partition than the home region's.
 */
export function eksHomeRegion(
  eks: { homeRegion?: string | undefined; regions?: string[] | undefined },
  source = '',
  env: NodeJS.ProcessEnv = process.env,
): string {
  const home =
    eks.homeRegion ??
    (eks.regions === undefined
      ? otherPartition(env.AWS_REGION ?? env.AWS_DEFAULT_REGION)
      : otherPartition(eks.regions[0])) ??
    'us-east-1';
  const partition = awsPartitionOf(home).name;
  const issues = (eks.regions ?? []).flatMap((region, index) => {
    const other = awsPartitionOf(region).name;
    return other === partition
      ? []
      : [
          `providers.eks.regions[${index}]: ${region} is in the ${other} partition, but the home region ${home}${eks.homeRegion ? ' (providers.eks.homeRegion)' : ''} is in ${partition}: one cpsync lists one partition, whose credentials and member roles it uses (list ${other}'s regions from a cpsync configured for it)`,
        ];
  });
  if (issues.length > 0) throw new ConfigError(issues, source);
  return home;
}
