import pLimit from 'p-limit';
import {
  buildChangeEvent,
  buildScopeEvent,
  type EventContext,
  type ScopeSummary,
} from '../events/builders.ts';
import { DetailType } from '../events/detailTypes.ts';
import type { CpsyncEvent } from '../events/types.ts';
import type { InventoryOptions } from './options.ts';
import type { Plan } from './plan.ts';
import type {
  ClusterRef,
  ClusterSource,
  EventSink,
  Hub,
  Outbox,
  PublishFailure,
  PublishResult,
  ScopeListing,
} from './ports.ts';
import { ANNOTATION_PROVIDER_ID } from './constants.ts';
import { CpsyncError } from './errors.ts';
import { scopeSelector } from './labels.ts';
import type { ClusterProfile } from './model/clusterProfile.ts';
import { scopeKey, type Scope, type ScopeOutcome } from './model/scope.ts';
import type { Provider } from './model/observedCluster.ts';
import { inventoryNamespaces, syncScope } from './syncScope.ts';
import { planIntents, recoverIntents, type ChangeIntent } from './intents.ts';
import { timestamp } from './time.ts';

export interface EnginePorts {
  sources: Partial<Record<Provider, ClusterSource>>;
  hub: Hub;
  bus: EventSink;
  outbox: Outbox;
  /** @default () => new Date() */
  clock?: () => Date;
}

export interface SyncRequest {
  /** Identifies the run in every event; derive it from the trigger so a redelivered trigger keeps it. */
  syncId: string;
  scopes: Scope[];
  options: InventoryOptions;
  /**
   * Scopes listed at once.
   * @default 4
   */
  concurrency?: number;
  /** Plan and report only: the hub and the bus are left untouched. */
  dryRun?: boolean;
  /** Provider ids the provider confirmed gone: their profiles go at once. */
  confirmedGone?: ReadonlySet<string>;
  /** Event source. @default 'cpsync' */
  eventSource?: string;
  /**
   * How long this run's write-ahead intents stay its own before another run may settle them.
   * @default 15 minutes
   */
  intentLeaseMillis?: number;
  /** Called as each scope finishes (progress displays). */
  onScope?: (report: ScopeReport, done: number, total: number) => void;
  /**
   * Keep each scope's plan and events in the report. A run over thousands of clusters that only
   * needs the summaries turns this off: the profiles then go once their scope is done.
   * @default true
   */
  retainDetails?: boolean;
}

export interface ScopeReport {
  scope: Scope;
  outcome: ScopeOutcome;
  summary: ScopeSummary;
  plan?: Plan;
  /** Change events of this scope (those published and those left pending). */
  events: CpsyncEvent[];
}

export interface SyncReport {
  syncId: string;
  scopes: ScopeReport[];
  events: { published: number; pending: number; failed: PublishFailure[]; republished: number };
  hub: { reads: number; writes: number };
  durationMs: number;
}

function emptyCounts(listed: number): ScopeSummary['counts'] {
  return { listed, created: 0, updated: 0, deleted: 0, unchanged: 0, failed: 0, invalid: 0 };
}

/**
 * The sync engine: lists each scope through its cloud's source, plans against the hub, applies,
 * and publishes one event per applied change plus one scope summary. Events go to the outbox
 * before the bus and leave it only once the bus took them, so a change whose event could not be
 * published is published by a later run. Events left from earlier runs are published first.
 */
export async function runSync(ports: EnginePorts, request: SyncRequest): Promise<SyncReport> {
  const clock = ports.clock ?? (() => new Date());
  const started = clock().getTime();
  const hubBefore = ports.hub.requestCounts();
  const report: SyncReport = {
    syncId: request.syncId,
    scopes: [],
    events: { published: 0, pending: 0, failed: [], republished: 0 },
    hub: { reads: 0, writes: 0 },
    durationMs: 0,
  };

  if (!request.dryRun) {
    await recoverIntents(
      ports.hub,
      ports.outbox,
      Object.values(request.options.accessProviderNames),
      clock(),
    );
    const leftover = await ports.outbox.pending();
    const result = await publishFromOutbox(ports, leftover);
    report.events.republished = result.published.length;
    report.events.failed.push(...result.failed);
  }

  const limit = pLimit(request.concurrency ?? 4);
  let done = 0;
  await Promise.all(
    interleaveProviders(request.scopes).map((scope) =>
      limit(async () => {
        const scopeReport = await syncOne(ports, request, scope, clock);
        if (!request.dryRun) {
          // The change events are in the outbox already (syncOne); the scope summary joins them.
          await ports.outbox.add(scopeReport.events.filter((e) => e.detailType === DetailType.ScopeSynced));
          const result = await publishFromOutbox(ports, scopeReport.events);
          report.events.published += result.published.length;
          report.events.failed.push(...result.failed);
        }
        request.onScope?.(scopeReport, ++done, request.scopes.length);
        const { plan: _plan, events: _events, ...brief } = scopeReport;
        report.scopes.push(request.retainDetails === false ? { ...brief, events: [] } : scopeReport);
      }),
    ),
  );
  report.scopes.sort((a, b) => scopeKey(a.scope).localeCompare(scopeKey(b.scope)));
  report.events.pending = request.dryRun ? 0 : (await ports.outbox.pending()).length;
  const hubAfter = ports.hub.requestCounts();
  report.hub = { reads: hubAfter.reads - hubBefore.reads, writes: hubAfter.writes - hubBefore.writes };
  report.durationMs = clock().getTime() - started;
  return report;
}

