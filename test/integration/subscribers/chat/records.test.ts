/**
 * The chat notifier's records in DynamoDB (moto): the events already told, and the digests that gather a
 * sync across batches and are posted once quiet. The handler's whole path is walked by chatNotifier.test.ts.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CreateTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { CreateQueueCommand, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import {
  recordedKeys,
  recordGroup,
  type SyncGroup,
} from '../../../../functions/subscribers/chat/delivered.ts';
import { flushDigest, flushOf, gather } from '../../../../functions/subscribers/chat/digest.ts';
import type { PostOutcome } from '../../../../functions/subscribers/chat/delivery.ts';
import type { Notice } from '../../../../functions/subscribers/chat/notices.ts';
import type { ChatNotifierSettings } from '../../../../functions/subscribers/chat/settings.ts';
import { startMoto, type MotoServer } from '../../../env/moto.ts';
import { HUB_CREDENTIALS } from '../../../support/aws.ts';

const TABLE = 'chat-records';
const CHANNEL = '0123456789abcdef';
const keyOf = (eventId: string) => `${CHANNEL}#${eventId}`;

const created = (name: string): Notice => ({
  kind: 'created',
  subject: name,
  text: 'created (gke acme europe-west1)',
  key: `cluster:${name}`,
});
const group = (syncId: string, names: string[]): SyncGroup => ({
  syncId,
  account: '123456789012',
  region: 'eu-west-1',
  events: new Map(
    names.map((name) => [`event-${syncId}-${name}`, { notices: [created(name)], records: [name] }]),
  ),
});

/** A webhook that takes every post, and the posts it took. */
function collecting() {
  const posts: object[] = [];
  const send = async (payload: object): Promise<PostOutcome> => {
    posts.push(payload);
    return { posted: true, attempts: 1 };
  };
  return { posts, send };
}

