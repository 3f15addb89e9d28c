/**
 * The standalone credential plugin's size and start-up: builds dist/cpsync-credentials.mjs into a
 * temporary directory and runs it N times (EKS from flags with static keys: the token is signed in the
 * process, so the time is the plugin's own, not a cloud's), with this Node and any other given, without and with
 * Node's compile cache (NODE_COMPILE_CACHE).
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
  // The plugin's own CPU, user and system, from its first instruction to its exit: printed by a module loaded
  // before it (--import), on stderr's last line.
  const cpuAtExit = `data:text/javascript,process.on('exit',()=>{const u=process.cpuUsage();process.stderr.write('cpu '+(u.user+u.system)/1000+'\\n')})`;
  // Without Node's compile cache, and with one in a directory of its own (NODE_COMPILE_CACHE, Node ≥ 22.1),
  // filled by a first run that is not counted.
  const cache = join(directory, 'compile-cache');
  for (const node of nodes)
    for (const cached of [false, true]) {
      const version = spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout.trim();
      const times: number[] = [];
      const cpu: number[] = [];
      for (let i = cached ? -1 : 0; i < runs; i++) {
        const started = process.hrtime.bigint();
        const run = spawnSync(
          node,
          [
            '--import',
            cpuAtExit,
            plugin,
            '--provider',
            'eks',
            '--cluster-name',
            'bench',
            '--region',
            'us-east-1',
          ],
          { env: cached ? { ...env, NODE_COMPILE_CACHE: cache } : env, encoding: 'utf8' },
        );
        const wall = Number(process.hrtime.bigint() - started) / 1e6;
        if (run.status !== 0 || !run.stdout.includes('k8s-aws-v1.')) throw new Error(run.stderr);
        if (i < 0) continue;
        times.push(wall);
        cpu.push(Number(/cpu ([\d.]+)\n$/.exec(run.stderr)?.[1]));
      }
      const at = (values: number[], q: number) => {
        const sorted = [...values].sort((a, b) => a - b);
        return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!.toFixed(0);
      };
      console.log(
        `node ${version}${cached ? ' with NODE_COMPILE_CACHE' : ''}: ${runs} runs to a token, median ${at(times, 0.5)} ms, p90 ${at(times, 0.9)} ms, min ${at(times, 0)} ms; the plugin's CPU, median ${at(cpu, 0.5)} ms`,
      );
    }
} finally {
  rmSync(directory, { recursive: true, force: true });
}
