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
 *
 * Every bundle is built through esbuild's API (infra/bundle.ts from the command line) so that dynamic
 * imports of CommonJS modules keep the named exports Node gives them (see cjsDynamicImports.ts).
 */
import type { BuildOptions } from 'esbuild';
import { cjsDynamicImports } from './cjsDynamicImports.ts';

const BUNDLE_BANNER = [
  "import { createRequire as __cpsyncCreateRequire } from 'node:module';",
  "import { fileURLToPath as __cpsyncFileURLToPath } from 'node:url';",
  "import { dirname as __cpsyncDirname } from 'node:path';",
  'const require = __cpsyncCreateRequire(import.meta.url);',
  'const __filename = __cpsyncFileURLToPath(import.meta.url);',
  'const __dirname = __cpsyncDirname(__filename);',
].join(' ');

/** What every esbuild run of cpsync shares: minified ESM for Node, CommonJS given what it expects. */
function commonOptions(entry: string, target: string): BuildOptions {
  return {
    entryPoints: [entry],
    bundle: true,
    minify: true,
    platform: 'node',
    format: 'esm',
    target,
    mainFields: ['module', 'main'],
    logLevel: 'error',
    banner: { js: BUNDLE_BANNER },
    plugins: [cjsDynamicImports()],
  };
}

/** An entry and the chunks it loads on demand, each `.mjs`, the entry named `entryName`. */
function splitOptions(entryName: string, outdir: string): BuildOptions {
  return {
    splitting: true,
    outdir,
    outExtension: { '.js': '.mjs' },
    entryNames: entryName,
    chunkNames: 'chunks/[name]-[hash]',
  };
}

/** The file a function's bundle starts from, in its directory; the Lambda handler is `index.handler`. */
export const FUNCTION_ENTRY_FILE = 'index.mjs';

/**
 * esbuild options for one function: `outdir` receives `index.mjs` and `chunks/`, with source maps that
 * name cpsync's files and lines without carrying their text (read only when the stack sets
 * `stackTraceSourceMaps`).
 */
export function functionBundleOptions(
  entry: string,
  outdir: string,
  options: { sourceMaps?: boolean } = {},
): BuildOptions {
  return {
    ...commonOptions(entry, 'node24'),
    ...splitOptions('index', outdir),
    ...(options.sourceMaps === false ? {} : { sourcemap: true, sourcesContent: false }),
  };
}

/**
 * esbuild options for the standalone credential plugin: one file with every SDK it uses inside
 * (a consumer's image has no node_modules), for any Node from 20 on; the entry's `#!/usr/bin/env node` stays first.
 */
export function credentialsPluginOptions(entry: string, outfile: string): BuildOptions {
  return { ...commonOptions(entry, 'node20'), outfile, legalComments: 'none' };
}

/** Where `npm run build:cli` (and setup) puts the bundled `cpsync` command, from the project's root. */
export const CLI_BUNDLE_DIR = 'dist/cpsync';

/**
 * esbuild options for the `cpsync` command: `outdir` receives `cpsync.mjs` and the chunks it loads on
 * demand (each cloud's SDK is one), for Node 22 and later, with source maps that name cpsync's files and
 * lines (for `node --enable-source-maps`) without carrying their text. The metafile lists the sources read.
 */
export function cliBundleOptions(entry: string, outdir: string): BuildOptions {
  return {
    ...commonOptions(entry, 'node22'),
    ...splitOptions('cpsync', outdir),
    legalComments: 'none',
    sourcemap: true,
    sourcesContent: false,
    metafile: true,
  };
}
