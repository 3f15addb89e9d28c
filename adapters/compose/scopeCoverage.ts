/**
 * Which scopes a run may sync: those the configuration covers, and no others. The CLI's `--provider`
 * and `--scope`, the worker's queue messages and the event handlers' clusters all come through here,
 * so a scope for an account, project, subscription or region the configuration does not name is
 * refused wherever it is asked for, and every scope is in its one canonical spelling.
 */
import type { CpsyncConfig } from './config.ts';
import { PROVIDERS, type Provider } from '../../core/domain/model/observedCluster.ts';
import { ALL_REGIONS, scopeKey, type Scope } from '../../core/domain/model/scope.ts';
import { canonicalScope, InvalidScopeError } from '../../core/domain/scopes.ts';
import { DISCOVERY_TTL_MILLIS, type ProviderInstance } from './provider.ts';
import { messageOf } from '../../core/domain/errors.ts';
import { withDeadline } from '../../core/sync/deadline.ts';

/** A scope asked for that will not be synced, and why. */
export interface ScopeRefusal {
  /** The scope as it was asked for (`provider/account[/region]`). */
  requested: string;
  reason: string;
  /** Coverage could not be told (discovery failed): asking again later may succeed. */
  undetermined?: true;
}

/** A provider whose scopes could not be enumerated (its discovery failed): it is left out of the run. */
export interface EnumerationFailure {
  provider: Provider;
  message: string;
}

export interface ResolvedScopes {
  /** Canonical, covered by the configuration, without overlaps (an account-wide scope takes in its regions). */
  scopes: Scope[];
  /** Asked-for scopes that are refused: not covered, not valid, or overlapping. */
  refused: ScopeRefusal[];
  failures: EnumerationFailure[];
}

export interface ScopeRequest {
  /** Only these providers. */
  providers?: readonly Provider[];
  /** Only these scopes (each within the configuration). */
  scopes?: ReadonlyArray<{ provider: string; account: string; region?: string }>;
}

/**
 * Accounts asked for one by one whose discovery is remembered, at most: the oldest is forgotten first, so ids that no
 * configuration covers, asked one after another, hold no more memory than this.
 */
const REMEMBERED_ACCOUNT_ASKS = 512;

const ACCOUNT_FIELD: Record<Provider, string> = {
  eks: 'providers.eks.accounts',
  gke: 'providers.gke.projects',
  aks: 'providers.aks.subscriptions',
};

interface Cached {
  at: number;
  scopes: Promise<Scope[]>;
}
type Providers = Partial<Record<Provider, ProviderInstance>>;
const discovered = new WeakMap<ProviderInstance, Map<string, Cached>>();

/** The configured scopes of `instance` (of `accounts` only, when given), canonical; reused for a while. */
function configuredScopes(
  instance: ProviderInstance,
  provider: Provider,
  deadlineMillis: number,
  accounts?: readonly string[],
): Promise<Scope[]> {
  // Where one account costs the whole discovery, the whole one answers for every account asked.
  if (accounts && instance.discoversWhole)
    return configuredScopes(instance, provider, deadlineMillis).then((scopes) =>
      scopes.filter((scope) => accounts.includes(scope.account)),
    );
  let cache = discovered.get(instance);
  if (!cache) discovered.set(instance, (cache = new Map()));
  const key = accounts?.join(',') ?? '*';
  const hit = cache.get(key);
  if (hit && Date.now() - hit.at < DISCOVERY_TTL_MILLIS) return hit.scopes;
  cache.delete(key);
  // The oldest ask forgotten first (a Map keeps its keys in the order they were set); the whole discovery is one.
  while (cache.size >= REMEMBERED_ACCOUNT_ASKS) cache.delete(cache.keys().next().value!);
  // As long as one scope's listing may take: a discovery that never answers fails, and is asked again next time.
  const scopes = withDeadline(`discovering the scopes of providers.${provider}`, deadlineMillis, () =>
    instance.scopes(accounts),
  ).then((found) => found.map((scope) => canonicalScope(scope)));
  const entry = { at: Date.now(), scopes };
  cache.set(key, entry);
  // A failed discovery is not remembered: the next request asks again.
  scopes.catch(() => {
    if (cache.get(key) === entry) cache.delete(key);
  });
  return scopes;
}

