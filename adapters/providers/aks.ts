import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { TokenCredential } from '@azure/core-auth';
import type { CpsyncConfig } from '../../core/config.ts';
import type { ClusterSource } from '../../core/ports.ts';
import type { AksSource } from '../aks/AksSource.ts';
import { readSecret, type ProviderModule } from '../compose.ts';

/** The Azure identity: a federated credential (a token file) or a client secret (file or Secrets Manager). */
async function azureCredential(
  config: NonNullable<CpsyncConfig['providers']['aks']>,
): Promise<TokenCredential | undefined> {
  const credential = config.credential;
  if (!credential) return undefined;
  const { ClientAssertionCredential, ClientSecretCredential } = await import('@azure/identity');
  const options = config.authorityHost
    ? { authorityHost: config.authorityHost, disableInstanceDiscovery: true }
    : {};
  if ('federatedTokenFile' in credential) {
    const file = resolve(credential.federatedTokenFile);
    return new ClientAssertionCredential(
      credential.tenantId,
      credential.clientId,
      async () => (await readFile(file, 'utf8')).trim(),
      options,
    );
  }
  const secret = (await readSecret(credential.clientSecret)).trim();
  return new ClientSecretCredential(credential.tenantId, credential.clientId, secret, options);
}

/** AKS from `providers.aks`. */
export const aksProvider: ProviderModule = {
  provider: 'aks',
  async build(config: CpsyncConfig) {
    const aks = config.providers.aks;
    if (!aks) return undefined;
    const credential = await azureCredential(aks);
    const { AksSource } = await import('../aks/AksSource.ts');
    return new AksSource({
      fetchCertificateAuthority: aks.fetchCertificateAuthority,
      ...(credential ? { credential } : {}),
      ...(aks.endpoint ? { endpoint: aks.endpoint } : {}),
    });
  },
  async scopes(config: CpsyncConfig, source: ClusterSource) {
    const { subscriptions } = config.providers.aks!;
    const { enumerateAksScopes } = await import('../aks/AksSource.ts');
    return enumerateAksScopes(
      source as AksSource,
      Array.isArray(subscriptions) ? { subscriptions } : { all: true },
    );
  },
};
