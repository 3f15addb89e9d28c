/**
 * Replay for subscribers: re-announce the inventory as it is in the hub (`cpsync announce`), one
 * `ClusterProfile Announced` event per profile, so a subscriber that lost its state — or starts after
 * the archive's retention — can rebuild it. Nothing is written to the hub. An announcement goes out under
 * cpsync's source, so it says only what cpsync can have written: a profile in a namespace where others could
 * have written one (the hub's admission policy not in force there), or one that does not say it is cpsync's
 * (untrustedReason), is withheld, with the reason.
 */
import { LABEL_ACCOUNT, LABEL_PROVIDER, LABEL_REGION } from '../domain/constants.ts';
import type { ClusterProfile } from '../domain/model/clusterProfile.ts';
import { isProvider, type Provider } from '../domain/model/observedCluster.ts';
import { untrustedReason } from '../domain/untrustedReason.ts';
import { deletedByCpsync } from '../domain/ownership.ts';
import type { InventoryOptions } from '../domain/options.ts';
import type { EventSink, Hub, MalformedObject, PublishFailure } from './ports.ts';
import { inventoryProfiles } from './engine.ts';
import { buildAnnounceEvent } from './events.ts';

/** Events handed to the bus at a time (it splits them into PutEvents calls of ten). */
const CHUNK = 100;

export interface AnnounceRequest {
  /** The announcement's id: the `syncId` of every event it publishes. */
  announceId: string;
  occurredAt: string;
  eventSource: string;
  options: InventoryOptions;
  /** Which profiles to announce; all when absent. */
  select?: (profile: ClusterProfile) => boolean;
  /**
   * Why others than cpsync could have written profiles in a namespace, or undefined where the hub keeps them out
   * (adapters/hub/hubPolicy.ts); every namespace is taken as cpsync's alone when absent (a hub only cpsync
   * writes, such as the state directory).
   */
  unguarded?: (namespace: string) => Promise<string | undefined>;
  signal?: AbortSignal;
}

export interface AnnounceReport {
  /** Profiles the announcement covered. */
  profiles: number;
  published: number;
  failed: PublishFailure[];
  malformed: MalformedObject[];
  /** Chosen profiles not announced, and why: cpsync cannot tell it wrote them. */
  withheld: Array<{ namespace: string; name: string; reason: string }>;
  /** Set when a signal stopped it before every event was handed to the bus. */
  interrupted?: string;
}

export async function announceInventory(
  ports: { hub: Hub; bus: EventSink },
  request: AnnounceRequest,
): Promise<AnnounceReport> {
  const inventory = await inventoryProfiles(ports.hub, request.options);
  const malformed = [...inventory.malformed];
  // A profile cpsync deleted (held by another controller's finalizer) is not announced again: its cluster is gone. One
  // another writer deleted is still its cluster's.
  const profiles = inventory.profiles.filter((profile) => {
    if (deletedByCpsync(profile)) return false;
    const labels = profile.metadata.labels ?? {};
    if (isProvider(labels[LABEL_PROVIDER]) && labels[LABEL_ACCOUNT] && labels[LABEL_REGION]) return true;
    malformed.push({
      namespace: profile.metadata.namespace,
      name: profile.metadata.name,
      reason: `has no ${LABEL_PROVIDER}, ${LABEL_ACCOUNT} and ${LABEL_REGION} labels to say which cluster it is of`,
    });
    return false;
  });
  const withheld: AnnounceReport['withheld'] = [];
  const judged = new Map<string, Promise<string | undefined>>();
  const guarded = async (namespace: string) => {
    if (!request.unguarded) return undefined;
    if (!judged.has(namespace)) judged.set(namespace, request.unguarded(namespace));
    return judged.get(namespace)!;
  };
  const chosen: ClusterProfile[] = [];
  for (const profile of profiles.filter((p) => request.select?.(p) ?? true)) {
    const { namespace, name } = profile.metadata;
    const reason = (await guarded(namespace)) ?? untrustedReason(profile, request.options.manager);
    if (reason === undefined) chosen.push(profile);
    else withheld.push({ namespace, name, reason });
  }
  chosen.sort((a, b) =>
    `${a.metadata.namespace}/${a.metadata.name}`.localeCompare(`${b.metadata.namespace}/${b.metadata.name}`),
  );
  const events = chosen.map((profile) => {
    const labels = profile.metadata.labels ?? {};
    return buildAnnounceEvent(profile, {
      syncId: request.announceId,
      occurredAt: request.occurredAt,
      source: request.eventSource,
      scope: {
        provider: labels[LABEL_PROVIDER] as Provider,
        account: labels[LABEL_ACCOUNT]!,
        region: labels[LABEL_REGION]!,
      },
    });
  });
  const report: AnnounceReport = { profiles: chosen.length, published: 0, failed: [], malformed, withheld };
  for (let start = 0; start < events.length; start += CHUNK) {
    if (request.signal?.aborted) {
      report.interrupted = String(request.signal.reason ?? 'aborted');
      break;
    }
    const result = await ports.bus.publish(events.slice(start, start + CHUNK));
    report.published += result.published.length;
    report.failed.push(...result.failed);
  }
  return report;
}