const message = messageOf;

/** Requested scopes without overlaps: one of an account's regions is dropped when the whole account is asked for too. */
function withoutOverlaps(scopes: Scope[], refused: ScopeRefusal[]): Scope[] {
  const byKey = new Map(scopes.map((scope) => [scopeKey(scope), scope]));
  const wide = new Set(
    [...byKey.values()].filter((s) => s.region === ALL_REGIONS).map((s) => `${s.provider}/${s.account}`),
  );
  return [...byKey.values()].filter((scope) => {
    if (scope.region === ALL_REGIONS || !wide.has(`${scope.provider}/${scope.account}`)) return true;
    refused.push({
      requested: scopeKey(scope),
      reason: `already part of ${scope.provider}/${scope.account}/*, which is synced in the same run`,
    });
    return false;
  });
}

/**
 * The scopes to sync for a request: every configured scope (of `providers`, when given), or the
 * requested scopes checked against the configuration. A requested account-wide scope stands for the
 * configured scopes of that account; a requested region must be one the configuration covers.
 */
export async function resolveScopes(
  config: CpsyncConfig,
  providers: Providers,
  request: ScopeRequest = {},
): Promise<ResolvedScopes> {
  const result: ResolvedScopes = { scopes: [], refused: [], failures: [] };
  const configured = PROVIDERS.filter((provider) => providers[provider] && config.providers[provider]);
  const deadlineMillis = config.sync.scopeTimeoutSeconds * 1000;
  if (!request.scopes || request.scopes.length === 0) {
    // Every provider's discovery at once: one that is slow or never answers holds none of the others' scopes.
    const asked = configured.filter(
      (provider) => !request.providers?.length || request.providers.includes(provider),
    );
    const found = await Promise.allSettled(
      asked.map((provider) => configuredScopes(providers[provider]!, provider, deadlineMillis)),
    );
    found.forEach((outcome, i) => {
      if (outcome.status === 'fulfilled') result.scopes.push(...outcome.value);
      else result.failures.push({ provider: asked[i]!, message: message(outcome.reason) });
    });
    result.scopes = withoutOverlaps(result.scopes, result.refused);
    return result;
  }

  const wanted: Scope[] = [];
  for (const asked of request.scopes) {
    const requested = [asked.provider, asked.account, asked.region].filter((p) => p !== undefined).join('/');
    const refuse = (reason: string) => result.refused.push({ requested, reason });
    let scope: Scope;
    try {
      scope = canonicalScope(asked);
    } catch (error) {
      if (error instanceof InvalidScopeError) {
        refuse(error.message);
        continue;
      }
      throw error;
    }
    if (request.providers?.length && !request.providers.includes(scope.provider)) {
      refuse(`provider ${scope.provider} is not among --provider ${request.providers.join(', ')}`);
      continue;
    }
    const instance = configured.includes(scope.provider) ? providers[scope.provider] : undefined;
    if (!instance) {
      refuse(`providers.${scope.provider} is not configured`);
      continue;
    }
    let covered: Scope[];
    try {
      covered = await configuredScopes(instance, scope.provider, deadlineMillis, [scope.account]);
    } catch (error) {
      result.refused.push({
        requested,
        reason: `cannot tell whether the configuration covers it: ${message(error)}`,
        undetermined: true,
      });
      continue;
    }
    if (covered.length === 0) {
      refuse(`${scope.account} is not covered by ${ACCOUNT_FIELD[scope.provider]}`);
      continue;
    }
    if (scope.region === ALL_REGIONS) {
      wanted.push(...covered);
      continue;
    }
    if (covered.some((c) => c.region === ALL_REGIONS || c.region === scope.region)) {
      wanted.push(scope);
      continue;
    }
    refuse(
      `region ${scope.region} is not configured for ${scope.provider}/${scope.account} (configured: ${covered.map((c) => c.region).join(', ')})`,
    );
  }
  result.scopes = withoutOverlaps(wanted, result.refused);
  return result;
}
