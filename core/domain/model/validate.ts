import { CLUSTER_PROFILE_API_VERSION, CLUSTER_PROFILE_KIND } from './clusterProfile.ts';

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function stringMap(value: unknown): boolean {
  return value === undefined || (isObject(value) && Object.values(value).every((v) => typeof v === 'string'));
}

/** Whether each of `keys` of `value` (an object, or nothing) is a string where it is set. */
function optionalStrings(value: unknown, keys: readonly string[]): boolean {
  return !isObject(value) || keys.every((key) => value[key] === undefined || typeof value[key] === 'string');
}

function listOf(value: unknown, item: (entry: Json) => boolean): boolean {
  return (
    value === undefined || (Array.isArray(value) && value.every((entry) => isObject(entry) && item(entry)))
  );
}

/**
 * What is wrong with an object found where a ClusterProfile should be (a file edited by hand, a
 * truncated write), or undefined when it has every field cpsync reads in the shape the CRD gives it.
 * Such an object is left untouched: never planned against, never written over, never deleted.
 */
export function profileProblem(value: unknown): string | undefined {
  if (!isObject(value))
    return `is ${Array.isArray(value) ? 'a list' : value === null || value === undefined ? 'empty' : `a ${typeof value}`}, not an object`;
  if (value.apiVersion !== CLUSTER_PROFILE_API_VERSION || value.kind !== CLUSTER_PROFILE_KIND)
    return `is not a ${CLUSTER_PROFILE_API_VERSION} ${CLUSTER_PROFILE_KIND}`;
  const metadata = value.metadata;
  if (!isObject(metadata) || typeof metadata.name !== 'string' || typeof metadata.namespace !== 'string')
    return 'has no metadata.name and metadata.namespace';
  if (!stringMap(metadata.labels)) return 'metadata.labels is not a map of strings';
  if (!stringMap(metadata.annotations)) return 'metadata.annotations is not a map of strings';
  const spec = value.spec;
  if (!isObject(spec)) return 'has no spec';
  if (!isObject(spec.clusterManager) || typeof spec.clusterManager.name !== 'string')
    return 'has no spec.clusterManager.name';
  if (spec.displayName !== undefined && typeof spec.displayName !== 'string')
    return 'spec.displayName is not a string';
  const status = value.status;
  if (status === undefined) return undefined;
  if (!isObject(status)) return 'status is not an object';
  if (status.version !== undefined && !isObject(status.version)) return 'status.version is not an object';
  if (!optionalStrings(status.version, ['kubernetes'])) return 'status.version.kubernetes is not a string';
  if (!listOf(status.properties, (p) => typeof p.name === 'string' && typeof p.value === 'string'))
    return 'status.properties is not a list of {name, value}';
  if (
    !listOf(
      status.conditions,
      (c) =>
        typeof c.type === 'string' &&
        typeof c.status === 'string' &&
        optionalStrings(c, ['reason', 'message', 'lastTransitionTime']),
    )
  )
    return 'status.conditions is not a list of {type, status} with strings for reason, message and time';
  if (
    !listOf(
      status.accessProviders,
      (a) =>
        typeof a.name === 'string' &&
        (a.cluster === undefined ||
          (isObject(a.cluster) &&
            optionalStrings(a.cluster, ['server', 'certificate-authority-data']) &&
            listOf(a.cluster.extensions, (e) => typeof e.name === 'string'))),
    )
  )
    return 'status.accessProviders is not a list of {name, cluster} with a string server and CA, and named extensions';
  return undefined;
}
