/**
 * Replay for subscribers: re-announce the inventory as it is in the hub (`cpsync announce`), one
 * `ClusterProfile Announced` event per profile, so a subscriber that lost its state — or starts after
 * the archive's retention — can rebuild it. Nothing is written to the hub.
 */
import { LABEL_ACCOUNT, LABEL_PROVIDER, LABEL_REGION } from '../domain/constants.ts';
import type { ClusterProfile } from '../domain/model/clusterProfile.ts';
import { PROVIDERS, type Provider } from '../domain/model/observedCluster.ts';
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
  signal?: AbortSignal;
}

export interface AnnounceReport {
  /** Profiles the announcement covered. */
  profiles: number;
  published: number;
  failed: PublishFailure[];
  malformed: MalformedObject[];
  /** Set when a signal stopped it before every event was handed to the bus. */
  interrupted?: string;
}

export async function announceInventory(
  ports: { hub: Hub; bus: EventSink },
  request: AnnounceRequest,
): Promise<AnnounceReport> {
  const inventory = await inventoryProfiles(ports.hub, request.options);
  const malformed = [...inventory.malformed];
  const profiles = inventory.profiles.filter((profile) => {
    const labels = profile.metadata.labels ?? {};
    if (
      PROVIDERS.includes(labels[LABEL_PROVIDER] as Provider) &&
      labels[LABEL_ACCOUNT] &&
      labels[LABEL_REGION]
    )
      return true;
    malformed.push({
      namespace: profile.metadata.namespace,
      name: profile.metadata.name,
      reason: `has no ${LABEL_PROVIDER}, ${LABEL_ACCOUNT} and ${LABEL_REGION} labels to say which cluster it is of`,
    });
    return false;
  });
  const chosen = profiles
    .filter((profile) => request.select?.(profile) ?? true)
    .sort((a, b) =>
      `${a.metadata.namespace}/${a.metadata.name}`.localeCompare(
        `${b.metadata.namespace}/${b.metadata.name}`,
      ),
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
  const report: AnnounceReport = { profiles: chosen.length, published: 0, failed: [], malformed };
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
