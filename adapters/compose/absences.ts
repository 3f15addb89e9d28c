/**
 * Where cpsync counts the listings that missed each cluster (see `AbsenceStore`): the configured DynamoDB table
 * (the functions'), else the `absences/` folder of the outbox's directory (the CLI's). Both are cpsync's alone; the
 * hub, which others write, never is. With a DynamoDB outbox and no table the configuration is refused, unless one
 * missed listing deletes (`deletionGraceListings: 1`): then there is nothing to count.
 */
import type { AbsenceStore } from '../../core/sync/ports.ts';
import { ABSENCES_REQUIRED, ConfigError, type CpsyncConfig } from './config.ts';
import { stateDirectoryOf } from './hub.ts';

/** Counts nothing: every cluster has been missed by no listing before this one. */
const NOTHING_COUNTED: AbsenceStore = {
  read: () => Promise.resolve([]),
  write: () => Promise.resolve(),
};

export async function absenceStore(config: CpsyncConfig): Promise<AbsenceStore> {
  if (config.absences) {
    const { DynamoAbsenceStore } = await import('../outbox/DynamoAbsenceStore.ts');
    return new DynamoAbsenceStore({
      tableName: config.absences.table,
      ...(config.absences.endpoint ? { endpoint: config.absences.endpoint } : {}),
    });
  }
  const directory = await stateDirectoryOf(config);
  if (directory !== undefined) {
    const { FileAbsenceStore } = await import('../outbox/FileAbsenceStore.ts');
    return new FileAbsenceStore(directory);
  }
  if (config.inventory.deletionGraceListings === 1) return NOTHING_COUNTED;
  throw new ConfigError([ABSENCES_REQUIRED], '');
}
