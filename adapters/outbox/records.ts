/**
 * What a stored outbox record must be before cpsync acts on it. The outbox and the intent log are files in a
 * directory (or items of a DynamoDB table) that anyone with access to it can edit, and that another version of cpsync
 * may have written: a record of another shape is set aside and reported (quarantined), never read as what it is not.
 * Every record is checked, not only its id, so that one bad record can never stop the settling or the publication
 * of every other.
 */
import { z } from 'zod';
import { CpsyncEventError, parseCpsyncEvent } from '../../events/parse.ts';

/** An intent's id: 32 hex digits (a hash of its sync, its part and its profile). */
export const INTENT_ID = /^[0-9a-f]{32}$/;
/** An event's id: a UUID's shape (deterministic, from its content). */
export const EVENT_ID = /^[0-9a-f-]{36}$/;

const dateTime = z.string().refine((value) => !Number.isNaN(Date.parse(value)), 'is not a date-time');

/** A change intent (core/sync/changes.ts `ChangeIntent`): the fields recovery reads, each of its type. */
const ChangeIntentRecord = z.looseObject({
  id: z.string().regex(INTENT_ID, 'is not a cpsync intent id'),
  kind: z.enum(['created', 'updated', 'deleted']),
  namespace: z.string().min(1),
  name: z.string().min(1),
  changes: z.array(z.looseObject({ field: z.string() })),
  target: z.string(),
  objectTarget: z.string().optional(),
  previousResourceVersion: z.string().optional(),
  previous: z
    .looseObject({ metadata: z.looseObject({ name: z.string(), namespace: z.string() }) })
    .optional(),
  context: z.looseObject({
    syncId: z.string().min(1),
    runId: z.string().optional(),
    occurredAt: dateTime,
    scope: z.looseObject({ provider: z.string(), account: z.string(), region: z.string() }),
    source: z.string().optional(),
  }),
  notBefore: dateTime,
  holder: z.string().optional(),
  lease: z.string().optional(),
  givenUpAt: dateTime.optional(),
  replaces: z.string().optional(),
});

/** The first thing wrong with `value` as a stored intent, naming the field; undefined when it is one. */
export function intentProblem(value: unknown): string | undefined {
  const result = ChangeIntentRecord.safeParse(value);
  if (result.success) {
    // A deletion is announced with the profile as it was: an intent of one without it stands for nothing to say.
    if (result.data.kind === 'deleted' && result.data.previous === undefined) return 'previous: is missing';
    return undefined;
  }
  const issue = result.error.issues[0]!;
  return `${issue.path.length > 0 ? `${issue.path.join('.')}: ` : ''}${issue.message}`;
}

/**
 * The first thing wrong with `value` as a stored event (the outbox's form of a cpsync event: `detailType`, not
 * EventBridge's `detail-type`), its detail read against the contract of its detail-type; undefined when it is one.
 */
export function outboxEventProblem(value: unknown): string | undefined {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return 'is not an object';
  const event = value as Record<string, unknown>;
  const eventId = (event.detail as { eventId?: unknown } | null | undefined)?.eventId;
  if (typeof eventId !== 'string' || !EVENT_ID.test(eventId))
    return 'detail.eventId: is not a cpsync event id';
  try {
    parseCpsyncEvent({
      version: '0',
      id: eventId,
      account: '',
      region: '',
      source: event.source,
      time: event.time,
      resources: event.resources,
      'detail-type': event.detailType,
      detail: event.detail,
    });
    return undefined;
  } catch (error) {
    if (error instanceof CpsyncEventError) return error.problems[0] ?? error.message;
    throw error;
  }
}
