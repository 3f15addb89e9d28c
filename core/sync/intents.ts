/**
 * Write-ahead intents: before a plan touches the hub, each planned change is recorded in the intent
 * log. Once the change's event is in the outbox the intent goes. An intent left behind means the process
 * stopped in between; the next run looks at the hub: if the change did reach it, its event is made
 * then (from the object as stored), otherwise the intent is dropped and the next plan redoes the change.
 */
import { createHash } from 'node:crypto';
import { buildChangeEvent } from './events.ts';
import type { CpsyncEvent } from '../../events/types.ts';
import type { ApplyFailure, ChangeIntent, EventContext } from './changes.ts';
import { canonicalJson } from '../domain/json.ts';
import type { ClusterProfile } from '../domain/model/clusterProfile.ts';
import type { Plan } from '../domain/plan.ts';
import { deletedByCpsync, ownedState } from '../domain/ownership.ts';
import type { Hub, IntentLog, LeaseHolder, LeaseStore, Outbox } from './ports.ts';
import { MalformedObjectError, messageOf } from '../domain/errors.ts';
import { profileProblem } from '../domain/model/validate.ts';

/** A fingerprint of what cpsync owns in a profile (times left out); `objectOnly` leaves the status out too. */
export function fingerprint(
  profile: ClusterProfile,
  accessProviderNames: readonly string[],
  objectOnly = false,
): string {
  return createHash('sha256')
    .update(canonicalJson(ownedState(profile, accessProviderNames, objectOnly)))
    .digest('hex');
}

/** Who writes intents, and for how long they stay theirs. */
export interface IntentOwner {
  context: EventContext;
  accessProviderNames: readonly string[];
  /** How long the intents stay the run's own (the configuration's `sync.intentLeaseSeconds`). */
  leaseMillis: number;
  /** The run's lease, when it holds one. */
  held?: { holder: string; lease: string };
}

type IntentFields = Omit<ChangeIntent, 'id' | 'context' | 'notBefore' | 'holder' | 'lease'>;

/** An intent of `owner`, its id unique to the run, the change's kind (`part`) and the profile. */
function intent(owner: IntentOwner, part: string, fields: IntentFields): ChangeIntent {
  const { context, leaseMillis, held } = owner;
  return {
    // The change itself is in the id (where it starts from, what it leads to): another attempt of the same sync (its
    // event delivered again) that plans another change of the profile writes an intent of its own, never over this one.
    id: createHash('sha256')
      .update(
        `${context.syncId}|${part}|${fields.namespace}/${fields.name}|${fields.previousResourceVersion ?? ''}|${fields.target}`,
      )
      .digest('hex')
      .slice(0, 32),
    ...fields,
    context,
    notBefore: new Date(Date.parse(context.occurredAt) + leaseMillis).toISOString(),
    ...(held ? { holder: held.holder, lease: held.lease } : {}),
  };
}

/** One intent per change the plan will make. */
export function planIntents(plan: Plan, owner: IntentOwner): ChangeIntent[] {
  const names = owner.accessProviderNames;
  return [
    ...plan.creates.map(({ profile }) =>
      intent(owner, 'created', {
        kind: 'created',
        namespace: profile.metadata.namespace,
        name: profile.metadata.name,
        changes: [{ field: 'metadata.name', after: profile.metadata.name }],
        target: fingerprint(profile, names, true),
      }),
    ),
    ...plan.updates.map((update) =>
      intent(owner, 'updated', {
        kind: 'updated',
        namespace: update.profile.metadata.namespace,
        name: update.profile.metadata.name,
        changes: update.changes,
        target: fingerprint(update.profile, names),
        ...(update.writeObject && update.writeStatus
          ? { objectTarget: fingerprint(update.profile, names, true) }
          : {}),
        ...(update.current.metadata.resourceVersion
          ? { previousResourceVersion: update.current.metadata.resourceVersion }
          : {}),
      }),
    ),
    ...plan.deletes.map(({ current }) =>
      intent(owner, 'deleted', {
        kind: 'deleted',
        namespace: current.metadata.namespace,
        name: current.metadata.name,
        changes: [{ field: 'metadata.name', before: current.metadata.name }],
        target: '',
        previous: current,
      }),
    ),
  ];
}

/**
 * The intent of the status half of a change whose object write reached the hub and whose status write
 * failed: a status write that timed out may still have reached it, and must then be announced (as an
 * update from the object's version — the event the next run would make if it redid the write).
 */
