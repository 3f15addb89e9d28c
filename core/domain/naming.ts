import { createHash } from 'node:crypto';
import type { ObservedCluster } from './model/observedCluster.ts';

/** DNS-1123 label limit. */
const MAX_NAME_LENGTH = 63;
/** Hex digits of the id hash: 40 bits, so 10,000 clusters collide with odds below 1 in 20,000. */
const HASH_LENGTH = 10;
/** Longest manager name that still leaves room for provider, hash and a readable slug. */
export const MAX_MANAGER_LENGTH = 30;

const DNS_1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

export function isDns1123Label(value: string): boolean {
  return value.length <= MAX_NAME_LENGTH && DNS_1123_LABEL.test(value);
}

/** A DNS-1123 subdomain: dot-separated labels, at most 253 characters (Kubernetes object names). */
export function isDns1123Subdomain(value: string): boolean {
  return value.length <= 253 && value.split('.').every((label) => DNS_1123_LABEL.test(label));
}

/**
 * A readable DNS-1123 fragment of any display name: accents folded, lower-cased, every run of other
 * characters turned into one `-`, trimmed of `-`. May be empty (e.g. a name made only of CJK letters).
 */
export function slugify(value: string): string {
  return value
    .normalize('NFKD')
    .replace(/\p{M}/gu, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
}

/**
 * The id the name hash is taken over. Azure resource ids are case-insensitive and the API is not
 * consistent about their case, so they are lower-cased first; EKS ARNs and GKE self links are exact.
 */
function canonicalProviderId(cluster: Pick<ObservedCluster, 'provider' | 'providerId'>): string {
  return cluster.provider === 'aks' ? cluster.providerId.toLowerCase() : cluster.providerId;
}

/** Whether two provider ids of `provider` name one cluster (an Azure id in another case is the same). */
export function sameProviderId(provider: ObservedCluster['provider'], a: string, b: string): boolean {
  return (
    canonicalProviderId({ provider, providerId: a }) === canonicalProviderId({ provider, providerId: b })
  );
}

function shortHash(value: string): string {
  return createHash('sha256').update(value).digest('hex').slice(0, HASH_LENGTH);
}

/** Hex digits of the cross-inventory cluster label: 80 bits. */
const CLUSTER_LABEL_LENGTH = 20;

/** The value of the `cpsync.io/cluster` label: the same for every copy of a cluster's profile, wherever it is. */
export function clusterLabelValue(cluster: Pick<ObservedCluster, 'provider' | 'providerId'>): string {
  return createHash('sha256')
    .update(canonicalProviderId(cluster))
    .digest('hex')
    .slice(0, CLUSTER_LABEL_LENGTH);
}

/**
 * The profile name: `<manager>-<provider>-<slug>-<hash>`, a DNS-1123 label of at most 63 characters.
 * The hash is of the provider's immutable id, so the same cluster always gets the same name and two
 * clusters with the same display name (other region, other account) never share one.
 */
export function profileName(
  manager: string,
  cluster: Pick<ObservedCluster, 'provider' | 'providerId' | 'name'>,
): string {
  const hash = shortHash(canonicalProviderId(cluster));
  const prefix = `${manager}-${cluster.provider}-`;
  const room = MAX_NAME_LENGTH - prefix.length - hash.length - 1;
  const slug = slugify(cluster.name).slice(0, Math.max(0, room)).replace(/-+$/, '');
  return slug ? `${prefix}${slug}-${hash}` : `${prefix}${hash}`;
}
