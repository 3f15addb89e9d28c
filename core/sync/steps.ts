/**
 * The steps the full sync (run.ts) and the one-cluster sync (cluster.ts) share: the run's leases, what every
 * sync does before it applies a reading (leases, the inventory namespace, the intents earlier runs left), the
 * one step that applies a reading to the hub with its intents written ahead, and how a cluster is found again.
 */
import { randomUUID } from 'node:crypto';
import { buildAccessEvent, buildChangeEvent } from './events.ts';
import type { CpsyncEvent } from '../../events/types.ts';
import type { InventoryOptions } from '../domain/options.ts';
import type { Plan } from '../domain/plan.ts';
import type { ClusterRef, Hub, PublishResult, ScopeListing } from './ports.ts';
import { scopeKey, type Scope } from '../domain/model/scope.ts';
import type { ObservedCluster } from '../domain/model/observedCluster.ts';
import { operationOf } from '../domain/lookSchedule.ts';
import { syncScope, type SyncScopeResult } from './syncScope.ts';
import type { NameClaims } from './names.ts';
import type { AccountWork, ProjectClusters } from './grants.ts';
import { inventoryNamespaces } from '../domain/options.ts';
import {
  givenUp,
  landedBefore,
  planIntents,
  recoverIntents,
  remainderIntent,
  type IntentOwner,
} from './intents.ts';
import type { ApplyFailure, ChangeIntent, EventContext } from './changes.ts';
import { RunLeases } from './runLeases.ts';
import { cut } from '../domain/text.ts';
import { profileKey } from '../domain/model/clusterProfile.ts';
import type { EnginePorts, SyncRequest } from './types.ts';

/** How long a lease lasts unless renewed (it is renewed at a third of that while held). */
const LEASE_DURATION_MILLIS = 60_000;

/** A cluster being created: when it was, as the cloud says (the follow-up places its looks from there). */
export function creationOf(cluster: ObservedCluster, state: string): { since?: string } {
  return operationOf(state) === 'create' && cluster.createdAt ? { since: cluster.createdAt } : {};
}

