/** The one-cluster sync: what a cloud's event and a follow-up look run. */
import type { ClusterRef, ClusterSource, GrantLedger, PublishResult, ScopeListing } from './ports.ts';
import { ledgerKey, type GrantRecord } from '../domain/grants.ts';
import { ALL_REGIONS, type Scope } from '../domain/model/scope.ts';
import type { ProjectClusters } from './grants.ts';
import { ANNOTATION_PROVIDER_ID } from '../domain/constants.ts';
import { CpsyncError } from '../domain/errors.ts';
import { scopeSelector } from '../domain/labels.ts';
import type { ClusterProfile } from '../domain/model/clusterProfile.ts';
import { settlingState } from '../domain/settling.ts';
import { canonicalScope } from '../domain/scopes.ts';
import { inventoryNamespaces } from '../domain/options.ts';
import { leaseName } from './runLeases.ts';
import { timestamp } from '../domain/time.ts';
import type { EnginePorts, ClusterSyncRequest, ClusterSyncReport } from './types.ts';
import {
  creationOf,
  doneWith,
  applyReading,
  collisions,
  recoverEarlier,
  syncLeases,
  type Attempt,
} from './steps.ts';
import type { RunLeases } from './runLeases.ts';
import { clusterShare } from './clusterKeys.ts';

/**
 * The ledger, its records of `scope`'s account read at once: the first read of them is answered from that reading
 * (a failed one fails that read, as it would have), every other read and write goes to the ledger.
 */
function readAhead(ledger: GrantLedger, scope: Scope): GrantLedger & { done: Promise<unknown> } {
  const reading = ledger.read(scope);
  const done = reading.catch(() => {}); // its failure is met by the read that takes it
  let ahead: Promise<GrantRecord[]> | undefined = reading;
  const same = (other: Pick<Scope, 'provider' | 'account'>) =>
    other.provider === scope.provider && other.account === scope.account;
  return {
    read: (account, clusters) => {
      const taken = ahead && same(account) && !clusters ? ahead : undefined;
      if (taken) ahead = undefined;
      return taken ?? ledger.read(account, clusters);
    },
    write: (records, removed) => ledger.write(records, removed),
    ...(ledger.quarantined ? { quarantined: () => ledger.quarantined!() } : {}),
    /** Settled once the early reading is (whether or not a read took it). */
    done,
  };
}

/**
 * The ledger keys of the clusters of `ref`'s GKE project, as the cloud lists them now: what a settle of the
 * project's role reads by key beside the ledger's index. Rejects unless the listing is whole.
 */
function projectClustersOf(source: ClusterSource, ref: ClusterRef): ProjectClusters {
  return async (signal) => {
    const listing = await source.listScope({ ...ref.scope, region: ALL_REGIONS }, signal);
    const outcome = listing.outcome;
    if (outcome.kind === 'failed')
      throw new CpsyncError(
        `cannot list project ${ref.scope.account}'s clusters: ${outcome.failure?.message ?? 'no answer'}`,
      );
    if (outcome.kind === 'partial')
      throw new CpsyncError(
        `cannot list all of project ${ref.scope.account}'s clusters (no answer for ${outcome.missing?.join(', ') || 'some of them'})`,
      );
    return listing.clusters.map((cluster) => ledgerKey(cluster));
  };
}

/**
 * An event-triggered sync of one cluster: its profile is created, updated, or — when the provider
 * answers not found — deleted at once. Nothing else in the scope is touched, and no scope summary is
 * published (it is not a listing of the scope). It holds a share of the account's lease, so it never
 * applies at the same time as a run over the same account, nor as another sync of the same cluster; syncs
 * of other clusters of the account apply beside it.
 */
