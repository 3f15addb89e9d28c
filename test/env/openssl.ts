import { spawnSync } from 'node:child_process';

/** `openssl` options for a new P-256 key without a passphrase. */
export const NEW_EC_KEY = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];

/** Runs openssl in `cwd`; throws with its stderr when it fails. */
export function openssl(args: string[], cwd: string): void {
  const result = spawnSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
  if (result.status !== 0)
    throw new Error(`openssl ${args[0]} failed: ${result.stderr?.toString() ?? result.error?.message}`);
}
