import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { TokenCredential } from '@azure/core-auth';
import { ClientAssertionCredential, ClientSecretCredential, DefaultAzureCredential } from '@azure/identity';
import type { CpsyncConfig } from '../config.ts';
import { CompositionError } from '../errors.ts';
import { readSecret, safeReason, secretSource } from '../../shared/secrets.ts';

/** The Azure identity: a federated credential (a token file) or a client secret (file or Secrets Manager). */
export async function azureCredential(
  config: NonNullable<CpsyncConfig['providers']['aks']>,
): Promise<TokenCredential | undefined> {
  const credential = config.credential;
  const options = config.authorityHost
    ? { authorityHost: config.authorityHost, disableInstanceDiscovery: true }
    : {};
  // No credential configured: the default chain (workload identity, environment, managed identity, Azure CLI).
  if (!credential) return config.authorityHost ? new DefaultAzureCredential(options) : undefined;
  if ('federatedTokenFile' in credential) {
    const file = resolve(credential.federatedTokenFile);
    return new ClientAssertionCredential(
      credential.tenantId,
      credential.clientId,
      async () => (await readFile(file, 'utf8')).trim(),
      options,
    );
  }
  let secret: string;
  try {
    secret = (await readSecret(credential.clientSecret)).trim();
  } catch (error) {
    throw new CompositionError(
      `providers.aks.credential.clientSecret (${secretSource(credential.clientSecret)}): ${safeReason(error)}`,
    );
  }
  return new ClientSecretCredential(credential.tenantId, credential.clientId, secret, options);
}
