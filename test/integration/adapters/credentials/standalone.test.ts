/**
 * The standalone credential plugin as a consumer's image carries it (the bundle `npm run build:credentials` makes),
 * run as client-go runs it: a process whose end is the answer. A token endpoint that takes the connection and never
 * answers must not keep it running past `--timeout`.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createServer, type Socket } from 'node:net';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { temporaryDirectory } from '../../../support/tmp.ts';

const ROOT = resolve(import.meta.dirname, '../../../..');

describe('the standalone credential plugin', () => {
  let plugin: string;
  const held: Socket[] = [];
  let child: ChildProcess | undefined;
  // Takes every connection and answers none (an STS endpoint behind a stalled proxy).
  const silent = createServer((socket) => held.push(socket));

  before(async () => {
    plugin = join(temporaryDirectory('cpsync-plugin-'), 'cpsync-credentials.mjs');
    const built = spawnSync(process.execPath, [join(ROOT, 'infra/build-credentials.ts'), plugin], {
      encoding: 'utf8',
    });
    assert.equal(built.status, 0, built.stderr);
    await new Promise<void>((listening) => silent.listen(0, '127.0.0.1', listening));
  });
  after(async () => {
    // Stopped whatever the outcome (a plugin that does not end is what the test looks for).
    if (child?.exitCode === null) child.kill('SIGKILL');
    for (const socket of held) socket.destroy();
    await new Promise((closed) => silent.close(closed));
  });

  it(
    'ends with one line and exit 1 at its --timeout while the token endpoint holds the connection open',
    { timeout: 120_000 },
    async () => {
      const { port } = silent.address() as { port: number };
      child = spawn(
        process.execPath,
        [
          plugin,
          '--provider',
          'eks',
          '--cluster-name',
          'payments',
          '--region',
          'eu-west-1',
          '--account',
          '111122223333',
          '--role-name',
          'reader',
          '--timeout',
          '1',
        ],
        {
          env: {
            PATH: process.env.PATH ?? '/usr/bin:/bin',
            AWS_ACCESS_KEY_ID: 'AKIAIOSFODNN7EXAMPLE',
            AWS_SECRET_ACCESS_KEY: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY',
            AWS_EC2_METADATA_DISABLED: 'true',
            AWS_ENDPOINT_URL_STS: `http://127.0.0.1:${port}`,
          },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      let stdout = '';
      let stderr = '';
      child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const code = await new Promise<number | null>((exited) => child!.on('exit', exited));
      assert.ok(held.length > 0, 'the role was asked of the silent endpoint');
      assert.equal(code, 1);
      assert.equal(stdout, '');
      assert.match(stderr, /^cpsync credentials: eks: .*--timeout.*\n$/);
    },
  );
});
