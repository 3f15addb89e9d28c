import { randomUUID } from 'node:crypto';
import { mkdir, readFile, readdir, rename, unlink, link } from 'node:fs/promises';
import { join } from 'node:path';
import type { LeaseAnswer, LeaseHolder, LeaseStore } from '../../core/sync/ports.ts';
import { createFileExclusively, readIfExists, replaceFile } from '../shared/files.ts';
import { HOST, holderGone, leaseReleased, leaseTaken, takingLease } from './leaseHolders.ts';

interface LockFile {
  holder: string;
  until: string;
  host: string;
  pid: number;
  /** The lease this one is a share of (see `sharers`). */
  shares?: string;
}

const LEASES = '.leases';
/** Attempts at taking a lease that keeps changing hands under us. */
const MAX_ATTEMPTS = 5;
const LEASE_NAME = /^[a-z0-9][-a-z0-9]{0,62}$/;

function parse(text: string | undefined): LockFile | undefined {
  if (text === undefined) return undefined;
  try {
    const value = JSON.parse(text) as Partial<LockFile>;
    if (typeof value.holder === 'string' && typeof value.until === 'string') return value as LockFile;
  } catch {
    // An unreadable lock file is nobody's (see `alive`).
  }
  return undefined;
}

/**
 * Leases of the file hub: one lock file per lease in `<directory>/.leases/`, created whole or not at
 * all (a temporary file linked into place). A lease is free once it has run out, or at once when the
 * process that holds it is gone from this machine (a run that was killed), so the next run need not
 * wait. A stale lock is broken by moving it aside and checking that what was moved is what was seen.
 */
export class FileLeaseStore implements LeaseStore {
  readonly #directory: string;
  readonly #clock: () => number;

  constructor(hubDirectory: string, clock: () => number = Date.now) {
    this.#directory = join(hubDirectory, LEASES);
    this.#clock = clock;
  }

  #path(name: string): string {
    if (!LEASE_NAME.test(name)) throw new Error(`lease name ${JSON.stringify(name)} is not valid`);
    return join(this.#directory, `${name}.json`);
  }

  async #read(path: string): Promise<{ text: string; lock: LockFile | undefined } | undefined> {
    const text = await readIfExists(path);
    return text === undefined ? undefined : { text, lock: parse(text) };
  }

  #alive(name: string, lock: LockFile | undefined): boolean {
    if (!lock || Date.parse(lock.until) <= this.#clock()) return false;
    return !holderGone(lock.host, lock.pid, name, lock.holder);
  }

  #lock(holder: string, durationMillis: number, shares: string | undefined): string {
    const lock: LockFile = {
      holder,
      until: new Date(this.#clock() + durationMillis).toISOString(),
      host: HOST,
      pid: process.pid,
      ...(shares ? { shares } : {}),
    };
    return JSON.stringify(lock);
  }

  acquire(name: string, holder: string, durationMillis: number, shares?: string): Promise<LeaseAnswer> {
    return takingLease(name, holder, () => this.#acquire(name, holder, durationMillis, shares));
  }

  async #acquire(
    name: string,
    holder: string,
    durationMillis: number,
    shares?: string,
  ): Promise<LeaseAnswer> {
    const path = this.#path(name);
    await mkdir(this.#directory, { recursive: true });
    for (let attempt = 1; ; attempt++) {
      if (await createFileExclusively(path, this.#lock(holder, durationMillis, shares))) {
        leaseTaken(name, holder);
        return { acquired: true };
      }
      const current = await this.#read(path);
      if (current === undefined) continue; // given up in between: try again
      if (current.lock?.holder === holder) {
        await replaceFile(path, this.#lock(holder, durationMillis, shares));
        leaseTaken(name, holder);
        return { acquired: true };
      }
      if (current.lock && this.#alive(name, current.lock))
        return { acquired: false, heldBy: { holder: current.lock.holder, until: current.lock.until } };
      if (attempt >= MAX_ATTEMPTS)
        return {
          acquired: false,
          heldBy: { holder: current.lock?.holder ?? '(unknown)', until: current.lock?.until ?? '' },
        };
      await this.#breakStale(path, current.text);
    }
  }

  /** Moves a stale lock aside; if what moved is not the stale lock (it was replaced meanwhile), puts it back. */
  async #breakStale(path: string, stale: string): Promise<void> {
    const aside = `${path}.${process.pid}.${randomUUID()}.stale`;
    try {
      await rename(path, aside);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw error;
    }
    const moved = await readFile(aside, 'utf8').catch(() => stale);
    if (moved !== stale) await link(aside, path).catch(() => {});
    await unlink(aside).catch(() => {});
  }

  async release(name: string, holder: string): Promise<void> {
    leaseReleased(name, holder);
    const path = this.#path(name);
    const current = await this.#read(path);
    if (current?.lock?.holder === holder) await unlink(path).catch(() => {});
  }

  async holderOf(name: string): Promise<LeaseHolder | undefined> {
    const lock = (await this.#read(this.#path(name)))?.lock;
    if (!lock || !this.#alive(name, lock)) return undefined;
    return { holder: lock.holder, until: lock.until };
  }

  async sharers(name: string): Promise<LeaseHolder[]> {
    const files = await readdir(this.#directory).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return [];
      throw error;
    });
    const holders: LeaseHolder[] = [];
    for (const file of files) {
      const lease = file.endsWith('.json') ? file.slice(0, -'.json'.length) : '';
      if (!LEASE_NAME.test(lease)) continue; // a lock being written or moved aside
      const path = join(this.#directory, file);
      const read = await this.#read(path);
      const lock = read?.lock;
      if (lock?.shares !== name) continue;
      if (this.#alive(lease, lock)) holders.push({ holder: lock.holder, until: lock.until });
      // A share that ran out (its holder stopped without giving it up): its file goes, unless it changed.
      else await this.#breakStale(path, read!.text).catch(() => {});
    }
    return holders;
  }
}
