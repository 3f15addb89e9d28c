import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ListClustersCommand } from '@aws-sdk/client-eks';
import { GetCallerIdentityCommand } from '@aws-sdk/client-sts';
import { awsClientFactory } from '../../../../adapters/eks/awsClients.ts';
import { startFakeAws, type FakeAws } from '../../../env/fakes/awsServer.ts';
import { HUB_ACCOUNT, HUB_CREDENTIALS } from '../../../support/aws.ts';

describe('AWS clients', () => {
  let aws: FakeAws;

  before(async () => {
    aws = await startFakeAws({ hubAccount: HUB_ACCOUNT });
  });
  after(() => aws.stop());

  it('share one pool of kept-alive connections across services, regions and credentials', async () => {
    const factory = awsClientFactory({ endpoint: aws.endpoint, credentials: async () => HUB_CREDENTIALS });
    const other = async () => ({ ...HUB_CREDENTIALS, accessKeyId: 'AKIAOTHERACCOUNT0001' });
    for (const region of ['eu-west-1', 'us-east-1', 'us-west-2']) {
      await factory.eks(region).send(new ListClustersCommand({}));
      await factory.eks(region, other).send(new ListClustersCommand({}));
      await factory.sts(region).send(new GetCallerIdentityCommand({}));
    }
    assert.equal(aws.calls.get('ListClusters'), 6);
    assert.equal(aws.calls.get('GetCallerIdentity'), 3);
    assert.equal(aws.connections, 1);
  });
});
