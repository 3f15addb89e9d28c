import { appendFile } from 'node:fs/promises';
import type { Writable } from 'node:stream';
import type { EventSink, PublishResult } from '../../core/ports.ts';
import type { CpsyncEvent } from '../../events/types.ts';

/** One JSON object per line, EventBridge-shaped (`source`, `detail-type`, `detail`, …). */
export function jsonLine(event: CpsyncEvent): string {
  return `${JSON.stringify({ source: event.source, 'detail-type': event.detailType, time: event.time, resources: event.resources, detail: event.detail })}\n`;
}

/** Writes events as JSON lines to a stream (stdout by default): the local default bus. */
export class StreamBus implements EventSink {
  readonly #stream: Writable;

  constructor(stream: Writable = process.stdout) {
    this.#stream = stream;
  }

  async publish(events: readonly CpsyncEvent[]): Promise<PublishResult> {
    for (const event of events) {
      const line = jsonLine(event);
      if (!this.#stream.write(line)) await new Promise((resolve) => this.#stream.once('drain', resolve));
    }
    return { published: events.map((e) => e.detail.eventId), failed: [] };
  }
}

/** Appends events as JSON lines to a file. */
export class JsonLinesFileBus implements EventSink {
  readonly #path: string;

  constructor(path: string) {
    this.#path = path;
  }

  async publish(events: readonly CpsyncEvent[]): Promise<PublishResult> {
    if (events.length > 0) await appendFile(this.#path, events.map(jsonLine).join(''), 'utf8');
    return { published: events.map((e) => e.detail.eventId), failed: [] };
  }
}
