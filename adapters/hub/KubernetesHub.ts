import {
  ApiException,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  type ConfigurationOptions,
  type V1ConfigMap,
  type V1Namespace,
} from '@kubernetes/client-node';
import { sharedConnections, type HubHttpLibrary } from './connections.ts';
import { sameJson } from '../../core/domain/json.ts';
import {
  ANNOTATION_DELETED_AT,
  FIELD_MANAGER,
  LABEL_NAMESPACE_CLUSTERSET,
  LABEL_NAMESPACE_CLUSTERSET_KEP,
} from '../../core/domain/constants.ts';
import { selectorString } from '../../core/domain/labels.ts';
import {
  objectApplyBody,
  pointerSegment,
  statusApplyBody,
  strayOwnedFields,
  strayOwnedKeys,
} from '../../core/domain/ownership.ts';
import {
  CLUSTER_PROFILE_GROUP,
  CLUSTER_PROFILE_PLURAL,
  CLUSTER_PROFILE_VERSION,
  type ClusterProfile,
  type ProfileRef,
} from '../../core/domain/model/clusterProfile.ts';
import type { Hub, NamespaceSpec, ProfileLabels } from '../../core/sync/ports.ts';
import {
  HubConflictError,
  HubError,
  HubForbiddenError,
  HubRejectedError,
  HubUnavailableError,
} from './errors.ts';
import { messageOf } from '../../core/domain/errors.ts';
import { PageTokens } from '../shared/pages.ts';

export interface KubernetesHubOptions {
  /**
   * How to reach the hub.
   * @default a KubeConfig loaded from the default places (KUBECONFIG, ~/.kube/config, in-cluster)
   */
  kubeConfig?: KubeConfig;
  /**
   * Field manager of every server-side apply.
   * @default 'cpsync'
   */
  fieldManager?: string;
  /**
   * Profiles per list page.
   * @default 500
   */
  pageSize?: number;
  /**
   * Time one request to the hub may take before it is abandoned (as HubUnavailableError).
   * @default 30000
   */
  requestTimeoutMillis?: number;
  /**
   * How requests are sent: undici's `request()`, or client-node's own `fetch()` path (see connections.ts).
   * @default 'request'
   */
  httpLibrary?: HubHttpLibrary;
  /**
   * The names of cpsync's entries in `status.accessProviders` (the configuration's `inventory.accessProviderNames`):
   * one of these that a profile no longer carries is removed, whoever else claims it.
   * @default the names the profile written carries
   */
  accessProviderNames?: readonly string[];
}

const PROFILE = {
  group: CLUSTER_PROFILE_GROUP,
  version: CLUSTER_PROFILE_VERSION,
  plural: CLUSTER_PROFILE_PLURAL,
};

/** A page of a list: its items (absent from an empty answer of metadata alone) and where the next begins. */
interface Listed<Item> {
  items?: Item[] | null;
  metadata?: { continue?: string };
}

/** How many readings a removal of stray fields is tried at before it is left to the next plan. */
const STRAY_ATTEMPTS = 3;

/** A JSON Patch that removes `paths` (in their order) from `stored`, only while it is at the version read. */
function removals(stored: ClusterProfile, paths: readonly string[]): object[] {
  return [
    { op: 'test', path: '/metadata/resourceVersion', value: stored.metadata.resourceVersion },
    ...paths.map((path) => ({ op: 'remove', path })),
  ];
}

/** A profile as a list of object metadata gives it (`PartialObjectMetadata`). */
interface PartialMetadata {
  metadata?: { name?: string; labels?: Record<string, string> };
}

/** Asks the API server for a list's object metadata only (any resource serves it, custom ones included). */
const METADATA_ONLY = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1';

/** The API server's Status in a response body (the client leaves some bodies as their JSON text). */
function statusOf(body: unknown): { message?: string } | string | undefined {
  if (typeof body !== 'string') return body as { message?: string } | undefined;
  try {
    const parsed: unknown = JSON.parse(body);
    return typeof parsed === 'object' && parsed !== null ? (parsed as { message?: string }) : body;
  } catch {
    return body;
  }
}

