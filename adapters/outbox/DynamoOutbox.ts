import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { setTimeout } from 'node:timers/promises';
import { BatchWriteCommand, DynamoDBDocumentClient, paginateScan } from '@aws-sdk/lib-dynamodb';
import { SigV4Sha256, withoutSdkLogger } from '../shared/awsSdk.ts';
import type { ChangeIntent } from '../../core/sync/changes.ts';
import type { IntentLog, Outbox, QuarantinedRecord } from '../../core/sync/ports.ts';
import type { CpsyncEvent } from '../../events/types.ts';
import { intentProblem, outboxEventProblem } from './records.ts';

/** Days an unpublished event (or an unsettled intent) is kept before DynamoDB's TTL removes it. */
export const OUTBOX_RETENTION_DAYS = 14;
/** Intents share the table, under keys with this prefix. */
const INTENT_PREFIX = 'intent#';
/** BatchWriteItem's limit of items to a request. */
const BATCH_SIZE = 25;
/** Requests for one batch, what DynamoDB leaves unprocessed (throttled) sent again after 50, 100, 200… ms. */
const BATCH_ATTEMPTS = 6;
const BACKOFF_MILLIS = 50;

type WriteRequest =
  { PutRequest: { Item: Record<string, unknown> } } | { DeleteRequest: { Key: Record<string, unknown> } };

export interface DynamoOutboxOptions {
  tableName: string;
  /** @default a client for the function's region */
  client?: DynamoDBClient;
  endpoint?: string;
  region?: string;
}

/**
 * One table (partition key `eventId`, TTL `expiresAt`) holding the outbox's events and the intent log's
 * intents: both are made on one (one client, one connection pool).
 */
export class OutboxTable {
  readonly name: string;
  readonly documents: DynamoDBDocumentClient;

  constructor(options: DynamoOutboxOptions) {
    this.name = options.tableName;
    const client =
      options.client ??
      withoutSdkLogger(
        new DynamoDBClient({
          sha256: SigV4Sha256,
          ...(options.endpoint ? { endpoint: options.endpoint } : {}),
          ...(options.region ? { region: options.region } : {}),
        }),
      );
    this.documents = DynamoDBDocumentClient.from(client);
  }

  /**
   * Stores the items, up to 25 to a request (BatchWriteItem): a full sync's events take one request per 25, not
   * one each. Durable once it resolves; it fails, naming how many were not stored, should DynamoDB leave some
   * unprocessed through every retry.
   */
  async put(items: ReadonlyArray<Record<string, unknown>>): Promise<void> {
    const expiresAt = Math.floor(Date.now() / 1000) + OUTBOX_RETENTION_DAYS * 86_400;
    await this.#batches(items.map((item) => ({ PutRequest: { Item: { ...item, expiresAt } } })));
  }

  /**
   * The items that carry `attribute` (a string of JSON), parsed. An item whose JSON does not parse, or whose record
   * `problemOf` finds wrong (an item edited by hand, another version's), is reported in `quarantined` and left in the
   * table for a person (its TTL still removes it): never read as a record, and never in the way of the others.
   */
  async scan<T>(
    attribute: string,
    problemOf: (record: unknown) => string | undefined,
    quarantined: QuarantinedRecord[],
  ): Promise<T[]> {
    const found: T[] = [];
    for await (const page of paginateScan({ client: this.documents }, { TableName: this.name }))
      for (const item of page.Items ?? []) {
        if (typeof item[attribute] !== 'string') continue;
        let record: unknown;
        let problem: string | undefined;
        try {
          record = JSON.parse(item[attribute] as string);
          problem = problemOf(record);
        } catch {
          problem = 'not valid JSON';
        }
        if (problem === undefined) found.push(record as T);
        else
          quarantined.push({
            path: `dynamodb:${this.name}/${String(item.eventId)}`,
            reason: `holds something that is not a cpsync ${attribute} (${problem}); left in the table`,
          });
      }
    return found;
  }

