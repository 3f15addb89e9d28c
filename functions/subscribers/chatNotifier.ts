/**
 * The chat notifier: an example subscriber of cpsync's events, deployable as it is. Rules on the bus
 * deliver to an SQS queue; this function reads the queue in batches and posts to a Slack or Microsoft
 * Teams incoming webhook what deserves a person's attention — clusters that joined or left the
 * inventory, Kubernetes version changes, health changes, scopes that could not be synced. Everything
 * else it receives is counted and let go.
 *
 * - **One message per sync**: the events of one run (`detail.runId`, which every scope of a scheduled full
 *   sync shares, else `detail.syncId`) make one message, its list of clusters bounded (CHAT_MAX_LINES, then
 *   "and N more"). With CHAT_QUIET_SECONDS, a sync's events are gathered across batches in a digest and
 *   posted once the sync has been quiet that long (a flush message to the notifier's own queue,
 *   CHAT_FLUSH_QUEUE_URL, delayed by it); without, each batch's events of a sync are one message.
 * - **One line per cluster**: the copies of a cluster's profile (its projections into other namespaces) are
 *   one cluster — counted and listed once for what happened to it, by its member id (or provider id).
 * - **The webhook URL is a secret** (Secrets Manager: the URL itself, or JSON `{"url": "…"}`), read
 *   through Powertools parameters and cached; it is never logged.
 * - **Polite to the webhook**: one post at a time, at least CHAT_MIN_INTERVAL_MS after the previous one
 *   ended (Slack takes about one message a second per webhook); a 429 is waited out as its
 *   `Retry-After` says, a 429 or 5xx retried with backoff, never past the invocation's remaining time.
 *   What could not be posted is reported as batch item failures: SQS delivers those records again, and
 *   only those.
 * - **One message per event**: the ids of the events a message carried are kept in a DynamoDB table
 *   (per webhook, for CHAT_IDEMPOTENCY_TTL_SECONDS), and an event already told is not told again — a
 *   redelivered record, or the same change published again with the same `detail.eventId`.
 *   At-least-once all the same: a message posted whose record was not written (the function stopped in
 *   between) is posted again when its events come back.
 *
 * Environment: CHAT_WEBHOOK_SECRET (secret id or ARN, required), CHAT_IDEMPOTENCY_TABLE (required),
 * CHAT_FORMAT (`slack`, the default, or `teams`), CHAT_MIN_INTERVAL_MS (1000),
 * CHAT_IDEMPOTENCY_TTL_SECONDS (86400), CHAT_MAX_LINES (20, at most 50), CHAT_QUIET_SECONDS (0, at most
 * 900) and CHAT_FLUSH_QUEUE_URL (required with a quiet time). A setting that is wrong fails
 * the whole invocation, naming it: nothing is lost, SQS delivers the batch again (and in the end to its
 * dead-letter queue).
 */
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  BatchGetCommand,
  BatchWriteCommand,
  DynamoDBDocumentClient,
  type BatchGetCommandInput,
  type BatchWriteCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { getSecret } from '@aws-lambda-powertools/parameters/secrets';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import {
  CpsyncEventError,
  isEvent,
  parseCpsyncEvent,
  type CpsyncEventBridgeEvent,
  type EventFieldChange,
  type ProfileChangeDetail,
} from '../../events/index.ts';
import { z } from 'zod';
import { fitText } from '../../core/domain/properties.ts';
import { cut, printable } from '../../core/domain/text.ts';
import { logger, metrics, settingsFromEnvironment, withPowertools } from '../runtime.ts';

export type ChatFormat = 'slack' | 'teams';

/** How the notifier runs; each has an environment variable or a default (see `chatSettings`). */
export interface ChatNotifierSettings {
  format: ChatFormat;
  /** Secrets Manager id or ARN of the webhook URL. */
  webhookSecret: string;
  /** DynamoDB table of delivered event ids: partition key `id` (string), TTL attribute `expiration`. */
  table: string;
  /** Least time between the end of one post and the start of the next. */
  minIntervalMs: number;
  /** How long a delivered event id is remembered. */
  rememberSeconds: number;
  /** Clusters and scopes listed in one message; the rest are counted ("and N more"). */
  maxLines: number;
  /** Attempts at one message (429, 5xx, network errors) before it is left for redelivery. */
  maxAttempts: number;
  /** First backoff between attempts; doubles each time, with jitter. */
  retryBaseMs: number;
  /** Longest wait for one webhook answer. */
  requestTimeoutMs: number;
  /** Time kept back from the invocation's remaining time for recording deliveries and answering. */
  safetyMarginMs: number;
  /**
   * 0: each batch's events of one sync make a message. Otherwise a sync's events are gathered in a
   * digest across batches, and its message is posted once no event of it came for this long.
   */
  quietSeconds: number;
  /** The notifier's own queue, where a digest's flush is sent, delayed by `quietSeconds`. */
  flushQueueUrl?: string;
}

