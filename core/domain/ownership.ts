/**
 * Which fields of a ClusterProfile are cpsync's: the one owner of that answer. The plan compares
 * only these, the write-ahead intents fingerprint only these, and both hubs write only these (the
 * Kubernetes hub's apply bodies, the file hub's merge), so that other writers' labels, annotations,
 * properties, conditions and access providers are never compared, announced or overwritten.
 */
import {
  ANNOTATION_DELETED_AT,
  ANNOTATION_TAG_LABELS,
  LABEL_PREFIX,
  OWNED_ANNOTATIONS,
  OWNED_LABELS,
  isOwnedCondition,
  isOwnedProperty,
} from './constants.ts';
import { memberPropertyNames } from './member.ts';
import { own } from './own.ts';
import { recordedTagLabels } from './tagLabels.ts';
import {
  CLUSTER_PROFILE_API_VERSION,
  CLUSTER_PROFILE_KIND,
  type ClusterProfile,
  type ClusterProfileSpec,
  type ClusterProfileStatus,
} from './model/clusterProfile.ts';

/** The entries of `record` whose key `owned` says are cpsync's. */
function pick(
  record: Record<string, string> | undefined,
  owned: (key: string) => boolean,
): Record<string, string> {
  const picked: Record<string, string> = {};
  for (const [key, value] of Object.entries(record ?? {})) if (owned(key)) picked[key] = value;
  return picked;
}

/** The entries of `record` whose key `owned` says are not cpsync's: someone else's. */
function othersOf(
  record: Record<string, string> | undefined,
  owned: (key: string) => boolean,
): Record<string, string> {
  return pick(record, (key) => !owned(key));
}

const ownedAnnotation = (key: string) => (OWNED_ANNOTATIONS as readonly string[]).includes(key);

/**
 * Which labels of a profile are cpsync's: its own (OWNED_LABELS), every label under `cpsync.io/` (the domain only
 * cpsync writes: its tag labels under the default prefix, and anything another writer forges there), and the tag
 * labels the profile's `cpsync.io/labels-from-tags` annotation names (a prefix outside `cpsync.io/`, or none).
 */
function ownedLabel(metadata: ClusterProfile['metadata']): (key: string) => boolean {
  const recorded = new Set(recordedTagLabels(own(metadata.annotations, ANNOTATION_TAG_LABELS)));
  return (key) =>
    (OWNED_LABELS as readonly string[]).includes(key) || key.startsWith(LABEL_PREFIX) || recorded.has(key);
}

/**
 * Whether `profile` is being deleted by cpsync: deleted, and held by another controller's finalizer, after cpsync
 * marked it (ANNOTATION_DELETED_AT). One another writer deleted is not: cpsync deletes it in turn, marking it, when
 * it would delete the profile (its cluster gone, or placed elsewhere), and consumers take it for its cluster's until
 * then.
 */
export function deletedByCpsync(profile: ClusterProfile): boolean {
  return (
    profile.metadata.deletionTimestamp !== undefined &&
    own(profile.metadata.annotations, ANNOTATION_DELETED_AT) !== undefined
  );
}

/** The labels and annotations cpsync owns on a profile. */
export function ownedMetadata(metadata: ClusterProfile['metadata']): {
  labels: Record<string, string>;
  annotations: Record<string, string>;
} {
  return {
    labels: pick(metadata.labels, ownedLabel(metadata)),
    annotations: pick(metadata.annotations, ownedAnnotation),
  };
}

/** The spec fields cpsync owns (all of it: display name and cluster manager). */
function ownedSpec(spec: Partial<ClusterProfileSpec> | undefined): {
  displayName: string | undefined;
  clusterManager: string | undefined;
} {
  return { displayName: spec?.displayName, clusterManager: spec?.clusterManager?.name };
}

/** Which entries of a status's keyed lists are cpsync's. */
function ownedEntries(
  status: ClusterProfileStatus | undefined,
  accessProviderNames: readonly string[],
  listedBefore: ReadonlySet<string> = new Set(),
) {
  // Names outside cpsync's own that the member probe wrote are listed in the status itself (or were, before a write).
  const member = new Set([...memberPropertyNames(status?.properties), ...listedBefore]);
  return {
    property: (p: { name: string }) => isOwnedProperty(p.name) || member.has(p.name),
    condition: (c: { type: string }) => isOwnedCondition(c.type),
    accessProvider: (a: { name: string }) => accessProviderNames.includes(a.name),
  };
}

