/**
 * An observed cluster as the ClusterProfiles it is written as (SPEC §3): where it is placed (the inventory's
 * namespace and every projection rule that matches), its labels, properties, conditions and access providers.
 * One file because it is the one mapping from a cloud's answer to the contract, read top to bottom.
 */
import {
  ANNOTATION_PROJECTED_TO,
  ANNOTATION_PROVIDER_ID,
  ANNOTATION_TAG_LABELS,
  CONDITION_CONTROL_PLANE_HEALTHY,
  CONDITION_JOINED,
  EXEC_EXTENSION_NAME,
  JoinedReason,
  LABEL_ACCOUNT,
  LABEL_CLOUD,
  LABEL_CLUSTER,
  LABEL_INVENTORY_MEMBER_ID,
  LABEL_PROJECTED_FROM,
  LABEL_CLUSTER_MANAGER,
  LABEL_PROVIDER,
  LABEL_REGION,
  LABEL_TOPOLOGY_REGION,
  LABEL_TOPOLOGY_ZONE,
  PROPERTY_CA_OMITTED,
  PROPERTY_CLUSTERSET,
  PROPERTY_CREATED_AT,
  PROPERTY_ENDPOINT_PREFERENCE,
  PROPERTY_ENDPOINTS,
  PROPERTY_LOCATION,
  PROPERTY_NAME_MAX_LENGTH,
  PROPERTY_NODE_COUNT,
  PROPERTY_NODE_COUNT_CONFIGURED,
  PROPERTY_NODE_COUNT_MAX,
  PROPERTY_NODE_COUNT_MIN,
  PROPERTY_NODE_TYPES,
  PROPERTY_NODE_TYPES_OMITTED,
  PROPERTY_PLATFORM_VERSION,
  PROPERTY_POWER_STATE,
  PROPERTY_REGION,
  PROPERTY_RESOURCE_GROUP,
  PROPERTY_STATUS,
  PROPERTY_TAG_LABELS_OMITTED,
  PROPERTY_TAG_PREFIX,
  PROPERTY_ZONE,
} from './constants.ts';
import { certificateAuthorityProblem } from './certificates.ts';
import { canonicalServer, endpointHostPort } from './endpoints.ts';
import { InvalidClusterError } from './errors.ts';
import { controlPlaneHealth } from './health.ts';
import { labelValue } from './labels.ts';
import { own } from './own.ts';
import {
  CLUSTER_PROFILE_API_VERSION,
  CLUSTER_PROFILE_KIND,
  type AccessProvider,
  type ClusterProfile,
  type Condition,
  type Property,
} from './model/clusterProfile.ts';
import {
  CLOUD_OF,
  PROVIDERS,
  type ObservedCluster,
  type ObservedEndpoint,
  type Provider,
} from './model/observedCluster.ts';
import { clusterLabelValue, profileName, sameProviderId } from './naming.ts';
import { distinctSorted, fitJsonArray, fitValue } from './properties.ts';
import type { ClusterMatcher, InventoryOptions } from './options.ts';
import { allowListed, tagLabelRecord, tagLabels } from './tagLabels.ts';

/** Where a cluster's profile lives, and the ClusterSet that namespace stands for, if any. */
export interface Placement {
  namespace: string;
  clusterSet?: string;
}

function ruleMatches(rule: ClusterMatcher, cluster: ObservedCluster): boolean {
  if (rule.provider !== undefined && rule.provider !== cluster.provider) return false;
  if (rule.account !== undefined && rule.account !== cluster.account) return false;
  if (rule.region !== undefined && rule.region !== cluster.region) return false;
  if (rule.tag !== undefined) {
    const value = own(cluster.tags, rule.tag.key);
    if (value === undefined) return false;
    if (rule.tag.value !== undefined && rule.tag.value !== value) return false;
  }
  return true;
}

function placementIn(namespace: string, options: InventoryOptions): Placement {
  const clusterSet = options.features.clusterSets ? own(options.clusterSets, namespace) : undefined;
  return clusterSet === undefined ? { namespace } : { namespace, clusterSet };
}

/**
 * Where the cluster's profiles go: first its own namespace (the first namespace rule that matches decides,
 * otherwise the default namespace), then — while the `projections` feature is on — every other namespace
 * a matching projection rule names.
 */
