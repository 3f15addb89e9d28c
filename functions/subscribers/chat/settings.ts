/**
 * The chat notifier's settings: what each environment variable sets, its default and its bounds. A
 * setting that is wrong fails the whole invocation, naming every variable that is wrong.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { z } from 'zod';
import { settingsFromEnvironment } from '../../runtime.ts';

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

/** Lines a message may list at most (CHAT_MAX_LINES). */
const MAX_LINES_ALLOWED = 50;

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
export function chatSettings(env: NodeJS.ProcessEnv = process.env): ChatNotifierSettings {
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
