import type { CpsyncConfig } from '../config.ts';
import type { ClusterSource } from '../../../core/sync/ports.ts';
import type { AksSource } from '../../aks/AksSource.ts';
import type { ProviderModule } from '../compose.ts';

/** AKS from `providers.aks`. */
export const aksProvider: ProviderModule = {
  provider: 'aks',
  async build(config: CpsyncConfig) {
    const aks = config.providers.aks;
    if (!aks) return undefined;
    // Azure's SDK is loaded only when AKS is configured.
    const [{ AksSource }, { azureCredential }] = await Promise.all([
      import('../../aks/AksSource.ts'),
      import('./azureCredential.ts'),
    ]);
    const credential = await azureCredential(aks);
    return new AksSource({
      fetchCertificateAuthority: aks.fetchCertificateAuthority,
      requestTimeoutMillis: config.sync.requestTimeoutSeconds * 1000,
      ...(credential ? { credential } : {}),
      ...(aks.endpoint ? { endpoint: aks.endpoint } : {}),
    });
  },
  async scopes(config: CpsyncConfig, source: ClusterSource, only?: readonly string[]) {
    const { subscriptions } = config.providers.aks!;
    const { enumerateAksScopes } = await import('../../aks/AksSource.ts');
    const scopes = await enumerateAksScopes(
      source as AksSource,
      Array.isArray(subscriptions) ? { subscriptions } : { all: true },
    );
    return only ? scopes.filter((scope) => only.includes(scope.account)) : scopes;
  },
};
