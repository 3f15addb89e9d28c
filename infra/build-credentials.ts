/**
 * Builds the standalone credential plugin: `npm run build:credentials` writes dist/cpsync-credentials.mjs,
 * one file a consumer's image can carry (it needs only Node ≥ 20) and says how big it is.
 */
import { chmodSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { credentialsPluginOptions } from './bundling.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const outfile = process.argv[2] ?? join(root, 'dist', 'cpsync-credentials.mjs');
await build(credentialsPluginOptions(join(root, 'cli', 'credentials-bin.ts'), outfile));
chmodSync(outfile, 0o755);
console.log(`${outfile}: ${(statSync(outfile).size / 1024 / 1024).toFixed(1)} MiB`);
