/**
 * Following clusters in change, in AWS: one chase per cluster, held by a DynamoDB item keyed by the
 * cluster, and driven by delayed SQS messages to the follow-up function (`followUp.ts`).
 *
 * - A sync that finds a cluster in change starts a chase: the item is put only if the cluster has none
 *   (or only a dead one: past its bound, or a look overdue by far), then the first look is sent, delayed
 *   as the look schedule says (core/domain/lookSchedule.ts: `follow.firstDelaySeconds` for GKE and AKS;
 *   for EKS, by how far the operation is from the time EKS typically takes). A second event for the same
 *   cluster finds the item and joins the chase.
 * - Each look is the ordinary single-cluster sync. Still in change, the next look is sent when the
 *   schedule says, unless that passes the chase's bound (`follow.maxMinutes`, and for EKS
 *   `follow.eks.maxLooks`): then the chase ends and the schedule takes over. Settled (or gone), the chase ends.
 * - The cloud's word that an operation ended (GKE's last audit entry of it, Azure's Activity Log event of
 *   its end) makes the sync it triggers end the cluster's chase when that sync finds the cluster settled or
 *   gone (`complete`): the looks still on their way then find no chase of theirs.
 * - A look whose message is not the one the chase waits for (an older chase's, after a takeover or an end; another
 *   attempt's; another delivery of it, once one went on) does nothing. What a look goes by (when the chase began, its
 *   looks, the operation followed, the last delay) is the chase's record, never its message: a message only names
 *   the chase and the look.
 */
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { CpsyncConfig } from '../adapters/compose/config.ts';
import type * as ChaseApi from './chaseApi.ts';
import { clusterKey } from '../core/sync/clusterKeys.ts';
import { lookScheduleOf, nextLookDelay, operationOf } from '../core/domain/lookSchedule.ts';
import type { ClusterRef } from '../core/sync/ports.ts';
import { logger, metrics, settingsFromEnvironment } from './runtime.ts';
import { validClusterName, validGcpLocation, validResourceGroup } from './targets.ts';
import { UNRECOGNIZED_KEYS_COUNTED } from './strictMessages.ts';
import { MetricUnit } from '@aws-lambda-powertools/metrics';

/** Where chases are kept and sent: set by the stack on every function that syncs clusters. */
const ChaseSettings = z.object({
  CPSYNC_FOLLOW_QUEUE_URL: z.url(),
  CPSYNC_CHASE_TABLE: z.string().min(1),
});

/** A chase whose next look is overdue by this much has lost its message (it went to the dead letters): taken over. */
export const STALE_AFTER_MILLIS = 10 * 60_000;

/** The follow-up queue's message: one look at one cluster, in one chase. */
export const LookMessage = z.strictObject(
  {
    chaseId: z.uuid(),
    /** 1 for the first look. */
    attempt: z.number().int().min(1),
    ref: z
      .strictObject(
        {
          scope: z.strictObject(
            {
              provider: z.enum(['eks', 'gke', 'aks']),
              account: z.string().min(1),
              region: z.string().min(1),
            },
            UNRECOGNIZED_KEYS_COUNTED,
          ),
          name: z.string().min(1).max(253),
          location: z.string().min(1).optional(),
          resourceGroup: z.string().min(1).optional(),
        },
        UNRECOGNIZED_KEYS_COUNTED,
      )
      // A cluster its cloud could hold, as the events that start chases are checked: a look at a name the cloud
      // cannot hold answers not found, and must not stand for another cluster's.
      .superRefine((ref, context) => {
        if (!validClusterName(ref.scope.provider, ref.name))
          context.addIssue({
            code: 'custom',
            path: ['name'],
            message: `not a ${ref.scope.provider} cluster name`,
          });
        if (ref.scope.provider === 'gke' && !(ref.location && validGcpLocation(ref.location)))
          context.addIssue({ code: 'custom', path: ['location'], message: 'not a GCP location' });
        if (ref.scope.provider === 'aks' && !(ref.resourceGroup && validResourceGroup(ref.resourceGroup)))
          context.addIssue({ code: 'custom', path: ['resourceGroup'], message: 'not a resource group name' });
      }),
    /** The state in change the last reading found (`EKS CREATING`, …). */
    state: z.string().min(1).max(200),
    /** When the chase began (epoch milliseconds). */
    startedAt: z.number().int().min(0),
    /** The delay this look was sent with. */
    delaySeconds: z.number().int().min(0).max(900),
    /** When the operation followed began (epoch milliseconds): the cluster's creation, else the chase's start. */
    since: z.number().int().min(0).optional(),
  },
  UNRECOGNIZED_KEYS_COUNTED,
);
export type LookMessage = z.infer<typeof LookMessage>;

