/**
 * The state directory of a configuration whose outbox is a directory: its unpublished events, its write-ahead
 * intents, its grants ledger (`grants/`) and its remembered answers (`answers/`). Nothing in it is keyed by
 * manager or hub, so it holds one configuration's state, and says whose in its `owner` file (the manager, and the
 * hub as the configuration names it). Shared, one configuration would publish the other's events on its own bus,
 * settle the other's intents against its own hub (and so drop them), and take the other's grants for its own.
 *
 * - `outbox.directory` set: the directory is claimed for the configuration, or refused, naming both, when it
 *   holds another's; nothing there is read or written then.
 * - Unset: `.cpsync/outbox` where cpsync is run when it is this configuration's, or was made by an earlier
 *   version (no `owner` file: the first configuration composed after the upgrade keeps it, as every
 *   configuration used it before); else `.cpsync/state-<hash of the manager and the hub>`, a directory of the
 *   configuration's own. Two configurations run from one directory no longer share their state.
 */
import { createHash, randomUUID } from 'node:crypto';
import { linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { CpsyncError } from '../../core/domain/errors.ts';

/** Whose state a state directory holds: the manager, and the hub it writes (as the configuration names it). */
export interface StateOwner {
  manager: string;
  hub: string;
}

/** A state directory that holds another configuration's state, or does not say whose it holds. */
export class StateDirectoryTakenError extends CpsyncError {}

/** The file naming a state directory's owner. */
export const OWNER_FILE = 'owner';

/** The default state directory of earlier versions, where cpsync is run. */
export const EARLIER_DEFAULT = join('.cpsync', 'outbox');

/** What `link` fails with where a file system has no hard links. */
const NO_LINKS = new Set(['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS', 'EXDEV']);

type Claim = 'claimed' | 'absent' | { heldBy: StateOwner } | { unreadable: string };

/**
 * How long an empty owner file is read again before it is judged: where the file system has no hard links, a
 * claiming process creates it exclusively in place and then writes it, and another may read it in between.
 */
const EMPTY_OWNER_WAIT_MILLIS = 10_000;
const EMPTY_OWNER_STEP_MILLIS = 5;

/** Waits `millis` without leaving the call (the claim is made before anything else of the run). */
function pause(millis: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, millis);
}

/** The owner file's text; undefined when there is none. Empty is read again for a while (see above). */
function ownerText(directory: string): string | undefined {
  const path = join(directory, OWNER_FILE);
  for (let waited = 0; ; waited += EMPTY_OWNER_STEP_MILLIS) {
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
    if (text !== '' || waited >= EMPTY_OWNER_WAIT_MILLIS) return text;
    pause(EMPTY_OWNER_STEP_MILLIS);
  }
}

/** The owner a state directory names, as read; `absent` when it names none. */
function ownerOf(directory: string): Claim {
  const text = ownerText(directory);
  if (text === undefined) return 'absent';
  let held: unknown;
  try {
    held = JSON.parse(text);
  } catch {
    held = undefined;
  }
  const { manager, hub } = (held ?? {}) as Partial<StateOwner>;
  if (typeof manager !== 'string' || typeof hub !== 'string')
    return { unreadable: `${join(directory, OWNER_FILE)} does not say whose state the directory holds` };
  return { heldBy: { manager, hub } };
}

/**
 * Claims `directory` for `owner` when it names no owner (`create`: making it when it does not exist), and says
 * whose it is then: `claimed` when `owner`'s.
 */
function claim(directory: string, owner: StateOwner, create: boolean): Claim {
  let found = ownerOf(directory);
  if (found === 'absent') {
    // Written whole beside it, then linked in place: another process never reads a half-written owner file, and
    // one stopped in between leaves none.
    const temporary = join(directory, `.owner-${process.pid}-${randomUUID().slice(0, 8)}`);
    try {
      if (create) mkdirSync(directory, { recursive: true });
      const text = `${JSON.stringify(owner, null, 1)}\n`;
      writeFileSync(temporary, text, { flag: 'wx' });
      try {
        linkSync(temporary, join(directory, OWNER_FILE));
      } catch (error) {
        // A file system without hard links (FAT, some network and FUSE mounts): created exclusively in place.
        if (!NO_LINKS.has((error as NodeJS.ErrnoException).code ?? '')) throw error;
        writeFileSync(join(directory, OWNER_FILE), text, { flag: 'wx' });
      }
      return 'claimed';
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' && !create) return 'absent';
      // Claimed meanwhile by another process: judged as that one wrote it.
      if (code !== 'EEXIST') throw error;
      found = ownerOf(directory);
    } finally {
      rmSync(temporary, { force: true });
    }
  }
  if (typeof found === 'object' && 'heldBy' in found && isDeepStrictEqual(found.heldBy, owner))
    return 'claimed';
  return found;
}

function refusal(directory: string, found: Exclude<Claim, 'claimed' | 'absent'>, owner: StateOwner) {
  if ('unreadable' in found)
    return new StateDirectoryTakenError(
      `${found.unreadable} (expected {"manager": …, "hub": …}); nothing was read or written there — restore it (or remove it, and the next configuration run takes the directory as it is), or give this configuration another outbox.directory`,
    );
  return new StateDirectoryTakenError(
    `the state directory ${directory} holds the outbox, intents and grants ledger of manager "${found.heldBy.manager}" writing hub ${found.heldBy.hub}; this configuration is manager "${owner.manager}" writing hub ${owner.hub}. Nothing was read or written there: give this configuration a directory of its own (outbox.directory), or, if that state is this configuration's (its hub named otherwise since), remove ${join(directory, OWNER_FILE)} and run it again`,
  );
}

/** The state directory of a configuration named by its own `outbox.directory`: claimed, or refused. */
export function claimedDirectory(directory: string, owner: StateOwner): string {
  const path = resolve(directory);
  const found = claim(path, owner, true);
  if (found === 'claimed') return path;
  throw refusal(path, found as Exclude<Claim, 'claimed' | 'absent'>, owner);
}

/** The default state directory of `owner`, where cpsync is run (`cwd`): see the module's comment. */
export function defaultDirectory(owner: StateOwner, cwd: string = process.cwd()): string {
  const earlier = resolve(cwd, EARLIER_DEFAULT);
  const key = createHash('sha256')
    .update(JSON.stringify([owner.manager, owner.hub]))
    .digest('hex')
    .slice(0, 16);
  const own = resolve(cwd, '.cpsync', `state-${key}`);
  const mine = (found: Claim) =>
    typeof found === 'object' && 'heldBy' in found && isDeepStrictEqual(found.heldBy, owner);
  const found = ownerOf(earlier);
  if (mine(found)) return earlier;
  // Whose it is cannot be told: it may be this configuration's, and is neither left nor taken silently.
  if (typeof found === 'object' && 'unreadable' in found) throw refusal(earlier, found, owner);
  // A directory of its own already: kept, whatever appears at the earlier default since.
  if (mine(ownerOf(own))) return own;
  if (found === 'absent' && claim(earlier, owner, false) === 'claimed') return earlier;
  return claimedDirectory(own, owner);
}
