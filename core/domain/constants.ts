/** Label, annotation, property and condition names cpsync writes. */

/** Required by KEP-4322: the cluster manager's name. */
export const LABEL_CLUSTER_MANAGER = 'x-k8s.io/cluster-manager';
export const LABEL_PROVIDER = 'cpsync.io/provider';
export const LABEL_REGION = 'cpsync.io/region';
export const LABEL_ACCOUNT = 'cpsync.io/account';
/**
 * KEP-4322's member id (`multicluster.x-k8s.io/inventory-member-id`, defined in the API package of both
 * versions): the same value on every profile of the same cluster, in any namespace, stable while the
 * profile stands for that cluster, one profile per value in a namespace. Consumers (the Argo CD
 * ClusterProfile integration) deduplicate by it. cpsync's value: a hash of the provider's immutable id.
 */
export const LABEL_INVENTORY_MEMBER_ID = 'multicluster.x-k8s.io/inventory-member-id';
/**
 * The same value as the member id, written where cpsync wrote it before the member id existed: on the
 * profiles of a cluster written to more than one namespace (the `projections` feature). An alias kept for
 * selectors written against it; select by `multicluster.x-k8s.io/inventory-member-id` instead.
 */
export const LABEL_CLUSTER = 'cpsync.io/cluster';
/** On a projected copy: the namespace of the cluster's own profile. */
export const LABEL_PROJECTED_FROM = 'cpsync.io/projected-from';
/**
 * The cluster's region as Kubernetes' standard topology label names it (KEP-1659), on every profile: what
 * selectors written for any cluster manager (an Argo CD ApplicationSet's cluster generator) can use.
 */
export const LABEL_TOPOLOGY_REGION = 'topology.kubernetes.io/region';
/** The zone of a zonal cluster (a zonal GKE cluster), as Kubernetes' standard topology label names it. */
export const LABEL_TOPOLOGY_ZONE = 'topology.kubernetes.io/zone';
/**
 * The cloud (`aws`, `gcp`, `azure`: KEP-4322's `location.topology.k8s.io` vocabulary, as OpenTelemetry's
 * `cloud.provider` spells it too), on every profile. No upstream label names a cluster's cloud;
 * `cpsync.io/provider` names the service (`eks`, `gke`, `aks`).
 */
export const LABEL_CLOUD = 'cpsync.io/cloud';
/** The labels cpsync owns on every profile (tag labels are cpsync's too: see ownership.ts). */
export const OWNED_LABELS = [
  LABEL_CLUSTER_MANAGER,
  LABEL_PROVIDER,
  LABEL_REGION,
  LABEL_ACCOUNT,
  LABEL_CLUSTER,
  LABEL_INVENTORY_MEMBER_ID,
  LABEL_PROJECTED_FROM,
  LABEL_TOPOLOGY_REGION,
  LABEL_TOPOLOGY_ZONE,
  LABEL_CLOUD,
] as const;
/** Prefix of every label cpsync may write: a label under it is cpsync's (ownership.ts). */
export const LABEL_PREFIX = 'cpsync.io/';
/** Default prefix of the labels copied from cloud tags (`inventory.labels.prefix`). */
export const DEFAULT_TAG_LABEL_PREFIX = 'cpsync.io/tag-';

/** Namespace label of a ClusterSet (SPEC §3). */
export const LABEL_NAMESPACE_CLUSTERSET = 'multicluster.x-k8s.io/clusterset';
/** Namespace label of a ClusterSet as KEP-4322 spells it; written too, so readers of either find it. */
export const LABEL_NAMESPACE_CLUSTERSET_KEP = 'clusterset.multicluster.x-k8s.io';

export const ANNOTATION_PROVIDER_ID = 'cpsync.io/provider-id';
/**
 * On the profile in a projected cluster's own namespace: the namespaces of its copies (comma-separated),
 * so that a copy is found and deleted even once no configured rule names its namespace any more.
 */
export const ANNOTATION_PROJECTED_TO = 'cpsync.io/projected-to';
/** The annotations cpsync owns on a profile. */
/**
 * The grants cpsync holds on the cluster (the `accessGrants` feature): a JSON object, consumer name → the
 * identity granted. The same on every profile of the cluster.
 */
export const ANNOTATION_ACCESS_GRANTS = 'cpsync.io/access-grants';
/**
 * The labels cpsync copied from the cluster's cloud tags (the `tagLabels` feature), comma-separated and sorted:
 * what cpsync owns among keys outside `cpsync.io/` (a prefix of `""` writes the tag keys as they are), so that
 * they are compared, and removed when the tag or the feature goes. Present only while there is one.
 */
