/**
 * What is worth a message: the notices a cpsync event makes (a cluster created, deleted, upgraded or
 * changed in health; a scope failed or synced in part), one per cluster whatever its projected copies.
 */
import {
  isEvent,
  type CpsyncEventBridgeEvent,
  type EventFieldChange,
  type ProfileChangeDetail,
} from '../../../events/index.ts';

/** The kinds of notice, in the order a message lists them (the most pressing first). */
export const KINDS = ['scopeFailed', 'scopePartial', 'health', 'deleted', 'upgraded', 'created'] as const;
export type NoticeKind = (typeof KINDS)[number];

/** One line of a message: what it is about (a cluster, a scope) and what happened to it. */
export interface Notice {
  kind: NoticeKind;
  subject: string;
  text: string;
  /**
   * Who it is about, the same for every copy of a cluster's profile (its member id, else its provider id) or
   * for a scope: a notice of a kind is told once per key.
   */
  key: string;
}

const VERSION_FIELD = 'status.version.kubernetes';
const CONDITIONS_PREFIX = 'status.conditions';

/** `value` as a short piece of text (a version, a condition status). */
function shown(value: unknown): string {
  if (value === undefined || value === null) return 'none';
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** Where a cluster is: provider, account, region. */
function whereIs(cluster: ProfileChangeDetail['cluster']): string {
  return [cluster.provider, cluster.account, cluster.region].filter(Boolean).join(' ');
}

/** A condition's status as a change carries it: `"True"`, or `{ status, reason, message }`. */
function conditionStatus(value: unknown): { status: string; reason?: string } {
  if (value && typeof value === 'object' && 'status' in value) {
    const { status, reason } = value as { status?: unknown; reason?: unknown };
    return { status: shown(status), ...(typeof reason === 'string' && reason ? { reason } : {}) };
  }
  return { status: shown(value) };
}

/** "ControlPlaneHealthy is now False (was True): ClusterUnhealthy" for each condition that changed. */
function conditionChanges(detail: ProfileChangeDetail): string[] {
  const byField = new Map<string, EventFieldChange>(detail.changes.map((c) => [c.field, c]));
  return detail.changedFields
    .filter((field) => field.startsWith(CONDITIONS_PREFIX))
    .map((field) => {
      const type = /\[(.+)\]$/.exec(field)?.[1] ?? field;
      const change = byField.get(field);
      // A large event may carry its changes without values: say which condition, not how.
      if (!change || (!('before' in change) && !('after' in change))) return `${type} changed`;
      const before = conditionStatus(change.before);
      const after = conditionStatus(change.after);
      if (!('after' in change)) return `${type} was removed (was ${before.status})`;
      return `${type} is now ${after.status} (was ${before.status})${after.reason ? `: ${after.reason}` : ''}`;
    });
}

/**
 * The notices an event makes: none for what is not worth a message (label or property updates,
 * announcements, complete or orphaned scopes). A scope synced in part is worth one, as is a failed
 * scope: either means clusters of it may be missing from, or stale in, the inventory.
 */
export function noticesOf(event: CpsyncEventBridgeEvent): Notice[] {
  if (
    isEvent(event, 'ClusterProfile Created') ||
    isEvent(event, 'ClusterProfile Updated') ||
    isEvent(event, 'ClusterProfile Deleted')
  ) {
    const detail = event.detail;
    const subject = detail.cluster.displayName || detail.name;
    const where = whereIs(detail.cluster);
    // Every copy of the cluster's profile (a projection) carries its member id and provider id.
    const key = `cluster:${detail.cluster.inventoryMemberId || detail.cluster.providerId}`;
    if (isEvent(event, 'ClusterProfile Created')) {
      const version = event.detail.profile?.status?.version?.kubernetes;
      return [
        {
          kind: 'created',
          subject,
          text: `created (${where}${version ? `, Kubernetes ${version}` : ''})`,
          key,
        },
      ];
    }
    if (isEvent(event, 'ClusterProfile Deleted'))
      return [{ kind: 'deleted', subject, text: `deleted (${where})`, key }];
    const notices: Notice[] = [];
    if (detail.changedFields.includes(VERSION_FIELD)) {
      const change = detail.changes.find((c) => c.field === VERSION_FIELD);
      const text =
        change && ('before' in change || 'after' in change)
          ? `Kubernetes ${shown(change.before)} → ${shown(change.after)}`
          : 'Kubernetes version changed';
      notices.push({ kind: 'upgraded', subject, text: `${text} (${where})`, key });
    }
    const conditions = conditionChanges(detail);
    if (conditions.length > 0)
      notices.push({ kind: 'health', subject, text: `${conditions.join('; ')} (${where})`, key });
    return notices;
  }
  if (isEvent(event, 'Inventory Scope Synced')) {
    const { outcome, scope, error, counts, missing } = event.detail;
    const subject = `${scope.provider}/${scope.account}/${scope.region}`;
    if (outcome === 'failed')
      return [
        {
          kind: 'scopeFailed',
          subject,
          text: `could not be synced: ${error ? `${error.reason}: ${error.message}` : 'no reason given'}`,
          key: `scope:${subject}`,
        },
      ];
    if (outcome === 'partial') {
      const parts = [
        counts.failed > 0 ? `${counts.failed} failed` : '',
        counts.invalid > 0 ? `${counts.invalid} invalid` : '',
        missing && missing.length > 0 ? `not listed: ${missing.join(', ')}` : '',
        error ? `${error.reason}: ${error.message}` : '',
      ].filter(Boolean);
      return [
        {
          kind: 'scopePartial',
          subject,
          text: `synced in part${parts.length ? `: ${parts.join('; ')}` : ''}`,
          key: `scope:${subject}`,
        },
      ];
    }
  }
  return [];
}
