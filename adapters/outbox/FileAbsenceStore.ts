/**
 * The deletion grace's counts as files (the CLI's): `<outbox>/absences/<provider>-<hash of the account>/account.json`
 * (see FileClusterRecords), in the state directory only cpsync writes. A file lost or torn is a count begun again.
 */
import type { AbsenceStore, MissedListings } from '../../core/sync/ports.ts';
import { FileClusterRecords, isClusterRecord, type RecordKind } from './FileClusterRecords.ts';

/** Whether `value` is a count as the store writes them. */
function isMissedListings(value: unknown): value is MissedListings {
  const r = value as Partial<MissedListings> | null;
  return (
    isClusterRecord(value) &&
    Number.isSafeInteger(r!.missed) &&
    r!.missed! >= 1 &&
    typeof r!.countedAt === 'number' &&
    Number.isFinite(r!.countedAt)
  );
}

/** Missed listings: the later of two is the one counted later. */
export const ABSENCES: RecordKind<MissedListings> = {
  folder: 'absences',
  attribute: 'countedAt',
  is: isMissedListings,
  at: (record) => record.countedAt,
  // A count decides a deletion: found by its cluster wherever it was filed, and never read from a lagging index.
  perAccount: true,
};

export class FileAbsenceStore extends FileClusterRecords<MissedListings> implements AbsenceStore {
  /** `outboxDirectory`: the file outbox's directory (the state directory), which the store lives in. */
  constructor(outboxDirectory: string) {
    super(outboxDirectory, ABSENCES);
  }
}
