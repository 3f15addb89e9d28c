import type { Provider } from '../core/domain/model/observedCluster.ts';

/** Cluster names each cloud accepts; an event naming anything else is ignored (retrying it cannot help). */
const CLUSTER_NAME: Readonly<Record<Provider, RegExp>> = {
  eks: /^[0-9A-Za-z][A-Za-z0-9_-]{0,99}$/,
  gke: /^[a-z](?:[-a-z0-9]{0,38}[a-z0-9])?$/,
  aks: /^[a-zA-Z0-9](?:[a-zA-Z0-9_-]{0,61}[a-zA-Z0-9])?$/,
};
const RESOURCE_GROUP = /^[-\w._()]{1,90}$/;
const GCP_LOCATION = /^[a-z]+-[a-z]+\d+(?:-[a-z])?$/;

export function validClusterName(provider: Provider, name: string): boolean {
  return CLUSTER_NAME[provider].test(name);
}

export function validResourceGroup(name: string): boolean {
  return RESOURCE_GROUP.test(name) && !name.endsWith('.');
}

export function validGcpLocation(location: string): boolean {
  return GCP_LOCATION.test(location);
}
