/**
 * Temporary directories of a test process: each made under the system's temporary folder and removed when
 * the process exits, whether its tests passed, failed or threw (node's test runner runs each file in a
 * process of its own). What a test started there (servers, hubs) must be stopped by then — `after` hooks do.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const made: string[] = [];
process.once('exit', () => {
  for (const directory of made) rmSync(directory, { recursive: true, force: true });
});

/** A new directory `<tmp>/<prefix>XXXXXX` (or under `base`), removed when this process exits. */
export function temporaryDirectory(prefix: string, base = tmpdir()): string {
  const directory = mkdtempSync(join(base, prefix));
  made.push(directory);
  return directory;
}
