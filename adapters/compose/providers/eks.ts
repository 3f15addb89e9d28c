import type { CpsyncConfig } from '../config.ts';
import type { Target } from '../../credentials/target.ts';
import type { BuildOptions, ProviderModule } from '../provider.ts';
import type { AccountSelection } from '../../eks/EksScopes.ts';
import { isEksClusterArn } from '../../eks/mapCluster.ts';
import { answerStore } from '../answers.ts';
import { memoizeFor, memoizeUntilFailure } from '../../shared/memo.ts';
import { DISCOVERY_TTL_MILLIS } from '../provider.ts';

/** EKS from `providers.eks`. */
export const eksProvider: ProviderModule = {
  provider: 'eks',
  isProviderIdOf: (providerId, ref) =>
    isEksClusterArn(providerId, ref.scope.account, ref.scope.region, ref.name),
  async build(config: CpsyncConfig, options?: BuildOptions) {
    const eks = config.providers.eks;
    if (!eks) return undefined;
    // Each cloud's SDK is loaded only when that cloud is configured.
    const [
      { EksSource },
      { awsClientFactory },
      { enumerateEksScopes, selectAccounts },
      { resolvedHomeRegion },
      answers,
    ] = await Promise.all([
      import('../../eks/EksSource.ts'),
      import('../../eks/awsClients.ts'),
      import('../../eks/EksScopes.ts'),
      import('./eksHomeRegion.ts'),
      answerStore(config, options),
    ]);
    // One partition for the home region and every listed region, or a ConfigError naming each that is not.
    const homeRegion = await resolvedHomeRegion(eks);
    const source = new EksSource({
      roleName: eks.roleName,
      homeRegion,
      maxAttempts: eks.maxAttempts,
      perAccountConcurrency: eks.perAccountConcurrency,
      overallConcurrency: eks.overallConcurrency,
      // Node groups read stand while DescribeCluster shows the cluster unchanged, for a bounded time.
      nodegroupsMaxAgeMillis: eks.nodegroupsMaxAgeMinutes * 60_000,
      // DescribeCluster's answer stands for a bounded time too (ControlPlaneHealthy may lag by as much).
      clusterMaxAgeMillis: eks.clusterMaxAgeMinutes * 60_000,
      ...(answers ? { answers } : {}),
      requestTimeoutMillis: config.sync.requestTimeoutSeconds * 1000,
      ...(eks.externalId ? { externalId: eks.externalId } : {}),
      ...(eks.endpoint ? { endpoint: eks.endpoint } : {}),
    });
    const probe = config.memberProbe;
    const selection: AccountSelection = Array.isArray(eks.accounts)
      ? { accounts: eks.accounts }
      : { organization: eks.accounts.organization };
    const organizationsClient = memoizeUntilFailure(() =>
      awsClientFactory({ homeRegion, ...(eks.endpoint ? { endpoint: eks.endpoint } : {}) }).organizations(),
    );
    // An organization's accounts as listed for a while: one account asked for is judged against them (the listing is
    // of the whole organization, whichever id is asked), and only that account's regions are asked for.
    const organizationAccounts = memoizeFor(DISCOVERY_TTL_MILLIS / 2, async () =>
      selectAccounts(selection, await organizationsClient()),
    );
    return {
      source,
      // The run's own identity (or the role memberProbe.eksRoleName names in the cluster's account), signed
      // for the STS the configuration points at: the member probe's and the access grants' member access.
      async memberToken(target: Target) {
        const { clusterToken } = await import('../../credentials/tokens.ts');
        return clusterToken(target, {
          env: { ...process.env, ...(eks.endpoint ? { AWS_ENDPOINT_URL_STS: eks.endpoint } : {}) },
          ...(probe.eksRoleName ? { roleName: probe.eksRoleName } : {}),
          now: () => new Date(),
        });
      },
      // Consumers' access entries, with the identity each account is listed with.
      async accessEntries() {
        const { EksAccessEntries } = await import('../../eks/accessEntries.ts');
        return new EksAccessEntries({
          manager: config.manager,
          client: (account, region) => source.grantClient(account, region),
        });
      },
      async scopes(only?: readonly string[]) {
        const listed = 'organization' in selection && only !== undefined;
        const found = await enumerateEksScopes(source, {
          accounts: listed
            ? { accounts: (await organizationAccounts()).filter((account) => only.includes(account)) }
            : selection,
          ...(eks.regions ? { regions: eks.regions } : {}),
          ...('organization' in selection && !listed ? { organizations: await organizationsClient() } : {}),
          ...(only ? { onlyAccounts: only } : {}),
        });
        return found.scopes;
      },
    };
  },
};
