import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { BatchWriteCommand, DynamoDBDocumentClient, paginateScan, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { ChangeIntent } from '../../core/sync/changes.ts';
import type { IntentLog, Outbox } from '../../core/sync/ports.ts';
import type { CpsyncEvent } from '../../events/types.ts';

/** Days an unpublished event (or an unsettled intent) is kept before DynamoDB's TTL removes it. */
export const OUTBOX_RETENTION_DAYS = 14;
/** Intents share the table, under keys with this prefix. */
const INTENT_PREFIX = 'intent#';

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
      new DynamoDBClient({
        ...(options.endpoint ? { endpoint: options.endpoint } : {}),
        ...(options.region ? { region: options.region } : {}),
      });
    this.documents = DynamoDBDocumentClient.from(client);
  }

  async put(items: ReadonlyArray<Record<string, unknown>>): Promise<void> {
    const expiresAt = Math.floor(Date.now() / 1000) + OUTBOX_RETENTION_DAYS * 86_400;
    for (const item of items)
      await this.documents.send(new PutCommand({ TableName: this.name, Item: { ...item, expiresAt } }));
  }

  /** The items that carry `attribute` (a string of JSON), parsed. */
  async scan<T>(attribute: string): Promise<T[]> {
    const found: T[] = [];
    for await (const page of paginateScan({ client: this.documents }, { TableName: this.name }))
      for (const item of page.Items ?? [])
        if (typeof item[attribute] === 'string') found.push(JSON.parse(item[attribute] as string) as T);
    return found;
  }

  async delete(keys: readonly string[]): Promise<void> {
    for (let i = 0; i < keys.length; i += 25) {
      const chunk = keys.slice(i, i + 25);
      let requests: Record<string, unknown[]> | undefined = {
        [this.name]: chunk.map((eventId) => ({ DeleteRequest: { Key: { eventId } } })),
      };
      for (let attempt = 0; requests && Object.keys(requests).length > 0 && attempt < 5; attempt++) {
        const answer = await this.documents.send(new BatchWriteCommand({ RequestItems: requests as never }));
        requests = answer.UnprocessedItems as Record<string, unknown[]> | undefined;
      }
    }
  }
}

/** Pending events in a DynamoDB table (partition key `eventId`), for the Lambda functions. */
export class DynamoOutbox implements Outbox {
  readonly #table: OutboxTable;

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
    return (await this.#table.scan<CpsyncEvent>('event')).sort((a, b) => a.time.localeCompare(b.time));
  }

  remove(eventIds: readonly string[]): Promise<void> {
    return this.#table.delete(eventIds);
  }
}

/** Write-ahead intents in the outbox's DynamoDB table, under keys of their own. */
export class DynamoIntentLog implements IntentLog {
  readonly #table: OutboxTable;

  constructor(table: OutboxTable) {
    this.#table = table;
  }

  add(intents: readonly ChangeIntent[]): Promise<void> {
    return this.#table.put(
      intents.map((intent) => ({ eventId: `${INTENT_PREFIX}${intent.id}`, intent: JSON.stringify(intent) })),
    );
  }

  list(): Promise<ChangeIntent[]> {
    return this.#table.scan<ChangeIntent>('intent');
  }

  remove(ids: readonly string[]): Promise<void> {
    return this.#table.delete(ids.map((id) => `${INTENT_PREFIX}${id}`));
  }
}
