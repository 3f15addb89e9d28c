/** Outboxes (where events wait until the bus takes them) and intent logs (write-ahead records of changes). */
export { FileOutbox } from './FileOutbox.ts';
export { FileIntentLog } from './FileIntentLog.ts';
export {
  DynamoIntentLog,
  DynamoOutbox,
  OUTBOX_RETENTION_DAYS,
  OutboxTable,
  type DynamoOutboxOptions,
} from './DynamoOutbox.ts';
