/**
 * Following clusters in change, in AWS: one chase per cluster, held by a DynamoDB item keyed by the
 * cluster, and driven by delayed SQS messages to the follow-up function (`followUp.ts`).
 *
 * - A sync that finds a cluster in change starts a chase: the item is put only if the cluster has none
 *   (or only a dead one: past its bound, or a look overdue by far), then the first look is sent, delayed
 *   by `follow.firstDelaySeconds`. A second event for the same cluster finds the item and joins the chase.
 * - Each look is the ordinary single-cluster sync. Still in change, the next look is sent with the delay
 *   doubled up to `follow.maxDelaySeconds`, unless that passes the chase's bound (`follow.maxMinutes`):
 *   then the chase ends and the schedule takes over. Settled (or gone), the chase ends.
 * - A look whose message is not the chase's (an older chase's, after a takeover) does nothing.
 */
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { CpsyncConfig } from '../adapters/compose/config.ts';
import type * as ChaseApi from './chaseApi.ts';
import { clusterKey } from '../core/sync/follow.ts';
import type { ClusterRef } from '../core/sync/ports.ts';
import { logger, metrics, settingsFromEnvironment } from './runtime.ts';
import { MetricUnit } from '@aws-lambda-powertools/metrics';

/** Where chases are kept and sent: set by the stack on every function that syncs clusters. */
const ChaseSettings = z.object({
  CPSYNC_FOLLOW_QUEUE_URL: z.url(),
  CPSYNC_CHASE_TABLE: z.string().min(1),
});

/** A chase whose next look is overdue by this much has lost its message (it went to the dead letters): taken over. */
export const STALE_AFTER_MILLIS = 10 * 60_000;

/** The follow-up queue's message: one look at one cluster, in one chase. */
export const LookMessage = z.strictObject({
  chaseId: z.uuid(),
  /** 1 for the first look. */
  attempt: z.number().int().min(1),
  ref: z.strictObject({
    scope: z.strictObject({
      provider: z.enum(['eks', 'gke', 'aks']),
      account: z.string().min(1),
      region: z.string().min(1),
    }),
    name: z.string().min(1).max(253),
    location: z.string().min(1).optional(),
    resourceGroup: z.string().min(1).optional(),
  }),
  /** The state in change the last reading found (`EKS CREATING`, …). */
  state: z.string().min(1).max(200),
  /** When the chase began (epoch milliseconds). */
  startedAt: z.number().int().min(0),
  /** The delay this look was sent with. */
  delaySeconds: z.number().int().min(0).max(900),
});
export type LookMessage = z.infer<typeof LookMessage>;

interface ChaseItem {
  cluster: string;
  chaseId: string;
  startedAt: number;
  attempt: number;
  /** When the next look is due (epoch milliseconds). */
  due: number;
  state: string;
  /** DynamoDB TTL (epoch seconds). */
  expiresAt: number;
}

type Knobs = CpsyncConfig['follow'];

type Api = typeof ChaseApi;
let api:
  | Promise<{
      module: Api;
      sqs: InstanceType<Api['SQSClient']>;
      documents: ReturnType<Api['DynamoDBDocumentClient']['from']>;
    }>
  | undefined;
/** The SQS and DynamoDB clients, loaded when a cluster is first seen in change (not in every cold start). */
function clients() {
  api ??= import('./chaseApi.ts').then((module) => ({
    module,
    sqs: new module.SQSClient({}),
    documents: module.DynamoDBDocumentClient.from(new module.DynamoDBClient({})),
  }));
  return api;
}

const conditionFailed = (error: unknown) => (error as Error).name === 'ConditionalCheckFailedException';

export interface Chases {
  /** Starts a chase of `ref`, or joins the one under way. */
  start(ref: ClusterRef, state: string): Promise<'started' | 'joined'>;
  /** The chase `message` belongs to, when it is still the cluster's chase. */
  isCurrent(message: LookMessage): Promise<boolean>;
  /** After a look still in change: the next look, or the end of the chase at its bound. */
  next(message: LookMessage, state: string): Promise<'again' | 'bounded'>;
  /** Ends `message`'s chase (the cluster settled, is gone, or is no longer configured). */
  end(message: LookMessage): Promise<void>;
}

/** The chases of this function, from its environment (`CPSYNC_FOLLOW_QUEUE_URL`, `CPSYNC_CHASE_TABLE`). */
export function chasesFromEnvironment(knobs: Knobs, env: NodeJS.ProcessEnv = process.env): Chases {
  const settings = settingsFromEnvironment(ChaseSettings, 'following clusters in change', env);
  return makeChases(knobs, {
    queueUrl: settings.CPSYNC_FOLLOW_QUEUE_URL,
    table: settings.CPSYNC_CHASE_TABLE,
  });
}

