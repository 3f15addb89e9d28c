import assert from 'node:assert/strict';
import { writeFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, beforeEach, describe, it } from 'node:test';
import { DeleteNodegroupCommand, EKSClient } from '@aws-sdk/client-eks';
import { EksSource } from '../../../../adapters/eks/EksSource.ts';
import { FileAnswerStore } from '../../../../adapters/outbox/FileAnswerStore.ts';
import type { ObservedCluster } from '../../../../core/domain/model/observedCluster.ts';
import type { Scope } from '../../../../core/domain/model/scope.ts';
import type { AnswerStore } from '../../../../core/sync/ports.ts';
import { startAwsProxy, type AwsProxy } from '../../../env/awsProxy.ts';
import { startMoto, type MotoServer } from '../../../env/moto.ts';
import { accountCredentials, createEksClusters, HUB_ACCOUNT, HUB_CREDENTIALS } from '../../../support/aws.ts';
import { temporaryDirectory } from '../../../support/tmp.ts';

const REGION = 'eu-central-1';
const SCOPE: Scope = { provider: 'eks', account: HUB_ACCOUNT, region: REGION };

describe('EKS node groups remembered between listings (a store only cpsync writes), against moto', () => {
  let moto: MotoServer;
  let proxy: AwsProxy;
  let directory: string;
  let store: FileAnswerStore;
  /** Rewrites of moto's answers a test asks for, removed after it. */
  let undo: Array<() => void> = [];
  const source = (
    answers: AnswerStore | undefined = store,
    extra: ConstructorParameters<typeof EksSource>[0] = {},
  ) =>
    new EksSource({
      endpoint: proxy.endpoint,
      credentials: async () => HUB_CREDENTIALS,
      hubAccountId: HUB_ACCOUNT,
      ...(answers ? { answers } : {}),
      ...extra,
    });
  /** Node-group calls (ListNodegroups, DescribeNodegroup) moto received since `from`, by cluster name. */
  const nodegroupCalls = (from: number) =>
    [
      ...new Set(
        proxy.calls
          .slice(from)
          .map((c) => /^\/clusters\/([^/?]+)\/node-groups/.exec(c.path)?.[1])
          .filter((name): name is string => name !== undefined),
      ),
    ].sort();
  const list = async (answers: AnswerStore | undefined = store) => {
    const listing = await source(answers).listScope(SCOPE);
    assert.equal(listing.outcome.kind, 'complete');
    return listing;
  };
  const nodesOf = (clusters: readonly ObservedCluster[], name: string) =>
    clusters.find((c) => c.name === name)?.nodes;
  /** Changes what DescribeCluster (or DescribeNodegroup) answers for `name`, as a cloud change would. */
  const describedAs = (
    name: string,
    change: (answer: Record<string, Record<string, unknown>>) => void,
    nodegroups = false,
  ) =>
    undo.push(
      proxy.rewriteAnswer(
        nodegroups ? new RegExp(`^/clusters/${name}/node-groups/[^/?]+$`) : `/clusters/${name}`,
        change,
      ),
    );

  before(async () => {
    moto = await startMoto((line) => console.log(line));
    proxy = await startAwsProxy(moto.endpoint);
    await createEksClusters(moto.endpoint, HUB_ACCOUNT, REGION, [
      {
        name: 'payments',
        nodegroups: [
          { name: 'general', instanceTypes: ['m6i.large'], desiredSize: 3 },
          { name: 'spot', instanceTypes: ['c6i.large'], desiredSize: 2 },
        ],
      },
      { name: 'search', nodegroups: [{ name: 'general', instanceTypes: ['r6i.large'], desiredSize: 4 }] },
      { name: 'bare' },
    ]);
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

  it('asks for no node group in a second listing of unchanged clusters, and gives the same node groups', async () => {
    let from = proxy.calls.length;
    const first = await list();
    assert.deepEqual(nodegroupCalls(from), ['bare', 'payments', 'search']);
    from = proxy.calls.length;
    const second = await list();
    assert.deepEqual(nodegroupCalls(from), []);
    assert.deepEqual(second, first);
    assert.deepEqual(nodesOf(second.clusters, 'payments'), {
      count: 5,
      instanceTypes: ['m6i.large', 'c6i.large'],
      autoscaling: { min: 0, max: 9 },
    });
  });

  it('asks again for the node groups of a cluster DescribeCluster shows changed, or still changing', async () => {
    await list();
    describedAs('search', (answer) => (answer.cluster!.version = '1.32'));
    let from = proxy.calls.length;
    await list();
    assert.deepEqual(nodegroupCalls(from), ['search']);
    from = proxy.calls.length;
    await list();
    assert.deepEqual(nodegroupCalls(from), []);
    describedAs('payments', (answer) => (answer.cluster!.status = 'UPDATING'));
    for (let i = 0; i < 2; i++) {
      from = proxy.calls.length;
      await list();
      assert.deepEqual(nodegroupCalls(from), ['payments']);
    }
  });

  it('asks at every listing while one of its node groups is changing', async () => {
    describedAs('search', (answer) => (answer.nodegroup!.status = 'UPDATING'), true);
    for (let i = 0; i < 2; i++) {
      const from = proxy.calls.length;
      const listing = await list();
      assert.deepEqual(nodesOf(listing.clusters, 'search')?.inChange, ['general UPDATING']);
      assert.ok(nodegroupCalls(from).includes('search'));
    }
  });

  it('asks again for node groups older than their age limit, and at every listing when told 0', async () => {
    await list();
    const records = await store.read(SCOPE);
    const payments = records.find((r) => r.providerId.endsWith('/payments'))!;
    await store.write([], [payments]);
    await store.write([{ ...payments, askedAt: Date.now() - 7 * 3_600_000 }]);
    let from = proxy.calls.length;
    await list();
    assert.deepEqual(nodegroupCalls(from), ['payments']);
    from = proxy.calls.length;
    await source(store, { nodegroupsMaxAgeMillis: 0 }).listScope(SCOPE);
    assert.deepEqual(nodegroupCalls(from), ['bare', 'payments', 'search']);
  });

  it('a node-group event reads the one cluster afresh, and the next listing gives what it said without asking', async () => {
    await list();
    const eks = new EKSClient({
      endpoint: moto.endpoint,
      region: REGION,
      credentials: await accountCredentials(moto.endpoint, HUB_ACCOUNT),
    });
    await eks.send(new DeleteNodegroupCommand({ clusterName: 'payments', nodegroupName: 'spot' }));
    eks.destroy();
    let from = proxy.calls.length;
    const one = await source().getCluster({ scope: SCOPE, name: 'payments' });
    assert.deepEqual(nodegroupCalls(from), ['payments']);
    assert.equal(one?.nodes.count, 3);
    from = proxy.calls.length;
    const listing = await list();
    assert.deepEqual(nodegroupCalls(from), []);
    assert.deepEqual(nodesOf(listing.clusters, 'payments'), one?.nodes);
  });

  it('asks for a new cluster, and forgets a cluster the whole listing of its region no longer shows', async () => {
    await list();
    await createEksClusters(moto.endpoint, HUB_ACCOUNT, REGION, [
      { name: 'fresh', nodegroups: [{ name: 'general', instanceTypes: ['m6i.large'], desiredSize: 1 }] },
    ]);
    const from = proxy.calls.length;
    await list();
    assert.deepEqual(nodegroupCalls(from), ['fresh']);
    // A listing that does not show `bare` (gone between two listings, as the cloud says).
    undo.push(
      proxy.rewriteAnswer<{ clusters: string[] }>(/^\/clusters(\?|$)/, (answer) => {
        answer.clusters = answer.clusters.filter((name) => name !== 'bare');
      }),
    );
    await list();
    assert.deepEqual((await store.read(SCOPE)).map((r) => r.providerId.split('/').at(-1)).sort(), [
      'fresh',
      'payments',
      'search',
    ]);
  });

  it('asks the cloud, and lists completely, when the store holds junk or cannot be used', async () => {
    await list();
    const folder = join(directory, 'answers');
    for (const account of readdirSync(folder))
      for (const file of readdirSync(join(folder, account)))
        writeFileSync(join(folder, account, file), '[1, 2');
    let from = proxy.calls.length;
    await list();
    assert.ok(nodegroupCalls(from).includes('payments'));
    const blocked = temporaryDirectory('cpsync-answers-');
    writeFileSync(join(blocked, 'answers'), 'not a directory');
    for (let i = 0; i < 2; i++) {
      from = proxy.calls.length;
      const listing = await list(new FileAnswerStore(blocked));
      assert.equal(nodesOf(listing.clusters, 'search')?.count, 4);
      assert.ok(nodegroupCalls(from).includes('search'));
    }
  });
});
