/**
 * `cpsync hub install`: everything a Kubernetes hub needs for a configuration — the vendored ClusterProfile CRD,
 * every inventory namespace the configuration names, cpsync's RBAC (a RoleBinding per inventory namespace) and the
 * admission policy — for one cpsync identity; printed for GitOps, or applied with server-side apply.
 */
import { inventoryNamespaces } from '../../core/domain/options.ts';
import type { AppliedManifest } from '../hub/applyManifests.ts';
import { HubConflictError, HubRejectedError } from '../hub/errors.ts';
import { hubManifests, type HubIdentity, type HubManifest } from '../hub/hubManifests.ts';
import { inventoryOptionsOf, type CpsyncConfig } from './config.ts';
import { subscriberRbac } from './consumers.ts';
import { CompositionError } from './errors.ts';
import { hubKubeConfig, kubeConfigFromFile } from './hub.ts';

export type { AppliedManifest, HubIdentity, HubManifest };
export { HubError } from '../hub/errors.ts';

/** The field manager `hub install` applies as: apart from the `cpsync` manager of the sync's own writes. */
export const INSTALL_FIELD_MANAGER = 'cpsync-install';

export interface HubInstallRequest {
  identity: HubIdentity;
  /**
   * With the configuration's `subscribers.argocd`: who the Argo CD subscriber is on the hub, an identity of its own
   * (never cpsync's). @default the user `<manager>-argocd`
   */
  subscriber?: HubIdentity;
  /**
   * Where the admission policy is enforced: every namespace (`all`), the configuration's inventory namespaces
   * only (`inventory`), or not installed (`none`).
   */
  admissionPolicy: 'all' | 'inventory' | 'none';
}

/** Another way to reach the hub than the configuration's (an administrator's kubeconfig, or another context). */
export interface HubConnection {
  kubeconfig?: string;
  context?: string;
}

/** The configuration's inventory namespaces (the default, and every namespace a rule or projection names). */
function namespacesOf(config: CpsyncConfig): string[] {
  return inventoryNamespaces(inventoryOptionsOf(config)).map((namespace) => namespace.name);
}

/**
 * The manifests `hub install` applies for `config`, in the order it applies them: cpsync's, then, with the
 * configuration's `subscribers.argocd`, the Argo CD subscriber's (its own identity's RBAC on the hub, and its Secrets
 * Role and their admission policy when Argo CD runs on the hub: no `subscribers.argocd.kubeconfigSecretArn`).
 */
export async function hubInstallManifests(
  config: CpsyncConfig,
  request: HubInstallRequest,
): Promise<HubManifest[]> {
  const namespaces = namespacesOf(config);
  const manifests = await hubManifests({
    manager: config.manager,
    namespaces,
    identity: request.identity,
    admissionPolicy: request.admissionPolicy === 'inventory' ? { namespaces } : request.admissionPolicy,
  });
  const argocd = config.subscribers?.argocd;
  if (!argocd) return manifests;
  const subscriber = subscriberRbac(config, {
    ...(request.subscriber ? { subject: request.subscriber } : {}),
    argocdNamespace: argocd.namespace,
  });
  return [...manifests, ...subscriber.hub, ...(argocd.kubeconfigSecretArn ? [] : subscriber.argocd)];
}

/** Applies the manifests to the hub the configuration names (or `connection`); resolves to what each did. */
export async function installHub(
  config: CpsyncConfig,
  request: HubInstallRequest,
  connection: HubConnection = {},
): Promise<AppliedManifest[]> {
  const hub = config.hub;
  const file = connection.kubeconfig ?? (hub && 'kubeconfig' in hub ? hub.kubeconfig : undefined);
  if (connection.context && !file)
    throw new CompositionError(
      '--context: the configuration names no kubeconfig to take the context from; give --kubeconfig too',
    );
  const kubeConfig = connection.kubeconfig
    ? await kubeConfigFromFile(connection.kubeconfig, connection.context, '--kubeconfig', '--context')
    : connection.context
      ? await kubeConfigFromFile(file!, connection.context, 'hub.kubeconfig', '--context')
      : await hubKubeConfig(config);
  if (!kubeConfig)
    throw new CompositionError(
      `the configuration's hub is a directory of files (${hub && 'directory' in hub ? hub.directory : 'inventory, the default'}): there is no Kubernetes hub to install into — set hub.kubeconfig or hub.eks, give --kubeconfig, or print the manifests with --dry-run`,
    );
  const { applyManifests, otherManagersInstalled } = await import('../hub/applyManifests.ts');
  const manifests = await hubInstallManifests(config, request);
  // The install's objects are named alike whatever the manager: applied, they would move another manager's RBAC and
  // admission policy to this one (its namespaces unguarded, its identity refused its own profiles).
  const others = await otherManagersInstalled(kubeConfig, manifests, config.manager);
  if (others.length > 0) {
    throw new HubConflictError(
      'install into',
      'this hub',
      `it holds the install of ${[...new Set(others.map((o) => `manager "${o.manager}"`))].join(' and ')} (${others.map((o) => o.object).join(', ')}); this configuration is manager "${config.manager}". Nothing was applied: a hub holds one manager's install — install this one into another hub, or remove the other's objects first (docs/deploying.md)`,
      409,
    );
  }
  // Argo CD's namespace is Argo CD's to make: without it the subscriber's Role cannot go there, and nothing is applied.
  const argocd = config.subscribers?.argocd;
  if (argocd && manifests.some((m) => m.metadata.namespace === argocd.namespace && m.kind === 'Role')) {
    const { CoreV1Api } = await import('@kubernetes/client-node');
    const found = await kubeConfig
      .makeApiClient(CoreV1Api)
      .readNamespace({ name: argocd.namespace })
      .then(
        () => true,
        (error: { code?: number }) => (error.code === 404 ? false : Promise.reject(error)),
      );
    if (!found)
      throw new HubRejectedError(
        'install into',
        'this hub',
        `Argo CD's namespace ${argocd.namespace} (subscribers.argocd.namespace) does not exist: install Argo CD first, then cpsync hub install puts the Argo CD subscriber's Secrets Role there. Nothing was applied`,
        404,
      );
  }
  return applyManifests(kubeConfig, manifests, { fieldManager: INSTALL_FIELD_MANAGER });
}
