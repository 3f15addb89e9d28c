/**
 * The deletion grace's counts for tests that sync scopes against a hub of their own: one file store per hub, in a
 * directory removed when the process exits, as `cpsync sync` keeps them beside its outbox.
 */
import { FileAbsenceStore } from '../../adapters/outbox/FileAbsenceStore.ts';
import type { AbsenceStore } from '../../core/sync/ports.ts';
import {
  syncScope as syncScopeOf,
  type SyncScopeInput,
  type SyncScopeResult,
} from '../../core/sync/syncScope.ts';
import { temporaryDirectory } from './tmp.ts';

const stores = new WeakMap<object, AbsenceStore>();

/** The counts kept for the syncs against `hub` (the same store for every sync against it). */
export function absencesOf(hub: object): AbsenceStore {
  let store = stores.get(hub);
  if (!store) stores.set(hub, (store = new FileAbsenceStore(temporaryDirectory('cpsync-absences-'))));
  return store;
}

/** `syncScope` keeping its counts in the store of its hub (`absencesOf`), unless told another. */
export function syncScope(
  input: Omit<SyncScopeInput, 'absences'> & { absences?: AbsenceStore },
): Promise<SyncScopeResult> {
  return syncScopeOf({ ...input, absences: input.absences ?? absencesOf(input.hub) });
}
