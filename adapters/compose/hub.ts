/**
 * The hub a configuration names, with its leases: a directory of files (the default: ./inventory), a
 * kubeconfig's cluster, a kubeconfig kept in AWS Secrets Manager, or an EKS hub reached with
 * IAM-signed tokens (renewed every 10 minutes). The one place a hub is built, for the CLI and the
 * functions alike.
 */
import { isAbsolute, relative, resolve, sep } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Hub, LeaseStore } from '../../core/sync/ports.ts';
import { FileHub } from '../hub/FileHub.ts';
import { FileLeaseStore } from '../hub/FileLeases.ts';
import { TOKEN_REFRESH_MILLIS } from '../hub/eksToken.ts';
import { RefreshingHub } from '../hub/RefreshingHub.ts';
import { readSecret, safeReason } from '../shared/secrets.ts';
import type { CpsyncConfig } from './config.ts';
import { CompositionError } from './errors.ts';
import { claimedDirectory, defaultDirectory } from '../outbox/stateDirectory.ts';

/** Where cpsync keeps profiles locally when no hub is configured. */
const DEFAULT_FILE_HUB_DIRECTORY = 'inventory';

/** The hub, and the leases that keep two runs from applying the same account at once. */
export interface HubPorts {
  hub: Hub;
  leases: LeaseStore;
  /** The hub's client configuration when it is a cluster (renewed for an EKS hub): for subscribers that use it too. */
  kubeConfig?: () => Promise<KubeConfig>;
}

/** The Kubernetes client and hub, loaded only when a Kubernetes hub is configured (the library is large). */
function kubernetes() {
  return import('../hub/kubernetes.ts');
}

/**
 * A KubeConfig from a kubeconfig file; errors name the file (as the setting `label` that gave it) and
 * never quote it (it may hold credentials).
 */
export async function kubeConfigFromFile(
  path: string,
  context?: string,
  label = 'hub.kubeconfig',
  contextLabel = 'hub.context',
): Promise<KubeConfig> {
  const { KubeConfig } = await kubernetes();
  const kubeConfig = new KubeConfig();
  try {
    kubeConfig.loadFromFile(resolve(path));
  } catch (error) {
    throw new CompositionError(`${label} ${path}: ${safeReason(error)}`);
  }
  if (context) {
    if (!kubeConfig.getContexts().some((c) => c.name === context))
      throw new CompositionError(`${contextLabel} ${JSON.stringify(context)} is not a context of ${path}`);
    kubeConfig.setCurrentContext(context);
  }
  return kubeConfig;
}

/** A KubeConfig from a kubeconfig kept in Secrets Manager; errors name the secret, never its text. */
export async function kubeConfigFromSecret(
  secretArn: string,
  label = 'hub.kubeconfigSecretArn',
): Promise<KubeConfig> {
  const { KubeConfig } = await kubernetes();
  const kubeConfig = new KubeConfig();
  try {
    kubeConfig.loadFromString(await readSecret({ secretArn }));
  } catch (error) {
    throw new CompositionError(`${label} ${secretArn}: ${safeReason(error)}`);
  }
  return kubeConfig;
}

/**
 * The client configuration of the hub `config` names, as whoever runs this (an EKS hub's token is signed with
 * this process's AWS credentials); undefined when the hub is a directory of files.
 */
export async function hubKubeConfig(config: CpsyncConfig): Promise<KubeConfig | undefined> {
  const hub = config.hub;
  if (!hub || 'directory' in hub) return undefined;
  if ('eks' in hub) {
    const { eksHubKubeConfig } = await import('../hub/eksHub.ts');
    return eksHubKubeConfig(hub.eks);
  }
  if ('kubeconfigSecretArn' in hub) return kubeConfigFromSecret(hub.kubeconfigSecretArn);
  return kubeConfigFromFile(hub.kubeconfig, hub.context);
}

/**
 * The hub, in words, as whose state a state directory holds: a kubeconfig's by the server its context names (the file
 * moved or renamed, or another user's for the same server, is the same hub), the others as the configuration names
 * them. A kubeconfig that cannot be read fails as connecting would, before any state directory is claimed.
 */
async function hubNamed(config: CpsyncConfig, cwd?: string): Promise<string> {
  const hub = config.hub ?? { directory: DEFAULT_FILE_HUB_DIRECTORY };
  if ('directory' in hub) {
    // For the default state directory (`cwd`'s), a file hub inside that directory by its path from there: the two
    // move together (a project moved or renamed keeps its state).
    const path = resolve(hub.directory);
    const inside = cwd === undefined ? undefined : relative(cwd, path);
    return inside !== undefined && inside !== '..' && !inside.startsWith(`..${sep}`) && !isAbsolute(inside)
      ? `the directory ./${inside.split(sep).join('/')}`
      : `the directory ${path}`;
  }
  if ('eks' in hub) return `the EKS cluster ${hub.eks.clusterName} in ${hub.eks.region}`;
  if ('kubeconfigSecretArn' in hub) return `the kubeconfig in ${hub.kubeconfigSecretArn}`;
  const server = (await kubeConfigFromFile(hub.kubeconfig, hub.context)).getCurrentCluster()?.server;
  if (!server)
    throw new CompositionError(
      `hub.kubeconfig ${hub.kubeconfig}: its context names no cluster with a server`,
    );
  return `the server ${server}`;
}

/**
 * The state directory of a configuration whose outbox is a directory (undefined: a DynamoDB table): its own
 * `outbox.directory`, claimed for it, or its default (adapters/outbox/stateDirectory.ts).
 */
export async function stateDirectoryOf(
  config: CpsyncConfig,
  cwd: string = process.cwd(),
): Promise<string | undefined> {
  if (config.outbox === undefined)
    return defaultDirectory({ manager: config.manager, hub: await hubNamed(config, resolve(cwd)) }, cwd);
  if (!('directory' in config.outbox)) return undefined;
  return claimedDirectory(config.outbox.directory, { manager: config.manager, hub: await hubNamed(config) });
}

export async function connectHub(config: CpsyncConfig): Promise<HubPorts> {
  const hub = config.hub ?? { directory: DEFAULT_FILE_HUB_DIRECTORY };
  const namespace = config.inventory.namespace;
  if ('directory' in hub) {
    const directory = resolve(hub.directory);
    return { hub: new FileHub({ directory }), leases: new FileLeaseStore(directory) };
  }
  const { KubernetesHub, KubernetesLeaseStore } = await kubernetes();
  const accessProviderNames = Object.values(config.inventory.accessProviderNames);
  if ('eks' in hub) {
    const { eksHubKubeConfig } = await import('../hub/eksHub.ts');
    let current: InstanceType<typeof KubernetesHub> | undefined;
    const refreshing = new RefreshingHub(
      async () =>
        (current = new KubernetesHub({ kubeConfig: await eksHubKubeConfig(hub.eks), accessProviderNames })),
      TOKEN_REFRESH_MILLIS,
    );
    const kubeConfig = async () => {
      await refreshing.current();
      return current!.kubeConfig;
    };
    return { hub: refreshing, leases: new KubernetesLeaseStore({ kubeConfig, namespace }), kubeConfig };
  }
  const kubeConfig =
    'kubeconfigSecretArn' in hub
      ? await kubeConfigFromSecret(hub.kubeconfigSecretArn)
      : await kubeConfigFromFile(hub.kubeconfig, hub.context);
  return {
    hub: new KubernetesHub({ kubeConfig, accessProviderNames }),
    leases: new KubernetesLeaseStore({ kubeConfig, namespace }),
    kubeConfig: async () => kubeConfig,
  };
}
