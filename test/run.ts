/**
 * The test command: starts one real local hub (etcd + kube-apiserver with the upstream CRD) for the
 * whole run, runs every test file with node's test runner, and stops the hub however the run ends.
 *   node test/run.ts          every test
 *   node test/run.ts unit     the unit tests only (no hub)
 */
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startHub, stopHub } from './env/hub.ts';

const only = process.argv[2];
const patterns = only === 'unit' ? ['test/unit/**/*.test.ts'] : ['test/**/*.test.ts'];
const env: NodeJS.ProcessEnv = { ...process.env };

let hubDirectory: string | undefined;
if (only !== 'unit') {
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
};
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => void stop().then(() => process.exit(130)));
}

const reporter = process.env.CPSYNC_TEST_REPORTER ?? 'spec';
// One file at a time: tests read the hub's own request counters (kube-apiserver /metrics), which
// count every request the server takes, so no other file may use the hub meanwhile.
const child = spawn(
  process.execPath,
  ['--test', '--test-concurrency=1', `--test-reporter=${reporter}`, ...patterns],
  {
    stdio: 'inherit',
    env,
  },
);
const code = await new Promise<number>((resolve) =>
  child.on('exit', (status, signal) => resolve(status ?? (signal ? 1 : 0))),
);
await stop();
process.exitCode = code;
