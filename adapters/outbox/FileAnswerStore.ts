/**
 * The sources' remembered answers as files (the CLI's): `<outbox>/answers/<provider>-<hash of the account>/<region>.json`
 * (see FileClusterRecords). A file lost or torn is no record, and the cloud is asked again.
 */
import type { AnswerStore, RememberedAnswer } from '../../core/sync/ports.ts';
import { FileClusterRecords, isClusterRecord, type RecordKind } from './FileClusterRecords.ts';

/** Whether `value` is a record as the store writes them. */
function isRememberedAnswer(value: unknown): value is RememberedAnswer {
  const r = value as Partial<RememberedAnswer> | null;
  return (
    isClusterRecord(value) &&
    typeof r!.listed === 'string' &&
    typeof r!.askedAt === 'number' &&
    Number.isFinite(r!.askedAt) &&
    typeof r!.answer === 'object' &&
    r!.answer !== null &&
    !Array.isArray(r!.answer)
  );
}

/** Remembered answers: the later of two is the one asked later. */
export const ANSWERS: RecordKind<RememberedAnswer> = {
  folder: 'answers',
  attribute: 'askedAt',
  is: isRememberedAnswer,
  at: (record) => record.askedAt,
};

export class FileAnswerStore extends FileClusterRecords<RememberedAnswer> implements AnswerStore {
  /** `outboxDirectory`: the file outbox's directory (the state directory), which the store lives in. */
  constructor(outboxDirectory: string) {
    super(outboxDirectory, ANSWERS);
  }
}
