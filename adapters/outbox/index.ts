/** Outboxes: where events wait until the bus takes them. */
export { FileOutbox } from './FileOutbox.ts';
