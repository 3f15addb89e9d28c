/**
 * Following clusters the clouds are still changing until they settle: each is looked at again — the
 * ordinary single-cluster sync, which never deletes on a reading in change and deletes a cluster the
 * cloud no longer has at once — after a first delay, the wait doubling up to a cap, for a bounded time
 * (then the schedule takes over). A look that fails (a throttled or unreachable cloud) is tried again
 * on the same schedule. A stop (`signal`) ends the waits; a look already started finishes.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { messageOf } from '../domain/errors.ts';
import { scopeKey } from '../domain/model/scope.ts';
import type { ClusterRef } from './ports.ts';
import {
  syncCluster,
  type ClusterSyncReport,
  type ClusterSyncRequest,
  type EnginePorts,
  type SettlingCluster,
} from './engine.ts';

export interface FollowRequest extends Omit<ClusterSyncRequest, 'ref'> {
  clusters: readonly SettlingCluster[];
  firstDelayMillis: number;
  maxDelayMillis: number;
  /** How long the whole follow may last. */
  maxMillis: number;
  signal?: AbortSignal;
  /** Told of every look. */
  onLook?: (look: FollowLook) => void;
}

export interface FollowLook {
  ref: ClusterRef;
  /** The state in change the look found; absent once the cluster settled (or is gone). */
  state?: string;
  result?: ClusterSyncReport['result'];
  error?: string;
  /** Since the follow began. */
  afterMillis: number;
}

export interface FollowReport {
  settled: FollowLook[];
  /** Still in change when the follow's time was up, or when it was stopped: left to the next sync. */
  unsettled: SettlingCluster[];
  looks: number;
  events: { published: number; pending: number };
  problems: string[];
  interrupted: boolean;
}

/** `cluster`'s key, for one chase per cluster. */
export function clusterKey(ref: ClusterRef): string {
  return [scopeKey(ref.scope), ref.location ?? ref.resourceGroup, ref.name].filter(Boolean).join('/');
}

export async function followClusters(ports: EnginePorts, request: FollowRequest): Promise<FollowReport> {
  const started = Date.now();
  const report: FollowReport = {
    settled: [],
    unsettled: [],
    looks: 0,
    events: { published: 0, pending: 0 },
    problems: [],
    interrupted: false,
  };
  // One chase per cluster, however often it was seen in change.
  const chases = new Map<string, { cluster: SettlingCluster; delay: number; at: number }>();
  for (const cluster of request.clusters)
    if (!chases.has(clusterKey(cluster.ref)))
      chases.set(clusterKey(cluster.ref), {
        cluster,
        delay: request.firstDelayMillis,
        at: started + request.firstDelayMillis,
      });
  const {
    clusters: _clusters,
    firstDelayMillis: _f,
    maxDelayMillis: _m,
    maxMillis: _x,
    signal,
    onLook,
    ...sync
  } = request;
  while (chases.size > 0) {
    const [key, chase] = [...chases].sort(([, a], [, b]) => a.at - b.at)[0]!;
    if (chase.at - started > request.maxMillis) break;
    try {
      await sleep(Math.max(0, chase.at - Date.now()), undefined, signal ? { signal } : {});
    } catch {
      report.interrupted = true;
      break;
    }
    report.looks += 1;
    const afterMillis = () => Date.now() - started;
    let look: FollowLook;
    try {
      const result = await syncCluster(ports, { ...sync, ref: chase.cluster.ref });
      report.events.published += result.published;
      report.events.pending += result.pending;
      report.problems.push(...(result.problems ?? []));
      look = {
        ref: chase.cluster.ref,
        result: result.result,
        ...(result.settling ? { state: result.settling } : {}),
        afterMillis: afterMillis(),
      };
    } catch (error) {
      // Tried again later, like a reading in change: nothing is deleted for a look that failed.
      look = {
        ref: chase.cluster.ref,
        state: chase.cluster.state,
        error: messageOf(error),
        afterMillis: afterMillis(),
      };
    }
    onLook?.(look);
    if (look.state === undefined) {
      report.settled.push(look);
      chases.delete(key);
    } else {
      chase.cluster = { ref: chase.cluster.ref, state: look.state };
      chase.delay = Math.min(chase.delay * 2, request.maxDelayMillis);
      chase.at = Date.now() + chase.delay;
    }
  }
  report.unsettled = [...chases.values()].map((chase) => chase.cluster);
  return report;
}
