/**
 * The EKS source in the partitions beside `aws` (aws-cn, aws-us-gov), against moto behind the proxy: the member role
 * it assumes is named in the home region's partition and asked of that region's STS; the clusters it reports are
 * named as EKS names them; and what it remembers of a cluster a look finds gone is forgotten by that name. The
 * oracle is moto's own answers (DescribeCluster asked directly) and the proxy's log of what reached moto.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DescribeClusterCommand, EKSClient } from '@aws-sdk/client-eks';
import { EksSource } from '../../../../adapters/eks/EksSource.ts';
import { FileAnswerStore } from '../../../../adapters/outbox/FileAnswerStore.ts';
import { restJsonError, startAwsProxy, type AwsProxy } from '../../../env/awsProxy.ts';
import { startMoto, type MotoServer } from '../../../env/moto.ts';
import { accountCredentials, createEksClusters, HUB_ACCOUNT, HUB_CREDENTIALS } from '../../../support/aws.ts';
import { temporaryDirectory } from '../../../support/tmp.ts';

const MEMBER = '210987654321';
const HOUR = 3_600_000;
const PARTITIONS = [
  { region: 'cn-north-1', partition: 'aws-cn' },
  { region: 'us-gov-west-1', partition: 'aws-us-gov' },
] as const;

describe('EKS in the aws-cn and aws-us-gov partitions, against moto', () => {
  let moto: MotoServer;
  let proxy: AwsProxy;

  /** The ARN moto gives `name` of `account` in `region`, asked of moto directly. */
  const motoArn = async (account: string, region: string, name: string) => {
    const eks = new EKSClient({
      endpoint: moto.endpoint,
      region,
      credentials: await accountCredentials(moto.endpoint, account),
    });
    try {
      return (await eks.send(new DescribeClusterCommand({ name }))).cluster!.arn!;
    } finally {
      eks.destroy();
    }
  };

  before(async () => {
    moto = await startMoto((line) => console.log(line));
    proxy = await startAwsProxy(moto.endpoint);
    for (const { region } of PARTITIONS) {
      await createEksClusters(moto.endpoint, MEMBER, region, [
        { name: 'ledger', nodegroups: [{ name: 'general', instanceTypes: ['m6i.large'], desiredSize: 2 }] },
      ]);
      await createEksClusters(moto.endpoint, HUB_ACCOUNT, region, [
        { name: 'orders', nodegroups: [{ name: 'general', instanceTypes: ['m6i.large'], desiredSize: 2 }] },
        { name: 'search' },
      ]);
    }
  });
  after(async () => {
    await proxy?.stop();
    await moto?.stop();
  });

  for (const { region, partition } of PARTITIONS) {
    it(`${partition}: assumes the member role by its ${partition} ARN through ${region}'s STS, and reports the clusters as EKS names them`, async () => {
      const from = proxy.calls.length;
      const listing = await new EksSource({
        endpoint: proxy.endpoint,
        credentials: async () => HUB_CREDENTIALS,
        hubAccountId: HUB_ACCOUNT,
        homeRegion: region,
      }).listScope({ provider: 'eks', account: MEMBER, region });
      assert.equal(listing.outcome.kind, 'complete');
      const assumed = proxy.calls.slice(from).filter((c) => c.operation === 'AssumeRole');
      assert.equal(assumed.length, 1);
      assert.equal(
        new URLSearchParams(assumed[0]!.body).get('RoleArn'),
        `arn:${partition}:iam::${MEMBER}:role/cpsync-reader`,
      );
      assert.equal(assumed[0]!.region, region, 'signed for the home region');
      const arn = await motoArn(MEMBER, region, 'ledger');
      assert.ok(arn.startsWith(`arn:${partition}:eks:${region}:${MEMBER}:`), arn);
      assert.deepEqual(
        listing.clusters.map((c) => [c.providerId, c.nodes.instanceTypes]),
        [[arn, ['m6i.large']]],
      );
    });

    it(`${partition}: forgets a cluster a look finds gone; one made again under its name is described at the next listing`, async () => {
      const directory = temporaryDirectory('cpsync-partition-answers-');
      const scope = { provider: 'eks', account: HUB_ACCOUNT, region } as const;
      const source = () =>
        new EksSource({
          endpoint: proxy.endpoint,
          credentials: async () => HUB_CREDENTIALS,
          hubAccountId: HUB_ACCOUNT,
          homeRegion: region,
          answers: new FileAnswerStore(directory),
          clusterMaxAgeMillis: HOUR,
        });
      const described = (from: number) =>
        proxy.calls
          .slice(from)
          .flatMap((c) =>
            c.method === 'GET' && c.region === region
              ? (/^\/clusters\/([^/?]+)$/.exec(c.path)?.[1] ?? [])
              : [],
          )
          .sort();
      const list = async () => {
        const from = proxy.calls.length;
        const listing = await source().listScope(scope);
        assert.equal(listing.outcome.kind, 'complete');
        return { listing, described: described(from) };
      };
      assert.deepEqual((await list()).described, ['orders', 'search']);
      assert.deepEqual((await list()).described, [], 'the answers stand');
      // A look finds orders deleted.
      const gone = proxy.intercept((call) =>
        call.method === 'GET' && call.region === region && call.path === '/clusters/orders'
          ? restJsonError(404, 'ResourceNotFoundException', 'No cluster found for name: orders.')
          : undefined,
      );
      try {
        assert.equal(await source().getCluster({ scope, name: 'orders' }), undefined);
      } finally {
        gone();
      }
      // Made again under the same name (the same ARN): another endpoint, which no listing shows.
      const remade = `https://remade.gr7.${region}.eks.example`;
      const undo = proxy.rewriteAnswer(`/clusters/orders`, (answer) => {
        answer.cluster!.endpoint = remade;
      });
      try {
        const { listing, described: asked } = await list();
        assert.deepEqual(asked, ['orders']);
        assert.deepEqual(
          listing.clusters.find((c) => c.name === 'orders')?.endpoints.map((e) => e.url),
          [remade],
        );
      } finally {
        undo();
      }
    });
  }
});
