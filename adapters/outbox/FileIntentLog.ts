import { join } from 'node:path';
import type { ChangeIntent } from '../../core/sync/changes.ts';
import type { IntentLog, QuarantinedRecord } from '../../core/sync/ports.ts';
import { BatchFiles, QUARANTINE } from './batchFiles.ts';
import { INTENT_ID, intentProblem } from './records.ts';

/**
 * Write-ahead intents as JSON files in `<outbox>/intents`, one file per plan, written atomically and
 * flushed to the disk before they count; unreadable files go to the outbox's `quarantine/`.
 */
export class FileIntentLog implements IntentLog {
  readonly #intents: BatchFiles<ChangeIntent>;
  readonly #quarantined: QuarantinedRecord[] = [];

  /** `outboxDirectory`: the file outbox's directory, which the intents live in. */
  constructor(outboxDirectory: string) {
    this.#intents = new BatchFiles(
      join(outboxDirectory, 'intents'),
      join(outboxDirectory, QUARANTINE),
      'intent',
      (i) => i.id,
      INTENT_ID,
      intentProblem,
      this.#quarantined,
    );
  }

  quarantined(): QuarantinedRecord[] {
    return [...this.#quarantined];
  }

  add(intents: readonly ChangeIntent[]): Promise<void> {
    return this.#intents.add(intents);
  }

  list(): Promise<ChangeIntent[]> {
    return this.#intents.all();
  }

  remove(ids: readonly string[]): Promise<void> {
    return this.#intents.remove(ids);
  }
}