export function remainderIntent(
  failure: ApplyFailure & { remainder: NonNullable<ApplyFailure['remainder']> },
  owner: IntentOwner,
): ChangeIntent {
  const { profile, previousResourceVersion, changes } = failure.remainder;
  return intent(owner, 'status', {
    kind: 'updated',
    namespace: profile.metadata.namespace,
    name: profile.metadata.name,
    changes,
    target: fingerprint(profile, owner.accessProviderNames),
    previousResourceVersion,
  });
}

/**
 * The intent of a change whose write the run gave up on at `at` (it failed, or timed out and may land yet), under an
 * id of its own, naming the intent it `replaces` (itself, or the whole change a status half remains of): it is written
 * before that one is removed, so a process stopped in between leaves both (`abandonedIntents` judges the two of one
 * change by the later time, and `recoverIntents` settles the replaced one without an event).
 */
export function givenUp(intent: ChangeIntent, at: Date, replaced: ChangeIntent = intent): ChangeIntent {
  return {
    ...intent,
    id: createHash('sha256').update(`${intent.id}|given up`).digest('hex').slice(0, 32),
    givenUpAt: at.toISOString(),
    replaces: replacing(replaced),
  };
}

/**
 * What names one intent as a given-up copy replaces it: its id and the state its change leads to. A delivery of the
 * same event again (the same sync id, so the same intent ids) that planned another change is not the one replaced.
 */
const replacing = (intent: ChangeIntent) => `${intent.id}:${intent.target}`;

/** The change an intent stands for: one run's change of one profile (its given-up copy included). */
const changeOf = (intent: ChangeIntent) => `${intent.context.syncId}|${intent.namespace}/${intent.name}`;

export interface Settlement {
  /** Until then an intent whose run gave up its lease is still left alone: a write its run sent may yet land. */
  settleDelayMillis?: number;
  /** Where runs hold their leases. */
  leases?: LeaseStore;
}

/**
 * The intents that runs which are over left behind. An intent whose run still holds its lease is
 * never settled, however old; one whose run has given up its lease (finished, stopped, or a process
 * that is gone) is settled once `settleDelayMillis` have passed since the run gave up on the change's
 * write (`givenUpAt`; the run's start where it never said); one that names no lease, once its time is up — and
 * one whose write was given up, not before its settle delay has passed since then either.
 */
async function abandonedIntents(
  intents: readonly ChangeIntent[],
  now: Date,
  settlement: Settlement,
): Promise<ChangeIntent[]> {
  const { leases, settleDelayMillis = 0 } = settlement;
  const holders = new Map<string, Promise<LeaseHolder | undefined>>();
  // The latest time each change was given up at: its two intents, should a stopped process leave both, wait alike.
  const givenUpAt = new Map<string, number>();
  // Changes a run said it gave up on: they wait the settle delay from then, whatever their own time says.
  const givenUp = new Set(intents.filter((i) => i.givenUpAt !== undefined).map(changeOf));
  for (const intent of intents) {
    const at = Date.parse(intent.givenUpAt ?? intent.context.occurredAt);
    if (Number.isNaN(at)) continue;
    const change = changeOf(intent);
    if (!(givenUpAt.get(change)! >= at)) givenUpAt.set(change, at);
  }
  const abandoned: ChangeIntent[] = [];
  for (const intent of intents) {
    const leased = leases !== undefined && intent.lease !== undefined && intent.holder !== undefined;
    if (leased) {
      let holder = holders.get(intent.lease!);
      if (!holder) holders.set(intent.lease!, (holder = leases.holderOf(intent.lease!)));
      if ((await holder)?.holder === intent.holder) continue;
    }
    const settled = now.getTime() - givenUpAt.get(changeOf(intent))! >= settleDelayMillis;
    const over = Date.parse(intent.notBefore) <= now.getTime() || (leased && settled);
    if (over && (settled || !givenUp.has(changeOf(intent)))) abandoned.push(intent);
  }
  return abandoned;
}

export interface Recovery {
  /** Events of changes that reached the hub, now in the outbox. */
  recovered: CpsyncEvent[];
  /** Intents that could not be settled now (the hub did not answer); the next run tries again. */
  problems: string[];
  /**
   * The intents left alone: their runs may still be going (or gave up on a write too lately). Should this sync write
   * over one's profile, it announces that change first where the hub shows it reached it (`landedBefore`).
   */
  others: ChangeIntent[];
}

