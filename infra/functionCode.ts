/**
 * A function's code asset: the entry bundled by the project's esbuild into `index.mjs` plus the chunks it
 * loads on demand (see bundling.ts). The asset is hashed by its output, so an unchanged bundle is not
 * uploaded again.
 */
import { execFileSync } from 'node:child_process';
import { join, relative } from 'node:path';
import { AssetHashType, DockerImage } from 'aws-cdk-lib';
import { Code } from 'aws-cdk-lib/aws-lambda';

/** Bundles `entry` (a function's source) into `outdir`: `index.mjs` and its chunks. */
export function bundleFunction(
  root: string,
  entry: string,
  outdir: string,
  options: { sourceMaps?: boolean } = {},
): void {
  const args = [join(root, 'infra', 'bundle.ts'), entry, outdir];
  if (options.sourceMaps === false) args.push('--no-source-maps');
  execFileSync(process.execPath, args, { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] });
}

export function functionCode(root: string, entry: string): Code {
  return Code.fromAsset(root, {
    assetHashType: AssetHashType.OUTPUT,
    bundling: {
      // Never used: bundling happens on this machine, with the esbuild the project installs. The command
      // names the entry, which also keeps each function's bundle apart in the CDK's bundling cache.
      image: DockerImage.fromRegistry('cpsync-bundles-locally'),
      command: ['node', 'infra/bundle.ts', relative(root, entry), '/asset-output'],
      local: {
        tryBundle(outputDir: string) {
          bundleFunction(root, entry, outputDir);
          return true;
        },
      },
    },
  });
}
