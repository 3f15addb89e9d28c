/**
 * Where the `cpsync` command keeps Node's compile cache (compiled code it runs on the next start): the user's
 * own cache directory, private, never the shared temporary directory; a folder another user could write is not
 * used; NODE_COMPILE_CACHE, when set, wins.
 */
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { runCli } from '../support/cli.ts';
import { temporaryDirectory } from '../support/tmp.ts';

const directories: string[] = [];
const fresh = (prefix: string) => {
  const directory = temporaryDirectory(prefix);
  directories.push(directory);
  return directory;
};

/** `cpsync --version` with nothing of this machine's environment but PATH, a home and a temporary directory. */
async function version(env: Record<string, string>) {
  const run = await runCli(['--version'], { clean: true, env: { PATH: process.env.PATH ?? '', ...env } });
  assert.equal(run.code, 0, run.stderr);
  return run;
}

/** Every file under `directory`, recursively. */
const files = (directory: string): string[] =>
  existsSync(directory) ? readdirSync(directory, { recursive: true, encoding: 'utf8' }) : [];

describe("the command's compile cache", () => {
  after(() => {
    for (const directory of directories) rmSync(directory, { recursive: true, force: true });
  });

  it("is kept in the user's own cache directory, private, and nothing in the temporary directory", async () => {
    const home = fresh('cpsync-home-');
    const tmp = fresh('cpsync-tmp-');
    await version({ HOME: home, TMPDIR: tmp });
    const cache = join(home, '.cache', 'cpsync', 'node-compile-cache');
    assert.ok(files(cache).length > 0, 'compiled code kept');
    assert.equal(statSync(cache).mode & 0o777, 0o700);
    assert.deepEqual(readdirSync(tmp), [], 'nothing in the temporary directory');
    // XDG_CACHE_HOME, when it names an absolute folder, is the user's cache directory.
    const xdg = fresh('cpsync-xdg-');
    await version({ HOME: home, TMPDIR: tmp, XDG_CACHE_HOME: xdg });
    assert.ok(files(join(xdg, 'cpsync', 'node-compile-cache')).length > 0);
  });

  it('does not use a folder others may write, and NODE_COMPILE_CACHE wins', async () => {
    const home = fresh('cpsync-home-');
    const tmp = fresh('cpsync-tmp-');
    const cache = join(home, '.cache', 'cpsync', 'node-compile-cache');
    mkdirSync(cache, { recursive: true });
    chmodSync(cache, 0o777); // made first, by someone else's hand
    await version({ HOME: home, TMPDIR: tmp });
    assert.deepEqual(files(cache), [], 'nothing kept in, nor read from, a folder others may write');
    assert.deepEqual(readdirSync(tmp), [], 'nor in the temporary directory instead');
    const chosen = fresh('cpsync-chosen-');
    await version({ HOME: home, TMPDIR: tmp, NODE_COMPILE_CACHE: chosen });
    assert.ok(files(chosen).length > 0);
  });
});
