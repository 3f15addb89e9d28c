import {
  DEFAULT_DELETION_GRACE_LISTINGS,
  DEFAULT_MANAGER,
  DEFAULT_NAMESPACE,
  PROPERTY_NAME_MAX_LENGTH,
  PROPERTY_TAG_PREFIX,
} from './constants.ts';
import { InvalidOptionError } from './errors.ts';
import type { Provider } from './model/observedCluster.ts';
import { isDns1123Label, MAX_MANAGER_LENGTH } from './naming.ts';

/** Sends the clusters it matches to `namespace`; every matcher given must match. */
export interface NamespaceRule {
  provider?: Provider;
  /** AWS account id, GCP project id or Azure subscription id. */
  account?: string;
  /** A tag (label) the cluster carries; with `value`, only that value. */
  tag?: { key: string; value?: string };
  namespace: string;
}

/** What the core needs to turn observed clusters into profiles. */
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
  /**
   * Put private endpoints first (and make one `accessProviders[].cluster.server`) when a cluster has both.
   * @default false
   */
  preferPrivateEndpoints: boolean;
  /**
   * Consecutive complete listings of its scope a cluster may be missing from before its profile is deleted.
   * @default 2
   */
  deletionGraceListings: number;
}

export const DEFAULT_INVENTORY_OPTIONS: Readonly<InventoryOptions> = Object.freeze({
  manager: DEFAULT_MANAGER,
  namespace: DEFAULT_NAMESPACE,
  namespaceRules: [],
  clusterSets: {},
  tagAllowList: [],
  accessProviderNames: { eks: 'eks', gke: 'gke', aks: 'aks' },
  preferPrivateEndpoints: false,
  deletionGraceListings: DEFAULT_DELETION_GRACE_LISTINGS,
});

/** Defaults merged under the given options, then checked; throws InvalidOptionError naming the option. */
export function inventoryOptions(overrides: Partial<InventoryOptions> = {}): InventoryOptions {
  const options: InventoryOptions = { ...DEFAULT_INVENTORY_OPTIONS, ...overrides };
  if (!isDns1123Label(options.manager) || options.manager.length > MAX_MANAGER_LENGTH) {
    throw new InvalidOptionError(
      'manager',
      `must be a DNS-1123 label (lower-case letters, digits, '-') of at most ${MAX_MANAGER_LENGTH} characters, got ${JSON.stringify(options.manager)}`,
    );
  }
  const namespaces = [
    options.namespace,
    ...options.namespaceRules.map((rule) => rule.namespace),
    ...Object.keys(options.clusterSets),
  ];
  for (const namespace of namespaces) {
    if (!isDns1123Label(namespace)) {
      throw new InvalidOptionError('namespace', `must be a DNS-1123 label, got ${JSON.stringify(namespace)}`);
    }
  }
  for (const key of options.tagAllowList) {
    if (key === '' || PROPERTY_TAG_PREFIX.length + key.length > PROPERTY_NAME_MAX_LENGTH) {
      throw new InvalidOptionError(
        'tagAllowList',
        `entries must be 1 to ${PROPERTY_NAME_MAX_LENGTH - PROPERTY_TAG_PREFIX.length} characters, got ${JSON.stringify(key)}`,
      );
    }
  }
  if (!Number.isInteger(options.deletionGraceListings) || options.deletionGraceListings < 1) {
    throw new InvalidOptionError(
      'deletionGraceListings',
      `must be a whole number ≥ 1, got ${String(options.deletionGraceListings)}`,
    );
  }
  return options;
}
