/**
 * One scope of a run: its lease, its listing (bounded by the scope's deadline), the reading applied, its
 * feature states recorded, and its report with its `Inventory Scope Synced` event.
 */
import { buildScopeEvent, type ScopeSummary } from './events.ts';
import type { CpsyncEvent } from '../../events/types.ts';
import type { Plan } from '../domain/plan.ts';
import type { ScopeListing } from './ports.ts';
import { DeadlineError, InterruptedError, withDeadline } from './deadline.ts';
import { messageOf } from '../domain/errors.ts';
import { scopeKey, type Scope, type ScopeFailureReason, type ScopeOutcome } from '../domain/model/scope.ts';
import { settlingState } from '../domain/settling.ts';
import { canonicalScope } from '../domain/scopes.ts';
import { inventoryNamespaces } from '../domain/options.ts';
import type { EventContext } from './changes.ts';
import { LeaseBusyError, leaseName, type LeaseHold } from './runLeases.ts';
import { timestamp } from '../domain/time.ts';
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
import type { ScopeReport } from './types.ts';
import { creationOf, refOf, applyReading, collisions } from './steps.ts';
import { attempt, type RunContext } from './runContext.ts';

function emptyCounts(listed: number): ScopeSummary['counts'] {
  return { listed, created: 0, updated: 0, deleted: 0, unchanged: 0, failed: 0, invalid: 0 };
}

function failedListing(scope: Scope, reason: ScopeFailureReason, text: string): ScopeListing {
  return { outcome: { scope, kind: 'failed', failure: { reason, message: text } }, clusters: [] };
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
    return failedListing(scope, failureReason(error), messageOf(error));
  }
}

export async function syncOne(run: RunContext, requested: Scope): Promise<ScopeReport> {
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
    listing = failedListing(scope, failureReason(error), messageOf(error));
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
      ...(request.pruned ? { pruned: request.pruned } : {}),
      ...(request.dryRun ? { dryRun: true } : {}),
      ...(signals.length > 0 ? { signal: AbortSignal.any(signals) } : {}),
      ...(run.others ? { others: run.others } : {}),
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
    run.report.problems.push(...collisions(scope, result), ...result.problems);
    for (const left of result.unreadable)
      run.report.problems.push(
        `cannot remove the projected copies of ${scopeKey(scope)} in namespace ${left.namespace}, which no rule names any more: ${left.reason}`,
      );
    run.report.withoutCertificateAuthority.push(...result.withoutCertificateAuthority);
    // What the scope saw: the listing, and the clusters a lagging listing missed that the cloud answered present.
    counts.listed += result.confirmedPresent.length;
    for (const cluster of [...listing.clusters, ...result.confirmedPresent]) {
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
          `cannot write the events of ${scopeKey(scope)} to the outbox (their intents stay; a later run announces them again): ${messageOf(settleError)}`,
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
        message: `${result.applied.notAttempted} change(s) not applied: ${lease?.hold.signal.aborted ? messageOf(lease.hold.signal.reason) : 'the run was stopped'}`,
      };
    else if (result.invalid[0])
      error = { reason: 'InvalidCluster', message: result.invalid.map((e) => e.message).join('; ') };
    if (result.applied.notAttempted && outcome.kind === 'complete')
      outcome = { ...outcome, kind: 'partial', missing: [] };
  } catch (failure) {
    const text = messageOf(failure);
    outcome = { scope, kind: 'failed', failure: { reason: 'Unknown', message: text } };
    error = { reason: 'HubError', message: text };
  } finally {
    if (lease)
      await lease.hold.exit().catch((releaseError: unknown) => {
        run.report.problems.push(`cannot give up lease ${lease.name}: ${messageOf(releaseError)}`);
      });
  }
  return scopeReport(run, scope, outcome, counts, started, context, events, error, plan, features);
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