/** How a single-cluster sync finds `cluster` again (`scope` as the listing had it). */
export function refOf(scope: Scope, cluster: ObservedCluster): ClusterRef {
  return {
    scope,
    name: cluster.name,
    ...(cluster.provider === 'gke' ? { location: cluster.zone ?? cluster.region } : {}),
    ...(cluster.resourceGroup ? { resourceGroup: cluster.resourceGroup } : {}),
  };
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
export type Attempt = <T>(what: string, work: () => Promise<T>) => Promise<T | undefined>;

type BeginRequest = Pick<
  SyncRequest,
  | 'syncId'
  | 'leaseWaitMillis'
  | 'leaseDurationMillis'
  | 'options'
  | 'intentSettleDelayMillis'
  | 'dryRun'
  | 'signal'
>;

/**
 * What every sync does before it applies a reading, the full sync and the single-cluster sync alike:
 * the run's leases (when the hub keeps them; none in a dry run), the inventory namespace they live in,
 * and the intents stopped runs left settled first, so that a change they left unannounced is announced
 * before anything else is written. `attempt` says what becomes of a failure: the full sync names it
 * among its problems and goes on; the single-cluster sync fails (its event is delivered again). The
 * caller releases the leases when it is done.
 */
export async function beginSync(
  ports: EnginePorts,
  request: BeginRequest,
  now: Date,
  attempt: Attempt,
): Promise<{ leases?: RunLeases; problems: string[]; others: ChangeIntent[] }> {
  if (request.dryRun) return { problems: [], others: [] };
  const leases = await syncLeases(ports, request, attempt);
  const { problems, others } = await recoverEarlier(ports, request, now, attempt);
  return { ...(leases ? { leases } : {}), problems, others };
}

/** The sync's leases (none in a dry run, nor where the hub keeps none), their namespace made first. */
export async function syncLeases(
  ports: EnginePorts,
  request: BeginRequest,
  attempt: Attempt,
): Promise<RunLeases | undefined> {
  if (request.dryRun) return undefined;
  const leases = runLeases(ports, request, request.signal);
  // Leases live in the inventory namespace, so it exists before the first is taken.
  if (leases)
    await attempt('create the inventory namespace', () =>
      ensureInventoryNamespace(ports.hub, request.options),
    );
  return leases;
}

/**
 * The intents of earlier runs settled (their changes announced where they reached the hub): what must be done
 * before this sync writes anything. Resolves to the problems it met, and the intents it left to runs that may still
 * be going (`others`: this sync announces those its writes would hide, see `landedBefore`).
 */
export async function recoverEarlier(
  ports: EnginePorts,
  request: BeginRequest,
  now: Date,
  attempt: Attempt,
): Promise<{ problems: string[]; others: ChangeIntent[] }> {
  if (request.dryRun) return { problems: [], others: [] };
  const recovery = await attempt('settle the intents of earlier runs', () =>
    recoverIntents(ports, Object.values(request.options.accessProviderNames), now, {
      ...(ports.leases ? { leases: ports.leases } : {}),
      settleDelayMillis: request.intentSettleDelayMillis,
    }),
  );
  return { problems: recovery?.problems ?? [], others: recovery?.others ?? [] };
}

/**
 * The events that leave the outbox after a publish: those the bus took, and only those. An event the
 * bus refused, even for good, stays and is offered again by every run (and counted as pending) until
 * someone sees to the cause: the change it announces is never lost.
 */
export function doneWith(result: PublishResult): string[] {
  return result.published;
}

/** A run's lease holder id: the run, and this process's part in it. */
function holderId(syncId: string): string {
  return `${cut(syncId, 100)}#${randomUUID().slice(0, 8)}`;
}

function ensureInventoryNamespace(hub: Hub, options: InventoryOptions): Promise<void> {
  return hub.ensureNamespace(inventoryNamespaces(options).find((ns) => ns.name === options.namespace)!);
}

/**
 * Records a plan's changes as intents just before it is applied; `settle` removes them once their events are in the
 * outbox. Other runs' changes the plan writes over, where they reached the hub, are announced first (`others`).
 */
function writeAhead(
  { outbox, intents: log, clock = () => new Date() }: Pick<EnginePorts, 'outbox' | 'intents' | 'clock'>,
  owner: IntentOwner,
  others: readonly ChangeIntent[] = [],
) {
  let intents: ChangeIntent[] = [];
  let hidden: CpsyncEvent[] = [];
  return {
    beforeApply: async (planned: Plan) => {
      intents = planIntents(planned, owner);
      hidden = landedBefore(planned, others, new Set(intents.map((i) => i.id)), owner.accessProviderNames);
      // In the outbox before this plan's writes land; published with this sync's own events.
      if (hidden.length > 0) await outbox.add(hidden);
      await log.add(intents);
    },
    /** The events of other runs' changes this plan writes over, announced with its own (see `landedBefore`). */
    hidden: () => hidden,
    /**
     * The events of what was applied go to the outbox, then the intents go — but not those of
     * changes whose write failed: a write that timed out may still have reached the hub, and a later
     * run announces it if it did. A change whose object write reached the hub and whose status write
     * failed keeps an intent for its status half. Those kept say when the run gave up on the write
     * (`givenUpAt`): a later run waits its settle delay from then, not from the run's start.
     */
    settle: async <T>(
      events: CpsyncEvent[],
      failures: readonly ApplyFailure[],
      beside?: () => Promise<T>,
    ): Promise<T | undefined> => {
      const now = clock();
      const unknown = new Set(failures.filter((f) => !f.remainder).map((f) => f.key));
      const kept = [
        ...intents.filter((i) => unknown.has(profileKey(i))).map((i) => givenUp(i, now)),
        ...failures
          .filter(
            (f): f is ApplyFailure & { remainder: NonNullable<ApplyFailure['remainder']> } => !!f.remainder,
          )
          .map((f) =>
            givenUp(
              remainderIntent(f, owner),
              now,
              // The whole change's intent, of which the status half remains.
              intents.find((i) => profileKey(i) === f.key),
            ),
          ),
      ];
      await outbox.add(events);
      if (kept.length > 0) await log.add(kept);
      // Once the events are in the outbox, what goes with them (their publishing) need not wait for the intents.
      const [removed, done] = await Promise.allSettled([log.remove(intents.map((i) => i.id)), beside?.()]);
      if (removed.status === 'rejected') throw removed.reason;
      if (done.status === 'rejected') throw done.reason;
      return done.value;
    },
  };
}

/**
 * Puts a reading's events in the outbox and removes the intents of the changes that surely reached the hub.
 * `beside`: work that needs the events in the outbox (their publishing), done while the intents are removed;
 * its answer is settle's.
 */
interface Settle {
  (): Promise<void>;
  <T>(beside: () => Promise<T>): Promise<T>;
}

/**
 * The one step that applies a reading of the clouds (a scope's listing, or one cluster's) to the hub,
 * for the full sync and the single-cluster sync alike: the plan's changes recorded as intents just
 * before they are applied (write-ahead), applied, and their events made. `settle()` (nothing in a dry
 * run) then puts the events in the outbox and removes the intents of the changes that surely reached
 * the hub; should it fail, the intents stay and a later run announces the changes.
 */
export async function applyReading(
  ports: EnginePorts,
  reading: {
    context: EventContext;
    listing: ScopeListing;
    options: InventoryOptions;
    now: string;
    leaseMillis: number;
    held?: IntentOwner['held'];
    confirmedGone?: ReadonlySet<string>;
    /** Provider ids whose profiles are pruned (no configured scope covers them): see SyncRequest.pruned. */
    pruned?: ReadonlySet<string>;
    dryRun?: boolean;
    signal?: AbortSignal;
    claims?: NameClaims;
    /** Other syncs of the account may apply at the same time: what is decided for all of it is decided inside. */
    alone?: AccountWork;
    /** Beside `alone`: the GKE project's clusters as the cloud lists them now. */
    projectClusters?: ProjectClusters;
    /** The intents recovery left to runs that may still be going (see `landedBefore`). */
    others?: readonly ChangeIntent[];
    /** The listing is one cluster's reading, not the scope's (see SyncScopeInput.oneCluster). */
    oneCluster?: boolean;
  },
): Promise<{
  result: Awaited<ReturnType<typeof syncScope>>;
  events: CpsyncEvent[];
  settle: Settle;
}> {
  const ahead = writeAhead(
    ports,
    {
      context: reading.context,
      accessProviderNames: Object.values(reading.options.accessProviderNames),
      leaseMillis: reading.leaseMillis,
      ...(reading.held ? { held: reading.held } : {}),
    },
    reading.others,
  );
  const result = await syncScope({
    hub: ports.hub,
    listing: reading.listing,
    options: reading.options,
    now: reading.now,
    ...(reading.confirmedGone ? { confirmedGone: reading.confirmedGone } : {}),
    ...(reading.pruned ? { pruned: reading.pruned } : {}),
    ...(reading.dryRun ? { dryRun: true } : {}),
    ...(reading.signal ? { signal: reading.signal } : {}),
    ...(ports.members ? { members: ports.members } : {}),
    ...(ports.grants ? { grants: ports.grants } : {}),
    ...(ports.ledger ? { ledger: ports.ledger } : {}),
    absences: ports.absences,
    ...(reading.oneCluster ? { oneCluster: true } : {}),
    ...(ports.naming ? { naming: ports.naming } : {}),
    ...(reading.claims ? { claims: reading.claims } : {}),
    ...(reading.alone ? { alone: reading.alone } : {}),
    ...(reading.projectClusters ? { projectClusters: reading.projectClusters } : {}),
    beforeApply: ahead.beforeApply,
  });
  const events = [
    ...ahead.hidden(),
    ...result.applied.applied.map((change) => buildChangeEvent(change, reading.context)),
    // The grants made and revoked (none in a dry run: those are only listed).
    ...(reading.dryRun
      ? []
      : (result.grants?.actions ?? []).map((a) => buildAccessEvent(a, reading.context))),
  ];
  const settle = (<T>(beside?: () => Promise<T>) =>
    reading.dryRun
      ? (beside?.() ?? Promise.resolve(undefined))
      : ahead.settle(events, result.applied.failed, beside)) as Settle;
  return { result, events, settle };
}

/**
 * The name collisions of a scope's sync, as a run reports them: newcomers given a name of their own because
 * their first was held, clusters given no name, and profiles the plan refused to write over.
 */
export function collisions(scope: Scope, result: Pick<SyncScopeResult, 'plan' | 'collisions'>): string[] {
  return [
    ...result.collisions,
    ...result.plan.skipped
      .filter((skipped) => skipped.reason === 'ProviderIdConflict' || skipped.reason === 'NameUnavailable')
      .map((skipped) => skipped.detail),
  ].map((detail) => `${scopeKey(scope)}: name collision: ${detail}`);
}
