/** DynamoDB's batch calls, which may leave part of a request unprocessed (throttled). */
import { setTimeout as sleep } from 'node:timers/promises';
import {
  BatchGetCommand,
  type BatchGetCommandInput,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';

/** Keys one BatchGetItem takes at most (DynamoDB's limit). */
const BATCH_GET_KEYS = 100;

/** Runs a DynamoDB batch call until nothing is left unprocessed (a few rounds, with backoff). */
export async function untilProcessed<T>(
  what: string,
  first: T,
  call: (request: T) => Promise<T | undefined>,
): Promise<void> {
  let request: T | undefined = first;
  for (let round = 0; request; round++) {
    if (round > 0) await sleep(50 * 2 ** round);
    if (round === 6) throw new Error(`${what}: DynamoDB left items unprocessed after ${round} rounds`);
    request = await call(request);
  }
}

/**
 * The items of `table` under `keys` (any number of them, a hundred a call), read consistently: what the table holds
 * now, not what an index or an earlier read showed. Keys DynamoDB leaves unprocessed are asked again.
 */
export async function readConsistently(
  documents: DynamoDBDocumentClient,
  table: string,
  keys: ReadonlyArray<Record<string, unknown>>,
  what: string,
): Promise<Array<Record<string, unknown>>> {
  const items: Array<Record<string, unknown>> = [];
  for (let at = 0; at < keys.length; at += BATCH_GET_KEYS) {
    const first: BatchGetCommandInput['RequestItems'] = {
      [table]: { Keys: keys.slice(at, at + BATCH_GET_KEYS), ConsistentRead: true },
    };
    await untilProcessed(what, first, async (RequestItems) => {
      const answer = await documents.send(new BatchGetCommand({ RequestItems }));
      items.push(...(answer.Responses?.[table] ?? []));
      const left = answer.UnprocessedKeys?.[table];
      return left?.Keys?.length ? { [table]: left } : undefined;
    });
  }
  return items;
}
