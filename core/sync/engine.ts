import { randomUUID } from 'node:crypto';
import pLimit from 'p-limit';
import {
  buildAccessEvent,
  buildChangeEvent,
  buildOrphanEvent,
  buildScopeEvent,
  type ScopeSummary,
} from './events.ts';
import { findOrphans, type OrphanScope } from '../domain/orphans.ts';
import { profileProblem } from '../domain/model/validate.ts';
import { DetailType } from '../../events/detailTypes.ts';
import type { CpsyncEvent } from '../../events/types.ts';
import type { InventoryOptions } from '../domain/options.ts';
import type { Plan } from '../domain/plan.ts';
import type {
  ClusterRef,
  ClusterSource,
  EventSink,
  Hub,
  IntentLog,
  LeaseStore,
  MalformedObject,
  MemberProbe,
  AccessGrants,
  GrantLedger,
  ProfileNotice,
  Outbox,
  PublishFailure,
  PublishResult,
  QuarantinedRecord,
  ScopeListing,
} from './ports.ts';
import { ANNOTATION_PROVIDER_ID, LABEL_CLUSTER_MANAGER } from '../domain/constants.ts';
import { DeadlineError, InterruptedError, withDeadline } from './deadline.ts';
import { CpsyncError, messageOf } from '../domain/errors.ts';
import { scopeSelector } from '../domain/labels.ts';
import type { ClusterProfile } from '../domain/model/clusterProfile.ts';
import { profileKey } from '../domain/model/clusterProfile.ts';
import { scopeKey, type Scope, type ScopeFailureReason, type ScopeOutcome } from '../domain/model/scope.ts';
import type { ObservedCluster, Provider } from '../domain/model/observedCluster.ts';
import { settlingState } from '../domain/settling.ts';
import { operationOf } from '../domain/lookSchedule.ts';
import { canonicalScope } from '../domain/scopes.ts';
import { syncScope, type MemberFigures, type SyncScopeResult } from './syncScope.ts';
import type { NameScheme } from '../domain/naming.ts';
import type { NameClaims } from './names.ts';
import type { GrantFigures } from './grants.ts';
import { inventoryNamespaces } from '../domain/options.ts';
import { planIntents, recoverIntents, remainderIntent, type IntentOwner } from './intents.ts';
import type { ApplyFailure, ChangeIntent, EventContext } from './changes.ts';
import { LeaseBusyError, leaseName, RunLeases, type LeaseHold } from './runLeases.ts';
import { timestamp } from '../domain/time.ts';
import { cut } from '../domain/text.ts';
import { own } from '../domain/own.ts';
import { CountingHub } from './countingHub.ts';
import {
  addCounts,
  featureConfigMapName,
  featureReport,
  featureScopeKey,
  nextFeatureData,
  noCounts,
  type FeatureName,
  type FeatureReport,
} from '../domain/features.ts';

export interface EnginePorts {
  sources: Partial<Record<Provider, ClusterSource>>;
  hub: Hub;
  bus: EventSink;
  outbox: Outbox;
  intents: IntentLog;
  /** Leases that keep two runs from applying the same account at once. @default none (one run at a time is assumed) */
  leases?: LeaseStore;
  /** Reads member clusters (the `memberProbe` feature). @default none (what was read before stays) */
  members?: MemberProbe;
  /** Makes and revokes consumers' grants (the `accessGrants` feature). @default none (what is recorded stays) */
  grants?: AccessGrants;
  /** What cpsync granted, kept where only it writes: the grants' one authority. @default none (nothing is granted) */
  ledger?: GrantLedger;
  /** @default () => new Date() */
  clock?: () => Date;
  /** The names profiles may have (tests give a weak one, to make clusters' names collide). @default PROFILE_NAMES */
  naming?: NameScheme;
}

/**
 * What every run takes from the configuration. There are no defaults here: the configuration schema
 * (adapters/compose/config.ts) is their one source, and adapters/compose/settings.ts turns it into these.
 */
