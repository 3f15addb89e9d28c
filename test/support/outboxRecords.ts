/**
 * Records as cpsync stores them in its outbox and intent log: each whole and of the contract's shape, since the stores
 * read every record before they act on it (adapters/outbox/records.ts).
 */
import { randomUUID } from 'node:crypto';
import type { ChangeIntent } from '../../core/sync/changes.ts';
import { buildScopeEvent } from '../../core/sync/events.ts';
import type { CpsyncEvent } from '../../events/types.ts';

const SCOPE = { provider: 'eks', account: '111122223333', region: 'us-east-1' } as const;

/** An `Inventory Scope Synced` event of its own sync, at `time`, with `eventId` when given. */
export function storedEvent(time: string, eventId: string = randomUUID()): CpsyncEvent {
  const event = buildScopeEvent(
    {
      outcome: { scope: SCOPE, kind: 'complete' },
      counts: { listed: 1, created: 0, updated: 0, deleted: 0, unchanged: 1, failed: 0, invalid: 0 },
      durationMs: 10,
    },
    { syncId: randomUUID(), occurredAt: time, scope: SCOPE },
  );
  return { ...event, time, detail: { ...event.detail, eventId } } as CpsyncEvent;
}

/** A change intent of a profile's creation, of its own sync, settled by no one yet. */
export function storedIntent(): ChangeIntent {
  return {
    id: randomUUID().replaceAll('-', ''),
    kind: 'created',
    namespace: 'cluster-inventory',
    name: `cpsync-eks-payments-${randomUUID().slice(0, 8)}`,
    changes: [],
    target: 'fingerprint',
    context: { syncId: randomUUID(), occurredAt: '2026-11-21T10:00:00Z', scope: SCOPE },
    notBefore: '2026-11-21T10:05:00Z',
  };
}
