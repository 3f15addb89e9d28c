/**
 * `providers.eks.clusterMaxAgeMinutes` (60 minutes by default): a listed cluster's DescribeCluster answer remembered beside its node
 * groups, against moto behind the proxy. The oracle is the proxy's log of what reached moto and what moto answers
 * now: which clusters were described in each listing, and that a listing that described nothing gives what
 * DescribeCluster would have given.
 */
import assert from 'node:assert/strict';
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, beforeEach, describe, it } from 'node:test';
import { EksSource } from '../../../../adapters/eks/EksSource.ts';
import { FileAnswerStore } from '../../../../adapters/outbox/FileAnswerStore.ts';
import type { Scope } from '../../../../core/domain/model/scope.ts';
import { restJsonError, startAwsProxy, type AwsProxy } from '../../../env/awsProxy.ts';
import { startMoto, type MotoServer } from '../../../env/moto.ts';
import { createEksClusters, HUB_ACCOUNT, HUB_CREDENTIALS } from '../../../support/aws.ts';
import { temporaryDirectory } from '../../../support/tmp.ts';

const REGION = 'eu-west-2';
const SCOPE: Scope = { provider: 'eks', account: HUB_ACCOUNT, region: REGION };
const HOUR = 3_600_000;
const NAMES = ['ledger', 'orders', 'search'];

