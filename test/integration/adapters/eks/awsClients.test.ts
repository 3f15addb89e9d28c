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

  it("keep a bounded number of clients, and a role's credentials for as long as it is used", async () => {
    const factory = awsClientFactory({ endpoint: aws.endpoint, credentials: async () => HUB_CREDENTIALS });
    const connections = aws.connections;
    const assumed = aws.calls.get('AssumeRole') ?? 0;
    const accounts = Array.from({ length: 150 }, (_, i) => String(400_000_000_000 + i));
    const regions = ['eu-west-1', 'us-east-1'];
    const clientOf = (account: string, region: string) =>
      factory.eks(
        region,
        factory.assumeRole(`arn:aws:iam::${account}:role/cpsync-reader`, undefined, 'cpsync'),
      );
    const first = clientOf(accounts[0]!, regions[0]!);
    const own = factory.eks(regions[0]!);
    // Twice round an estate of more clients than are kept, each account's regions one after the other.
    for (const round of [1, 2])
      for (const account of accounts)
        for (const region of regions) {
          const listed = await clientOf(account, region).send(new ListClustersCommand({}));
          assert.deepEqual(listed.clusters, [], `round ${round}, ${account} in ${region}`);
        }
    assert.equal(clientOf(accounts.at(-1)!, regions.at(-1)!), clientOf(accounts.at(-1)!, regions.at(-1)!));
    assert.notEqual(clientOf(accounts[0]!, regions[0]!), first, 'the first client was forgotten');
    // cpsync's own credentials' clients are kept: made again, each would resolve the default chain again.
    assert.equal(factory.eks(regions[0]!), own);
    // Each role asked of STS once, whatever became of its clients; every client on the one pool of connections.
    assert.equal((aws.calls.get('AssumeRole') ?? 0) - assumed, accounts.length);
    assert.ok(aws.connections - connections <= 1, `${aws.connections - connections} connections opened`);
  });
});