function placeCluster(cluster: ObservedCluster, options: InventoryOptions): Placement[] {
  const own =
    options.namespaceRules.find((rule) => ruleMatches(rule, cluster))?.namespace ?? options.namespace;
  const namespaces = new Set([own]);
  if (options.features.projections)
    for (const rule of options.projections)
      if (ruleMatches(rule, cluster)) for (const namespace of rule.namespaces) namespaces.add(namespace);
  return [...namespaces].map((namespace) => placementIn(namespace, options));
}

/**
 * The endpoints that may be servers (core/domain/endpoints.ts), each in its canonical spelling, once each
 * (two spellings of one address are one endpoint).
 */
function validEndpoints(endpoints: readonly ObservedEndpoint[], loopback: boolean): ObservedEndpoint[] {
  const seen = new Set<string>();
  const valid: ObservedEndpoint[] = [];
  for (const endpoint of endpoints) {
    const url = canonicalServer(endpoint.url, { loopback });
    if (url === undefined || seen.has(url)) continue;
    seen.add(url);
    valid.push({ ...endpoint, url });
  }
  return valid;
}

function orderEndpoints(endpoints: ObservedEndpoint[], preferPrivate: boolean): ObservedEndpoint[] {
  const first = preferPrivate ? 'private' : 'public';
  return [
    ...endpoints.filter((e) => e.visibility === first),
    ...endpoints.filter((e) => e.visibility !== first),
  ];
}

/** Whether preferring private endpoints put one before a public endpoint that would otherwise lead. */
function preferenceApplied(endpoints: readonly ObservedEndpoint[], preferPrivate: boolean): boolean {
  return (
    preferPrivate &&
    endpoints[0]?.visibility === 'private' &&
    endpoints.some((e) => e.visibility === 'public')
  );
}

function assertCluster(cluster: ObservedCluster): void {
  const id = cluster.providerId ?? '';
  if (!PROVIDERS.includes(cluster.provider)) {
    throw new InvalidClusterError(
      'provider',
      id,
      `must be one of ${PROVIDERS.join(', ')}, got ${JSON.stringify(cluster.provider)}`,
    );
  }
  for (const field of ['providerId', 'name', 'account', 'region'] as const) {
    if (typeof cluster[field] !== 'string' || cluster[field].trim() === '') {
      throw new InvalidClusterError(field, id, 'is required and must be a non-empty string');
    }
  }
  if (!Array.isArray(cluster.endpoints)) throw new InvalidClusterError('endpoints', id, 'must be a list');
  if (
    typeof cluster.health !== 'object' ||
    cluster.health === null ||
    !Array.isArray(cluster.health.issues)
  ) {
    throw new InvalidClusterError('health', id, 'must be an object with a status and a list of issues');
  }
  if (
    typeof cluster.nodes !== 'object' ||
    cluster.nodes === null ||
    !Array.isArray(cluster.nodes.instanceTypes)
  ) {
    throw new InvalidClusterError('nodes', id, 'must be an object with a list of instance types');
  }
  if (typeof cluster.tags !== 'object' || cluster.tags === null)
    throw new InvalidClusterError('tags', id, 'must be an object');
  const count = cluster.nodes.count;
  if (count !== undefined && (!Number.isInteger(count) || count < 0)) {
    throw new InvalidClusterError('nodes.count', id, `must be a whole number ≥ 0, got ${String(count)}`);
  }
}

/**
 * What an exec credential plugin needs to get a token for the cluster (client-go hands it to the plugin
 * in KUBERNETES_EXEC_INFO when the consumer sets `provideClusterInfo: true`); never a credential. Keys:
 * every cloud `provider`, `clusterName` (the profile's name: unique in the inventory and a valid Secret
 * name — what the upstream `secretreader` plugin keys on) and `cluster` (the cloud's own name); EKS
 * `clusterId` (the cloud's name again, as aws-iam-authenticator and the community EKS plugin call it),
 * `region`, `accountId`; GKE `projectId`, `location`; AKS `subscriptionId`, `resourceGroup`, `location`,
 * and `tenantId` (the cluster's AAD tenant, else the configured one) when known.
 */
