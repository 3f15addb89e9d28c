import type { CpsyncConfig } from '../config.ts';
import type { Target } from '../../credentials/target.ts';
import { scopesOfListed, type BuildOptions, type ProviderModule } from '../provider.ts';
import { isAksResourceId } from '../../aks/mapCluster.ts';
import { answerStore } from '../answers.ts';

/** AKS from `providers.aks`. */
export const aksProvider: ProviderModule = {
  provider: 'aks',
  isProviderIdOf: (providerId, ref) =>
    isAksResourceId(providerId, ref.scope.account, ref.resourceGroup ?? '', ref.name),
  // The configuration spells subscriptions in lower case, as ARM's ids are compared.
  listedScopes: (config) => {
    const subscriptions = config.providers.aks?.subscriptions;
    return Array.isArray(subscriptions) ? scopesOfListed('aks', subscriptions) : undefined;
  },
  async build(config: CpsyncConfig, options?: BuildOptions) {
    const aks = config.providers.aks;
    if (!aks) return undefined;
    // Azure's SDK is loaded only when AKS is configured.
    const [{ AksSource, enumerateAksScopes }, { azureCredential }, answers] = await Promise.all([
      import('../../aks/AksSource.ts'),
      import('./azureCredential.ts'),
      answerStore(config, options),
    ]);
    const credential = await azureCredential(aks);
    const source = new AksSource({
      // With the certificateAuthority feature off, no CA is written, so none is read either.
      fetchCertificateAuthority: aks.fetchCertificateAuthority && config.features.certificateAuthority,
      ...(aks.tenantId || aks.credential ? { tenantId: aks.tenantId ?? aks.credential?.tenantId } : {}),
      requestTimeoutMillis: config.sync.requestTimeoutSeconds * 1000,
      perSubscriptionConcurrency: aks.perSubscriptionConcurrency,
      // A CA read stands while the listing shows the control plane unchanged, a day at most.
      certificateAuthorityMaxAgeMillis: aks.certificateAuthorityMaxAgeHours * 3_600_000,
      ...(answers ? { answers } : {}),
      listing: aks.listing,
      // The graph is asked for the configured subscriptions, or (`all`) every one the identity can read.
      ...(Array.isArray(aks.subscriptions) ? { graphSubscriptions: aks.subscriptions } : {}),
      ...(credential ? { credential } : {}),
      ...(aks.endpoint ? { endpoint: aks.endpoint } : {}),
    });
    const { subscriptions } = aks;
    return {
      source,
      // Azure role assignments for consumers on clusters that use Azure RBAC, as the subscriptions are listed.
      async roleAssignments() {
        const [{ AksRoleAssignments }, { DefaultAzureCredential }] = await Promise.all([
          import('../../aks/roleAssignments.ts'),
          import('@azure/identity'),
        ]);
        return new AksRoleAssignments({
          credential: credential ?? new DefaultAzureCredential(),
          ...(aks.endpoint ? { endpoint: aks.endpoint } : {}),
          manager: config.manager,
          cluster: (providerId) => source.managedCluster(providerId),
        });
      },
      // The credential AKS is listed with (or the default chain).
      async memberToken(target: Target) {
        const { clusterToken } = await import('../../credentials/tokens.ts');
        return clusterToken(target, {
          env: {
            ...process.env,
            ...(aks.authorityHost ? { AZURE_AUTHORITY_HOST: aks.authorityHost } : {}),
          },
          ...(credential ? { azure: credential } : {}),
          now: () => new Date(),
        });
      },
      // Every subscription is enumerated to answer for one: coverage is read from the whole discovery.
      discoversWhole: true,
      async scopes(only?: readonly string[]) {
        const scopes = Array.isArray(subscriptions)
          ? scopesOfListed('aks', subscriptions)
          : await enumerateAksScopes(source, { all: true });
        return only ? scopes.filter((scope) => only.includes(scope.account)) : scopes;
      },
    };
  },
};