export const ANNOTATION_TAG_LABELS = 'cpsync.io/labels-from-tags';
/**
 * When cpsync deleted the profile (ISO 8601), written just before its deletion: an object that stays, held by
 * another controller's finalizer, says that cpsync deleted it (its cluster gone, or placed elsewhere), which one
 * another writer deleted does not (the admission policy lets no one else write it).
 */
export const ANNOTATION_DELETED_AT = 'cpsync.io/deleted-at';

export const OWNED_ANNOTATIONS = [
  ANNOTATION_PROVIDER_ID,
  ANNOTATION_PROJECTED_TO,
  ANNOTATION_ACCESS_GRANTS,
  ANNOTATION_TAG_LABELS,
  ANNOTATION_DELETED_AT,
] as const;

export const PROPERTY_ENDPOINTS = 'cluster-endpoints.k8s.io';
export const PROPERTY_LOCATION = 'location.topology.k8s.io';
export const PROPERTY_NODE_COUNT = 'count.node.k8s.io';
export const PROPERTY_NODE_TYPES = 'type.node.k8s.io';
export const PROPERTY_CLUSTERSET = 'clusterset.k8s.io';
export const PROPERTY_REGION = 'topology.kubernetes.io/region';
export const PROPERTY_ZONE = 'topology.kubernetes.io/zone';
/** Prefix of cpsync's own provider extras. */
const PROPERTY_PREFIX = 'cpsync.io/';
export const PROPERTY_PLATFORM_VERSION = 'cpsync.io/platform-version';
export const PROPERTY_STATUS = 'cpsync.io/status';
export const PROPERTY_POWER_STATE = 'cpsync.io/power-state';
export const PROPERTY_RESOURCE_GROUP = 'cpsync.io/resource-group';
export const PROPERTY_CREATED_AT = 'cpsync.io/created-at';
/** How many distinct node types did not fit in `type.node.k8s.io` (present only when some did not). */
export const PROPERTY_NODE_TYPES_OMITTED = 'cpsync.io/node-types-omitted';
/** Autoscaling bounds of the total node count (present only when some pool autoscales). */
export const PROPERTY_NODE_COUNT_MIN = 'cpsync.io/node-count-min';
export const PROPERTY_NODE_COUNT_MAX = 'cpsync.io/node-count-max';
/** The nodes a stopped cluster's (or pool's) configuration keeps, beside `count.node.k8s.io` (what runs). */
export const PROPERTY_NODE_COUNT_CONFIGURED = 'cpsync.io/node-count-configured';
/** Consecutive complete listings of its scope that did not list the cluster (present only while missing). */
export const PROPERTY_MISSED_LISTINGS = 'cpsync.io/missed-listings';
/**
 * Why the profile's access provider carries no `certificate-authority-data` (present only then):
 * `NotBase64`, `NotPEMCertificates` or `InvalidCertificate` when the provider's data would make every
 * client-go consumer fail, `NotProvided` when the provider gave none, `NotRead` when the configuration
 * does not read it (`features.certificateAuthority: off`, or AKS `fetchCertificateAuthority: false`), or the reason reading it failed (`Forbidden`, …).
 */
export const PROPERTY_CA_OMITTED = 'cpsync.io/certificate-authority-omitted';
/**
 * `private` when the `privateEndpoints` feature put a private endpoint before a public one (present only
 * then): what that feature wrote, so that turning it off can be seen through to the end.
 */
export const PROPERTY_ENDPOINT_PREFERENCE = 'cpsync.io/endpoint-preference';
/** Prefix of an allow-listed tag: `cpsync.io/tag.<key>`. */
export const PROPERTY_TAG_PREFIX = 'cpsync.io/tag.';
/**
 * How many tags `inventory.labels.fromTags` names that were not copied to labels (present only when some were not):
 * a label key or value that is not valid label syntax, or a key of Kubernetes' or cpsync's own.
 */
export const PROPERTY_TAG_LABELS_OMITTED = 'cpsync.io/tag-labels-omitted';

/** KEP-2149's cluster id property (the member's own ClusterProperty, else its `kube-system` namespace UID). */
export const PROPERTY_CLUSTER_ID = 'cluster.clusterset.k8s.io';
/** KEP-4322's list of the CRD groups the cluster serves. */
export const PROPERTY_CRD_GROUPS = 'group.customResource.k8s.io';
/** Where the cluster id came from: `ClusterProperty` (the member's own) or `kube-system-uid`. */
export const PROPERTY_CLUSTER_ID_SOURCE = 'cpsync.io/cluster-id-source';
/**
 * The names the member probe wrote outside `cpsync.io/` (copied ClusterProperties, the cluster id, the CRD
 * groups), as a JSON array: what cpsync owns among the standard and foreign names, so that they are
 * compared, and removed when the member or the feature stops providing them.
 */