/**
 * A hub error naming the operation and its target, with the API server's own message (not the raw response);
 * `forbiddenHint` is added to a refusal (403), saying what would grant it.
 */
export function translate(error: unknown, operation: string, target: string, forbiddenHint?: string): Error {
  if (!(error instanceof ApiException)) {
    const detail = messageOf(error);
    return new HubUnavailableError(operation, target, detail, undefined, { cause: error });
  }
  const body = statusOf(error.body);
  const detail =
    (typeof body === 'object' && body?.message) || (typeof body === 'string' && body) || error.message;
  const status = error.code;
  const options = { cause: error };
  if (status === 401 || status === 403)
    return new HubForbiddenError(
      operation,
      target,
      status === 403 && forbiddenHint ? `${detail} — ${forbiddenHint}` : detail,
      status,
      options,
    );
  if (status === 409) return new HubConflictError(operation, target, detail, status, options);
  if (status === 422 || status === 400)
    return new HubRejectedError(operation, target, detail, status, options);
  if (status === 429 || status >= 500)
    return new HubUnavailableError(operation, target, detail, status, options);
  return new HubError(operation, target, detail, status, options);
}

/** The RoleBinding (of the ClusterRole in manifests/rbac.yaml) that grants cpsync the profiles of a namespace. */
const PROFILES_ROLE_BINDING = 'cpsync:clusterprofiles';

/** Whether the hub's refusal is an admission policy's (its message names the policy), not the authorizer's. */
function refusedByAdmissionPolicy(error: unknown): boolean {
  if (!(error instanceof ApiException) || error.code !== 403) return false;
  const body = statusOf(error.body);
  const message = typeof body === 'string' ? body : body?.message;
  return message?.includes('ValidatingAdmissionPolicy') ?? false;
}

/**
 * `translate` for a ClusterProfile request: an authorizer's refusal names the RoleBinding the namespace lacks (an
 * admission policy's, adapters/hub/manifests/admission-policy.yaml, says what it refused in its own words).
 */
function translateProfile(error: unknown, operation: string, target: string, namespace: string): Error {
  return translate(
    error,
    operation,
    target,
    refusedByAdmissionPolicy(error)
      ? undefined
      : `namespace ${namespace} needs the RoleBinding ${PROFILES_ROLE_BINDING} (ClusterRole ${PROFILES_ROLE_BINDING}, adapters/hub/manifests/rbac.yaml) for the identity cpsync runs as`,
  );
}

/** The labels that make a namespace a ClusterSet (the KEP's and the older spelling). */
const CLUSTERSET_LABELS = [LABEL_NAMESPACE_CLUSTERSET, LABEL_NAMESPACE_CLUSTERSET_KEP];

/**
 * The hub as a Kubernetes API server with the ClusterProfile CRD: lists by label selector (paginated),
 * writes with server-side apply (object and `/status` separately), deletes with a resourceVersion
 * precondition.
 */
export class KubernetesHub implements Hub {
  readonly #objects: CustomObjectsApi;
  readonly #core: CoreV1Api;
  readonly #fieldManager: string;
  readonly #pageSize: number;
  readonly #accessProviderNames: readonly string[];
  /** Every request's options: one connection pool, a deadline (see connections.ts). */
  readonly #shared: ConfigurationOptions;
  /** How this hub is reached (its leases are reached the same way). */
  readonly kubeConfig: KubeConfig;

  constructor(options: KubernetesHubOptions = {}) {
    const kubeConfig =
      options.kubeConfig ??
      (() => {
        const config = new KubeConfig();
        config.loadFromDefault();
        return config;
      })();
    this.kubeConfig = kubeConfig;
    this.#objects = kubeConfig.makeApiClient(CustomObjectsApi);
    this.#core = kubeConfig.makeApiClient(CoreV1Api);
    this.#fieldManager = options.fieldManager ?? FIELD_MANAGER;
    this.#pageSize = options.pageSize ?? 500;
    this.#accessProviderNames = options.accessProviderNames ?? [];
    this.#shared = sharedConnections(options.requestTimeoutMillis ?? 30_000, options.httpLibrary);
  }

