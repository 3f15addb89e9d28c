/**
 * The chat notifier: an example subscriber of cpsync's events, deployable as it is. Rules on the bus
 * deliver to an SQS queue; this function reads the queue in batches and posts to a Slack or Microsoft
 * Teams incoming webhook what deserves a person's attention — clusters that joined or left the
 * inventory, Kubernetes version changes, health changes, scopes that could not be synced. Everything
 * else it receives is counted and let go.
 *
 * - **One message per sync**: the events of one run (`detail.runId`, which every scope of a scheduled full
 *   sync shares, else `detail.syncId`) make one message, its list of clusters bounded (CHAT_MAX_LINES, then
 *   "and N more"). With CHAT_QUIET_SECONDS, a sync's events are gathered across batches in a digest and
 *   posted once the sync has been quiet that long (a flush message to the notifier's own queue,
 *   CHAT_FLUSH_QUEUE_URL, delayed by it); without, each batch's events of a sync are one message.
 * - **One line per cluster**: the copies of a cluster's profile (its projections into other namespaces) are
 *   one cluster — counted and listed once for what happened to it, by its member id (or provider id).
 * - **The webhook URL is a secret** (Secrets Manager: the URL itself, or JSON `{"url": "…"}`), read
 *   through Powertools parameters and cached; it is never logged.
 * - **Polite to the webhook**: one post at a time, at least CHAT_MIN_INTERVAL_MS after the previous one
 *   ended (Slack takes about one message a second per webhook); a 429 is waited out as its
 *   `Retry-After` says, a 429 or 5xx retried with backoff, never past the invocation's remaining time.
 *   What could not be posted is reported as batch item failures: SQS delivers those records again, and
 *   only those.
 * - **One message per event**: the ids of the events a message carried are kept in a DynamoDB table
 *   (per webhook, for CHAT_IDEMPOTENCY_TTL_SECONDS), and an event already told is not told again — a
 *   redelivered record, or the same change published again with the same `detail.eventId`.
 *   At-least-once all the same: a message posted whose record was not written (the function stopped in
 *   between) is posted again when its events come back.
 *
 * Environment: CHAT_WEBHOOK_SECRET (secret id or ARN, required), CHAT_IDEMPOTENCY_TABLE (required),
 * CHAT_FORMAT (`slack`, the default, or `teams`), CHAT_MIN_INTERVAL_MS (1000),
 * CHAT_IDEMPOTENCY_TTL_SECONDS (86400), CHAT_MAX_LINES (20, at most 50), CHAT_QUIET_SECONDS (0, at most
 * 900) and CHAT_FLUSH_QUEUE_URL (required with a quiet time). A setting that is wrong fails
 * the whole invocation, naming it: nothing is lost, SQS delivers the batch again (and in the end to its
 * dead-letter queue).
 */
import { createHash } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { CpsyncEventError, parseCpsyncEvent, type CpsyncEventBridgeEvent } from '../../../events/index.ts';
import { logger, metrics, withPowertools } from '../../runtime.ts';
import { recordedKeys, recordGroup, type SyncGroup } from './delivered.ts';
import { makePoster, webhookUrl } from './delivery.ts';
import { flushDigest, flushOf, gather } from './digest.ts';
import { chatPayload } from './formats.ts';
import { addToTally, composeMessage } from './message.ts';
import { noticesOf, type Notice } from './notices.ts';
import { chatSettings, type ChatNotifierOverrides } from './settings.ts';

/**
 * The chat notifier's handler: an SQS batch of cpsync events (EventBridge rule → SQS → this function)
 * in, a partial batch response out. `overrides` replace settings the environment would give.
 */
