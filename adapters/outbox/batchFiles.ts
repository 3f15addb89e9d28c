/** Records kept durably as JSON files, one file per batch; the file outbox and the file intent log are made of it. */
import { randomUUID } from 'node:crypto';
import { mkdir, readdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { QuarantinedRecord } from '../../core/sync/ports.ts';
import { readIfExists, removeAbandonedTemporaryFiles, replaceFile } from '../shared/files.ts';

/** Where files that cannot be read are moved, beside the records (so nothing is lost). */
export const QUARANTINE = 'quarantine';

/**
 * Records kept as JSON files in one directory, one file per batch added (a scope's events or a
 * plan's intents), so a batch costs one write and one removal however many records it holds. Taking
 * out some records of a batch rewrites its file with the rest; taking out the last removes it. A file
 * holding one record as a plain object (as earlier versions wrote them) is read the same way.
 */
export class BatchFiles<T> {
  readonly #directory: string;
  readonly #quarantine: string;
  readonly #what: string;
  readonly #idOf: (record: T) => string;
  readonly #validId: RegExp;
  readonly #problemOf: (record: unknown) => string | undefined;
  readonly #quarantined: QuarantinedRecord[];
  #swept = false;
  /**
   * Which files hold each record this outbox has written or read. Usually one; two when a stopped process wrote
   * a record that the next one then wrote again under the same id (its intents recovered): taking the record out
   * takes it out of every file that holds it.
   */
  readonly #filesOf = new Map<string, Set<string>>();
  /** Each file's changes, one after another. */
  readonly #queues = new Map<string, Promise<unknown>>();
  /**
   * The ids each file this instance wrote holds: nothing else ever adds a record to a file (another process only
   * takes records out of it), so a file all of whose ids are taken out is removed without being read back.
   */
  readonly #wrote = new Map<string, Set<string>>();
  /**
   * Every file this instance has written or read. A file in the directory not among them was written by another
   * process since: it is read before records are taken out, as it may hold one of them again (written once more
   * under its id), which would otherwise stay behind and be published again.
   */
  readonly #seen = new Set<string>();

  constructor(
    directory: string,
    quarantine: string,
    what: string,
    idOf: (record: T) => string,
    validId: RegExp,
    problemOf: (record: unknown) => string | undefined,
    quarantined: QuarantinedRecord[],
  ) {
    this.#directory = directory;
    this.#quarantine = quarantine;
    this.#what = what;
    this.#idOf = idOf;
    this.#validId = validId;
    this.#problemOf = problemOf;
    this.#quarantined = quarantined;
  }

  /** The records of a file's text, or why they cannot be read. */
  #parse(text: string): T[] | string {
    if (text.trim() === '') return 'empty file';
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      return 'not valid JSON (truncated?)';
    }
    const records = ([] as unknown[]).concat(value);
    // Every record whole, not its id alone: one of another shape (edited by hand, another version's) is never read
    // as a cpsync record, and the file is set aside with the first problem named.
    for (const [index, record] of records.entries()) {
      const problem = this.#problemOf(record);
      if (problem !== undefined)
        return `holds something that is not a cpsync ${this.#what} (record ${index + 1}: ${problem})`;
    }
    return records as T[];
  }

  /** Moves an unreadable file aside (never deleted: a person may want it) and remembers it. */
  async #putAside(file: string, reason: string): Promise<void> {
    await mkdir(this.#quarantine, { recursive: true });
    const target = join(this.#quarantine, `${Date.now()}-${file}`);
    try {
      await rename(join(this.#directory, file), target);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw error;
    }
    this.#quarantined.push({ path: target, reason });
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
    this.#seen.add(file);
    // Flushed to the disk before it counts: a power loss must not leave an empty or half file.
    await replaceFile(join(this.#directory, file), JSON.stringify(records), { durable: true });
    for (const record of records) this.#holds(this.#idOf(record), file);
    this.#wrote.set(file, new Set(records.map(this.#idOf)));
  }

  #holds(id: string, file: string): void {
    const files = this.#filesOf.get(id);
    if (files) files.add(file);
    else this.#filesOf.set(id, new Set([file]));
  }

  /**
   * Every record in the directory. A file that cannot be read (empty, truncated, not cpsync's) is
   * moved to the quarantine directory and reported, never fatal; temporary files that stopped
   * processes left behind are removed.
   */
  async all(): Promise<T[]> {
    let names: string[];
    try {
      names = await readdir(this.#directory);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw error;
    }
    if (!this.#swept) {
      this.#swept = true;
      await removeAbandonedTemporaryFiles(this.#directory);
    }
    const records: T[] = [];
    for (const file of names.filter((n) => n.endsWith('.json')).sort())
      records.push(...((await this.#read(file)) ?? []));
    return records;
  }

  /**
   * A file's records, each noted as held there (undefined for a file gone). An unreadable file is put aside, or with
   * `setAside` false left where it is, unseen, for the next reading of every record to set aside and report.
   */
  async #read(file: string, setAside = true): Promise<T[] | undefined> {
    const text = await readIfExists(join(this.#directory, file));
    const parsed = text === undefined ? undefined : this.#parse(text);
    if (typeof parsed === 'string' && !setAside) return undefined;
    this.#seen.add(file);
    if (parsed === undefined) return undefined;
    if (typeof parsed === 'string') {
      await this.#putAside(file, parsed);
      return undefined;
    }
    for (const record of parsed) this.#holds(this.#idOf(record), file);
    return parsed;
  }

  /** Reads the files other processes wrote since this instance last looked (see `#seen`). */
  async #readOthers(): Promise<void> {
    let names: string[];
    try {
      names = await readdir(this.#directory);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw error;
    }
    for (const file of names.filter((n) => n.endsWith('.json') && !this.#seen.has(n)).sort())
      await this.#read(file, false);
  }

  async remove(ids: readonly string[]): Promise<void> {
    const wanted = ids.filter((id) => this.#validId.test(id));
    if (wanted.length === 0) return;
    await this.#readOthers();
    const byFile = new Map<string, Set<string>>();
    for (const id of wanted)
      for (const file of this.#filesOf.get(id) ?? [])
        byFile.set(file, (byFile.get(file) ?? new Set()).add(id));
    await Promise.all([...byFile].map(([file, gone]) => this.#inTurn(file, () => this.#takeOut(file, gone))));
  }

  async #takeOut(file: string, gone: Set<string>): Promise<void> {
    const path = join(this.#directory, file);
    const wrote = this.#wrote.get(file);
    if (wrote && [...wrote].every((id) => gone.has(id))) {
      await rm(path, { force: true });
      this.#wrote.delete(file);
      this.#forget(file, gone);
      return;
    }
    const text = await readIfExists(path);
    const parsed = text === undefined ? [] : this.#parse(text);
    if (typeof parsed === 'string') {
      await this.#putAside(file, parsed);
      this.#wrote.delete(file);
      this.#forget(file, gone);
      return;
    }
    const left = parsed.filter((r) => !gone.has(this.#idOf(r)));
    if (left.length === 0) await rm(path, { force: true });
    else await replaceFile(path, JSON.stringify(left), { durable: true });
    if (wrote) {
      if (left.length === 0) this.#wrote.delete(file);
      else this.#wrote.set(file, new Set(left.map(this.#idOf)));
    }
    this.#forget(file, gone);
  }

  #forget(file: string, gone: Set<string>): void {
    for (const id of gone) {
      const files = this.#filesOf.get(id);
      files?.delete(file);
      if (files?.size === 0) this.#filesOf.delete(id);
    }
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
