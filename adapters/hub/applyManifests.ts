import {
  ApiException,
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  setHeaderOptions,
  type KubeConfig,
} from '@kubernetes/client-node';
import { sameJson } from '../../core/domain/json.ts';
import { sharedConnections } from './connections.ts';
import { HubConflictError, HubError } from './errors.ts';
import { installedManager, type HubManifest } from './hubManifests.ts';
import { translate } from './KubernetesHub.ts';

/** What applying one manifest did. */
export interface AppliedManifest {
  kind: string;
  name: string;
  namespace?: string;
  /** `unchanged`: the hub already held it as given (its resourceVersion did not move). */
  outcome: 'created' | 'changed' | 'unchanged';
}

export interface ApplyManifestsOptions {
  /** The field manager of every apply. */
  fieldManager: string;
  /** Time one request may take. @default 30000 */
  requestTimeoutMillis?: number;
  /** Time a CRD may take to be served after it is applied. @default 60000 */
  establishTimeoutMillis?: number;
}

/** Where each kind the hub manifests hold is served: its plural, and whether it lives in a namespace. */
const RESOURCES: Readonly<Record<string, { plural: string; namespaced: boolean }>> = {
  CustomResourceDefinition: { plural: 'customresourcedefinitions', namespaced: false },
  Namespace: { plural: 'namespaces', namespaced: false },
  ClusterRole: { plural: 'clusterroles', namespaced: false },
  ClusterRoleBinding: { plural: 'clusterrolebindings', namespaced: false },
  Role: { plural: 'roles', namespaced: true },
  RoleBinding: { plural: 'rolebindings', namespaced: true },
  ValidatingAdmissionPolicy: { plural: 'validatingadmissionpolicies', namespaced: false },
  ValidatingAdmissionPolicyBinding: { plural: 'validatingadmissionpolicybindings', namespaced: false },
};

type Stored = { metadata?: { resourceVersion?: string }; status?: unknown } & Record<string, unknown>;

/** Whether `wanted` (a manifest's fields) is all there in `stored`, each field equal: applying it changes nothing. */
function holds(stored: unknown, wanted: unknown): boolean {
  if (typeof wanted !== 'object' || wanted === null || Array.isArray(wanted)) return sameJson(stored, wanted);
  if (typeof stored !== 'object' || stored === null || Array.isArray(stored)) return false;
  return Object.entries(wanted).every(([key, value]) =>
    holds((stored as Record<string, unknown>)[key], value),
  );
}

const established = (crd: Stored) =>
  (crd.status as { conditions?: Array<{ type: string; status: string }> } | undefined)?.conditions?.some(
    (c) => c.type === 'Established' && c.status === 'True',
  ) ?? false;

/**
 * The managers other than `manager` whose install the hub holds, as the objects of `manifests` that say whose they are
 * (see `installedManager`) read there: each with the object that says so. Read before anything is applied, so that an
 * install refused for them changes nothing.
 */
export async function otherManagersInstalled(
  kubeConfig: KubeConfig,
  manifests: readonly HubManifest[],
  manager: string,
  requestTimeoutMillis = 30_000,
): Promise<Array<{ manager: string; object: string }>> {
  const shared = sharedConnections(requestTimeoutMillis);
  const objects = kubeConfig.makeApiClient(CustomObjectsApi);
  const found: Array<{ manager: string; object: string }> = [];
  for (const manifest of manifests) {
    if (installedManager(manifest) === undefined || manifest.metadata.namespace) continue;
    const [group, version] = manifest.apiVersion.split('/');
    const target = `${manifest.kind} ${manifest.metadata.name}`;
    let stored: unknown;
    try {
      stored = await objects.getClusterCustomObject(
        {
          group: group!,
          version: version!,
          plural: RESOURCES[manifest.kind]!.plural,
          name: manifest.metadata.name,
        },
        shared,
      );
    } catch (error) {
      if (error instanceof ApiException && error.code === 404) continue;
      throw translate(error, 'read', target);
    }
    const holder = installedManager({ ...(stored as object), kind: manifest.kind });
    if (holder !== undefined && holder !== manager) found.push({ manager: holder, object: target });
  }
  return found;
}

