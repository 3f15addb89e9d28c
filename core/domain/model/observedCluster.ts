/**
 * What a source adapter reports about one cloud cluster, in provider-neutral terms.
 * Adapters fill it from the provider's API; the core turns it into a ClusterProfile.
 */

export const PROVIDERS = ['eks', 'gke', 'aks'] as const;
export type Provider = (typeof PROVIDERS)[number];

/** Whether `value` (a label's, a flag's) names one of the providers. */
export const isProvider = (value: string | undefined): value is Provider =>
  (PROVIDERS as readonly string[]).includes(value ?? '');

/** The cloud a provider runs in, as written in `location.topology.k8s.io`. */
export const CLOUD_OF: Readonly<Record<Provider, 'aws' | 'gcp' | 'azure'>> = {
  eks: 'aws',
  gke: 'gcp',
  aks: 'azure',
};

export interface ObservedEndpoint {
  /** An API server URL (`https://host[:port]`). */
  url: string;
  visibility: 'public' | 'private';
}

export interface HealthIssue {
  /** Provider code, e.g. EKS `Ec2SubnetNotFound`, GKE `GCE_STOCKOUT`. */
  code: string;
  message: string;
}

export interface ObservedHealth {
  /**
   * The provider's own lifecycle state: EKS `status` (ACTIVE, CREATING, …), GKE `status`
   * (RUNNING, DEGRADED, …), AKS `provisioningState` (Succeeded, Failed, …).
   */
  status: string;
  /** AKS `powerState.code` (Running, Stopped). */
  powerState?: string;
  /** EKS `health.issues`, GKE `conditions`. */
  issues: HealthIssue[];
}

export interface ObservedNodes {
  /** Total nodes that run, over all node groups/pools, when the provider reports it (0 when stopped). */
  count?: number;
  /**
   * The nodes the pools are configured for, when that differs from what runs (a stopped cluster or pool
   * keeps its configured count): shown beside the count, never instead of it.
   */
  configured?: number;
  /** Instance/machine/VM sizes in use, in any order, duplicates allowed. */
  instanceTypes: string[];
  /**
   * Bounds of the total node count when some pool/group autoscales (pools that do not count their
   * fixed size in both bounds). Absent when nothing autoscales.
   */
  autoscaling?: { min: number; max: number };
  /**
   * Node groups the cloud is still changing (EKS managed node groups CREATING, UPDATING or DELETING), as
   * `<name> <STATUS>`: the cluster is looked at again until they settle. Not part of any profile.
   */
  inChange?: string[];
}

export interface ObservedCluster {
  provider: Provider;
  /** The provider's full immutable id: EKS ARN, GKE selfLink, AKS resource id. */
  providerId: string;
  /** The cluster's name in the cloud. */
  name: string;
  /** AWS account id, GCP project id or Azure subscription id. */
  account: string;
  /** Region (for a zonal cluster, the zone's region). */
  region: string;
  /** Set for zonal clusters only. */
  zone?: string;
  /** AKS resource group. */
  resourceGroup?: string;
  /** AKS: the Entra tenant of the cluster's AAD integration (its `aadProfile.tenantID`), when it has one. */
  tenantId?: string;
  /** Public endpoints first; empty while a cluster is still being created. */
  endpoints: ObservedEndpoint[];
  /** Base64 PEM bundle, when the provider gives it. */
  certificateAuthorityData?: string;
  /** Why there is no CA data when the source could not read it (`Forbidden`, `NotRead`, …). */
  certificateAuthorityUnavailable?: string;
  /** The most precise Kubernetes version the provider reports. */
  kubernetesVersion?: string;
  /** EKS platform version, GKE/AKS node image channel or similar provider detail. */
  platformVersion?: string;
  health: ObservedHealth;
  nodes: ObservedNodes;
  /** Tags (EKS), resource labels (GKE), tags (AKS). Only allow-listed keys reach a profile. */
  tags: Record<string, string>;
  /** ISO-8601 creation time, when the provider reports it. */
  createdAt?: string;
}
