/**
 * How the functions are bundled (esbuild, by the stack, the bundle tests and the bench): ESM for Node 24,
 * minified, split into an entry (`index.mjs`) and chunks it loads on demand, the AWS SDK included. The
 * banner gives bundled CommonJS code the `require`, `__filename` and `__dirname` it expects (google-gax
 * reads `__dirname` at load time).
 *
 * Why split, and why bundle the AWS SDK rather than take the runtime's: a function's cold start is the
 * module initialisation of its entry, so the entry holds only the handler, Powertools' logger and metrics
 * and the event schemas; the hub client, the bus, the outbox and each cloud's SDK are chunks loaded with the
 * first invocation that needs them (a scope worker given an EKS scope never loads Google's or Azure's
 * client). The runtime's AWS SDK is CommonJS: Node scans each whole client file to find its exports when
 * ESM imports it (the EC2 client alone takes about 700 ms), where the bundled ES modules are parsed only
 * for the commands cpsync sends.
 */
const BUNDLE_BANNER = [
  "import { createRequire as __cpsyncCreateRequire } from 'node:module';",
  "import { fileURLToPath as __cpsyncFileURLToPath } from 'node:url';",
  "import { dirname as __cpsyncDirname } from 'node:path';",
  'const require = __cpsyncCreateRequire(import.meta.url);',
  'const __filename = __cpsyncFileURLToPath(import.meta.url);',
  'const __dirname = __cpsyncDirname(__filename);',
].join(' ');

/** What every esbuild run of cpsync shares: minified ESM for Node, CommonJS given what it expects. */
function commonArgs(entry: string, target: string): string[] {
  return [
    entry,
    '--bundle',
    '--minify',
    '--platform=node',
    '--format=esm',
    `--target=${target}`,
    '--main-fields=module,main',
    '--log-level=error',
    `--banner:js=${BUNDLE_BANNER}`,
  ];
}

/** The file a function's bundle starts from, in its directory; the Lambda handler is `index.handler`. */
export const FUNCTION_ENTRY_FILE = 'index.mjs';

/**
 * esbuild arguments for one function: `outdir` receives `index.mjs` and `chunks/`, with source maps that
 * name cpsync's files and lines without carrying their text (read only when the stack sets
 * `stackTraceSourceMaps`).
 */
export function functionBundleArgs(
  entry: string,
  outdir: string,
  options: { sourceMaps?: boolean } = {},
): string[] {
  return [
    ...commonArgs(entry, 'node24'),
    '--splitting',
    `--outdir=${outdir}`,
    '--out-extension:.js=.mjs',
    '--entry-names=index',
    '--chunk-names=chunks/[name]-[hash]',
    ...(options.sourceMaps === false ? [] : ['--sourcemap', '--sources-content=false']),
  ];
}

/**
 * esbuild arguments for the standalone credential plugin: one file with every SDK it uses inside
 * (a consumer's image has no node_modules), for any Node from 20 on; the entry's `#!/usr/bin/env node` stays first.
 */
export function credentialsPluginArgs(entry: string, outfile: string): string[] {
  return [...commonArgs(entry, 'node20'), `--outfile=${outfile}`, '--legal-comments=none'];
}

/** Where `npm run build:cli` (and setup) puts the bundled `cpsync` command, from the project's root. */
export const CLI_BUNDLE_DIR = 'dist/cpsync';

/**
 * esbuild arguments for the `cpsync` command: `outdir` receives `cpsync.mjs` and the chunks it loads on
 * demand (each cloud's SDK is one), for Node 22 and later, with source maps that name cpsync's files and
 * lines (for `node --enable-source-maps`) without carrying their text. `metafile` lists the sources read.
 */
export function cliBundleArgs(entry: string, outdir: string, metafile: string): string[] {
  return [
    ...commonArgs(entry, 'node22'),
    '--splitting',
    `--outdir=${outdir}`,
    '--out-extension:.js=.mjs',
    '--entry-names=cpsync',
    '--chunk-names=chunks/[name]-[hash]',
    '--legal-comments=none',
    '--sourcemap',
    '--sources-content=false',
    `--metafile=${metafile}`,
  ];
}
