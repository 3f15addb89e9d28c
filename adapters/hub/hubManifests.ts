/**
 * What a Kubernetes hub needs for one configuration and one cpsync identity, made from the shipped manifests
 * (manifests/): the vendored ClusterProfile CRD as it is, the inventory namespaces, cpsync's RBAC (rbac.yaml: its
 * ClusterRoles, one RoleBinding per inventory namespace, the namespaces rule naming exactly those namespaces, the
 * feature-states ConfigMap named for the manager) and the admission policy (admission-policy.yaml, its `identity`
 * and `manager` variables set). The shipped files stay the one statement of what cpsync needs: only the values a
 * configuration decides are changed in them.
 */
import { parseAllDocuments } from 'yaml';
import { celLiteral, celString } from '../shared/celLiteral.ts';
import { shippedText } from '../shared/shipped.ts';

/** A manifest as the API server takes it (any kind). */
export interface HubManifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; [key: string]: unknown };
  [key: string]: unknown;
}

/** Who cpsync authenticates as on the hub: a user, or any member of a group. */
export interface HubIdentity {
  kind: 'User' | 'Group';
  name: string;
}

/**
 * Where the admission policy is enforced: every namespace (`all`), only the namespaces named, or not at all
 * (`none`: the policy and its binding are left out).
 */
export type AdmissionPolicyScope = 'all' | 'none' | { namespaces: readonly string[] };

export interface HubManifestOptions {
  /** The configuration's manager (`manager`): the admission policy's `manager`, the feature-states ConfigMap's name. */
  manager: string;
  /** The inventory namespaces: each is made, and gets its RoleBinding. */
  namespaces: readonly string[];
  identity: HubIdentity;
  /** @default 'all' */
  admissionPolicy?: AdmissionPolicyScope;
}

/** The names the shipped files give what is changed here (admission-policy.yaml, rbac.yaml). */
const PROFILES_ROLE = 'cpsync:clusterprofiles';
const NAMESPACES_ROLE = 'cpsync:namespaces';
const ADMISSION_ROLE = 'cpsync:admission-policy';
const NAMESPACE_LABEL = 'kubernetes.io/metadata.name';

type ShippedFile = 'rbac.yaml' | 'admission-policy.yaml' | 'crd/multicluster.x-k8s.io_clusterprofiles.yaml';

/** Each shipped file's text as the bundled command carries it (see `shippedText`). */
const BUNDLED: Record<ShippedFile, () => Promise<{ default: string }>> = {
  'rbac.yaml': () => import('./manifests/rbac.yaml', { with: { type: 'text' } }),
  'admission-policy.yaml': () => import('./manifests/admission-policy.yaml', { with: { type: 'text' } }),
  'crd/multicluster.x-k8s.io_clusterprofiles.yaml': () =>
    import('./manifests/crd/multicluster.x-k8s.io_clusterprofiles.yaml', { with: { type: 'text' } }),
};

function shipped(file: ShippedFile): Promise<string> {
  return shippedText(BUNDLED[file], new URL(`./manifests/${file}`, import.meta.url));
}

async function documents(file: ShippedFile): Promise<HubManifest[]> {
  return parseAllDocuments(await shipped(file))
    .map((document) => document.toJS() as HubManifest | null)
    .filter((document): document is HubManifest => document !== null);
}

/** The document of `kind` named `name` in a shipped file (a file that lost it is a bug, said as one). */
function find(docs: readonly HubManifest[], file: ShippedFile, kind: string, name?: string): HubManifest {
  const found = docs.find((d) => d.kind === kind && (name === undefined || d.metadata.name === name));
  if (!found) throw new Error(`manifests/${file} has no ${kind}${name ? ` ${name}` : ''}`);
  return structuredClone(found);
}

interface Rule {
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  verbs?: string[];
}

/**
 * The manager an installed object of cpsync's was made for, where its content says so: the ClusterRole
 * `cpsync:clusterprofiles` (the features ConfigMap it names, `<manager>-features`) and the admission policy (its
 * `manager` variable). Undefined for any other object, or one that says no manager. The install's objects have one
 * name whatever the manager, so a hub holds one manager's install.
 */
export function installedManager(object: unknown): string | undefined {
  const doc = object as Partial<HubManifest> | undefined;
  if (doc?.kind === 'ClusterRole' && doc.metadata?.name === PROFILES_ROLE) {
    const names = (doc.rules as Rule[] | undefined)?.find((rule) =>
      rule.resources?.includes('configmaps'),
    )?.resourceNames;
    const features = names?.length === 1 ? names[0]!.match(/^(.+)-features$/) : null;
    return features?.[1];
  }
  if (doc?.kind === 'ValidatingAdmissionPolicy') {
    const variables = (doc.spec as { variables?: Array<{ name?: string; expression?: string }> } | undefined)
      ?.variables;
    return celLiteral(variables?.find((v) => v.name === 'manager')?.expression);
  }
  return undefined;
}