/** What a test (or another deployment) may set instead of the environment. */
export interface ChatNotifierOverrides extends Partial<ChatNotifierSettings> {
  documents?: DynamoDBDocumentClient;
  sqs?: SQSClient;
}

const DEFAULTS = {
  format: 'slack',
  minIntervalMs: 1000,
  rememberSeconds: 24 * 60 * 60,
  maxLines: 20,
  maxAttempts: 4,
  retryBaseMs: 1000,
  requestTimeoutMs: 10_000,
  safetyMarginMs: 3000,
} as const;

/** Limits of the chat services: Slack's section text; a Teams message (28 KB) and a Slack one, in bytes. */
const SLACK_SECTION_CHARS = 3000;
const TEAMS_MAX_BYTES = 27 * 1024;
const SLACK_MAX_BYTES = 36 * 1024;
const MAX_LINE_CHARS = 300;
const MAX_LINES_ALLOWED = 50;
/** The webhook URL is cached this long: a rotated URL takes effect within it. */
const SECRET_MAX_AGE_SECONDS = 300;
/** A post is not started with less time than this left before the deadline. */
const MIN_REQUEST_MS = 1000;

/** A required variable. */
const required = z.string({ error: 'is not set' }).trim().min(1, 'is not set');

/** An optional whole number within [min, max]; `fallback` when unset. */
function wholeNumber(fallback: number, min: number, max: number) {
  return z
    .string()
    .trim()
    .optional()
    .transform((text, context) => {
      if (!text) return fallback;
      const value = Number(text);
      if (Number.isInteger(value) && value >= min && value <= max) return value;
      context.addIssue({
        code: 'custom',
        message: `is ${JSON.stringify(text)}, not a whole number from ${min} to ${max}`,
      });
      return z.NEVER;
    });
}

/** The environment variables the notifier reads. */
const Environment = z
  .object({
    CHAT_FORMAT: z
      .string()
      .optional()
      .transform((text, context): ChatFormat => {
        const format = (text?.trim() || DEFAULTS.format).toLowerCase();
        if (format === 'slack' || format === 'teams') return format;
        context.addIssue({ code: 'custom', message: `is ${JSON.stringify(text)}, not slack or teams` });
        return z.NEVER;
      }),
    CHAT_WEBHOOK_SECRET: required,
    CHAT_IDEMPOTENCY_TABLE: required,
    CHAT_MIN_INTERVAL_MS: wholeNumber(DEFAULTS.minIntervalMs, 0, 60_000),
    CHAT_IDEMPOTENCY_TTL_SECONDS: wholeNumber(DEFAULTS.rememberSeconds, 60, 30 * 24 * 60 * 60),
    CHAT_MAX_LINES: wholeNumber(DEFAULTS.maxLines, 1, MAX_LINES_ALLOWED),
    // SQS delays a message 15 minutes at most.
    CHAT_QUIET_SECONDS: wholeNumber(0, 0, 900),
    CHAT_FLUSH_QUEUE_URL: z.string().trim().optional(),
  })
  .superRefine((e, context) => {
    if (e.CHAT_QUIET_SECONDS > 0 && !e.CHAT_FLUSH_QUEUE_URL)
      context.addIssue({
        code: 'custom',
        path: ['CHAT_FLUSH_QUEUE_URL'],
        message: 'is not set (CHAT_QUIET_SECONDS gathers each sync in a digest, flushed through this queue)',
      });
  });

/** The settings the environment gives; throws naming every variable that is wrong. */
function chatSettings(env: NodeJS.ProcessEnv = process.env): ChatNotifierSettings {
  const e = settingsFromEnvironment(Environment, 'chat notifier configuration', env);
  return {
    format: e.CHAT_FORMAT,
    webhookSecret: e.CHAT_WEBHOOK_SECRET,
    table: e.CHAT_IDEMPOTENCY_TABLE,
    minIntervalMs: e.CHAT_MIN_INTERVAL_MS,
    rememberSeconds: e.CHAT_IDEMPOTENCY_TTL_SECONDS,
    maxLines: e.CHAT_MAX_LINES,
    maxAttempts: DEFAULTS.maxAttempts,
    retryBaseMs: DEFAULTS.retryBaseMs,
    requestTimeoutMs: DEFAULTS.requestTimeoutMs,
    safetyMarginMs: DEFAULTS.safetyMarginMs,
    quietSeconds: e.CHAT_QUIET_SECONDS,
    ...(e.CHAT_FLUSH_QUEUE_URL ? { flushQueueUrl: e.CHAT_FLUSH_QUEUE_URL } : {}),
  };
}

// ---------------------------------------------------------------------------------------------------
// What is worth a message

