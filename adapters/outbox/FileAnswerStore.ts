/**
 * The sources' remembered answers as files (the CLI's): one JSON file per account and region,
 * `<outbox>/answers/<provider>-<hash of the account>/<region>.json`, in the state directory beside the outbox
 * and the grants ledger, which only cpsync writes. Not flushed to the disk: a file lost or torn is no record,
 * and the cloud is asked again. A record is replaced only by a later answer for its cluster (an event's
 * read, then a listing's older one, keep the event's).
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { PROVIDERS } from '../../core/domain/model/observedCluster.ts';
import { ALL_REGIONS, type Scope } from '../../core/domain/model/scope.ts';
import type { AnswerStore, RememberedAnswer } from '../../core/sync/ports.ts';
import { replaceFile } from '../shared/files.ts';
import { canonicalProviderId, compareOrdinal } from '../../core/domain/naming.ts';

type Removed = Pick<RememberedAnswer, 'provider' | 'account' | 'region' | 'providerId'>;

/** Whether `value` is a record as the store writes them. */
export function isRememberedAnswer(value: unknown): value is RememberedAnswer {
  const r = value as Partial<RememberedAnswer> | null;
  return (
    typeof r === 'object' &&
    r !== null &&
    (PROVIDERS as readonly unknown[]).includes(r.provider) &&
    typeof r.account === 'string' &&
    typeof r.region === 'string' &&
    typeof r.providerId === 'string' &&
    typeof r.listed === 'string' &&
    typeof r.askedAt === 'number' &&
    Number.isFinite(r.askedAt) &&
    typeof r.answer === 'object' &&
    r.answer !== null &&
    !Array.isArray(r.answer)
  );
}

/** A region as a file name: itself when it is one cloud's plain spelling, else its hash. */
function regionFile(region: string): string {
  return /^[a-z0-9][a-z0-9-]{0,62}$/.test(region)
    ? `${region}.json`
    : `h-${createHash('sha256').update(region).digest('hex').slice(0, 32)}.json`;
}

export class FileAnswerStore implements AnswerStore {
  readonly #directory: string;
  /** Writes of one file, one after another within this process. */
  readonly #writing = new Map<string, Promise<void>>();

  /** `outboxDirectory`: the file outbox's directory (the state directory), which the store lives in. */
  constructor(outboxDirectory: string) {
    this.#directory = join(outboxDirectory, 'answers');
  }

  #folder(scope: Pick<Scope, 'provider' | 'account'>): string {
    // An account is free text to the file system: its hash keeps the folder name safe.
    const account = createHash('sha256').update(scope.account).digest('hex').slice(0, 16);
    return join(this.#directory, `${scope.provider}-${account}`);
  }

  /** The records of one file that belong to `scope` (none when the file is missing or unreadable). */
  #load(path: string, scope: Pick<Scope, 'provider' | 'account'>): RememberedAnswer[] {
    let value: unknown;
    try {
      // A few kilobytes, once per scope: read at once (the thread pool's round trip costs more than the read).
      value = JSON.parse(readFileSync(path, 'utf8'));
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === undefined || code === 'ENOENT') return [];
      throw error;
    }
    const records = (value as { records?: unknown } | null)?.records;
    return Array.isArray(records)
      ? records.filter(
          (r): r is RememberedAnswer =>
            isRememberedAnswer(r) && r.provider === scope.provider && r.account === scope.account,
        )
      : [];
  }

  read(scope: Scope): Promise<RememberedAnswer[]> {
    return Promise.resolve().then(() => {
      const folder = this.#folder(scope);
      if (scope.region !== ALL_REGIONS) return this.#load(join(folder, regionFile(scope.region)), scope);
      let names: string[];
      try {
        names = readdirSync(folder).filter((name) => name.endsWith('.json'));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
        throw error;
      }
      return names.sort().flatMap((name) => this.#load(join(folder, name), scope));
    });
  }

  async write(records: readonly RememberedAnswer[], removed: readonly Removed[] = []): Promise<void> {
    const files = new Map<string, { scope: Removed; put: RememberedAnswer[]; drop: Set<string> }>();
    const fileOf = (record: Removed) => {
      const path = join(this.#folder(record), regionFile(record.region));
      let file = files.get(path);
      if (!file) files.set(path, (file = { scope: record, put: [], drop: new Set() }));
      return file;
    };
    for (const record of records) fileOf(record).put.push(record);
    for (const record of removed) fileOf(record).drop.add(canonicalProviderId(record));
    await Promise.all(
      [...files].map(([path, change]) => {
        const previous = this.#writing.get(path) ?? Promise.resolve();
        const next = previous.then(() => this.#change(path, change.scope, change.put, change.drop));
        this.#writing.set(
          path,
          next.catch(() => undefined),
        );
        return next;
      }),
    );
  }

  /** Reads the file, puts the later of each record and its stored one, drops what `drop` names, writes it whole. */
  async #change(
    path: string,
    scope: Removed,
    put: readonly RememberedAnswer[],
    drop: ReadonlySet<string>,
  ): Promise<void> {
    const stored = new Map(this.#load(path, scope).map((r) => [canonicalProviderId(r), r]));
    for (const record of put) {
      const key = canonicalProviderId(record);
      const held = stored.get(key);
      if (!held || held.askedAt <= record.askedAt) stored.set(key, record);
    }
    for (const key of drop) stored.delete(key);
    if (stored.size === 0) {
      rmSync(path, { force: true });
      return;
    }
    mkdirSync(this.#folder(scope), { recursive: true });
    const sorted = [...stored.values()].sort((a, b) => compareOrdinal(a.providerId, b.providerId));
    await replaceFile(path, `${JSON.stringify({ records: sorted })}\n`);
  }
}
