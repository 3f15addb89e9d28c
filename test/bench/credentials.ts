/**
 * The standalone credential plugin's size and start-up: builds dist/cpsync-credentials.mjs into a
 * temporary directory and runs it N times (EKS from flags with static keys: the token is signed in the
 * process, so the time is the plugin's own, not a cloud's), with this Node and any other given.
 *   npm run bench:credentials [-- <runs> <other node binaries…>]
 */
import { spawnSync } from 'node:child_process';
import { rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { temporaryDirectory } from '../support/tmp.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));
const runs = Number(process.argv[2] ?? 20);
const nodes = [process.execPath, ...process.argv.slice(3)];
const directory = temporaryDirectory('cpsync-bench-credentials-');
try {
  const plugin = join(directory, 'cpsync-credentials.mjs');
  const built = spawnSync(process.execPath, [join(root, 'infra/build-credentials.ts'), plugin], {
    encoding: 'utf8',
  });
  if (built.status !== 0) throw new Error(built.stderr);
  console.log(`plugin: ${(statSync(plugin).size / 1024 / 1024).toFixed(2)} MiB, one file`);
  const env = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    AWS_ACCESS_KEY_ID: 'AKIAIOSFODNN7EXAMPLE',
    AWS_SECRET_ACCESS_KEY: 'bench-secret',
    AWS_EC2_METADATA_DISABLED: 'true',
  };
  for (const node of nodes) {
    const version = spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout.trim();
    const times: number[] = [];
    for (let i = 0; i < runs; i++) {
      const started = process.hrtime.bigint();
      const run = spawnSync(
        node,
        [plugin, '--provider', 'eks', '--cluster-name', 'bench', '--region', 'us-east-1'],
        {
          env,
          encoding: 'utf8',
        },
      );
      times.push(Number(process.hrtime.bigint() - started) / 1e6);
      if (run.status !== 0 || !run.stdout.includes('k8s-aws-v1.')) throw new Error(run.stderr);
    }
    times.sort((a, b) => a - b);
    const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))]!.toFixed(0);
    console.log(
      `node ${version}: ${runs} runs to a token, median ${at(0.5)} ms, p90 ${at(0.9)} ms, min ${at(0)} ms`,
    );
  }
} finally {
  rmSync(directory, { recursive: true, force: true });
}
