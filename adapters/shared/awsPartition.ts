/**
 * The AWS partition a region belongs to (`aws`, `aws-cn`, `aws-us-gov`, `aws-iso`, …), from the AWS SDK's own
 * partition table: the one its endpoint rules read to reach the region. Every ARN and STS host cpsync builds from
 * parts takes its partition from here, never a literal `aws`: a role, a cluster or an access policy named in
 * another partition than the region's is one AWS does not know (or, worse, another one).
 */
import { partition } from '@aws-sdk/core/client';

export interface AwsPartition {
  /** As ARNs spell it: `aws`, `aws-cn`, `aws-us-gov`, … */
  name: string;
  /** Its endpoints' domain: `amazonaws.com`, `amazonaws.com.cn`, … */
  dnsSuffix: string;
}

/** The partition of `region`: a region the table does not know is taken as the `aws` partition's, as the SDK does. */
export function awsPartitionOf(region: string): AwsPartition {
  const { name, dnsSuffix } = partition(region);
  return { name, dnsSuffix };
}

/**
 * The region named where cpsync runs: `AWS_REGION` or `AWS_DEFAULT_REGION`, else the one the AWS SDK takes for a
 * client given none (the profile's, in `~/.aws/config` or `AWS_CONFIG_FILE`, as `AWS_PROFILE` picks it). Undefined
 * when nothing names one.
 */
export async function ambientAwsRegion(env: NodeJS.ProcessEnv = process.env): Promise<string | undefined> {
  const named = env.AWS_REGION || env.AWS_DEFAULT_REGION;
  if (named) return named;
  const { STSClient } = await import('@aws-sdk/client-sts');
  const client = new STSClient({});
  try {
    return await client.config.region();
  } catch {
    return undefined; // "Region is missing": nothing names one
  } finally {
    client.destroy();
  }
}
