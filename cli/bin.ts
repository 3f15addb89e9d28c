#!/usr/bin/env node
import { mkdirSync, statSync } from 'node:fs';
import { enableCompileCache } from 'node:module';
import { homedir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import { setFlagsFromString } from 'node:v8';

/**
 * Where Node keeps the compiled code of the modules cpsync loads: NODE_COMPILE_CACHE when set, else the user's
 * own cache directory (`$XDG_CACHE_HOME/cpsync/node-compile-cache`, `~/.cache/…` without it), made private.
 * Not Node's default, a folder of the shared temporary directory that any local user can make first and fill:
 * the compiled code found there is run. A folder another user owns, or others may write, is not used.
 */
function compileCacheDirectory(): string | undefined {
  if (process.env.NODE_COMPILE_CACHE) return process.env.NODE_COMPILE_CACHE;
  const xdg = process.env.XDG_CACHE_HOME;
  const base = xdg && isAbsolute(xdg) ? xdg : homedir() ? join(homedir(), '.cache') : undefined;
  if (!base) return undefined;
  const directory = join(base, 'cpsync', 'node-compile-cache');
  try {
    mkdirSync(directory, { recursive: true, mode: 0o700 });
    const { uid, mode } = statSync(directory);
    const mine = process.getuid === undefined || uid === process.getuid();
    return mine && (mode & 0o022) === 0 ? directory : undefined;
  } catch {
    return undefined; // no cache: every run compiles, as the first does
  }
}

// Node keeps the compiled code of the modules it loads (the cloud SDKs are large) in its compile cache
// on disk, so every run after the first starts faster. Enabled before the modules are imported.
const cache = compileCacheDirectory();
if (cache) enableCompileCache(cache);
// Warnings the libraries emit (gcp-metadata's MetadataLookupWarning when no Google credentials are found,
// deprecation notices) speak to cpsync's developers, not to its users: Node's own printer is removed, and
// they are shown only with CPSYNC_DEBUG set.
process.removeAllListeners('warning');
process.on('warning', (warning) => {
  if (process.env.CPSYNC_DEBUG) process.stderr.write(`cpsync: (debug) ${warning.name}: ${warning.message}\n`);
});
const { removeTemporaryFiles } = await import('../adapters/shared/files.ts');
const { main, SIGNAL_EXIT } = await import('./program.ts');

// V8 lets the heap grow to several times what is live before it collects; a sync allocates a lot of
// short-lived data (one listing, profile and event after another), so on a large estate the process
// would hold hundreds of MB of garbage. Collecting once the heap is 30 % over what is live keeps a
// 10,000-cluster sync under 512 MB (BENCHMARKS.md). A --heap-growing-percent given to Node wins.
const given = [...process.execArgv, process.env.NODE_OPTIONS ?? ''].some((flag) =>
  flag.includes('heap-growing-percent'),
);
if (!given) setFlagsFromString('--heap-growing-percent=30');

// SIGINT/SIGTERM stop a run cleanly: no new scope starts, the write in flight finishes, what was applied
// is announced, intents and leases are settled and the summary is printed (exit 130/143). A second
// signal stops at once; what that leaves is settled by the next run.
const stop = new AbortController();
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.on(signal, () => {
    if (!stop.signal.aborted) {
      process.stderr.write(
        `\ncpsync: ${signal}: stopping after the writes in flight (again to stop at once)\n`,
      );
      stop.abort(signal);
      return;
    }
    void removeTemporaryFiles().finally(() => process.exit(SIGNAL_EXIT[signal]));
  });
// A reader that goes away (`| head`) is a publishing failure the run reports, not a crash.
for (const stream of [process.stdout, process.stderr]) stream.on('error', () => {});

const code = await main(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  signal: stop.signal,
});
await removeTemporaryFiles();
// Once the run is over the process ends, even if a cloud SDK still holds a socket that never answered
// (its request was abandoned at the scope's deadline, but some SDKs close the socket only at their own timeout).
const flushed = (stream: NodeJS.WriteStream) =>
  new Promise<void>((resolve) => {
    if (stream.destroyed) return resolve();
    stream.write('', () => resolve());
  });
await Promise.all([flushed(process.stdout), flushed(process.stderr)]);
process.exit(code);
