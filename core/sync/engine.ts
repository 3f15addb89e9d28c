/**
 * The sync engine, by entry point: the run over scopes (run.ts, one scope of it in runScope.ts), the
 * one-cluster sync of events and follow-up looks (cluster.ts), and the inventory reads (inventory.ts); the steps
 * they share are in steps.ts, what they are asked and report in types.ts. Callers import the engine from here.
 */
export type {
  ClusterSyncReport,
  ClusterSyncRequest,
  EnginePorts,
  OrphanReport,
  RunSettings,
  ScopeReport,
  SettlingCluster,
  SyncReport,
} from './types.ts';
export { runSync, keepUndelivered } from './run.ts';
export { syncCluster } from './cluster.ts';
export { inventoryProfiles, orphanReport } from './inventory.ts';