  #options(contentType?: string): ConfigurationOptions {
    return contentType ? setHeaderOptions('Content-Type', contentType, this.#shared) : this.#shared;
  }

  async ensureNamespace(namespace: NamespaceSpec): Promise<void> {
    const labels: Record<string, string> = {};
    if (namespace.clusterSet) {
      labels[LABEL_NAMESPACE_CLUSTERSET] = namespace.clusterSet;
      labels[LABEL_NAMESPACE_CLUSTERSET_KEP] = namespace.clusterSet;
    }
    const existing = await this.#readNamespace(namespace.name);
    const current = existing?.metadata?.labels ?? {};
    if (existing && CLUSTERSET_LABELS.every((key) => current[key] === labels[key])) return;
    await this.#applyNamespace(namespace.name, labels);
  }

  async dropClusterSet(name: string): Promise<void> {
    const existing = await this.#readNamespace(name);
    // Only labels cpsync's field manager applied: one a person or another tool set is theirs, and stays.
    const ours = (existing?.metadata?.managedFields ?? []).some(
      (entry) =>
        entry.manager === this.#fieldManager &&
        entry.operation === 'Apply' &&
        CLUSTERSET_LABELS.some(
          (key) =>
            (entry.fieldsV1 as { 'f:metadata'?: { 'f:labels'?: Record<string, unknown> } } | undefined)?.[
              'f:metadata'
            ]?.['f:labels']?.[`f:${key}`] !== undefined,
        ),
    );
    if (ours) await this.#applyNamespace(name, {});
  }

