import type { CpsyncConfig } from '../../core/config.ts';
import type { ClusterSource } from '../../core/ports.ts';
import { readSecret, type ProviderModule } from '../compose.ts';
import type { GkeSource } from '../gke/GkeSource.ts';

/** GKE from `providers.gke`; the credential configuration is read from its file or secret. */
export const gkeProvider: ProviderModule = {
  provider: 'gke',
  async build(config: CpsyncConfig) {
    const gke = config.providers.gke;
    if (!gke) return undefined;
    const credentials = gke.credentials
      ? (JSON.parse(await readSecret(gke.credentials)) as Record<string, unknown>)
      : undefined;
    const { GkeSource } = await import('../gke/GkeSource.ts');
    return new GkeSource({
      maxRetries: gke.maxRetries,
      ...(credentials ? { credentials } : {}),
      ...(gke.endpoint ? { endpoint: gke.endpoint } : {}),
    });
  },
  async scopes(config: CpsyncConfig, source: ClusterSource) {
    const { projects } = config.providers.gke!;
    const { enumerateGkeScopes } = await import('../gke/GkeSource.ts');
    return enumerateGkeScopes(
      source as GkeSource,
      Array.isArray(projects) ? { projects } : { search: projects.search },
    );
  },
  async close(source: ClusterSource) {
    await (source as GkeSource).close();
  },
};
