/**
 * The home region where the configuration leaves it to the region cpsync runs in (no `homeRegion`, no `regions`):
 * looked up then only. Loaded with the EKS source (the lookup is the AWS SDK's).
 */
import { ambientAwsRegion } from '../../shared/awsPartition.ts';
import { eksHomeRegion } from '../config.ts';

/** Whether the home region is taken from where cpsync runs: neither it nor the regions are configured. */
export const homeRegionFromEnvironment = (eks: {
  homeRegion?: string | undefined;
  regions?: string[] | undefined;
}) => eks.homeRegion === undefined && eks.regions === undefined;

/** `eksHomeRegion`, the region where cpsync runs looked up only when the configuration leaves it to that. */
export async function resolvedHomeRegion(
  eks: { homeRegion?: string | undefined; regions?: string[] | undefined },
  source = '',
): Promise<string> {
  return eksHomeRegion(eks, source, homeRegionFromEnvironment(eks) ? await ambientAwsRegion() : undefined);
}
