import { createHash } from 'node:crypto';
import type { ObservedCluster } from './model/observedCluster.ts';

/** Any character beyond ASCII. */
const NOT_ASCII = /\P{ASCII}/u;

/**
 * A cloud's id or name with its ASCII letters lower-cased and every other character as it is: how cpsync folds
 * case where a cloud ignores it. ARM compares ids ordinally without regard to ASCII case, and a resource group
 * may be named with other letters: `K` (KELVIN SIGN) and `k` name two resource groups there, while
 * `toLowerCase()` makes them one. A fold wider than the cloud's would let one cluster stand for another (its
 * name, its profile, its deletion, its grants); a narrower one at worst leaves an unusual spelling unmatched.
 */
export function foldCase(text: string): string {
  // An ASCII string (nearly every id) lower-cases the same either way; the replace is for the rest.
  return NOT_ASCII.test(text)
    ? text.replace(/[A-Z]+/g, (letters) => letters.toLowerCase())
    : text.toLowerCase();
}

/** Code-unit order: a total order in which only equal strings tie (a locale's collation ties `K` and `K`). */
export function compareOrdinal(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** DNS-1123 label limit. */
const MAX_NAME_LENGTH = 63;
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
 * consistent about their case, so their ASCII letters are lower-cased first (`foldCase`, as ARM compares
 * them); EKS ARNs and GKE self links are exact.
 */
export function canonicalProviderId(cluster: Pick<ObservedCluster, 'provider' | 'providerId'>): string {
  return cluster.provider === 'aks' ? foldCase(cluster.providerId) : cluster.providerId;
}

/**
 * The ids earlier versions took the name hash and ledger key over, where they differ from today's: earlier versions
 * lower-cased an Azure id whole (`toLowerCase()`, non-ASCII letters too), where `foldCase` lowers ASCII letters only.
 * What was filed or named under one is the cluster's still, and is found there.
 */
export function legacyCanonicalProviderIds(
  cluster: Pick<ObservedCluster, 'provider' | 'providerId'>,
): string[] {
  if (cluster.provider !== 'aks') return [];
  const lowered = cluster.providerId.toLowerCase();
  return lowered === canonicalProviderId(cluster) ? [] : [lowered];
}

/** Whether two provider ids of `provider` name one cluster (an Azure id in another case is the same). */
export function sameProviderId(provider: ObservedCluster['provider'], a: string, b: string): boolean {
  return (
    canonicalProviderId({ provider, providerId: a }) === canonicalProviderId({ provider, providerId: b })
  );
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

/** What a profile's name is made from: the cloud, the cluster's immutable id and its display name. */
export type NameSubject = Pick<ObservedCluster, 'provider' | 'providerId' | 'name'>;

/**
 * The names a cluster's profile may have. A profile on the hub keeps the name it has (any of these);
 * a newcomer is given the first of `candidates` that nothing else holds (core/domain/names.ts decides).
 */
export interface NameScheme {
  /**
   * The names a newcomer may be given, most wanted first: each is of the cluster alone (a function of its
   * provider, immutable id and display name), and no two clusters share the last.
   */
  candidates(manager: string, cluster: NameSubject): string[];
  /** Names earlier versions gave: a profile that has one keeps it, and none is given anew. */
  legacy(manager: string, cluster: NameSubject): string[];
  /**
   * Whether `name` can be one of the cluster's own names (a candidate or a legacy name), judged from its id
   * alone: a profile of cpsync's under a name not made for its cluster was not written by cpsync. Absent: any
   * name may be (a scheme whose names say nothing of the id).
   */
  madeFor?(manager: string, name: string, cluster: Pick<NameSubject, 'provider' | 'providerId'>): boolean;
}

/** Hex digits of the id hash in a new name: 64 bits, so that a name matching a chosen one is out of reach. */
const HASH_LENGTH = 16;
/** Hex digits of the id hash in names given before (40 bits): profiles that have them keep them. */
const LEGACY_HASH_LENGTH = 10;
/** Longer hashes for a newcomer whose name is taken (a collision, or a name someone else holds). */
const FALLBACK_HASH_LENGTHS = [24, 32, 48] as const;

/**
 * `<manager>-<provider>-<slug>-<hash>`, a DNS-1123 label of at most 63 characters: the first `digits` hex
 * digits of the id's SHA-256, and as much of the display name's slug as fits (none when it does not).
 */
function nameWithHash(manager: string, cluster: NameSubject, digest: string, digits: number): string {
  const prefix = `${manager}-${cluster.provider}-`;
  const hash = digest.slice(0, Math.min(digits, MAX_NAME_LENGTH - prefix.length));
  const room = MAX_NAME_LENGTH - prefix.length - hash.length - 1;
  const slug = room > 0 ? slugify(cluster.name).slice(0, room).replace(/-+$/, '') : '';
  return slug ? `${prefix}${slug}-${hash}` : `${prefix}${hash}`;
}

const sha256Hex = (text: string) => createHash('sha256').update(text).digest('hex');
const digestOf = (cluster: Pick<NameSubject, 'provider' | 'providerId'>) =>
  sha256Hex(canonicalProviderId(cluster));
/** The digests of the ids earlier versions hashed where today's differ (see `legacyCanonicalProviderIds`). */
const earlierDigestsOf = (cluster: Pick<NameSubject, 'provider' | 'providerId'>) =>
  legacyCanonicalProviderIds(cluster).map(sha256Hex);

/** The names given with `digest`, in order: the slug and 64 bits, longer hashes, then the whole hash and no slug. */
function namesWith(manager: string, cluster: NameSubject, digest: string): string[] {
  const names = [HASH_LENGTH, ...FALLBACK_HASH_LENGTHS].map((digits) =>
    nameWithHash(manager, cluster, digest, digits),
  );
  names.push(nameWithHash(manager, { ...cluster, name: '' }, digest, digest.length));
  return [...new Set(names)];
}

/**
 * cpsync's names: the slug and 64 bits of the id hash; then longer hashes; last, the longest hash a name
 * can carry and no slug (all the room given to the hash: 112 bits or more, whatever the manager's length).
 */
export const PROFILE_NAMES: NameScheme = {
  candidates(manager, cluster) {
    return namesWith(manager, cluster, digestOf(cluster));
  },
  legacy(manager, cluster) {
    // Every name an earlier version could have given: the 40-bit one, and every name of an id it folded otherwise.
    return [digestOf(cluster), ...earlierDigestsOf(cluster)].flatMap((digest, index) => [
      nameWithHash(manager, cluster, digest, LEGACY_HASH_LENGTH),
      ...(index > 0 ? namesWith(manager, cluster, digest) : []),
    ]);
  },
  madeFor(manager, name, cluster) {
    // Every name of the scheme ends in a hash of the id (the legacy one, 40 bits, the shortest).
    const hash = name.slice(name.lastIndexOf('-') + 1);
    return (
      name.startsWith(`${manager}-${cluster.provider}-`) &&
      hash.length >= LEGACY_HASH_LENGTH &&
      /^[0-9a-f]+$/.test(hash) &&
      [digestOf(cluster), ...earlierDigestsOf(cluster)].some((digest) => digest.startsWith(hash))
    );
  },
};

/**
 * The name a newcomer gets when nothing else holds it: `<manager>-<provider>-<slug>-<hash>`, a DNS-1123
 * label of at most 63 characters. The hash is of the provider's immutable id, so the same cluster always
 * gets the same name and two clusters with the same display name (other region, other account) never
 * share one.
 */
export function profileName(manager: string, cluster: NameSubject): string {
  return PROFILE_NAMES.candidates(manager, cluster)[0]!;
}
