/**
 * The events already told, per webhook: their ids kept in a DynamoDB table for a while, so that a
 * redelivered record, or the same change published again with the same `detail.eventId`, is not told twice.
 */
import {
  BatchWriteCommand,
  type BatchWriteCommandInput,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import { readConsistently, untilProcessed } from '../../../adapters/shared/dynamoBatches.ts';
import type { Notice } from './notices.ts';
import type { ChatNotifierSettings } from './settings.ts';

/** The events of one sync in a batch, and which records carry each. */
export interface SyncGroup {
  syncId: string;
  account: string;
  region: string;
  /** By event id: its notices and the message ids of the records that carry it. */
  events: Map<string, { notices: Notice[]; records: string[] }>;
}

/** The ids of `keys` recorded (and not yet expired) in `table`. */
export async function recordedKeys(
  documents: DynamoDBDocumentClient,
  table: string,
  keys: readonly string[],
): Promise<Set<string>> {
  const found = new Set<string>();
  const now = Math.floor(Date.now() / 1000);
  const items = await readConsistently(
    documents,
    table,
    keys.map((id) => ({ id })),
    'reading delivered events',
  );
  for (const item of items)
    // TTL deletes expired items late; an expired one no longer counts.
    if (typeof item.id === 'string' && !(Number(item.expiration) <= now)) found.add(item.id);
  return found;
}

/** Records `keys` as delivered in `table`, each expiring after `seconds`. */
async function recordKeys(
  documents: DynamoDBDocumentClient,
  table: string,
  keys: readonly string[],
  seconds: number,
  syncId: string,
): Promise<void> {
  const expiration = Math.floor(Date.now() / 1000) + seconds;
  for (let i = 0; i < keys.length; i += 25) {
    const first: BatchWriteCommandInput['RequestItems'] = {
      [table]: keys.slice(i, i + 25).map((id) => ({ PutRequest: { Item: { id, expiration, syncId } } })),
    };
    await untilProcessed('recording delivered events', first, async (RequestItems) => {
      const answer = await documents.send(new BatchWriteCommand({ RequestItems }));
      const left = answer.UnprocessedItems?.[table];
      return left?.length ? { [table]: left } : undefined;
    });
  }
}

/** Records a sync group's events as told (gathered or posted). */
export function recordGroup(
  documents: DynamoDBDocumentClient,
  settings: ChatNotifierSettings,
  keyOf: (eventId: string) => string,
  group: SyncGroup,
): Promise<void> {
  return recordKeys(
    documents,
    settings.table,
    [...group.events.keys()].map(keyOf),
    settings.rememberSeconds,
    group.syncId,
  );
}
