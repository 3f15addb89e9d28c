/** Cold starts of bundled functions, each in a fresh Node process (`coldInvoke.ts`), for the bundle tests and the bench. */
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

export interface ColdRun {
  /** Module initialisation: the import of the bundle's entry. */
  initMillis: number;
  /** The first invocation, when there was an event. */
  invokeMillis?: number;
  result?: unknown;
  /** The bundle's files the process loaded, relative to its directory. */
  loaded: string[];
}

/**
 * Imports the bundle in `directory` in a fresh process and, given `event`, invokes its handler once.
 * Asynchronous: the local cloud servers answer from the calling process, whose event loop must keep running.
 */
export async function coldRun(
  directory: string,
  event: unknown,
  options: { env?: NodeJS.ProcessEnv; nodeArgs?: readonly string[]; timeoutMillis?: number } = {},
): Promise<ColdRun> {
  let eventFile = '-';
  if (event !== undefined) {
    eventFile = `${directory}.event.json`;
    writeFileSync(eventFile, JSON.stringify(event));
  }
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [...(options.nodeArgs ?? []), join(import.meta.dirname, 'coldInvoke.ts'), directory, eventFile],
    {
      encoding: 'utf8',
      env: options.env ?? process.env,
      ...(options.timeoutMillis ? { timeout: options.timeoutMillis } : {}),
    },
  );
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as ColdRun;
}