/**
 * The scopes in the order they are started: the clouds take turns, so that one cloud's limits (or a
 * slow one) do not keep the others waiting behind its scopes; within a cloud, the given order.
 */
function interleaveProviders(scopes: readonly Scope[]): Scope[] {
  const queues = new Map<Provider, Scope[]>();
  for (const scope of scopes) {
    const queue = queues.get(scope.provider);
    if (queue) queue.push(scope);
    else queues.set(scope.provider, [scope]);
  }
  const ordered: Scope[] = [];
  for (let i = 0; ordered.length < scopes.length; i++)
    for (const queue of queues.values()) if (i < queue.length) ordered.push(queue[i]!);
  return ordered;
}

/**
 * Publishes events that are in the outbox and takes out those the bus accepted, or refused for good;
 * retryable failures stay for a later run.
 */
async function publishFromOutbox(ports: EnginePorts, events: CpsyncEvent[]): Promise<PublishResult> {
  if (events.length === 0) return { published: [], failed: [] };
  const result = await ports.bus.publish(events);
  await ports.outbox.remove([
    ...result.published,
    ...result.failed.filter((f) => !f.retryable).map((f) => f.eventId),
  ]);
  return result;
}

/** Records a plan's changes as intents just before it is applied; `settle` removes them once their events are in the outbox. */
function writeAhead(
  outbox: Outbox,
  context: EventContext,
  accessProviderNames: readonly string[],
  leaseMillis?: number,
) {
  let intents: ChangeIntent[] = [];
  return {
    beforeApply: async (planned: Plan) => {
      intents = planIntents(planned, context, accessProviderNames, leaseMillis);
      await outbox.addIntents(intents);
    },
    settle: (events: CpsyncEvent[]) =>
      outbox.add(events).then(() => outbox.removeIntents(intents.map((i) => i.id))),
  };
}

async function syncOne(
  ports: EnginePorts,
  request: SyncRequest,
  scope: Scope,
  clock: () => Date,
): Promise<ScopeReport> {
  const started = clock().getTime();
  const source = ports.sources[scope.provider];
  let listing: ScopeListing;
  if (!source) {
    listing = {
      outcome: {
        scope,
        kind: 'failed',
        failure: { reason: 'Unknown', message: `no ${scope.provider} source is configured` },
      },
      clusters: [],
    };
  } else {
    try {
      listing = await source.listScope(scope);
    } catch (error) {
      listing = {
        outcome: {
          scope,
          kind: 'failed',
          failure: { reason: 'Unknown', message: error instanceof Error ? error.message : String(error) },
        },
        clusters: [],
      };
    }
  }
  const now = timestamp(clock());
  const context = {
    syncId: request.syncId,
    occurredAt: now,
    scope,
    ...(request.eventSource ? { source: request.eventSource } : {}),
  };
  const counts = emptyCounts(listing.clusters.length);
  let outcome = listing.outcome;
  let error: ScopeSummary['error'];
  let plan: Plan | undefined;
  const events: CpsyncEvent[] = [];
  try {
    const ahead = writeAhead(
      ports.outbox,
      context,
      Object.values(request.options.accessProviderNames),
      request.intentLeaseMillis,
    );
    const result = await syncScope({
      hub: ports.hub,
      listing,
      options: request.options,
      now,
      ...(request.confirmedGone ? { confirmedGone: request.confirmedGone } : {}),
      ...(request.dryRun ? { dryRun: true } : {}),
      beforeApply: ahead.beforeApply,
    });
    plan = result.plan;
    counts.unchanged = result.plan.unchanged;
    counts.invalid = result.invalid.length;
    counts.failed = result.applied.failed.length;
    for (const change of result.applied.applied) {
      counts[change.kind] += 1;
      events.push(buildChangeEvent(change, context));
    }
    // The change events are durable before their intents go (the scope summary joins them later).
    if (!request.dryRun) await ahead.settle(events);
    if (request.dryRun) {
      counts.created = plan.creates.length;
      counts.updated = plan.updates.length;
      counts.deleted = plan.deletes.length;
    }
    const firstFailure = result.applied.failed[0];
    if (firstFailure)
      error = {
        reason: 'HubError',
        message: `${result.applied.failed.length} write(s) failed; first: ${firstFailure.key}: ${firstFailure.error.message}`,
      };
    else if (result.invalid[0])
      error = { reason: 'InvalidCluster', message: result.invalid.map((e) => e.message).join('; ') };
  } catch (failure) {
    const message = failure instanceof Error ? failure.message : String(failure);
    outcome = { scope, kind: 'failed', failure: { reason: 'Unknown', message } };
    error = { reason: 'HubError', message };
  }
  const summary: ScopeSummary = {
    outcome,
    counts,
    durationMs: clock().getTime() - started,
    ...(error ? { error } : {}),
  };
  events.push(buildScopeEvent(summary, context));
  return { scope, outcome, summary, ...(plan ? { plan } : {}), events };
}