export function makeChases(
  knobs: Knobs,
  where: { queueUrl: string; table: string },
  now: () => number = Date.now,
): Chases {
  const boundMillis = knobs.maxMinutes * 60_000;
  const send = async (message: LookMessage) => {
    const { module, sqs } = await clients();
    await sqs.send(
      new module.SendMessageCommand({
        QueueUrl: where.queueUrl,
        DelaySeconds: message.delaySeconds,
        MessageBody: JSON.stringify(message),
      }),
    );
  };
  const end = async (key: string, chaseId: string) => {
    const { module, documents } = await clients();
    try {
      await documents.send(
        new module.DeleteCommand({
          TableName: where.table,
          Key: { cluster: key },
          ConditionExpression: 'chaseId = :id',
          ExpressionAttributeValues: { ':id': chaseId },
        }),
      );
    } catch (error) {
      if (!conditionFailed(error)) throw error;
    }
  };
  return {
    async start(ref, state) {
      const { module, documents } = await clients();
      const key = clusterKey(ref);
      const startedAt = now();
      const message: LookMessage = {
        chaseId: randomUUID(),
        attempt: 1,
        ref: {
          scope: ref.scope,
          name: ref.name,
          ...(ref.location ? { location: ref.location } : {}),
          ...(ref.resourceGroup ? { resourceGroup: ref.resourceGroup } : {}),
        },
        state,
        startedAt,
        delaySeconds: knobs.firstDelaySeconds,
      };
      const item: ChaseItem = {
        cluster: key,
        chaseId: message.chaseId,
        startedAt,
        attempt: 1,
        due: startedAt + knobs.firstDelaySeconds * 1000,
        state,
        expiresAt: Math.ceil((startedAt + boundMillis + STALE_AFTER_MILLIS) / 1000),
      };
      try {
        await documents.send(
          new module.PutCommand({
            TableName: where.table,
            Item: item,
            // One chase per cluster: a live one is joined; one past its bound or long overdue is taken over.
            ConditionExpression: 'attribute_not_exists(#cluster) OR #due < :stale OR expiresAt < :seconds',
            ExpressionAttributeNames: { '#cluster': 'cluster', '#due': 'due' },
            ExpressionAttributeValues: {
              ':stale': startedAt - STALE_AFTER_MILLIS,
              ':seconds': Math.floor(startedAt / 1000) - Math.ceil(STALE_AFTER_MILLIS / 1000),
            },
          }),
        );
      } catch (error) {
        if (!conditionFailed(error)) throw error;
        metrics.addMetric('ChasesJoined', MetricUnit.Count, 1);
        logger.info('cluster in change: already followed', { cluster: key, state });
        return 'joined';
      }
      try {
        await send(message);
      } catch (error) {
        // No look is coming: the chase is not left to block the next event's.
        await end(key, message.chaseId).catch(() => undefined);
        throw error;
      }
      metrics.addMetric('ChasesStarted', MetricUnit.Count, 1);
      logger.info('cluster in change: followed', {
        cluster: key,
        state,
        chaseId: message.chaseId,
        firstLookInSeconds: message.delaySeconds,
      });
      return 'started';
    },

    async isCurrent(message) {
      const { module, documents } = await clients();
      const item = (
        await documents.send(
          new module.GetCommand({
            TableName: where.table,
            Key: { cluster: clusterKey(message.ref) },
            ConsistentRead: true,
          }),
        )
      ).Item as ChaseItem | undefined;
      return item?.chaseId === message.chaseId;
    },

    async next(message, state) {
      const { module, documents } = await clients();
      const key = clusterKey(message.ref);
      const delaySeconds = Math.min(Math.max(message.delaySeconds, 1) * 2, knobs.maxDelaySeconds);
      const due = now() + delaySeconds * 1000;
      if (due - message.startedAt > boundMillis) {
        await end(key, message.chaseId);
        metrics.addMetric('ChasesBounded', MetricUnit.Count, 1);
        logger.warn('cluster still in change at the end of its follow-up: left to the schedule', {
          cluster: key,
          state,
          minutes: knobs.maxMinutes,
        });
        return 'bounded';
      }
      // The look first, then the record: a record whose look was never sent would block the cluster's chases.
      await send({ ...message, attempt: message.attempt + 1, state, delaySeconds });
      try {
        await documents.send(
          new module.UpdateCommand({
            TableName: where.table,
            Key: { cluster: key },
            UpdateExpression: 'SET attempt = :attempt, #due = :due, #state = :state',
            ConditionExpression: 'chaseId = :id',
            ExpressionAttributeNames: { '#due': 'due', '#state': 'state' },
            ExpressionAttributeValues: {
              ':attempt': message.attempt + 1,
              ':due': due,
              ':state': state,
              ':id': message.chaseId,
            },
          }),
        );
      } catch (error) {
        // Taken over meanwhile: the look just sent is not the chase's, and will do nothing.
        if (!conditionFailed(error)) throw error;
      }
      return 'again';
    },

    end: (message) => end(clusterKey(message.ref), message.chaseId),
  };
}

/**
 * What a function that syncs clusters does with one it found in change: starts or joins its chase. A
 * function deployed without a follow-up queue (`CPSYNC_FOLLOW_QUEUE_URL` unset) leaves it to the schedule.
 */
export function follower(env: NodeJS.ProcessEnv = process.env) {
  let chases: Chases | undefined;
  return async (
    config: Pick<CpsyncConfig, 'follow'>,
    ref: ClusterRef,
    state: string,
  ): Promise<'started' | 'joined' | 'off'> => {
    if (!env.CPSYNC_FOLLOW_QUEUE_URL) {
      logger.info('cluster in change: left to the schedule (no follow-up queue)', {
        cluster: clusterKey(ref),
        state,
      });
      return 'off';
    }
    chases ??= chasesFromEnvironment(config.follow, env);
    return chases.start(ref, state);
  };
}
