/**
 * Builds the standalone credential plugin: `npm run build:credentials` writes dist/cpsync-credentials.mjs,
 * one file a consumer's image can carry (it needs only Node ≥ 20) and says how big it is.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { credentialsPluginArgs } from './bundling.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const outfile = process.argv[2] ?? join(root, 'dist', 'cpsync-credentials.mjs');
const result = spawnSync(
  join(root, 'node_modules', '.bin', 'esbuild'),
  credentialsPluginArgs(join(root, 'cli', 'credentials-bin.ts'), outfile),
  { stdio: 'inherit' },
);
if (result.status !== 0) process.exit(result.status ?? 1);
chmodSync(outfile, 0o755);
console.log(`${outfile}: ${(statSync(outfile).size / 1024 / 1024).toFixed(1)} MiB`);
