/**
 * Which fields of a ClusterProfile are cpsync's: the one owner of that answer. The plan compares
 * only these, the write-ahead intents fingerprint only these, and both hubs write only these (the
 * Kubernetes hub's apply bodies, the file hub's merge), so that other writers' labels, annotations,
 * properties, conditions and access providers are never compared, announced or overwritten.
 */
import {
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

/** The part of a profile's status that cpsync owns. */
export function ownedStatusOf(
  status: ClusterProfileStatus | undefined,
  accessProviderNames: readonly string[],
): Required<Pick<ClusterProfileStatus, 'properties' | 'conditions' | 'accessProviders'>> &
  Pick<ClusterProfileStatus, 'version'> {
  // Names outside cpsync's own that the member probe wrote are listed in the status itself.
  const member = memberPropertyNames(status?.properties);
  const owned = {
    properties: (status?.properties ?? []).filter((p) => isOwnedProperty(p.name) || member.has(p.name)),
    conditions: (status?.conditions ?? []).filter((c) => isOwnedCondition(c.type)),
    accessProviders: (status?.accessProviders ?? []).filter((a) => accessProviderNames.includes(a.name)),
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
