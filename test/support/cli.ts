/** Runs the real `cpsync` command in a child process, as a user (or a script, or a pipe) would. */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Plugin } from 'esbuild';
import { cliBundleOptions } from '../../infra/bundling.ts';
import { temporaryDirectory } from './tmp.ts';

/** The `cpsync` command as installed: the launcher, which runs the bundle the test command builds first. */
export const CLI = fileURLToPath(new URL('../../cli/cpsync.mjs', import.meta.url));

export interface CliRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface CliOptions {
  cwd?: string;
  env?: Record<string, string>;
  /** Called with the child as soon as it is started (to kill it, close its stdout, …). */
  started?: (child: ChildProcessWithoutNullStreams) => void;
  /** Called with each chunk of stdout. */
  onStdout?: (text: string, child: ChildProcessWithoutNullStreams) => void;
  /** Called with everything printed on stderr so far, at each chunk. */
  onStderr?: (text: string, child: ChildProcessWithoutNullStreams) => void;
  /** Run with `env` alone, not added to this process's environment (a machine with nothing of this one's). */
  clean?: boolean;
  /** Prefix the command (e.g. `unshare …`); the CLI's own arguments follow. */
  wrapper?: string[];
  /** The command to run: a build of its own (`cliWithNames`). @default CLI */
  command?: string;
}

/** The CLI's exit, with everything it printed. */
export function runCli(args: readonly string[], options: CliOptions = {}): Promise<CliRun> {
  return new Promise((resolve) => {
    const command = [...(options.wrapper ?? []), process.execPath, options.command ?? CLI, ...args];
    const child = spawn(command[0]!, command.slice(1), {
      ...(options.cwd ? { cwd: options.cwd } : {}),
      env: options.clean ? { ...options.env } : { ...process.env, ...options.env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString('utf8');
      options.onStdout?.(chunk.toString('utf8'), child);
    });
    child.stdout.on('error', () => {});
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
      options.onStderr?.(stderr, child);
    });
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
    options.started?.(child);
  });
}

/**
 * The JSON lines a run printed on stdout (the stdout bus): whole lines only — a run killed in the middle
 * of a write leaves half a line, an event that was not delivered.
 */
export function jsonLines<T = Record<string, unknown>>(stdout: string): T[] {
  const lines = stdout.split('\n').slice(0, -1);
  return lines.flatMap((line) => {
    if (!line.trim().startsWith('{')) return [];
    try {
      return [JSON.parse(line) as T];
    } catch {
      return [];
    }
  });
}

/** Whether `text` holds a stack trace (what a user must never be shown). */
export function hasStackTrace(text: string): boolean {
  return /^\s+at .+\(.*:\d+:\d+\)$/m.test(text) || /^\s+at (async )?\S+ \(/m.test(text);
}

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const builds = new Map<string, Promise<string>>();

/**
 * The `cpsync` command bundled as it is installed, but with another name scheme in place of the product's
 * (`test/support/naming/<scheme>.ts` stands for core/domain/naming.ts wherever the product imports it):
 * `weak` makes clusters of the same display name want the same name; `legacy` names profiles as earlier
 * versions did. Built once per test process into a temporary directory; resolves to the command's entry.
 */
export function cliWithNames(scheme: 'weak' | 'legacy'): Promise<string> {
  const built = builds.get(scheme);
  if (built) return built;
  const naming = join(ROOT, 'core/domain/naming.ts');
  const substitute = join(ROOT, `test/support/naming/${scheme}.ts`);
  const product = ['core', 'adapters', 'cli', 'functions', 'events', 'infra'].map((d) => join(ROOT, d, '/'));
  const swap: Plugin = {
    name: `${scheme}-names`,
    setup(esbuild) {
      esbuild.onResolve({ filter: /naming\.ts$/ }, (args) =>
        resolve(args.resolveDir, args.path) === naming &&
        product.some((folder) => args.importer.startsWith(folder))
          ? { path: substitute }
          : undefined,
      );
    },
  };
  const outdir = temporaryDirectory(`cpsync-cli-${scheme}-names-`);
  const options = cliBundleOptions(join('cli', 'bin.ts'), outdir);
  const building = build({
    ...options,
    absWorkingDir: ROOT,
    sourcemap: false,
    metafile: false,
    plugins: [swap, ...(options.plugins ?? [])],
  }).then(() => join(outdir, 'cpsync.mjs'));
  builds.set(scheme, building);
  return building;
}
