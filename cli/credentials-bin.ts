#!/usr/bin/env node
/**
 * The standalone credential plugin (`npm run build:credentials` bundles it into one file,
 * dist/cpsync-credentials.mjs): `cpsync credentials` without the rest of cpsync.
 */
import { credentialsMain } from './credentials.ts';

for (const stream of [process.stdout, process.stderr]) stream.on('error', () => {});
const code = await credentialsMain(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
});
// Ends once its answer is written, as `cpsync credentials` does: a request the timeout gave up on (an STS or token
// endpoint that never answers) keeps its socket open, and client-go waits for the process, not for its output.
process.stdout.write('', () => process.stderr.write('', () => process.exit(code)));
