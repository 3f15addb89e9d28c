#!/usr/bin/env node
// The `cpsync` command. It runs the bundled command (dist/cpsync/, built on setup and by
// `npm run build:cli`), which starts in about half the CPU time of the TypeScript sources, and runs the
// sources instead when one of those the bundle was built from is newer (a checkout being worked on) or
// when no bundle was built. An installed package carries the bundle and no sources: it always runs the bundle.
// Plain JavaScript: Node strips no types under node_modules.
import { existsSync, readFileSync, statSync } from 'node:fs';

const [major] = process.versions.node.split('.').map(Number);
if (major < 22) {
  process.stderr.write(
    `cpsync: needs Node.js 22 or later, and this is ${process.version}; run it as \`npx cpsync\` or \`npm run cpsync --\`, which use the Node 24 that setup installs\n`,
  );
  process.exit(2);
}

const root = new URL('../', import.meta.url);
const bundle = new URL('dist/cpsync/', root);

/** Whether the bundle exists and no source it was built from changed since (absent sources: an installed package). */
function bundleIsCurrent() {
  let built;
  try {
    built = JSON.parse(readFileSync(new URL('inputs.json', bundle), 'utf8'));
  } catch {
    return false;
  }
  return built.sources.every((path) => {
    try {
      return statSync(new URL(path, root)).mtimeMs <= built.builtAt;
    } catch {
      return true;
    }
  });
}

const sources = new URL('bin.ts', import.meta.url);
await import(existsSync(sources) && !bundleIsCurrent() ? sources.href : new URL('cpsync.mjs', bundle).href);
