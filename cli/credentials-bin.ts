#!/usr/bin/env node
/**
 * The standalone credential plugin (`npm run build:credentials` bundles it into one file,
 * dist/cpsync-credentials.mjs): `cpsync credentials` without the rest of cpsync.
 */
import { credentialsMain } from './credentials.ts';

for (const stream of [process.stdout, process.stderr]) stream.on('error', () => {});
process.exitCode = await credentialsMain(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
});
