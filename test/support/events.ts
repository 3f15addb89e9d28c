/** Reading what subscribers of the bus receive: the SQS queue a rule delivers to. */
import { DeleteMessageBatchCommand, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import assert from 'node:assert/strict';
import { EventBridgeBus } from '../../adapters/bus/EventBridgeBus.ts';
import type { CpsyncEvent } from '../../events/types.ts';
import { HUB_CREDENTIALS } from './aws.ts';
import { until } from './until.ts';

export interface ReceivedEvent {
  'detail-type': string;
  source: string;
  resources: string[];
  detail: Record<string, unknown> & { eventId: string };
}

/** Publishes `events` to the bus `busName` of moto at `endpoint` through cpsync's own EventBridge bus; all must be taken. */
export async function publishTo(
  endpoint: string,
  busName: string,
  events: readonly CpsyncEvent[],
): Promise<void> {
  const bus = new EventBridgeBus({
    busName,
    endpoint,
    region: 'us-east-1',
    credentials: async () => HUB_CREDENTIALS,
    baseDelayMillis: 5,
  });
  const result = await bus.publish(events);
  assert.equal(result.failed.length, 0, JSON.stringify(result.failed));
}

/**
 * A rule target delivering the whole event to the queue `arn`, as EventBridge delivers it to a queue
 * without a transformer. moto's default delivery leaves out the envelope's `account`, which every
 * EventBridge event carries (and the subscriber kit's parser requires); the whole-event template keeps it.
 */
export function wholeEventTarget(arn: string, id = 'q') {
  return { Id: id, Arn: arn, InputTransformer: { InputTemplate: '<aws.events.event.json>' } };
}

/** Every event now in the queue (then removed from it). */
export async function drainQueue(queueUrl: string): Promise<ReceivedEvent[]> {
  return drainMessages<ReceivedEvent>(queueUrl);
}

/** Every message now in the queue (then removed from it), its JSON body parsed. */
export async function drainMessages<Body>(queueUrl: string): Promise<Body[]> {
  const sqs = new SQSClient({
    endpoint: new URL(queueUrl).origin,
    region: 'us-east-1',
    credentials: HUB_CREDENTIALS,
  });
  const events: Body[] = [];
  for (;;) {
    const answer = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 0 }),
    );
    const messages = answer.Messages ?? [];
    if (messages.length === 0) break;
    events.push(...messages.map((m) => JSON.parse(m.Body!) as Body));
    await sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: messages.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle! })),
      }),
    );
  }
  sqs.destroy();
  return events;
}

/**
 * Waits, as long as it takes, until `take` (a drain of a queue) has handed over at least `count` messages in all,
 * each once its delay has passed; returns them with any others then taken.
 */
export async function handedOver<Message>(
  take: () => Promise<Message[]>,
  count: number,
  what: string,
): Promise<Message[]> {
  const messages: Message[] = [];
  await until(async () => {
    messages.push(...(await take()));
    return messages.length >= count;
  }, `${count} message(s) handed over by ${what}`);
  return messages;
}

/** `handedOver` for the queue at `queueUrl`: the messages' bodies (removed from it). */
export const messagesHandedOver = <Body>(queueUrl: string, count: number): Promise<Body[]> =>
  handedOver(() => drainMessages<Body>(queueUrl), count, queueUrl);

interface PutEventsBody {
  Entries: Array<Record<string, unknown>>;
}

/**
 * An interceptor for the AWS proxy that makes PutEvents fail for the entries `fails` picks (with
 * `code`) and forwards the others to moto, answering as EventBridge does for a partial failure.
 */
export function failSomeEntries(
  fails: (entry: Record<string, unknown>, index: number) => boolean,
  code = 'InternalFailure',
) {
  return async (
    call: { operation: string; body: string },
    forward: (body: string) => Promise<{ status: number; body: string }>,
  ) => {
    if (call.operation !== 'AWSEvents.PutEvents') return undefined;
    const request = JSON.parse(call.body) as PutEventsBody;
    const failing = request.Entries.map((entry, index) => fails(entry, index));
    const passing = request.Entries.filter((_, index) => !failing[index]);
    const forwarded =
      passing.length > 0
        ? (JSON.parse((await forward(JSON.stringify({ Entries: passing }))).body) as {
            Entries: Array<{ EventId: string }>;
          })
        : { Entries: [] };
    let next = 0;
    const entries = failing.map((failed) =>
      failed ? { ErrorCode: code, ErrorMessage: `${code} injected by the test` } : forwarded.Entries[next++],
    );
    return {
      status: 200,
      headers: { 'content-type': 'application/x-amz-json-1.1' },
      body: JSON.stringify({ FailedEntryCount: failing.filter(Boolean).length, Entries: entries }),
    };
  };
}
