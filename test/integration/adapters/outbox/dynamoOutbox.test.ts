/**
 * The functions' outbox and intent log: one DynamoDB table in moto (partition key `eventId`), reached through the
 * test proxy, which counts the requests DynamoDB received and can answer a batch in part, as DynamoDB does when it
 * throttles some of a BatchWriteItem's items. Events and intents are written 25 to a request, what DynamoDB leaves
 * unprocessed is sent again, and nothing is lost when it never takes them: the add fails and says how many.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, beforeEach, describe, it } from 'node:test';
import { CreateTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { DynamoIntentLog, DynamoOutbox, OutboxTable } from '../../../../adapters/outbox/DynamoOutbox.ts';
import type { ChangeIntent } from '../../../../core/sync/changes.ts';
import type { CpsyncEvent } from '../../../../events/types.ts';
import { startAwsProxy, type AwsProxy } from '../../../env/awsProxy.ts';
import { startMoto, type MotoServer } from '../../../env/moto.ts';
import { HUB_CREDENTIALS } from '../../../support/aws.ts';
import { storedEvent, storedIntent } from '../../../support/outboxRecords.ts';

/** An event of the contract at `second` past 10:00 (the outbox orders by time). */
const event = (second: number, eventId: string = randomUUID()): CpsyncEvent =>
  storedEvent(
    `2026-11-21T10:${String(Math.floor(second / 60)).padStart(2, '0')}:${String(second % 60).padStart(2, '0')}Z`,
    eventId,
  );

const intent = (): ChangeIntent => storedIntent();
const ids = (events: CpsyncEvent[]) => events.map((e) => e.detail.eventId);

interface BatchBody {
  RequestItems: Record<string, unknown[]>;
}

/**
 * DynamoDB as it throttles: only the first `taken` items of each BatchWriteItem are written, the others left
 * unprocessed, for the first `times` batches (then every batch is answered in full).
 */
function takingFirst(taken: number, times = Infinity): Parameters<AwsProxy['intercept']>[0] {
  let left = times;
  return async (call, forward) => {
    if (!call.operation.endsWith('BatchWriteItem') || left === 0) return undefined;
    left -= 1;
    const body = JSON.parse(call.body) as BatchBody;
    const [name, requests] = Object.entries(body.RequestItems)[0]!;
    await forward(JSON.stringify({ RequestItems: { [name]: requests.slice(0, taken) } }));
    return {
      status: 200,
      headers: { 'content-type': 'application/x-amz-json-1.0' },
      body: JSON.stringify({ UnprocessedItems: { [name]: requests.slice(taken) } }),
    };
  };
}

/** Only the first item of each BatchWriteItem is ever taken. */
const firstOnly = takingFirst(1);

