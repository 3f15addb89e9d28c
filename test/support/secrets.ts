import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import type { Emulators } from '../env/emulators.ts';
import { localHub } from './hub.ts';

/**
 * Asserts that nothing in `captured` (CLI output, events, profiles a run showed) contains a credential
 * of the local estate or the hub: the Azure client secret, the GCP private key, the AWS secret key and
 * the hub's client key. Returns everything captured, joined.
 */
export async function assertNoCredentials(
  captured: readonly string[],
  emulators: Emulators,
): Promise<string> {
  const privateKeyLine = (emulators.gke.serviceAccountKey.private_key ?? '').split('\n')[1]!;
  const secrets = {
    'Azure client secret': emulators.arm.clientSecret,
    'GCP private key': privateKeyLine,
    'AWS secret key': emulators.env.AWS_SECRET_ACCESS_KEY!,
    'hub client key': JSON.parse(readFileSync((await localHub()).kubeconfig, 'utf8')).users[0].user[
      'client-key-data'
    ] as string,
  };
  assert.ok(privateKeyLine.length > 20, 'the GCP private key is known, to be looked for');
  const all = captured.join('\n');
  // The callers check that what they meant to scan is in it (events, CLI output, profiles).
  assert.ok(all.length > 1000, `something to scan (${all.length} characters captured)`);
  for (const [what, secret] of Object.entries(secrets)) assert.ok(!all.includes(secret), `${what} leaked`);
  return all;
}
