/**
 * The sync engine's run: lists each scope through its cloud's source (runScope.ts), plans against the hub,
 * applies, and publishes one event per applied change plus one scope summary; then looks for orphans and takes
 * stock of what is left (events, intents, records moved aside, malformed objects).
 */
import pLimit from 'p-limit';
import { buildOrphanEvent } from './events.ts';
import { DetailType } from '../../events/detailTypes.ts';
import type { CpsyncEvent } from '../../events/types.ts';
import type { MalformedObject, PublishFailure, PublishResult } from './ports.ts';
import { messageOf } from '../domain/errors.ts';
import { profileKey } from '../domain/model/clusterProfile.ts';
import { scopeKey, type Scope } from '../domain/model/scope.ts';
import type { Provider } from '../domain/model/observedCluster.ts';
import { inventoryNamespaces } from '../domain/options.ts';
import { timestamp } from '../domain/time.ts';
import { own } from '../domain/own.ts';
import { CountingHub } from './countingHub.ts';
import { featureReport, noCounts } from '../domain/features.ts';
import type { EnginePorts, SyncRequest, SyncReport } from './types.ts';
import { beginSync, doneWith } from './steps.ts';
import { attempt, type RunContext } from './runContext.ts';
import { syncOne } from './runScope.ts';
import { orphanReport, inventoryOrphans } from './inventory.ts';

/**
 * The sync engine: lists each scope through its cloud's source, plans against the hub, applies,
 * and publishes one event per applied change plus one scope summary. Events go to the outbox
 * before the bus and leave it only once the bus took them, so a change whose event could not be
 * published is published by a later run. Events left from earlier runs are published first.
 * Nothing that goes wrong (a cloud, the hub, the outbox, the bus) ends the run without a report.
 */
export async function runSync(given: EnginePorts, request: SyncRequest): Promise<SyncReport> {
  const hub = new CountingHub(given.hub);
  const ports: EnginePorts = { ...given, hub };
  const clock = ports.clock ?? (() => new Date());
  const started = clock().getTime();
  const report: SyncReport = {
    syncId: request.syncId,
    scopes: [],
    events: { published: 0, pending: 0, failed: [], republished: 0 },
    intents: { waiting: 0 },
    hub: { reads: 0, writes: 0 },
    durationMs: 0,
    problems: [],
    malformed: [],
    withoutCertificateAuthority: [],
    settling: [],
    quarantined: [],
    features: featureReport(request.options.features, noCounts()),
  };
  const run: RunContext = { ports, request, clock, report, featureTotals: noCounts(), claims: new Map() };

  try {
    const begun = await beginSync(ports, request, clock(), (what, work) => attempt(run, what, work));
    if (begun.leases) run.leases = begun.leases;
    run.others = begun.others;
    report.problems.push(...begun.problems);
    if (!request.dryRun) {
      // ClusterSet namespaces labelled as the clusterSets feature says (their labels go when it is off). A run across
      // the whole configuration (the one that looks for orphans) also takes cpsync's labels off the inventory's
      // other namespaces: those taken out of `inventory.clusterSets` are no longer ClusterSets.
      for (const namespace of inventoryNamespaces(request.options))
        if (own(request.options.clusterSets, namespace.name) !== undefined)
          await attempt(run, `label namespace ${namespace.name}`, () => ports.hub.ensureNamespace(namespace));
        else if (request.orphans)
          await attempt(run, `take the ClusterSet labels off namespace ${namespace.name}`, () =>
            ports.hub.dropClusterSet(namespace.name),
          );
      const leftover = await attempt(run, 'read the outbox', () => ports.outbox.pending());
      const result = await publishFromOutbox(run, leftover ?? []);
      report.events.republished = result.published.length;
    }

    const limit = pLimit(request.concurrency);
    let done = 0;
    let notStarted = 0;
    await Promise.all(
      interleaveProviders(request.scopes).map((scope) =>
        limit(async () => {
          if (request.signal?.aborted) {
            notStarted += 1;
            return;
          }
          const scopeReport = await syncOne(run, scope);
          if (!request.dryRun) {
            const summary = scopeReport.events.filter((e) => e.detailType === DetailType.ScopeSynced);
            // The change events are in the outbox already (syncOne); the scope summary joins them.
            const stored = await attempt(run, 'write the scope summary to the outbox', async () => {
              await ports.outbox.add(summary);
              return true;
            });
            if (stored) {
              const { published } = await publishFromOutbox(run, scopeReport.events);
              report.events.published += published.length;
            } else await publishDirectly(run, scopeReport.events);
          }
          try {
            request.onScope?.(scopeReport, ++done, request.scopes.length);
          } catch (error) {
            report.problems.push(`the progress display failed: ${messageOf(error)}`);
          }
          const { plan: _plan, events: _events, ...brief } = scopeReport;
          report.scopes.push(request.retainDetails === false ? { ...brief, events: [] } : scopeReport);
        }),
      ),
    );
    if (request.signal?.aborted)
      report.interrupted = { reason: String(request.signal.reason ?? 'interrupted'), notStarted };
  } finally {
    await run.leases?.releaseAll();
  }

  report.features = featureReport(request.options.features, run.featureTotals);
  if (request.orphans && !request.signal?.aborted) await lookForOrphans(run, request.orphans);
  report.scopes.sort((a, b) => scopeKey(a.scope).localeCompare(scopeKey(b.scope)));
  if (!request.dryRun) await takeStock(run);
  report.hub = hub.counts();
  report.durationMs = clock().getTime() - started;
  return report;
}

