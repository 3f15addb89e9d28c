/**
 * Builds the `cpsync` command: `npm run build:cli` (and setup, and the test command) bundles cli/bin.ts
 * into dist/cpsync/ — `cpsync.mjs` and the chunks it loads on demand — and records the sources it was
 * built from, so that the launcher (cli/cpsync.mjs) runs the sources instead whenever one of them is newer.
 *
 * Why a bundle: started from the TypeScript sources, every run resolves, reads and compiles some
 * thousand files of the cloud SDKs (Node scans each CommonJS client whole when ES modules import it);
 * the bundle is a handful of files holding only what cpsync uses. It also runs where the sources cannot:
 * Node does not strip types under node_modules, so an installed package needs JavaScript.
 */
import { mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { CLI_BUNDLE_DIR, cliBundleOptions } from './bundling.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const target = join(root, CLI_BUNDLE_DIR);
// Built beside its place and swapped in whole, so a run starting meanwhile sees the old bundle or the new.
mkdirSync(dirname(target), { recursive: true });
const building = mkdtempSync(`${target}.building-`);
const builtAt = Date.now();
let inputs: Record<string, unknown>;
try {
  const result = await build({ ...cliBundleOptions(join('cli', 'bin.ts'), building), absWorkingDir: root });
  inputs = result.metafile?.inputs ?? {};
} catch {
  // esbuild has printed what failed.
  rmSync(building, { recursive: true, force: true });
  process.exit(1);
}
// The project's own sources and the lockfile (a dependency updated makes the bundle stale too).
const sources = [
  ...Object.keys(inputs).filter((path) => !path.includes('node_modules/')),
  'package.json',
  'package-lock.json',
];
writeFileSync(join(building, 'inputs.json'), `${JSON.stringify({ builtAt, sources }, null, 1)}\n`);
const previous = `${target}.previous-${process.pid}`;
try {
  renameSync(target, previous);
} catch {
  // No bundle yet.
}
renameSync(building, target);
rmSync(previous, { recursive: true, force: true });
const size = readdirSync(target, { recursive: true, encoding: 'utf8' })
  .filter((name) => name.endsWith('.mjs'))
  .reduce((total, name) => total + statSync(join(target, name)).size, 0);
console.log(
  `cpsync: the cpsync command is built into ${CLI_BUNDLE_DIR}/ (${(size / 1024 / 1024).toFixed(1)} MiB of code, from ${sources.length - 2} sources)`,
);
