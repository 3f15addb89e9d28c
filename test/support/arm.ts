/** The local ARM (test/env/fakes/armServer.ts) for the tests of one describe block. */
import { after, before } from 'node:test';
import type { ClientSecretCredential } from '@azure/identity';
import { armCredential, startArmServer, type ArmServer } from '../env/fakes/armServer.ts';

/**
 * A local ARM started before the block's tests and stopped after them, and a credential for it: read its
 * fields inside a test (they are set once the block starts).
 */
export function armForSuite(): { readonly server: ArmServer; readonly credential: ClientSecretCredential } {
  const held = {} as { server: ArmServer; credential: ClientSecretCredential };
  before(async () => {
    held.server = await startArmServer();
    held.credential = armCredential(held.server);
  });
  after(async () => held.server?.stop());
  return held;
}
