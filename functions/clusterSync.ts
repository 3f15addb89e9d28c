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

export interface ClusterSyncOutcome {
  result: ClusterSyncReport['result'];
  published: number;
  pending: number;
  problems?: string[];
  /** The state in change the sync found. */
  settling?: string;
  /** While the cluster is being created: when it was (ISO 8601). */
  since?: string;
  /** When the sync began, before it read the cluster (epoch milliseconds). */
  readAt: number;
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

export function clusterSyncOnce(name: string, getDeps: () => Promise<FunctionDeps>) {
  const apply = once(name, async ({ key, ref }: ClusterSyncPayload): Promise<ClusterSyncOutcome> => {
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
  return async (deps: FunctionDeps, payload: ClusterSyncPayload, context: Context) => {
    const outcome = await apply(deps, payload, context);
    const { settling, since, readAt } = outcome.value;
    if (settling) outcome.value.followed = await follow(deps.config, payload.ref, settling, since);
    // Settled or gone as the cloud said: the looks still on their way find no chase. The reading's own time
    // (kept with a replayed outcome) leaves a chase begun after it to a newer operation.
    else if (payload.completes && typeof readAt === 'number')
      outcome.value.chase = await complete(deps.config, payload.ref, readAt);
    return outcome;
  };
}
