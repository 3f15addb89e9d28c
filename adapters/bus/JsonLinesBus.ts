import { constants, fstatSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { access, open } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Writable } from 'node:stream';
import type { EventSink, PublishFailure, PublishResult } from '../../core/sync/ports.ts';
import type { CpsyncEvent } from '../../events/types.ts';
import { messageOf } from '../../core/domain/errors.ts';
import { printableJson } from '../../core/domain/text.ts';

/**
 * One JSON object per line, EventBridge-shaped (`source`, `detail-type`, `detail`, …). The local default is a
 * terminal: no character of a cloud string acts there, and none (U+2028 above all) splits a line for a reader.
 */
export function jsonLine(event: CpsyncEvent): string {
  return `${printableJson({ source: event.source, 'detail-type': event.detailType, time: event.time, resources: event.resources, detail: event.detail })}\n`;
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
 * Whether a process other than this one holds the read end of the pipe `fd` writes to: true, false, or
 * undefined when that cannot be known (not a pipe, no Linux /proc). A reader owned by another user is
 * not seen, so its events are sent again (at-least-once, never lost).
 */
function pipeHasReader(fd: number): boolean | undefined {
  let pipe: string;
  try {
    if (!fstatSync(fd).isFIFO()) return undefined;
    pipe = readlinkSync(`/proc/self/fd/${fd}`);
  } catch {
    return undefined;
  }
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid) || Number(pid) === process.pid) continue;
    let descriptors: string[];
    try {
      descriptors = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const descriptor of descriptors) {
      try {
        if (readlinkSync(`/proc/${pid}/fd/${descriptor}`) !== pipe) continue;
        const flags = /flags:\s+([0-7]+)/.exec(
          readFileSync(`/proc/${pid}/fdinfo/${descriptor}`, 'utf8'),
        )?.[1];
        // O_ACCMODE: 0 read-only, 2 read-write; 1 is another writer.
        if (flags !== undefined && (parseInt(flags, 8) & 3) !== 1) return true;
      } catch {
        // The process or descriptor went away meanwhile.
      }
    }
  }
  return false;
}

/**
 * Writes events as JSON lines to a stream (stdout by default): the local default bus, at-least-once.
 * A write the stream took is only in a pipe's buffer, not yet read; so what this run wrote counts as
 * delivered only while its reader is still there. Once the stream is closed (EPIPE), every further
 * event is refused, and `unconfirmed()` hands back every event written this run — including those the
 * reader may have taken in part (`cpsync sync | head -c 200`) — for the outbox to keep; the same is true
 * when, at the end of the run, no process holds the pipe's read end any more. They go out again, with
 * the same ids, on the next run: subscribers dedupe by `detail.eventId`.
 */
export class StreamBus implements EventSink {
  readonly #stream: Writable;
  readonly #name: string;
  readonly #fd: number | undefined;
  #closed: Error | undefined;
  #written: CpsyncEvent[] = [];

  constructor(stream: Writable = process.stdout, name = 'standard output') {
    this.#stream = stream;
    this.#name = name;
    const fd = (stream as { fd?: unknown }).fd;
    this.#fd = typeof fd === 'number' ? fd : undefined;
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
        this.#written.push(event);
      } catch (error) {
        this.#closed ??= error as Error;
        result.failed.push(...refused(events.slice(index), error, this.#name));
        break;
      }
    }
    return result;
  }

  /** The events written this run whose delivery cannot be proven: every one, once the reader is gone. */
  unconfirmed(): Promise<{ events: CpsyncEvent[]; reason: string }> {
    const gone = this.#closed !== undefined || (this.#fd !== undefined && pipeHasReader(this.#fd) === false);
    const events = gone ? this.#written : [];
    this.#written = [];
    return Promise.resolve({
      events,
      reason: `the reader of ${this.#name} went away; events it may not have read whole go out again`,
    });
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