/** The event an intent stands for, when the hub shows its change was made; undefined when it was not. */
function recoveredEvent(
  intent: ChangeIntent,
  stored: ClusterProfile | undefined,
  accessProviderNames: readonly string[],
): CpsyncEvent | undefined {
  let changes = intent.changes;
  if (intent.kind === 'deleted') {
    // Deleted: gone, or held by another controller's finalizer after cpsync's deletion (the hub took it, and its mark).
    if (stored !== undefined && !deletedByCpsync(stored)) return undefined;
  } else if (!stored) return undefined;
  else if (fingerprint(stored, accessProviderNames, intent.kind === 'created') !== intent.target) {
    // The object half alone reached the hub: that half is announced, as the run itself would have.
    if (!intent.objectTarget || fingerprint(stored, accessProviderNames, true) !== intent.objectTarget)
      return undefined;
    changes = intent.changes.filter((c) => !c.field.startsWith('status.'));
  }
  return buildChangeEvent(
    {
      kind: intent.kind,
      profile: intent.kind === 'deleted' ? intent.previous! : stored!,
      changes,
      ...(intent.previousResourceVersion ? { previousResourceVersion: intent.previousResourceVersion } : {}),
    },
    intent.context,
  );
}

/**
 * Settles intents that stopped runs left: the events of changes that reached the hub go to the
 * outbox; every settled intent is then removed. An intent whose profile cannot be read now is kept;
 * one whose profile is malformed is settled without an event (nothing cpsync wrote is there to announce).
 */
export async function recoverIntents(
  { hub, outbox, intents: log }: { hub: Hub; outbox: Outbox; intents: IntentLog },
  accessProviderNames: readonly string[],
  now: Date,
  settlement: Settlement = {},
): Promise<Recovery> {
  const all = await log.list();
  const intents = await abandonedIntents(all, now, settlement);
  // A change whose given-up copies were written: its run knew then what it had announced (a write given up whole,
  // or only a status half), and the copies stand for the rest. The intents they name go without an event.
  const replaced = new Set(all.flatMap((i) => (i.replaces === undefined ? [] : [i.replaces])));
  const recovered: CpsyncEvent[] = [];
  const settled: string[] = [];
  const problems: string[] = [];
  for (const intent of intents) {
    const key = `${intent.namespace}/${intent.name}`;
    if (replaced.has(replacing(intent))) {
      settled.push(intent.id);
      continue;
    }
    try {
      const stored = await hub.get({ namespace: intent.namespace, name: intent.name });
      const malformed = stored === undefined ? undefined : profileProblem(stored);
      if (malformed)
        problems.push(`intent for ${key} settled without an event: the profile is malformed (${malformed})`);
      const event = malformed ? undefined : recoveredEvent(intent, stored, accessProviderNames);
      if (event) recovered.push(event);
      settled.push(intent.id);
    } catch (error) {
      if (error instanceof MalformedObjectError) {
        problems.push(`intent for ${key} settled without an event: ${error.message}`);
        settled.push(intent.id);
      } else problems.push(`intent for ${key} kept: ${messageOf(error)}`);
    }
  }
  await outbox.add(recovered);
  await log.remove(settled);
  const abandoned = new Set(intents);
  return { recovered, problems, others: all.filter((intent) => !abandoned.has(intent)) };
}

/**
 * The events of other runs' changes a plan is about to write over, where the hub shows they reached it: the profile
 * as the plan read it (`current`; none for a profile it creates) is the state an intent of another run leads to (a
 * deletion: the profile gone). That run may have stopped before announcing it, and once this plan's write lands no
 * later run could tell the change was made: it is announced now, under the id the run itself would give it (a run
 * still going announces it too, and the two are one event to a subscriber). An intent of this sync's own (its id
 * among `own`) is left to it.
 */
export function landedBefore(
  plan: Plan,
  others: readonly ChangeIntent[],
  own: ReadonlySet<string>,
  accessProviderNames: readonly string[],
): CpsyncEvent[] {
  if (others.length === 0) return [];
  const byProfile = new Map<string, ChangeIntent[]>();
  for (const intent of others) {
    if (own.has(intent.id)) continue;
    const key = `${intent.namespace}/${intent.name}`;
    byProfile.set(key, [...(byProfile.get(key) ?? []), intent]);
  }
  const written: Array<[string, ClusterProfile | undefined]> = [
    ...plan.creates.map(({ profile }): [string, undefined] => [
      `${profile.metadata.namespace}/${profile.metadata.name}`,
      undefined,
    ]),
    ...plan.updates.map(({ current }): [string, ClusterProfile] => [
      `${current.metadata.namespace}/${current.metadata.name}`,
      current,
    ]),
    ...plan.deletes.map(({ current }): [string, ClusterProfile] => [
      `${current.metadata.namespace}/${current.metadata.name}`,
      current,
    ]),
  ];
  const events = new Map<string, CpsyncEvent>();
  for (const [key, current] of written)
    for (const intent of byProfile.get(key) ?? []) {
      const event = recoveredEvent(intent, current, accessProviderNames);
      if (event) events.set(event.detail.eventId, event);
    }
  return [...events.values()];
}