/**
 * The events the bus reported published whose delivery it can no longer stand behind (a stream whose
 * reader went away), put back in the outbox: what failed to be delivered, as refusals.
 */
export async function keepUndelivered(ports: Pick<EnginePorts, 'bus' | 'outbox'>): Promise<PublishFailure[]> {
  const unproven = await ports.bus.unconfirmed?.();
  if (!unproven || unproven.events.length === 0) return [];
  await ports.outbox.add(unproven.events);
  return unproven.events.map((e) => ({
    eventId: e.detail.eventId,
    code: 'NotDelivered',
    message: unproven.reason,
    retryable: true,
  }));
}

/** What is left when the run ends: events and intents waiting, records moved aside, malformed objects met. */
async function takeStock(run: RunContext): Promise<void> {
  const { ports, report } = run;
  const undelivered = await attempt(run, 'keep undelivered events in the outbox', () =>
    keepUndelivered(ports),
  );
  if (undelivered && undelivered.length > 0) {
    report.events.published = Math.max(0, report.events.published - undelivered.length);
    report.events.failed.push(...undelivered);
  }
  report.events.pending =
    (await attempt(run, 'count pending events', () => ports.outbox.pending()))?.length ?? 0;
  const intents = (await attempt(run, 'count waiting intents', () => ports.intents.list())) ?? [];
  report.intents.waiting = intents.length;
  if (intents.length > 0) report.intents.settledFrom = intents.map((i) => i.notBefore).sort()[0]!;
  report.quarantined = [
    ...(ports.outbox.quarantined?.() ?? []),
    ...(ports.intents.quarantined?.() ?? []),
    ...(ports.ledger?.quarantined?.() ?? []),
  ];
  const seen = new Map<string, MalformedObject>();
  for (const object of [...report.malformed, ...(ports.hub.malformed?.() ?? [])])
    seen.set(profileKey(object), object);
  report.malformed = [...seen.values()].sort((a, b) => profileKey(a).localeCompare(profileKey(b)));
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

/** Hands `events` to the bus; a bus that throws refuses them all (retryably) with its error. */
async function publish(run: RunContext, events: CpsyncEvent[]): Promise<PublishResult> {
  try {
    return await run.ports.bus.publish(events);
  } catch (error) {
    return {
      published: [],
      failed: events.map((e) => ({
        eventId: e.detail.eventId,
        code: (error as { code?: string; name?: string }).code ?? (error as Error).name ?? 'Error',
        message: messageOf(error),
        retryable: true,
      })),
    };
  }
}

/**
 * Publishes events that are in the outbox and takes out those the bus accepted; refused ones stay for
 * a later run.
 */
async function publishFromOutbox(run: RunContext, events: CpsyncEvent[]): Promise<PublishResult> {
  if (events.length === 0) return { published: [], failed: [] };
  const result = await publish(run, events);
  run.report.events.failed.push(...result.failed);
  await attempt(run, 'take published events out of the outbox', () =>
    run.ports.outbox.remove(doneWith(result)),
  );
  return result;
}

/**
 * Events the outbox could not take (a full disk): handed to the bus now, as they would otherwise
 * wait for the intents they stand for to be settled by a later run (which announces them again, with
 * the same ids).
 */
async function publishDirectly(run: RunContext, events: CpsyncEvent[]): Promise<void> {
  if (events.length === 0) return;
  const result = await publish(run, events);
  run.report.events.failed.push(...result.failed);
  run.report.events.published += result.published.length;
}

/** Finds the orphans of the inventory, reports them and (unless a dry run) announces each scope of them. */
async function lookForOrphans(run: RunContext, check: NonNullable<SyncRequest['orphans']>): Promise<void> {
  const { ports, request, report } = run;
  const found = await attempt(run, 'list the inventory for orphans', () =>
    inventoryOrphans(ports.hub, request.options, check.configured, new Set(check.determined)),
  );
  if (!found) return;
  const orphans = found.map(orphanReport);
  report.orphans = orphans;
  if (request.dryRun || orphans.length === 0) return;
  const occurredAt = timestamp(run.clock());
  const events = orphans.map((orphan) =>
    buildOrphanEvent(orphan.names, {
      syncId: request.syncId,
      occurredAt,
      scope: orphan.scope,
      source: request.eventSource,
    }),
  );
  const stored = await attempt(run, 'write the orphan events to the outbox', async () => {
    await ports.outbox.add(events);
    return true;
  });
  if (stored) report.events.published += (await publishFromOutbox(run, events)).published.length;
  else await publishDirectly(run, events);
}
