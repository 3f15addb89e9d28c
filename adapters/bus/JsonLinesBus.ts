import { constants } from 'node:fs';
import { access, open } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Writable } from 'node:stream';
import type { EventSink, PublishFailure, PublishResult } from '../../core/sync/ports.ts';
import type { CpsyncEvent } from '../../events/types.ts';
import { messageOf } from '../../core/domain/errors.ts';

/** One JSON object per line, EventBridge-shaped (`source`, `detail-type`, `detail`, …). */
export function jsonLine(event: CpsyncEvent): string {
  return `${JSON.stringify({ source: event.source, 'detail-type': event.detailType, time: event.time, resources: event.resources, detail: event.detail })}\n`;
}

function refused(events: readonly CpsyncEvent[], error: unknown, what: string): PublishFailure[] {
  const code = (error as NodeJS.ErrnoException).code ?? 'WriteError';
  const reason =
    code === 'EPIPE' || code === 'ERR_STREAM_DESTROYED' ? 'its reader closed it' : messageOf(error);
  return events.map((event) => ({
    eventId: event.detail.eventId,
    code,
    message: `cannot write to ${what}: ${reason}`,
    retryable: true,
  }));
}

/**
 * Writes events as JSON lines to a stream (stdout by default): the local default bus. An event
 * counts as published only once the stream has taken it (its write callback); once the stream is
 * closed (its reader went away: EPIPE) every further event is refused, and stays in the outbox.
 */
export class StreamBus implements EventSink {
  readonly #stream: Writable;
  readonly #name: string;
  #closed: Error | undefined;

  constructor(stream: Writable = process.stdout, name = 'standard output') {
    this.#stream = stream;
    this.#name = name;
    // A closed pipe is a publishing failure, not a crash of the whole run.
    stream.on('error', (error: Error) => {
      this.#closed ??= error;
    });
  }

  #write(line: string): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.#stream.destroyed || this.#stream.writableEnded)
        return reject(Object.assign(new Error('the stream is closed'), { code: 'ERR_STREAM_DESTROYED' }));
      this.#stream.write(line, (error) => (error ? reject(error) : resolve()));
    });
  }

  describe(): Promise<string> {
    return Promise.resolve(`JSON lines on ${this.#name}`);
  }

  async publish(events: readonly CpsyncEvent[]): Promise<PublishResult> {
    const result: PublishResult = { published: [], failed: [] };
    for (const [index, event] of events.entries()) {
      if (this.#closed) {
        result.failed.push(...refused(events.slice(index), this.#closed, this.#name));
        break;
      }
      try {
        await this.#write(jsonLine(event));
        result.published.push(event.detail.eventId);
      } catch (error) {
        this.#closed ??= error as Error;
        result.failed.push(...refused(events.slice(index), error, this.#name));
        break;
      }
    }
    return result;
  }
}

/**
 * Appends events as JSON lines to a file; they count as published once the file is flushed to the
 * disk. An append that fails half-way (a full disk) is cut back, so the file never holds half a line
 * — unless another process appended meanwhile, whose lines are never cut.
 */
export class JsonLinesFileBus implements EventSink {
  readonly #path: string;

  constructor(path: string) {
    this.#path = path;
  }

  async describe(): Promise<string> {
    await access(dirname(this.#path), constants.W_OK);
    return `JSON lines appended to ${this.#path}`;
  }

  async publish(events: readonly CpsyncEvent[]): Promise<PublishResult> {
    if (events.length === 0) return { published: [], failed: [] };
    try {
      const handle = await open(this.#path, 'a');
      const { size } = await handle.stat();
      const text = Buffer.from(events.map(jsonLine).join(''), 'utf8');
      let written = 0;
      try {
        while (written < text.length) written += (await handle.write(text, written)).bytesWritten;
        await handle.sync();
      } catch (error) {
        const now = await handle.stat().catch(() => undefined);
        if (written > 0 && now?.size === size + written) await handle.truncate(size).catch(() => {});
        throw error;
      } finally {
        await handle.close();
      }
    } catch (error) {
      return { published: [], failed: refused(events, error, this.#path) };
    }
    return { published: events.map((e) => e.detail.eventId), failed: [] };
  }
}