export async function syncCluster(
  ports: EnginePorts,
  request: ClusterSyncRequest,
): Promise<ClusterSyncReport> {
  const clock = ports.clock ?? (() => new Date());
  const ref: ClusterRef = { ...request.ref, scope: canonicalScope(request.ref.scope) };
  const source = ports.sources[ref.scope.provider];
  if (!source) throw new CpsyncError(`no ${ref.scope.provider} source is configured`);
  // One cluster's sync fails as a whole when a step before its reading fails: its event is delivered again.
  const attempt: Attempt = (_what, work) => work();
  // The intents earlier runs left are settled while the share is taken and the cluster read: nothing of this
  // sync's is written until they are.
  const recovering = recoverEarlier(ports, request, clock(), attempt);
  recovering.catch(() => {}); // its failure is met where it is awaited
  const lease = leaseName(request.options.manager, ref.scope);
  let leases: RunLeases | undefined;
  let early: ReturnType<typeof readAhead> | undefined;
  try {
    const taken = (leases = await syncLeases(ports, request, attempt));
    // A share of the account's lease: syncs of other clusters of the account go on beside this one.
    const hold = taken ? await taken.enterShared(lease, clusterShare(ref)) : undefined;
    // What cpsync granted in the account, read while the cluster is: this cluster's record changes only under its share.
    const ledger = (early = ports.ledger && readAhead(ports.ledger, ref.scope));
    const observed = await source.getCluster(ref);
    const now = timestamp(clock());
    const context = {
      syncId: request.syncId,
      occurredAt: now,
      scope: ref.scope,
      source: request.eventSource,
    };
    const listing: ScopeListing = {
      outcome: { scope: ref.scope, kind: 'partial', missing: [] },
      clusters: observed ? [observed] : [],
    };
    let confirmedGone: Set<string> | undefined;
    if (!observed) {
      const selector = scopeSelector(request.options.manager, ref.scope);
      const current: ClusterProfile[] = [];
      for (const namespace of inventoryNamespaces(request.options))
        current.push(...(await ports.hub.list(namespace.name, selector)));
      confirmedGone = new Set(
        current
          .map((p) => p.metadata.annotations?.[ANNOTATION_PROVIDER_ID] ?? '')
          .filter((id) => id !== '' && source.isProviderIdOf(id, ref)),
      );
      if (confirmedGone.size === 0) {
        const { problems: recovered } = await recovering;
        return {
          result: 'absent',
          events: [],
          published: 0,
          pending: 0,
          ...(recovered.length > 0 ? { problems: recovered } : {}),
        };
      }
    }
    const { problems: recovered, others } = await recovering;
    const { result, events, settle } = await applyReading(
      { ...ports, ...(ledger ? { ledger } : {}) },
      {
        context,
        listing,
        options: request.options,
        now,
        leaseMillis: request.intentLeaseMillis,
        ...(taken && hold
          ? {
              held: { holder: taken.holder, lease: hold.lease },
              signal: hold.signal,
              alone: <T>(work: (signal: AbortSignal) => Promise<T>) => taken.alone(lease, work),
              ...(ref.scope.provider === 'gke' ? { projectClusters: projectClustersOf(source, ref) } : {}),
            }
          : {}),
        ...(confirmedGone ? { confirmedGone } : {}),
        others,
        oneCluster: true,
      },
    );
    const failure = result.applied.failed[0];
    let published: PublishResult;
    let afterwards: Awaited<ReturnType<NonNullable<typeof result.afterwards>>> | undefined;
    try {
      if (failure) {
        await settle();
        throw failure.error;
      }
      // Published as soon as the events are in the outbox, while the intents go.
      published = await settle(() => ports.bus.publish(events));
      await ports.outbox.remove(doneWith(published));
    } finally {
      // What waits until the changes are announced (a GKE project's role), however this ends.
      afterwards = await result.afterwards?.();
    }
    const kind = result.applied.applied[0]?.kind;
    const problems = [
      ...recovered,
      ...collisions(ref.scope, result),
      ...(result.grants?.problems ?? []),
      ...result.problems,
      ...(afterwards?.problem ? [afterwards.problem] : []),
    ];
    const settling = observed ? settlingState(observed) : undefined;
    return {
      result: kind ?? 'unchanged',
      events,
      published: published.published.length,
      pending: events.length - published.published.length,
      ...(problems.length > 0 ? { problems } : {}),
      ...(settling && observed ? { settling, ...creationOf(observed, settling) } : {}),
    };
  } finally {
    // Nothing of the sync's is left running when it returns, nor when it throws.
    await recovering.catch(() => {});
    await early?.done;
    await leases?.releaseAll();
  }
}