export function makeChatNotifier(overrides: ChatNotifierOverrides = {}) {
  const { documents: givenDocuments, sqs: givenSqs, ...settingOverrides } = overrides;
  let documents = givenDocuments;
  let sqs = givenSqs;
  const post = makePoster();

  return withPowertools(async (event: SQSEvent, context: Context): Promise<SQSBatchResponse> => {
    const deadline = Date.now() + context.getRemainingTimeInMillis();
    const settings = { ...chatSettings(), ...settingOverrides };
    documents ??= DynamoDBDocumentClient.from(new DynamoDBClient({}));
    if (settings.quietSeconds > 0) sqs ??= new SQSClient({});
    const failed = new Set<string>();
    let ignored = 0;
    let duplicates = 0;
    let gathered = 0;
    /** Digests whose quiet time may be over (a flush each), the latest version a flush names, and the records that asked. */
    const flushes = new Map<string, { version?: number; records: string[] }>();

    // Read every record; one that is not a cpsync event fails alone.
    const groups = new Map<string, SyncGroup>();
    const byEventId = new Map<string, { notices: Notice[]; records: string[] }>();
    for (const record of event.Records) {
      const flush = flushOf(record.body);
      if (flush) {
        const held = flushes.get(flush.digest);
        // Flushes of one digest in one batch: the latest version names them all (a flush naming none, the clock).
        const version =
          held && (held.version === undefined || flush.version === undefined)
            ? undefined
            : Math.max(held?.version ?? 0, flush.version ?? 0) || undefined;
        flushes.set(flush.digest, {
          ...(version !== undefined ? { version } : {}),
          records: [...(held?.records ?? []), record.messageId],
        });
        continue;
      }
      let parsed: CpsyncEventBridgeEvent;
      try {
        parsed = parseCpsyncEvent(record.body);
      } catch (error) {
        if (!(error instanceof CpsyncEventError)) throw error;
        logger.warn('not a cpsync event this notifier reads: the record fails', {
          messageId: record.messageId,
          problems: error.problems,
        });
        failed.add(record.messageId);
        continue;
      }
      const notices = noticesOf(parsed);
      if (notices.length === 0) {
        ignored++;
        continue;
      }
      // Every scope of a scheduled run is its own sync: the run (`runId`) is what one message tells.
      const { eventId } = parsed.detail;
      const syncId = ('runId' in parsed.detail && parsed.detail.runId) || parsed.detail.syncId;
      const known = byEventId.get(eventId);
      if (known) {
        // The same event twice in one batch: one line, and the records share its fate.
        known.records.push(record.messageId);
        duplicates++;
        continue;
      }
      let group = groups.get(syncId);
      if (!group) {
        group = { syncId, account: parsed.account, region: parsed.region, events: new Map() };
        groups.set(syncId, group);
      }
      const entry = { notices, records: [record.messageId] };
      group.events.set(eventId, entry);
      byEventId.set(eventId, entry);
    }

    const failGroups = (list: Iterable<SyncGroup>) => {
      for (const group of list)
        for (const { records } of group.events.values()) for (const id of records) failed.add(id);
    };
    let posted = 0;
    let notified = 0;
    /** Groups settled: posted, or nothing left to post. */
    const settled = new Set<SyncGroup>();
    if (groups.size > 0 || flushes.size > 0) {
      try {
        const url = await webhookUrl(settings.webhookSecret);
        // Ids are kept per webhook, so notifiers sharing a table do not silence each other.
        const channel = createHash('sha256').update(url).digest('hex').slice(0, 16);
        const keyOf = (eventId: string) => `${channel}#${eventId}`;
        const allIds = [...groups.values()].flatMap((g) => [...g.events.keys()]);
        const delivered = await recordedKeys(documents, settings.table, allIds.map(keyOf));
        let stopped = false;
        for (const group of groups.values()) {
          for (const [eventId, { records }] of group.events)
            if (delivered.has(keyOf(eventId))) {
              duplicates += records.length;
              group.events.delete(eventId);
            }
          if (group.events.size === 0) {
            settled.add(group);
            continue;
          }
          if (stopped) {
            failGroups([group]);
            continue;
          }
          const notices = [...group.events.values()].flatMap((e) => e.notices);
          if (settings.quietSeconds > 0) {
            // Gathered across batches: the message goes once the sync has been quiet for a while.
            await gather(documents, sqs, settings, keyOf, channel, group, notices);
            settled.add(group);
            gathered += group.events.size;
            continue;
          }
          const message = composeMessage(addToTally(notices, settings.maxLines), group, settings.maxLines);
          const payload = chatPayload(message, settings.format);
          const outcome = await post(url, payload, settings, deadline - settings.safetyMarginMs);
          if (!outcome.posted) {
            logger.warn('message not posted: its records fail and come back', {
              syncId: group.syncId,
              events: group.events.size,
              attempts: outcome.attempts,
              reason: outcome.reason,
            });
            failGroups([group]);
            stopped ||= outcome.stop;
            continue;
          }
          settled.add(group);
          posted++;
          notified += group.events.size;
          logger.info('message posted', {
            syncId: group.syncId,
            events: group.events.size,
            title: message.title,
            attempts: outcome.attempts,
          });
          // Posted but not recorded (this fails, or the function stops first) means the message may be
          // posted again should these events come back: at-least-once. The records still succeed, so
          // SQS does not bring them back for that.
          try {
            await recordGroup(documents, settings, keyOf, group);
          } catch (error) {
            logger.warn('message posted, its events not recorded as delivered', {
              syncId: group.syncId,
              error: (error as Error).message,
            });
          }
        }
        // Digests whose sync has been quiet long enough: one message each.
        for (const [digest, { version, records }] of flushes) {
          if (stopped) {
            for (const id of records) failed.add(id);
            continue;
          }
          const flush = { digest, ...(version !== undefined ? { version } : {}) };
          const outcome = await flushDigest(documents, settings, flush, channel, (payload) =>
            post(url, payload, settings, deadline - settings.safetyMarginMs),
          );
          if (outcome.posted) posted++;
          if (!outcome.ok) {
            for (const id of records) failed.add(id);
            stopped ||= outcome.stop;
          }
          flushes.delete(digest);
        }
      } catch (error) {
        // The secret or the table could not be read: every message not yet posted is left for redelivery.
        logger.error('chat notifier could not go on: the records not yet notified fail', {
          error: (error as Error).message,
        });
        failGroups([...groups.values()].filter((g) => !settled.has(g)));
        for (const { records } of flushes.values()) for (const id of records) failed.add(id);
      }
    }

    metrics.addMetric('MessagesPosted', MetricUnit.Count, posted);
    metrics.addMetric('EventsNotified', MetricUnit.Count, notified);
    metrics.addMetric('EventsIgnored', MetricUnit.Count, ignored);
    metrics.addMetric('DuplicateEvents', MetricUnit.Count, duplicates);
    metrics.addMetric('EventsGathered', MetricUnit.Count, gathered);
    return {
      batchItemFailures: event.Records.filter((r) => failed.has(r.messageId)).map((r) => ({
        itemIdentifier: r.messageId,
      })),
    };
  });
}

export const handler = makeChatNotifier();