/** The vendored ClusterProfile CRD, unchanged (apply it as it is: see applyManifests). */
async function clusterProfileCrd(): Promise<HubManifest> {
  const file = 'crd/multicluster.x-k8s.io_clusterprofiles.yaml';
  return find(await documents(file), file, 'CustomResourceDefinition');
}

/** cpsync's RBAC for `options`: rbac.yaml's objects, the namespaced ones once per inventory namespace. */
async function rbac(options: HubManifestOptions): Promise<HubManifest[]> {
  const file = 'rbac.yaml';
  const docs = await documents(file);
  const subjects = [
    { apiGroup: 'rbac.authorization.k8s.io', kind: options.identity.kind, name: options.identity.name },
  ];
  const rules = (object: HubManifest) => object.rules as Rule[];
  const profiles = find(docs, file, 'ClusterRole', PROFILES_ROLE);
  const configMaps = rules(profiles).find((rule) => rule.resources?.includes('configmaps'));
  if (!configMaps) throw new Error(`manifests/${file}: ${PROFILES_ROLE} has no rule for configmaps`);
  configMaps.resourceNames = [`${options.manager}-features`];
  const namespaces = find(docs, file, 'ClusterRole', NAMESPACES_ROLE);
  const named = rules(namespaces).find((rule) => rule.resourceNames);
  if (!named) throw new Error(`manifests/${file}: ${NAMESPACES_ROLE} has no rule naming namespaces`);
  named.resourceNames = [...options.namespaces];
  const bound = (binding: HubManifest) => ({ ...binding, subjects });
  const roleBinding = find(docs, file, 'RoleBinding', PROFILES_ROLE);
  return [
    profiles,
    namespaces,
    find(docs, file, 'ClusterRole', ADMISSION_ROLE),
    bound(find(docs, file, 'ClusterRoleBinding', NAMESPACES_ROLE)),
    bound(find(docs, file, 'ClusterRoleBinding', ADMISSION_ROLE)),
    ...options.namespaces.map((namespace) =>
      bound({ ...roleBinding, metadata: { ...roleBinding.metadata, namespace } }),
    ),
  ];
}

/** admission-policy.yaml's policy and binding for `options` (none when the scope is `none`). */
async function admissionPolicy(options: HubManifestOptions): Promise<HubManifest[]> {
  const scope = options.admissionPolicy ?? 'all';
  if (scope === 'none') return [];
  const file = 'admission-policy.yaml';
  const docs = await documents(file);
  const policy = find(docs, file, 'ValidatingAdmissionPolicy');
  const variables = (policy.spec as { variables: Array<{ name: string; expression: string }> }).variables;
  const variable = (name: string) => {
    const found = variables.find((v) => v.name === name);
    if (!found) throw new Error(`manifests/${file}: the policy has no variable ${name}`);
    return found;
  };
  variable('identity').expression = celString(options.identity.name);
  variable('manager').expression = celString(options.manager);
  if (options.identity.kind === 'Group')
    variable('byCpsync').expression = 'variables.identity in request.userInfo.groups';
  const binding = find(docs, file, 'ValidatingAdmissionPolicyBinding');
  if (scope !== 'all')
    (binding.spec as Record<string, unknown>).matchResources = {
      namespaceSelector: {
        matchExpressions: [{ key: NAMESPACE_LABEL, operator: 'In', values: [...scope.namespaces] }],
      },
    };
  return [policy, binding];
}

/**
 * Everything the hub needs, in the order it is applied: the CRD, the namespaces, the ClusterRoles and their
 * bindings, the RoleBindings, the admission policy and then its binding.
 */
export async function hubManifests(options: HubManifestOptions): Promise<HubManifest[]> {
  const namespaces = [...new Set(options.namespaces)].sort();
  const complete = { ...options, namespaces };
  return [
    await clusterProfileCrd(),
    // With the label the API server gives every namespace (its name): an apply that sets no field of its own leaves
    // no record of its manager, and the next apply would then be a write.
    ...namespaces.map((name) => ({
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name, labels: { [NAMESPACE_LABEL]: name } },
    })),
    ...(await rbac(complete)),
    ...(await admissionPolicy(complete)),
  ];
}
