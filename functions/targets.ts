import type { CpsyncConfig } from '../core/config.ts';
import type { Provider } from '../core/model/observedCluster.ts';

/** Whether the configuration covers `account` (and `region`) of `provider`: events for others are ignored. */
export function coversAccount(
  config: CpsyncConfig,
  provider: Provider,
  account: string,
  region?: string,
): boolean {
  if (provider === 'eks') {
    const eks = config.providers.eks;
    if (!eks) return false;
    if (Array.isArray(eks.accounts) && !eks.accounts.includes(account)) return false;
    return !region || !eks.regions || eks.regions.includes(region);
  }
  if (provider === 'gke') {
    const gke = config.providers.gke;
    return !!gke && (!Array.isArray(gke.projects) || gke.projects.includes(account));
  }
  const aks = config.providers.aks;
  return (
    !!aks &&
    (!Array.isArray(aks.subscriptions) ||
      aks.subscriptions.some((s) => s.toLowerCase() === account.toLowerCase()))
  );
}
