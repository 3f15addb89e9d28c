/**
 * What one listing of a scope uses of the remembered answers (see `AnswerStore`): the record of a cluster its
 * listing still shows as it was when the cloud was asked, and that is young enough, stands for the cloud's
 * answer; anything else asks the cloud. A store that cannot be read is an empty one, one that cannot be
 * written is left as it was: either way the cloud is asked next time, and the listing is neither failed nor
 * made partial by it. Nothing here decides what is listed or deleted.
 */
import { createHash } from 'node:crypto';
import type { Provider } from '../../core/domain/model/observedCluster.ts';
import { canonicalProviderId, foldCase } from '../../core/domain/naming.ts';
import type { Scope } from '../../core/domain/model/scope.ts';
import type { AnswerStore, RememberedAnswer } from '../../core/sync/ports.ts';

/** A record asked for more than this far in the future (a clock set wrong) stands for nothing. */
const FUTURE_SKEW_MILLIS = 5 * 60 * 1000;

/** A short digest of what a listing shows of a cluster (the fields whose change asks again). */
export function listedDigest(fields: readonly unknown[]): string {
  return createHash('sha256').update(JSON.stringify(fields)).digest('base64url').slice(0, 22);
}

/**
 * Where in each period of the maximum age a cluster's answers are asked again (its time, as a share of the period in
 * [0, 1)), from its id: spread evenly over the clusters, so that the answers a first sync gathered at once are asked
 * again a share at a time (at the 15-minute schedule and an hour's age, about a quarter of them in each sync), not all
 * in the same sync.
 */
function timeOf(providerId: string): number {
  return createHash('sha256').update(foldCase(providerId)).digest().readUInt32BE(0) / 2 ** 32;
}

/**
 * The share of the maximum age for which an answer always stands: one asked just before its cluster's time (a first
 * sync, an event's read) is not asked again at once.
 */
const SETTLED_SHARE = 1 / 4;

/**
 * Whether an answer about `providerId` asked at `askedAt` still stands at `now`. It stands while it is younger than
 * a quarter of `maxAgeMillis`; after that, until its cluster's time in the period (see `timeOf`) comes round after it
 * was asked. It never stands at `maxAgeMillis` or older, nor when asked in the future by more than a clock's skew.
 * Asked at its cluster's time, an answer stands for the whole period, so each cluster is asked once a period.
 */
export function stillStands(providerId: string, askedAt: number, maxAgeMillis: number, now: number): boolean {
  const age = now - askedAt;
  if (!(maxAgeMillis > 0) || age < -FUTURE_SKEW_MILLIS || age >= maxAgeMillis) return false;
  if (age < maxAgeMillis * SETTLED_SHARE) return true;
  const sinceTime =
    (((now - timeOf(providerId) * maxAgeMillis) % maxAgeMillis) + maxAgeMillis) % maxAgeMillis;
  return askedAt >= now - sinceTime;
}

export interface AnswerMemory {
  store?: AnswerStore;
  /** How old an answer may be and still stand for the cloud's (0: always ask). */
  maxAgeMillis: number;
  /** @default Date.now */
  now?: () => number;
}

type Identity = Pick<RememberedAnswer, 'provider' | 'account' | 'region' | 'providerId'>;

/** The remembered answers of one listing, and the answers it gathered. */
export class ScopeAnswers {
  readonly #memory: AnswerMemory;
  readonly #held = new Map<string, RememberedAnswer>();
  readonly #seen = new Set<string>();
  readonly #fresh: RememberedAnswer[] = [];
  readonly #forgotten: Identity[] = [];
  /** Read nothing: a failed read removes the cluster's record whatever it is. */
  readonly #blind: boolean;

  private constructor(memory: AnswerMemory, held: readonly RememberedAnswer[], blind = false) {
    this.#memory = memory;
    this.#blind = blind;
    for (const record of held) this.#held.set(canonicalProviderId(record), record);
  }

  /** The records of `scope` (none without a store, or when it cannot be read). */
  static async load(memory: AnswerMemory, scope: Scope): Promise<ScopeAnswers> {
    if (!memory.store || memory.maxAgeMillis <= 0) return new ScopeAnswers(memory, []);
    const held = await memory.store.read(scope).catch(() => []);
    return new ScopeAnswers(memory, held);
  }

  /** Answers without any record (one cluster read on its own: asked, then remembered). */
  static none(memory: AnswerMemory): ScopeAnswers {
    return new ScopeAnswers(memory, [], true);
  }

  #now(): number {
    return (this.#memory.now ?? Date.now)();
  }

  /** When an answer asked now was asked. */
  askingNow(): number {
    return this.#now();
  }

  /**
   * The remembered answer of a cluster the listing shows as `listed`, when it was asked while the listing
   * showed the same and is younger than its age limit; undefined (ask the cloud) otherwise.
   */
  usable(
    identity: Pick<Identity, 'provider' | 'providerId'>,
    listed: string,
  ): Record<string, unknown> | undefined {
    return this.usableRecord(identity, listed)?.answer;
  }

  /** As `usable`, the whole record: when the answer was asked, too. */
  usableRecord(
    identity: Pick<Identity, 'provider' | 'providerId'>,
    listed: string,
  ): RememberedAnswer | undefined {
    const key = canonicalProviderId(identity);
    this.#seen.add(key);
    const record = this.#held.get(key);
    if (!record || record.listed !== listed) return undefined;
    return stillStands(key, record.askedAt, this.#memory.maxAgeMillis, this.#now()) ? record : undefined;
  }

  /**
   * The records held for `provider`'s clusters, whatever their age: for a source that knows a cluster only by name
   * until it is asked. Reading them does not count a cluster as seen.
   */
  heldOf(provider: Provider): RememberedAnswer[] {
    return [...this.#held.values()].filter((record) => record.provider === provider);
  }

  /** The answer the cloud just gave for a cluster, asked at `askedAt` while its listing showed `listed`. */
  remember(
    identity: Omit<Identity, 'provider'> & { provider: Provider },
    listed: string,
    askedAt: number,
    answer: Record<string, unknown>,
  ): void {
    this.#seen.add(canonicalProviderId(identity));
    if (!this.#memory.store || this.#memory.maxAgeMillis <= 0) return;
    this.#fresh.push({ ...identity, listed, askedAt, answer });
  }

  /** The cloud did not answer for a cluster: what was remembered of it goes, so the next listing asks. */
  forget(identity: Identity): void {
    const key = canonicalProviderId(identity);
    this.#seen.add(key);
    if (this.#blind || this.#held.has(key)) this.#forgotten.push(identity);
  }

  /**
   * Stores the answers gathered, and drops the records of clusters a complete listing of `regions` (or of every
   * region) did not show. Never rejects: what cannot be stored is asked again next time.
   */
  async save(complete: { regions: readonly string[] } | 'all' | 'none' = 'none'): Promise<void> {
    const store = this.#memory.store;
    if (!store) return;
    const covered = (region: string) =>
      complete === 'all' || (complete !== 'none' && complete.regions.includes(region));
    const gone = [...this.#held.values()].filter(
      (record) => !this.#seen.has(canonicalProviderId(record)) && covered(record.region),
    );
    const removed = [...this.#forgotten, ...gone];
    if (this.#fresh.length === 0 && removed.length === 0) return;
    await store.write(this.#fresh, removed).catch(() => undefined);
  }
}
