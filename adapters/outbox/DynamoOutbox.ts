import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { BatchWriteCommand, DynamoDBDocumentClient, paginateScan, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { Outbox } from '../../core/sync/ports.ts';
import type { ChangeIntent } from '../../core/sync/changes.ts';
import type { CpsyncEvent } from '../../events/types.ts';

/** Days an unpublished event is kept before DynamoDB's TTL removes it. */
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

/** Pending events in a DynamoDB table (partition key `eventId`), for the Lambda functions. */
export class DynamoOutbox implements Outbox {
  readonly #table: string;
  readonly #documents: DynamoDBDocumentClient;

  constructor(options: DynamoOutboxOptions) {
    this.#table = options.tableName;
    const client =
      options.client ??
      new DynamoDBClient({
        ...(options.endpoint ? { endpoint: options.endpoint } : {}),
        ...(options.region ? { region: options.region } : {}),
      });
    this.#documents = DynamoDBDocumentClient.from(client);
  }

  async add(events: readonly CpsyncEvent[]): Promise<void> {
    const expiresAt = Math.floor(Date.now() / 1000) + OUTBOX_RETENTION_DAYS * 86_400;
    for (const event of events) {
      await this.#documents.send(
        new PutCommand({
          TableName: this.#table,
          Item: { eventId: event.detail.eventId, time: event.time, event: JSON.stringify(event), expiresAt },
        }),
      );
    }
  }

  async #items(): Promise<Array<Record<string, unknown>>> {
    const items: Array<Record<string, unknown>> = [];
    for await (const page of paginateScan({ client: this.#documents }, { TableName: this.#table }))
      items.push(...(page.Items ?? []));
    return items;
  }

  async pending(): Promise<CpsyncEvent[]> {
    const events = (await this.#items())
      .filter((item) => typeof item.event === 'string')
      .map((item) => JSON.parse(item.event as string) as CpsyncEvent);
    return events.sort((a, b) => a.time.localeCompare(b.time));
  }

  async addIntents(intents: readonly ChangeIntent[]): Promise<void> {
    const expiresAt = Math.floor(Date.now() / 1000) + OUTBOX_RETENTION_DAYS * 86_400;
    for (const intent of intents) {
      await this.#documents.send(
        new PutCommand({
          TableName: this.#table,
          Item: { eventId: `${INTENT_PREFIX}${intent.id}`, intent: JSON.stringify(intent), expiresAt },
        }),
      );
    }
  }

  async intents(): Promise<ChangeIntent[]> {
    return (await this.#items())
      .filter((item) => typeof item.intent === 'string')
      .map((item) => JSON.parse(item.intent as string) as ChangeIntent);
  }

  async removeIntents(ids: readonly string[]): Promise<void> {
    await this.remove(ids.map((id) => `${INTENT_PREFIX}${id}`));
  }

  async remove(eventIds: readonly string[]): Promise<void> {
    for (let i = 0; i < eventIds.length; i += 25) {
      const chunk = eventIds.slice(i, i + 25);
      let requests: Record<string, unknown[]> | undefined = {
        [this.#table]: chunk.map((eventId) => ({ DeleteRequest: { Key: { eventId } } })),
      };
      for (let attempt = 0; requests && Object.keys(requests).length > 0 && attempt < 5; attempt++) {
        const answer = await this.#documents.send(new BatchWriteCommand({ RequestItems: requests as never }));
        requests = answer.UnprocessedItems as Record<string, unknown[]> | undefined;
      }
    }
  }
}
