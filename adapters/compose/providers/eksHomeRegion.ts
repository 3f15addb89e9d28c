/**
 * `providers.eks.homeRegion` and the partition it puts every listed region in: cpsync's AWS credentials, the member
 * roles it assumes and the ARNs it names them by are of one partition. Loaded with the EKS source only (the
 * partition table is the AWS SDK's).
 */
import { AWS_REGION } from '../../../core/domain/scopes.ts';
import { ambientAwsRegion, awsPartitionOf } from '../../shared/awsPartition.ts';
import { ConfigError } from '../config.ts';

/** A region outside the `aws` partition, if `region` is one. */
const otherPartition = (region: string | undefined) =>
  region !== undefined && AWS_REGION.test(region) && awsPartitionOf(region).name !== 'aws'
    ? region
    : undefined;

/** Whether the home region is taken from where cpsync runs: neither it nor the regions are configured. */
export const homeRegionFromEnvironment = (eks: {
  homeRegion?: string | undefined;
  regions?: string[] | undefined;
}) => eks.homeRegion === undefined && eks.regions === undefined;

/**
 * The home region: as configured. Unset: the first listed region when the regions are of another partition than
 * `aws`; with no regions listed, `environmentRegion` (`ambientAwsRegion`: AWS_REGION, a function's own region in
 * Lambda, or the AWS profile's) when it is of another partition; else `us-east-1`. ConfigError names each listed
 * region of another partition than the home region's.
 */
export function eksHomeRegion(
  eks: { homeRegion?: string | undefined; regions?: string[] | undefined },
  source = '',
  environmentRegion?: string,
): string {
  const home =
    eks.homeRegion ??
    (eks.regions === undefined ? otherPartition(environmentRegion) : otherPartition(eks.regions[0])) ??
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

/** `eksHomeRegion`, the region where cpsync runs looked up only when the configuration leaves it to that. */
export async function resolvedHomeRegion(
  eks: { homeRegion?: string | undefined; regions?: string[] | undefined },
  source = '',
): Promise<string> {
  return eksHomeRegion(eks, source, homeRegionFromEnvironment(eks) ? await ambientAwsRegion() : undefined);
}
