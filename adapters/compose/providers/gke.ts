import type { AuthClient } from 'google-auth-library';
import type { CpsyncConfig } from '../config.ts';
import type { Target } from '../../credentials/target.ts';
import { InvalidOptionError } from '../../../core/domain/errors.ts';
import { scopesOfListed, type ProviderModule } from '../provider.ts';
import { isGkeSelfLink } from '../../gke/mapCluster.ts';
import { CompositionError } from '../errors.ts';
import { readSecret, safeReason, secretSource, type SecretRef } from '../../shared/secrets.ts';

/**
 * The credential configuration (a JSON document) from its file or secret. Errors name where it came
 * from and never quote it: it may be a private key.
 */
async function credentialConfiguration(ref: SecretRef): Promise<Record<string, unknown>> {
  let text: string;
  try {
    text = await readSecret(ref);
  } catch (error) {
    throw new CompositionError(`providers.gke.credentials (${secretSource(ref)}): ${safeReason(error)}`);
  }
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch {
    throw new CompositionError(`providers.gke.credentials (${secretSource(ref)}): is not valid JSON`);
  }
  if (typeof document !== 'object' || document === null || Array.isArray(document))
    throw new CompositionError(`providers.gke.credentials (${secretSource(ref)}): is not a JSON object`);
  return document as Record<string, unknown>;
}

/** GKE from `providers.gke`; the credential configuration is read from its file or secret. */
export const gkeProvider: ProviderModule = {
  provider: 'gke',
  isProviderIdOf: (providerId, ref) =>
    isGkeSelfLink(providerId, ref.scope.account, ref.location ?? '', ref.name),
  listedScopes: (config) => {
    const projects = config.providers.gke?.projects;
    return Array.isArray(projects) ? scopesOfListed('gke', projects) : undefined;
  },
  async build(config: CpsyncConfig) {
    const gke = config.providers.gke;
    if (!gke) return undefined;
    const ref = gke.credentials;
    const credentials = ref ? await credentialConfiguration(ref) : undefined;
    const { GkeSource, enumerateGkeScopes } = await import('../../gke/GkeSource.ts');
    let source: InstanceType<typeof GkeSource>;
    try {
      source = new GkeSource({
        maxRetries: gke.maxRetries,
        requestTimeoutMillis: config.sync.requestTimeoutSeconds * 1000,
        ...(credentials ? { credentials } : {}),
        ...(gke.endpoint ? { endpoint: gke.endpoint } : {}),
      });
    } catch (error) {
      if (!ref) throw error;
      // The auth client is made from the document here: what it refuses is named without quoting it.
      const reason =
        error instanceof InvalidOptionError
          ? error.option === 'gke.credentials'
            ? error.detail
            : error.message
          : 'is not a usable credential configuration';
      throw new CompositionError(`providers.gke.credentials (${secretSource(ref)}): ${reason}`);
    }
    const { projects } = gke;
    let google: AuthClient | undefined;
    return {
      source,
      // Every project is enumerated to answer for one: coverage is read from the whole discovery.
      discoversWhole: true,
      async scopes(only?: readonly string[]) {
        const scopes = Array.isArray(projects)
          ? scopesOfListed('gke', projects)
          : await enumerateGkeScopes(source, { search: projects.search });
        return only ? scopes.filter((scope) => only.includes(scope.account)) : scopes;
      },
      // The credential configuration GKE is listed with (or Application Default Credentials).
      async memberToken(target: Target) {
        const [{ clusterToken }, { authClientFor, googleAuthClient }] = await Promise.all([
          import('../../credentials/tokens.ts'),
          import('../../gke/authClient.ts'),
        ]);
        google ??= credentials ? authClientFor(credentials) : (await googleAuthClient(undefined)).client;
        return clusterToken(target, { env: process.env, google, now: () => new Date() });
      },
      // The project IAM role consumers need to authenticate, written with the credentials GKE is listed with.
      async projectRoles() {
        const { GkeProjectRoles } = await import('../../gke/projectRoles.ts');
        const roles = new GkeProjectRoles({
          projects: () => source.projectsClient(),
          manager: config.manager,
          timeoutMillis: config.sync.requestTimeoutSeconds * 1000,
          retry: source.resourceManagerRetry,
        });
        return {
          hold: (...args) => roles.hold(...args),
          settle: (...args) => roles.settle(...args),
          inspect: (...args) => roles.inspect(...args),
        };
      },
      close: () => source.close(),
    };
  },
};
