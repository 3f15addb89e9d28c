import type { Provider } from '../core/domain/model/observedCluster.ts';

/** Cluster names each cloud accepts; an event naming anything else is ignored (retrying it cannot help). */
const CLUSTER_NAME: Readonly<Record<Provider, RegExp>> = {
  eks: /^[0-9A-Za-z][A-Za-z0-9_-]{0,99}$/,
  gke: /^[a-z](?:[-a-z0-9]{0,38}[a-z0-9])?$/,
  aks: /^[a-zA-Z0-9](?:[a-zA-Z0-9_-]{0,61}[a-zA-Z0-9])?$/,
};
/**
 * ARM's rule for a resource group's name: letters, digits, underscores (in Unicode, as .NET's `\w`: `rg-café` is a
 * name), hyphens, periods and parentheses, at most 90, not ending in a period.
 */
const RESOURCE_GROUP = /^[-\p{L}\p{Mn}\p{Nd}\p{Pc}.()]{1,90}$/u;
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
