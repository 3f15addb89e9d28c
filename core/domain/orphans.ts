/**
 * Orphans: profiles of scopes the configuration no longer covers (an account, project, subscription,
 * region or a whole provider dropped from it). They are reported, never deleted for being absent from
 * the configuration — a typo must not empty an inventory — and go only when a person says so
 * (`cpsync prune --orphans --yes`, or the provider set to `off`).
 */
import { LABEL_ACCOUNT, LABEL_PROVIDER, LABEL_REGION } from './constants.ts';
import { labelValue } from './labels.ts';
import type { ClusterProfile } from './model/clusterProfile.ts';
import { PROVIDERS, type Provider } from './model/observedCluster.ts';
import { ALL_REGIONS, scopeKey, type Scope } from './model/scope.ts';

export interface OrphanScope<P extends Labelled = ClusterProfile> {
  /** The scope the profiles were written for, as their labels name it. */
  scope: Scope;
  profiles: P[];
}

/** What tells a profile's scope: its labels (a whole profile, or its metadata alone). */
export interface Labelled {
  metadata: { labels?: Readonly<Record<string, string>> };
}

/** Whether `scope` covers the profile, as its provider, account and region labels name its scope. */
export function scopeCoversProfile(scope: Scope, profile: Labelled): boolean {
  const labels = profile.metadata.labels ?? {};
  return (
    scope.provider === labels[LABEL_PROVIDER] &&
    labelValue(scope.account) === labels[LABEL_ACCOUNT] &&
    (scope.region === ALL_REGIONS || labelValue(scope.region) === labels[LABEL_REGION])
  );
}

/**
 * The profiles no configured scope covers, by the scope they were written for. Providers whose scopes
 * could not be told (their discovery failed) are not judged: `determined` names those whose scopes are
 * all in `configured` (a provider that is not configured has none).
 */
export function findOrphans<P extends Labelled>(
  profiles: Iterable<P>,
  configured: readonly Scope[],
  determined: ReadonlySet<Provider>,
): OrphanScope<P>[] {
  const byScope = new Map<string, OrphanScope<P>>();
  // What scopeCoversProfile asks of each configured scope, as keys: one look per profile, not one per scope.
  const scoped = (provider: string, account: string, region: string) =>
    JSON.stringify([provider, account, region]);
  const covered = new Set(
    configured.map((scope) =>
      scoped(
        scope.provider,
        labelValue(scope.account),
        scope.region === ALL_REGIONS ? ALL_REGIONS : labelValue(scope.region),
      ),
    ),
  );
  for (const profile of profiles) {
    const labels = profile.metadata.labels ?? {};
    const provider = labels[LABEL_PROVIDER] as Provider | undefined;
    const account = labels[LABEL_ACCOUNT];
    const region = labels[LABEL_REGION];
    if (!provider || !PROVIDERS.includes(provider) || !account || !region || !determined.has(provider))
      continue;
    if (covered.has(scoped(provider, account, region)) || covered.has(scoped(provider, account, ALL_REGIONS)))
      continue;
    const scope: Scope = { provider, account, region };
    const key = scopeKey(scope);
    const entry = byScope.get(key);
    if (entry) entry.profiles.push(profile);
    else byScope.set(key, { scope, profiles: [profile] });
  }
  return [...byScope.values()].sort((a, b) => scopeKey(a.scope).localeCompare(scopeKey(b.scope)));
}