function execExtension(cluster: ObservedCluster, name: string): Record<string, unknown> {
  const common = { provider: cluster.provider, clusterName: name, cluster: cluster.name };
  switch (cluster.provider) {
    case 'eks':
      return { ...common, clusterId: cluster.name, region: cluster.region, accountId: cluster.account };
    case 'gke':
      return { ...common, projectId: cluster.account, location: cluster.zone ?? cluster.region };
    case 'aks':
      return {
        ...common,
        subscriptionId: cluster.account,
        resourceGroup: cluster.resourceGroup,
        location: cluster.region,
        ...(cluster.tenantId ? { tenantId: cluster.tenantId } : {}),
      };
  }
}

/** The CA data a profile can carry: only PEM certificates client-go can load, and only while the feature is on. */
function usableCertificateAuthority(cluster: ObservedCluster, read: boolean): string | undefined {
  const data = read ? cluster.certificateAuthorityData : undefined;
  return data !== undefined && certificateAuthorityProblem(data) === undefined ? data : undefined;
}

/** Why a profile with an access provider carries no CA data, or undefined when it carries it. */
function certificateAuthorityOmitted(cluster: ObservedCluster, read: boolean): string | undefined {
  if (!read) return 'NotRead';
  const data = cluster.certificateAuthorityData;
  if (data === undefined || data === '') return cluster.certificateAuthorityUnavailable ?? 'NotProvided';
  return certificateAuthorityProblem(data);
}

function accessProviders(
  cluster: ObservedCluster,
  name: string,
  server: string | undefined,
  options: InventoryOptions,
): AccessProvider[] {
  if (server === undefined) return [];
  const names: Record<Provider, string> = options.accessProviderNames;
  const ca = usableCertificateAuthority(cluster, options.features.certificateAuthority);
  return [
    {
      name: names[cluster.provider],
      cluster: {
        server,
        ...(ca ? { 'certificate-authority-data': ca } : {}),
        extensions: [{ name: EXEC_EXTENSION_NAME, extension: execExtension(cluster, name) }],
      },
    },
  ];
}

function tagProperties(cluster: ObservedCluster, allowList: readonly string[]): Array<[string, string]> {
  return Object.entries(cluster.tags)
    .filter(([key, value]) => allowListed(allowList, key) && value !== '')
    .map(([key, value]): [string, string] => [`${PROPERTY_TAG_PREFIX}${key}`, value])
    .filter(([name]) => name.length <= PROPERTY_NAME_MAX_LENGTH);
}

function properties(
  cluster: ObservedCluster,
  placement: Placement,
  endpoints: ObservedEndpoint[],
  options: InventoryOptions,
): Array<[string, string]> {
  const cloud = CLOUD_OF[cluster.provider];
  const entries: Array<[string, string]> = [
    [PROPERTY_ENDPOINTS, fitJsonArray(endpoints.map((e) => endpointHostPort(e.url))).json],
    [PROPERTY_LOCATION, `${cloud}/${cluster.zone ?? cluster.region}`],
    [PROPERTY_REGION, cluster.region],
  ];
  if (cluster.zone) entries.push([PROPERTY_ZONE, cluster.zone]);
  if (cluster.nodes.count !== undefined) entries.push([PROPERTY_NODE_COUNT, String(cluster.nodes.count)]);
  if (cluster.nodes.configured !== undefined)
    entries.push([PROPERTY_NODE_COUNT_CONFIGURED, String(cluster.nodes.configured)]);
  if (cluster.nodes.autoscaling) {
    entries.push(
      [PROPERTY_NODE_COUNT_MIN, String(cluster.nodes.autoscaling.min)],
      [PROPERTY_NODE_COUNT_MAX, String(cluster.nodes.autoscaling.max)],
    );
  }
  const types = distinctSorted(cluster.nodes.instanceTypes);
  if (types.length > 0) {
    const fitted = fitJsonArray(types);
    entries.push([PROPERTY_NODE_TYPES, fitted.json]);
    if (fitted.omitted > 0) entries.push([PROPERTY_NODE_TYPES_OMITTED, String(fitted.omitted)]);
  }
  if (placement.clusterSet) entries.push([PROPERTY_CLUSTERSET, placement.clusterSet]);
  if (cluster.platformVersion) entries.push([PROPERTY_PLATFORM_VERSION, cluster.platformVersion]);
  if (cluster.health.status) entries.push([PROPERTY_STATUS, cluster.health.status]);
  if (cluster.health.powerState) entries.push([PROPERTY_POWER_STATE, cluster.health.powerState]);
  if (cluster.resourceGroup) entries.push([PROPERTY_RESOURCE_GROUP, cluster.resourceGroup]);
  if (cluster.createdAt) entries.push([PROPERTY_CREATED_AT, cluster.createdAt]);
  const caOmitted =
    endpoints.length > 0
      ? certificateAuthorityOmitted(cluster, options.features.certificateAuthority)
      : undefined;
  if (caOmitted) entries.push([PROPERTY_CA_OMITTED, caOmitted]);
  if (preferenceApplied(endpoints, options.features.privateEndpoints))
    entries.push([PROPERTY_ENDPOINT_PREFERENCE, 'private']);
  if (options.features.tagProperties) entries.push(...tagProperties(cluster, options.tagAllowList));
  const omitted = options.features.tagLabels ? tagLabels(cluster.tags, options.labels).omitted : 0;
  if (omitted > 0) entries.push([PROPERTY_TAG_LABELS_OMITTED, String(omitted)]);
  return entries;
}

