/**
 * A targeted sync of one cluster, once per delivery key (the EKS event handler, the webhook): a cluster
 * the sync finds in change is then followed until it settles (chases.ts) — on every delivery, a replayed
 * one included, so a chase that could not be started the first time is started by the redelivery.
 */
import type { Context } from 'aws-lambda';
import { syncCluster, type ClusterSyncReport } from '../core/sync/engine.ts';
import type { ClusterRef } from '../core/sync/ports.ts';
import { follower } from './chases.ts';
import { logger, once, type FunctionDeps } from './runtime.ts';

export interface ClusterSyncOutcome {
  result: ClusterSyncReport['result'];
  published: number;
  pending: number;
  problems?: string[];
  /** The state in change the sync found. */
  settling?: string;
  /** Whether a chase was started for it, joined, or the function has none. */
  followed?: 'started' | 'joined' | 'off';
}

export function clusterSyncOnce(name: string, getDeps: () => Promise<FunctionDeps>) {
  const apply = once(
    name,
    async ({ key, ref }: { key: string; ref: ClusterRef }): Promise<ClusterSyncOutcome> => {
      const deps = await getDeps();
      const report = await syncCluster(deps.ports, { syncId: key, ref, ...deps.settings });
      // A collision is no failure to retry: it is said in the log and in the answer, every delivery.
      for (const problem of report.problems ?? []) logger.warn(problem);
      return {
        result: report.result,
        published: report.published,
        pending: report.pending,
        ...(report.problems ? { problems: report.problems } : {}),
        ...(report.settling ? { settling: report.settling } : {}),
      };
    },
  );
  const follow = follower();
  return async (deps: FunctionDeps, payload: { key: string; ref: ClusterRef }, context: Context) => {
    const outcome = await apply(deps, payload, context);
    if (outcome.value.settling)
      outcome.value.followed = await follow(deps.config, payload.ref, outcome.value.settling);
    return outcome;
  };
}
