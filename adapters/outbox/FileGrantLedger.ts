/**
 * The grants ledger as files (the CLI's): one JSON file per cluster, `<outbox>/grants/<provider>-<account>/
 * <hash of the cluster's id>.json`, written whole and flushed to the disk before it counts. A file that cannot
 * be read is moved to the outbox's `quarantine/` and named: what it recorded is then found again by the scan of
 * cpsync's marks at turn-off, never by reading the hub.
 */
import { createHash, randomUUID } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { parsedJson } from '../../core/domain/json.ts';
import {
  ledgerKey,
  keptForCluster,
  legacyLedgerKeys,
  isGrantRecord,
  ofScope,
  oneRecordPerCluster,
  type GrantRecord,
} from '../../core/domain/grants.ts';
import type { Scope } from '../../core/domain/model/scope.ts';
import type { GrantLedger, QuarantinedRecord } from '../../core/sync/ports.ts';
import { QUARANTINE } from './batchFiles.ts';
import { readIfExists, replaceFile } from '../shared/files.ts';

export class FileGrantLedger implements GrantLedger {
  readonly #directory: string;
  readonly #quarantine: string;
  readonly #quarantined: QuarantinedRecord[] = [];

  /** `outboxDirectory`: the file outbox's directory (the state directory), which the ledger lives in. */
  constructor(outboxDirectory: string) {
    this.#directory = join(outboxDirectory, 'grants');
    this.#quarantine = join(outboxDirectory, QUARANTINE);
  }

  /** Records found unreadable (and moved aside) so far. */
  quarantined(): QuarantinedRecord[] {
    return [...this.#quarantined];
  }

  #folder(scope: Pick<Scope, 'provider' | 'account'>): string {
    // An account is free text to the file system: its hash keeps the folder name safe.
    const account = createHash('sha256').update(scope.account).digest('hex').slice(0, 16);
    return join(this.#directory, `${scope.provider}-${account}`);
  }

  #file(record: Pick<GrantRecord, 'provider' | 'providerId' | 'account'>, key = ledgerKey(record)): string {
    const name = createHash('sha256').update(key).digest('hex').slice(0, 32);
    return join(this.#folder(record), `${name}.json`);
  }

  /** Where earlier versions filed the record, where that differs from `#file` (see `legacyLedgerKeys`). */
  #legacyFiles(record: Pick<GrantRecord, 'provider' | 'providerId' | 'account'>): string[] {
    return legacyLedgerKeys(record).map((key) => this.#file(record, key));
  }

  async read(scope: Pick<Scope, 'provider' | 'account'>): Promise<GrantRecord[]> {
    const folder = this.#folder(scope);
    let names: string[];
    try {
      // Synchronous: every scope of a run reads its account's folder, most often absent or small.
      names = readdirSync(folder).filter((name) => /^[0-9a-f]{32}\.json$/.test(name));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw error;
    }
    const found: Array<{ record: GrantRecord; keptToday: boolean }> = [];
    for (const name of names.sort()) {
      const path = join(folder, name);
      const text = await readIfExists(path);
      if (text === undefined) continue;
      const value = parsedJson(text);
      if (isGrantRecord(value) && ofScope(value, scope)) {
        found.push({ record: value, keptToday: this.#file(value) === path });
        continue;
      }
      await mkdir(this.#quarantine, { recursive: true });
      // Named for when it was moved, too: a record found unreadable again never replaces the copy moved before.
      const aside = join(
        this.#quarantine,
        `grants-${scope.provider}-${Date.now()}-${randomUUID().slice(0, 8)}-${name}`,
      );
      await rename(path, aside);
      this.#quarantined.push({ path: aside, reason: 'not a grant record (truncated?)' });
    }
    return oneRecordPerCluster(found);
  }

  async write(
    records: readonly GrantRecord[],
    removed: ReadonlyArray<Pick<GrantRecord, 'provider' | 'providerId' | 'account'>> = [],
  ): Promise<void> {
    for (const record of records) {
      await mkdir(this.#folder(record), { recursive: true });
      await replaceFile(this.#file(record), `${JSON.stringify(record, null, 1)}\n`, { durable: true });
      // Written as today's version files it: what an earlier version filed elsewhere goes.
      await this.#removeEarlier(record);
    }
    for (const record of removed) {
      await rm(this.#file(record), { force: true });
      await this.#removeEarlier(record);
    }
  }

  /** What an earlier version filed of `record`'s cluster elsewhere, removed: only a record of that very cluster. */
  async #removeEarlier(record: Pick<GrantRecord, 'provider' | 'providerId' | 'account'>): Promise<void> {
    for (const earlier of this.#legacyFiles(record)) {
      const text = await readIfExists(earlier);
      // Not a record (read() sets such a file aside, naming it): left as it is.
      if (text !== undefined && keptForCluster(parsedJson(text), record)) await rm(earlier, { force: true });
    }
  }
}
