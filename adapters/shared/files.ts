import { hostname } from 'node:os';
import { dirname, join } from 'node:path';
import { link, open, readdir, rename, rm, unlink } from 'node:fs/promises';

/** Temporary files this process is writing right now (removed when a run is stopped). */
const inFlight = new Set<string>();
let counter = 0;

/** `<file>.<pid>.<n>.tmp`: unique per write, and naming the process that made it (earlier versions: `<file>.<pid>.tmp`). */
const TEMPORARY = /\.(\d+)(?:\.\d+)?\.tmp$/;

function temporaryFor(path: string): string {
  counter += 1;
  return `${path}.${process.pid}.${counter}.tmp`;
}

/** Whether a process of this machine is still running. */
function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** This machine's name, as lock files record it. */
export const HOST = hostname();

/** Flushes a directory's entries (a rename or a new file in it) to the disk. */
async function syncDirectory(directory: string): Promise<void> {
  const handle = await open(directory, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Writes `text` to a new temporary file beside `path` and flushes it; removes it again on failure. */
async function writeTemporary(path: string, text: string, durable: boolean): Promise<string> {
  const temporary = temporaryFor(path);
  inFlight.add(temporary);
  try {
    const handle = await open(temporary, 'wx', 0o600);
    try {
      await handle.writeFile(text, 'utf8');
      if (durable) await handle.sync();
    } finally {
      await handle.close();
    }
    return temporary;
  } catch (error) {
    inFlight.delete(temporary);
    await rm(temporary, { force: true });
    throw error;
  }
}

export interface WriteOptions {
  /**
   * Flush the file and its directory to the disk before resolving, so that what counts as written
   * survives a power loss.
   * @default false
   */
  durable?: boolean;
}

/**
 * Writes a whole file or leaves the old one: the text goes to a temporary file of this process that
 * is then renamed over it, so a reader (or another process) never sees half a file. A write that
 * fails (a full disk) leaves no temporary file behind.
 */
export async function replaceFile(path: string, text: string, options: WriteOptions = {}): Promise<void> {
  const temporary = await writeTemporary(path, text, options.durable === true);
  try {
    await rename(temporary, path);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  } finally {
    inFlight.delete(temporary);
  }
  if (options.durable) await syncDirectory(dirname(path));
}

/**
 * Creates `path` with `text` only if it does not exist yet (whole, never half written); false when
 * it exists.
 */
export async function createFileExclusively(
  path: string,
  text: string,
  options: WriteOptions = {},
): Promise<boolean> {
  const temporary = await writeTemporary(path, text, options.durable === true);
  try {
    await link(temporary, path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  } finally {
    inFlight.delete(temporary);
    await unlink(temporary).catch(() => {});
  }
  if (options.durable) await syncDirectory(dirname(path));
  return true;
}

/** Removes the temporary files of this process that are being written (a stopped run). */
export async function removeTemporaryFiles(): Promise<void> {
  await Promise.all([...inFlight].map((file) => rm(file, { force: true })));
  inFlight.clear();
}

/**
 * Removes temporary files in `directory` that processes of this machine left behind when they
 * stopped (killed, or out of disk). Files of processes still running are left alone.
 */
export async function removeAbandonedTemporaryFiles(directory: string): Promise<number> {
  let entries: string[];
  try {
    entries = await readdir(directory);
  } catch {
    return 0;
  }
  let removed = 0;
  for (const entry of entries) {
    const pid = Number(TEMPORARY.exec(entry)?.[1]);
    if (!pid || (pid !== process.pid && processAlive(pid))) continue;
    if (pid === process.pid && inFlight.has(join(directory, entry))) continue;
    await rm(join(directory, entry), { force: true });
    removed += 1;
  }
  return removed;
}

/** Leases (`name` and holder) that runs of this process gave up, even when telling the hub failed. */
const released = new Set<string>();

/** Records that a run of this process gave up `name`. */
export function leaseReleased(name: string, holder: string): void {
  released.add(`${name}\n${holder}`);
}

/** Records that a run of this process holds `name` (again). */
export function leaseTaken(name: string, holder: string): void {
  released.delete(`${name}\n${holder}`);
}

/**
 * Whether lease `name`, recorded for `holder` on `host` by process `pid`, is abandoned: its process,
 * on this machine, is gone — or is this process, and the run gave it up. A lease of another machine is
 * abandoned only once it runs out.
 */
export function holderGone(host: string | undefined, pid: number, name: string, holder: string): boolean {
  if (host !== HOST || !(pid > 0)) return false;
  return pid === process.pid ? released.has(`${name}\n${holder}`) : !processAlive(pid);
}
