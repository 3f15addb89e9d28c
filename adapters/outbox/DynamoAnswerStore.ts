/**
 * The sources' remembered answers in a DynamoDB table the stack owns (the functions'): see DynamoClusterRecords.
 * A listing's older answer never replaces an event's newer one (the put is conditioned on `askedAt`).
 */
import type { AnswerStore, RememberedAnswer } from '../../core/sync/ports.ts';
import { DynamoClusterRecords, type DynamoRecordsOptions } from './DynamoClusterRecords.ts';
import { ANSWERS } from './FileAnswerStore.ts';

export type DynamoAnswerStoreOptions = DynamoRecordsOptions;

export class DynamoAnswerStore extends DynamoClusterRecords<RememberedAnswer> implements AnswerStore {
  constructor(options: DynamoAnswerStoreOptions) {
    super(options, ANSWERS);
  }
}
