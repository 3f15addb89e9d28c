import { join } from 'node:path';
import type { Outbox, QuarantinedRecord } from '../../core/sync/ports.ts';
import type { CpsyncEvent } from '../../events/types.ts';
import { BatchFiles, QUARANTINE } from './batchFiles.ts';
import { EVENT_ID, outboxEventProblem } from './records.ts';

/**
 * Pending events as JSON files in a directory, one file per batch, each written atomically and
 * flushed to the disk (file and directory) before it counts; an event is taken out once published.
 * Unreadable files go to `quarantine/`.
 */
export class FileOutbox implements Outbox {
  readonly #events: BatchFiles<CpsyncEvent>;
  readonly #quarantined: QuarantinedRecord[] = [];

  constructor(directory: string) {
    this.#events = new BatchFiles(
      directory,
      join(directory, QUARANTINE),
      'event',
      (e) => e.detail.eventId,
      EVENT_ID,
      outboxEventProblem,
      this.#quarantined,
    );
  }

  quarantined(): QuarantinedRecord[] {
    return [...this.#quarantined];
  }

  add(events: readonly CpsyncEvent[]): Promise<void> {
    return this.#events.add(events);
  }

  async pending(): Promise<CpsyncEvent[]> {
    // An event written twice under its id (a stopped run's, then its recovered intent's) is one event.
    const byId = new Map<string, CpsyncEvent>();
    for (const event of await this.#events.all())
      if (!byId.has(event.detail.eventId)) byId.set(event.detail.eventId, event);
    return [...byId.values()].sort((a, b) => a.time.localeCompare(b.time));
  }

  remove(eventIds: readonly string[]): Promise<void> {
    return this.#events.remove(eventIds);
  }
}
