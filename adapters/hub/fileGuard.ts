import { randomUUID } from 'node:crypto';
import { mkdir, readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import {
  HOST,
  createFileExclusively,
  processAlive,
  readIfExists,
  removeAbandonedTemporaryFiles,
} from '../shared/files.ts';

/** Called before each step on the disk: how tests choose the order in which steps of several holders meet. */
export type FileStep = (what: string) => Promise<void>;

/**
 * A guard of another machine (a shared volume) whose record has not changed for this long is taken for abandoned:
 * far longer than it is ever held (a few file operations), and than a lease lasts. Its age is the file's, by the
 * clock of the disk that keeps it. A guard of this machine is abandoned only when its process is gone.
 */
const OTHER_MACHINE_ABANDONED_AFTER_MILLIS = 5 * 60_000;
/** How long a guard held by a live holder is waited for, by default, before the step fails naming the holder. */
const WAIT_MILLIS = 60_000;
/** Pauses while another process holds the guard: a random time up to this, so waiters do not move in step. */
const PAUSE_MILLIS = 4;

interface GuardRecord {
  host: string;
  pid: number;
  /** The guard instance that holds it (several may be in one process). */
  id: string;
  at: string;
}

/** Guards of this process that could not be given up (a full disk): whoever takes them next may. */
const leftHeld = new Set<string>();

/** A guard held by a live holder for longer than the wait. */
export class FileGuardBusyError extends Error {
  constructor(directory: string, record: GuardRecord, waitedMillis: number) {
    super(
      `the lease guard ${directory} is held by process ${record.pid} on ${record.host} since ${record.at}, and was not given up within ${waitedMillis / 1000} s`,
    );
    this.name = 'FileGuardBusyError';
  }
}

function parse(text: string): GuardRecord | undefined {
  try {
    const value = JSON.parse(text) as Partial<GuardRecord>;
    if (
      typeof value.host === 'string' &&
      typeof value.pid === 'number' &&
      typeof value.id === 'string' &&
      typeof value.at === 'string'
    )
      return value as GuardRecord;
  } catch {
    // Not a record of a holder: nobody's.
  }
  return undefined;
}

/** A number as the guard writes it: no leading zero, and far below where + 1 stops being exact. */
const NUMBER = /^[1-9]\d{0,14}$/;

export interface FileGuardOptions {
  /** Called before each step on the disk (tests: the order in which several holders' steps meet). */
  step?: FileStep;
  /** How long a live holder is waited for before FileGuardBusyError. @default 60 s */
  waitMillis?: number;
}

/**
 * Mutual exclusion over a directory of files, between every process that uses it and every guard of
 * this one: whatever is read and then changed while the guard is held is changed by nobody else
 * between the read and the change.
 *
 * The guard is a series of numbered files, each created whole or not at all and never written over;
 * the highest number says who holds the guard (or that it is free). It is taken by creating the
 * number after the one read as free, or as held by a process that is gone: of two that read the same
 * number, only one creates the next. So an abandoned guard is taken over without deleting anything a
 * live holder relies on, which no delete-then-check can do. Numbers below the highest are removed;
 * the highest never is.
 */
export class FileGuard {
  readonly #directory: string;
  readonly #id = randomUUID();
  readonly #step: FileStep | undefined;
  readonly #waitMillis: number;
  #swept = false;
  /** Work of this guard waiting for it, one at a time. */
  #queue: Promise<unknown> = Promise.resolve();

  constructor(directory: string, options: FileGuardOptions = {}) {
    this.#directory = directory;
    this.#step = options.step;
    this.#waitMillis = options.waitMillis ?? WAIT_MILLIS;
  }

  /**
   * Runs `work` while this guard alone holds the directory. A guard that could not be given up afterwards (a
   * full disk) does not hide what the work did: the next taker in this process takes it over.
   */
  hold<T>(work: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(async () => {
      const held = await this.#take();
      try {
        return await work();
      } finally {
        await this.#give(held);
      }
    });
    this.#queue = run.catch(() => {});
    return run;
  }

  async #at(what: string): Promise<void> {
    if (this.#step) await this.#step(what);
  }

  #file(n: number): string {
    return join(this.#directory, String(n));
  }

  async #numbers(): Promise<number[]> {
    await this.#at('guard: list');
    return (await readdir(this.#directory))
      .filter((entry) => NUMBER.test(entry))
      .map(Number)
      .sort((a, b) => a - b);
  }

  /**
   * Whether the holder a record names is gone: a process of this machine that has ended, a guard of this
   * process that could not be given up, or one of another machine whose record is long past.
   */
  async #abandoned(record: GuardRecord | undefined, file: string): Promise<boolean> {
    if (!record) return true;
    if (record.host === HOST)
      return record.pid === process.pid ? leftHeld.has(record.id) : !processAlive(record.pid);
    const modified = await stat(file).then(
      (s) => s.mtimeMs,
      () => undefined,
    );
    return modified !== undefined && Date.now() - modified > OTHER_MACHINE_ABANDONED_AFTER_MILLIS;
  }

  /** Lets the holder go on: a short sleep (a step of its own, where tests choose the order of steps). */
  async #pause(): Promise<void> {
    if (this.#step) await this.#step('guard: wait');
    else await new Promise((resolve) => setTimeout(resolve, Math.random() * PAUSE_MILLIS));
  }

  async #take(): Promise<number> {
    await mkdir(this.#directory, { recursive: true });
    if (!this.#swept) {
      this.#swept = true;
      await removeAbandonedTemporaryFiles(this.#directory);
    }
    const deadline = Date.now() + this.#waitMillis;
    for (;;) {
      const top = (await this.#numbers()).at(-1) ?? 0;
      if (top > 0) {
        await this.#at('guard: read');
        const text = await readIfExists(this.#file(top));
        if (text === undefined) continue; // a higher number came meanwhile
        const record = parse(text); // none in a free one (empty)
        if (!(await this.#abandoned(record, this.#file(top)))) {
          if (Date.now() >= deadline)
            throw new FileGuardBusyError(this.#directory, record!, this.#waitMillis);
          await this.#pause();
          continue;
        }
        if (record?.pid === process.pid) leftHeld.delete(record.id);
      }
      const mine = top + 1;
      const record: GuardRecord = {
        host: HOST,
        pid: process.pid,
        id: this.#id,
        at: new Date().toISOString(),
      };
      await this.#at('guard: create');
      if (!(await createFileExclusively(this.#file(mine), JSON.stringify(record)))) continue;
      try {
        // A number removed below a higher one can be created again by one who read an old listing: it holds
        // the guard only if nothing above it exists.
        const after = await this.#numbers();
        if (after.at(-1)! > mine) {
          await this.#remove(mine);
          continue;
        }
        for (const n of after) if (n < mine) await this.#remove(n);
        return mine;
      } catch (error) {
        await this.#give(mine);
        throw error;
      }
    }
  }

  /**
   * Gives the guard up: the next number, free (empty); not created when another took the guard over meanwhile.
   * Never fails: a guard that could not be given up (a full disk) is left for the next taker in this process.
   */
  async #give(held: number): Promise<void> {
    try {
      await this.#at('guard: give up');
      await createFileExclusively(this.#file(held + 1), '');
      await this.#remove(held);
    } catch {
      leftHeld.add(this.#id);
    }
  }

  /** Removes number `n`, which is below one that exists. */
  async #remove(n: number): Promise<void> {
    await this.#at('guard: remove');
    await rm(this.#file(n), { force: true });
  }
}