export interface RunSettings {
  options: InventoryOptions;
  /** The `source` of every event. */
  eventSource: string;
  /** Scopes listed at once. */
  concurrency: number;
  /**
   * How long this run's write-ahead intents stay its own before another run may settle them (sooner
   * once the run has given up its lease).
   */
  intentLeaseMillis: number;
  /**
   * How long after its change an intent of a run that gave up its lease is still left alone: a write
   * that run sent may yet land on the hub (a Kubernetes hub finishes requests its clients abandoned).
   */
  intentSettleDelayMillis: number;
  /**
   * Time one scope's listing may take (every call to the cloud, retries included); a listing that
   * has not finished by then ends the scope `failed` (Timeout), and the other scopes go on.
   */
  scopeTimeoutMillis: number;
  /** Time to wait for an account's lease held by another run before the scope fails (Busy). */
  leaseWaitMillis: number;
}

/** How long a lease lasts unless renewed (it is renewed at a third of that while held). */
const LEASE_DURATION_MILLIS = 60_000;

export interface SyncRequest extends RunSettings {
  /** Identifies the run in every event; derive it from the trigger so a redelivered trigger keeps it. */
  syncId: string;
  /**
   * The run this sync is part of, when it is one scope of a run fanned out (a scheduled full sync's scope
   * worker): carried by its events beside `syncId` (`runId`), so that subscribers can tell the whole run.
   */
  runId?: string;
  scopes: Scope[];
  /** How long a lease lasts unless renewed. @default 60000 */
  leaseDurationMillis?: number;
  /** Plan and report only: the hub and the bus are left untouched. */
  dryRun?: boolean;
  /** Provider ids the provider confirmed gone: their profiles go at once. */
  confirmedGone?: ReadonlySet<string>;
  /**
   * Look for orphans once the scopes are synced (a full sync): profiles no configured scope covers are
   * reported and announced (`Inventory Scope Orphaned`), never deleted. `configured` is every scope of
   * the configuration; `determined` the providers whose scopes are all known (discovery did not fail).
   */
  orphans?: { configured: readonly Scope[]; determined: readonly Provider[] };
  /** Called as each scope finishes (progress displays). */
  onScope?: (report: ScopeReport, done: number, total: number) => void;
  /**
   * Keep each scope's plan and events in the report. A run over thousands of clusters that only
   * needs the summaries turns this off: the profiles then go once their scope is done.
   * @default true
   */
  retainDetails?: boolean;
  /**
   * Stops the run (SIGINT, SIGTERM): no scope is started after it aborts, listings under way are
   * abandoned, applies finish the write in flight and stop; what was applied is announced, intents and
   * leases are settled, and the report says what was left.
   */
  signal?: AbortSignal;
}

/** An orphaned scope in a report. */
export interface OrphanReport {
  scope: Scope;
  /** `namespace/name` of its profiles. */
  names: string[];
  providerIds: string[];
}

/** A cluster seen in change, and how to look at it again. */
export interface SettlingCluster {
  ref: ClusterRef;
  /** As `settlingState` names it: `EKS CREATING`, `GKE RECONCILING`, `AKS Upgrading`. */
  state: string;
  /** While the cluster is being created: when the cloud says it was created (ISO 8601), where the looks are placed from. */
  since?: string;
}

/** A cluster being created: when it was, as the cloud says (the follow-up places its looks from there). */
function creationOf(cluster: ObservedCluster, state: string): { since?: string } {
  return operationOf(state) === 'create' && cluster.createdAt ? { since: cluster.createdAt } : {};
}