describe('the DynamoDB outbox and intent log', () => {
  let moto: MotoServer;
  let proxy: AwsProxy;
  let table: OutboxTable;
  let tables = 0;
  const operations = () => proxy.calls.map((c) => c.operation.replace('DynamoDB_20120810.', ''));

  before(async () => {
    moto = await startMoto();
    proxy = await startAwsProxy(moto.endpoint);
  });
  after(async () => {
    await proxy?.stop();
    await moto?.stop();
  });
  beforeEach(async () => {
    const tableName = `cpsync-outbox-${++tables}`;
    const client = new DynamoDBClient({
      endpoint: proxy.endpoint,
      region: 'us-east-1',
      credentials: HUB_CREDENTIALS,
    });
    await client.send(
      new CreateTableCommand({
        TableName: tableName,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [{ AttributeName: 'eventId', AttributeType: 'S' }],
        KeySchema: [{ AttributeName: 'eventId', KeyType: 'HASH' }],
      }),
    );
    table = new OutboxTable({ tableName, client });
    proxy.clear();
  });

  it('writes events 25 to a request, keeps each once (the last of a key named twice), and removes them in batches', async () => {
    const outbox = new DynamoOutbox(table);
    const events = Array.from({ length: 60 }, (_, i) => event(59 - i));
    const again = event(100, events[7]!.detail.eventId);
    await outbox.add([...events, again]);
    assert.deepEqual(operations(), ['BatchWriteItem', 'BatchWriteItem', 'BatchWriteItem']);

    const pending = await outbox.pending();
    assert.equal(pending.length, 60);
    const expected = [...events.filter((_, i) => i !== 7), again].sort((a, b) =>
      a.time.localeCompare(b.time),
    );
    assert.deepEqual(ids(pending), ids(expected), 'every event once, oldest first');
    assert.equal(pending.at(-1)!.time, again.time, 'the key named twice holds what named it last');

    proxy.clear();
    await outbox.remove(ids(pending).slice(0, 30));
    assert.deepEqual(operations(), ['BatchWriteItem', 'BatchWriteItem']);
    assert.deepEqual(ids(await outbox.pending()), ids(expected.slice(30)));
  });

  it('reports items that are not cpsync records, leaves them in the table, and reads every other', async () => {
    const outbox = new DynamoOutbox(table);
    const log = new DynamoIntentLog(table);
    const events = [event(1), event(2)];
    const intents = [intent()];
    await outbox.add(events);
    await log.add(intents);
    // Items edited by hand or written by another version: JSON that does not parse, a cpsync id and nothing else.
    await table.put([
      { eventId: 'broken', event: '{"detail":' },
      {
        eventId: '00000000-0000-4000-8000-000000000000',
        event: JSON.stringify({ detail: { eventId: '00000000-0000-4000-8000-000000000000' } }),
      },
      { eventId: `intent#${'a'.repeat(32)}`, intent: JSON.stringify({ id: 'a'.repeat(32) }) },
      { eventId: 'intent#late', intent: JSON.stringify({ ...intent(), notBefore: 'soon' }) },
    ]);
    assert.deepEqual(ids(await outbox.pending()), ids(events));
    assert.deepEqual(
      (await log.list()).map((i) => i.id),
      intents.map((i) => i.id),
    );
    const reported = [...outbox.quarantined(), ...log.quarantined()]
      .map((q) => `${q.path} ${q.reason}`)
      .sort();
    assert.equal(reported.length, 4, reported.join('\n'));
    assert.match(
      reported[0]!,
      /\/00000000-0000-4000-8000-000000000000 holds something that is not a cpsync event \(/,
    );
    assert.match(reported[1]!, /\/broken holds something that is not a cpsync event \(not valid JSON\)/);
    assert.match(reported[2]!, /\/intent#aaaa\S+ holds something that is not a cpsync intent \(kind: /);
    assert.match(
      reported[3]!,
      /\/intent#late holds something that is not a cpsync intent \(notBefore: is not a date-time\)/,
    );
    // Left for a person: still in the table.
    const scanned = await table.documents.send(new ScanCommand({ TableName: table.name }));
    assert.equal(scanned.Items?.length, events.length + intents.length + 4);
  });

  it('sends again what DynamoDB left unprocessed, until every item is taken', async () => {
    const outbox = new DynamoOutbox(table);
    const log = new DynamoIntentLog(table);
    // DynamoDB takes the first three items of each of the first two batches and leaves the others unprocessed.
    const stop = proxy.intercept(takingFirst(3, 2));
    try {
      const events = Array.from({ length: 10 }, (_, i) => event(i));
      await outbox.add(events);
      assert.deepEqual(ids(await outbox.pending()), ids(events));
      assert.equal(operations().filter((o) => o === 'BatchWriteItem').length, 3, 'taken in three requests');

      const intents = Array.from({ length: 5 }, intent);
      await log.add(intents);
      assert.deepEqual((await log.list()).map((i) => i.id).sort(), intents.map((i) => i.id).sort());
      assert.deepEqual(ids(await outbox.pending()), ids(events), 'intents are not events');
    } finally {
      stop();
    }
  });

  it('fails, naming how many were not stored, when DynamoDB never takes them, and keeps what it took', async () => {
    const outbox = new DynamoOutbox(table);
    const stop = proxy.intercept(firstOnly);
    const events = Array.from({ length: 10 }, (_, i) => event(i));
    try {
      await assert.rejects(outbox.add(events), (error: Error) => {
        assert.match(
          error.message,
          new RegExp(`table ${table.name} left 4 of 10 writes unprocessed after 6 attempts`),
        );
        return true;
      });
    } finally {
      stop();
    }
    assert.deepEqual(ids(await outbox.pending()), ids(events.slice(0, 6)), 'what it took is kept');
    // Sent again, the add completes: nothing of it is lost.
    await outbox.add(events);
    assert.deepEqual(ids(await outbox.pending()), ids(events));
  });

  it('removes what DynamoDB takes and leaves the rest pending when it never takes it all (published again later)', async () => {
    const outbox = new DynamoOutbox(table);
    const events = Array.from({ length: 12 }, (_, i) => event(i));
    await outbox.add(events);
    const stop = proxy.intercept(firstOnly);
    try {
      // Resolves: a removal left undone is benign (the event is published again, with its id).
      await outbox.remove(ids(events).slice(0, 10));
    } finally {
      stop();
    }
    assert.deepEqual(
      ids(await outbox.pending()),
      ids([...events.slice(6, 10), ...events.slice(10)]),
      'six taken in six attempts, four of the ten left',
    );
  });
});
