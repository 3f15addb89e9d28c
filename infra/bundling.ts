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

/** esbuild command-line arguments equal to the NodejsFunction bundling options. */
export function esbuildArgs(entry: string, outfile: string): string[] {
  return [
    entry,
    '--bundle',
    '--minify',
    '--platform=node',
    '--format=esm',
    '--target=node24',
    '--main-fields=module,main',
    ...BUNDLE_EXTERNALS.map((e) => `--external:${e}`),
    `--outfile=${outfile}`,
    '--log-level=error',
    `--banner:js=${BUNDLE_BANNER}`,
  ];
}

/**
 * esbuild arguments for the standalone credential plugin: one file with every SDK it uses inside
 * (a consumer's image has no node_modules), for any Node from 20 on.
 */
export function credentialsPluginArgs(entry: string, outfile: string): string[] {
  return [
    entry,
    '--bundle',
    '--minify',
    '--platform=node',
    '--format=esm',
    '--target=node20',
    '--main-fields=module,main',
    '--legal-comments=none',
    `--outfile=${outfile}`,
    '--log-level=error',
    `--banner:js=${BUNDLE_BANNER}`,
  ];
}
