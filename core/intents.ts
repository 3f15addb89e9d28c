/**
 * Write-ahead intents: before a plan touches the hub, each planned change is recorded in the outbox.
 * Once the change's event is in the outbox the intent goes. An intent left behind means the process
 * stopped in between; the next run looks at the hub: if the change did reach it, its event is made
 * then (from the object as stored), otherwise the intent is dropped and the next plan redoes the change.
 */
import { createHash } from 'node:crypto';
import { buildChangeEvent, type EventContext } from '../events/builders.ts';
import type { CpsyncEvent } from '../events/types.ts';
import type { AppliedKind, ApplyFailure } from './applyPlan.ts';
import { OWNED_ANNOTATIONS, OWNED_LABELS } from './constants.ts';
import { canonicalJson } from './json.ts';
import type { ClusterProfile } from './model/clusterProfile.ts';
import { ownedStatusOf, pick, type FieldChange, type Plan } from './plan.ts';
import type { Hub, LeaseHolder, LeaseStore, Outbox } from './ports.ts';

export interface ChangeIntent {
  id: string;
  kind: AppliedKind;
  namespace: string;
  name: string;
  changes: FieldChange[];
  /** Fingerprint of the owned state the change leads to (created: of the object part only). */
  target: string;
  previousResourceVersion?: string;
  /** For deletes: the profile as it was, to announce it. */
  previous?: ClusterProfile;
  context: EventContext;
  /**
   * Until then the intent belongs to a run that may still be going (here or in another process); only
   * later may another run settle it — or sooner, once the run no longer holds `lease`.
   */
  notBefore: string;
  /** The run (its lease holder id) that wrote the intent. */
  holder?: string;
  /** The lease the run held while it applied the change. */
  lease?: string;
}

/** How long an intent belongs to its run: longer than any run's apply phase (a Lambda runs 15 minutes at most). */
export const DEFAULT_INTENT_LEASE_MILLIS = 15 * 60 * 1000;

/** A fingerprint of what cpsync owns in a profile (times left out); `objectOnly` leaves the status out too. */
export function fingerprint(
  profile: ClusterProfile,
  accessProviderNames: readonly string[],
  objectOnly = false,
): string {
  const owned = {
    labels: pick(profile.metadata.labels, OWNED_LABELS),
    annotations: pick(profile.metadata.annotations, OWNED_ANNOTATIONS),
    spec: { displayName: profile.spec?.displayName, clusterManager: profile.spec?.clusterManager?.name },
    ...(objectOnly ? {} : { status: ownedStatusOf(profile.status, accessProviderNames) }),
  };
  return createHash('sha256').update(canonicalJson(owned)).digest('hex');
}

/** One intent per change the plan will make. */
export function planIntents(
  plan: Plan,
  context: EventContext,
  accessProviderNames: readonly string[],
  leaseMillis: number = DEFAULT_INTENT_LEASE_MILLIS,
  held?: { holder: string; lease: string },
): ChangeIntent[] {
  const notBefore = new Date(Date.parse(context.occurredAt) + leaseMillis).toISOString();
  const owner = held ? { holder: held.holder, lease: held.lease } : {};
  const id = (kind: string, namespace: string, name: string) =>
    createHash('sha256').update(`${context.syncId}|${kind}|${namespace}/${name}`).digest('hex').slice(0, 32);
  return [
    ...plan.creates.map(({ profile }): ChangeIntent => ({
      id: id('created', profile.metadata.namespace, profile.metadata.name),
      kind: 'created',
      namespace: profile.metadata.namespace,
      name: profile.metadata.name,
      changes: [{ field: 'metadata.name', after: profile.metadata.name }],
      target: fingerprint(profile, accessProviderNames, true),
      context,
      notBefore,
      ...owner,
    })),
    ...plan.updates.map((update): ChangeIntent => ({
      id: id('updated', update.profile.metadata.namespace, update.profile.metadata.name),
      kind: 'updated',
      namespace: update.profile.metadata.namespace,
      name: update.profile.metadata.name,
      changes: update.changes,
      target: fingerprint(update.profile, accessProviderNames),
      ...(update.current.metadata.resourceVersion
        ? { previousResourceVersion: update.current.metadata.resourceVersion }
        : {}),
      context,
      notBefore,
      ...owner,
    })),
    ...plan.deletes.map(({ current }): ChangeIntent => ({
      id: id('deleted', current.metadata.namespace, current.metadata.name),
      kind: 'deleted',
      namespace: current.metadata.namespace,
      name: current.metadata.name,
      changes: [{ field: 'metadata.name', before: current.metadata.name }],
      target: '',
      previous: current,
      context,
      notBefore,
      ...owner,
    })),
  ];
}

