import { awsPartitionOf } from '../shared/awsPartition.ts';

/** The ARN of the EKS cluster `name` of `account` in `region`, in the region's partition (as EKS spells it). */
export function eksClusterArn(account: string, region: string, name: string): string {
  return `arn:${awsPartitionOf(region).name}:eks:${region}:${account}:cluster/${name}`;
}