/**
 * A chase as its table keeps it: the only record of its bookkeeping. A look message names the chase and its attempt;
 * everything else a look goes by (when the chase began, how many looks it made, the state and operation followed, the
 * last delay) is read from here, never from the message.
 */
interface ChaseItem {
  cluster: string;
  chaseId: string;
  startedAt: number;
  /** The attempt of the look on its way: only that look is the chase's. */
  attempt: number;
  /** When the next look is due (epoch milliseconds). */
  due: number;
  state: string;
  /** When the operation followed began (epoch milliseconds). Absent in chases begun before it was kept: `startedAt`. */
  since?: number;
  /** The delay the look on its way was sent with. Absent in chases begun before it was kept: the first delay. */
  delaySeconds?: number;
  /** DynamoDB TTL (epoch seconds). */
  expiresAt: number;
  /**
   * When a sync last found the cluster in change and joined this chase (epoch milliseconds): that reading is of
   * the operation it found, maybe a newer one than the chase began for, so a completion read before it ends nothing.
   */
  joinedAt?: number;
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
  /**
   * Starts a chase of `ref`, or joins the one under way. `since`: when the cluster was created, while it
   * is (ISO 8601), where its looks are placed from.
   */
  start(ref: ClusterRef, state: string, since?: string): Promise<'started' | 'joined'>;
  /** Whether `message` is the look the cluster's chase is waiting for: its chase, and its attempt. */
  isCurrent(message: LookMessage): Promise<boolean>;
  /**
   * After a look still in change (`state`; undefined: the look could not read the cluster, its state as the chase has
   * it): the next look, or the end of the chase at its bound; `superseded` when `message` is no longer the look the
   * chase waits for (another delivery of it went on first, or the chase ended or was taken over).
   */
  next(
    message: LookMessage,
    state: string | undefined,
    since?: string,
  ): Promise<'again' | 'bounded' | 'superseded'>;
  /** Ends `message`'s chase (the cluster settled, is gone, or is no longer configured). */
  end(message: LookMessage): Promise<void>;
  /**
   * The cloud said an operation on `ref` ended, and a reading made at `readAt` (epoch milliseconds) found
   * the cluster settled or gone: ends its chase, unless that chase began or was joined after the reading (a
   * newer operation's). Whether a chase was ended.
   */
  complete(ref: ClusterRef, readAt: number): Promise<boolean>;
}

/** The chases of this function, from its environment (`CPSYNC_FOLLOW_QUEUE_URL`, `CPSYNC_CHASE_TABLE`). */
export function chasesFromEnvironment(knobs: Knobs, env: NodeJS.ProcessEnv = process.env): Chases {
  const settings = settingsFromEnvironment(ChaseSettings, 'following clusters in change', env);
  return makeChases(knobs, {
    queueUrl: settings.CPSYNC_FOLLOW_QUEUE_URL,
    table: settings.CPSYNC_CHASE_TABLE,
  });
}

/** What a look message says of the cluster it looks at. */
function lookRef(ref: ClusterRef): LookMessage['ref'] {
  return {
    scope: ref.scope,
    name: ref.name,
    ...(ref.location ? { location: ref.location } : {}),
    ...(ref.resourceGroup ? { resourceGroup: ref.resourceGroup } : {}),
  };
}

