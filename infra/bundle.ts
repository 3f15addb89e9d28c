/**
 * Bundles one function from the command line, for callers that must wait synchronously (the CDK's local
 * bundling): `node infra/bundle.ts <entry> <outdir> [--no-source-maps]`. esbuild's plugins run only
 * under its asynchronous API, so the stack runs this in a child process.
 */
import { parseArgs } from 'node:util';
import { build } from 'esbuild';
import { functionBundleOptions } from './bundling.ts';

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: { 'no-source-maps': { type: 'boolean', default: false } },
});
const [entry, outdir] = positionals;
if (positionals.length !== 2 || entry === undefined || outdir === undefined) {
  console.error('usage: node infra/bundle.ts <entry> <outdir> [--no-source-maps]');
  process.exit(2);
}
await build(functionBundleOptions(entry, outdir, { sourceMaps: !values['no-source-maps'] }));
