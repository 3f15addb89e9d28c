/** Builds AWS estates in moto through the real SDK clients, as a member account would see them. */
import { CreateClusterCommand, CreateNodegroupCommand, EKSClient } from '@aws-sdk/client-eks';
import { AssumeRoleCommand, STSClient } from '@aws-sdk/client-sts';
import type { AwsCredentialIdentity } from '@smithy/types';

/** Credentials moto accepts for the default account (123456789012), which plays the hub account. */
export const HUB_CREDENTIALS: AwsCredentialIdentity = {
  accessKeyId: 'AKIAHUBACCOUNT000001',
  secretAccessKey: 'hub-secret-not-checked',
};
export const HUB_ACCOUNT = '123456789012';

/** Credentials inside `account`, assumed the way cpsync's member-account role is. */
export async function accountCredentials(endpoint: string, account: string): Promise<AwsCredentialIdentity> {
  if (account === HUB_ACCOUNT) return HUB_CREDENTIALS;
  const sts = new STSClient({ endpoint, region: 'us-east-1', credentials: HUB_CREDENTIALS });
  const answer = await sts.send(
    new AssumeRoleCommand({
      RoleArn: `arn:aws:iam::${account}:role/estate-builder`,
      RoleSessionName: 'builder',
    }),
  );
  const c = answer.Credentials!;
  return { accessKeyId: c.AccessKeyId!, secretAccessKey: c.SecretAccessKey!, sessionToken: c.SessionToken! };
}

export interface EksClusterSpec {
  name: string;
  version?: string;
  tags?: Record<string, string>;
  privateOnly?: boolean;
  nodegroups?: Array<{ name: string; instanceTypes: string[]; desiredSize: number }>;
}

export async function createEksClusters(
  endpoint: string,
  account: string,
  region: string,
  specs: EksClusterSpec[],
): Promise<void> {
  const eks = new EKSClient({ endpoint, region, credentials: await accountCredentials(endpoint, account) });
  for (const spec of specs) {
    await eks.send(
      new CreateClusterCommand({
        name: spec.name,
        version: spec.version ?? '1.31',
        roleArn: `arn:aws:iam::${account}:role/eks-cluster`,
        resourcesVpcConfig: {
          subnetIds: ['subnet-0a1b2c3d', 'subnet-1a2b3c4d'],
          endpointPublicAccess: !spec.privateOnly,
          endpointPrivateAccess: true,
        },
        ...(spec.tags ? { tags: spec.tags } : {}),
      }),
    );
    for (const group of spec.nodegroups ?? []) {
      await eks.send(
        new CreateNodegroupCommand({
          clusterName: spec.name,
          nodegroupName: group.name,
          nodeRole: `arn:aws:iam::${account}:role/eks-node`,
          subnets: ['subnet-0a1b2c3d'],
          instanceTypes: group.instanceTypes,
          scalingConfig: { minSize: 0, maxSize: group.desiredSize + 2, desiredSize: group.desiredSize },
        }),
      );
    }
  }
  eks.destroy();
}

/** A Powertools idempotency table (key `id`) in moto, as the stack creates it. */
export async function createIdempotencyTable(endpoint: string, tableName: string): Promise<void> {
  const { CreateTableCommand, DynamoDBClient } = await import('@aws-sdk/client-dynamodb');
  await new DynamoDBClient({ endpoint, region: 'us-east-1', credentials: HUB_CREDENTIALS }).send(
    new CreateTableCommand({
      TableName: tableName,
      BillingMode: 'PAY_PER_REQUEST',
      AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }],
      KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }],
    }),
  );
}

/** A per-cluster records table (remembered answers, missed listings: key `cluster`, index `byScope` on scope and region) in moto, as the stack creates it. */
export async function createClusterRecordsTable(endpoint: string, tableName: string): Promise<void> {
  const { CreateTableCommand, DynamoDBClient } = await import('@aws-sdk/client-dynamodb');
  await new DynamoDBClient({ endpoint, region: 'us-east-1', credentials: HUB_CREDENTIALS }).send(
    new CreateTableCommand({
      TableName: tableName,
      BillingMode: 'PAY_PER_REQUEST',
      AttributeDefinitions: [
        { AttributeName: 'cluster', AttributeType: 'S' },
        { AttributeName: 'scope', AttributeType: 'S' },
        { AttributeName: 'region', AttributeType: 'S' },
      ],
      KeySchema: [{ AttributeName: 'cluster', KeyType: 'HASH' }],
      GlobalSecondaryIndexes: [
        {
          IndexName: 'byScope',
          KeySchema: [
            { AttributeName: 'scope', KeyType: 'HASH' },
            { AttributeName: 'region', KeyType: 'RANGE' },
          ],
          Projection: { ProjectionType: 'ALL' },
        },
      ],
    }),
  );
}