export function makeChases(
  knobs: Knobs,
  where: { queueUrl: string; table: string },
  now: () => number = Date.now,
): Chases {
  const boundMillis = knobs.maxMinutes * 60_000;
  const schedule = lookScheduleOf(knobs);
  const sinceOf = (since: string | undefined, fallback: number) => {
    const created = since ? Date.parse(since) : Number.NaN;
    return Number.isNaN(created) ? fallback : Math.min(created, fallback);
  };
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
  /** The cluster's chase as its table keeps it, when `message` is the look it waits for (its chase and attempt). */
  const chaseOf = async (message: LookMessage): Promise<ChaseItem | undefined> => {
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
    return item?.chaseId === message.chaseId && item.attempt === message.attempt ? item : undefined;
  };
  /** Starts or joins the cluster's chase; `tries`: how often a chase found and gone before it is joined is met. */
  const start = async (
    ref: ClusterRef,
    state: string,
    created?: string,
    tries = 3,
  ): Promise<'started' | 'joined'> => {
    const { module, documents } = await clients();
    const key = clusterKey(ref);
    const startedAt = now();
    const since = sinceOf(created, startedAt);
    const delaySeconds =
      (nextLookDelay(schedule, {
        provider: ref.scope.provider,
        state,
        looks: 0,
        sinceMillis: since,
        nowMillis: startedAt,
      }) ?? schedule.firstDelayMillis) / 1000;
    const message: LookMessage = {
      chaseId: randomUUID(),
      attempt: 1,
      ref: lookRef(ref),
      state,
      startedAt,
      delaySeconds,
      since,
    };
    const item: ChaseItem = {
      cluster: key,
      chaseId: message.chaseId,
      startedAt,
      attempt: 1,
      due: startedAt + delaySeconds * 1000,
      state,
      since,
      delaySeconds,
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
      // Joined: marked with this reading's time, so that a completion read before it (of an operation that
      // ended before this one began) does not end the chase that now follows this one too.
      try {
        await documents.send(
          new module.UpdateCommand({
            TableName: where.table,
            Key: { cluster: key },
            UpdateExpression: 'SET joinedAt = :at',
            ConditionExpression: 'attribute_exists(#cluster)',
            ExpressionAttributeNames: { '#cluster': 'cluster' },
            ExpressionAttributeValues: { ':at': startedAt },
          }),
        );
      } catch (marking) {
        if (!conditionFailed(marking)) throw marking;
        // Ended meanwhile (the chase is gone): the cluster is followed by a chase of its own.
        if (tries > 1) return start(ref, state, created, tries - 1);
        throw new Error(`the chase of ${key} kept ending as it was joined`, { cause: marking });
      }
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
  };
  return {
    start: (ref, state, created) => start(ref, state, created),

    isCurrent: async (message) => (await chaseOf(message)) !== undefined,

    async next(message, looked, created) {
      const { module, documents } = await clients();
      const key = clusterKey(message.ref);
      const chase = await chaseOf(message);
      if (!chase) return 'superseded';
      const at = now();
      const state = looked ?? chase.state;
      // Another operation than the one followed: its looks are placed from now (or the cluster's creation).
      const began = operationOf(state) === operationOf(chase.state) ? (chase.since ?? chase.startedAt) : at;
      const since = sinceOf(created, began);
      const delayMillis = nextLookDelay(schedule, {
        provider: message.ref.scope.provider,
        state,
        looks: chase.attempt,
        previousDelayMillis:
          chase.delaySeconds === undefined ? schedule.firstDelayMillis : chase.delaySeconds * 1000,
        sinceMillis: since,
        nowMillis: at,
      });
      const delaySeconds = (delayMillis ?? 0) / 1000;
      const due = at + delaySeconds * 1000;
      if (delayMillis === undefined || due - chase.startedAt > boundMillis) {
        await end(key, chase.chaseId);
        metrics.addMetric('ChasesBounded', MetricUnit.Count, 1);
        logger.warn('cluster still in change at the end of its follow-up: left to the schedule', {
          cluster: key,
          state,
          ...(delayMillis === undefined ? { looks: chase.attempt } : { minutes: knobs.maxMinutes }),
        });
        return 'bounded';
      }
      const attempt = chase.attempt + 1;
      // The record first, taken from this attempt to the next only once (another delivery of this look, or one
      // written to look like it, finds it taken and sends nothing); then the look. This reading found the cluster in
      // change at `at`: a completion read before it (of an operation this one followed) ends nothing (joinedAt).
      try {
        await documents.send(
          new module.UpdateCommand({
            TableName: where.table,
            Key: { cluster: key },
            UpdateExpression:
              'SET attempt = :next, #due = :due, #state = :state, since = :since, delaySeconds = :delay, joinedAt = :at',
            ConditionExpression: 'chaseId = :id AND attempt = :attempt',
            ExpressionAttributeNames: { '#due': 'due', '#state': 'state' },
            ExpressionAttributeValues: {
              ':next': attempt,
              ':due': due,
              ':state': state,
              ':since': since,
              ':delay': delaySeconds,
              ':at': at,
              ':id': chase.chaseId,
              ':attempt': chase.attempt,
            },
          }),
        );
      } catch (error) {
        if (!conditionFailed(error)) throw error;
        return 'superseded';
      }
      const look: LookMessage = {
        chaseId: chase.chaseId,
        attempt,
        ref: message.ref,
        state,
        startedAt: chase.startedAt,
        delaySeconds,
        since,
      };
      try {
        await send(look);
      } catch (error) {
        // No look is coming: the chase is not left to block the next event's.
        await end(key, chase.chaseId).catch(() => undefined);
        throw error;
      }
      return 'again';
    },

    end: (message) => end(clusterKey(message.ref), message.chaseId),

    async complete(ref, readAt) {
      const { module, documents } = await clients();
      const key = clusterKey(ref);
      try {
        await documents.send(
          new module.DeleteCommand({
            TableName: where.table,
            Key: { cluster: key },
            // A chase that began, or was joined, after the reading follows a newer operation: it is left to run.
            ConditionExpression:
              'attribute_exists(#cluster) AND startedAt <= :read AND (attribute_not_exists(joinedAt) OR joinedAt <= :read)',
            ExpressionAttributeNames: { '#cluster': 'cluster' },
            ExpressionAttributeValues: { ':read': readAt },
          }),
        );
      } catch (error) {
        if (!conditionFailed(error)) throw error;
        return false;
      }
      metrics.addMetric('ChasesCompleted', MetricUnit.Count, 1);
      logger.info('the cloud said the operation ended: chase ended', { cluster: key });
      return true;
    },
  };
}

/**
 * What a function that syncs clusters does with one it found in change: starts or joins its chase. A
 * function deployed without a follow-up queue (`CPSYNC_FOLLOW_QUEUE_URL` unset) leaves it to the schedule.
 */
export function follower(env: NodeJS.ProcessEnv = process.env) {
  const chasesOf = chasesOnce(env);
  return async (
    config: Pick<CpsyncConfig, 'follow'>,
    ref: ClusterRef,
    state: string,
    since?: string,
  ): Promise<'started' | 'joined' | 'off'> => {
    if (!env.CPSYNC_FOLLOW_QUEUE_URL) {
      logger.info('cluster in change: left to the schedule (no follow-up queue)', {
        cluster: clusterKey(ref),
        state,
      });
      return 'off';
    }
    // A look the follow-up function would refuse is not sent (it would only go round to the dead-letter queue).
    const parsed = LookMessage.shape.ref.safeParse(lookRef(ref));
    if (!parsed.success) {
      logger.warn('cluster in change: left to the schedule (its name cannot go in a follow-up message)', {
        cluster: clusterKey(ref),
        state,
        reason: parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('; '),
      });
      return 'off';
    }
    return chasesOf(config).start(ref, state, since);
  };
}

/**
 * What a function does when the cloud said an operation on a cluster ended and its sync found the cluster
 * settled or gone: ends the cluster's chase (see `Chases.complete`).
 */
export function completer(env: NodeJS.ProcessEnv = process.env) {
  const chasesOf = chasesOnce(env);
  return async (
    config: Pick<CpsyncConfig, 'follow'>,
    ref: ClusterRef,
    readAt: number,
  ): Promise<'ended' | 'none' | 'off'> => {
    if (!env.CPSYNC_FOLLOW_QUEUE_URL) return 'off';
    return (await chasesOf(config).complete(ref, readAt)) ? 'ended' : 'none';
  };
}

/** The chases of a function, made on first use from its environment. */
function chasesOnce(env: NodeJS.ProcessEnv) {
  let chases: Chases | undefined;
  return (config: Pick<CpsyncConfig, 'follow'>) => (chases ??= chasesFromEnvironment(config.follow, env));
}
