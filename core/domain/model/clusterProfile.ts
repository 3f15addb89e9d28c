/**
 * ClusterProfile types, field for field as the upstream CRD
 * (`multicluster.x-k8s.io/v1alpha1`, kubernetes-sigs/cluster-inventory-api) defines them.
 * The vendored CRD in `adapters/hub/manifests/crd/` is the contract these types follow.
 */

export const CLUSTER_PROFILE_GROUP = 'multicluster.x-k8s.io';
export const CLUSTER_PROFILE_VERSION = 'v1alpha1';
export const CLUSTER_PROFILE_API_VERSION = `${CLUSTER_PROFILE_GROUP}/${CLUSTER_PROFILE_VERSION}`;
export const CLUSTER_PROFILE_KIND = 'ClusterProfile';
export const CLUSTER_PROFILE_PLURAL = 'clusterprofiles';

export interface ObjectMeta {
  name: string;
  namespace: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  /** Set by the hub; never part of what cpsync desires. */
  resourceVersion?: string;
  /** Set by the hub; never part of what cpsync desires. */
  uid?: string;
  /** Set by the hub; never part of what cpsync desires. */
  generation?: number;
  /**
   * Set by the hub once the object is being deleted and waits for its finalizers (another controller's, as
   * the Argo CD ClusterProfile integration adds): it is no longer written to, deleted again or counted.
   */
  deletionTimestamp?: string;
  /** Other controllers' hold on the object; cpsync never adds or removes one. */
  finalizers?: string[];
}

export interface ClusterManager {
  name: string;
}

export interface ClusterProfileSpec {
  displayName?: string;
  /** Immutable once set (CRD rule `self == oldSelf`). */
  clusterManager: ClusterManager;
}

export interface NamedExtension {
  name: string;
  extension: Record<string, unknown>;
}

/** A kubeconfig-style cluster entry (`AccessProvider.cluster`). */
export interface AccessCluster {
  server: string;
  'certificate-authority-data'?: string;
  'certificate-authority'?: string;
  'tls-server-name'?: string;
  'insecure-skip-tls-verify'?: boolean;
  'proxy-url'?: string;
  'disable-compression'?: boolean;
  extensions?: NamedExtension[];
}

export interface AccessProvider {
  name: string;
  cluster?: AccessCluster;
}

export type ConditionStatus = 'True' | 'False' | 'Unknown';

export interface Condition {
  type: string;
  status: ConditionStatus;
  reason: string;
  message: string;
  lastTransitionTime: string;
  observedGeneration?: number;
}

export interface Property {
  name: string;
  /** 1 to 1024 characters. */
  value: string;
  lastObservedTime?: string;
}

export interface ClusterProfileStatus {
  version?: { kubernetes?: string };
  properties?: Property[];
  conditions?: Condition[];
  accessProviders?: AccessProvider[];
  /** Deprecated upstream in favour of accessProviders; cpsync never writes it. */
  credentialProviders?: AccessProvider[];
}

export interface ClusterProfile {
  apiVersion: typeof CLUSTER_PROFILE_API_VERSION;
  kind: typeof CLUSTER_PROFILE_KIND;
  metadata: ObjectMeta;
  spec: ClusterProfileSpec;
  status?: ClusterProfileStatus;
}

/** Namespace/name of a profile, the identity the plan and the hub use. */
export interface ProfileRef {
  namespace: string;
  name: string;
}

export function profileKey(ref: ProfileRef): string {
  return `${ref.namespace}/${ref.name}`;
}

/** A copy of `profile` with `annotations` set over its own (the profile itself is not changed). */
export function withAnnotations(
  profile: ClusterProfile,
  annotations: Record<string, string>,
): ClusterProfile {
  return {
    ...profile,
    metadata: { ...profile.metadata, annotations: { ...profile.metadata.annotations, ...annotations } },
  };
}