/** The part of a profile's status that cpsync owns. */
export function ownedStatusOf(
  status: ClusterProfileStatus | undefined,
  accessProviderNames: readonly string[],
): Required<Pick<ClusterProfileStatus, 'properties' | 'conditions' | 'accessProviders'>> &
  Pick<ClusterProfileStatus, 'version'> {
  const is = ownedEntries(status, accessProviderNames);
  const owned = {
    properties: (status?.properties ?? []).filter(is.property),
    conditions: (status?.conditions ?? []).filter(is.condition),
    accessProviders: (status?.accessProviders ?? []).filter(is.accessProvider),
  };
  return status?.version?.kubernetes === undefined
    ? owned
    : { ...owned, version: { kubernetes: status.version.kubernetes } };
}

/** Everything cpsync owns in a profile, times included; `objectOnly` leaves the status out. */
export function ownedState(
  profile: ClusterProfile,
  accessProviderNames: readonly string[],
  objectOnly = false,
) {
  return {
    ...ownedMetadata(profile.metadata),
    spec: ownedSpec(profile.spec),
    ...(objectOnly ? {} : { status: ownedStatusOf(profile.status, accessProviderNames) }),
  };
}

/** What cpsync applies as the object (server-side apply of the main resource): owned metadata and the spec. */
export function objectApplyBody(profile: ClusterProfile): ClusterProfile {
  const { name, namespace } = profile.metadata;
  return {
    apiVersion: CLUSTER_PROFILE_API_VERSION,
    kind: CLUSTER_PROFILE_KIND,
    metadata: { name, namespace, ...ownedMetadata(profile.metadata) },
    spec: profile.spec,
  };
}

/** What cpsync applies to the status subresource. */
export function statusApplyBody(profile: ClusterProfile): Pick<
  ClusterProfile,
  'apiVersion' | 'kind' | 'status'
> & {
  metadata: { name: string; namespace: string };
} {
  const { name, namespace } = profile.metadata;
  return {
    apiVersion: CLUSTER_PROFILE_API_VERSION,
    kind: CLUSTER_PROFILE_KIND,
    metadata: { name, namespace },
    status: profile.status ?? {},
  };
}

/**
 * The object as it reads after cpsync's object apply on `current` (as server-side apply leaves it):
 * the owned labels and annotations as applied (one no longer applied is gone: tag labels as `current` recorded
 * them), everyone else's kept; the spec replaced; the status untouched.
 */
export function mergeObjectApply(
  current: ClusterProfile | undefined,
  profile: ClusterProfile,
): Pick<ClusterProfile, 'spec' | 'status'> & {
  labels: Record<string, string>;
  annotations: Record<string, string>;
} {
  const owned = ownedMetadata(profile.metadata);
  return {
    labels: {
      ...(current ? othersOf(current.metadata.labels, ownedLabel(current.metadata)) : {}),
      ...owned.labels,
    },
    annotations: { ...othersOf(current?.metadata.annotations, ownedAnnotation), ...owned.annotations },
    spec: profile.spec,
    ...(current?.status ? { status: current.status } : {}),
  };
}

/**
 * Labels and annotations of cpsync's own that `stored` carries and `profile` does not: written by another
 * writer (a server-side apply never removes a field another manager set), to be removed so that the hub
 * shows only what cpsync wants under its keys. A tag label outside `cpsync.io/` is cpsync's while its record
 * names it: one that another writer also set when cpsync stopped writing it is theirs as well, and stays.
 */
export function strayOwnedKeys(
  stored: ClusterProfile,
  profile: ClusterProfile,
): { labels: string[]; annotations: string[] } {
  const absent = (
    from: Record<string, string> | undefined,
    wanted: Record<string, string> | undefined,
    owned: (key: string) => boolean,
  ) =>
    Object.keys(from ?? {})
      .filter((key) => owned(key) && own(wanted, key) === undefined)
      .sort();
  return {
    labels: absent(stored.metadata.labels, profile.metadata.labels, ownedLabel(stored.metadata)),
    annotations: absent(stored.metadata.annotations, profile.metadata.annotations, ownedAnnotation),
  };
}