/** The kinds of notice, in the order a message lists them (the most pressing first). */
const KINDS = ['scopeFailed', 'scopePartial', 'health', 'deleted', 'upgraded', 'created'] as const;
type NoticeKind = (typeof KINDS)[number];

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
function noticesOf(event: CpsyncEventBridgeEvent): Notice[] {
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

// ---------------------------------------------------------------------------------------------------
// The message

/** A message, whatever the chat: a title that counts everything, the first lines, how many more. */
export interface ChatMessage {
  title: string;
  lines: Array<{ subject: string; text: string }>;
  more: number;
  footer: string;
}

const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;

/** What a message tells of one sync: how many notices of each kind, and the first lines of each. */
export interface Tally {
  counts: Partial<Record<NoticeKind, number>>;
  /** Per kind, its first `maxLines` notices (a message lists at most that many in all). */
  lines: Partial<Record<NoticeKind, Array<{ subject: string; text: string }>>>;
  /**
   * Per kind, the keys told (hashed: a digest of thousands of clusters stays small), so that a cluster whose
   * copies arrive in several batches is still told once. Absent in digests written before it was kept.
   */
  told?: Partial<Record<NoticeKind, string[]>>;
}

/** A notice's key as a tally keeps it: 66 bits of its hash, in 11 characters. */
const toldKey = (key: string) => createHash('sha256').update(key).digest('base64url').slice(0, 11);

/** `notices` added to `tally` (a new one when none is given), each key told once per kind. */
function addToTally(
  notices: readonly Notice[],
  maxLines: number,
  tally: Tally = { counts: {}, lines: {} },
): Tally {
  const told = new Map<NoticeKind, Set<string>>();
  const toldOf = (kind: NoticeKind) => {
    let keys = told.get(kind);
    if (!keys) told.set(kind, (keys = new Set(tally.told?.[kind] ?? [])));
    return keys;
  };
  for (const notice of notices) {
    const keys = toldOf(notice.kind);
    const key = toldKey(notice.key);
    if (keys.has(key)) continue;
    keys.add(key);
    tally.counts[notice.kind] = (tally.counts[notice.kind] ?? 0) + 1;
    const lines = (tally.lines[notice.kind] ??= []);
    if (lines.length < maxLines) lines.push({ subject: notice.subject, text: notice.text });
  }
  tally.told = { ...tally.told };
  for (const [kind, keys] of told) tally.told[kind] = [...keys];
  return tally;
}

/** The message about a sync's tally. */
function composeMessage(
  tally: Tally,
  about: { syncId: string; account: string; region: string },
  maxLines: number,
): ChatMessage {
  const count = (kind: NoticeKind) => tally.counts[kind] ?? 0;
  // The first of the cluster counts names the noun: "3 clusters created, 2 upgraded, 1 deleted".
  const clusterCounts = (
    [
      ['created', 'created'],
      ['upgraded', 'upgraded'],
      ['deleted', 'deleted'],
    ] as const
  )
    .map(([kind, verb]) => [count(kind), verb] as const)
    .filter(([n]) => n > 0)
    .map(([n, verb], i) => (i === 0 ? `${plural(n, 'cluster', 'clusters')} ${verb}` : `${n} ${verb}`));
  const parts = [
    ...clusterCounts,
    ...(count('health') > 0 ? [plural(count('health'), 'health change', 'health changes')] : []),
    ...(count('scopeFailed') > 0 ? [`${plural(count('scopeFailed'), 'scope', 'scopes')} failed`] : []),
    ...(count('scopePartial') > 0
      ? [`${plural(count('scopePartial'), 'scope', 'scopes')} synced in part`]
      : []),
  ];
  const total = KINDS.reduce((n, kind) => n + count(kind), 0);
  const ordered = KINDS.flatMap((kind) => tally.lines[kind] ?? []).slice(0, maxLines);
  // Cloud strings are shown as text: a newline, a bidi override or an escape in a name shows as `\u{…}`.
  return {
    title: `cpsync: ${parts.join(', ')}`,
    lines: ordered.map((n) => {
      const subject = fitText(printable(n.subject), 100);
      return { subject, text: fitText(printable(n.text), MAX_LINE_CHARS - Array.from(subject).length) };
    }),
    more: Math.max(0, total - ordered.length),
    footer: printable(`sync ${fitText(about.syncId, 200)} · hub account ${about.account} ${about.region}`),
  };
}

/** Text as Slack's mrkdwn takes it: `&`, `<` and `>` escaped, so nothing reads as a link or mention. */
const slackText = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** Lines of `lines` grouped so that no group holds more than `max` characters. */
function groups<T>(lines: readonly T[], size: (line: T) => number, max: number): T[][] {
  const grouped: T[][] = [];
  let used = 0;
  for (const line of lines) {
    const last = grouped.at(-1);
    if (last && used + size(line) <= max) {
      last.push(line);
      used += size(line);
    } else {
      grouped.push([line]);
      used = size(line);
    }
  }
  return grouped;
}

/**
 * A Slack incoming-webhook message. Cloud strings go only into rich-text `text` elements and
 * `plain_text` objects, which Slack shows as they are: no mrkdwn formatting, link, mention
 * (`<!channel>`) or emoji code in a cluster's name or a cloud's message acts. `text` (the notification's
 * and the fallback's) is the title, made of counts only.
 */
function slackPayload(message: ChatMessage): { text: string; blocks: object[] } {
  const item = (line: ChatMessage['lines'][number]) => ({
    type: 'rich_text_section',
    elements: [
      { type: 'text', text: line.subject, style: { bold: true } },
      { type: 'text', text: ` ${line.text}` },
    ],
  });
  const lists = groups(message.lines, (l) => l.subject.length + l.text.length + 1, SLACK_SECTION_CHARS);
  return {
    text: slackText(message.title),
    blocks: [
      { type: 'section', text: { type: 'plain_text', text: message.title, emoji: false } },
      ...lists.map((lines) => ({
        type: 'rich_text',
        elements: [{ type: 'rich_text_list', style: 'bullet', elements: lines.map(item) }],
      })),
      ...(message.more > 0
        ? [{ type: 'section', text: { type: 'plain_text', text: `…and ${message.more} more`, emoji: false } }]
        : []),
      { type: 'context', elements: [{ type: 'plain_text', text: message.footer, emoji: false }] },
    ],
  };
}

/**
 * A Teams message (Workflows or incoming webhook): one Adaptive Card. Cloud strings go only into the
 * `TextRun`s of RichTextBlocks, which Teams does not read as markdown: no link, emphasis or list in a
 * cluster's name acts. The title and "and N more" (counts only) are TextBlocks.
 */
function teamsPayload(message: ChatMessage): object {
  const body = [
    { type: 'TextBlock', text: message.title, weight: 'Bolder', size: 'Medium', wrap: true },
    ...message.lines.map((l) => ({
      type: 'RichTextBlock',
      inlines: [
        { type: 'TextRun', text: l.subject, weight: 'Bolder' },
        { type: 'TextRun', text: ` ${l.text}` },
      ],
      spacing: 'Small',
    })),
    ...(message.more > 0
      ? [{ type: 'TextBlock', text: `…and ${message.more} more`, wrap: true, spacing: 'Small' }]
      : []),
    {
      type: 'RichTextBlock',
      inlines: [{ type: 'TextRun', text: message.footer, isSubtle: true, size: 'Small' }],
    },
  ];
  return {
    type: 'message',
    attachments: [
      {
        contentType: 'application/vnd.microsoft.card.adaptive',
        contentUrl: null,
        content: {
          type: 'AdaptiveCard',
          version: '1.4',
          $schema: 'http://adaptivecards.io/schemas/adaptive-card.json',
          body,
          msteams: { width: 'Full' },
        },
      },
    ],
  };
}

/**
 * The payload of `message` in `format`, within the chat's size limit in bytes (UTF-8, as posted): lines
 * are moved from the end into "and N more" until it fits (a card of 50 lines of CJK names is over
 * 40 KB; Teams refuses more than 28 KB).
 */
export function chatPayload(message: ChatMessage, format: ChatFormat): object {
  const render = format === 'teams' ? teamsPayload : slackPayload;
  const limit = format === 'teams' ? TEAMS_MAX_BYTES : SLACK_MAX_BYTES;
  let fitted = message;
  for (;;) {
    const payload = render(fitted);
    if (Buffer.byteLength(JSON.stringify(payload), 'utf8') <= limit || fitted.lines.length === 0)
      return payload;
    fitted = { ...fitted, lines: fitted.lines.slice(0, -1), more: fitted.more + 1 };
  }
}

// ---------------------------------------------------------------------------------------------------
// The webhook

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);

