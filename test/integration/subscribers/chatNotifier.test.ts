/**
 * The chat notifier end to end, short of Slack and Teams: real events made by the builders, published
 * through the EventBridge bus to moto, delivered by the kit's rules to an SQS queue, read back as
 * Lambda would hand them over (an SQS event of the queue's messages), and the handler invoked on them
 * against a local webhook receiver, the webhook secret in Secrets Manager and the delivery table in
 * DynamoDB (moto). Judged by what the receiver got and by the batch response.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { CreateTableCommand, DynamoDBClient, UpdateTimeToLiveCommand } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import {
  CreateEventBusCommand,
  EventBridgeClient,
  PutRuleCommand,
  PutTargetsCommand,
} from '@aws-sdk/client-eventbridge';
import { CreateSecretCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import {
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord, SQSRecordAttributes } from 'aws-lambda';
import type { ObservedCluster } from '../../../core/domain/model/observedCluster.ts';
import { normalize } from '../../../core/domain/normalize.ts';
import {
  buildAnnounceEvent,
  buildChangeEvent,
  buildOrphanEvent,
  buildScopeEvent,
} from '../../../core/sync/events.ts';
import type { FieldChange } from '../../../core/domain/plan.ts';
import { patterns, type EventPattern } from '../../../events/index.ts';
import type { CpsyncEvent } from '../../../events/types.ts';
import type * as ChatNotifier from '../../../functions/subscribers/chat/handler.ts';
import { startMoto, type MotoServer } from '../../env/moto.ts';
import { HUB_CREDENTIALS } from '../../support/aws.ts';
import { aksCluster, eksCluster, gkeCluster, NOW } from '../../support/fixtures.ts';
import { lambdaContext, sqsRecord } from '../../support/lambda.ts';
import { handedOver, publishTo, wholeEventTarget } from '../../support/events.ts';
import { inventoryOptions } from '../../support/settings.ts';
import { until } from '../../support/until.ts';

/**
 * What a person sees of a Slack or Teams payload, a line each: the title, each cluster's line (its bold
 * subject as `*subject*`), "and N more", the footer. Only the elements that show text as it is (Slack's
 * rich-text `text` and `plain_text`; Teams' TextRun) may carry cloud strings; any other text element met
 * is returned with a `MARKUP:` prefix so that a test can see markup reach a place that reads it.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- payloads taken apart as JSON
function shown(post: { body: any }): string[] {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const run = (r: any) => (r.style?.bold || r.weight === 'Bolder' ? `*${r.text}*` : r.text);
  const lines: string[] = [];
  const body = post.body;
  if (body.attachments) {
    for (const block of body.attachments[0].content.body) {
      if (block.type === 'RichTextBlock') lines.push(block.inlines.map(run).join(''));
      else lines.push(block.text);
    }
    return lines;
  }
  for (const block of body.blocks) {
    if (block.type === 'section')
      lines.push(block.text.type === 'plain_text' ? block.text.text : `MARKUP:${block.text.text}`);
    else if (block.type === 'rich_text')
      for (const list of block.elements)
        for (const item of list.elements) lines.push(item.elements.map(run).join(''));
    else if (block.type === 'context')
      for (const element of block.elements)
        lines.push(element.type === 'plain_text' ? element.text : `MARKUP:${element.text}`);
  }
  return lines;
}

const BUS = 'cpsync';
const TABLE = 'chat-notifier-delivered';
/** The part of a webhook URL that is the credential: it must never reach a log. */
const TOKEN = 'T0CPSYNC/B0CHAT/not-for-logs-9f8e7d';
const options = inventoryOptions();

// ---------------------------------------------------------------------------------------------------
// A webhook receiver: records every POST; answers 429 for the next N when told, 500 on /down.

interface Post {
  path: string;
  at: number;
  status: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- webhook payloads taken apart as JSON
  body: any;
}

class Receiver {
  readonly posts: Post[] = [];
  #server: Server | undefined;
  #throttled = 0;
  #retryAfter = '1';
  port = 0;

