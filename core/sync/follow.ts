/**
 * Following clusters the clouds are still changing until they settle: each is looked at again — the
 * ordinary single-cluster sync, which never deletes on a reading in change and deletes a cluster the
 * cloud no longer has at once — on the look schedule (core/domain/lookSchedule.ts: GKE and AKS after a
 * first delay, the wait doubling up to a cap; EKS more often as the operation nears the time EKS typically
 * takes, for a bounded number of looks), for a bounded time (then the schedule takes over). A look that
 * fails (a throttled or unreachable cloud) is tried again on the same schedule. A stop (`signal`) ends the
 * waits; a look already started finishes.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { messageOf } from '../domain/errors.ts';

import { nextLookDelay, operationOf, type LookSchedule } from '../domain/lookSchedule.ts';
import type { ClusterRef } from './ports.ts';
import {
  syncCluster,
  type ClusterSyncReport,
  type ClusterSyncRequest,
  type EnginePorts,
  type SettlingCluster,
} from './engine.ts';
import { clusterKey } from './clusterKeys.ts';

export interface FollowRequest extends Omit<ClusterSyncRequest, 'ref'> {
  clusters: readonly SettlingCluster[];
  /** When each look comes. */
  schedule: LookSchedule;
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
  interface Chase {
    cluster: SettlingCluster;
    looks: number;
    delay?: number;
    /** When its operation began: the cluster's creation, else when the follow began. */
    since: number;
    at: number;
  }
  const chases = new Map<string, Chase>();
  /** When `chase` looks next, or undefined when it has made its looks. */
  const place = (chase: Chase, now: number): number | undefined => {
    const delay = nextLookDelay(request.schedule, {
      provider: chase.cluster.ref.scope.provider,
      state: chase.cluster.state,
      looks: chase.looks,
      ...(chase.delay === undefined ? {} : { previousDelayMillis: chase.delay }),
      sinceMillis: chase.since,
      nowMillis: now,
    });
    if (delay === undefined) return undefined;
    chase.delay = delay;
    return now + delay;
  };
  const sinceOf = (cluster: SettlingCluster, fallback: number) => {
    const created = cluster.since ? Date.parse(cluster.since) : Number.NaN;
    return Number.isNaN(created) ? fallback : created;
  };
  for (const cluster of request.clusters)
    if (!chases.has(clusterKey(cluster.ref))) {
      const chase: Chase = { cluster, looks: 0, since: sinceOf(cluster, started), at: started };
      chase.at = place(chase, started) ?? started;
      chases.set(clusterKey(cluster.ref), chase);
    }
  const { clusters: _clusters, schedule: _schedule, maxMillis: _x, signal, onLook, ...sync } = request;
  const unsettled: SettlingCluster[] = [];
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
    chase.looks += 1;
    const afterMillis = () => Date.now() - started;
    let look: FollowLook;
    let since: string | undefined;
    try {
      const result = await syncCluster(ports, { ...sync, ref: chase.cluster.ref });
      report.events.published += result.published;
      report.events.pending += result.pending;
      report.problems.push(...(result.problems ?? []));
      since = result.since;
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
      continue;
    }
    const now = Date.now();
    // Another operation than the one followed: its looks are placed from now (or the cluster's creation).
    if (operationOf(look.state) !== operationOf(chase.cluster.state)) chase.since = now;
    chase.cluster = { ref: chase.cluster.ref, state: look.state, ...(since ? { since } : {}) };
    chase.since = sinceOf(chase.cluster, chase.since);
    const at = place(chase, now);
    if (at === undefined) {
      // Its looks are made: left to the next sync.
      unsettled.push(chase.cluster);
      chases.delete(key);
    } else chase.at = at;
  }
  report.unsettled = [...unsettled, ...[...chases.values()].map((chase) => chase.cluster)];
  return report;
}
