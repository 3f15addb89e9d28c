/**
 * The test command: starts one real local hub (etcd + kube-apiserver with the upstream CRD) for the
 * whole run, runs every test file with node's test runner, and stops the hub however the run ends.
 *   node test/run.ts          every test
 *   node test/run.ts unit     the unit tests only (no hub)
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startHub, stopHub } from './env/hub.ts';

const only = process.argv[2];
const patterns = ['test/unit/**/*.test.ts'];
// Every test process makes its temporary directories under this run's own folder: what is left there at the
// end was left behind by a test (a directory, a socket, a file), and the run fails naming it.
const temporary = mkdtempSync(join(tmpdir(), 'cpsync-tests-'));
const env: NodeJS.ProcessEnv = { ...process.env, TMPDIR: temporary };

// The `cpsync` runs of tests that name no outbox keep their state where they are run, here: each configuration in a
// directory of its own under .cpsync/ (adapters/outbox/stateDirectory.ts). Those made by this run go at its end.
const stateRoot = fileURLToPath(new URL('../.cpsync/', import.meta.url));
const stateBefore = new Set(existsSync(stateRoot) ? readdirSync(stateRoot) : []);

let hubDirectory: string | undefined;
if (only !== 'unit') {
  // The tests run the `cpsync` command as it is installed: the bundle, built now from the sources under test.
  execFileSync(process.execPath, [new URL('../infra/build-cli.ts', import.meta.url).pathname], {
    stdio: 'inherit',
  });
  hubDirectory = mkdtempSync(join(tmpdir(), 'cpsync-test-hub-'));
  const started = Date.now();
  const state = await startHub(hubDirectory, (line) => console.log(`[hub] ${line}`));
  console.log(
    `[hub] real kube-apiserver + etcd ready at ${state.server} in ${((Date.now() - started) / 1000).toFixed(1)} s`,
  );
  env.CPSYNC_TEST_HUB_DIR = hubDirectory;
}

const stop = async () => {
  if (hubDirectory) await stopHub(hubDirectory);
  if (hubDirectory) rmSync(hubDirectory, { recursive: true, force: true });
};
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => void stop().then(() => process.exit(130)));
}

const reporter = process.env.CPSYNC_TEST_REPORTER ?? 'spec';

// Every failed test is also written here, one JSON line each (test/support/failures.ts), and named again at the
// end of the run: a long run's own summary of a first part scrolls far out of sight behind the second.
const failuresFile = join(temporary, 'failures.jsonl');
const failuresReporter = new URL('./support/failures.ts', import.meta.url).pathname;
const failed: string[] = [];

/** Runs test files with node's test runner; resolves to its exit code. */
function nodeTest(files: string[], extra: string[] = []): Promise<number> {
  // One file at a time: tests read the hub's own request counters (kube-apiserver /metrics), which
  // count every request the server takes, so no other file may use the hub meanwhile.
  const child = spawn(
    process.execPath,
    [
      '--test',
      '--test-concurrency=1',
      `--test-reporter=${reporter}`,
      '--test-reporter-destination=stdout',
      `--test-reporter=${failuresReporter}`,
      `--test-reporter-destination=${failuresFile}`,
      ...extra,
      ...files,
    ],
    { stdio: 'inherit', env },
  );
  // The runner truncates its destination: what one part wrote is kept before the next part starts.
  return new Promise<number>((resolve) =>
    child.on('exit', (status, signal) => {
      if (existsSync(failuresFile))
        failed.push(...readFileSync(failuresFile, 'utf8').split('\n').filter(Boolean));
      resolve(status ?? (signal ? 1 : 0));
    }),
  );
}

let code: number;
if (only === 'unit') code = await nodeTest(patterns);
else {
  code = await nodeTest(['unit', 'integration', 'infra', 'property'].map((d) => `test/${d}/**/*.test.ts`));
  // The end-to-end and fault cases each start from ground of their own: they run in a random order
  // (the seed is printed; CPSYNC_TEST_SEED=<seed> repeats an order).
  const seed = process.env.CPSYNC_TEST_SEED ?? String(Math.floor(Math.random() * 2 ** 31));
  console.log(`[e2e] the cases run in a random order, seed ${seed} (CPSYNC_TEST_SEED=${seed} repeats it)`);
  const randomized = await nodeTest(
    ['test/e2e/**/*.test.ts', 'test/fault/**/*.test.ts'],
    ['--test-randomize', `--test-random-seed=${seed}`],
  );
  code = code || randomized;
}
await stop();
for (const name of existsSync(stateRoot) ? readdirSync(stateRoot) : [])
  if (!stateBefore.has(name)) rmSync(join(stateRoot, name), { recursive: true, force: true });
if (failed.length > 0) {
  console.error(`\n✖ ${failed.length} test(s) failed in this run:`);
  for (const line of failed) {
    const {
      name,
      file,
      line: at,
      message,
    } = JSON.parse(line) as { name: string; file: string; line: number; message: string };
    console.error(`  ✖ ${name}\n    at ${file}:${at}\n    ${message.trim().replaceAll('\n', '\n    ')}`);
  }
  code ||= 1;
}
const left = readdirSync(temporary).filter((name) => name.startsWith('cpsync-'));
if (left.length > 0) {
  console.error(
    `\n✖ the tests left ${left.length} temporary director(ies) behind: ${left.sort().join(', ')}`,
  );
  code ||= 1;
} else console.log('✔ the tests left nothing behind in the temporary folder');
rmSync(temporary, { recursive: true, force: true });
process.exitCode = code;
