import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { temporaryDirectory } from '../../support/tmp.ts';

const BINARIES = fileURLToPath(new URL('../../env/binaries.ts', import.meta.url));

describe('the test binaries cache', () => {
  it('lets several test runs build the same binary at the same moment, each ending with a working binary', async () => {
    const work = temporaryDirectory('cpsync-binaries-');
    const module = join(work, 'hello');
    mkdirSync(module);
    writeFileSync(join(module, 'go.mod'), 'module example.com/hello\n\ngo 1.22\n');
    writeFileSync(join(module, 'main.go'), 'package main\n\nfunc main() { println("built") }\n');
    const cache = join(work, 'bin');
    // Each builder is its own process, as two test runs on one machine are.
    const builder = `
      import { ensureBinary } from ${JSON.stringify(BINARIES)};
      const path = ensureBinary(
        { name: 'hello', version: 'v1', module: ${JSON.stringify(module)}, pkg: '.', ldflags: '-s -w' },
        ${JSON.stringify(cache)},
      );
      console.log(path);
    `;
    const runs = await Promise.all(
      Array.from(
        { length: 4 },
        () =>
          new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
            const child = spawn(process.execPath, ['--input-type=module', '-e', builder]);
            let stdout = '';
            let stderr = '';
            child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
            child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
            child.on('close', (code) => resolve({ code, stdout, stderr }));
          }),
      ),
    );
    for (const run of runs) assert.equal(run.code, 0, run.stderr);
    const paths = new Set(runs.map((r) => r.stdout.trim()));
    assert.deepEqual([...paths], [join(cache, 'hello-v1')]);
    const built = spawnSync(join(cache, 'hello-v1'), { encoding: 'utf8' });
    assert.equal(built.stderr.trim(), 'built');
    assert.deepEqual(readdirSync(cache), ['hello-v1'], 'no partial file left behind');
  });
});
