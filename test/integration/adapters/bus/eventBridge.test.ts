import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  CreateEventBusCommand,
  EventBridgeClient,
  PutRuleCommand,
  PutTargetsCommand,
} from '@aws-sdk/client-eventbridge';
import { CreateQueueCommand, GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { EventBridgeBus } from '../../../../adapters/bus/EventBridgeBus.ts';
import { buildScopeEvent } from '../../../../core/sync/events.ts';
import type { CpsyncEvent } from '../../../../events/types.ts';
import { restJsonError, startAwsProxy, type AwsProxy } from '../../../env/awsProxy.ts';
import { startMoto, type MotoServer } from '../../../env/moto.ts';
import { HUB_CREDENTIALS } from '../../../support/aws.ts';
import { drainQueue, failSomeEntries } from '../../../support/events.ts';

function events(count: number, syncId = 'bus-test'): CpsyncEvent[] {
  return Array.from({ length: count }, (_, i) =>
    buildScopeEvent(
      {
        outcome: { scope: { provider: 'eks', account: '111122223333', region: `r-${i}` }, kind: 'complete' },
        counts: { listed: i, created: 0, updated: 0, deleted: 0, unchanged: i, failed: 0, invalid: 0 },
        durationMs: 5,
      },
      {
        syncId,
        occurredAt: '2026-05-01T00:00:00Z',
        scope: { provider: 'eks', account: '111122223333', region: `r-${i}` },
      },
    ),
  );
}

describe('EventBridge bus against moto (EventBridge → rule → SQS)', () => {
  let moto: MotoServer;
  let proxy: AwsProxy;
  let queueUrl: string;
  const bus = () =>
    new EventBridgeBus({
      busName: 'test-bus',
      endpoint: proxy.endpoint,
      region: 'us-east-1',
      credentials: async () => HUB_CREDENTIALS,
      baseDelayMillis: 5,
    });
  const putCalls = () =>
    proxy.calls
      .filter((c) => c.operation === 'AWSEvents.PutEvents')
      .map((c) => (JSON.parse(c.body) as { Entries: unknown[] }).Entries.length);

  before(async () => {
    moto = await startMoto();
    proxy = await startAwsProxy(moto.endpoint);
    const aws = { endpoint: moto.endpoint, region: 'us-east-1', credentials: HUB_CREDENTIALS };
    const eventBridge = new EventBridgeClient(aws);
    const sqs = new SQSClient(aws);
    await eventBridge.send(new CreateEventBusCommand({ Name: 'test-bus' }));
    queueUrl = (await sqs.send(new CreateQueueCommand({ QueueName: 'subscriber' }))).QueueUrl!;
    const arn = (
      await sqs.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn'] }))
    ).Attributes!.QueueArn!;
    await eventBridge.send(
      new PutRuleCommand({
        Name: 'all',
        EventBusName: 'test-bus',
        EventPattern: JSON.stringify({ source: ['cpsync'] }),
      }),
    );
    await eventBridge.send(
      new PutTargetsCommand({ Rule: 'all', EventBusName: 'test-bus', Targets: [{ Id: 'q', Arn: arn }] }),
    );
  });

  after(async () => {
    await proxy?.stop();
    await moto?.stop();
  });

  it('sends at most 10 entries per call and delivers every event', async () => {
    proxy.clear();
    const sent = events(25);
    const result = await bus().publish(sent);
    assert.equal(result.published.length, 25);
    assert.deepEqual(putCalls(), [10, 10, 5]);
    const received = await drainQueue(queueUrl);
    assert.deepEqual(received.map((e) => e.detail.eventId).sort(), sent.map((e) => e.detail.eventId).sort());
    assert.ok(received.every((e) => e['detail-type'] === 'Inventory Scope Synced' && e.source === 'cpsync'));
  });

  it('re-sends only the entries that failed with a retryable code', async () => {
    proxy.clear();
    let first = true;
    const remove = proxy.intercept(async (call, forward) => {
      const answer = first
        ? await failSomeEntries((_, i) => i % 3 === 0, 'ThrottlingException')(call, forward)
        : undefined;
      if (answer) first = false;
      return answer;
    });
    const sent = events(10, 'retry');
    const result = await bus().publish(sent);
    remove();
    assert.equal(result.published.length, 10);
    assert.deepEqual(putCalls(), [10, 4]);
    assert.equal((await drainQueue(queueUrl)).length, 10);
  });

  it('reports entries that keep failing, and non-retryable ones at once, without losing the others', async () => {
    proxy.clear();
    const sent = events(6, 'stubborn');
    const doomed = new Set([sent[1]!.detail.eventId, sent[4]!.detail.eventId]);
    const remove = proxy.intercept(
      failSomeEntries(
        (entry) => doomed.has((JSON.parse(entry.Detail as string) as { eventId: string }).eventId),
        'InternalFailure',
      ),
    );
    const result = await bus().publish(sent);
    remove();
    assert.equal(result.published.length, 4);
    assert.deepEqual(
      result.failed.map((f) => [f.eventId, f.code, f.retryable]).sort(),
      [...doomed].sort().map((id) => [id, 'InternalFailure', true]),
    );
    assert.equal(putCalls().length, 5, 'first call plus MAX_RETRIES rounds');

    proxy.clear();
    const invalid = proxy.intercept(failSomeEntries((_, i) => i === 0, 'MalformedDetail'));
    const second = await bus().publish(events(2, 'malformed'));
    invalid();
    assert.deepEqual(
      second.failed.map((f) => [f.code, f.retryable]),
      [['MalformedDetail', false]],
    );
    assert.deepEqual(putCalls(), [2], 'a non-retryable failure is not re-sent');
    await drainQueue(queueUrl);
  });

  it('reports every entry of a call that fails as a whole as retryable', async () => {
    const remove = proxy.intercept((call) =>
      call.operation === 'AWSEvents.PutEvents'
        ? restJsonError(500, 'InternalException', 'injected')
        : undefined,
    );
    const result = await new EventBridgeBus({
      busName: 'test-bus',
      endpoint: proxy.endpoint,
      region: 'us-east-1',
      credentials: async () => HUB_CREDENTIALS,
      baseDelayMillis: 1,
    }).publish(events(3, 'down'));
    remove();
    assert.equal(result.published.length, 0);
    assert.ok(result.failed.length === 3 && result.failed.every((f) => f.retryable));
  });

  it('refuses an entry over the PutEvents size limit instead of sending it', async () => {
    const [big] = events(1, 'big');
    (big!.detail as unknown as Record<string, unknown>).padding = 'x'.repeat(300 * 1024);
    const result = await bus().publish([big!]);
    assert.deepEqual(
      result.failed.map((f) => [f.code, f.retryable]),
      [['EntryTooLarge', false]],
    );
  });
});