/**
 * The webhook URL the secret holds (the URL, or JSON `{"url": "…"}`), cached for a few minutes.
 * Errors name the secret, never its value.
 */
async function webhookUrl(secretId: string): Promise<string> {
  const value = await getSecret(secretId, { maxAge: SECRET_MAX_AGE_SECONDS });
  let text = typeof value === 'string' ? value.trim() : '';
  if (text.startsWith('{')) {
    try {
      const url = (JSON.parse(text) as { url?: unknown }).url;
      text = typeof url === 'string' ? url.trim() : '';
    } catch {
      text = '';
    }
  }
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new Error(`secret ${secretId}: holds no webhook URL (a URL, or JSON {"url": "…"})`);
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && LOOPBACK.has(url.hostname)))
    throw new Error(`secret ${secretId}: the webhook URL is not https`);
  return url.href;
}

type PostOutcome =
  | { posted: true; attempts: number }
  /** `stop`: the webhook is unavailable (or time is up), so later messages of the batch are not tried. */
  | { posted: false; attempts: number; reason: string; stop: boolean };

/** Milliseconds a 429 asks to wait: `Retry-After` in seconds or as an HTTP date. */
function retryAfterMs(header: string | null): number | undefined {
  if (!header) return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

/** Waits until `time` (epoch ms); `setTimeout` may wake a little early, so it looks at the clock. */
async function waitUntil(time: number): Promise<void> {
  for (let left = time - Date.now(); left > 0; left = time - Date.now()) await sleep(left);
}

/**
 * Posts messages one at a time to a webhook, at least `minIntervalMs` after the previous post ended
 * (across invocations of the container, too), retrying 429, 5xx and network errors with backoff and
 * `Retry-After`, and giving up rather than going past `deadline`.
 */
function makePoster() {
  let lastEnded = 0;
  return async (
    url: string,
    payload: object,
    settings: ChatNotifierSettings,
    deadline: number,
  ): Promise<PostOutcome> => {
    const body = JSON.stringify(payload);
    for (let attempt = 1; ; attempt++) {
      const start = Math.max(Date.now(), lastEnded + settings.minIntervalMs);
      if (deadline - start < MIN_REQUEST_MS)
        return {
          posted: false,
          attempts: attempt - 1,
          reason: 'no time left in this invocation',
          stop: true,
        };
      await waitUntil(start);
      let status = 0;
      let answer: string;
      let wait: number | undefined;
      try {
        const response = await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body,
          signal: AbortSignal.timeout(Math.min(settings.requestTimeoutMs, deadline - Date.now())),
        });
        status = response.status;
        answer = cut(await response.text(), 200);
        if (status === 429) wait = retryAfterMs(response.headers.get('retry-after'));
      } catch (error) {
        // Node's fetch errors name the host and port at most, never the path that holds the token.
        const cause = (error as { cause?: { code?: string } }).cause?.code;
        answer = `${(error as Error).name}: ${(error as Error).message}${cause ? ` (${cause})` : ''}`;
      } finally {
        lastEnded = Date.now();
      }
      if (status >= 200 && status < 300) return { posted: true, attempts: attempt };
      const retryable = status === 0 || status === 429 || status >= 500;
      const reason = `${status ? `the webhook answered ${status}` : 'the webhook did not answer'}: ${answer}`;
      if (!retryable) return { posted: false, attempts: attempt, reason, stop: false };
      if (attempt >= settings.maxAttempts) return { posted: false, attempts: attempt, reason, stop: true };
      const backoff = settings.retryBaseMs * 2 ** (attempt - 1) * (0.5 + Math.random() / 2);
      const resume = Date.now() + (wait ?? backoff);
      if (deadline - resume < MIN_REQUEST_MS)
        return { posted: false, attempts: attempt, reason: `${reason} (no time left to retry)`, stop: true };
      logger.info('webhook busy: waiting before the next attempt', {
        status,
        waitMs: Math.round(resume - Date.now()),
      });
      await waitUntil(resume);
    }
  };
}

