import type { FeatureGates } from './features.ts';
import type { Consumer } from './grants.ts';
import type { Provider } from './model/observedCluster.ts';
import { own } from './own.ts';
import type { TagLabelOptions } from './tagLabels.ts';

/** Which clusters a rule is about: every matcher given must match (none given: every cluster). */
export interface ClusterMatcher {
  provider?: Provider;
  /** AWS account id, GCP project id or Azure subscription id. */
  account?: string;
  /** The cluster's region (GKE: the region of a zonal cluster's zone too). */
  region?: string;
  /** A tag (label) the cluster carries; with `value`, only that value. */
  tag?: { key: string; value?: string };
}

/** Sends the clusters it matches to `namespace`. */
export interface NamespaceRule extends ClusterMatcher {
  namespace: string;
}

/**
 * Also writes the clusters it matches into `namespaces` (the `projections` feature): one more copy of the
 * profile in each, owned, updated and deleted like the one in the cluster's own namespace.
 */
export interface ProjectionRule extends ClusterMatcher {
  namespaces: string[];
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
   * Rules that copy a cluster's profile into more namespaces; every rule that matches adds its namespaces.
   * @default []
   */
  projections: ProjectionRule[];
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
   * Tags copied to labels `<prefix><tag key>` (the `tagLabels` feature), checked when the configuration is read.
   * @default { fromTags: [], prefix: 'cpsync.io/tag-' }
   */
  labels: TagLabelOptions;
  /**
   * Name of each cloud's access provider entry.
   * @default { eks: 'eks', gke: 'gke', aks: 'aks' }
   */
  accessProviderNames: Record<Provider, string>;
  /** Which optional features are on (core/domain/features.ts holds each one's default). */
  features: FeatureGates;
  /**
   * The inventory's consumers and what each is granted (the `accessGrants` feature).
   * @default []
   */
  consumers?: readonly Consumer[];
  /**
   * Consecutive complete listings of its scope a cluster may be missing from before its profile is deleted.
   * @default 2
   */
  deletionGraceListings: number;
  /**
   * Clouds the configuration reaches on this machine (an `endpoint` on a loopback address: a local emulator):
   * the servers they report may be loopback addresses, as their clusters run here too. No other cloud's may.
   * @default none
   */
  localClouds?: readonly Provider[];
}

/** A namespace the hub must hold, labelled as a ClusterSet when it stands for one. */
export interface NamespaceSpec {
  name: string;
  clusterSet?: string;
}

/**
 * Every namespace a scope's profiles may live in: the default and those named by namespace rules or
 * projections (whether or not the `projections` feature is on, so that turning it off finds the copies);
 * labelled as a ClusterSet only while the `clusterSets` feature is on.
 */
export function inventoryNamespaces(options: InventoryOptions): NamespaceSpec[] {
  const names = new Set([
    options.namespace,
    ...options.namespaceRules.map((rule) => rule.namespace),
    ...options.projections.flatMap((rule) => rule.namespaces),
  ]);
  return [...names].sort().map((name) => {
    const clusterSet = options.features.clusterSets ? own(options.clusterSets, name) : undefined;
    return clusterSet === undefined ? { name } : { name, clusterSet };
  });
}
