/**
 * What one look at a consumer's grant may have made: the ledger's only way to know that a grant recorded
 * ahead (pending) was never made, and so may be dropped. Every request that can give access (an RBAC binding
 * made or given the identity, an EKS access entry made or given a policy, an Azure role assignment made) goes
 * through `adding`; whatever becomes of the look afterwards (a member that stops answering, a refusal, a
 * binding that is not cpsync's), a look that may have made something never says it made nothing.
 */
import { MemberAccessError } from '../member/connection.ts';

/** Errors of a connection that never reached its server: nothing asked over it can have been done. */
const UNREACHED = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);

/** An error's HTTP status, however its SDK carries it (Kubernetes, Azure, AWS). */
function statusOf(error: unknown): number | undefined {
  const e = error as { code?: unknown; statusCode?: unknown; $metadata?: { httpStatusCode?: unknown } };
  for (const status of [e?.code, e?.statusCode, e?.$metadata?.httpStatusCode])
    if (typeof status === 'number') return status;
  return undefined;
}

/**
 * Whether `error` (or what caused it) says the cloud or member was never reached (no access to it, a refused
 * connection, a name that does not resolve): no request was taken.
 */
export function unreached(error: unknown): boolean {
  let e = error as { code?: unknown; cause?: unknown } | undefined;
  for (let depth = 0; e && depth < 6; depth++) {
    if (e instanceof MemberAccessError || (typeof e.code === 'string' && UNREACHED.has(e.code))) return true;
    e = e.cause as typeof e;
  }
  return false;
}

/**
 * Whether `error` (or what caused it) is a connection that never reached the member: refused, or a name that does
 * not resolve (a member gone with its cluster). Not a token cpsync could not have, nor a profile with no way to
 * reach it: those say nothing of the member.
 */
export function neverConnected(error: unknown): boolean {
  let e = error as { code?: unknown; cause?: unknown } | undefined;
  for (let depth = 0; e && depth < 6; depth++) {
    if (typeof e.code === 'string' && UNREACHED.has(e.code)) return true;
    e = e.cause as typeof e;
  }
  return false;
}

/**
 * Client errors that say a write was not done however often its SDK sent it: refused (401, 403), rejected
 * as malformed (400, 422), or aimed at what is not there (404, a missing namespace). A conflict (409) or a
 * throttle (429) can answer a retry of a request that was done, so it proves nothing.
 */
const REFUSED_BEFORE_DONE = new Set([400, 401, 403, 404, 422]);

/**
 * Whether a write that failed with `error` is known not to have been done. A connection never made proves it
 * only for a client that sends a request once (Kubernetes'): an SDK that sends again (AWS's, Azure's) may meet
 * a refused connection after an earlier try was done and its answer lost.
 */
function notDone(error: unknown, sentOnce: boolean): boolean {
  if (sentOnce && unreached(error)) return true;
  const status = statusOf(error);
  return status !== undefined && REFUSED_BEFORE_DONE.has(status);
}

export class MadeByLook {
  #made = false;

  /** Whether anything of cpsync's that can give access may be there after this look (made by it, or found). */
  get made(): boolean {
    return this.#made;
  }

  /**
   * `write` (a request that can give access), noted unless it is known not to have been done; `resent` when
   * its SDK sends it again after a failure (AWS's, Azure's).
   */
  async adding<T>(write: () => Promise<T>, { resent = false } = {}): Promise<T> {
    try {
      const result = await write();
      this.#made = true;
      return result;
    } catch (error) {
      if (!notDone(error, !resent)) this.#made = true;
      throw error;
    }
  }

  /** cpsync's own grant of the identity was found already there: the record must name it as much. */
  found(): void {
    this.#made = true;
  }

  /** What this look made is known to be taken back again (every place it was made, undone): nothing is left. */
  takenBack(): void {
    this.#made = false;
  }
}