  async start(): Promise<void> {
    this.#server = createServer((request: IncomingMessage, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const at = Date.now();
        const path = request.url ?? '';
        let status = 200;
        if (path.startsWith('/down/')) status = 500;
        else if (this.#throttled > 0) {
          this.#throttled--;
          status = 429;
        }
        this.posts.push({ path, at, status, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) });
        if (status === 429) response.writeHead(429, { 'retry-after': this.#retryAfter }).end('rate_limited');
        else response.writeHead(status, { 'content-type': 'text/plain' }).end(status === 200 ? 'ok' : 'down');
      });
    });
    await new Promise<void>((resolve) => this.#server!.listen(0, '127.0.0.1', resolve));
    this.port = (this.#server!.address() as { port: number }).port;
  }

  url(path: 'hooks' | 'down'): string {
    return `http://127.0.0.1:${this.port}/${path}/${TOKEN}`;
  }

  /** The next `count` posts are answered 429 with `Retry-After: retryAfter`. */
  throttle(count: number, retryAfter = '1'): void {
    this.#throttled = count;
    this.#retryAfter = retryAfter;
  }

  /** Posts from `since` (an index into `posts`) that the receiver took (200). */
  delivered(since: number): Post[] {
    return this.posts.slice(since).filter((p) => p.status === 200);
  }

  async stop(): Promise<void> {
    this.#server?.closeAllConnections();
    await new Promise((resolve) => this.#server?.close(resolve));
  }
}

// ---------------------------------------------------------------------------------------------------
// Events, made by the real builders from normalized fixture clusters

function profileOf(cluster: ObservedCluster) {
  const profile = normalize(cluster, options, NOW);
  profile.metadata = {
    ...profile.metadata,
    namespace: 'inventory',
    uid: `uid-${cluster.name}`,
    resourceVersion: '7',
  };
  return profile;
}

const contextOf = (cluster: ObservedCluster, syncId: string) => ({
  syncId,
  occurredAt: NOW,
  scope: { provider: cluster.provider, account: cluster.account, region: cluster.region },
});

const created = (cluster: ObservedCluster, syncId: string) =>
  buildChangeEvent(
    { kind: 'created', profile: profileOf(cluster), changes: [{ field: 'spec', after: {} }] },
    contextOf(cluster, syncId),
  );
const updated = (cluster: ObservedCluster, syncId: string, changes: FieldChange[]) =>
  buildChangeEvent(
    { kind: 'updated', profile: profileOf(cluster), changes, previousResourceVersion: '6' },
    contextOf(cluster, syncId),
  );
const deleted = (cluster: ObservedCluster, syncId: string) =>
  buildChangeEvent(
    { kind: 'deleted', profile: profileOf(cluster), changes: [{ field: 'metadata', before: {} }] },
    contextOf(cluster, syncId),
  );
const scopeSynced = (
  syncId: string,
  scope: { provider: 'eks' | 'gke' | 'aks'; account: string; region: string },
  kind: 'complete' | 'partial' | 'failed',
) =>
  buildScopeEvent(
    {
      outcome: {
        scope,
        kind,
        ...(kind === 'failed'
          ? { failure: { reason: 'AccessDenied' as const, message: 'not authorized: eks:ListClusters' } }
          : {}),
        ...(kind === 'partial' ? { missing: ['europe-west1-b'] } : {}),
      },
      counts: {
        listed: 3,
        created: 0,
        updated: 0,
        deleted: 0,
        unchanged: 2,
        failed: kind === 'partial' ? 1 : 0,
        invalid: 0,
      },
      durationMs: 12,
    },
    { syncId, occurredAt: NOW, scope },
  );

// ---------------------------------------------------------------------------------------------------

describe('chat notifier (EventBridge → rules → SQS → handler → webhook; moto)', () => {
  let moto: MotoServer;
  let receiver: Receiver;
  let eventBridge: EventBridgeClient;
  let sqs: SQSClient;
  let documents: DynamoDBDocumentClient;
  let makeChatNotifier: typeof ChatNotifier.makeChatNotifier;
  /** The queue of the recommended rules, and one taking every event cpsync publishes. */
  const queues: Record<'chat' | 'everything' | 'flush', { url: string; arn: string }> = {} as never;
  const flushDelays: Array<number | undefined> = [];
  const logs: string[] = [];
  const restore: Array<() => void> = [];

  before(async () => {
    // The function's logs (Powertools writes JSON lines: info to stdout, warnings and errors to stderr)
    // are kept for the assertions on them, and kept out of the test report; everything else goes through.
    for (const stream of [process.stdout, process.stderr]) {
      const write = stream.write.bind(stream);
      restore.push(() => (stream.write = write));
      stream.write = ((chunk: string | Uint8Array, ...rest: never[]) => {
        if (typeof chunk === 'string' && chunk.startsWith('{"level"')) {
          logs.push(chunk);
          return true;
        }
        return write(chunk, ...rest);
      }) as typeof stream.write;
    }

    moto = await startMoto();
    receiver = new Receiver();
    await receiver.start();
    Object.assign(process.env, {
      AWS_ENDPOINT_URL: moto.endpoint,
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: HUB_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: HUB_CREDENTIALS.secretAccessKey,
      // Credentials come from the environment: nothing asks the instance metadata address.
      AWS_EC2_METADATA_DISABLED: 'true',
      POWERTOOLS_METRICS_DISABLED: 'true',
      POWERTOOLS_TRACE_ENABLED: 'false',
      POWERTOOLS_LOG_LEVEL: 'INFO',
      CHAT_WEBHOOK_SECRET: 'cpsync/chat-webhook',
      CHAT_IDEMPOTENCY_TABLE: TABLE,
      CHAT_MIN_INTERVAL_MS: '300',
    });
    for (const name of ['AWS_PROFILE', 'AWS_SESSION_TOKEN', 'CHAT_FORMAT']) delete process.env[name];
    // After the environment is set: Powertools reads it when the function's module is loaded.
    ({ makeChatNotifier } = await import('../../../functions/subscribers/chat/handler.ts'));

    const aws = { endpoint: moto.endpoint, region: 'us-east-1', credentials: HUB_CREDENTIALS };
    const secrets = new SecretsManagerClient(aws);
    for (const [Name, SecretString] of [
      ['cpsync/chat-webhook', receiver.url('hooks')],
      ['cpsync/chat-webhook-json', JSON.stringify({ url: receiver.url('hooks') })],
      ['cpsync/chat-webhook-down', receiver.url('down')],
      // A user and a password in the URL (one with an @ in it), which no chat service asks for.
      ['cpsync/chat-webhook-userinfo', receiver.url('hooks').replace('://', '://someone:hush@hush@')],
    ])
      await secrets.send(new CreateSecretCommand({ Name, SecretString }));
    secrets.destroy();

    const dynamo = new DynamoDBClient(aws);
    await dynamo.send(
      new CreateTableCommand({
        TableName: TABLE,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }],
        KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }],
      }),
    );
    await dynamo.send(
      new UpdateTimeToLiveCommand({
        TableName: TABLE,
        TimeToLiveSpecification: { AttributeName: 'expiration', Enabled: true },
      }),
    );
    documents = DynamoDBDocumentClient.from(dynamo);

    eventBridge = new EventBridgeClient(aws);
    sqs = new SQSClient(aws);
    // The delay of every message sent to the flush queue, as SQS is asked to hold it.
    sqs.middlewareStack.add(
      (next) => async (args) => {
        const input = args.input as { QueueUrl?: string; DelaySeconds?: number };
        if (input.QueueUrl === queues.flush?.url) flushDelays.push(input.DelaySeconds);
        return next(args);
      },
      { step: 'initialize', name: 'flushDelays' },
    );
    await eventBridge.send(new CreateEventBusCommand({ Name: BUS }));
    const wire = async (queue: 'chat' | 'everything' | 'flush', rules: EventPattern[]) => {
      const url = (await sqs.send(new CreateQueueCommand({ QueueName: `notifier-${queue}` }))).QueueUrl!;
      const arn = (
        await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }))
      ).Attributes!.QueueArn!;
      for (const [i, pattern] of rules.entries()) {
        const Name = `${queue}-${i}`;
        await eventBridge.send(
          new PutRuleCommand({ Name, EventBusName: BUS, EventPattern: JSON.stringify(pattern) }),
        );
        await eventBridge.send(
          new PutTargetsCommand({
            Rule: Name,
            EventBusName: BUS,
            Targets: [wholeEventTarget(arn)],
          }),
        );
      }
      queues[queue] = { url, arn };
    };
    // What the notifier is meant to receive, as its wiring subscribes it.
    await wire('chat', [
      patterns.created(),
      patterns.deleted(),
      patterns.changed({ fields: ['status.version.kubernetes'], fieldPrefixes: ['status.conditions'] }),
      patterns.scopeSynced({ outcome: 'failed' }),
    ]);
    // A notifier wired to everything: what is not worth a message must be let go.
    await wire('everything', [patterns.inventory(), patterns.scopeSynced(), patterns.scopeOrphaned()]);
    // The queue a gathering notifier sends its digests' flushes to (in AWS, its own queue).
    await wire('flush', []);
  });

  after(async () => {
    for (const undo of restore) undo();
    eventBridge?.destroy();
    sqs?.destroy();
    documents?.destroy();
    await receiver?.stop();
    await moto?.stop();
  });

  const publish = (events: readonly CpsyncEvent[]) => publishTo(moto.endpoint, BUS, events);

  /** Every message now in `queue` as the SQS event Lambda would hand over (then removed from the queue). */
  async function batchOf(queue: 'chat' | 'everything' | 'flush'): Promise<SQSEvent> {
    const { url, arn } = queues[queue];
    const records: SQSRecord[] = [];
    for (;;) {
      const { Messages = [] } = await sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: url,
          MaxNumberOfMessages: 10,
          WaitTimeSeconds: 0,
          MessageSystemAttributeNames: ['All'],
          MessageAttributeNames: ['All'],
        }),
      );
      if (Messages.length === 0) break;
      for (const m of Messages)
        records.push({
          messageId: m.MessageId!,
          receiptHandle: m.ReceiptHandle!,
          body: m.Body!,
          attributes: m.Attributes as unknown as SQSRecordAttributes,
          messageAttributes: {},
          md5OfBody: m.MD5OfBody!,
          eventSource: 'aws:sqs',
          eventSourceARN: arn,
          awsRegion: 'us-east-1',
        });
      await sqs.send(
        new DeleteMessageBatchCommand({
          QueueUrl: url,
          Entries: Messages.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle! })),
        }),
      );
    }
    return { Records: records };
  }

  /**
   * The flush queue's `count` messages, once SQS has handed every one over (each after its delay), as Lambda would
   * hand them over in one batch; waited for as long as it takes.
   */
  async function flushes(count: number): Promise<SQSEvent> {
    assert.ok(count > 0, 'flushes were sent');
    return {
      Records: await handedOver(async () => (await batchOf('flush')).Records, count, 'the flush queue'),
    };
  }

  /** The delivery records of the table, by event id (the part after the webhook's key). */
  async function recorded(): Promise<Map<string, { expiration: number }>> {
    const { Items = [] } = await documents.send(new ScanCommand({ TableName: TABLE }));
    return new Map(Items.map((i) => [String(i.id).split('#')[1]!, { expiration: Number(i.expiration) }]));
  }

  const eventIds = (events: readonly CpsyncEvent[]) => events.map((e) => e.detail.eventId);
  const slackText = (post: Post) => shown(post).join('\n');
  const failures = (response: SQSBatchResponse) => response.batchItemFailures.map((f) => f.itemIdentifier);

  it('posts ONE message for a sync of 100 creations, and lets go of what is not worth one', async () => {
    const clusters = Array.from({ length: 100 }, (_, i) =>
      eksCluster({ name: `svc-${String(i).padStart(3, '0')}`, region: i % 2 ? 'us-east-1' : 'eu-west-1' }),
    );
    const label = updated(clusters[0]!, 'sync-100', [
      { field: 'metadata.labels[team]', before: 'payments', after: 'billing' },
    ]);
    const worth = clusters.map((c) => created(c, 'sync-100'));
    const noise = [
      label,
      buildAnnounceEvent(profileOf(clusters[1]!), contextOf(clusters[1]!, 'announce-1')),
      scopeSynced('sync-100', { provider: 'eks', account: '111122223333', region: 'us-east-1' }, 'complete'),
      buildOrphanEvent(['inventory/old'], contextOf(aksCluster({ name: 'old' }), 'sync-100')),
    ];
    await publish([...worth, ...noise]);
    const batch = await batchOf('everything');
    assert.equal(batch.Records.length, 104);
    // The recommended rules took the 100 creations alone; that queue is not read here.
    assert.equal((await batchOf('chat')).Records.length, 100);

    const since = receiver.posts.length;
    const started = performance.now();
    const response = await makeChatNotifier()(batch, lambdaContext('chat-notifier'));
    const elapsed = performance.now() - started;

    assert.deepEqual(response, { batchItemFailures: [] });
    const posts = receiver.posts.slice(since);
    assert.equal(posts.length, 1, 'exactly one post');
    const text = slackText(posts[0]!);
    assert.match(posts[0]!.body.text, /^cpsync: 100 clusters created$/);
    assert.match(text, /\*svc-000\* created \(eks 111122223333 eu-west-1, Kubernetes 1\.31\)/);
    assert.match(text, /…and 80 more/);
    assert.doesNotMatch(text, /billing|old|announce/);
    assert.match(text, /sync sync-100/);
    // Within Slack's limits.
    assert.ok(posts[0]!.body.blocks.length <= 50);
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- Slack blocks as JSON
    assert.ok(posts[0]!.body.blocks.every((b: any) => (b.text?.text ?? '').length <= 3000));
    // The 100 creations are recorded as delivered, for a day; nothing else is.
    const kept = await recorded();
    assert.deepEqual([...kept.keys()].sort(), eventIds(worth).sort());
    const day = Date.now() / 1000 + 24 * 3600;
    assert.ok([...kept.values()].every((r) => Math.abs(r.expiration - day) < 120));
    console.log(
      `chat notifier: ${batch.Records.length} events in (100 worth a message), ${posts.length} message out, ` +
        `${elapsed.toFixed(0)} ms`,
    );
  });

  // The mixed sync of the next cases, through the recommended rules.
  const payments = eksCluster({ name: 'payments', region: 'us-east-1', account: '111122223333' });
  const analytics = gkeCluster({ name: 'analytics', account: 'acme-data' });
  const web = aksCluster({ name: 'web' });
  const search = eksCluster({ name: 'search', region: 'eu-west-1', account: '444455556666' });
  const mixed = [
    created(search, 'sync-mixed'),
    updated(analytics, 'sync-mixed', [
      { field: 'status.version.kubernetes', before: '1.30.5-gke.1014001', after: '1.31.1-gke.1146000' },
    ]),
    updated(payments, 'sync-mixed', [
      {
        field: 'status.conditions[ControlPlaneHealthy]',
        before: { status: 'True', reason: 'Running' },
        after: { status: 'False', reason: 'ClusterUnhealthy', message: 'DEGRADED' },
      },
    ]),
    updated(payments, 'sync-mixed', [{ field: 'metadata.labels[team]', before: 'a', after: 'b' }]),
    deleted(web, 'sync-mixed'),
    scopeSynced('sync-other', { provider: 'eks', account: '999988887777', region: 'ap-south-1' }, 'failed'),
  ];
  let mixedBatch: SQSEvent;

  it('posts one message per sync of a mixed batch, each saying what happened', async () => {
    await publish(mixed);
    mixedBatch = await batchOf('chat');
    // The label update is not even delivered: the rules select what the notifier tells.
    assert.equal(mixedBatch.Records.length, 5);
    const since = receiver.posts.length;
    const response = await makeChatNotifier({ documents })(mixedBatch, lambdaContext('chat-notifier'));
    assert.deepEqual(response, { batchItemFailures: [] });
    const posts = receiver.delivered(since);
    assert.equal(posts.length, 2, 'one message per sync id');
    const [sync, other] = ['sync-mixed', 'sync-other'].map((id) =>
      posts.find((p) => slackText(p).includes(`sync ${id} `)),
    );
    assert.ok(sync && other, 'a message for each sync');
    assert.equal(
      sync.body.text,
      'cpsync: 1 cluster created, 1 upgraded, 1 deleted, 1 health change',
      'the title counts each kind',
    );
    const text = slackText(sync);
    assert.match(
      text,
      /\*analytics\* Kubernetes 1\.30\.5-gke\.1014001 → 1\.31\.1-gke\.1146000 \(gke acme-data/,
    );
    assert.match(text, /\*payments\* ControlPlaneHealthy is now False \(was True\): ClusterUnhealthy/);
    assert.match(text, /\*web\* deleted \(aks 00000000-1111-2222-3333-444444444444 westeurope\)/);
    assert.match(text, /\*search\* created \(eks 444455556666 eu-west-1, Kubernetes 1\.31\)/);
    // The most pressing first: health, then deletions, version changes, creations.
    assert.ok(text.indexOf('payments') < text.indexOf('*web*'));
    assert.ok(text.indexOf('*web*') < text.indexOf('analytics'));
    assert.ok(text.indexOf('analytics') < text.indexOf('*search*'));
    assert.equal(other.body.text, 'cpsync: 1 scope failed');
    assert.match(
      slackText(other),
      /\*eks\/999988887777\/ap-south-1\* could not be synced: AccessDenied: not authorized: eks:ListClusters/,
    );
    assert.ok(
      other.body.blocks.every((b: { type: string }) => ['section', 'rich_text', 'context'].includes(b.type)),
    );
  });

  it('does not tell an event twice: the batch redelivered, the same changes published again, an event twice in a batch', async () => {
    const since = receiver.posts.length;
    const notifier = makeChatNotifier();
    assert.deepEqual(await notifier(mixedBatch, lambdaContext('chat-notifier')), { batchItemFailures: [] });
    // Published again (a retry, a recovery): new EventBridge ids, the same event ids.
    await publish(mixed);
    const republished = await batchOf('chat');
    assert.equal(republished.Records.length, 5);
    assert.notDeepEqual(
      republished.Records.map((r) => (JSON.parse(r.body) as { id: string }).id).sort(),
      mixedBatch.Records.map((r) => (JSON.parse(r.body) as { id: string }).id).sort(),
    );
    assert.deepEqual(await notifier(republished, lambdaContext('chat-notifier')), { batchItemFailures: [] });
    assert.equal(receiver.posts.length, since, 'no new post');

    // One event delivered twice in one batch (EventBridge, too, is at-least-once): one line, one message.
    const twice = created(eksCluster({ name: 'twice', account: '555566667777' }), 'sync-twice');
    await publish([twice]);
    await publish([twice]);
    const doubled = await batchOf('chat');
    assert.equal(doubled.Records.length, 2);
    assert.deepEqual(await notifier(doubled, lambdaContext('chat-notifier')), { batchItemFailures: [] });
    const posts = receiver.delivered(since);
    assert.equal(posts.length, 1);
    assert.equal(posts[0]!.body.text, 'cpsync: 1 cluster created');
    assert.equal(slackText(posts[0]!).match(/\*twice\*/g)?.length, 1);
  });

  it('shows hostile cloud strings as text in Slack and Teams: no mention, link, formatting or forged line acts; sizes within each chat’s limit', async () => {
    const hostile =
      '<!channel> <https://evil.example|click> [here](https://evil.example) **b** _i_ :fire:\n• forged\u202e\u2028\u061c\u00ad\u009b\u{e0041}';
    for (const format of ['slack', 'teams'] as const) {
      // Clusters of each format's own (an event told to a webhook once is not told again). One sync
      // carries the hostile strings; another, 60 clusters with long CJK names and messages.
      const odd = eksCluster({ name: `odd-${format}`, account: '555566667777' });
      const name = (i: number) => `集群-${format}-${'名'.repeat(95)}-${i}`;
      const many = Array.from({ length: 60 }, (_, i) =>
        eksCluster({ name: name(i), account: '555566667777' }),
      );
      await publish([
        created(odd, 'sync-hostile'),
        updated(odd, 'sync-hostile', [
          { field: 'status.version.kubernetes', before: '1.31', after: hostile },
          {
            field: 'status.conditions[ControlPlaneHealthy]',
            before: 'True',
            after: { status: 'False', reason: hostile, message: hostile },
          },
        ]),
        ...many.map((c) => created(c, 'sync-big')),
        ...many.map((c) =>
          updated(c, 'sync-big', [
            {
              field: 'status.conditions[ControlPlaneHealthy]',
              before: 'True',
              after: { status: 'False', reason: '故障'.repeat(120) },
            },
          ]),
        ),
      ]);
      const batch = await batchOf('chat');
      const since = receiver.posts.length;
      const response = await makeChatNotifier({ documents, format, maxLines: 50 })(
        batch,
        lambdaContext('chat-notifier'),
      );
      assert.deepEqual(response, { batchItemFailures: [] });
      const posts = receiver.delivered(since);
      assert.equal(posts.length, 2, `${format}: one message per sync`);
      for (const post of posts) {
        const bytes = Buffer.byteLength(JSON.stringify(post.body));
        assert.ok(bytes <= (format === 'teams' ? 28 * 1024 : 40_000), `${format}: ${bytes} bytes`);
        const lines = shown(post);
        assert.deepEqual(
          lines.filter((l) => l.startsWith('MARKUP:')),
          [],
          'cloud strings only where shown as text',
        );
        assert.ok(!lines.some((l) => l.startsWith('• forged')), 'no forged line');
        assert.ok(
          lines.every((l) => !/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/u.test(l)),
          'no newline, separator, bidi override or other control or format character acts',
        );
      }
      const [oddPost, bigPost] = ['1 cluster created', '60 clusters created'].map((title) =>
        posts.find((p) => shown(p)[0]!.startsWith(`cpsync: ${title}`))!,
      );
      const oddLines = shown(oddPost!);
      assert.equal(oddLines[0], 'cpsync: 1 cluster created, 1 upgraded, 1 health change');
      assert.ok(
        oddLines.some((l) =>
          l.includes(
            '<!channel> <https://evil.example|click> [here](https://evil.example) **b** _i_ :fire:\\u{a}• forged\\u{202e}\\u{2028}\\u{61c}\\u{ad}\\u{9b}\\u{e0041}',
          ),
        ),
        `${format}: the hostile text is there, as text, its newline and override shown: ${oddLines.join('\n')}`,
      );
      const lines = shown(bigPost!);
      assert.equal(lines[0], 'cpsync: 60 clusters created, 60 health changes');
      const more = lines.find((l) => /^…and \d+ more$/.test(l));
      const listed = lines.filter((l) => l.startsWith('*')).length;
      assert.equal(
        listed + Number(/\d+/.exec(more ?? '0')![0]),
        120,
        `${format}: every notice listed or counted`,
      );
      if (format === 'teams')
        assert.ok(listed < 50, `lines moved into "and N more" to fit: ${listed} listed`);
    }
  });

  it('gathers a sync that spans batches into ONE message once it is quiet, tells nothing twice, and gives a late event a message of its own', async () => {
    const clusters = Array.from({ length: 30 }, (_, i) =>
      eksCluster({ name: `spread-${String(i).padStart(2, '0')}`, account: '666677778888' }),
    );
    await publish(clusters.map((c) => created(c, 'sync-spread')));
    const batch = await batchOf('chat');
    assert.equal(batch.Records.length, 30);
    const notifier = makeChatNotifier({ documents, sqs, quietSeconds: 1, flushQueueUrl: queues.flush.url });
    const since = receiver.posts.length;
    flushDelays.splice(0);
    // Three batches, as Lambda hands over a sync too large for one; the first delivered twice.
    for (const part of [0, 0, 1, 2]) {
      const records = batch.Records.slice(part * 10, part * 10 + 10);
      assert.deepEqual(await notifier({ Records: records }, lambdaContext('chat-notifier')), {
        batchItemFailures: [],
      });
    }
    assert.equal(receiver.posts.length, since, 'nothing posted while the sync may go on');
    assert.deepEqual(
      flushDelays.splice(0),
      [1, 1, 1],
      'each batch that added to the digest sends its flush held by SQS for the quiet time',
    );
    const handed = await flushes(3);
    assert.equal(handed.Records.length, 3, 'a flush per batch that added to the digest');
    assert.deepEqual(await notifier(handed, lambdaContext('chat-notifier')), { batchItemFailures: [] });
    // The same flushes again (redelivered): nothing more.
    assert.deepEqual(await notifier(handed, lambdaContext('chat-notifier')), { batchItemFailures: [] });
    const posts = receiver.delivered(since);
    assert.equal(posts.length, 1, 'one message for the whole sync');
    const lines = shown(posts[0]!);
    assert.equal(lines[0], 'cpsync: 30 clusters created', 'the title counts the whole sync, each event once');
    assert.equal(lines.filter((l) => l.startsWith('*spread-')).length, 20);
    assert.ok(lines.includes('…and 10 more'));

    // A late event of the same sync: a message of its own, once quiet again; its flush first fails.
    await publish([created(eksCluster({ name: 'straggler', account: '666677778888' }), 'sync-spread')]);
    flushDelays.splice(0);
    assert.deepEqual(await notifier(await batchOf('chat'), lambdaContext('chat-notifier')), {
      batchItemFailures: [],
    });
    const late = await flushes(flushDelays.splice(0).length);
    receiver.throttle(100, '0');
    const impatient = makeChatNotifier({
      documents,
      sqs,
      quietSeconds: 1,
      flushQueueUrl: queues.flush.url,
      maxAttempts: 2,
      retryBaseMs: 10,
    });
    const refused = await impatient(late, lambdaContext('chat-notifier'));
    receiver.throttle(0, '0');
    assert.deepEqual(
      refused.batchItemFailures.map((f) => f.itemIdentifier),
      late.Records.map((r) => r.messageId),
      'the flush comes back when its message could not be posted',
    );
    assert.deepEqual(await notifier(late, lambdaContext('chat-notifier')), { batchItemFailures: [] });
    const after = receiver.delivered(since);
    assert.equal(after.length, 2);
    assert.deepEqual(shown(after[1]!).slice(0, 2), [
      'cpsync: 1 cluster created',
      '*straggler* created (eks 666677778888 us-east-1, Kubernetes 1.31)',
    ]);
  });

  it('posts ONE message for a scheduled run over several scopes (each its own sync, one run id) and tells each cluster once, whatever its projected copies, across batches', async () => {
    const run = 'exec-run-7';
    /** A scope's sync of the run, as the scope worker makes it: its own sync id, the run's id. */
    const ofRun = (scope: { provider: 'eks' | 'gke' | 'aks'; account: string; region: string }) => ({
      syncId: `${run}/${scope.provider}/${scope.account}/${scope.region}`,
      runId: run,
      occurredAt: NOW,
      scope,
    });
    const scopeOf = (cluster: ObservedCluster) => ({
      provider: cluster.provider,
      account: cluster.account,
      region: cluster.provider === 'eks' ? cluster.region : '*',
    });
    /** The cluster's profile as written in `namespace` (its own, or a projected copy). */
    const copyIn = (cluster: ObservedCluster, namespace: string) => {
      const profile = profileOf(cluster);
      profile.metadata = { ...profile.metadata, namespace, uid: `uid-${cluster.name}-${namespace}` };
      return profile;
    };
    const alpha = eksCluster({ name: 'alpha', region: 'us-east-1', account: '888899990000' });
    const beta = eksCluster({ name: 'beta', region: 'eu-west-1', account: '888899990000' });
    const gamma = gkeCluster({ name: 'gamma', account: 'acme-run' });
    const createdIn = (cluster: ObservedCluster, namespace: string) =>
      buildChangeEvent(
        { kind: 'created', profile: copyIn(cluster, namespace), changes: [{ field: 'spec', after: {} }] },
        ofRun(scopeOf(cluster)),
      );
    const upgradedIn = (cluster: ObservedCluster, namespace: string) =>
      buildChangeEvent(
        {
          kind: 'updated',
          profile: copyIn(cluster, namespace),
          previousResourceVersion: '6',
          changes: [{ field: 'status.version.kubernetes', before: '1.30', after: '1.31' }],
        },
        ofRun(scopeOf(cluster)),
      );
    const failedScope = {
      provider: 'aks' as const,
      account: '00000000-aaaa-bbbb-cccc-000000000001',
      region: '*',
    };
    const events = [
      // alpha and its copy in kueue-system; beta and two copies; gamma upgraded in its namespace and a copy.
      createdIn(alpha, 'inventory'),
      createdIn(alpha, 'kueue-system'),
      createdIn(beta, 'inventory'),
      createdIn(beta, 'kueue-system'),
      createdIn(beta, 'argocd'),
      upgradedIn(gamma, 'inventory'),
      upgradedIn(gamma, 'argocd'),
      buildScopeEvent(
        {
          outcome: {
            scope: failedScope,
            kind: 'failed',
            failure: { reason: 'AccessDenied', message: 'not authorized' },
          },
          counts: { listed: 0, created: 0, updated: 0, deleted: 0, unchanged: 0, failed: 0, invalid: 0 },
          durationMs: 5,
        },
        ofRun(failedScope),
      ),
    ];
    assert.equal(new Set(events.map((e) => e.detail.syncId)).size, 4, 'four scopes, a sync each');
    await publish(events);
    const batch = await batchOf('chat');
    assert.equal(batch.Records.length, 8);
    const notifier = makeChatNotifier({ documents, sqs, quietSeconds: 1, flushQueueUrl: queues.flush.url });
    const since = receiver.posts.length;
    flushDelays.splice(0);
    // Two batches, every cluster's copies split between them: its own profile in the first, the copies in
    // the second (Lambda hands a run over as it comes).
    const isCopy = (record: SQSRecord) => {
      const { namespace } = (JSON.parse(record.body) as { detail: { namespace?: string } }).detail;
      return namespace !== undefined && namespace !== 'inventory';
    };
    for (const copies of [false, true])
      assert.deepEqual(
        await notifier(
          { Records: batch.Records.filter((r) => isCopy(r) === copies) },
          lambdaContext('chat-notifier'),
        ),
        { batchItemFailures: [] },
      );
    assert.deepEqual(
      await notifier(await flushes(flushDelays.splice(0).length), lambdaContext('chat-notifier')),
      {
        batchItemFailures: [],
      },
    );
    const posts = receiver.delivered(since);
    assert.equal(posts.length, 1, 'one message for the run');
    const lines = shown(posts[0]!);
    assert.equal(lines[0], 'cpsync: 2 clusters created, 1 upgraded, 1 scope failed');
    for (const name of ['alpha', 'beta', 'gamma'])
      assert.equal(
        lines.filter((l) => l.startsWith(`*${name}*`)).length,
        1,
        `${name} once: ${lines.join('\n')}`,
      );
    assert.ok(lines.some((l) => l.startsWith(`*aks/${failedScope.account}/**`)));
    assert.match(lines.at(-1)!, new RegExp(`^sync ${run} · `), 'the run named');
  });

  it('tells a sync of 5,000 creations, handed over in five batches of 1,000, in one message within each chat’s limits', async () => {
    for (const format of ['slack', 'teams'] as const) {
      const events = Array.from({ length: 5000 }, (_, i) =>
        created(eksCluster({ name: `fleet-${format}-${i}`, account: '777788889999' }), `sync-5000-${format}`),
      );
      // As EventBridge delivers each to the queue, and Lambda hands the queue's messages over.
      const records = events.map((e, i) =>
        sqsRecord(
          `fleet-${format}-${i}`,
          JSON.stringify({
            version: '0',
            id: `fleet-${i}`,
            'detail-type': e.detailType,
            source: e.source,
            account: '123456789012',
            time: e.time,
            region: 'us-east-1',
            resources: e.resources,
            detail: e.detail,
          }),
        ),
      );
      const notifier = makeChatNotifier({
        documents,
        sqs,
        format,
        quietSeconds: 1,
        flushQueueUrl: queues.flush.url,
      });
      const since = receiver.posts.length;
      flushDelays.splice(0);
      for (let i = 0; i < 5; i++)
        assert.deepEqual(
          await notifier(
            { Records: records.slice(i * 1000, (i + 1) * 1000) },
            lambdaContext('chat-notifier'),
          ),
          { batchItemFailures: [] },
        );
      assert.deepEqual(
        await notifier(await flushes(flushDelays.splice(0).length), lambdaContext('chat-notifier')),
        { batchItemFailures: [] },
      );
      const posts = receiver.delivered(since);
      assert.equal(posts.length, 1, `${format}: one message for the sync`);
      const lines = shown(posts[0]!);
      assert.equal(lines[0], 'cpsync: 5000 clusters created');
      assert.ok(lines.includes('…and 4980 more'), lines.join('\n'));
      const bytes = Buffer.byteLength(JSON.stringify(posts[0]!.body));
      assert.ok(bytes <= (format === 'teams' ? 28 * 1024 : 40_000), `${format}: ${bytes} bytes`);
    }
  });

  it('posts an Adaptive Card to Teams (CHAT_FORMAT=teams, the URL given as JSON in the secret)', async () => {
    const clusters = ['alpha', 'beta'].map((name) => eksCluster({ name, account: '222233334444' }));
    await publish([
      ...clusters.map((c) => created(c, 'sync-teams')),
      updated(clusters[0]!, 'sync-teams', [
        { field: 'status.version.kubernetes', before: '1.31', after: '1.32' },
        { field: 'status.conditions[ControlPlaneHealthy]', before: 'False', after: 'True' },
      ]),
    ]);
    const batch = await batchOf('chat');
    const since = receiver.posts.length;
    process.env.CHAT_FORMAT = 'teams';
    try {
      const response = await makeChatNotifier({ webhookSecret: 'cpsync/chat-webhook-json' })(
        batch,
        lambdaContext('chat-notifier'),
      );
      assert.deepEqual(response, { batchItemFailures: [] });
    } finally {
      delete process.env.CHAT_FORMAT;
    }
    const posts = receiver.delivered(since);
    assert.equal(posts.length, 1);
    const { body } = posts[0]!;
    assert.equal(body.type, 'message');
    assert.equal(body.attachments.length, 1);
    const [attachment] = body.attachments;
    assert.equal(attachment.contentType, 'application/vnd.microsoft.card.adaptive');
    assert.equal(attachment.content.type, 'AdaptiveCard');
    assert.equal(attachment.content.version, '1.4');
    assert.equal(attachment.content.$schema, 'http://adaptivecards.io/schemas/adaptive-card.json');
    const blocks = attachment.content.body as Array<{ type: string }>;
    assert.ok(blocks.every((b) => ['TextBlock', 'RichTextBlock'].includes(b.type)));
    const texts = shown(posts[0]!);
    assert.equal(texts[0], 'cpsync: 2 clusters created, 1 upgraded, 1 health change');
    assert.ok(
      texts.includes('*alpha* ControlPlaneHealthy is now True (was False) (eks 222233334444 us-east-1)'),
    );
    assert.ok(texts.includes('*alpha* Kubernetes 1.31 → 1.32 (eks 222233334444 us-east-1)'));
    assert.ok(texts.includes('*beta* created (eks 222233334444 us-east-1, Kubernetes 1.31)'));
    assert.match(texts.at(-1)!, /^sync sync-teams · hub account 123456789012 us-east-1$/);
  });

  it('waits out a 429 as Retry-After says and posts once; leaves for redelivery what the webhook refuses', async () => {
    const one = eksCluster({ name: 'throttled', account: '333344445555' });
    await publish([created(one, 'sync-429')]);
    const batch = await batchOf('chat');
    let since = receiver.posts.length;
    receiver.throttle(1, '1');
    assert.deepEqual(await makeChatNotifier()(batch, lambdaContext('chat-notifier')), {
      batchItemFailures: [],
    });
    const tries = receiver.posts.slice(since);
    assert.deepEqual(
      tries.map((p) => p.status),
      [429, 200],
      'refused once, then taken',
    );
    assert.ok(tries[1]!.at - tries[0]!.at >= 1000, `waited ${tries[1]!.at - tries[0]!.at} ms`);
    assert.equal(receiver.delivered(since).length, 1);

    // A webhook that keeps failing: every record of its message fails, nothing is recorded as delivered.
    const down = [eksCluster({ name: 'down-1' }), eksCluster({ name: 'down-2' })];
    const downEvents = [...down.map((c) => created(c, 'sync-down'))];
    await publish([
      ...downEvents,
      scopeSynced('sync-down', { provider: 'eks', account: '1', region: 'x' }, 'complete'),
    ]);
    const downBatch = await batchOf('chat');
    assert.equal(downBatch.Records.length, 2);
    since = receiver.posts.length;
    const refused = await makeChatNotifier({ webhookSecret: 'cpsync/chat-webhook-down', retryBaseMs: 20 })(
      downBatch,
      lambdaContext('chat-notifier'),
    );
    assert.deepEqual(failures(refused).sort(), downBatch.Records.map((r) => r.messageId).sort());
    assert.deepEqual(
      receiver.posts.slice(since).map((p) => p.status),
      [500, 500, 500, 500],
      'tried 4 times',
    );
    const kept = await recorded();
    assert.ok(eventIds(downEvents).every((id) => !kept.has(id)));
    // Redelivered to a webhook that works, they are told.
    since = receiver.posts.length;
    assert.deepEqual(await makeChatNotifier()(downBatch, lambdaContext('chat-notifier')), {
      batchItemFailures: [],
    });
    assert.equal(receiver.delivered(since).length, 1);
    assert.match(receiver.delivered(since)[0]!.body.text, /^cpsync: 2 clusters created$/);

    // A Retry-After longer than the invocation has left is not waited for: the records come back later.
    await publish([created(eksCluster({ name: 'late' }), 'sync-late')]);
    const lateBatch = await batchOf('chat');
    receiver.throttle(1, '30');
    const short: Context = { ...lambdaContext('chat-notifier'), getRemainingTimeInMillis: () => 6000 };
    since = receiver.posts.length;
    const late = await makeChatNotifier()(lateBatch, short);
    assert.deepEqual(failures(late), [lateBatch.Records[0]!.messageId]);
    // Asked once, told to wait 30 s, and not asked again: the next post would have been taken.
    assert.deepEqual(
      receiver.posts.slice(since).map((p) => p.status),
      [429],
      'did not wait 30 s to try again',
    );
    receiver.throttle(0);
  });

  it('keeps CHAT_MIN_INTERVAL_MS between posts (and tells a scope synced in part)', async () => {
    // Read from the queue that takes every event (emptied first): the recommended rules take failed
    // scopes alone, a wider rule may add scopes synced in part, and the notifier tells those too.
    await batchOf('everything');
    await publish([
      created(eksCluster({ name: 'first' }), 'sync-a'),
      created(eksCluster({ name: 'second' }), 'sync-b'),
      scopeSynced('sync-c', { provider: 'gke', account: 'acme-data', region: '*' }, 'partial'),
    ]);
    const batch = await batchOf('everything');
    await batchOf('chat');
    const since = receiver.posts.length;
    assert.deepEqual(await makeChatNotifier()(batch, lambdaContext('chat-notifier')), {
      batchItemFailures: [],
    });
    const posts = receiver.delivered(since);
    assert.equal(posts.length, 3);
    const gaps = posts.slice(1).map((p, i) => p.at - posts[i]!.at);
    assert.ok(
      gaps.every((gap) => gap >= 300),
      `gaps ${gaps.join(', ')} ms`,
    );
    const partial = posts.find((p) => p.body.text === 'cpsync: 1 scope synced in part');
    assert.ok(partial, 'the scope synced in part is told');
    assert.match(
      slackText(partial),
      /\*gke\/acme-data\/\*\* synced in part: 1 failed; not listed: europe-west1-b/,
    );
  });

  it('fails a record that is not a cpsync event alone, naming its problems, and posts the others', async () => {
    await publish([created(eksCluster({ name: 'fine' }), 'sync-mixed-bag')]);
    const batch = await batchOf('chat');
    const real = batch.Records[0]!;
    const future = JSON.parse(real.body) as { detail: { schemaVersion: string; eventId: string } };
    future.detail.schemaVersion = '2.0';
    future.detail.eventId = 'from-the-future';
    const records = [
      real,
      { ...real, messageId: 'schema-2', body: JSON.stringify(future) },
      { ...real, messageId: 'not-json', body: 'hello' },
    ];
    const since = receiver.posts.length;
    const logged = logs.length;
    const response = await makeChatNotifier()({ Records: records }, lambdaContext('chat-notifier'));
    assert.deepEqual(failures(response), ['schema-2', 'not-json']);
    assert.equal(receiver.delivered(since).length, 1);
    assert.match(receiver.delivered(since)[0]!.body.text, /^cpsync: 1 cluster created$/);
    const warnings = logs.slice(logged).join('\n');
    assert.match(
      warnings,
      /"messageId":"schema-2".*detail\.schemaVersion is 2\.0: this reader takes schema 1\.x/,
    );
    assert.match(warnings, /"messageId":"not-json".*not JSON/);
  });

  it('refuses bad settings, naming every variable, before taking any record', async () => {
    const saved = { ...process.env };
    Object.assign(process.env, { CHAT_FORMAT: 'discord', CHAT_MAX_LINES: '0' });
    delete process.env.CHAT_WEBHOOK_SECRET;
    const since = receiver.posts.length;
    try {
      await assert.rejects(
        makeChatNotifier()({ Records: [] }, lambdaContext('chat-notifier')),
        (error: Error) => {
          assert.match(error.message, /CHAT_WEBHOOK_SECRET: is not set/);
          assert.match(error.message, /CHAT_FORMAT: is "discord", not slack or teams/);
          assert.match(error.message, /CHAT_MAX_LINES: is "0", not a whole number from 1 to 50/);
          return true;
        },
      );
      // Gathering needs the queue its flushes go to.
      process.env = { ...saved, CHAT_QUIET_SECONDS: '60' };
      delete process.env.CHAT_FLUSH_QUEUE_URL;
      await assert.rejects(
        makeChatNotifier()({ Records: [] }, lambdaContext('chat-notifier')),
        /CHAT_FLUSH_QUEUE_URL: is not set \(CHAT_QUIET_SECONDS gathers/,
      );
      process.env = { ...saved, CHAT_QUIET_SECONDS: '901' };
      await assert.rejects(
        makeChatNotifier()({ Records: [] }, lambdaContext('chat-notifier')),
        /CHAT_QUIET_SECONDS: is "901", not a whole number from 0 to 900/,
      );
    } finally {
      process.env = saved;
    }
    assert.equal(receiver.posts.length, since);
  });

  it('refuses a webhook URL carrying a user and password, naming the secret, never the password; its records come back', async () => {
    const one = eksCluster({ name: 'userinfo', account: '333344445555' });
    await publish([created(one, 'sync-userinfo')]);
    const batch = await batchOf('chat');
    const since = receiver.posts.length;
    const logged = logs.length;
    const refused = await makeChatNotifier({ webhookSecret: 'cpsync/chat-webhook-userinfo' })(
      batch,
      lambdaContext('chat-notifier'),
    );
    assert.deepEqual(
      failures(refused),
      batch.Records.map((r) => r.messageId),
    );
    assert.equal(receiver.posts.length, since, 'nothing posted');
    const said = logs.slice(logged).join('\n');
    assert.match(
      said,
      /secret cpsync\/chat-webhook-userinfo: the webhook URL carries a user name or password/,
    );
    assert.ok(!said.includes('hush'), said);
  });

  it(
    "traced as the stack deploys it (`tracing: true`), X-Ray is never sent the webhook's path; with posts traced, it would be",
    { timeout: 120_000 },
    async () => {
      // The X-Ray daemon: the segments the function sends, each a datagram to it.
      const daemon = createSocket('udp4');
      const datagrams: string[] = [];
      daemon.on('message', (message) => datagrams.push(message.toString('utf8')));
      await new Promise<void>((resolve) => daemon.bind(0, '127.0.0.1', resolve));
      daemon.unref();
      /** One invocation of the function in a process of its own, traced, on a batch of a sync of its own. */
      const traced = async (name: string, capturePosts: boolean) => {
        await publish([created(eksCluster({ name, account: '444455556666' }), `sync-${name}`)]);
        const batch = await batchOf('chat');
        const since = receiver.posts.length;
        const from = datagrams.length;
        const env: NodeJS.ProcessEnv = {
          ...process.env,
          POWERTOOLS_TRACE_ENABLED: 'true',
          POWERTOOLS_LOG_LEVEL: 'ERROR',
          AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs24.x',
          LAMBDA_TASK_ROOT: process.cwd(),
          _HANDLER: 'chat.handler',
          _X_AMZN_TRACE_ID: `Root=1-5759e988-bd862e3fe1be46a99427${String(datagrams.length).padStart(4, '0')};Parent=53995c3f42cd8ad8;Sampled=1`,
          AWS_XRAY_DAEMON_ADDRESS: `127.0.0.1:${daemon.address().port}`,
          AWS_XRAY_CONTEXT_MISSING: 'IGNORE_ERROR',
        };
        // The stack's setting for the notifier (infra/subscribers.ts); the Tracer's default otherwise.
        if (capturePosts) delete env.POWERTOOLS_TRACER_CAPTURE_HTTPS_REQUESTS;
        else env.POWERTOOLS_TRACER_CAPTURE_HTTPS_REQUESTS = 'false';
        const script = [
          `const { makeChatNotifier } = await import(${JSON.stringify(new URL('../../../functions/subscribers/chat/handler.ts', import.meta.url).href)});`,
          `const { lambdaContext } = await import(${JSON.stringify(new URL('../../support/lambda.ts', import.meta.url).href)});`,
          `const answer = await makeChatNotifier()(${JSON.stringify(batch)}, lambdaContext('chat-notifier'));`,
          'process.stdout.write(JSON.stringify(answer));',
        ].join('\n');
        // Run beside this process (the webhook it posts to answers from here).
        const child = await new Promise<{ status: number | null; stdout: string; stderr: string }>(
          (resolve, reject) => {
            const run = spawn(process.execPath, ['--input-type=module', '-e', script], {
              env,
              timeout: 60_000,
            });
            let [stdout, stderr] = ['', ''];
            run.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
            run.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
            run.on('error', reject);
            run.on('close', (status) => resolve({ status, stdout, stderr }));
          },
        );
        assert.equal(child.status, 0, child.stderr);
        assert.deepEqual(JSON.parse(child.stdout), { batchItemFailures: [] });
        assert.equal(receiver.delivered(since).length, 1, 'posted');
        // Until the handler's own segment has come (sent last, once the invocation ends).
        await until(
          async () => datagrams.slice(from).some((d) => d.includes('"name":"## chat.handler"')),
          "the handler's segment at the X-Ray daemon",
        );
        return datagrams.slice(from).join('\n');
      };
      try {
        const deployed = await traced('traced-as-deployed', false);
        assert.match(
          deployed,
          /"name":"DynamoDB"|"name":"SecretsManager"|"name":"## chat.handler"/,
          'traced',
        );
        assert.ok(!deployed.includes(TOKEN) && !deployed.includes('/hooks/'), deployed);
        // The oracle can see the leak it guards against: with posts traced, the path is in the segments.
        const capturing = await traced('traced-with-posts', true);
        assert.ok(capturing.includes('/hooks/'), 'a traced post names its path');
      } finally {
        daemon.close();
      }
    },
  );

  it('never logs the webhook URL', () => {
    assert.ok(logs.length > 0, 'the function logged');
    assert.ok(logs.some((line) => line.includes('"message":"message posted"')));
    assert.ok(logs.every((line) => !line.includes('not-for-logs') && !line.includes('/hooks/')));
  });
});
