import { createHash } from 'node:crypto';
import { readFileSync, readlinkSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { dirname, join } from 'node:path';
import { link, open, readdir, readFile, rename, rm, stat, unlink } from 'node:fs/promises';

/** Temporary files this process is writing right now (removed when a run is stopped). */
const inFlight = new Set<string>();
let counter = 0;

/**
 * Where this process runs, as far as process ids mean anything: the machine's name, its kernel's boot, and its
 * process-id namespace. Two containers on one machine may share the name, but not their process ids; two
 * machines, or two microVMs (Lambda's sandboxes each boot a kernel of their own), may share the name and the
 * id of their first process-id namespace, but never a boot (the kernel's `boot_id`, made anew at each boot).
 */
function processSpace(): string {
  const parts = [hostname()];
  for (const read of [
    () => readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim(),
    () => readlinkSync('/proc/self/ns/pid'),
  ])
    try {
      parts.push(read());
    } catch {
      // Not Linux: the machine's name alone.
    }
  return parts.join('/');
}

/** This machine (its boot, and process-id namespace), as lock files and leases record it. */
export const HOST = processSpace();
const HOST_TAG = createHash('sha256').update(HOST).digest('hex').slice(0, 8);

/** `<file>.<host tag>.<pid>.<n>.tmp`: unique per write, naming the process (and where it runs) that made it. */
const TEMPORARY = /\.([0-9a-f]{8})\.(\d+)\.\d+\.tmp$/;
/** Temporary files of other machines (or of earlier versions, `<file>.<pid>[.<n>].tmp`) are removed once this old. */
const ABANDONED_AFTER_MILLIS = 24 * 60 * 60 * 1000;

function temporaryFor(path: string): string {
  counter += 1;
  return `${path}.${HOST_TAG}.${process.pid}.${counter}.tmp`;
}

/** Whether a process of this machine is still running. */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

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
    const handle = await open(temporary, 'wx');
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
  if (!options.durable) return replaceFileNow(path, text);
  const temporary = await writeTemporary(path, text, true);
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
 * replaceFile without flushing, done at once: a small file written to the page cache takes microseconds,
 * and the thread-pool round trips of the asynchronous calls cost about four times the CPU (a sync writes
 * tens of thousands of profile files).
 */
function replaceFileNow(path: string, text: string): void {
  const temporary = temporaryFor(path);
  try {
    writeFileSync(temporary, text, { encoding: 'utf8', flag: 'wx' });
    renameSync(temporary, path);
  } catch (error) {
    rmSync(temporary, { force: true });
    throw error;
  }
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
 * Removes temporary files in `directory` that processes left behind when they stopped (killed, or out
 * of disk): at once those of processes of this machine that are gone; those of other machines (a
 * shared volume) once they are a day old. Files being written are left alone.
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
    if (!entry.endsWith('.tmp')) continue;
    const path = join(directory, entry);
    if (inFlight.has(path)) continue;
    const ours = TEMPORARY.exec(entry);
    let abandoned: boolean;
    if (ours && ours[1] === HOST_TAG) {
      const pid = Number(ours[2]);
      abandoned = pid === process.pid || !processAlive(pid);
    } else {
      const modified = await stat(path).then(
        (s) => s.mtimeMs,
        () => Date.now(),
      );
      abandoned = Date.now() - modified > ABANDONED_AFTER_MILLIS;
    }
    if (!abandoned) continue;
    await rm(path, { force: true });
    removed += 1;
  }
  return removed;
}

/** A file's text, or undefined when there is no such file (another process may have removed it). */
export async function readIfExists(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}