// ---------------------------------------------------------------------------------------------------
// Delivered event ids

/** Runs a DynamoDB batch call until nothing is left unprocessed (a few rounds, with backoff). */
async function untilProcessed<T>(
  what: string,
  first: T,
  call: (request: T) => Promise<T | undefined>,
): Promise<void> {
  let request: T | undefined = first;
  for (let round = 0; request; round++) {
    if (round > 0) await sleep(50 * 2 ** round);
    if (round === 6) throw new Error(`${what}: DynamoDB left items unprocessed after ${round} rounds`);
    request = await call(request);
  }
}

/** The ids of `keys` recorded (and not yet expired) in `table`. */
async function recordedKeys(
  documents: DynamoDBDocumentClient,
  table: string,
  keys: readonly string[],
): Promise<Set<string>> {
  const found = new Set<string>();
  const now = Math.floor(Date.now() / 1000);
  for (let i = 0; i < keys.length; i += 100) {
    const first: BatchGetCommandInput['RequestItems'] = {
      [table]: { Keys: keys.slice(i, i + 100).map((id) => ({ id })), ConsistentRead: true },
    };
    await untilProcessed('reading delivered events', first, async (RequestItems) => {
      const answer = await documents.send(new BatchGetCommand({ RequestItems }));
      for (const item of answer.Responses?.[table] ?? [])
        // TTL deletes expired items late; an expired one no longer counts.
        if (typeof item.id === 'string' && !(Number(item.expiration) <= now)) found.add(item.id);
      const left = answer.UnprocessedKeys?.[table];
      return left?.Keys?.length ? { [table]: left } : undefined;
    });
  }
  return found;
}

/** Records `keys` as delivered in `table`, each expiring after `seconds`. */
async function recordKeys(
  documents: DynamoDBDocumentClient,
  table: string,
  keys: readonly string[],
  seconds: number,
  syncId: string,
): Promise<void> {
  const expiration = Math.floor(Date.now() / 1000) + seconds;
  for (let i = 0; i < keys.length; i += 25) {
    const first: BatchWriteCommandInput['RequestItems'] = {
      [table]: keys.slice(i, i + 25).map((id) => ({ PutRequest: { Item: { id, expiration, syncId } } })),
    };
    await untilProcessed('recording delivered events', first, async (RequestItems) => {
      const answer = await documents.send(new BatchWriteCommand({ RequestItems }));
      const left = answer.UnprocessedItems?.[table];
      return left?.length ? { [table]: left } : undefined;
    });
  }
}

