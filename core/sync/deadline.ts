import { CpsyncError } from '../domain/errors.ts';

/** Work that did not finish within its deadline. */
export class DeadlineError extends CpsyncError {
  readonly timeoutMillis: number;
  constructor(what: string, timeoutMillis: number) {
    super(`${what}: no answer within ${Math.round(timeoutMillis / 100) / 10} s`);
    this.timeoutMillis = timeoutMillis;
  }
}

/** Work stopped because the run was (SIGINT, SIGTERM). */
export class InterruptedError extends CpsyncError {}

/**
 * Runs `work` with a signal that aborts after `timeoutMillis` or when `signal` does, and settles when
 * the deadline passes even if the work ignores its signal (a call that never answers cannot hold a
 * run): rejects with DeadlineError, or InterruptedError when the run was stopped.
 */
export async function withDeadline<T>(
  what: string,
  timeoutMillis: number,
  work: (signal: AbortSignal) => Promise<T>,
  signal?: AbortSignal,
): Promise<T> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  const stopped = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const error = new DeadlineError(what, timeoutMillis);
      controller.abort(error);
      reject(error);
    }, timeoutMillis);
    onAbort = () => {
      const error = new InterruptedError(`${what}: stopped (${String(signal?.reason ?? 'interrupted')})`);
      controller.abort(error);
      reject(error);
    };
    if (signal?.aborted) onAbort();
    else signal?.addEventListener('abort', onAbort, { once: true });
  });
  stopped.catch(() => {});
  try {
    return await Promise.race([work(controller.signal), stopped]);
  } finally {
    clearTimeout(timer);
    if (onAbort) signal?.removeEventListener('abort', onAbort);
  }
}
