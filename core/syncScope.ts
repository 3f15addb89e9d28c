import { applyPlan, type ApplyResult } from './applyPlan.ts';
import type { InvalidClusterError } from './errors.ts';
import { scopeSelector } from './labels.ts';
import type { ClusterProfile } from './model/clusterProfile.ts';
import { normalizeAll } from './normalize.ts';
import type { InventoryOptions } from './options.ts';
import { plan, type Plan } from './plan.ts';
import type { Hub, NamespaceSpec, ScopeListing } from './ports.ts';

export interface SyncScopeInput {
  hub: Hub;
  listing: ScopeListing;
  options: InventoryOptions;
  /** Stamp for what changes in this run (RFC 3339, whole seconds). */
  now: string;
  /** Provider ids the provider confirmed gone. */
  confirmedGone?: ReadonlySet<string>;
  /** Plan only: read the hub, write nothing. */
  dryRun?: boolean;
  /** Called with the plan just before it is applied (write-ahead intents). */
  beforeApply?: (plan: Plan) => Promise<void>;
}

export interface SyncScopeResult {
  plan: Plan;
  applied: ApplyResult;
  /** Clusters the listing reported that could not become profiles. */
  invalid: InvalidClusterError[];
}

/** Every namespace a scope's profiles may live in: the default and those named by rules or ClusterSets. */
export function inventoryNamespaces(options: InventoryOptions): NamespaceSpec[] {
  const names = new Set([options.namespace, ...options.namespaceRules.map((rule) => rule.namespace)]);
  return [...names].sort().map((name) => {
    const clusterSet = options.clusterSets[name];
    return clusterSet === undefined ? { name } : { name, clusterSet };
  });
}

/**
 * One scope, end to end against the hub: normalize the listing, read what the hub holds for the
 * scope, plan, apply. Level-triggered: whatever earlier runs did, the hub ends matching the listing.
 */
export async function syncScope(input: SyncScopeInput): Promise<SyncScopeResult> {
  const { hub, listing, options, now } = input;
  const { profiles: desired, errors: invalid } = normalizeAll(listing.clusters, options, now);
  const namespaces = inventoryNamespaces(options);
  const selector = scopeSelector(options.manager, listing.outcome.scope);
  const current: ClusterProfile[] = [];
  for (const namespace of namespaces) current.push(...(await hub.list(namespace.name, selector)));

  const result = plan({
    outcome: listing.outcome,
    desired,
    current,
    manager: options.manager,
    deletionGraceListings: options.deletionGraceListings,
    accessProviderNames: Object.values(options.accessProviderNames),
    now,
    ...(input.confirmedGone ? { confirmedGone: input.confirmedGone } : {}),
  });
  if (input.dryRun) return { plan: result, applied: { applied: [], failed: [] }, invalid };

  const used = new Set(result.creates.map((c) => c.profile.metadata.namespace));
  for (const namespace of namespaces.filter((ns) => used.has(ns.name))) await hub.ensureNamespace(namespace);
  await input.beforeApply?.(result);
  return { plan: result, applied: await applyPlan(hub, result), invalid };
}
