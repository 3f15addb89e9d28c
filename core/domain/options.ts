import type { FeatureGates } from './features.ts';
import type { Provider } from './model/observedCluster.ts';

/** Sends the clusters it matches to `namespace`; every matcher given must match. */
export interface NamespaceRule {
  provider?: Provider;
  /** AWS account id, GCP project id or Azure subscription id. */
  account?: string;
  /** A tag (label) the cluster carries; with `value`, only that value. */
  tag?: { key: string; value?: string };
  namespace: string;
}

/**
 * What the core needs to turn observed clusters into profiles. Made from the configuration (its schema,
 * adapters/compose/config.ts, holds the defaults and the checks); the `@default`s below are the schema's.
 */
export interface InventoryOptions {
  /**
   * Cluster manager name: `spec.clusterManager.name`, the `x-k8s.io/cluster-manager` label, and the
   * prefix of every profile name. A DNS-1123 label of at most 30 characters.
   * @default 'cpsync'
   */
  manager: string;
  /**
   * Namespace of profiles no rule places elsewhere.
   * @default 'cluster-inventory'
   */
  namespace: string;
  /**
   * Ordered rules; the first that matches a cluster chooses its namespace.
   * @default []
   */
  namespaceRules: NamespaceRule[];
  /**
   * Namespaces that stand for a ClusterSet, by namespace: the namespace is labelled with the set and
   * its profiles carry the `clusterset.k8s.io` property.
   * @default {}
   */
  clusterSets: Record<string, string>;
  /**
   * Tag keys copied into `cpsync.io/tag.<key>` properties; a trailing `*` matches a prefix.
   * @default []
   */
  tagAllowList: string[];
  /**
   * Name of each cloud's access provider entry.
   * @default { eks: 'eks', gke: 'gke', aks: 'aks' }
   */
  accessProviderNames: Record<Provider, string>;
  /** Which optional features are on (core/domain/features.ts holds each one's default). */
  features: FeatureGates;
  /**
   * Consecutive complete listings of its scope a cluster may be missing from before its profile is deleted.
   * @default 2
   */
  deletionGraceListings: number;
}

/** A namespace the hub must hold, labelled as a ClusterSet when it stands for one. */
export interface NamespaceSpec {
  name: string;
  clusterSet?: string;
}

/**
 * Every namespace a scope's profiles may live in: the default and those named by rules or ClusterSets;
 * labelled as a ClusterSet only while the `clusterSets` feature is on.
 */
export function inventoryNamespaces(options: InventoryOptions): NamespaceSpec[] {
  const names = new Set([options.namespace, ...options.namespaceRules.map((rule) => rule.namespace)]);
  return [...names].sort().map((name) => {
    const clusterSet = options.features.clusterSets ? options.clusterSets[name] : undefined;
    return clusterSet === undefined ? { name } : { name, clusterSet };
  });
}
