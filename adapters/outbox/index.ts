/** Outboxes: where events wait until the bus takes them. */
export { FileOutbox } from './FileOutbox.ts';
export { DynamoOutbox, OUTBOX_RETENTION_DAYS, type DynamoOutboxOptions } from './DynamoOutbox.ts';
