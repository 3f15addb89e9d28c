/**
 * An esbuild plugin that gives a bundle's dynamic imports of CommonJS modules the named exports Node gives
 * them. Node lexes a CommonJS module (cjs-module-lexer) and offers each export it finds by name beside
 * `default`; esbuild, splitting a bundle into chunks, offers only `default` (evanw/esbuild#3245). Code
 * written for Node breaks there: gaxios (under every Google client) does
 * `(await import('https-proxy-agent')).HttpsProxyAgent` when HTTPS_PROXY is set, and gets `undefined`.
 *
 * Each dynamic import that resolves to a CommonJS file is routed through a small ES module that requires
 * it and exports `default` (the module's `exports`) and every name the same lexer finds, following
 * re-exports as Node does. Imports of ES modules, and static imports, are left to esbuild.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, extname } from 'node:path';
import { init, parse } from 'cjs-module-lexer';
import type { Plugin } from 'esbuild';

const NAMESPACE = 'cpsync-cjs-named';

/** The type of the nearest package.json above `file` ('module' or 'commonjs'). */
function packageType(file: string): string {
  for (let directory = dirname(file); ; directory = dirname(directory)) {
    try {
      const manifest = JSON.parse(readFileSync(`${directory}/package.json`, 'utf8')) as { type?: string };
      return manifest.type ?? 'commonjs';
    } catch {
      if (dirname(directory) === directory) return 'commonjs';
    }
  }
}

/** Whether Node would load `file` as CommonJS: by extension, then by its package's type, then by its syntax. */
function isCommonJs(file: string): boolean {
  const extension = extname(file);
  if (extension === '.cjs' || extension === '.cts') return true;
  if (extension !== '.js') return false;
  if (packageType(file) === 'module') return false;
  try {
    parse(readFileSync(file, 'utf8'));
    return true;
  } catch {
    // import or export statements: esbuild treats it as an ES module, and so names its exports.
    return false;
  }
}

/** The names Node's ES module loader offers for the CommonJS module at `file`, re-exports followed. */
function commonJsExportNames(file: string, seen = new Set<string>()): Set<string> {
  const names = new Set<string>();
  if (seen.has(file)) return names;
  seen.add(file);
  const { exports, reexports } = parse(readFileSync(file, 'utf8'));
  for (const name of exports) names.add(name);
  const require = createRequire(file);
  for (const specifier of reexports) {
    let target: string;
    try {
      target = require.resolve(specifier);
    } catch {
      continue; // Node skips a re-export it cannot resolve too.
    }
    if (isCommonJs(target)) for (const name of commonJsExportNames(target, seen)) names.add(name);
  }
  names.delete('default');
  return names;
}

/** The ES module standing in for the CommonJS module at `file`. */
function namedModule(file: string): string {
  const lines = [`const module = require(${JSON.stringify(file)});`, 'export default module;'];
  [...commonJsExportNames(file)].forEach((name, index) => {
    lines.push(
      `const e${index} = module[${JSON.stringify(name)}];`,
      `export { e${index} as ${JSON.stringify(name)} };`,
    );
  });
  return lines.join('\n');
}

export function cjsDynamicImports(): Plugin {
  return {
    name: 'cjs-dynamic-imports',
    setup(build) {
      build.onStart(() => init());
      build.onResolve({ filter: /.*/ }, async (args) => {
        if (args.kind !== 'dynamic-import' || args.pluginData === NAMESPACE) return undefined;
        const resolved = await build.resolve(args.path, {
          kind: args.kind,
          importer: args.importer,
          resolveDir: args.resolveDir,
          namespace: args.namespace,
          pluginData: NAMESPACE,
        });
        if (resolved.errors.length > 0 || resolved.external || resolved.namespace !== 'file')
          return undefined;
        if (!isCommonJs(resolved.path)) return undefined;
        return { path: resolved.path, namespace: NAMESPACE };
      });
      build.onLoad({ filter: /.*/, namespace: NAMESPACE }, (args) => ({
        contents: namedModule(args.path),
        resolveDir: dirname(args.path),
        loader: 'js',
      }));
    },
  };
}
