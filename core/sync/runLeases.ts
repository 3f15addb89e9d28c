/**
 * The leases one run holds: one per (manager, provider, account), taken when the run starts applying
 * a scope of that account and given up when its last scope of that account is done, so two runs
 * (the schedule and an event, two CLI runs) never plan and apply the same profiles at once. Scopes of
 * one run share their account's lease. A lease is renewed while held; one that could not be renewed
 * in time (it ran out, or another run took it after it did) aborts the scopes that relied on it.
 *
 * One-cluster syncs (a cloud's event, a follow-up look) touch one cluster's profiles, so those of
 * different clusters of one account run side by side: each takes a share of the account's lease, a
 * lease of its own named for its cluster (so two syncs of one cluster still take turns). A whole run
 * of the account must not apply beside any of them. The two keep apart as two writers of one store
 * can: each first writes its own lease, then reads the other's.
 *   - A whole run takes the account's lease, then lists its shares; while any is held it keeps the
 *     lease and waits (new shares see it and stand back, so the held ones only drain).
 *   - A share is taken, then the account's lease is read; if another run holds it, the share is given
 *     up and taken again later.
 * The store answers each read after every write before it (etcd's quorum reads; one machine's files),
 * so of a run and a share that start together at least one sees the other, and never both go ahead.
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

/** A lease this run held that ran out before it could be renewed: another run may have gone ahead since. */
class LeaseExpiredError extends CpsyncError {
  constructor(name: string, until: number) {
    super(
      `lease ${name} ran out at ${new Date(until).toISOString()} before it could be renewed: another run may be applying this account`,
    );
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
  /** The lease this one is a share of. */
  shares?: string;
  /** Until then the lease is surely this run's (the last renewal's request sent + the duration). */
  validUntil: number;
  count: number;
  /** Aborted when the lease is lost. */
  lost: AbortController;
  timer?: NodeJS.Timeout;
  /** Fires when `validUntil` passes unrenewed: the lease is lost then, not at the next renewal's tick. */
  expiry?: NodeJS.Timeout;
  ready: Promise<void>;
  /** Set once the last scope is done: the lease is being given up; a new scope waits for that first. */
  releasing?: Promise<void>;
}

/** The lease name of a scope's account: a DNS-1123 label, the same in every process. */
export function leaseName(manager: string, scope: Pick<Scope, 'provider' | 'account'>): string {
  const hash = createHash('sha256').update(`${manager}/${scope.provider}/${scope.account}`).digest('hex');
  return `${manager}-lease-${scope.provider}-${hash.slice(0, 16)}`;
}

/** The name of the share of lease `name` that syncs of `part` (one cluster) take: a DNS-1123 label. */
function shareName(name: string, part: string): string {
  const hash = createHash('sha256').update(`${name}\n${part}`).digest('hex');
  return `${name.slice(0, 50)}-${hash.slice(0, 12)}`;
}

/** The lease of lease `name`'s project role, settled by one sync of the account at a time. */
function roleLeaseName(name: string): string {
  return `${name.slice(0, 58)}-role`;
}

/** One scope's hold on its account's lease. */
export interface LeaseHold {
  /** The lease held: the account's, or the share taken of it (what a written-ahead intent names). */
  lease: string;
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
   * Holds `name` for one more scope of this run, waiting for another run to give it up and for every share
   * of it to be given up; throws LeaseBusyError when the wait runs out.
   */
  enter(name: string): Promise<LeaseHold> {
    return this.#enter(name, () => this.#take(name, true));
  }

  /**
   * Holds a share of `name` for `part` (one cluster): beside other parts' shares, never beside another run's
   * hold of `name` itself, nor another sync of the same part. Throws LeaseBusyError when the wait runs out.
   */
  enterShared(name: string, part: string): Promise<LeaseHold> {
    const share = shareName(name, part);
    return this.#enter(share, () => this.#takeShare(share, name), name);
  }

  /**
   * Runs `work` while this run alone, among the holders of shares of `name`, holds `name`'s role lease: for
   * what one sync decides for the whole account (a GKE project's cloud role), from what it reads inside.
   */
  async alone<T>(name: string, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const role = roleLeaseName(name);
    const hold = await this.#enter(role, () => this.#take(role, false));
    try {
      return await work(hold.signal);
    } finally {
      await hold.exit();
    }
  }

