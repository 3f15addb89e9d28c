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
