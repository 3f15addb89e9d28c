/**
 * Per-cluster records as files (the CLI's remembered answers and missed listings): one JSON file per account and
 * region, `<outbox>/<folder>/<provider>-<hash of the account>/<region>.json`, in the state directory beside the
 * outbox and the grants ledger, which only cpsync writes. Not flushed to the disk: a file lost or torn is no
 * record. A record is replaced only by a later one for its cluster (an event's read, then a listing's older one,
 * keep the event's).
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { basename, join } from 'node:path';
import { PROVIDERS, type Provider } from '../../core/domain/model/observedCluster.ts';
import { ALL_REGIONS, type Scope } from '../../core/domain/model/scope.ts';
import { replaceFile } from '../shared/files.ts';
import { canonicalProviderId, compareOrdinal } from '../../core/domain/naming.ts';

/** What names a record's cluster: the key every record kind shares. */
export interface ClusterRecord {
  provider: Provider;
  account: string;
  /** The cluster's own region (never `*`). */
  region: string;
  providerId: string;
}

/** One kind of per-cluster record: where it is kept, how it is told, and which of two is the later. */
export interface RecordKind<T extends ClusterRecord> {
  /** The folder of the state directory its files are in. */
  folder: string;
  /** The item attribute of a DynamoDB table that holds `at(record)`, on which a put is conditioned. */
  attribute: string;
  /** Whether a stored value is a well-formed record of this kind. */
  is(value: unknown): value is T;
  /** When the record was made (milliseconds since the epoch): a later one is never replaced by an earlier one. */
  at(record: T): number;
  /**
   * Kept per account, not per region: every record of an account in one file (a record found by its cluster's key
   * alone, wherever it was filed), and a DynamoDB index hit read again from the table, consistently, before it counts
   * (the index lags the table). @default false: per region, the index taken as it answers
   */
  perAccount?: boolean;
}

/** Whether `value` names a cluster as every record does (its kind's own fields checked apart). */
export function isClusterRecord(value: unknown): value is ClusterRecord {
  const r = value as Partial<ClusterRecord> | null;
  return (
    typeof r === 'object' &&
    r !== null &&
    (PROVIDERS as readonly unknown[]).includes(r.provider) &&
    typeof r.account === 'string' &&
    typeof r.region === 'string' &&
    typeof r.providerId === 'string'
  );
}

/** The file of an account's records of every region, for a kind kept per account. */
const ACCOUNT_FILE = 'account.json';

/** A region as a file name: itself when it is one cloud's plain spelling, else its hash. */
function regionFile(region: string): string {
  return /^[a-z0-9][a-z0-9-]{0,62}$/.test(region)
    ? `${region}.json`
    : `h-${createHash('sha256').update(region).digest('hex').slice(0, 32)}.json`;
}

export class FileClusterRecords<T extends ClusterRecord> {
  readonly #directory: string;
  readonly #kind: RecordKind<T>;
  /** Writes of one file, one after another within this process. */
  readonly #writing = new Map<string, Promise<void>>();

  /** `outboxDirectory`: the file outbox's directory (the state directory), which the records live in. */
  constructor(outboxDirectory: string, kind: RecordKind<T>) {
    this.#directory = join(outboxDirectory, kind.folder);
    this.#kind = kind;
  }

  #folder(scope: Pick<Scope, 'provider' | 'account'>): string {
    // An account is free text to the file system: its hash keeps the folder name safe.
    const account = createHash('sha256').update(scope.account).digest('hex').slice(0, 16);
    return join(this.#directory, `${scope.provider}-${account}`);
  }

  /** The records of one file that belong to `scope` (none when the file is missing or not records). */
  #load(path: string, scope: Pick<Scope, 'provider' | 'account'>): T[] {
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
          (r): r is T =>
            this.#kind.is(r) &&
            r.provider === scope.provider &&
            r.account === scope.account &&
            // Kept in its own region's file: one put in another's stands for nothing.
            (this.#kind.perAccount || regionFile(r.region) === basename(path)),
        )
      : [];
  }

  /** The records of an account's clusters in `scope.region` (every region: `*`). Rejects when a file cannot be read. */
  read(scope: Scope): Promise<T[]> {
    return Promise.resolve().then(() => {
      const folder = this.#folder(scope);
      if (this.#kind.perAccount) {
        const all = this.#load(join(folder, ACCOUNT_FILE), scope);
        return scope.region === ALL_REGIONS ? all : all.filter((r) => r.region === scope.region);
      }
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

  /** Stores each record unless a later one of its cluster is stored, and removes those `removed` names. */
  async write(records: readonly T[], removed: readonly ClusterRecord[] = []): Promise<void> {
    const files = new Map<string, { scope: ClusterRecord; put: T[]; drop: Set<string> }>();
    const fileOf = (record: ClusterRecord) => {
      const path = join(
        this.#folder(record),
        this.#kind.perAccount ? ACCOUNT_FILE : regionFile(record.region),
      );
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
    scope: ClusterRecord,
    put: readonly T[],
    drop: ReadonlySet<string>,
  ): Promise<void> {
    const stored = new Map(this.#load(path, scope).map((r) => [canonicalProviderId(r), r]));
    for (const record of put) {
      const key = canonicalProviderId(record);
      const held = stored.get(key);
      if (!held || this.#kind.at(held) <= this.#kind.at(record)) stored.set(key, record);
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
