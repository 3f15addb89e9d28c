/**
 * Digests: one message per sync across batches. With a quiet time, a sync's notices are gathered in a
 * DynamoDB item (written at the version read) and a flush is sent to the notifier's own queue, delayed by
 * the quiet time; the flush that finds the sync quiet claims the tally and posts it once.
 */
import type { SQSClient } from '@aws-sdk/client-sqs';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { GetCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { logger } from '../../runtime.ts';
import { recordGroup, type SyncGroup } from './delivered.ts';
import type { PostOutcome } from './delivery.ts';
import { chatPayload } from './formats.ts';
import { addToTally, composeMessage, type Tally } from './message.ts';
import type { Notice } from './notices.ts';
import type { ChatNotifierSettings } from './settings.ts';

/** The body of a flush message: the digest whose quiet time may be over. */
const FLUSH_KEY = 'cpsyncChatFlush';
/** A digest item: the live tally (still gathering) and the one being posted (`outgoing`), if any. */
interface DigestItem {
  id: string;
  syncId: string;
  account: string;
  region: string;
  version: number;
  lastSeen: number;
  live?: string;
  outgoing?: string;
}

/**
 * A flush record: the digest it names, and the digest's version its batch wrote (absent from the flushes of
 * earlier versions of cpsync); undefined for any other record (a cpsync event).
 */
export function flushOf(body: string): { digest: string; version?: number } | undefined {
  if (!body.includes(FLUSH_KEY)) return undefined;
  try {
    const flush = (JSON.parse(body) as Record<string, { digest?: unknown; version?: unknown } | undefined>)[
      FLUSH_KEY
    ];
    const digest = flush?.digest;
    if (typeof digest !== 'string' || !digest.startsWith('digest#')) return undefined;
    const version = flush?.version;
    return Number.isSafeInteger(version) && (version as number) > 0
      ? { digest, version: version as number }
      : { digest };
  } catch {
    return undefined;
  }
}

/**
 * Adds a sync group's notices to its digest (read, merged, written at the version read: another
 * writer first means another try), then sends the digest's flush, delayed by the quiet time, and
 * records the events as told. A flush that comes while events still arrive finds the digest not
 * quiet and leaves it to the flush of the last batch.
 */
export async function gather(
  documents: DynamoDBDocumentClient,
  sqs: SQSClient | undefined,
  settings: ChatNotifierSettings,
  keyOf: (eventId: string) => string,
  channel: string,
  group: SyncGroup,
  notices: readonly Notice[],
): Promise<void> {
  const id = `digest#${channel}#${group.syncId}`;
  const expiration = Math.floor(Date.now() / 1000) + settings.rememberSeconds;
  let written: number;
  for (let attempt = 1; ; attempt++) {
    const item = (
      await documents.send(new GetCommand({ TableName: settings.table, Key: { id }, ConsistentRead: true }))
    ).Item as DigestItem | undefined;
    const live = item?.live ? (JSON.parse(item.live) as Tally) : undefined;
    const tally = addToTally(notices, settings.maxLines, live);
    try {
      await documents.send(
        new UpdateCommand({
          TableName: settings.table,
          Key: { id },
          UpdateExpression:
            'SET live = :live, lastSeen = :now, syncId = :sync, account = :account, #region = :region, expiration = :expiration, version = :next',
          ConditionExpression: item ? 'version = :version' : 'attribute_not_exists(id)',
          ExpressionAttributeNames: { '#region': 'region' },
          ExpressionAttributeValues: {
            ':live': JSON.stringify(tally),
            ':now': Date.now(),
            ':sync': group.syncId,
            ':account': group.account,
            ':region': group.region,
            ':expiration': expiration,
            ':next': (item?.version ?? 0) + 1,
            ...(item ? { ':version': item.version } : {}),
          },
        }),
      );
      written = (item?.version ?? 0) + 1;
      break;
    } catch (error) {
      if ((error as Error).name !== 'ConditionalCheckFailedException' || attempt >= 8) throw error;
    }
  }
  // The version this batch wrote: the flush that still finds it there comes after the quiet time with no batch
  // since, whatever the clocks of the sandboxes that gathered and flush say.
  await sqs!.send(
    new SendMessageCommand({
      QueueUrl: settings.flushQueueUrl,
      DelaySeconds: settings.quietSeconds,
      MessageBody: JSON.stringify({ [FLUSH_KEY]: { digest: id, version: written } }),
    }),
  );
  await recordGroup(documents, settings, keyOf, group);
}

/**
 * A flush: posts what a digest holds once its sync has been quiet for `quietSeconds`. The live tally
 * is first claimed — moved to `outgoing` at the version read — so events that arrive meanwhile start a
 * new tally (a message of their own, later); `outgoing` goes once posted, and a flush that finds it
 * (an earlier post failed) posts it again. `ok: false` leaves the flush record for redelivery.
 */
export async function flushDigest(
  documents: DynamoDBDocumentClient,
  settings: ChatNotifierSettings,
  flush: { digest: string; version?: number },
  channel: string,
  send: (payload: object) => Promise<PostOutcome>,
): Promise<{ ok: boolean; posted: boolean; stop: boolean }> {
  const id = flush.digest;
  // Digests of another webhook (the secret was rotated) are not this one's to post.
  if (!id.startsWith(`digest#${channel}#`)) return { ok: true, posted: false, stop: false };
  const get = async () =>
    (await documents.send(new GetCommand({ TableName: settings.table, Key: { id }, ConsistentRead: true })))
      .Item as DigestItem | undefined;
  let item = await get();
  if (!item) return { ok: true, posted: false, stop: false };
  let posted = false;
  const postOutgoing = async (claimed: DigestItem): Promise<{ ok: boolean; stop: boolean }> => {
    const tally = JSON.parse(claimed.outgoing!) as Tally;
    const message = composeMessage(tally, claimed, settings.maxLines);
    const outcome = await send(chatPayload(message, settings.format));
    if (!outcome.posted) {
      logger.warn('digest not posted: its flush comes back', {
        syncId: claimed.syncId,
        reason: outcome.reason,
      });
      return { ok: false, stop: outcome.stop };
    }
    posted = true;
    logger.info('message posted', {
      syncId: claimed.syncId,
      title: message.title,
      attempts: outcome.attempts,
    });
    await documents
      .send(
        new UpdateCommand({
          TableName: settings.table,
          Key: { id },
          UpdateExpression: 'REMOVE outgoing',
          ConditionExpression: 'outgoing = :outgoing',
          ExpressionAttributeValues: { ':outgoing': claimed.outgoing },
        }),
      )
      .catch((error: Error) => {
        // Posted, not marked: posted again by a later flush (at-least-once).
        if (error.name !== 'ConditionalCheckFailedException') throw error;
      });
    return { ok: true, stop: false };
  };
  if (item.outgoing) {
    const retried = await postOutgoing(item);
    if (!retried.ok) return { ...retried, posted };
    item = await get();
    if (!item) return { ok: true, posted, stop: false };
  }
  // Nothing gathered: nothing to say. A batch since this flush's (the digest at a later version): the flush sent
  // with the last batch comes later. A flush of an earlier version of cpsync names no version: the digest is quiet
  // once its last batch is as old as the quiet time, by this sandbox's clock (1 s allowed).
  if (!item.live) return { ok: true, posted, stop: false };
  const quiet =
    flush.version !== undefined
      ? item.version === flush.version
      : Date.now() - item.lastSeen >= settings.quietSeconds * 1000 - 1000;
  if (!quiet) return { ok: true, posted, stop: false };
  try {
    await documents.send(
      new UpdateCommand({
        TableName: settings.table,
        Key: { id },
        UpdateExpression: 'SET outgoing = :live, version = :next REMOVE live',
        ConditionExpression: 'version = :version AND attribute_not_exists(outgoing)',
        ExpressionAttributeValues: {
          ':live': item.live,
          ':version': item.version,
          ':next': item.version + 1,
        },
      }),
    );
  } catch (error) {
    // Another batch or flush came first: its own flush follows.
    if ((error as Error).name === 'ConditionalCheckFailedException') return { ok: true, posted, stop: false };
    throw error;
  }
  const sent = await postOutgoing({ ...item, outgoing: item.live });
  return { ...sent, posted };
}