  /**
   * Removes the items, 25 to a request. What DynamoDB still leaves unprocessed after every retry stays, as before:
   * an event left is published again (same id), an intent left is settled by a later run.
   */
  async delete(keys: readonly string[]): Promise<void> {
    await this.#batches(
      keys.map((eventId) => ({ DeleteRequest: { Key: { eventId } } })),
      false,
    );
  }

  /**
   * Writes `requests` 25 to a BatchWriteItem, what DynamoDB leaves unprocessed sent again after a backoff. A key
   * named twice is written once, as the last names it (BatchWriteItem refuses a request that names a key twice).
   * What is still unprocessed after every attempt fails the call when `required`, and is left otherwise.
   */
  async #batches(all: readonly WriteRequest[], required = true): Promise<void> {
    const byKey = new Map<string, WriteRequest>();
    for (const request of all)
      byKey.set(
        String('PutRequest' in request ? request.PutRequest.Item.eventId : request.DeleteRequest.Key.eventId),
        request,
      );
    const requests = [...byKey.values()];
    for (let i = 0; i < requests.length; i += BATCH_SIZE) {
      let left: WriteRequest[] = requests.slice(i, i + BATCH_SIZE);
      for (let attempt = 0; left.length > 0; attempt++) {
        if (attempt === BATCH_ATTEMPTS && !required) break;
        if (attempt === BATCH_ATTEMPTS)
          throw new Error(
            `DynamoDB table ${this.name} left ${left.length} of ${requests.length} writes unprocessed after ${BATCH_ATTEMPTS} attempts`,
          );
        if (attempt > 0) await setTimeout(BACKOFF_MILLIS * 2 ** (attempt - 1));
        const answer = await this.documents.send(
          new BatchWriteCommand({ RequestItems: { [this.name]: left } }),
        );
        left = (answer.UnprocessedItems?.[this.name] ?? []) as WriteRequest[];
      }
    }
  }
}

/** Pending events in a DynamoDB table (partition key `eventId`), for the Lambda functions. */
export class DynamoOutbox implements Outbox {
  readonly #table: OutboxTable;
  /** Items of the last scan that are not cpsync events. */
  readonly #quarantined: QuarantinedRecord[] = [];

  constructor(table: OutboxTable) {
    this.#table = table;
  }

  add(events: readonly CpsyncEvent[]): Promise<void> {
    return this.#table.put(
      events.map((event) => ({
        eventId: event.detail.eventId,
        time: event.time,
        event: JSON.stringify(event),
      })),
    );
  }

  async pending(): Promise<CpsyncEvent[]> {
    this.#quarantined.splice(0);
    return (await this.#table.scan<CpsyncEvent>('event', outboxEventProblem, this.#quarantined)).sort(
      (a, b) => a.time.localeCompare(b.time),
    );
  }

  quarantined(): QuarantinedRecord[] {
    return [...this.#quarantined];
  }

  remove(eventIds: readonly string[]): Promise<void> {
    return this.#table.delete(eventIds);
  }
}

/** Write-ahead intents in the outbox's DynamoDB table, under keys of their own. */
export class DynamoIntentLog implements IntentLog {
  readonly #table: OutboxTable;
  /** Items of the last scan that are not cpsync intents. */
  readonly #quarantined: QuarantinedRecord[] = [];

  constructor(table: OutboxTable) {
    this.#table = table;
  }

  add(intents: readonly ChangeIntent[]): Promise<void> {
    return this.#table.put(
      intents.map((intent) => ({ eventId: `${INTENT_PREFIX}${intent.id}`, intent: JSON.stringify(intent) })),
    );
  }

  list(): Promise<ChangeIntent[]> {
    this.#quarantined.splice(0);
    return this.#table.scan<ChangeIntent>('intent', intentProblem, this.#quarantined);
  }

  quarantined(): QuarantinedRecord[] {
    return [...this.#quarantined];
  }

  remove(ids: readonly string[]): Promise<void> {
    return this.#table.delete(ids.map((id) => `${INTENT_PREFIX}${id}`));
  }
}
