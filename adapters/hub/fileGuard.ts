import { randomUUID } from 'node:crypto';
import { mkdir, readdir, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { HOST, createFileExclusively, processAlive, readIfExists } from '../shared/files.ts';

/** Called before each step on the disk: how tests choose the order in which steps of several holders meet. */
export type FileStep = (what: string) => Promise<void>;

/** A guard held longer than this is taken for abandoned, whoever holds it (it is held for a few file operations). */
const ABANDONED_AFTER_MILLIS = 30_000;
/** Pauses while another process holds the guard: a random time up to this, so waiters do not move in step. */
const PAUSE_MILLIS = 4;

interface GuardRecord {
  host: string;
  pid: number;
  /** The guard instance that holds it (several may be in one process). */
  id: string;
  at: string;
}

function parse(text: string): GuardRecord | undefined {
  try {
    const value = JSON.parse(text) as Partial<GuardRecord>;
    if (typeof value.host === 'string' && typeof value.pid === 'number' && typeof value.at === 'string')
      return value as GuardRecord;
  } catch {
    // Not a record of a holder: nobody's.
  }
  return undefined;
}

const NUMBER = /^\d+$/;

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
  #made: Promise<unknown> | undefined;
  /** Work of this guard waiting for it, one at a time. */
  #queue: Promise<unknown> = Promise.resolve();

  constructor(directory: string, step?: FileStep) {
    this.#directory = directory;
    this.#step = step;
  }

  /** Runs `work` while this guard alone holds the directory. */
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

  /** Whether the holder a record names is gone: its process has ended, or it held the guard far too long. */
  #abandoned(record: GuardRecord | undefined): boolean {
    if (!record || record.id === this.#id) return true; // this guard's own: left by a give-up that failed
    if (!(Date.now() - Date.parse(record.at) < ABANDONED_AFTER_MILLIS)) return true;
    return record.host === HOST && record.pid !== process.pid && !processAlive(record.pid);
  }

  /** Lets the holder go on: a short sleep (a step of its own, where tests choose the order of steps). */
  async #pause(): Promise<void> {
    if (this.#step) await this.#step('guard: wait');
    else await new Promise((resolve) => setTimeout(resolve, Math.random() * PAUSE_MILLIS));
  }

  async #take(): Promise<number> {
    this.#made ??= mkdir(this.#directory, { recursive: true });
    await this.#made;
    for (;;) {
      const top = (await this.#numbers()).at(-1) ?? 0;
      if (top > 0) {
        await this.#at('guard: read');
        const text = await readIfExists(this.#file(top));
        if (text === undefined) continue; // a higher number came meanwhile
        if (text !== '' && !this.#abandoned(parse(text))) {
          await this.#pause();
          continue;
        }
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
      // A number removed below a higher one can be created again by one who read an old listing: it holds
      // the guard only if nothing above it exists.
      const after = await this.#numbers();
      if (after.at(-1)! > mine) {
        await this.#remove(mine);
        continue;
      }
      for (const n of after) if (n < mine) await this.#remove(n);
      return mine;
    }
  }

  /** Gives the guard up: the next number, free (empty). Not created when another took the guard over meanwhile. */
  async #give(held: number): Promise<void> {
    await this.#at('guard: give up');
    await createFileExclusively(this.#file(held + 1), '');
    await this.#remove(held);
  }

  /** Removes number `n`, which is below one that exists. */
  async #remove(n: number): Promise<void> {
    await this.#at('guard: remove');
    await unlink(this.#file(n)).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOENT') throw error;
    });
  }
}