// ---------------------------------------------------------------------------------------------------
// Digests: one message per sync across batches

/** The body of a flush message: the digest whose quiet time may be over. */
const FLUSH_KEY = 'cpsyncChatFlush';
/** A digest item: the live tally (still gathering) and the one being posted (`outgoing`), if any. */
interface DigestItem {
  id: string;
  syncId: string;
  account: string;
  region: string;
  version: number;
  lastSeen: number;
  live?: string;
  outgoing?: string;
}

/** The digest a flush record names; undefined for any other record (a cpsync event). */
function flushOf(body: string): string | undefined {
  if (!body.includes(FLUSH_KEY)) return undefined;
  try {
    const digest = (JSON.parse(body) as Record<string, { digest?: unknown } | undefined>)[FLUSH_KEY]?.digest;
    return typeof digest === 'string' && digest.startsWith('digest#') ? digest : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Adds a sync group's notices to its digest (read, merged, written at the version read: another
 * writer first means another try), then sends the digest's flush, delayed by the quiet time, and
 * records the events as told. A flush that comes while events still arrive finds the digest not
 * quiet and leaves it to the flush of the last batch.
 */
async function gather(
  documents: DynamoDBDocumentClient,
  sqs: SQSClient | undefined,
  settings: ChatNotifierSettings,
  keyOf: (eventId: string) => string,
  channel: string,
  group: SyncGroup,
  notices: readonly Notice[],
): Promise<void> {
  const id = `digest#${channel}#${group.syncId}`;
  const expiration = Math.floor(Date.now() / 1000) + settings.rememberSeconds;
  for (let attempt = 1; ; attempt++) {
    const item = (
      await documents.send(new GetCommand({ TableName: settings.table, Key: { id }, ConsistentRead: true }))
    ).Item as DigestItem | undefined;
    const live = item?.live ? (JSON.parse(item.live) as Tally) : undefined;
    const tally = addToTally(notices, settings.maxLines, live);
    try {
      await documents.send(
        new UpdateCommand({
          TableName: settings.table,
          Key: { id },
          UpdateExpression:
            'SET live = :live, lastSeen = :now, syncId = :sync, account = :account, #region = :region, expiration = :expiration, version = :next',
          ConditionExpression: item ? 'version = :version' : 'attribute_not_exists(id)',
          ExpressionAttributeNames: { '#region': 'region' },
          ExpressionAttributeValues: {
            ':live': JSON.stringify(tally),
            ':now': Date.now(),
            ':sync': group.syncId,
            ':account': group.account,
            ':region': group.region,
            ':expiration': expiration,
            ':next': (item?.version ?? 0) + 1,
            ...(item ? { ':version': item.version } : {}),
          },
        }),
      );
      break;
    } catch (error) {
      if ((error as Error).name !== 'ConditionalCheckFailedException' || attempt >= 8) throw error;
    }
  }
  await sqs!.send(
    new SendMessageCommand({
      QueueUrl: settings.flushQueueUrl,
      DelaySeconds: settings.quietSeconds,
      MessageBody: JSON.stringify({ [FLUSH_KEY]: { digest: id } }),
    }),
  );
  await recordGroup(documents, settings, keyOf, group);
}

/** Records a sync group's events as told (gathered or posted). */
function recordGroup(
  documents: DynamoDBDocumentClient,
  settings: ChatNotifierSettings,
  keyOf: (eventId: string) => string,
  group: SyncGroup,
): Promise<void> {
  return recordKeys(
    documents,
    settings.table,
    [...group.events.keys()].map(keyOf),
    settings.rememberSeconds,
    group.syncId,
  );
}

/**
 * A flush: posts what a digest holds once its sync has been quiet for `quietSeconds`. The live tally
 * is first claimed — moved to `outgoing` at the version read — so events that arrive meanwhile start a
 * new tally (a message of their own, later); `outgoing` goes once posted, and a flush that finds it
 * (an earlier post failed) posts it again. `ok: false` leaves the flush record for redelivery.
 */
async function flushDigest(
  documents: DynamoDBDocumentClient,
  settings: ChatNotifierSettings,
  id: string,
  channel: string,
  send: (payload: object) => Promise<PostOutcome>,
): Promise<{ ok: boolean; posted: boolean; stop: boolean }> {
  // Digests of another webhook (the secret was rotated) are not this one's to post.
  if (!id.startsWith(`digest#${channel}#`)) return { ok: true, posted: false, stop: false };
  const get = async () =>
    (await documents.send(new GetCommand({ TableName: settings.table, Key: { id }, ConsistentRead: true })))
      .Item as DigestItem | undefined;
  let item = await get();
  if (!item) return { ok: true, posted: false, stop: false };
  let posted = false;
  const postOutgoing = async (claimed: DigestItem): Promise<{ ok: boolean; stop: boolean }> => {
    const tally = JSON.parse(claimed.outgoing!) as Tally;
    const message = composeMessage(tally, claimed, settings.maxLines);
    const outcome = await send(chatPayload(message, settings.format));
    if (!outcome.posted) {
      logger.warn('digest not posted: its flush comes back', {
        syncId: claimed.syncId,
        reason: outcome.reason,
      });
      return { ok: false, stop: outcome.stop };
    }
    posted = true;
    logger.info('message posted', {
      syncId: claimed.syncId,
      title: message.title,
      attempts: outcome.attempts,
    });
    await documents
      .send(
        new UpdateCommand({
          TableName: settings.table,
          Key: { id },
          UpdateExpression: 'REMOVE outgoing',
          ConditionExpression: 'outgoing = :outgoing',
          ExpressionAttributeValues: { ':outgoing': claimed.outgoing },
        }),
      )
      .catch((error: Error) => {
        // Posted, not marked: posted again by a later flush (at-least-once).
        if (error.name !== 'ConditionalCheckFailedException') throw error;
      });
    return { ok: true, stop: false };
  };
  if (item.outgoing) {
    const retried = await postOutgoing(item);
    if (!retried.ok) return { ...retried, posted };
    item = await get();
    if (!item) return { ok: true, posted, stop: false };
  }
  // Not quiet yet: the flush sent with the last batch comes later. Nothing gathered: nothing to say.
  const quietSince = Date.now() - item.lastSeen;
  if (!item.live || quietSince < settings.quietSeconds * 1000 - 1000)
    return { ok: true, posted, stop: false };
  try {
    await documents.send(
      new UpdateCommand({
        TableName: settings.table,
        Key: { id },
        UpdateExpression: 'SET outgoing = :live, version = :next REMOVE live',
        ConditionExpression: 'version = :version AND attribute_not_exists(outgoing)',
        ExpressionAttributeValues: {
          ':live': item.live,
          ':version': item.version,
          ':next': item.version + 1,
        },
      }),
    );
  } catch (error) {
    // Another batch or flush came first: its own flush follows.
    if ((error as Error).name === 'ConditionalCheckFailedException') return { ok: true, posted, stop: false };
    throw error;
  }
  const sent = await postOutgoing({ ...item, outgoing: item.live });
  return { ...sent, posted };
}

// ---------------------------------------------------------------------------------------------------
// The handler

/** The events of one sync in a batch, and which records carry each. */
interface SyncGroup {
  syncId: string;
  account: string;
  region: string;
  /** By event id: its notices and the message ids of the records that carry it. */
  events: Map<string, { notices: Notice[]; records: string[] }>;
}

/**
 * The chat notifier's handler: an SQS batch of cpsync events (EventBridge rule → SQS → this function)
 * in, a partial batch response out. `overrides` replace settings the environment would give.
 */
export function makeChatNotifier(overrides: ChatNotifierOverrides = {}) {
  const { documents: givenDocuments, sqs: givenSqs, ...settingOverrides } = overrides;
  let documents = givenDocuments;
  let sqs = givenSqs;
  const post = makePoster();

  return withPowertools(async (event: SQSEvent, context: Context): Promise<SQSBatchResponse> => {
    const deadline = Date.now() + context.getRemainingTimeInMillis();
    const settings = { ...chatSettings(), ...settingOverrides };
    documents ??= DynamoDBDocumentClient.from(new DynamoDBClient({}));
    if (settings.quietSeconds > 0) sqs ??= new SQSClient({});
    const failed = new Set<string>();
    let ignored = 0;
    let duplicates = 0;
    let gathered = 0;
    /** Digests whose quiet time may be over (a flush each), and the records that asked. */
    const flushes = new Map<string, string[]>();

    // Read every record; one that is not a cpsync event fails alone.
    const groups = new Map<string, SyncGroup>();
    const byEventId = new Map<string, { notices: Notice[]; records: string[] }>();
    for (const record of event.Records) {
      const digest = flushOf(record.body);
      if (digest) {
        flushes.set(digest, [...(flushes.get(digest) ?? []), record.messageId]);
        continue;
      }
      let parsed: CpsyncEventBridgeEvent;
      try {
        parsed = parseCpsyncEvent(record.body);
      } catch (error) {
        if (!(error instanceof CpsyncEventError)) throw error;
        logger.warn('not a cpsync event this notifier reads: the record fails', {
          messageId: record.messageId,
          problems: error.problems,
        });
        failed.add(record.messageId);
        continue;
      }
      const notices = noticesOf(parsed);
      if (notices.length === 0) {
        ignored++;
        continue;
      }
      // Every scope of a scheduled run is its own sync: the run (`runId`) is what one message tells.
      const { eventId } = parsed.detail;
      const syncId = ('runId' in parsed.detail && parsed.detail.runId) || parsed.detail.syncId;
      const known = byEventId.get(eventId);
      if (known) {
        // The same event twice in one batch: one line, and the records share its fate.
        known.records.push(record.messageId);
        duplicates++;
        continue;
      }
      let group = groups.get(syncId);
      if (!group) {
        group = { syncId, account: parsed.account, region: parsed.region, events: new Map() };
        groups.set(syncId, group);
      }
      const entry = { notices, records: [record.messageId] };
      group.events.set(eventId, entry);
      byEventId.set(eventId, entry);
    }

    const failGroups = (list: Iterable<SyncGroup>) => {
      for (const group of list)
        for (const { records } of group.events.values()) for (const id of records) failed.add(id);
    };
    let posted = 0;
    let notified = 0;
    /** Groups settled: posted, or nothing left to post. */
    const settled = new Set<SyncGroup>();
    if (groups.size > 0 || flushes.size > 0) {
      try {
        const url = await webhookUrl(settings.webhookSecret);
        // Ids are kept per webhook, so notifiers sharing a table do not silence each other.
        const channel = createHash('sha256').update(url).digest('hex').slice(0, 16);
        const keyOf = (eventId: string) => `${channel}#${eventId}`;
        const allIds = [...groups.values()].flatMap((g) => [...g.events.keys()]);
        const delivered = await recordedKeys(documents, settings.table, allIds.map(keyOf));
        let stopped = false;
        for (const group of groups.values()) {
          for (const [eventId, { records }] of group.events)
            if (delivered.has(keyOf(eventId))) {
              duplicates += records.length;
              group.events.delete(eventId);
            }
          if (group.events.size === 0) {
            settled.add(group);
            continue;
          }
          if (stopped) {
            failGroups([group]);
            continue;
          }
          const notices = [...group.events.values()].flatMap((e) => e.notices);
          if (settings.quietSeconds > 0) {
            // Gathered across batches: the message goes once the sync has been quiet for a while.
            await gather(documents, sqs, settings, keyOf, channel, group, notices);
            settled.add(group);
            gathered += group.events.size;
            continue;
          }
          const message = composeMessage(addToTally(notices, settings.maxLines), group, settings.maxLines);
          const payload = chatPayload(message, settings.format);
          const outcome = await post(url, payload, settings, deadline - settings.safetyMarginMs);
          if (!outcome.posted) {
            logger.warn('message not posted: its records fail and come back', {
              syncId: group.syncId,
              events: group.events.size,
              attempts: outcome.attempts,
              reason: outcome.reason,
            });
            failGroups([group]);
            stopped ||= outcome.stop;
            continue;
          }
          settled.add(group);
          posted++;
          notified += group.events.size;
          logger.info('message posted', {
            syncId: group.syncId,
            events: group.events.size,
            title: message.title,
            attempts: outcome.attempts,
          });
          // Posted but not recorded (this fails, or the function stops first) means the message may be
          // posted again should these events come back: at-least-once. The records still succeed, so
          // SQS does not bring them back for that.
          try {
            await recordGroup(documents, settings, keyOf, group);
          } catch (error) {
            logger.warn('message posted, its events not recorded as delivered', {
              syncId: group.syncId,
              error: (error as Error).message,
            });
          }
        }
        // Digests whose sync has been quiet long enough: one message each.
        for (const [digest, records] of flushes) {
          if (stopped) {
            for (const id of records) failed.add(id);
            continue;
          }
          const outcome = await flushDigest(documents, settings, digest, channel, (payload) =>
            post(url, payload, settings, deadline - settings.safetyMarginMs),
          );
          if (outcome.posted) posted++;
          if (!outcome.ok) {
            for (const id of records) failed.add(id);
            stopped ||= outcome.stop;
          }
          flushes.delete(digest);
        }
      } catch (error) {
        // The secret or the table could not be read: every message not yet posted is left for redelivery.
        logger.error('chat notifier could not go on: the records not yet notified fail', {
          error: (error as Error).message,
        });
        failGroups([...groups.values()].filter((g) => !settled.has(g)));
        for (const records of flushes.values()) for (const id of records) failed.add(id);
      }
    }

    metrics.addMetric('MessagesPosted', MetricUnit.Count, posted);
    metrics.addMetric('EventsNotified', MetricUnit.Count, notified);
    metrics.addMetric('EventsIgnored', MetricUnit.Count, ignored);
    metrics.addMetric('DuplicateEvents', MetricUnit.Count, duplicates);
    metrics.addMetric('EventsGathered', MetricUnit.Count, gathered);
    return {
      batchItemFailures: event.Records.filter((r) => failed.has(r.messageId)).map((r) => ({
        itemIdentifier: r.messageId,
      })),
    };
  });
}

export const handler = makeChatNotifier();
