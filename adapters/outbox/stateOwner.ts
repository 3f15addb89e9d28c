import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CpsyncError } from '../../core/domain/errors.ts';
import { isDeepStrictEqual } from 'node:util';

/** Whose state a state directory holds: the manager, and the hub it writes (as the configuration names it). */
export interface StateOwner {
  manager: string;
  hub: string;
}

/** A state directory that holds another configuration's state. */
export class StateDirectoryTakenError extends CpsyncError {}

/** The file naming a state directory's owner. */
export const OWNER_FILE = 'owner.json';

/**
 * Claims `directory` (the outbox's, with its intents and grants ledger) for `owner`, or refuses it when it holds
 * another's. Nothing in the directory is keyed by manager or hub: shared, one configuration would publish the
 * other's events on its own bus, settle the other's intents against its own hub (and so drop them), and forget
 * what the other granted. A directory without the file (made by an earlier version, or new) is claimed as it is.
 */
export function claimStateDirectory(directory: string, owner: StateOwner): void {
  const file = join(directory, OWNER_FILE);
  let text: string | undefined;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  if (text === undefined) {
    mkdirSync(directory, { recursive: true });
    try {
      writeFileSync(file, `${JSON.stringify(owner, null, 1)}\n`, { flag: 'wx' });
      return;
    } catch (error) {
      // Claimed meanwhile by another process: judged as that one wrote it.
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      text = readFileSync(file, 'utf8');
    }
  }
  let held: unknown;
  try {
    held = JSON.parse(text);
  } catch {
    held = undefined;
  }
  const { manager, hub } = (held ?? {}) as Partial<StateOwner>;
  if (typeof manager !== 'string' || typeof hub !== 'string')
    throw new StateDirectoryTakenError(
      `${file} does not say whose state the directory holds (expected {"manager": …, "hub": …}); nothing was read or written there — restore it, or give this configuration another outbox.directory`,
    );
  if (isDeepStrictEqual({ manager, hub }, { manager: owner.manager, hub: owner.hub })) return;
  throw new StateDirectoryTakenError(
    `the state directory ${directory} holds the outbox, intents and grants ledger of manager "${manager}" writing hub ${hub}; this configuration is manager "${owner.manager}" writing hub ${owner.hub}. Nothing was read or written there: give this configuration a directory of its own (outbox.directory)`,
  );
}