describe('EKS DescribeCluster answers remembered (clusterMaxAgeMillis), against moto', () => {
  let moto: MotoServer;
  let proxy: AwsProxy;
  let store: FileAnswerStore;
  let directory: string;
  let undo: Array<() => void> = [];
  const source = (extra: ConstructorParameters<typeof EksSource>[0] = {}) =>
    new EksSource({
      endpoint: proxy.endpoint,
      credentials: async () => HUB_CREDENTIALS,
      hubAccountId: HUB_ACCOUNT,
      answers: store,
      clusterMaxAgeMillis: HOUR,
      ...extra,
    });
  /** The clusters DescribeCluster was called for since `from`, as moto received the calls. */
  const described = (from: number) =>
    proxy.calls
      .slice(from)
      .flatMap((c) => (c.method === 'GET' ? (/^\/clusters\/([^/?]+)$/.exec(c.path)?.[1] ?? []) : []))
      .sort();
  const list = async (extra: ConstructorParameters<typeof EksSource>[0] = {}) => {
    const from = proxy.calls.length;
    const listing = await source(extra).listScope(SCOPE);
    assert.equal(listing.outcome.kind, 'complete');
    return { listing, described: described(from) };
  };
  /** What moto answers for `name` now, as DescribeCluster's answer is rewritten below. */
  const describedAs = (name: string, change: (cluster: Record<string, unknown>) => void) =>
    undo.push(proxy.rewriteAnswer(`/clusters/${name}`, (answer) => change(answer.cluster!)));
  /** Rewrites the store's records as `change` says (an aged or broken record). */
  const records = async (change: (record: Record<string, unknown>) => Record<string, unknown>) => {
    const held = await store.read(SCOPE);
    await store.write([], held);
    await store.write(held.map((record) => change(record as never) as never));
  };

  before(async () => {
    moto = await startMoto((line) => console.log(line));
    proxy = await startAwsProxy(moto.endpoint);
    await createEksClusters(
      moto.endpoint,
      HUB_ACCOUNT,
      REGION,
      NAMES.map((name) => ({
        name,
        tags: { team: name },
        nodegroups: [{ name: 'general', instanceTypes: ['m6i.large'], desiredSize: 2 }],
      })),
    );
  });
  after(async () => {
    await proxy?.stop();
    await moto?.stop();
  });
  beforeEach(() => {
    for (const remove of undo) remove();
    undo = [];
    directory = temporaryDirectory('cpsync-answers-');
    store = new FileAnswerStore(directory);
  });

  it('describes no unchanged active cluster in a second listing, and gives what DescribeCluster gives', async () => {
    const first = await list();
    assert.deepEqual(first.described, NAMES);
    const second = await list();
    assert.deepEqual(second.described, []);
    assert.deepEqual(second.listing, first.listing);
    // What the cloud answers now, asked afresh by a source that remembers nothing.
    const fresh = await new EksSource({
      endpoint: proxy.endpoint,
      credentials: async () => HUB_CREDENTIALS,
      hubAccountId: HUB_ACCOUNT,
    }).listScope(SCOPE);
    assert.deepEqual(second.listing, fresh);
  });

  it('describes every cluster at every listing by default, and when node groups are not remembered', async () => {
    await list({ clusterMaxAgeMillis: 0 });
    assert.deepEqual((await list({ clusterMaxAgeMillis: 0 })).described, NAMES);
    await list({ nodegroupsMaxAgeMillis: 0 });
    assert.deepEqual((await list({ nodegroupsMaxAgeMillis: 0 })).described, NAMES);
    // What the default source remembered stands for nothing to one that remembers clusters: it describes.
    assert.deepEqual((await list()).described, NAMES);
  });

  it('describes again a cluster whose answer is older than the age, and none of the others', async () => {
    await list();
    await records((record) =>
      String(record.providerId).endsWith('/orders')
        ? {
            ...record,
            answer: { ...(record.answer as object), describedAt: Date.now() - 2 * HOUR },
          }
        : record,
    );
    describedAs('orders', (cluster) => (cluster.version = '1.32'));
    const { listing, described: asked } = await list();
    assert.deepEqual(asked, ['orders']);
    assert.equal(listing.clusters.find((c) => c.name === 'orders')?.kubernetesVersion, '1.32');
    // Remembered again as just described: the next listing describes nothing and keeps the new version.
    const next = await list();
    assert.deepEqual(next.described, []);
    assert.equal(next.listing.clusters.find((c) => c.name === 'orders')?.kubernetesVersion, '1.32');
  });

  it('over an hour of listings at the 15-minute schedule, describes each cluster once and reads no node group again', async () => {
    // The source's clock, moved on a quarter hour before each scheduled listing.
    let offset = 0;
    const now = () => Date.now() + offset;
    await list({ now });
    const from = proxy.calls.length;
    const perListing: string[][] = [];
    for (let step = 1; step <= 4; step++) {
      offset += HOUR / 4;
      perListing.push((await list({ now })).described);
    }
    assert.deepEqual(perListing.flat().sort(), NAMES, `described in the hour: ${JSON.stringify(perListing)}`);
    assert.equal(
      proxy.calls.slice(from).filter((c) => /\/node-groups/.test(c.path)).length,
      0,
      'node groups (six hours) are not read again within the hour',
    );
  });

  it('describes at every listing a cluster not ACTIVE, with a health issue or a node group changing, until it reads settled and healthy', async () => {
    describedAs('ledger', (cluster) => (cluster.status = 'UPDATING'));
    describedAs('search', (cluster) => {
      cluster.health = { issues: [{ code: 'Ec2SubnetNotFound', message: 'subnet-0a1b2c3d is gone' }] };
    });
    undo.push(
      proxy.rewriteAnswer('/clusters/orders/node-groups/general', (answer) => {
        answer.nodegroup!.status = 'UPDATING';
      }),
    );
    for (let i = 0; i < 2; i++) {
      const { listing, described: asked } = await list();
      assert.deepEqual(asked, NAMES);
      assert.deepEqual(listing.clusters.find((c) => c.name === 'orders')?.nodes.inChange, [
        'general UPDATING',
      ]);
      assert.deepEqual(listing.clusters.find((c) => c.name === 'search')?.health.issues, [
        { code: 'Ec2SubnetNotFound', message: 'subnet-0a1b2c3d is gone' },
      ]);
    }
    for (const remove of undo) remove();
    undo = [];
    assert.deepEqual((await list()).described, NAMES);
    assert.deepEqual((await list()).described, []);
  });

  it('an event reads the one cluster afresh, and the next listing gives what it said without describing', async () => {
    await list();
    describedAs('search', (cluster) => (cluster.platformVersion = 'eks.99'));
    const one = await source().getCluster({ scope: SCOPE, name: 'search' });
    assert.equal(one?.platformVersion, 'eks.99');
    const { listing, described: asked } = await list();
    assert.deepEqual(asked, []);
    assert.deepEqual(
      listing.clusters.find((c) => c.name === 'search'),
      one,
    );
  });

  it('forgets a cluster a look finds gone: one made again under its name is described at the next listing', async () => {
    await list();
    // An event's look (or a follow-up's) finds orders deleted.
    const gone = proxy.intercept((call) =>
      call.method === 'GET' && call.path === '/clusters/orders'
        ? restJsonError(404, 'ResourceNotFoundException', 'No cluster found for name: orders.')
        : undefined,
    );
    try {
      assert.equal(await source().getCluster({ scope: SCOPE, name: 'orders' }), undefined);
    } finally {
      gone();
    }
    // Made again under the same name (the same ARN): another endpoint, which no listing shows.
    describedAs('orders', (cluster) => (cluster.endpoint = 'https://remade.gr7.eu-west-2.eks.amazonaws.com'));
    const { listing, described: asked } = await list();
    assert.deepEqual(asked, ['orders']);
    assert.deepEqual(
      listing.clusters.find((c) => c.name === 'orders')?.endpoints.map((e) => e.url),
      ['https://remade.gr7.eu-west-2.eks.amazonaws.com'],
    );
  });

  it('describes when the store holds junk, a record whose answer is not its cluster, or an answer from the future', async () => {
    await list();
    await records((record) =>
      String(record.providerId).endsWith('/ledger')
        ? { ...record, answer: { ...(record.answer as object), cluster: { name: 'ledger', arn: 7 } } }
        : String(record.providerId).endsWith('/orders')
          ? {
              ...record,
              answer: {
                ...(record.answer as { cluster: object }),
                cluster: {
                  ...(record.answer as { cluster: object }).cluster,
                  arn: `arn:aws:eks:${REGION}:${HUB_ACCOUNT}:cluster/search`,
                },
              },
            }
          : { ...record, answer: { ...(record.answer as object), describedAt: Date.now() + 2 * HOUR } },
    );
    assert.deepEqual((await list()).described, NAMES);
    assert.deepEqual((await list()).described, []);
    const folder = join(directory, 'answers');
    for (const account of readdirSync(folder))
      for (const file of readdirSync(join(folder, account))) writeFileSync(join(folder, account, file), '{');
    assert.deepEqual((await list()).described, NAMES);
  });

  it('lists no cluster EKS no longer lists, whatever is remembered of it', async () => {
    await list();
    undo.push(
      proxy.rewriteAnswer<{ clusters: string[] }>(/^\/clusters(\?|$)/, (answer) => {
        answer.clusters = answer.clusters.filter((name) => name !== 'orders');
      }),
    );
    const { listing, described: asked } = await list();
    assert.deepEqual(asked, []);
    assert.deepEqual(
      listing.clusters.map((c) => c.name),
      ['ledger', 'search'],
    );
    assert.deepEqual((await store.read(SCOPE)).map((r) => r.providerId.split('/').at(-1)).sort(), [
      'ledger',
      'search',
    ]);
  });
});