  async #enter(name: string, take: () => Promise<number>, shares?: string): Promise<LeaseHold> {
    let held = this.#held.get(name);
    // A release under way finishes first: taking the lease again meanwhile would be undone by it.
    while (held?.releasing) {
      await held.releasing.catch(() => {});
      held = this.#held.get(name);
    }
    if (held) {
      held.count += 1;
    } else {
      held = {
        ...(shares ? { shares } : {}),
        validUntil: 0,
        count: 1,
        lost: new AbortController(),
        ready: Promise.resolve(),
      };
      const entry = held;
      this.#held.set(name, entry);
      entry.ready = take().then(
        (validUntil) => {
          entry.validUntil = validUntil;
          // The run may have given everything up while this lease was being taken.
          if (this.#held.get(name) !== entry) {
            void this.#store.release(name, this.#holder).catch(() => {});
            return;
          }
          entry.timer = setInterval(() => void this.#renew(name, entry), this.#options.durationMillis / 3);
          entry.timer.unref();
          this.#armExpiry(name, entry);
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
      lease: name,
      signal: entry.lost.signal,
      exit: async () => {
        if (exited) return;
        exited = true;
        entry.count -= 1;
        // A lease lost, or given up by releaseAll, is not this run's to give up any more.
        if (entry.count > 0 || this.#held.get(name) !== entry) return;
        clearInterval(entry.timer);
        clearTimeout(entry.expiry);
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
    for (const [, entry] of entries) {
      clearInterval(entry.timer);
      clearTimeout(entry.expiry);
    }
    await Promise.allSettled(
      entries.map(([name, entry]) => entry.releasing ?? this.#store.release(name, this.#holder)),
    );
  }

  /** Pauses between attempts at a lease: a random share of `pollMillis`, so waiters do not move in step. */
  #pause(): Promise<void> {
    const { pollMillis = 500 } = this.#options;
    return new Promise((resolve) => setTimeout(resolve, pollMillis * (0.5 + Math.random())));
  }

  /** Whether the wait for a lease is over (its time is up, or the run was stopped). */
  #waitOver(deadline: number): boolean {
    const { pollMillis = 500, signal } = this.#options;
    return Date.now() + pollMillis > deadline || signal?.aborted === true;
  }

  /**
   * Takes `name` (with `drain`, the account's lease: once no share of it is held); resolves with when it
   * surely runs out.
   */
  async #take(name: string, drain: boolean): Promise<number> {
    const { durationMillis, waitMillis } = this.#options;
    const deadline = Date.now() + waitMillis;
    let taken = false;
    try {
      for (;;) {
        const sent = Date.now();
        const answer = await this.#store.acquire(name, this.#holder, durationMillis);
        taken ||= answer.acquired;
        // Held: it is this run's once the shares taken before it are given up (it stays held meanwhile).
        const blocking = !answer.acquired
          ? answer.heldBy
          : drain
            ? (await this.#store.sharers(name))[0]
            : undefined;
        if (!blocking) return sent + durationMillis;
        if (this.#waitOver(deadline)) throw new LeaseBusyError(name, blocking);
        await this.#pause();
      }
    } catch (error) {
      if (taken) await this.#store.release(name, this.#holder).catch(() => {});
      throw error;
    }
  }

  /** Takes `share`, a share of `name`, once no other run holds `name`; resolves with when it surely runs out. */
  async #takeShare(share: string, name: string): Promise<number> {
    const { durationMillis, waitMillis } = this.#options;
    const deadline = Date.now() + waitMillis;
    for (;;) {
      const sent = Date.now();
      const answer = await this.#store.acquire(share, this.#holder, durationMillis, name);
      let blocking = answer.acquired ? undefined : answer.heldBy;
      if (answer.acquired) {
        // The share is written before the account's lease is read: a run that takes the lease after this
        // read sees the share and waits for it.
        const owner = await this.#store.holderOf(name).catch(async (error: unknown) => {
          await this.#store.release(share, this.#holder).catch(() => {});
          throw error;
        });
        if (!owner || owner.holder === this.#holder) return sent + durationMillis;
        blocking = owner;
        await this.#store.release(share, this.#holder);
      }
      if (this.#waitOver(deadline)) throw new LeaseBusyError(name, blocking!);
      await this.#pause();
    }
  }

  async #renew(name: string, held: Held): Promise<void> {
    const { durationMillis } = this.#options;
    try {
      // Run out before it was renewed: another run may have found it free meanwhile and gone ahead.
      if (Date.now() >= held.validUntil)
        return this.#lose(name, held, new LeaseExpiredError(name, held.validUntil));
      const sent = Date.now();
      const answer = await this.#store.acquire(name, this.#holder, durationMillis, held.shares);
      // Answered only once it had run out: meanwhile another run may have found it free and gone ahead (a whole
      // run removes a share that ran out, which this renewal would then have made again). Lost all the same.
      if (Date.now() >= held.validUntil)
        return this.#lose(name, held, new LeaseExpiredError(name, held.validUntil));
      if (answer.acquired) {
        held.validUntil = sent + durationMillis;
        this.#armExpiry(name, held);
      }
      // Lost (another run took it after it ran out): this run stops applying that account and holds
      // nothing of it any more; a later scope of the account takes the lease anew.
      else this.#lose(name, held, new LeaseBusyError(held.shares ?? name, answer.heldBy));
    } catch {
      // A renewal that failed (hub briefly unreachable) is tried again at the next tick.
    }
  }

  /**
   * Loses the lease the moment it runs out unrenewed (renewals that keep failing, a hub out of reach): writes stop
   * then, rather than up to a renewal's interval later, when another run may have taken it.
   */
  #armExpiry(name: string, held: Held): void {
    clearTimeout(held.expiry);
    held.expiry = setTimeout(
      () => {
        if (this.#held.get(name) === held && Date.now() >= held.validUntil)
          this.#lose(name, held, new LeaseExpiredError(name, held.validUntil));
        else if (this.#held.get(name) === held) this.#armExpiry(name, held);
      },
      Math.max(0, held.validUntil - Date.now()),
    );
    held.expiry.unref();
  }

  #lose(name: string, held: Held, reason: Error): void {
    clearInterval(held.timer);
    clearTimeout(held.expiry);
    if (this.#held.get(name) === held) this.#held.delete(name);
    held.lost.abort(reason);
    // What still names this run goes (a lease another run took is not this run's to give up: left as it is).
    void this.#store.release(name, this.#holder).catch(() => {});
  }
}
