/**
 * One chase per cluster, against moto's DynamoDB and SQS: the chase item is the only lock, the delayed
 * messages the only clock. What SQS holds (and when it hands a look over) and what the table holds are
 * read back with clients of the test's own.
 */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { after, before, describe, it } from 'node:test';
import { CreateTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { CreateQueueCommand, SQSClient } from '@aws-sdk/client-sqs';
import { parseConfig } from '../../../adapters/compose/config.ts';
import type { ClusterRef } from '../../../core/sync/ports.ts';
import type { Chases, LookMessage, makeChases as MakeChases } from '../../../functions/chases.ts';
import { startAwsProxy, type AwsProxy } from '../../env/awsProxy.ts';
import { startMoto, type MotoServer } from '../../env/moto.ts';
import { HUB_CREDENTIALS } from '../../support/aws.ts';
import { messagesHandedOver } from '../../support/events.ts';

const TABLE = 'cpsync-chases';
const ref = (name: string): ClusterRef => ({
  scope: { provider: 'eks', account: '210987654321', region: 'us-east-1' },
  name,
});
const gkeRef = (name: string): ClusterRef => ({
  scope: { provider: 'gke', account: 'acme-data', region: '*' },
  name,
  location: 'us-central1',
});

describe('following clusters in AWS: one chase per cluster, delayed looks, a bounded chase', () => {
  let moto: MotoServer;
  let proxy: AwsProxy;
  let queueUrl: string;
  let makeChases: typeof MakeChases;
  let STALE_AFTER_MILLIS: number;
  let documents: DynamoDBDocumentClient;
  // EKS: a creation typically done after 20 s, looked at every 1 s near then, every 4 s far from it, 12 looks at most.
  const knobs = parseConfig(
    {
      follow: {
        firstDelaySeconds: 1,
        maxDelaySeconds: 4,
        maxMinutes: 1,
        eks: {
          typicalSeconds: { create: 20, update: 20, delete: 20 },
          minDelaySeconds: 1,
          maxDelaySeconds: 4,
          tightening: 0.25,
          maxLooks: 12,
        },
      },
    },
    'test',
  ).follow;
  /** A clock the test moves. */
  let clock = Date.now();
  let chases: Chases;
  const items = async () =>
    ((await documents.send(new ScanCommand({ TableName: TABLE }))).Items ?? []) as Array<{
      cluster: string;
      chaseId: string;
      attempt: number;
    }>;

  before(async () => {
    moto = await startMoto();
    // The functions' DynamoDB and SQS calls go through a proxy before moto (a case shapes what happens between two).
    proxy = await startAwsProxy(moto.endpoint);
    Object.assign(process.env, {
      AWS_ENDPOINT_URL: proxy.endpoint,
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: HUB_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: HUB_CREDENTIALS.secretAccessKey,
      AWS_EC2_METADATA_DISABLED: 'true',
      POWERTOOLS_METRICS_DISABLED: 'true',
      POWERTOOLS_LOG_LEVEL: 'ERROR',
    });
    ({ makeChases, STALE_AFTER_MILLIS } = await import('../../../functions/chases.ts'));
    const aws = { endpoint: moto.endpoint, region: 'us-east-1', credentials: HUB_CREDENTIALS };
    const dynamo = new DynamoDBClient(aws);
    await dynamo.send(
      new CreateTableCommand({
        TableName: TABLE,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [{ AttributeName: 'cluster', AttributeType: 'S' }],
        KeySchema: [{ AttributeName: 'cluster', KeyType: 'HASH' }],
      }),
    );
    documents = DynamoDBDocumentClient.from(dynamo);
    queueUrl = (await new SQSClient(aws).send(new CreateQueueCommand({ QueueName: 'cpsync-follow' })))
      .QueueUrl!;
    // The functions' queue URL names the proxy: the SQS client sends to a queue URL's own host.
    const { pathname } = new URL(queueUrl);
    chases = makeChases(
      knobs,
      { queueUrl: new URL(pathname, proxy.endpoint).href, table: TABLE },
      () => clock,
    );
  });
  after(async () => {
    await proxy?.stop();
    await moto?.stop();
  });

  /** The looks sent to SQS since the call log's `from`-th call (the proxy's record of the functions' SendMessage calls). */
  const sentLooks = (from = 0) =>
    proxy.calls
      .slice(from)
      .filter((call) => call.operation === 'AmazonSQS.SendMessage')
      .map((call) => {
        const { MessageBody, DelaySeconds } = JSON.parse(call.body) as {
          MessageBody: string;
          DelaySeconds?: number;
        };
        return { look: JSON.parse(MessageBody) as LookMessage, delaySeconds: DelaySeconds };
      });

  /**
   * Waits, as long as it takes, until SQS has handed over at least `count` looks (with any others then in the queue),
   * and checks each was sent with its own delay (SQS holds a look that long before it hands it over).
   */
  async function looksHandedOver(count = 1): Promise<LookMessage[]> {
    const looks = await messagesHandedOver<LookMessage>(queueUrl, count);
    for (const look of looks) {
      const sent = sentLooks().filter(
        (s) => s.look.chaseId === look.chaseId && s.look.attempt === look.attempt,
      );
      assert.deepEqual(
        sent.map((s) => s.delaySeconds),
        [look.delaySeconds],
        'each look sent once, held by SQS for its delay',
      );
    }
    return looks;
  }

  it('starts one chase per cluster: its first look delayed, a second start joining it', async () => {
    assert.equal(await chases.start(ref('a'), 'EKS CREATING'), 'started');
    assert.equal(await chases.start(ref('a'), 'EKS CREATING'), 'joined');
    assert.equal(await chases.start(ref('b'), 'EKS UPDATING'), 'started');
    assert.equal(await chases.start(gkeRef('g'), 'GKE PROVISIONING'), 'started');
    const looks = await looksHandedOver(3);
    // EKS's first looks come when the schedule says (far from the typical 20 s: the 4 s cap), GKE's after the first delay.
    assert.deepEqual(looks.map((l) => [l.ref.name, l.attempt, l.delaySeconds, l.state]).sort(), [
      ['a', 1, 4, 'EKS CREATING'],
      ['b', 1, 4, 'EKS UPDATING'],
      ['g', 1, 1, 'GKE PROVISIONING'],
    ]);
    assert.equal((await items()).length, 3);
    for (const look of looks) assert.equal(await chases.isCurrent(look), true);
  });

  it('backs off, the wait doubling to the cap, and ends at the bound (then the schedule takes over)', async () => {
    const start = clock;
    await chases.start(gkeRef('c'), 'GKE PROVISIONING');
    let [look] = (await looksHandedOver()).filter((l) => l.ref.name === 'c');
    const delays: number[] = [];
    // The looks go on as the cloud is still changing; the clock runs as the delays say, and some more (the
    // function ran late), so the bound comes after a few looks.
    for (;;) {
      const sentAt = clock;
      const next = await chases.next(look!, 'GKE PROVISIONING');
      if (next === 'bounded') break;
      [look] = await looksHandedOver();
      delays.push(look!.delaySeconds);
      const due = sentAt + look!.delaySeconds * 1000;
      assert.ok(due - start <= knobs.maxMinutes * 60_000, 'no look is due past the bound');
      clock += look!.delaySeconds * 1000 + 20_000;
    }
    assert.deepEqual(delays, [2, 4, 4], 'doubled from the first delay, capped, until the bound');
    assert.equal(
      (await items()).some((i) => i.cluster.endsWith('/c')),
      false,
      'the chase is over: a later sync starts a new one',
    );
    assert.equal(await chases.isCurrent(look!), false);
    assert.equal(await chases.start(gkeRef('c'), 'GKE PROVISIONING'), 'started');
    await looksHandedOver();
  });

  it('places an EKS creation’s looks from the cluster’s creation: tighter as it nears the typical time, at most maxLooks', async () => {
    // Created 10 s before the chase began (found by a scheduled sync): 10 s left to the typical 20 s.
    const created = new Date(clock - 10_000).toISOString();
    await chases.start(ref('t'), 'EKS CREATING', created);
    let [look] = await looksHandedOver();
    assert.equal(look!.since, Date.parse(created));
    const delays = [look!.delaySeconds];
    clock += look!.delaySeconds * 1000;
    for (;;) {
      const next = await chases.next(look!, 'EKS CREATING');
      if (next === 'bounded') break;
      [look] = await looksHandedOver();
      delays.push(look!.delaySeconds);
      clock += look!.delaySeconds * 1000;
    }
    // 10 s left: 3 s (a quarter, rounded), then 2, then every second around the typical end, then wider as it overruns.
    assert.deepEqual(delays, [3, 2, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3]);
    assert.equal(delays.length, knobs.eks.maxLooks, 'no more looks than maxLooks');
    assert.equal(
      (await items()).some((i) => i.cluster.endsWith('/t')),
      false,
      'the chase ended with its last look',
    );
  });

  it('ends a chase when the cloud says the operation ended, unless the chase began after that reading', async () => {
    const readBefore = clock;
    clock += 1000;
    await chases.start(ref('f'), 'EKS UPDATING');
    // A reading older than the chase: the chase follows a newer operation, and is left to run.
    assert.equal(await chases.complete(ref('f'), readBefore), false);
    assert.ok((await items()).some((i) => i.cluster.endsWith('/f')));
    assert.equal(await chases.complete(ref('f'), clock), true);
    assert.equal(
      (await items()).some((i) => i.cluster.endsWith('/f')),
      false,
    );
    assert.equal(await chases.complete(ref('f'), clock), false, 'no chase: nothing to end');
    // Its look, on its way, finds no chase of its own: it does nothing.
    const [stale] = await looksHandedOver();
    assert.equal(stale!.ref.name, 'f');
    assert.equal(await chases.isCurrent(stale!), false);
  });

  it('a completion read before a sync joined the chase ends nothing: the chase follows the operation that sync found too', async () => {
    // One operation's chase; the cloud says it ended, and the completion's sync reads the cluster settled.
    await chases.start(gkeRef('j'), 'GKE RECONCILING');
    clock += 1000;
    const readSettled = clock;
    // A newer operation begins, and its sync (after that reading) finds the cluster in change: it joins the chase.
    clock += 1000;
    assert.equal(await chases.start(gkeRef('j'), 'GKE RECONCILING'), 'joined');
    // The completion, its reading older than the join, ends nothing: the chase follows the newer operation.
    assert.equal(await chases.complete(gkeRef('j'), readSettled), false);
    assert.ok(
      (await items()).some((i) => i.cluster.endsWith('/j')),
      'still followed',
    );
    // A completion read after the join ends it.
    clock += 1000;
    assert.equal(await chases.complete(gkeRef('j'), clock), true);
    assert.equal(
      (await items()).some((i) => i.cluster.endsWith('/j')),
      false,
    );
    // A join that finds the chase gone between its two writes follows the cluster with a chase of its own.
    await chases.start(gkeRef('k'), 'GKE RECONCILING');
    const stop = await endNextJoinedChase('k');
    try {
      assert.equal(await chases.start(gkeRef('k'), 'GKE RECONCILING'), 'started');
    } finally {
      stop();
    }
    assert.ok((await items()).some((i) => i.cluster.endsWith('/k')));
    // The looks of the three chases started here, taken off the queue for the cases after this one.
    const looks = await looksHandedOver(3);
    assert.deepEqual(looks.map((l) => l.ref.name).sort(), ['j', 'k', 'k']);
  });

  /**
   * Has the chase of `name` removed between a sync's failed put (a chase found) and its mark of the join, as
   * another function ending it then would. Returns a function that stops doing so.
   */
  async function endNextJoinedChase(name: string): Promise<() => void> {
    return proxy.intercept(async (call, forward) => {
      if (!call.operation.endsWith('.UpdateItem') || !call.body.includes('joinedAt')) return undefined;
      if (!call.body.includes(`/${name}"`)) return undefined;
      const { Items } = await documents.send(new ScanCommand({ TableName: TABLE }));
      for (const item of Items ?? [])
        if (String(item.cluster).endsWith(`/${name}`))
          await documents.send(new DeleteCommand({ TableName: TABLE, Key: { cluster: item.cluster } }));
      return forward(call.body);
    });
  }

  it('takes over a chase whose look was lost (long overdue); the old look then does nothing', async () => {
    await chases.start(gkeRef('d'), 'GKE STOPPING');
    const [old] = (await looksHandedOver()).filter((l) => l.ref.name === 'd');
    clock += 1000;
    assert.equal(await chases.start(gkeRef('d'), 'GKE STOPPING'), 'joined', 'a look is due: joined');
    clock += STALE_AFTER_MILLIS + 1000;
    assert.equal(await chases.start(gkeRef('d'), 'GKE STOPPING'), 'started', 'overdue by far: taken over');
    assert.equal(await chases.isCurrent(old!), false);
    const [fresh] = await looksHandedOver();
    assert.equal(await chases.isCurrent(fresh!), true);
    assert.equal(await chases.next(old!, 'GKE STOPPING'), 'superseded');
    assert.equal(
      (await items()).find((i) => i.cluster.endsWith('/d'))!.chaseId,
      fresh!.chaseId,
      'the old look changes nothing',
    );
    await chases.end(old!);
    assert.ok(
      (await items()).some((i) => i.cluster.endsWith('/d')),
      'nor ends the new chase',
    );
  });

  it('goes by its own record, never a look’s message: a look of another attempt does nothing, whatever it says; a look goes on once', async () => {
    const name = 'm';
    await chases.start(gkeRef(name), 'GKE PROVISIONING');
    const [look] = (await looksHandedOver()).filter((l) => l.ref.name === name);
    assert.ok(look);
    const record = async () => (await items()).find((i) => i.cluster.endsWith(`/${name}`));
    const kept = await record();
    const before = proxy.calls.length;
    // Messages written to look like the chase's: its id (logged, so anyone's who reads the log), any other attempt,
    // and whatever figures (a start far ahead would keep the chase going past its bound, a small attempt past maxLooks).
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 10_000 }).filter((attempt) => attempt !== look.attempt),
        fc.integer({ min: 0, max: 9_000_000_000_000_000 }),
        fc.constantFrom('GKE PROVISIONING', 'GKE STOPPING', 'EKS CREATING', 'x'),
        fc.integer({ min: 0, max: 900 }),
        fc.option(fc.integer({ min: 0, max: 9_000_000_000_000_000 }), { nil: undefined }),
        async (attempt, startedAt, state, delaySeconds, since) => {
          const forged: LookMessage = {
            ...look,
            attempt,
            startedAt,
            state,
            delaySeconds,
            ...(since === undefined ? {} : { since }),
          };
          assert.equal(await chases.isCurrent(forged), false);
          assert.equal(await chases.next(forged, 'GKE PROVISIONING'), 'superseded');
          assert.deepEqual(await record(), kept, 'the chase as it was');
        },
      ),
      { numRuns: 25 },
    );
    // SQS was sent no look for them (what the queue would hand over is what it was sent).
    assert.deepEqual(
      sentLooks(before).filter((s) => s.look.ref.name === name),
      [],
      'no look sent',
    );
    // The look and a copy of it with other figures (its chase and attempt): whichever comes first goes on, once,
    // with the record's figures; the other finds the attempt taken and sends nothing.
    const copy: LookMessage = {
      ...look,
      startedAt: 9_000_000_000_000_000,
      state: 'GKE STOPPING',
      delaySeconds: 900,
      since: 0,
    };
    clock += 1000;
    assert.deepEqual(
      [await chases.next(copy, 'GKE PROVISIONING'), await chases.next(look, 'GKE PROVISIONING')],
      ['again', 'superseded'],
    );
    const sent = (await looksHandedOver()).filter((l) => l.ref.name === name);
    assert.equal(sent.length, 1, 'one next look');
    const [next] = sent;
    assert.deepEqual(
      {
        attempt: next!.attempt,
        startedAt: next!.startedAt,
        state: next!.state,
        delaySeconds: next!.delaySeconds,
      },
      { attempt: look.attempt + 1, startedAt: look.startedAt, state: 'GKE PROVISIONING', delaySeconds: 2 },
      "the record's start and delay (the first, 1 s, doubled), not the copy's",
    );
    // The bound is the record's: a minute after the chase began, it ends.
    clock = look.startedAt + 61_000;
    assert.equal(await chases.next(next!, 'GKE PROVISIONING'), 'bounded');
    assert.equal(await record(), undefined);
  });

  it('a completion read before a look found the cluster in change ends nothing: that look follows a newer operation', async () => {
    const name = 'n';
    await chases.start(gkeRef(name), 'GKE RECONCILING');
    const [look] = (await looksHandedOver()).filter((l) => l.ref.name === name);
    assert.ok(look);
    // The cloud says the operation ended, and its sync reads the cluster settled; then a newer operation begins,
    // and the chase's look (after that reading) finds the cluster in change.
    clock += 1000;
    const readSettled = clock;
    clock += 1000;
    assert.equal(await chases.next(look, 'GKE RECONCILING'), 'again');
    // That completion, delivered again (or late), ends nothing: the chase follows what the look found.
    assert.equal(await chases.complete(gkeRef(name), readSettled), false);
    assert.ok(
      (await items()).some((i) => i.cluster.endsWith(`/${name}`)),
      'still followed',
    );
    clock += 1000;
    assert.equal(
      await chases.complete(gkeRef(name), clock),
      true,
      'a completion read after the look ends it',
    );
    await looksHandedOver();
  });

  it('a chase whose first look cannot be sent is not left holding the cluster', async () => {
    const broken = makeChases(knobs, { queueUrl: `${queueUrl}-gone`, table: TABLE }, () => clock);
    await assert.rejects(broken.start(ref('e'), 'EKS CREATING'), /queue|exist/i);
    assert.equal(
      (await items()).some((i) => i.cluster.endsWith('/e')),
      false,
    );
    assert.equal(await chases.start(ref('e'), 'EKS CREATING'), 'started');
    await looksHandedOver();
  });
});
