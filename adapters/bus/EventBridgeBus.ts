import {
  DescribeEventBusCommand,
  EventBridgeClient,
  PutEventsCommand,
  type PutEventsRequestEntry,
} from '@aws-sdk/client-eventbridge';
import type { AwsCredentialIdentityProvider } from '@smithy/types';
import { messageOf } from '../../core/domain/errors.ts';
import type { EventSink, PublishFailure, PublishResult } from '../../core/sync/ports.ts';
import { PUT_EVENTS_MAX_BYTES } from '../../events/detailTypes.ts';
import type { CpsyncEvent } from '../../events/types.ts';
import { SigV4Sha256, withoutSdkLogger } from '../shared/awsSdk.ts';
import { awsProxyConfig } from '../shared/proxy.ts';

/** Entries per PutEvents call (the API's limit). */
export const MAX_ENTRIES_PER_CALL = 10;
/** Extra rounds for entries that failed with a retryable code. */
export const MAX_RETRIES = 4;
/** Entry error codes worth another attempt. */
const RETRYABLE_CODES = new Set([
  'ThrottlingException',
  'InternalFailure',
  'InternalException',
  'ServiceUnavailable',
  'ServiceUnavailableException',
]);

export interface EventBridgeBusOptions {
  /** Name or ARN of the event bus. */
  busName: string;
  /** @default a client for `region`/`endpoint` */
  client?: EventBridgeClient;
  region?: string;
  endpoint?: string;
  credentials?: AwsCredentialIdentityProvider;
  /**
   * First backoff before re-sending failed entries; doubles each round, with jitter.
   * @default 100
   */
  baseDelayMillis?: number;
}

/** The size PutEvents counts for an entry (see the PutEvents size calculation). */
export function entrySize(entry: PutEventsRequestEntry): number {
  let size = entry.Time ? 14 : 0;
  for (const text of [entry.Source, entry.DetailType, entry.Detail])
    if (text) size += Buffer.byteLength(text, 'utf8');
  for (const resource of entry.Resources ?? []) size += Buffer.byteLength(resource, 'utf8');
  return size;
}

/** Splits entries into calls of at most 10 entries and 256 KB together. */
function batches(entries: Array<{ id: string; entry: PutEventsRequestEntry; size: number }>) {
  const calls: Array<typeof entries> = [];
  let current: typeof entries = [];
  let size = 0;
  for (const item of entries) {
    if (current.length === MAX_ENTRIES_PER_CALL || size + item.size > PUT_EVENTS_MAX_BYTES) {
      calls.push(current);
      current = [];
      size = 0;
    }
    current.push(item);
    size += item.size;
  }
  if (current.length > 0) calls.push(current);
  return calls;
}

/**
 * Publishes to an EventBridge bus: at most 10 entries (and 256 KB) per call; entries that fail with
 * a retryable code are re-sent alone, with backoff, up to MAX_RETRIES rounds; every other failure is
 * reported back (the engine keeps those events pending).
 */
export class EventBridgeBus implements EventSink {
  readonly #client: EventBridgeClient;
  readonly #busName: string;
  readonly #baseDelay: number;

  constructor(options: EventBridgeBusOptions) {
    this.#busName = options.busName;
    this.#baseDelay = options.baseDelayMillis ?? 100;
    this.#client =
      options.client ??
      withoutSdkLogger(
        new EventBridgeClient({
          sha256: SigV4Sha256,
          ...(options.region ? { region: options.region } : {}),
          ...(options.endpoint ? { endpoint: options.endpoint } : {}),
          ...(options.credentials ? { credentials: options.credentials } : {}),
          ...awsProxyConfig(),
        }),
      );
  }

  async describe(): Promise<string> {
    const bus = await this.#client.send(new DescribeEventBusCommand({ Name: this.#busName }));
    return `EventBridge bus ${bus.Name ?? this.#busName} (${bus.Arn ?? 'no ARN'})`;
  }

  async publish(events: readonly CpsyncEvent[]): Promise<PublishResult> {
    const result: PublishResult = { published: [], failed: [] };
    let queue: Array<{ id: string; entry: PutEventsRequestEntry; size: number }> = [];
    for (const event of events) {
      const entry: PutEventsRequestEntry = {
        Source: event.source,
        DetailType: event.detailType,
        Detail: JSON.stringify(event.detail),
        EventBusName: this.#busName,
        Resources: event.resources,
        Time: new Date(event.time),
      };
      const size = entrySize(entry);
      if (size > PUT_EVENTS_MAX_BYTES) {
        result.failed.push({
          eventId: event.detail.eventId,
          code: 'EntryTooLarge',
          message: `entry is ${size} bytes; the limit is ${PUT_EVENTS_MAX_BYTES}`,
          retryable: false,
        });
      } else {
        queue.push({ id: event.detail.eventId, entry, size });
      }
    }
    for (let round = 0; queue.length > 0; round++) {
      const retry: typeof queue = [];
      const lastRound = round === MAX_RETRIES;
      for (const call of batches(queue)) {
        const failures = await this.#send(call);
        call.forEach((item, index) => {
          const failure = failures[index];
          if (!failure) return void result.published.push(item.id);
          if (failure.retryable && !lastRound) retry.push(item);
          else result.failed.push({ ...failure, eventId: item.id });
        });
      }
      queue = retry;
      if (queue.length > 0)
        await new Promise((r) => setTimeout(r, this.#baseDelay * 2 ** round * (0.5 + Math.random() / 2)));
    }
    return result;
  }

  /** Sends one call; returns the failure of each entry by position (undefined where it was accepted). */
  async #send(
    call: Array<{ entry: PutEventsRequestEntry }>,
  ): Promise<Array<Omit<PublishFailure, 'eventId'> | undefined>> {
    try {
      const answer = await this.#client.send(new PutEventsCommand({ Entries: call.map((c) => c.entry) }));
      return call.map((_, index) => {
        const entry = answer.Entries?.[index];
        if (entry?.EventId && !entry.ErrorCode) return undefined;
        const code = entry?.ErrorCode ?? 'Unknown';
        return {
          code,
          message: entry?.ErrorMessage ?? 'no event id returned',
          retryable: RETRYABLE_CODES.has(code) || code === 'Unknown',
        };
      });
    } catch (error) {
      // The SDK already retried the whole call; what is left is kept pending by the engine.
      const e = error as {
        name?: string;
        message?: string;
        $retryable?: unknown;
        $metadata?: { httpStatusCode?: number };
      };
      const status = e.$metadata?.httpStatusCode ?? 0;
      const retryable = status === 0 || status >= 500 || status === 429 || RETRYABLE_CODES.has(e.name ?? '');
      return call.map(() => ({ code: e.name ?? 'Error', message: messageOf(error), retryable }));
    }
  }
}
