import { randomUUID } from 'node:crypto';
import { mkdir, readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Outbox } from '../../core/ports.ts';
import { replaceFile } from '../shared/files.ts';
import type { ChangeIntent } from '../../core/intents.ts';
import type { CpsyncEvent } from '../../events/types.ts';

const EVENT_ID = /^[0-9a-f-]{36}$/;
const INTENT_ID = /^[0-9a-f]{32}$/;
const INTENTS = 'intents';

/** A file's text, or undefined when another run removed it in the meantime. */
async function readIfThere(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/**
 * Records kept as JSON files in one directory, one file per batch added (a scope's events or a
 * plan's intents), so a batch costs one write and one removal however many records it holds. Taking
 * out some records of a batch rewrites its file with the rest; taking out the last removes it. A file
 * holding one record as a plain object (as earlier versions wrote them) is read the same way.
 */
class BatchFiles<T> {
  readonly #directory: string;
  readonly #what: string;
  readonly #idOf: (record: T) => string;
  readonly #validId: RegExp;
  /** Which file holds each record this outbox has written or read. */
  readonly #fileOf = new Map<string, string>();
  /** Each file's changes, one after another. */
  readonly #queues = new Map<string, Promise<unknown>>();

  constructor(directory: string, what: string, idOf: (record: T) => string, validId: RegExp) {
    this.#directory = directory;
    this.#what = what;
    this.#idOf = idOf;
    this.#validId = validId;
  }

  async add(records: readonly T[]): Promise<void> {
    if (records.length === 0) return;
    for (const record of records) {
      const id = this.#idOf(record);
      if (!this.#validId.test(id))
        throw new Error(`outbox: ${this.#what} id ${JSON.stringify(id)} is not a cpsync ${this.#what} id`);
    }
    await mkdir(this.#directory, { recursive: true });
    const file = `${randomUUID()}.json`;
    await replaceFile(join(this.#directory, file), JSON.stringify(records));
    for (const record of records) this.#fileOf.set(this.#idOf(record), file);
  }

  async all(): Promise<T[]> {
    let names: string[];
    try {
      names = await readdir(this.#directory);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw error;
    }
    const records: T[] = [];
    for (const file of names.filter((n) => n.endsWith('.json')).sort()) {
      const text = await readIfThere(join(this.#directory, file));
      if (text === undefined) continue;
      for (const record of ([] as T[]).concat(JSON.parse(text) as T | T[])) {
        this.#fileOf.set(this.#idOf(record), file);
        records.push(record);
      }
    }
    return records;
  }

  async remove(ids: readonly string[]): Promise<void> {
    const wanted = ids.filter((id) => this.#validId.test(id));
    if (wanted.some((id) => !this.#fileOf.has(id))) await this.all();
    const byFile = new Map<string, Set<string>>();
    for (const id of wanted) {
      const file = this.#fileOf.get(id);
      if (file) byFile.set(file, (byFile.get(file) ?? new Set()).add(id));
    }
    await Promise.all([...byFile].map(([file, gone]) => this.#inTurn(file, () => this.#takeOut(file, gone))));
  }

  async #takeOut(file: string, gone: Set<string>): Promise<void> {
    const path = join(this.#directory, file);
    const text = await readIfThere(path);
    const left =
      text === undefined
        ? []
        : ([] as T[]).concat(JSON.parse(text) as T | T[]).filter((r) => !gone.has(this.#idOf(r)));
    if (left.length === 0) await rm(path, { force: true });
    else await replaceFile(path, JSON.stringify(left));
    for (const id of gone) this.#fileOf.delete(id);
  }

  #inTurn(file: string, change: () => Promise<void>): Promise<void> {
    const run = (this.#queues.get(file) ?? Promise.resolve()).then(change);
    const settled = run.catch(() => {});
    this.#queues.set(file, settled);
    void settled.then(() => {
      if (this.#queues.get(file) === settled) this.#queues.delete(file);
    });
    return run;
  }
}

/**
 * Pending events and write-ahead intents as JSON files in a directory (intents in `intents/`), one
 * file per batch, each written atomically; a record is taken out once published (or settled).
 */
export class FileOutbox implements Outbox {
  readonly #events: BatchFiles<CpsyncEvent>;
  readonly #intents: BatchFiles<ChangeIntent>;

  constructor(directory: string) {
    this.#events = new BatchFiles(directory, 'event', (e) => e.detail.eventId, EVENT_ID);
    this.#intents = new BatchFiles(join(directory, INTENTS), 'intent', (i) => i.id, INTENT_ID);
  }

  add(events: readonly CpsyncEvent[]): Promise<void> {
    return this.#events.add(events);
  }

  async pending(): Promise<CpsyncEvent[]> {
    return (await this.#events.all()).sort((a, b) => a.time.localeCompare(b.time));
  }

  remove(eventIds: readonly string[]): Promise<void> {
    return this.#events.remove(eventIds);
  }

  addIntents(intents: readonly ChangeIntent[]): Promise<void> {
    return this.#intents.add(intents);
  }

  intents(): Promise<ChangeIntent[]> {
    return this.#intents.all();
  }

  removeIntents(ids: readonly string[]): Promise<void> {
    return this.#intents.remove(ids);
  }
}
