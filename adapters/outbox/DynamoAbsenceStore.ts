/**
 * The deletion grace's counts in a DynamoDB table the stack owns (the functions'): see DynamoClusterRecords. Only
 * cpsync's functions write it; a hub writer can neither raise a count (hasten a deletion) nor clear one.
 */
import type { AbsenceStore, MissedListings } from '../../core/sync/ports.ts';
import { DynamoClusterRecords, type DynamoRecordsOptions } from './DynamoClusterRecords.ts';
import { ABSENCES } from './FileAbsenceStore.ts';

export class DynamoAbsenceStore extends DynamoClusterRecords<MissedListings> implements AbsenceStore {
  constructor(options: DynamoRecordsOptions) {
    super(options, ABSENCES);
  }
}