export const PROPERTY_MEMBER_PROPERTIES = 'cpsync.io/member-properties';
/** The configured ClusterSet and the member's, when they disagree (the member's value is written). */
export const PROPERTY_CLUSTERSET_CONFLICT = 'cpsync.io/clusterset-conflict';

/** Standard (non-prefixed) property names cpsync writes and therefore owns. */
const OWNED_STANDARD_PROPERTIES: ReadonlySet<string> = new Set([
  PROPERTY_ENDPOINTS,
  PROPERTY_LOCATION,
  PROPERTY_NODE_COUNT,
  PROPERTY_NODE_TYPES,
  PROPERTY_CLUSTERSET,
  PROPERTY_REGION,
  PROPERTY_ZONE,
]);

/** Whether cpsync owns (writes and compares) a property of this name. */
export function isOwnedProperty(name: string): boolean {
  return OWNED_STANDARD_PROPERTIES.has(name) || name.startsWith(PROPERTY_PREFIX);
}

/** Upper bound the CRD puts on a property value. */
export const PROPERTY_VALUE_MAX_LENGTH = 1024;
/** The CRD's limit on a condition's message (characters). */
export const CONDITION_MESSAGE_MAX_LENGTH = 32768;
/** Upper bound the CRD puts on a property name. */
export const PROPERTY_NAME_MAX_LENGTH = 253;

export const CONDITION_CONTROL_PLANE_HEALTHY = 'ControlPlaneHealthy';
export const CONDITION_JOINED = 'Joined';
/** Whether the member probe could read the member (the `memberProbe` feature); False names why. */
export const CONDITION_MEMBER_REACHABLE = 'MemberReachable';
/** Prefix of each consumer's condition (the `accessGrants` feature): `consumers.cpsync.io/<consumer>`. */
export const CONSUMER_CONDITION_PREFIX = 'consumers.cpsync.io/';
/** The condition types cpsync owns (and each `consumers.cpsync.io/` one: see isOwnedCondition). */
const OWNED_CONDITIONS: ReadonlySet<string> = new Set([
  CONDITION_CONTROL_PLANE_HEALTHY,
  CONDITION_JOINED,
  CONDITION_MEMBER_REACHABLE,
]);

/** Whether cpsync owns (writes and compares) a condition of this type. */
export function isOwnedCondition(type: string): boolean {
  return OWNED_CONDITIONS.has(type) || type.startsWith(CONSUMER_CONDITION_PREFIX);
}

/** Reasons of the `Joined` condition. */
export const JoinedReason = {
  ListedByProvider: 'ListedByProvider',
  NotFoundInProvider: 'NotFoundInProvider',
} as const;

/** Reasons of the `ControlPlaneHealthy` condition. */
export const HealthReason = {
  Running: 'Running',
  Updating: 'Updating',
  Provisioning: 'Provisioning',
  Deleting: 'Deleting',
  Stopped: 'Stopped',
  Degraded: 'Degraded',
  HealthIssues: 'HealthIssues',
  Failed: 'Failed',
  StatusUnknown: 'StatusUnknown',
  /** The cluster is missing from its provider's listing (within the deletion grace): its health is not known. */
  NotFoundInProvider: 'NotFoundInProvider',
} as const;
export type HealthReason = (typeof HealthReason)[keyof typeof HealthReason];

/** The exec-plugin extension name kubeconfig readers look for. */
export const EXEC_EXTENSION_NAME = 'client.authentication.k8s.io/exec';

/** Default cluster manager name. */
export const DEFAULT_MANAGER = 'cpsync';
/** Default inventory namespace. */
export const DEFAULT_NAMESPACE = 'cluster-inventory';
/** Default number of consecutive complete listings a cluster may be missing from before its profile goes. */
export const DEFAULT_DELETION_GRACE_LISTINGS = 2;
/** Field manager cpsync applies with. */
export const FIELD_MANAGER = 'cpsync';

/** Argo CD's label of its declarative Secrets (`cluster` on a cluster Secret). */
export const ARGOCD_SECRET_TYPE_LABEL = 'argocd.argoproj.io/secret-type';
/** The well-known label of the tool that manages an object: `cpsync` on the Argo CD subscriber's Secrets. */
export const LABEL_MANAGED_BY = 'app.kubernetes.io/managed-by';
export const MANAGED_BY_CPSYNC = 'cpsync';