/** How a single-cluster sync finds `cluster` again (`scope` as the listing had it). */
function refOf(scope: Scope, cluster: ObservedCluster): ClusterRef {
  return {
    scope,
    name: cluster.name,
    ...(cluster.provider === 'gke' ? { location: cluster.zone ?? cluster.region } : {}),
    ...(cluster.resourceGroup ? { resourceGroup: cluster.resourceGroup } : {}),
  };
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
  events: {
    published: number;
    /** Events waiting in the outbox when the run ended (this run's and earlier runs'). */
    pending: number;
    failed: PublishFailure[];
    republished: number;
  };
  /** Write-ahead intents left: changes whose events a later run settles. */
  intents: { waiting: number; settledFrom?: string };
  hub: { reads: number; writes: number };
  durationMs: number;
  /** What went wrong outside any one scope: the outbox, the bus, the hub during recovery. */
  problems: string[];
  /** Objects of the hub that are not well-formed profiles: left untouched. */
  malformed: MalformedObject[];
  /** Profiles written without CA data, and why (`cpsync.io/certificate-authority-omitted`). */
  withoutCertificateAuthority: ProfileNotice[];
  /** Clusters whose reading shows them in change (being created, updated, deleted…): worth another look soon. */
  settling: SettlingCluster[];
  /** Outbox records that could not be read and were moved aside. */
  quarantined: QuarantinedRecord[];
  /** Set when the run was stopped: the signal's reason, and the scopes not started. */
  interrupted?: { reason: string; notStarted: number };
  /**
   * Each feature's desired and actual state over the scopes this run synced: `turning-off` while their
   * profiles still carry what it wrote (the hub's `<manager>-features` ConfigMaps hold it over all scopes).
   */
  features: FeatureReport;
  /** Profiles of scopes the configuration no longer covers, by scope (when the run looked for them). */
  orphans?: OrphanReport[];
  /** Members the probe read over all scopes (the `memberProbe` feature); `millis` adds up each scope's time. */
  members?: MemberFigures;
  /** Consumers' grants over all scopes (the `accessGrants` feature): made, revoked, refused, and each action. */
  grants?: GrantFigures;
}

function emptyCounts(listed: number): ScopeSummary['counts'] {
  return { listed, created: 0, updated: 0, deleted: 0, unchanged: 0, failed: 0, invalid: 0 };
}

const message = messageOf;

function failedListing(scope: Scope, reason: ScopeFailureReason, text: string): ScopeListing {
  return { outcome: { scope, kind: 'failed', failure: { reason, message: text } }, clusters: [] };
}

/** What one run shares between its scopes. */
interface RunContext {
  ports: EnginePorts;
  /** Profiles carrying each feature's writes, over the scopes synced so far. */
  featureTotals: Record<FeatureName, number>;
  request: SyncRequest;
  clock: () => Date;
  leases?: RunLeases;
  report: SyncReport;
  /** The names the run's scopes gave newcomers: scopes synced at once never give one name twice. */
  claims: NameClaims;
}

/** The leases of one run (or one event-triggered sync), when the hub keeps leases. */
function runLeases(
  ports: EnginePorts,
  request: { syncId: string; leaseWaitMillis: number; leaseDurationMillis?: number },
  signal?: AbortSignal,
): RunLeases | undefined {
  if (!ports.leases) return undefined;
  return new RunLeases(ports.leases, holderId(request.syncId), {
    durationMillis: request.leaseDurationMillis ?? LEASE_DURATION_MILLIS,
    waitMillis: request.leaseWaitMillis,
    ...(signal ? { signal } : {}),
  });
}

/** What becomes of a step that failed: undefined and a problem named (the full sync), or thrown (one cluster's). */
type Attempt = <T>(what: string, work: () => Promise<T>) => Promise<T | undefined>;

/**
 * What every sync does before it applies a reading, the full sync and the single-cluster sync alike:
 * the run's leases (when the hub keeps them; none in a dry run), the inventory namespace they live in,
 * and the intents stopped runs left settled first, so that a change they left unannounced is announced
 * before anything else is written. `attempt` says what becomes of a failure: the full sync names it
 * among its problems and goes on; the single-cluster sync fails (its event is delivered again). The
 * caller releases the leases when it is done.
 */
