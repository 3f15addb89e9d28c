/**
 * The full sync at scale into the file hub at the defaults, this checkout against an earlier commit, taking turns in
 * one run: each commit's own bench (its estate, its configuration, its `cpsync sync` bundle built from its sources),
 * each run a fresh process, the order swapped every round. A figure measured on another day shares nothing with
 * today's but the estate: this machine's speed moves from hour to hour and day to day by a quarter, so a target set
 * from an earlier figure is judged here against that figure's own code, measured beside today's.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, statfsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { median } from './turns.ts';

const ROOT = resolve(import.meta.dirname, '../..');
const TMPFS_MAGIC = 0x01021994;

/** One run's CPU per cluster, as its bench's section said it: full and steady, in milliseconds. */
interface Figures {
  full: number;
  steady: number;
}

/** The CPU row of a full-sync section, as every version of the bench has printed it. */
const CPU_ROW =
  /^\| \*\*CPU of the cpsync process per cluster\*\*[^|]*\| \*\*([\d.]+) ms\*\* \| \*\*([\d.]+) ms\*\* \|/m;

/** The commit's sources, unpacked once under .cache/bench/against/ with its CLI bundle built by its own script. */
function checkout(commit: string): string {
  const tree = join(ROOT, '.cache', 'bench', 'against', commit);
  if (existsSync(join(tree, 'dist', 'cpsync', 'cpsync.mjs'))) return tree;
  rmSync(tree, { recursive: true, force: true });
  mkdirSync(tree, { recursive: true });
  // `git archive`: the commit's files alone, no worktree to register. Its modules resolve to this checkout's
  // node_modules (an ancestor folder), so both measure the same libraries.
  const archive = execFileSync('git', ['archive', '--format=tar', commit], { cwd: ROOT, maxBuffer: 1 << 30 });
  execFileSync('tar', ['-x', '-C', tree], { input: archive });
  execFileSync(process.execPath, [join(tree, 'infra', 'build-cli.ts')], {
    cwd: tree,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  return tree;
}

/** One full sync and its steady re-sync by `tree`'s bench, in a process of its own; its section's CPU row read. */
function measure(tree: string, options: { scale: number; latencyMillis: number; temporary?: string }) {
  const script = `
    import { mkdtempSync, rmSync } from 'node:fs';
    import { join } from 'node:path';
    import { tmpdir } from 'node:os';
    const { fullSyncAtScale } = await import(${JSON.stringify(join(tree, 'test', 'bench', 'scale.ts'))});
    const directory = mkdtempSync(join(tmpdir(), 'cpsync-against-'));
    try {
      await fullSyncAtScale({ directory, fileHub: true, report: true, scale: ${options.scale},
        latencyMillis: ${options.latencyMillis}, say: (line = '') => process.stdout.write(line + '\\n') });
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }`;
  return new Promise<Figures>((done, fail) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      cwd: tree,
      env: { ...process.env, ...(options.temporary ? { TMPDIR: options.temporary } : {}) },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
    child.on('close', (code) => {
      const row = CPU_ROW.exec(out);
      if (code !== 0 || !row) fail(new Error(`the bench of ${tree} exited ${code}:\n${out.slice(-2000)}`));
      else done({ full: Number(row[1]), steady: Number(row[2]) });
    });
  });
}

export async function compareWithCommit(options: {
  commit: string;
  rounds: number;
  scale: number;
  latencyMillis: number;
  /** Where the runs' folders go when it is a tmpfs (the disk's own noise left out of both). */
  memory: string;
  say: (line?: string) => void;
}): Promise<void> {
  const { say } = options;
  const commit = execFileSync('git', ['rev-parse', '--verify', `${options.commit}^{commit}`], {
    cwd: ROOT,
    encoding: 'utf8',
  }).trim();
  const head = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
  const changed =
    execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], {
      cwd: ROOT,
      encoding: 'utf8',
    }) !== '';
  let inMemory = false;
  try {
    inMemory = statfsSync(options.memory).type === TMPFS_MAGIC;
  } catch {
    // No such folder: the runs' folders stay on the disk, and that is said.
  }
  const earlier = checkout(commit);
  const ways = [
    { label: `\`${commit.slice(0, 7)}\` (the earlier commit)`, tree: earlier, runs: [] as Figures[] },
    {
      label: `\`${head.slice(0, 7)}\`${changed ? ' with uncommitted changes' : ''} (this checkout)`,
      tree: ROOT,
      runs: [] as Figures[],
    },
  ];
  for (let round = 0; round < options.rounds; round++)
    for (const way of round % 2 ? [...ways].reverse() : ways)
      way.runs.push(
        await measure(way.tree, {
          scale: options.scale,
          latencyMillis: options.latencyMillis,
          ...(inMemory ? { temporary: options.memory } : {}),
        }),
      );

  say(`## Full sync at scale (file hub), against \`${commit.slice(0, 7)}\` in the same run`);
  say('');
  say(
    `Each commit's own full-sync section at the configuration's defaults (its estate, its configuration, its \`cpsync sync\` bundle built from its sources; the libraries of this checkout's node_modules for both), ${options.rounds} rounds, the two taking turns (the order swapped every round), each run a fresh process; the runs' folders ${inMemory ? `in ${options.memory} (a tmpfs), so that the disk's noise is in neither` : "on this machine's disk"}. Each figure is one run's CPU of the cpsync process per cluster.`,
  );
  say('');
  say('| commit | full sync, each run | median | steady, each run | median |');
  say('| --- | --- | --- | --- | --- |');
  for (const way of ways) {
    const full = way.runs.map((r) => r.full);
    const steady = way.runs.map((r) => r.steady);
    say(
      `| ${way.label} | ${full.map((v) => v.toFixed(2)).join(', ')} ms | ${median(full).toFixed(2)} ms | ${steady.map((v) => v.toFixed(2)).join(', ')} ms | ${median(steady).toFixed(2)} ms |`,
    );
  }
  const ratio = (pick: (f: Figures) => number) =>
    (median(ways[1]!.runs.map(pick)) / median(ways[0]!.runs.map(pick))).toFixed(2);
  say('');
  say(
    `This checkout's medians over the earlier commit's: **${ratio((f) => f.full)}** full, **${ratio((f) => f.steady)}** steady.`,
  );
  say('');
}