/**
 * The labels of every profile of the cluster: cpsync's selection labels, the standard topology labels and the
 * cloud, and (the `tagLabels` feature) the labels of its allow-listed tags, which the `cpsync.io/labels-from-tags`
 * annotation records.
 */
function labelsOf(
  cluster: ObservedCluster,
  options: InventoryOptions,
): { labels: Record<string, string>; annotations: Record<string, string> } {
  const fromTags = options.features.tagLabels ? tagLabels(cluster.tags, options.labels).labels : {};
  const tagged = Object.keys(fromTags);
  return {
    labels: {
      ...fromTags,
      [LABEL_CLUSTER_MANAGER]: options.manager,
      [LABEL_PROVIDER]: cluster.provider,
      [LABEL_REGION]: labelValue(cluster.region),
      [LABEL_ACCOUNT]: labelValue(cluster.account),
      [LABEL_INVENTORY_MEMBER_ID]: clusterLabelValue(cluster),
      [LABEL_TOPOLOGY_REGION]: labelValue(cluster.region),
      ...(cluster.zone ? { [LABEL_TOPOLOGY_ZONE]: labelValue(cluster.zone) } : {}),
      [LABEL_CLOUD]: CLOUD_OF[cluster.provider],
    },
    annotations: tagged.length > 0 ? { [ANNOTATION_TAG_LABELS]: tagLabelRecord(tagged) } : {},
  };
}

/**
 * The ClusterProfile cpsync wants for one observed cluster (SPEC §3), under the name a newcomer gets
 * (`profileName`). Pure: `now` stamps the condition and property times; `plan` keeps the hub's times
 * wherever nothing changed. Throws InvalidClusterError naming the field when the cluster cannot become a
 * profile.
 */
export function normalize(cluster: ObservedCluster, options: InventoryOptions, now: string): ClusterProfile {
  return normalizeEverywhere(cluster, options, now)[0]!;
}

/**
 * The name of a cluster's profile in a namespace (core/sync/names.ts chooses it against the hub), or
 * undefined when the cluster is not written there.
 */
export type NameOf = (cluster: ObservedCluster, namespace: string) => string | undefined;

/**
 * The namespaces a cluster's profiles go to: its own first, then (while the `projections` feature is on)
 * those of the projection rules that match it. Throws InvalidClusterError when the cluster cannot become
 * a profile.
 */
export function namespacesOf(cluster: ObservedCluster, options: InventoryOptions): string[] {
  assertCluster(cluster);
  return placeCluster(cluster, options).map((p) => p.namespace);
}

/**
 * The cluster's profile in its own namespace, then its projected copies (the `projections` feature):
 * the same content in each, but for the namespace's ClusterSet property (and the name, should a collision
 * have given the cluster another name in one of them). Every profile carries the cluster's member id
 * (`multicluster.x-k8s.io/inventory-member-id`), the same on each copy; a cluster written to more than
 * one namespace also carries it as `cpsync.io/cluster` (the alias selectors of earlier versions use), and
 * each copy names the cluster's own namespace in `cpsync.io/projected-from`. A namespace `nameOf` gives no
 * name is left out.
 */