/** A key as one segment of a JSON Pointer (RFC 6901). */
export function pointerSegment(key: string): string {
  return key.replace(/~/g, '~0').replace(/\//g, '~1');
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Where `stored` has a field that `wanted` has not, under `at` (JSON Pointers). Maps are compared key by key, as
 * server-side apply merges them; a list or a value is its applier's whole, which a forced apply replaces.
 */
function extraFields(stored: unknown, wanted: unknown, at: string): string[] {
  if (!isRecord(stored) || !isRecord(wanted)) return [];
  return Object.keys(stored).flatMap((key) => {
    const path = `${at}/${pointerSegment(key)}`;
    const want = own(wanted, key);
    return want === undefined ? [path] : extraFields(stored[key], want, path);
  });
}

/**
 * The entries of a keyed list (the CRD's `x-kubernetes-list-type: map`) that are cpsync's in `stored` and absent
 * from `wanted`, and the fields of the others that `wanted`'s entry lacks; from the list's last entry to its first,
 * so that each removal leaves the indexes of those after it true.
 */
function extraEntries<Entry extends object>(
  stored: readonly Entry[] | undefined,
  wanted: readonly Entry[] | undefined,
  keyOf: (entry: Entry) => string,
  owned: (entry: Entry) => boolean,
  at: string,
): string[] {
  const want = new Map((wanted ?? []).map((entry) => [keyOf(entry), entry]));
  const list = stored ?? [];
  const paths: string[] = [];
  for (let index = list.length - 1; index >= 0; index--) {
    const entry = list[index]!;
    if (!owned(entry)) continue;
    const match = want.get(keyOf(entry));
    paths.push(...(match === undefined ? [`${at}/${index}`] : extraFields(entry, match, `${at}/${index}`)));
  }
  return paths;
}

/** The Kubernetes version cpsync no longer writes, and the map that held it alone. */
function strayVersion(
  have: ClusterProfileStatus['version'],
  want: ClusterProfileStatus['version'],
): string[] {
  if (have === undefined || want?.kubernetes !== undefined) return [];
  const others = Object.keys(have).filter((key) => key !== 'kubernetes');
  if (others.length === 0 && want === undefined) return ['/status/version'];
  return have.kubernetes === undefined ? [] : ['/status/version/kubernetes'];
}

/**
 * Fields of cpsync's own in `stored`'s spec and status that `profile` does not have (JSON Pointers, in an order
 * in which they can be removed one after another). A server-side apply removes a field its manager no longer
 * applies only while no other manager claims it, and any writer may claim any field by writing the profile's
 * `metadata.managedFields` (which the admission policy does not see), so a writer could otherwise keep what cpsync
 * took away: a property, a condition, an access provider or a field within one, the Kubernetes version, a field of
 * the spec. Others' entries are never named: not cpsync's by ownedStatusOf's rules, where a property the member
 * probe listed in `before` (the profile as read before the write) is cpsync's as well.
 */
export function strayOwnedFields(
  stored: ClusterProfile,
  profile: ClusterProfile,
  accessProviderNames: readonly string[],
  before?: ClusterProfile,
): { spec: string[]; status: string[] } {
  const have = stored.status;
  const want = profile.status;
  const names = [...accessProviderNames, ...(want?.accessProviders ?? []).map((a) => a.name)];
  // A property the member probe listed before this write, and no longer does, is cpsync's to take away too.
  const is = ownedEntries(have, names, memberPropertyNames(before?.status?.properties));
  const byName = (entry: { name: string }) => entry.name;
  return {
    spec: extraFields(stored.spec, profile.spec ?? {}, '/spec'),
    status: [
      ...extraEntries(have?.properties, want?.properties, byName, is.property, '/status/properties'),
      ...extraEntries(have?.conditions, want?.conditions, (c) => c.type, is.condition, '/status/conditions'),
      ...extraEntries(
        have?.accessProviders,
        want?.accessProviders,
        byName,
        is.accessProvider,
        '/status/accessProviders',
      ),
      ...strayVersion(have?.version, want?.version),
    ],
  };
}