async function beginSync(
  ports: EnginePorts,
  request: Pick<
    SyncRequest,
    | 'syncId'
    | 'leaseWaitMillis'
    | 'leaseDurationMillis'
    | 'options'
    | 'intentSettleDelayMillis'
    | 'dryRun'
    | 'signal'
  >,
  now: Date,
  attempt: Attempt,
): Promise<{ leases?: RunLeases; problems: string[] }> {
  if (request.dryRun) return { problems: [] };
  const leases = runLeases(ports, request, request.signal);
  // Leases live in the inventory namespace, so it exists before the first is taken.
  if (leases)
    await attempt('create the inventory namespace', () =>
      ensureInventoryNamespace(ports.hub, request.options),
    );
  const recovery = await attempt('settle the intents of earlier runs', () =>
    recoverIntents(ports, Object.values(request.options.accessProviderNames), now, {
      ...(ports.leases ? { leases: ports.leases } : {}),
      settleDelayMillis: request.intentSettleDelayMillis,
    }),
  );
  return { ...(leases ? { leases } : {}), problems: recovery?.problems ?? [] };
}

/**
 * The events that leave the outbox after a publish: those the bus took, and only those. An event the
 * bus refused, even for good, stays and is offered again by every run (and counted as pending) until
 * someone sees to the cause: the change it announces is never lost.
 */
function doneWith(result: PublishResult): string[] {
  return result.published;
}