/**
 * Applies `manifests` to the hub in their order, with server-side apply under `fieldManager`, idempotently: an
 * object the hub already holds as given is not written again. cpsync's own objects are applied with `force`
 * (this manager owns what it sets, whoever set it before). The ClusterProfile CRD is sent as its document says
 * (no typed model in between, which would drop its `x-kubernetes-*` extensions), left alone when the hub's
 * already holds every field of it, and applied without `force`: a CRD another manager changed is named, not taken.
 * A CRD applied is waited for until it is served.
 */
export async function applyManifests(
  kubeConfig: KubeConfig,
  manifests: readonly HubManifest[],
  options: ApplyManifestsOptions,
): Promise<AppliedManifest[]> {
  const shared = sharedConnections(options.requestTimeoutMillis ?? 30_000);
  const applying = setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply, shared);
  const objects = kubeConfig.makeApiClient(CustomObjectsApi);
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const applied: AppliedManifest[] = [];
  for (const manifest of manifests) {
    const resource = RESOURCES[manifest.kind];
    if (!resource) throw new Error(`cannot apply a ${manifest.kind}: not a kind of the hub's manifests`);
    const { name, namespace } = manifest.metadata;
    const target = `${manifest.kind} ${namespace ? `${namespace}/` : ''}${name}`;
    const [group, version] = manifest.apiVersion.includes('/')
      ? manifest.apiVersion.split('/')
      : ['', manifest.apiVersion];
    const ref = { group: group!, version: version!, plural: resource.plural, name };
    const crd = manifest.kind === 'CustomResourceDefinition';
    const read = async (): Promise<Stored | undefined> => {
      try {
        if (manifest.kind === 'Namespace') return (await core.readNamespace({ name }, shared)) as Stored;
        return (await (namespace
          ? objects.getNamespacedCustomObject({ ...ref, namespace }, shared)
          : objects.getClusterCustomObject(ref, shared))) as Stored;
      } catch (error) {
        if (error instanceof ApiException && error.code === 404) return undefined;
        throw translate(error, 'read', target);
      }
    };
    const before = await read();
    if (crd && before && holds(before, manifest)) {
      applied.push({ kind: manifest.kind, name, outcome: 'unchanged' });
      continue;
    }
    let after: Stored;
    try {
      const request = { ...ref, body: manifest, fieldManager: options.fieldManager, force: !crd };
      after = (await (manifest.kind === 'Namespace'
        ? core.patchNamespace(request, applying)
        : namespace
          ? objects.patchNamespacedCustomObject({ ...request, namespace }, applying)
          : objects.patchClusterCustomObject(request, applying))) as Stored;
    } catch (error) {
      if (error instanceof ApiException && error.code === 404)
        throw new HubError(
          'apply',
          target,
          `the hub does not serve ${manifest.kind} (${manifest.apiVersion})${manifest.kind.startsWith('ValidatingAdmissionPolicy') ? ': it needs Kubernetes 1.30 or later' : ''}`,
          404,
          { cause: error },
        );
      if (crd && error instanceof ApiException && error.code === 409)
        throw new HubConflictError(
          'apply',
          target,
          `the hub's CRD differs from the one cpsync ships, in fields another manager owns (${translate(error, 'apply', target).message}); it is left as it is`,
          409,
          { cause: error },
        );
      throw translate(error, 'apply', target);
    }
    const outcome = !before
      ? 'created'
      : before.metadata?.resourceVersion === after.metadata?.resourceVersion
        ? 'unchanged'
        : 'changed';
    applied.push({ kind: manifest.kind, name, ...(namespace ? { namespace } : {}), outcome });
    if (crd && outcome !== 'unchanged') {
      const until = Date.now() + (options.establishTimeoutMillis ?? 60_000);
      while (!established((await read()) ?? {})) {
        if (Date.now() > until)
          throw new HubError('apply', target, 'applied, but not established (served) in time');
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    }
  }
  return applied;
}
