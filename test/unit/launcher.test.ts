/**
 * The `cpsync` launcher (cli/cpsync.mjs) chooses what to run: the bundle when it was built from the
 * sources as they are, the sources when one is newer or no bundle was built, the bundle alone in an
 * installed package (no sources). Checked on a tree of its own, with the real launcher and stand-ins
 * for the bundle and the sources that say which ran and with what arguments.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import { temporaryDirectory } from '../support/tmp.ts';

const LAUNCHER = new URL('../../cli/cpsync.mjs', import.meta.url).pathname;

function tree() {
  const root = temporaryDirectory('cpsync-launcher-');
  mkdirSync(join(root, 'cli'));
  mkdirSync(join(root, 'dist', 'cpsync'), { recursive: true });
  copyFileSync(LAUNCHER, join(root, 'cli', 'cpsync.mjs'));
  const says = (what: string) =>
    `process.stdout.write(${JSON.stringify(what)} + ' ' + process.argv.slice(2).join(' '));\n`;
  writeFileSync(join(root, 'cli', 'bin.ts'), `const from: string = 'sources';\n${says('sources')}`);
  writeFileSync(join(root, 'dist', 'cpsync', 'cpsync.mjs'), says('bundle'));
  // The sources as a checkout leaves them: an hour old.
  const anHourAgo = new Date(Date.now() - 3_600_000);
  utimesSync(join(root, 'cli', 'bin.ts'), anHourAgo, anHourAgo);
  const built = (builtAt: number) =>
    writeFileSync(
      join(root, 'dist', 'cpsync', 'inputs.json'),
      JSON.stringify({ builtAt, sources: ['cli/bin.ts', 'package-lock.json'] }),
    );
  const run = async (...args: string[]) =>
    (await promisify(execFile)(process.execPath, [join(root, 'cli', 'cpsync.mjs'), ...args])).stdout;
  return { root, built, run };
}

describe('the cpsync launcher', () => {
  it('runs the bundle built from the sources as they are, passing the arguments on', async () => {
    const { built, run } = tree();
    built(Date.now());
    assert.equal(await run('sync', '--dry-run'), 'bundle sync --dry-run');
  });

  it('runs the sources once one of them is newer than the bundle', async () => {
    const { root, built, run } = tree();
    built(Date.now() - 60_000);
    writeFileSync(
      join(root, 'cli', 'bin.ts'),
      `const edited: string = 'sources';\nprocess.stdout.write(edited);\n`,
    );
    assert.equal(await run('list'), 'sources');
  });

  it('runs the sources when no bundle was built', async () => {
    const { root, run } = tree();
    rmSync(join(root, 'dist'), { recursive: true });
    assert.equal(await run('--help'), 'sources --help');
  });

  it('runs the bundle in an installed package, which carries no sources, whatever the age of its files', async () => {
    const { root, built, run } = tree();
    built(Date.now() - 60_000);
    rmSync(join(root, 'cli', 'bin.ts'));
    assert.equal(await run('validate-config'), 'bundle validate-config');
    // A package.json unpacked later than the bundle was built (the lockfile is not packed at all).
    writeFileSync(join(root, 'package.json'), '{"name":"cpsync"}');
    writeFileSync(
      join(root, 'dist', 'cpsync', 'inputs.json'),
      JSON.stringify({
        builtAt: Date.now() - 60_000,
        sources: ['cli/bin.ts', 'package.json', 'package-lock.json'],
      }),
    );
    assert.equal(await run('list'), 'bundle list');
  });

  it('refuses a Node older than 22 with exit 2, naming the Node it was given and how to run it', async () => {
    const { root, built } = tree();
    built(Date.now());
    // A Node that says it is 20.20.2: the launcher reads nothing else of it before refusing.
    const olderNode =
      "Object.defineProperty(process.versions, 'node', { value: '20.20.2' });" +
      "Object.defineProperty(process, 'version', { value: 'v20.20.2' });";
    const answer = await promisify(execFile)(process.execPath, [
      `--import=data:text/javascript,${encodeURIComponent(olderNode)}`,
      join(root, 'cli', 'cpsync.mjs'),
      'sync',
    ]).then(
      ({ stdout }) => ({ code: 0, stdout, stderr: '' }),
      (error: { code: number; stdout: string; stderr: string }) => error,
    );
    assert.equal(answer.code, 2, answer.stdout);
    assert.equal(answer.stdout, '', 'neither the bundle nor the sources ran');
    assert.match(answer.stderr, /needs Node\.js 22 or later, and this is v20\.20\.2/);
    assert.match(answer.stderr, /npx cpsync/);
  });
});