/**
 * The intent of the status half of a change whose object write reached the hub and whose status write
 * failed: a status write that timed out may still have reached it, and must then be announced (as an
 * update from the object's version — the event the next run would make if it redid the write).
 */
export function remainderIntent(
  failure: ApplyFailure & { remainder: NonNullable<ApplyFailure['remainder']> },
  context: EventContext,
  accessProviderNames: readonly string[],
  leaseMillis: number = DEFAULT_INTENT_LEASE_MILLIS,
  held?: { holder: string; lease: string },
): ChangeIntent {
  const { profile, previousResourceVersion, changes } = failure.remainder;
  const { namespace, name } = profile.metadata;
  return {
    id: createHash('sha256')
      .update(`${context.syncId}|status|${namespace}/${name}`)
      .digest('hex')
      .slice(0, 32),
    kind: 'updated',
    namespace,
    name,
    changes,
    target: fingerprint(profile, accessProviderNames),
    previousResourceVersion,
    context,
    notBefore: new Date(Date.parse(context.occurredAt) + leaseMillis).toISOString(),
    ...(held ? { holder: held.holder, lease: held.lease } : {}),
  };
}

/** The intents that runs which are over left behind: their lease time is up, or their run gave up its lease. */
async function abandonedIntents(
  intents: readonly ChangeIntent[],
  now: Date,
  leases?: LeaseStore,
  ownHolder?: string,
): Promise<ChangeIntent[]> {
  const holders = new Map<string, Promise<LeaseHolder | undefined>>();
  const abandoned: ChangeIntent[] = [];
  for (const intent of intents) {
    if (ownHolder !== undefined && intent.holder === ownHolder) continue;
    if (Date.parse(intent.notBefore) <= now.getTime()) {
      abandoned.push(intent);
      continue;
    }
    if (!leases || !intent.lease || !intent.holder) continue;
    let holder = holders.get(intent.lease);
    if (!holder) holders.set(intent.lease, (holder = leases.holderOf(intent.lease)));
    if ((await holder)?.holder !== intent.holder) abandoned.push(intent);
  }
  return abandoned;
}

export interface Recovery {
  /** Events of changes that reached the hub, now in the outbox. */
  recovered: CpsyncEvent[];
  /** Intents that could not be settled now (the hub did not answer); the next run tries again. */
  problems: string[];
}

/**
 * Settles intents that stopped runs left: the events of changes that reached the hub go to the
 * outbox; every settled intent is then removed. An intent whose profile cannot be read is kept.
 */
export async function recoverIntents(
  hub: Hub,
  outbox: Outbox,
  accessProviderNames: readonly string[],
  now: Date,
  leases?: { store: LeaseStore; ownHolder: string },
): Promise<Recovery> {
  const intents = await abandonedIntents(await outbox.intents(), now, leases?.store, leases?.ownHolder);
  const recovered: CpsyncEvent[] = [];
  const settled: string[] = [];
  const problems: string[] = [];
  for (const intent of intents) {
    let stored: ClusterProfile | undefined;
    try {
      stored = await hub.get({ namespace: intent.namespace, name: intent.name });
    } catch (error) {
      problems.push(
        `intent for ${intent.namespace}/${intent.name} kept: ${error instanceof Error ? error.message : String(error)}`,
      );
      continue;
    }
    settled.push(intent.id);
    let reached = false;
    if (intent.kind === 'deleted') reached = stored === undefined;
    else if (stored)
      reached = fingerprint(stored, accessProviderNames, intent.kind === 'created') === intent.target;
    if (reached) {
      const profile = intent.kind === 'deleted' ? intent.previous! : stored!;
      recovered.push(
        buildChangeEvent(
          {
            kind: intent.kind,
            profile,
            changes: intent.changes,
            ...(intent.previousResourceVersion
              ? { previousResourceVersion: intent.previousResourceVersion }
              : {}),
          },
          intent.context,
        ),
      );
    }
  }
  await outbox.add(recovered);
  await outbox.removeIntents(settled);
  return { recovered, problems };
}