function normalizeEverywhere(
  cluster: ObservedCluster,
  options: InventoryOptions,
  now: string,
  nameOf?: NameOf,
): ClusterProfile[] {
  assertCluster(cluster);
  const placements = placeCluster(cluster, options);
  const projected = placements.length > 1;
  const own = placements[0]!.namespace;
  const named = (namespace: string) =>
    nameOf ? nameOf(cluster, namespace) : profileName(options.manager, cluster);
  return placements.flatMap((placement) => {
    const name = named(placement.namespace);
    if (name === undefined) return [];
    const profile = normalizeIn(cluster, options, now, placement, name);
    if (projected) {
      profile.metadata.labels![LABEL_CLUSTER] = clusterLabelValue(cluster);
      if (placement.namespace !== own) profile.metadata.labels![LABEL_PROJECTED_FROM] = own;
      else
        profile.metadata.annotations![ANNOTATION_PROJECTED_TO] = placements
          .slice(1)
          .map((p) => p.namespace)
          .sort()
          .join(',');
    }
    return [profile];
  });
}

function normalizeIn(
  cluster: ObservedCluster,
  options: InventoryOptions,
  now: string,
  placement: Placement,
  name: string,
): ClusterProfile {
  const endpoints = orderEndpoints(
    validEndpoints(cluster.endpoints, options.localClouds?.includes(cluster.provider) ?? false),
    options.features.privateEndpoints,
  );
  const health = controlPlaneHealth(cluster);

  const props: Property[] = properties(cluster, placement, endpoints, options)
    .map(([name, value]) => ({ name, value: fitValue(value), lastObservedTime: now }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));

  const conditions: Condition[] = [
    { type: CONDITION_CONTROL_PLANE_HEALTHY, ...health, lastTransitionTime: now },
    {
      type: CONDITION_JOINED,
      status: 'True',
      reason: JoinedReason.ListedByProvider,
      message: `Listed by ${cluster.provider.toUpperCase()} in ${cluster.account}/${cluster.zone ?? cluster.region}`,
      lastTransitionTime: now,
    },
  ];

  const status: ClusterProfile['status'] = {
    properties: props,
    conditions,
    accessProviders: accessProviders(cluster, name, endpoints[0]?.url, options),
  };
  if (cluster.kubernetesVersion) status.version = { kubernetes: cluster.kubernetesVersion };

  const { labels, annotations } = labelsOf(cluster, options);
  return {
    apiVersion: CLUSTER_PROFILE_API_VERSION,
    kind: CLUSTER_PROFILE_KIND,
    metadata: {
      name,
      namespace: placement.namespace,
      labels,
      annotations: { [ANNOTATION_PROVIDER_ID]: cluster.providerId, ...annotations },
    },
    spec: { displayName: cluster.name, clusterManager: { name: options.manager } },
    status,
  };
}

export interface NormalizeResult {
  profiles: ClusterProfile[];
  /** Clusters that could not become profiles, each with the field that was wrong. */
  errors: InvalidClusterError[];
}

/**
 * Normalizes many clusters, collecting per-cluster errors instead of stopping at the first. `nameOf` gives
 * each profile its name (the name a newcomer gets, when not given). A cluster the provider listed twice
 * keeps its first reading.
 */
export function normalizeAll(
  clusters: readonly ObservedCluster[],
  options: InventoryOptions,
  now: string,
  nameOf?: NameOf,
): NormalizeResult {
  const byKey = new Map<string, ClusterProfile>();
  const errors: InvalidClusterError[] = [];
  for (const cluster of clusters) {
    try {
      for (const profile of normalizeEverywhere(cluster, options, now, nameOf)) {
        const key = `${profile.metadata.namespace}/${profile.metadata.name}`;
        const first = byKey.get(key);
        if (!first) byKey.set(key, profile);
        else if (
          !sameProviderId(
            cluster.provider,
            first.metadata.annotations![ANNOTATION_PROVIDER_ID]!,
            cluster.providerId,
          )
        )
          // Names are chosen before (core/sync/names.ts): two clusters never share one.
          throw new Error(
            `${key} was given to ${first.metadata.annotations![ANNOTATION_PROVIDER_ID]} and ${cluster.providerId}`,
          );
      }
    } catch (error) {
      if (error instanceof InvalidClusterError) errors.push(error);
      else throw error;
    }
  }
  return { profiles: [...byKey.values()], errors };
}