/** A run's lease holder id: the run, and this process's part in it. */
function holderId(syncId: string): string {
  return `${cut(syncId, 100)}#${randomUUID().slice(0, 8)}`;
}

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
    report.problems.push(...begun.problems);
    if (!request.dryRun) {
      // ClusterSet namespaces labelled as the clusterSets feature says (their labels go when it is off).
      for (const namespace of inventoryNamespaces(request.options))
        if (own(request.options.clusterSets, namespace.name) !== undefined)
          await attempt(run, `label namespace ${namespace.name}`, () => ports.hub.ensureNamespace(namespace));
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
            report.problems.push(`the progress display failed: ${message(error)}`);
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

function ensureInventoryNamespace(hub: Hub, options: InventoryOptions): Promise<void> {
  return hub.ensureNamespace(inventoryNamespaces(options).find((ns) => ns.name === options.namespace)!);
}

/** Runs `work`; a failure is named in the report's problems instead of ending the run. Undefined on failure. */
async function attempt<T>(run: RunContext, what: string, work: () => Promise<T>): Promise<T | undefined> {
  try {
    return await work();
  } catch (error) {
    run.report.problems.push(`cannot ${what}: ${message(error)}`);
    return undefined;
  }
}

/** What is left when the run ends: events and intents waiting, records moved aside, malformed objects met. */
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
        message: message(error),
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

/** Records a plan's changes as intents just before it is applied; `settle` removes them once their events are in the outbox. */
function writeAhead({ outbox, intents: log }: Pick<EnginePorts, 'outbox' | 'intents'>, owner: IntentOwner) {
  let intents: ChangeIntent[] = [];
  return {
    beforeApply: async (planned: Plan) => {
      intents = planIntents(planned, owner);
      await log.add(intents);
    },
    /**
     * The events of what was applied go to the outbox, then the intents go — but not those of
     * changes whose write failed: a write that timed out may still have reached the hub, and a later
     * run announces it if it did. A change whose object write reached the hub and whose status write
     * failed keeps an intent for its status half.
     */
    settle: async (events: CpsyncEvent[], failures: readonly ApplyFailure[]) => {
      const unknown = new Set(failures.filter((f) => !f.remainder).map((f) => f.key));
      const remainders = failures
        .filter(
          (f): f is ApplyFailure & { remainder: NonNullable<ApplyFailure['remainder']> } => !!f.remainder,
        )
        .map((f) => remainderIntent(f, owner));
      await outbox.add(events);
      if (remainders.length > 0) await log.add(remainders);
      await log.remove(intents.filter((i) => !unknown.has(`${i.namespace}/${i.name}`)).map((i) => i.id));
    },
  };
}

/**
 * The one step that applies a reading of the clouds (a scope's listing, or one cluster's) to the hub,
 * for the full sync and the single-cluster sync alike: the plan's changes recorded as intents just
 * before they are applied (write-ahead), applied, and their events made. `settle()` (nothing in a dry
 * run) then puts the events in the outbox and removes the intents of the changes that surely reached
 * the hub; should it fail, the intents stay and a later run announces the changes.
 */
async function applyReading(
  ports: EnginePorts,
  reading: {
    context: EventContext;
    listing: ScopeListing;
    options: InventoryOptions;
    now: string;
    leaseMillis: number;
    held?: IntentOwner['held'];
    confirmedGone?: ReadonlySet<string>;
    dryRun?: boolean;
    signal?: AbortSignal;
    claims?: NameClaims;
  },
): Promise<{
  result: Awaited<ReturnType<typeof syncScope>>;
  events: CpsyncEvent[];
  settle: () => Promise<void>;
}> {
  const ahead = writeAhead(ports, {
    context: reading.context,
    accessProviderNames: Object.values(reading.options.accessProviderNames),
    leaseMillis: reading.leaseMillis,
    ...(reading.held ? { held: reading.held } : {}),
  });
  const result = await syncScope({
    hub: ports.hub,
    listing: reading.listing,
    options: reading.options,
    now: reading.now,
    ...(reading.confirmedGone ? { confirmedGone: reading.confirmedGone } : {}),
    ...(reading.dryRun ? { dryRun: true } : {}),
    ...(reading.signal ? { signal: reading.signal } : {}),
    ...(ports.members ? { members: ports.members } : {}),
    ...(ports.grants ? { grants: ports.grants } : {}),
    ...(ports.ledger ? { ledger: ports.ledger } : {}),
    ...(ports.naming ? { naming: ports.naming } : {}),
    ...(reading.claims ? { claims: reading.claims } : {}),
    beforeApply: ahead.beforeApply,
  });
  const events = [
    ...result.applied.applied.map((change) => buildChangeEvent(change, reading.context)),
    // The grants made and revoked (none in a dry run: those are only listed).
    ...(reading.dryRun
      ? []
      : (result.grants?.actions ?? []).map((a) => buildAccessEvent(a, reading.context))),
  ];
  const settle = () => (reading.dryRun ? Promise.resolve() : ahead.settle(events, result.applied.failed));
  return { result, events, settle };
}

function failureReason(error: unknown): ScopeFailureReason {
  if (error instanceof DeadlineError) return 'Timeout';
  if (error instanceof InterruptedError) return 'Interrupted';
  if (error instanceof LeaseBusyError) return 'Busy';
  return 'Unknown';
}

async function list(run: RunContext, scope: Scope): Promise<ScopeListing> {
  const source = run.ports.sources[scope.provider];
  if (!source) return failedListing(scope, 'Unknown', `no ${scope.provider} source is configured`);
  const timeout = run.request.scopeTimeoutMillis;
  try {
    return await withDeadline(
      `listing ${scopeKey(scope)}`,
      timeout,
      (signal) => source.listScope(scope, signal),
      run.request.signal,
    );
  } catch (error) {
    return failedListing(scope, failureReason(error), message(error));
  }
}

async function syncOne(run: RunContext, requested: Scope): Promise<ScopeReport> {
  const { ports, request, clock, leases } = run;
  const started = clock().getTime();
  let scope = requested;
  let listing: ScopeListing;
  let lease: { name: string; hold: LeaseHold } | undefined;
  try {
    scope = canonicalScope(requested);
    if (leases) {
      const name = leaseName(request.options.manager, scope);
      lease = { name, hold: await leases.enter(name) };
    }
    listing = await list(run, scope);
  } catch (error) {
    listing = failedListing(scope, failureReason(error), message(error));
  }
  const now = timestamp(clock());
  const context: EventContext = {
    syncId: request.syncId,
    ...(request.runId ? { runId: request.runId } : {}),
    occurredAt: now,
    scope,
    source: request.eventSource,
  };
  const counts = emptyCounts(listing.clusters.length);
  let outcome = listing.outcome;
  let error: ScopeSummary['error'];
  let plan: Plan | undefined;
  let features: FeatureReport | undefined;
  const events: CpsyncEvent[] = [];
  // A scope another run is applying, or one the run was stopped before it listed, is not planned.
  const skipped = outcome.failure?.reason === 'Busy' || outcome.failure?.reason === 'Interrupted';
  try {
    if (skipped) return scopeReport(run, scope, outcome, counts, started, context, events);
    const signals = [request.signal, lease?.hold.signal].filter((s): s is AbortSignal => s !== undefined);
    const applied = await applyReading(ports, {
      context,
      listing,
      claims: run.claims,
      options: request.options,
      now,
      leaseMillis: request.intentLeaseMillis,
      ...(lease && leases ? { held: { holder: leases.holder, lease: lease.name } } : {}),
      ...(request.confirmedGone ? { confirmedGone: request.confirmedGone } : {}),
      ...(request.dryRun ? { dryRun: true } : {}),
      ...(signals.length > 0 ? { signal: AbortSignal.any(signals) } : {}),
    });
    const { result } = applied;
    plan = result.plan;
    features = await recordFeatures(run, scope, result.featureCounts);
    if (result.members) {
      const total = (run.report.members ??= { read: 0, unreachable: 0, millis: 0 });
      total.read += result.members.read;
      total.unreachable += result.members.unreachable;
      total.millis += result.members.millis;
    }
    if (result.grants) {
      const total = (run.report.grants ??= { granted: 0, revoked: 0, refused: 0, notUsable: 0, actions: [] });
      total.granted += result.grants.granted;
      total.revoked += result.grants.revoked;
      total.refused += result.grants.refused;
      total.notUsable += result.grants.notUsable;
      total.actions.push(...result.grants.actions);
      if (result.grants.projectRoles) (total.projectRoles ??= []).push(...result.grants.projectRoles);
      if (result.grants.unreachedScans) (total.unreachedScans ??= []).push(...result.grants.unreachedScans);
      run.report.problems.push(...(result.grants.problems ?? []));
    }
    // Clusters it could not read make a complete listing partial (their profiles are kept).
    if (outcome.kind === 'complete' && plan.outcome.kind === 'partial') outcome = plan.outcome;
    run.report.malformed.push(...result.malformed);
    run.report.problems.push(...collisions(scope, result));
    for (const left of result.unreadable)
      run.report.problems.push(
        `cannot remove the projected copies of ${scopeKey(scope)} in namespace ${left.namespace}, which no rule names any more: ${left.reason}`,
      );
    run.report.withoutCertificateAuthority.push(...result.withoutCertificateAuthority);
    for (const cluster of listing.clusters) {
      const state = settlingState(cluster);
      if (state)
        run.report.settling.push({ ref: refOf(scope, cluster), state, ...creationOf(cluster, state) });
    }
    counts.unchanged = result.plan.unchanged;
    counts.invalid = result.invalid.length;
    counts.failed = result.applied.failed.length;
    for (const change of result.applied.applied) counts[change.kind] += 1;
    events.push(...applied.events);
    if (!request.dryRun) {
      // The change events are durable before their intents go (the scope summary joins them later).
      try {
        await applied.settle();
      } catch (settleError) {
        // They are handed to the bus with the scope summary; their intents stay, so that a later run
        // announces them (again, with the same ids) should the bus not take them now.
        run.report.problems.push(
          `cannot write the events of ${scopeKey(scope)} to the outbox (their intents stay; a later run announces them again): ${message(settleError)}`,
        );
      }
    }
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
    else if (result.applied.notAttempted)
      error = {
        reason: lease?.hold.signal.aborted ? 'Busy' : 'Interrupted',
        message: `${result.applied.notAttempted} change(s) not applied: ${lease?.hold.signal.aborted ? message(lease.hold.signal.reason) : 'the run was stopped'}`,
      };
    else if (result.invalid[0])
      error = { reason: 'InvalidCluster', message: result.invalid.map((e) => e.message).join('; ') };
    if (result.applied.notAttempted && outcome.kind === 'complete')
      outcome = { ...outcome, kind: 'partial', missing: [] };
  } catch (failure) {
    const text = message(failure);
    outcome = { scope, kind: 'failed', failure: { reason: 'Unknown', message: text } };
    error = { reason: 'HubError', message: text };
  } finally {
    if (lease)
      await lease.hold.exit().catch((releaseError: unknown) => {
        run.report.problems.push(`cannot give up lease ${lease.name}: ${message(releaseError)}`);
      });
  }
  return scopeReport(run, scope, outcome, counts, started, context, events, error, plan, features);
}

/** Finds the orphans of the inventory, reports them and (unless a dry run) announces each scope of them. */
async function lookForOrphans(run: RunContext, check: NonNullable<SyncRequest['orphans']>): Promise<void> {
  const { ports, request, report } = run;
  const inventory = await attempt(run, 'list the inventory for orphans', () =>
    inventoryProfiles(ports.hub, request.options),
  );
  if (!inventory) return;
  const orphans = findOrphans(inventory.profiles, check.configured, new Set(check.determined)).map(
    orphanReport,
  );
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

/** An orphaned scope as reports carry it: the names of its profiles, and their provider ids (what a prune deletes). */
export function orphanReport(orphan: OrphanScope): OrphanReport {
  return {
    scope: orphan.scope,
    names: orphan.profiles.map((p) => profileKey(p.metadata)).sort(),
    providerIds: orphan.profiles
      .map((p) => p.metadata.annotations?.[ANNOTATION_PROVIDER_ID] ?? '')
      .filter((id) => id !== ''),
  };
}

/**
 * The manager's well-formed profiles in every inventory namespace, and the objects there that are not
 * (left out, named).
 */
export async function inventoryProfiles(
  hub: Hub,
  options: InventoryOptions,
): Promise<{ profiles: ClusterProfile[]; malformed: MalformedObject[] }> {
  const profiles: ClusterProfile[] = [];
  const malformed: MalformedObject[] = [];
  for (const namespace of inventoryNamespaces(options))
    for (const profile of await hub.list(namespace.name, { [LABEL_CLUSTER_MANAGER]: options.manager })) {
      const problem = profileProblem(profile);
      if (problem)
        malformed.push({ namespace: namespace.name, name: String(profile.metadata?.name), reason: problem });
      else profiles.push(profile);
    }
  malformed.push(...(hub.malformed?.() ?? []));
  return { profiles, malformed };
}

/**
 * A scope's feature states: reported in its event, and (unless a dry run) recorded in the
 * `<manager>-features` ConfigMap of every inventory namespace, written only when they changed.
 */
async function recordFeatures(
  run: RunContext,
  scope: Scope,
  byNamespace: ReadonlyMap<string, Record<FeatureName, number>>,
): Promise<FeatureReport> {
  const { options } = run.request;
  const totals = noCounts();
  for (const counts of byNamespace.values()) addCounts(totals, counts);
  addCounts(run.featureTotals, totals);
  if (!run.request.dryRun)
    for (const namespace of inventoryNamespaces(options))
      await attempt(run, `record the feature states in ${namespace.name}`, () =>
        run.ports.hub.updateConfigMap(
          { namespace: namespace.name, name: featureConfigMapName(options.manager) },
          (data) =>
            nextFeatureData(
              data,
              featureScopeKey(scope),
              byNamespace.get(namespace.name) ?? noCounts(),
              options.features,
            ),
        ),
      );
  return featureReport(options.features, totals);
}

/** A scope's report, with its `Inventory Scope Synced` event after its change events. */
function scopeReport(
  run: RunContext,
  scope: Scope,
  outcome: ScopeOutcome,
  counts: ScopeSummary['counts'],
  started: number,
  context: EventContext,
  events: CpsyncEvent[],
  error?: ScopeSummary['error'],
  plan?: Plan,
  features?: FeatureReport,
): ScopeReport {
  const summary: ScopeSummary = {
    outcome,
    counts,
    durationMs: run.clock().getTime() - started,
    ...(error ? { error } : {}),
    ...(features ? { features } : {}),
  };
  events.push(buildScopeEvent(summary, context));
  return { scope, outcome, summary, ...(plan ? { plan } : {}), events };
}

export interface ClusterSyncRequest extends Pick<
  RunSettings,
  'options' | 'eventSource' | 'intentLeaseMillis' | 'intentSettleDelayMillis' | 'leaseWaitMillis'
> {
  syncId: string;
  ref: ClusterRef;
  /** How long a lease lasts unless renewed. @default 60000 */
  leaseDurationMillis?: number;
}

export interface ClusterSyncReport {
  /** What happened to the cluster's profile. */
  result: 'created' | 'updated' | 'deleted' | 'unchanged' | 'absent';
  events: CpsyncEvent[];
  published: number;
  pending: number;
  /** What needs a person's look: a name collision left the stored profile of another cluster untouched. */
  problems?: string[];
  /** Set when the cluster's reading shows it in change: it is worth another look soon. */
  settling?: string;
  /** While the cluster is being created: when the cloud says it was created (ISO 8601). */
  since?: string;
}

/**
 * The name collisions of a scope's sync, as a run reports them: newcomers given a name of their own because
 * their first was held, clusters given no name, and profiles the plan refused to write over.
 */
function collisions(scope: Scope, result: Pick<SyncScopeResult, 'plan' | 'collisions'>): string[] {
  return [
    ...result.collisions,
    ...result.plan.skipped
      .filter((skipped) => skipped.reason === 'ProviderIdConflict' || skipped.reason === 'NameUnavailable')
      .map((skipped) => skipped.detail),
  ].map((detail) => `${scopeKey(scope)}: name collision: ${detail}`);
}

/**
 * An event-triggered sync of one cluster: its profile is created, updated, or — when the provider
 * answers not found — deleted at once. Nothing else in the scope is touched, and no scope summary is
 * published (it is not a listing of the scope). It holds the account's lease like a scope sync, so it
 * never applies at the same time as a run over the same account.
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
  const { leases, problems: recovered } = await beginSync(ports, request, clock(), (_what, work) => work());
  const lease = leaseName(request.options.manager, ref.scope);
  try {
    if (leases) await leases.enter(lease);
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
      if (confirmedGone.size === 0)
        return {
          result: 'absent',
          events: [],
          published: 0,
          pending: 0,
          ...(recovered.length > 0 ? { problems: recovered } : {}),
        };
    }
    const { result, events, settle } = await applyReading(ports, {
      context,
      listing,
      options: request.options,
      now,
      leaseMillis: request.intentLeaseMillis,
      ...(leases ? { held: { holder: leases.holder, lease } } : {}),
      ...(confirmedGone ? { confirmedGone } : {}),
    });
    await settle();
    const failure = result.applied.failed[0];
    if (failure) throw failure.error;
    const published = await ports.bus.publish(events);
    await ports.outbox.remove(doneWith(published));
    const kind = result.applied.applied[0]?.kind;
    const problems = [...recovered, ...collisions(ref.scope, result), ...(result.grants?.problems ?? [])];
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
    await leases?.releaseAll();
  }
}
