/**
 * Posting to the webhook: its URL read from a secret (never logged), one post at a time at least
 * `minIntervalMs` apart, 429s waited out as `Retry-After` says, 429s, 5xx and network errors retried with
 * backoff, never past the invocation's deadline.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { getSecret } from '@aws-lambda-powertools/parameters/secrets';
import { cut } from '../../../core/domain/text.ts';
import { logger } from '../../runtime.ts';
import type { ChatNotifierSettings } from './settings.ts';

/** The webhook URL is cached this long: a rotated URL takes effect within it. */
const SECRET_MAX_AGE_SECONDS = 300;
/** A post is not started with less time than this left before the deadline. */
const MIN_REQUEST_MS = 1000;

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);

/**
 * The webhook URL the secret holds (the URL, or JSON `{"url": "…"}`), cached for a few minutes.
 * Errors name the secret, never its value.
 */
export async function webhookUrl(secretId: string): Promise<string> {
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
  // Chat services put the webhook's token in its path or query, never a user and password: one given would be shown by
  // every error of the request.
  if (url.username || url.password)
    throw new Error(`secret ${secretId}: the webhook URL carries a user name or password (user:password@)`);
  return url.href;
}

export type PostOutcome =
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
export function makePoster() {
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
        // Node's fetch errors name the host and port at most; the path or query that holds the token, were one to
        // name it, is not shown.
        const cause = (error as { cause?: { code?: string } }).cause?.code;
        const said = `${(error as Error).name}: ${(error as Error).message}${cause ? ` (${cause})` : ''}`;
        const { pathname, search } = new URL(url);
        answer = [url, `${pathname}${search}`, search, pathname]
          .filter((part) => part.length > 1)
          .reduce((shown, part) => shown.replaceAll(part, '<of the webhook URL>'), said);
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