  /** The namespace, or undefined when there is none. */
  async #readNamespace(name: string): Promise<V1Namespace | undefined> {
    try {
      return await this.#core.readNamespace({ name }, this.#options());
    } catch (error) {
      if (error instanceof ApiException && error.code === 404) return undefined;
      throw translate(error, 'read namespace', name);
    }
  }

  /** Applies the namespace with these labels (server-side apply): the ClusterSet labels cpsync set before and does not apply now are removed. */
  async #applyNamespace(name: string, labels: Record<string, string>): Promise<void> {
    try {
      await this.#core.patchNamespace(
        {
          name,
          body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels } },
          fieldManager: this.#fieldManager,
          force: true,
        },
        this.#options(PatchStrategy.ServerSideApply),
      );
    } catch (error) {
      throw translate(error, 'apply namespace', name);
    }
  }

  async updateConfigMap(
    ref: ProfileRef,
    change: (data: Readonly<Record<string, string>>) => Record<string, string>,
  ): Promise<void> {
    const target = `${ref.namespace}/${ref.name}`;
    for (let attempt = 1; ; attempt++) {
      let existing: V1ConfigMap | undefined;
      try {
        existing = await this.#core.readNamespacedConfigMap(ref, this.#options());
      } catch (error) {
        if (!(error instanceof ApiException && error.code === 404))
          throw translate(error, 'read configmap', target);
      }
      const data = existing?.data ?? {};
      const next = change(data);
      if (existing && sameJson(data, next)) return;
      try {
        // Server-side apply at the version read (a writer that came first makes it a conflict, and it is
        // read again); applied rather than created, so that the RBAC can name the one ConfigMap.
        await this.#core.patchNamespacedConfigMap(
          {
            ...ref,
            body: {
              apiVersion: 'v1',
              kind: 'ConfigMap',
              metadata: {
                name: ref.name,
                namespace: ref.namespace,
                ...(existing?.metadata?.resourceVersion
                  ? { resourceVersion: existing.metadata.resourceVersion }
                  : {}),
              },
              data: next,
            },
            fieldManager: this.#fieldManager,
            force: true,
          },
          this.#options(PatchStrategy.ServerSideApply),
        );
        return;
      } catch (error) {
        const code = error instanceof ApiException ? error.code : undefined;
        if (code === 409 && attempt < 5) continue;
        // Creating in a namespace that does not exist.
        if (code === 404 && !existing) return;
        throw translate(error, 'apply configmap', target);
      }
    }
  }

  async get(ref: ProfileRef): Promise<ClusterProfile | undefined> {
    try {
      return (await this.#objects.getNamespacedCustomObject(
        { ...PROFILE, namespace: ref.namespace, name: ref.name },
        this.#options(),
      )) as ClusterProfile;
    } catch (error) {
      if (error instanceof ApiException && error.code === 404) return undefined;
      throw translateProfile(error, 'read', `${ref.namespace}/${ref.name}`, ref.namespace);
    }
  }

  /** Every page of the profiles `selector` picks, as `options` asks for them: whole, or their metadata alone. */
  async #listed<Item>(
    namespace: string,
    selector: Record<string, string>,
    options: ConfigurationOptions,
  ): Promise<Item[]> {
    const items: Item[] = [];
    const tokens = new PageTokens(`the hub's list of profiles in ${namespace}`);
    let next: string | undefined;
    do {
      let page: Listed<Item>;
      try {
        page = (await this.#objects.listNamespacedCustomObject(
          {
            ...PROFILE,
            namespace,
            labelSelector: selectorString(selector),
            limit: this.#pageSize,
            ...(next ? { _continue: next } : {}),
          },
          options,
        )) as Listed<Item>;
      } catch (error) {
        if (error instanceof ApiException && error.code === 404 && next === undefined) return [];
        throw translateProfile(error, 'list profiles in', namespace, namespace);
      }
      items.push(...(page.items ?? []));
      next = tokens.next(page.metadata?.continue);
    } while (next);
    return items;
  }

  list(namespace: string, selector: Record<string, string>): Promise<ClusterProfile[]> {
    return this.#listed<ClusterProfile>(namespace, selector, this.#options());
  }

  /** As `list`, with the server sending each profile's metadata alone (about half the bytes: managedFields stay). */
  async listLabels(namespace: string, selector: Record<string, string>): Promise<ProfileLabels[]> {
    const listed = await this.#listed<PartialMetadata>(
      namespace,
      selector,
      setHeaderOptions('Accept', METADATA_ONLY, this.#shared),
    );
    return listed.map(({ metadata }) => ({ name: String(metadata?.name), labels: metadata?.labels ?? {} }));
  }

  async applyObject(profile: ClusterProfile): Promise<ClusterProfile> {
    const { namespace, name } = profile.metadata;
    try {
      const stored = (await this.#objects.patchNamespacedCustomObject(
        {
          ...PROFILE,
          namespace,
          name,
          body: objectApplyBody(profile),
          fieldManager: this.#fieldManager,
          force: true,
        },
        this.#options(PatchStrategy.ServerSideApply),
      )) as ClusterProfile;
      // Keys and fields of cpsync's that another writer set or claims and cpsync does not want: an apply leaves
      // them (they are the other manager's too), so they are removed.
      return await this.#removeStray(stored, false, (current) => {
        const stray = strayOwnedKeys(current, profile);
        return [
          ...stray.labels.map((key) => `/metadata/labels/${pointerSegment(key)}`),
          ...stray.annotations.map((key) => `/metadata/annotations/${pointerSegment(key)}`),
          ...strayOwnedFields(current, profile, this.#accessProviderNames).spec,
        ];
      });
    } catch (error) {
      throw translateProfile(error, 'apply', `${namespace}/${name}`, namespace);
    }
  }

  async applyStatus(profile: ClusterProfile, before?: ClusterProfile): Promise<ClusterProfile> {
    const { namespace, name } = profile.metadata;
    try {
      const stored = (await this.#objects.patchNamespacedCustomObjectStatus(
        {
          ...PROFILE,
          namespace,
          name,
          body: statusApplyBody(profile),
          fieldManager: this.#fieldManager,
          force: true,
        },
        this.#options(PatchStrategy.ServerSideApply),
      )) as ClusterProfile;
      // As for the object: what cpsync took away and another writer claims is removed.
      return await this.#removeStray(
        stored,
        true,
        (current) => strayOwnedFields(current, profile, this.#accessProviderNames, before).status,
      );
    } catch (error) {
      throw translateProfile(error, 'apply status of', `${namespace}/${name}`, namespace);
    }
  }

  /**
   * Removes the fields `stray` names in the profile as `stored` (just written) holds it, at that version; another
   * write in between, and the profile is read again and judged anew (a few times). The write before it landed
   * whatever happens here: when the removal cannot be made, the profile is given as it is, and the next plan, finding
   * the field, writes again.
   */
  async #removeStray(
    stored: ClusterProfile,
    status: boolean,
    stray: (current: ClusterProfile) => string[],
  ): Promise<ClusterProfile> {
    const { namespace, name } = stored.metadata;
    let current = stored;
    for (let attempt = 1; attempt <= STRAY_ATTEMPTS; attempt++) {
      const paths = stray(current);
      if (paths.length === 0) return current;
      const request = {
        ...PROFILE,
        namespace,
        name,
        body: removals(current, paths),
        fieldManager: this.#fieldManager,
      };
      try {
        return (await (status
          ? this.#objects.patchNamespacedCustomObjectStatus(request, this.#options(PatchStrategy.JsonPatch))
          : this.#objects.patchNamespacedCustomObject(
              request,
              this.#options(PatchStrategy.JsonPatch),
            ))) as ClusterProfile;
      } catch (error) {
        // The version tested is gone (409, or 422 for a failed `test`): read again; anything else, left to the next plan.
        if (!(error instanceof ApiException && (error.code === 409 || error.code === 422))) return current;
        try {
          current = (await this.#objects.getNamespacedCustomObject(
            { ...PROFILE, namespace, name },
            this.#options(),
          )) as ClusterProfile;
        } catch {
          return current;
        }
      }
    }
    return current;
  }

  /**
   * Marks the profile as deleted by cpsync (ANNOTATION_DELETED_AT), at the version the caller read if it says one, then
   * deletes the object marked: an object that stays, held by another controller's finalizer, says who deleted it. One
   * already being deleted (another writer deleted it) is marked all the same. A deletion that fails takes its mark off
   * again (or the next plan does).
   */
  async delete(ref: ProfileRef & { resourceVersion?: string }): Promise<void> {
    const { namespace, name } = ref;
    try {
      const marked = (await this.#objects.patchNamespacedCustomObject(
        {
          ...PROFILE,
          namespace,
          name,
          body: {
            metadata: {
              annotations: { [ANNOTATION_DELETED_AT]: new Date().toISOString() },
              // At the version the caller read, when it says one (a merge patch's resourceVersion is a precondition).
              ...(ref.resourceVersion ? { resourceVersion: ref.resourceVersion } : {}),
            },
          },
          fieldManager: this.#fieldManager,
        },
        this.#options(PatchStrategy.MergePatch),
      )) as ClusterProfile;
      try {
        // The object marked (the version read, if said, was checked by the mark): a finalizer another controller adds
        // meanwhile does not keep it from going.
        await this.#objects.deleteNamespacedCustomObject(
          { ...PROFILE, namespace, name, body: { preconditions: { uid: marked.metadata.uid } } },
          this.#options(),
        );
      } catch (error) {
        if (!(error instanceof ApiException && error.code === 404)) await this.#unmark(marked);
        throw error;
      }
    } catch (error) {
      if (error instanceof ApiException && error.code === 404) return;
      throw translateProfile(error, 'delete', `${ref.namespace}/${ref.name}`, ref.namespace);
    }
  }

  /** Takes the mark of a deletion that did not go through off the profile, as marked (else the next plan does). */
  async #unmark(marked: ClusterProfile): Promise<void> {
    const { namespace, name } = marked.metadata;
    await this.#objects
      .patchNamespacedCustomObject(
        {
          ...PROFILE,
          namespace,
          name,
          body: [
            { op: 'test', path: '/metadata/resourceVersion', value: marked.metadata.resourceVersion },
            { op: 'remove', path: `/metadata/annotations/${pointerSegment(ANNOTATION_DELETED_AT)}` },
          ],
          fieldManager: this.#fieldManager,
        },
        this.#options(PatchStrategy.JsonPatch),
      )
      .catch(() => undefined);
  }
}
