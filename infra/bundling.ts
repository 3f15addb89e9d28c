/**
 * How the functions are bundled (esbuild, by the CDK's NodejsFunction and by the bundle tests): ESM for
 * Node 24, minified, AWS SDK v3 left to the Lambda runtime. The banner gives bundled CommonJS code the
 * `require`, `__filename` and `__dirname` it expects (google-gax reads `__dirname` at load time).
 */
export const BUNDLE_BANNER = [
  "import { createRequire as __cpsyncCreateRequire } from 'node:module';",
  "import { fileURLToPath as __cpsyncFileURLToPath } from 'node:url';",
  "import { dirname as __cpsyncDirname } from 'node:path';",
  'const require = __cpsyncCreateRequire(import.meta.url);',
  'const __filename = __cpsyncFileURLToPath(import.meta.url);',
  'const __dirname = __cpsyncDirname(__filename);',
].join(' ');

export const BUNDLE_EXTERNALS = ['@aws-sdk/*'];

/** What every esbuild run of cpsync shares: one minified ESM file for Node, CommonJS given what it expects. */
function commonArgs(entry: string, outfile: string, target: string): string[] {
  return [
    entry,
    '--bundle',
    '--minify',
    '--platform=node',
    '--format=esm',
    `--target=${target}`,
    '--main-fields=module,main',
    `--outfile=${outfile}`,
    '--log-level=error',
    `--banner:js=${BUNDLE_BANNER}`,
  ];
}

/** esbuild command-line arguments equal to the NodejsFunction bundling options. */
export function esbuildArgs(entry: string, outfile: string): string[] {
  return [...commonArgs(entry, outfile, 'node24'), ...BUNDLE_EXTERNALS.map((e) => `--external:${e}`)];
}

/**
 * esbuild arguments for the standalone credential plugin: one file with every SDK it uses inside
 * (a consumer's image has no node_modules), for any Node from 20 on; the entry's `#!/usr/bin/env node` stays first.
 */
export function credentialsPluginArgs(entry: string, outfile: string): string[] {
  return [...commonArgs(entry, outfile, 'node20'), '--legal-comments=none'];
}
