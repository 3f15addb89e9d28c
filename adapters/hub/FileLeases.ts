import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { LeaseAnswer, LeaseHolder, LeaseStore } from '../../core/sync/ports.ts';
import { readIfExists, removeAbandonedTemporaryFiles, replaceFile } from '../shared/files.ts';
import { FileGuard, type FileStep } from './fileGuard.ts';
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
/** The guard of the lock files, in the leases' directory (a name no lease has). */
const GUARD = '.guard';
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

export interface FileLeaseStoreOptions {
  clock?: () => number;
  /** Called before each step on the disk (tests: the order in which several stores' steps meet). */
  step?: FileStep;
}

/**
 * Leases of the file hub: one lock file per lease in `<directory>/.leases/`, written whole (a temporary
 * file renamed into place). A lease is free once it has run out, or at once when the process that holds
 * it is gone from this machine (a run that was killed), so the next run need not wait.
 *
 * Every change of a lock file (taking, renewing, giving up, removing a share that ran out) reads it and
 * changes it while holding the directory's guard (see FileGuard), so nothing changes it between the read
 * and the change, in this process or another: a lock is never removed or taken over after it changed hands.
 */
export class FileLeaseStore implements LeaseStore {
  readonly #directory: string;
  readonly #clock: () => number;
  readonly #step: FileStep | undefined;
  readonly #guard: FileGuard;
  #swept = false;

  constructor(hubDirectory: string, options: FileLeaseStoreOptions | (() => number) = {}) {
    const { clock = Date.now, step } = typeof options === 'function' ? { clock: options } : options;
    this.#directory = join(hubDirectory, LEASES);
    this.#clock = clock;
    this.#step = step;
    this.#guard = new FileGuard(join(this.#directory, GUARD), step ? { step } : {});
  }

  async #at(what: string): Promise<void> {
    if (this.#step) await this.#step(what);
  }

  #path(name: string): string {
    if (!LEASE_NAME.test(name)) throw new Error(`lease name ${JSON.stringify(name)} is not valid`);
    return join(this.#directory, `${name}.json`);
  }

  async #read(path: string): Promise<LockFile | undefined> {
    await this.#at(`read ${path}`);
    return parse(await readIfExists(path));
  }

  #alive(name: string, lock: LockFile | undefined): lock is LockFile {
    // An end that is not a date is no end: nobody's (not held for ever).
    if (!lock || !(Date.parse(lock.until) > this.#clock())) return false;
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
    const path = this.#path(name);
    return takingLease(name, holder, () =>
      this.#guard.hold(async (): Promise<LeaseAnswer> => {
        if (!this.#swept) {
          // What a killed process was writing when it stopped.
          this.#swept = true;
          await removeAbandonedTemporaryFiles(this.#directory);
        }
        const current = await this.#read(path);
        if (current?.holder !== holder && this.#alive(name, current))
          return { acquired: false, heldBy: { holder: current.holder, until: current.until } };
        await this.#at(`write ${path}`);
        await replaceFile(path, this.#lock(holder, durationMillis, shares));
        leaseTaken(name, holder);
        return { acquired: true };
      }),
    );
  }

  async release(name: string, holder: string): Promise<void> {
    leaseReleased(name, holder);
    const path = this.#path(name);
    await this.#guard.hold(async () => {
      if ((await this.#read(path))?.holder === holder) await this.#remove(path);
    });
  }

  async #remove(path: string): Promise<void> {
    await this.#at(`remove ${path}`);
    await rm(path, { force: true });
  }

  async holderOf(name: string): Promise<LeaseHolder | undefined> {
    const lock = await this.#read(this.#path(name));
    if (!this.#alive(name, lock)) return undefined;
    return { holder: lock.holder, until: lock.until };
  }

  async sharers(name: string): Promise<LeaseHolder[]> {
    await this.#at('list leases');
    const files = await readdir(this.#directory).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return [];
      throw error;
    });
    const holders: LeaseHolder[] = [];
    const ranOut: string[] = [];
    for (const file of files) {
      const lease = file.endsWith('.json') ? file.slice(0, -'.json'.length) : '';
      if (!LEASE_NAME.test(lease)) continue; // a lock being written, or the guard
      const lock = await this.#read(join(this.#directory, file));
      if (lock?.shares !== name) continue;
      if (this.#alive(lease, lock)) holders.push({ holder: lock.holder, until: lock.until });
      else ranOut.push(lease);
    }
    // A share that ran out (its holder stopped without giving it up) goes, unless it changed meanwhile.
    if (ranOut.length > 0)
      await this.#guard.hold(async () => {
        for (const lease of ranOut) {
          const path = this.#path(lease);
          const lock = await this.#read(path);
          if (lock?.shares === name && !this.#alive(lease, lock)) await this.#remove(path);
        }
      });
    return holders;
  }
}
