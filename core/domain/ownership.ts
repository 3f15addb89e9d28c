/**
 * Which fields of a ClusterProfile are cpsync's: the one owner of that answer. The plan compares
 * only these, the write-ahead intents fingerprint only these, and both hubs write only these (the
 * Kubernetes hub's apply bodies, the file hub's merge), so that other writers' labels, annotations,
 * properties, conditions and access providers are never compared, announced or overwritten.
 */
import { OWNED_ANNOTATIONS, OWNED_LABELS, isOwnedCondition, isOwnedProperty } from './constants.ts';
import { memberPropertyNames } from './member.ts';
import {
  CLUSTER_PROFILE_API_VERSION,
  CLUSTER_PROFILE_KIND,
  type ClusterProfile,
  type ClusterProfileSpec,
  type ClusterProfileStatus,
} from './model/clusterProfile.ts';

/** The entries of `record` under `keys` (those that are set). */
function pick(record: Record<string, string> | undefined, keys: readonly string[]): Record<string, string> {
  const picked: Record<string, string> = {};
  for (const key of keys) {
    const value = record?.[key];
    if (value !== undefined) picked[key] = value;
  }
  return picked;
}

/** The entries of `record` not under `keys`: someone else's. */
function othersOf(
  record: Record<string, string> | undefined,
  keys: readonly string[],
): Record<string, string> {
  const others: Record<string, string> = {};
  for (const [key, value] of Object.entries(record ?? {})) if (!keys.includes(key)) others[key] = value;
  return others;
}

/** The labels and annotations cpsync owns on a profile. */
export function ownedMetadata(metadata: ClusterProfile['metadata']): {
  labels: Record<string, string>;
  annotations: Record<string, string>;
} {
  return {
    labels: pick(metadata.labels, OWNED_LABELS),
    annotations: pick(metadata.annotations, OWNED_ANNOTATIONS),
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
 * the owned labels and annotations as applied (one no longer applied is gone), everyone else's kept; the spec replaced; the status untouched.
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
    labels: { ...othersOf(current?.metadata.labels, OWNED_LABELS), ...owned.labels },
    annotations: { ...othersOf(current?.metadata.annotations, OWNED_ANNOTATIONS), ...owned.annotations },
    spec: profile.spec,
    ...(current?.status ? { status: current.status } : {}),
  };
}

/**
 * Labels and annotations of cpsync's own that `stored` carries and `profile` does not: written by another
 * writer (a server-side apply never removes a field another manager set), to be removed so that the hub
 * shows only what cpsync wants under its keys.
 */
export function strayOwnedKeys(
  stored: ClusterProfile,
  profile: ClusterProfile,
): { labels: string[]; annotations: string[] } {
  const absent = (
    from: Record<string, string> | undefined,
    wanted: Record<string, string> | undefined,
    keys: readonly string[],
  ) => keys.filter((key) => from?.[key] !== undefined && wanted?.[key] === undefined);
  return {
    labels: absent(stored.metadata.labels, profile.metadata.labels, OWNED_LABELS),
    annotations: absent(stored.metadata.annotations, profile.metadata.annotations, OWNED_ANNOTATIONS),
  };
}
