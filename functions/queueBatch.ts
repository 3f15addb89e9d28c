/**
 * An SQS batch processed message by message with the Powertools batch processor, and every message that
 * fails logged with its reason, never its body: one that does not parse (malformed) or that the function
 * refuses (the configuration does not cover it) at INFO — it is input, not an outage —, any other failure at
 * WARN, as SQS delivers it again. The batch processor itself logs a parse failure at DEBUG only, and a
 * refusal not at all.
 */
import { processPartialResponse, type BatchProcessor, type ParsedRecord } from '@aws-lambda-powertools/batch';
import type { PartialItemFailureResponse } from '@aws-lambda-powertools/batch/types';
import type { Context, SQSEvent, SQSRecord } from 'aws-lambda';
import { cut, printable } from '../core/domain/text.ts';
import { logger } from './runtime.ts';

/** The longest reason logged for one message (a message is input: its text may be long). */
const MAX_REASON_CHARS = 500;

/**
 * Why a message failed, as it may be logged. The parser's words about a body that is not JSON quote the text it
 * could not read, so such a body is said to be not JSON, and no more of it.
 */
function reasonOf(error: Error): string {
  if (error.name === 'ParsingError' && error.message.includes('Invalid JSON')) return 'body: not JSON';
  return printable(cut(error.message, MAX_REASON_CHARS));
}

/**
 * `processPartialResponse` over `event`, then each failed message logged: `refused` tells a message the
 * function refuses from one that failed and comes back.
 */
export async function processQueueBatch<T>(
  event: SQSEvent,
  record: (item: ParsedRecord<SQSRecord, T>) => Promise<unknown>,
  processor: BatchProcessor,
  context: Context,
  refused: (error: Error) => boolean,
): Promise<PartialItemFailureResponse> {
  try {
    return await processPartialResponse(event, record as never, processor, { context });
  } finally {
    processor.failureMessages.forEach((message, index) => {
      const error = processor.errors[index]!;
      const { messageId } = message as SQSRecord;
      const reason = reasonOf(error);
      if (error.name === 'ParsingError') logger.info('message refused: malformed', { messageId, reason });
      else if (refused(error)) logger.info('message refused', { messageId, reason });
      else logger.warn('message failed: SQS delivers it again', { messageId, reason });
    });
  }
}
