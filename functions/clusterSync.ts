/**
 * A targeted sync of one cluster, once per delivery key (the EKS event handler, the webhook): a cluster
 * the sync finds in change is then followed until it settles (chases.ts) — on every delivery, a replayed
 * one included, so a chase that could not be started the first time is started by the redelivery. A
 * delivery that is the cloud's word that an operation ended (`completes`) ends the cluster's chase when
 * the sync finds the cluster settled or gone; the deletion itself is only ever the sync's own, made on the
 * cloud's per-cluster answer.
 */
import type { Context } from 'aws-lambda';
import { syncCluster, type ClusterSyncReport } from '../core/sync/engine.ts';
import type { ClusterRef } from '../core/sync/ports.ts';
import { completer, follower } from './chases.ts';
import { logger, once, type FunctionDeps } from './runtime.ts';
import type { OnceWork } from './onceWork.ts';

export interface ClusterSyncOutcome {
  result: ClusterSyncReport['result'];
  published: number;
  pending: number;
  problems?: string[];
  /** The state in change the sync found. */
  settling?: string;
  /** While the cluster is being created: when it was (ISO 8601). */
  since?: string;
  /** Whether a chase was started for it, joined, or the function has none. */
  followed?: 'started' | 'joined' | 'off';
  /** After an operation's end: whether the cluster's chase was ended by it. */
  chase?: 'ended' | 'none' | 'off';
}

export interface ClusterSyncPayload {
  key: string;
  ref: ClusterRef;
  /** The delivery is the cloud's word that an operation on the cluster ended. */
  completes?: boolean;
}

export function clusterSyncOnce(name: OnceWork, getDeps: () => Promise<FunctionDeps>) {
  /** What is recorded of a delivery: the outcome, and when the sync began, before it read the cluster. */
  type Recorded = ClusterSyncOutcome & { readAt: number };
  const apply = once(name, async ({ key, ref }: ClusterSyncPayload): Promise<Recorded> => {
    const deps = await getDeps();
    const readAt = Date.now();
    const report = await syncCluster(deps.ports, { syncId: key, ref, ...deps.settings });
    // A collision is no failure to retry: it is said in the log and in the answer, every delivery.
    for (const problem of report.problems ?? []) logger.warn(problem);
    return {
      result: report.result,
      published: report.published,
      pending: report.pending,
      readAt,
      ...(report.problems ? { problems: report.problems } : {}),
      ...(report.settling ? { settling: report.settling } : {}),
      ...(report.since ? { since: report.since } : {}),
    };
  });
  const follow = follower();
  const complete = completer();
  return async (
    deps: FunctionDeps,
    payload: ClusterSyncPayload,
    context: Context,
  ): Promise<{ value: ClusterSyncOutcome; replayed: boolean }> => {
    const { value: recorded, replayed } = await apply(deps, payload, context);
    // When the reading was made is the record's, not the answer's.
    const { readAt, ...value } = recorded;
    const { settling, since } = value;
    if (settling) value.followed = await follow(deps.config, payload.ref, settling, since);
    // Settled or gone as the cloud said: the looks still on their way find no chase. The reading's own time
    // (kept with a replayed outcome) leaves a chase begun after it to a newer operation.
    else if (payload.completes && typeof readAt === 'number')
      value.chase = await complete(deps.config, payload.ref, readAt);
    return { value, replayed };
  };
}
