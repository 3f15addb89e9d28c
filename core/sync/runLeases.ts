/**
 * The leases one run holds: one per (manager, provider, account), taken when the run starts applying
 * a scope of that account and given up when its last scope of that account is done, so two runs
 * (the schedule and an event, two CLI runs) never plan and apply the same profiles at once. Scopes of
 * one run share their account's lease. A lease is renewed while held; one that could not be renewed
 * (another run took it after it ran out) aborts the scopes that relied on it.
 */
import { createHash } from 'node:crypto';
import { CpsyncError } from '../domain/errors.ts';
import type { Scope } from '../domain/model/scope.ts';
import type { LeaseHolder, LeaseStore } from './ports.ts';

/** A lease another run holds beyond the time this run waits for it. */
export class LeaseBusyError extends CpsyncError {
  readonly heldBy: LeaseHolder;
  constructor(name: string, heldBy: LeaseHolder) {
    super(
      `another run (${heldBy.holder}) is applying this account (lease ${name}, held until ${heldBy.until})`,
    );
    this.heldBy = heldBy;
  }
}

export interface RunLeaseOptions {
  /** How long a lease lasts unless renewed (renewed at a third of it). */
  durationMillis: number;
  /** How long to wait for a lease another run holds. */
  waitMillis: number;
  /** Pause between attempts while waiting. @default 500 */
  pollMillis?: number;
  /** Stops waiting. */
  signal?: AbortSignal;
}

interface Held {
  count: number;
  /** Aborted when the lease is lost. */
  lost: AbortController;
  timer?: NodeJS.Timeout;
  ready: Promise<void>;
  /** Set once the last scope is done: the lease is being given up; a new scope waits for that first. */
  releasing?: Promise<void>;
}

/** The lease name of a scope's account: a DNS-1123 label, the same in every process. */
export function leaseName(manager: string, scope: Pick<Scope, 'provider' | 'account'>): string {
  const hash = createHash('sha256').update(`${manager}/${scope.provider}/${scope.account}`).digest('hex');
  return `${manager}-lease-${scope.provider}-${hash.slice(0, 16)}`;
}

/** One scope's hold on its account's lease. */
export interface LeaseHold {
  /** Aborted when the lease is lost (another run took it after it ran out). */
  signal: AbortSignal;
  /** The scope is done with the lease; it is given up when the run's last scope of that account is. */
  exit(): Promise<void>;
}

export class RunLeases {
  readonly #store: LeaseStore;
  readonly #holder: string;
  readonly #options: RunLeaseOptions;
  readonly #held = new Map<string, Held>();

  constructor(store: LeaseStore, holder: string, options: RunLeaseOptions) {
    this.#store = store;
    this.#holder = holder;
    this.#options = options;
  }

  get holder(): string {
    return this.#holder;
  }

  /**
   * Holds `name` for one more scope of this run, waiting for another run to give it up; throws
   * LeaseBusyError when the wait runs out.
   */
  async enter(name: string): Promise<LeaseHold> {
    let held = this.#held.get(name);
    // A release under way finishes first: taking the lease again meanwhile would be undone by it.
    while (held?.releasing) {
      await held.releasing.catch(() => {});
      held = this.#held.get(name);
    }
    if (held) {
      held.count += 1;
    } else {
      held = { count: 1, lost: new AbortController(), ready: Promise.resolve() };
      const entry = held;
      this.#held.set(name, entry);
      entry.ready = this.#take(name).then(
        () => {
          // The run may have given everything up while this lease was being taken.
          if (this.#held.get(name) !== entry) {
            void this.#store.release(name, this.#holder).catch(() => {});
            return;
          }
          entry.timer = setInterval(() => void this.#renew(name, entry), this.#options.durationMillis / 3);
          entry.timer.unref();
        },
        (error: unknown) => {
          if (this.#held.get(name) === entry) this.#held.delete(name);
          throw error;
        },
      );
    }
    const entry = held;
    try {
      await entry.ready;
    } catch (error) {
      entry.count -= 1;
      throw error;
    }
    let exited = false;
    return {
      signal: entry.lost.signal,
      exit: async () => {
        if (exited) return;
        exited = true;
        entry.count -= 1;
        // A lease lost, or given up by releaseAll, is not this run's to give up any more.
        if (entry.count > 0 || this.#held.get(name) !== entry) return;
        clearInterval(entry.timer);
        entry.releasing = this.#store.release(name, this.#holder).finally(() => {
          if (this.#held.get(name) === entry) this.#held.delete(name);
        });
        await entry.releasing;
      },
    };
  }

  /** Gives up every lease this run still holds (at the end of a run, or when it is stopped). */
  async releaseAll(): Promise<void> {
    const entries = [...this.#held];
    this.#held.clear();
    for (const [, entry] of entries) clearInterval(entry.timer);
    await Promise.allSettled(
      entries.map(([name, entry]) => entry.releasing ?? this.#store.release(name, this.#holder)),
    );
  }

  async #take(name: string): Promise<void> {
    const { durationMillis, waitMillis, pollMillis = 500, signal } = this.#options;
    const deadline = Date.now() + waitMillis;
    for (;;) {
      const answer = await this.#store.acquire(name, this.#holder, durationMillis);
      if (answer.acquired) return;
      if (Date.now() + pollMillis > deadline || signal?.aborted)
        throw new LeaseBusyError(name, answer.heldBy);
      await new Promise((resolve) => setTimeout(resolve, pollMillis * (0.5 + Math.random())));
    }
  }

  async #renew(name: string, held: Held): Promise<void> {
    try {
      const answer = await this.#store.acquire(name, this.#holder, this.#options.durationMillis);
      if (answer.acquired) return;
      // Lost (another run took it after it ran out): this run stops applying that account and holds
      // nothing of it any more; a later scope of the account takes the lease anew.
      clearInterval(held.timer);
      if (this.#held.get(name) === held) this.#held.delete(name);
      held.lost.abort(new LeaseBusyError(name, answer.heldBy));
    } catch {
      // A renewal that failed (hub briefly unreachable) is tried again at the next tick.
    }
  }
}
