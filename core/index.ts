/** cpsync's core: the ClusterProfile model, normalization, naming, planning and the ports adapters implement. */
export * from './constants.ts';
export { CpsyncError, InvalidClusterError, InvalidOptionError } from './errors.ts';
export { controlPlaneHealth, type HealthVerdict } from './health.ts';
export { labelValue, matchesSelector, scopeSelector, selectorString } from './labels.ts';
export * from './model/clusterProfile.ts';
export * from './model/observedCluster.ts';
export * from './model/scope.ts';
export { isDns1123Label, isDns1123Subdomain, profileName, slugify } from './naming.ts';
export { normalize, normalizeAll, placeCluster, type NormalizeResult, type Placement } from './normalize.ts';
export {
  DEFAULT_INVENTORY_OPTIONS,
  inventoryOptions,
  type InventoryOptions,
  type NamespaceRule,
} from './options.ts';
export * from './plan.ts';
export * from './applyPlan.ts';
export type * from './ports.ts';
export { inventoryNamespaces, syncScope, type SyncScopeInput, type SyncScopeResult } from './syncScope.ts';
export { timestamp } from './time.ts';
export { ConfigError, configSchema, inventoryOptionsOf, parseConfig, type CpsyncConfig } from './config.ts';
export {
  providerIdMatches,
  runSync,
  syncCluster,
  type ClusterSyncReport,
  type ClusterSyncRequest,
  type EnginePorts,
  type ScopeReport,
  type SyncReport,
  type SyncRequest,
} from './engine.ts';
export {
  DEFAULT_INTENT_LEASE_MILLIS,
  fingerprint,
  planIntents,
  recoverIntents,
  type ChangeIntent,
} from './intents.ts';