export interface ClusterSyncRequest {
  syncId: string;
  /** See SyncRequest.intentLeaseMillis. */
  intentLeaseMillis?: number;
  ref: ClusterRef;
  options: InventoryOptions;
  /** Event source. @default 'cpsync' */
  eventSource?: string;
}

export interface ClusterSyncReport {
  /** What happened to the cluster's profile. */
  result: 'created' | 'updated' | 'deleted' | 'unchanged' | 'absent';
  events: CpsyncEvent[];
  published: number;
  pending: number;
}

/** Whether `providerId` names the cluster `ref` points at (ids compared as each cloud spells them). */
export function providerIdMatches(providerId: string, ref: ClusterRef): boolean {
  const id = providerId.toLowerCase();
  const name = ref.name.toLowerCase();
  switch (ref.scope.provider) {
    case 'eks':
      return (
        id.startsWith('arn:') &&
        id.endsWith(`:${ref.scope.account}:cluster/${name}`) &&
        id.includes(`:eks:${ref.scope.region.toLowerCase()}:`)
      );
    case 'gke':
      return id.endsWith(
        `/projects/${ref.scope.account.toLowerCase()}/${id.includes('/zones/') ? 'zones' : 'locations'}/${(ref.location ?? '').toLowerCase()}/clusters/${name}`,
      );
    case 'aks':
      return (
        id ===
        `/subscriptions/${ref.scope.account}/resourcegroups/${ref.resourceGroup ?? ''}/providers/microsoft.containerservice/managedclusters/${name}`.toLowerCase()
      );
  }
}

/**
 * An event-triggered sync of one cluster: its profile is created, updated, or — when the provider
 * answers not found — deleted at once. Nothing else in the scope is touched, and no scope summary is
 * published (it is not a listing of the scope).
 */
export async function syncCluster(
  ports: EnginePorts,
  request: ClusterSyncRequest,
): Promise<ClusterSyncReport> {
  const clock = ports.clock ?? (() => new Date());
  const { ref } = request;
  const source = ports.sources[ref.scope.provider];
  if (!source) throw new CpsyncError(`no ${ref.scope.provider} source is configured`);
  const accessProviderNames = Object.values(request.options.accessProviderNames);
  await recoverIntents(ports.hub, ports.outbox, accessProviderNames, clock());
  const observed = await source.getCluster(ref);
  const now = timestamp(clock());
  const context = {
    syncId: request.syncId,
    occurredAt: now,
    scope: ref.scope,
    ...(request.eventSource ? { source: request.eventSource } : {}),
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
        .filter((id) => id !== '' && providerIdMatches(id, ref)),
    );
    if (confirmedGone.size === 0) return { result: 'absent', events: [], published: 0, pending: 0 };
  }
  const ahead = writeAhead(ports.outbox, context, accessProviderNames, request.intentLeaseMillis);
  const result = await syncScope({
    hub: ports.hub,
    listing,
    options: request.options,
    now,
    ...(confirmedGone ? { confirmedGone } : {}),
    beforeApply: ahead.beforeApply,
  });
  const events = result.applied.applied.map((change) => buildChangeEvent(change, context));
  await ahead.settle(events);
  const failure = result.applied.failed[0];
  if (failure) throw failure.error;
  const published = await publishFromOutbox(ports, events);
  const kind = result.applied.applied[0]?.kind;
  return {
    result: kind ?? 'unchanged',
    events,
    published: published.published.length,
    pending: events.length - published.published.length,
  };
}
