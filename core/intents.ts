/**
 * Write-ahead intents: before a plan touches the hub, each planned change is recorded in the outbox.
 * Once the change's event is in the outbox the intent goes. An intent left behind means the process
 * stopped in between; the next run looks at the hub: if the change did reach it, its event is made
 * then (from the object as stored), otherwise the intent is dropped and the next plan redoes the change.
 */
import { createHash } from 'node:crypto';
import { buildChangeEvent, type EventContext } from '../events/builders.ts';
import type { CpsyncEvent } from '../events/types.ts';
import type { AppliedKind } from './applyPlan.ts';
import { OWNED_ANNOTATIONS, OWNED_LABELS } from './constants.ts';
import { canonicalJson } from './json.ts';
import type { ClusterProfile } from './model/clusterProfile.ts';
import { ownedStatusOf, pick, type FieldChange, type Plan } from './plan.ts';
import type { Hub, Outbox } from './ports.ts';

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
   * later may another run settle it.
   */
  notBefore: string;
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
): ChangeIntent[] {
  const notBefore = new Date(Date.parse(context.occurredAt) + leaseMillis).toISOString();
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
    })),
  ];
}

/**
 * Settles intents a stopped run left: the events of changes that reached the hub go to the outbox;
 * every intent is then removed. Returns the events recovered.
 */
export async function recoverIntents(
  hub: Hub,
  outbox: Outbox,
  accessProviderNames: readonly string[],
  now: Date,
): Promise<CpsyncEvent[]> {
  const intents = (await outbox.intents()).filter((intent) => Date.parse(intent.notBefore) <= now.getTime());
  const recovered: CpsyncEvent[] = [];
  for (const intent of intents) {
    const stored = await hub.get({ namespace: intent.namespace, name: intent.name });
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
  await outbox.removeIntents(intents.map((i) => i.id));
  return recovered;
}