describe('chat notifier records (DynamoDB and SQS on moto)', () => {
  let moto: MotoServer;
  let documents: DynamoDBDocumentClient;
  let sqs: SQSClient;
  let settings: ChatNotifierSettings;

  before(async () => {
    moto = await startMoto();
    const aws = { endpoint: moto.endpoint, region: 'us-east-1', credentials: HUB_CREDENTIALS };
    const dynamo = new DynamoDBClient(aws);
    await dynamo.send(
      new CreateTableCommand({
        TableName: TABLE,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }],
        KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }],
      }),
    );
    documents = DynamoDBDocumentClient.from(dynamo);
    sqs = new SQSClient(aws);
    const flushQueueUrl = (await sqs.send(new CreateQueueCommand({ QueueName: 'chat-flush' }))).QueueUrl!;
    settings = {
      format: 'slack',
      webhookSecret: 'unused',
      table: TABLE,
      minIntervalMs: 0,
      rememberSeconds: 3600,
      maxLines: 20,
      maxAttempts: 1,
      retryBaseMs: 1,
      requestTimeoutMs: 1000,
      safetyMarginMs: 0,
      quietSeconds: 900,
      flushQueueUrl,
    };
  });
  after(async () => {
    documents?.destroy();
    sqs?.destroy();
    await moto?.stop();
  });

  it('remembers the events told, in batches past DynamoDB’s limits, and forgets the expired ones', async () => {
    const many = group(
      'told',
      Array.from({ length: 130 }, (_, i) => `c${i}`),
    );
    await recordGroup(documents, settings, keyOf, many);
    await documents.send(
      new PutCommand({ TableName: TABLE, Item: { id: keyOf('expired'), expiration: 1, syncId: 'old' } }),
    );
    const asked = [...many.events.keys(), 'expired', 'never-told'].map(keyOf);
    const found = await recordedKeys(documents, TABLE, asked);
    assert.equal(found.size, 130);
    assert.ok(!found.has(keyOf('expired')));
    assert.ok(!found.has(keyOf('never-told')));
  });

  it('gathers a sync across batches into one digest, each cluster once, and sends a delayed flush for each batch', async () => {
    await gather(documents, sqs, settings, keyOf, CHANNEL, group('run-a', ['x', 'y']), [
      created('x'),
      created('y'),
    ]);
    await gather(documents, sqs, settings, keyOf, CHANNEL, group('run-a', ['y', 'z']), [
      created('y'),
      created('z'),
    ]);
    const item = (
      await documents.send(new GetCommand({ TableName: TABLE, Key: { id: `digest#${CHANNEL}#run-a` } }))
    ).Item!;
    const live = JSON.parse(item.live as string) as { counts: Record<string, number> };
    assert.deepEqual(live.counts, { created: 3 });
    const flushes = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: settings.flushQueueUrl, MaxNumberOfMessages: 10 }),
    );
    // moto holds delayed messages back as SQS does: none is visible before the quiet time.
    assert.equal(flushes.Messages?.length ?? 0, 0);
    const told = await recordedKeys(
      documents,
      TABLE,
      [...group('run-a', ['x', 'y', 'z']).events.keys()].map(keyOf),
    );
    assert.equal(told.size, 3);
  });

  it('a flush before the quiet time posts nothing; once quiet, one message, then nothing more', async () => {
    const { posts, send } = collecting();
    const id = `digest#${CHANNEL}#run-a`;
    assert.deepEqual(flushOf(JSON.stringify({ cpsyncChatFlush: { digest: id } })), { digest: id });
    assert.deepEqual(await flushDigest(documents, settings, { digest: id }, CHANNEL, send), {
      ok: true,
      posted: false,
      stop: false,
    });
    assert.equal(posts.length, 0);
    const quiet = { ...settings, quietSeconds: 0 };
    assert.deepEqual(await flushDigest(documents, quiet, { digest: id }, CHANNEL, send), {
      ok: true,
      posted: true,
      stop: false,
    });
    assert.equal(posts.length, 1);
    assert.match(JSON.stringify(posts[0]), /cpsync: 3 clusters created/);
    assert.deepEqual(await flushDigest(documents, quiet, { digest: id }, CHANNEL, send), {
      ok: true,
      posted: false,
      stop: false,
    });
    assert.equal(posts.length, 1);
  });

  it("a flush naming the version its batch wrote posts once no batch came since, whatever the sandboxes' clocks say; an earlier batch's flush leaves it to the last", async () => {
    await gather(documents, sqs, settings, keyOf, CHANNEL, group('run-v', ['a']), [created('a')]);
    await gather(documents, sqs, settings, keyOf, CHANNEL, group('run-v', ['b']), [created('b')]);
    const id = `digest#${CHANNEL}#run-v`;
    const version = (await documents.send(new GetCommand({ TableName: TABLE, Key: { id } }))).Item!
      .version as number;
    assert.deepEqual(
      flushOf(JSON.stringify({ cpsyncChatFlush: { digest: id, version } })),
      { digest: id, version },
      'the flush names the version',
    );
    const { posts, send } = collecting();
    // By this clock the digest is not quiet (its last batch came just now, the quiet time is longer): a flush
    // comes only once SQS has held it the quiet time, so its version says it all.
    assert.ok(settings.quietSeconds >= 5);
    assert.deepEqual(
      await flushDigest(documents, settings, { digest: id, version: version - 1 }, CHANNEL, send),
      {
        ok: true,
        posted: false,
        stop: false,
      },
    );
    assert.equal(posts.length, 0, "the first batch's flush leaves it to the last batch's");
    assert.deepEqual(await flushDigest(documents, settings, { digest: id, version }, CHANNEL, send), {
      ok: true,
      posted: true,
      stop: false,
    });
    assert.equal(posts.length, 1);
    assert.match(JSON.stringify(posts[0]), /cpsync: 2 clusters created/);
    // Delivered again (SQS is at-least-once): nothing more.
    assert.deepEqual(await flushDigest(documents, settings, { digest: id, version }, CHANNEL, send), {
      ok: true,
      posted: false,
      stop: false,
    });
    assert.equal(posts.length, 1);
  });

  it('a post that fails keeps the claimed tally, and the next flush posts it', async () => {
    await gather(documents, sqs, settings, keyOf, CHANNEL, group('run-b', ['p']), [created('p')]);
    const id = `digest#${CHANNEL}#run-b`;
    const quiet = { ...settings, quietSeconds: 0 };
    const failing = async (): Promise<PostOutcome> => ({
      posted: false,
      attempts: 1,
      reason: 'down',
      stop: true,
    });
    assert.deepEqual(await flushDigest(documents, quiet, { digest: id }, CHANNEL, failing), {
      ok: false,
      posted: false,
      stop: true,
    });
    const { posts, send } = collecting();
    assert.deepEqual(await flushDigest(documents, quiet, { digest: id }, CHANNEL, send), {
      ok: true,
      posted: true,
      stop: false,
    });
    assert.equal(posts.length, 1);
    assert.match(JSON.stringify(posts[0]), /cpsync: 1 cluster created/);
  });

  it('reads a flush only from its own record shape, and leaves another webhook’s digests alone', async () => {
    for (const body of ['{}', 'not json', JSON.stringify({ cpsyncChatFlush: { digest: 'other' } })])
      assert.equal(flushOf(body), undefined, body);
    const never = async (): Promise<PostOutcome> => assert.fail('another webhook’s digest was posted');
    assert.deepEqual(
      await flushDigest(
        documents,
        { ...settings, quietSeconds: 0 },
        { digest: 'digest#fedcba9876543210#run-a' },
        CHANNEL,
        never,
      ),
      { ok: true, posted: false, stop: false },
    );
  });
});
