/**
 * Builds the adapters a configuration names: the composition root the CLI and the Lambda functions
 * share. Only here do configuration, credentials and SDK clients meet.
 */
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import type { KubeConfig } from '@kubernetes/client-node';
import { inventoryOptionsOf, type CpsyncConfig } from './config.ts';
import { CpsyncError } from '../../core/domain/errors.ts';
import type { Provider } from '../../core/domain/model/observedCluster.ts';
import type { Scope } from '../../core/domain/model/scope.ts';
import type { ClusterSource, EventSink, Hub, LeaseStore, Outbox } from '../../core/sync/ports.ts';
import { EventBridgeBus } from '../bus/EventBridgeBus.ts';
import { JsonLinesFileBus, StreamBus } from '../bus/JsonLinesBus.ts';
import { FileHub } from '../hub/FileHub.ts';
import { FileLeaseStore } from '../hub/FileLeases.ts';
import { FileOutbox } from '../outbox/FileOutbox.ts';
import { DynamoOutbox } from '../outbox/DynamoOutbox.ts';
import { eksToken, TOKEN_REFRESH_MILLIS } from '../hub/eksToken.ts';
import { RefreshingHub } from '../hub/RefreshingHub.ts';
import { DescribeClusterCommand, EKSClient } from '@aws-sdk/client-eks';
import type { AwsCredentialIdentityProvider } from '@smithy/types';

/** A configured part that cannot be built here (e.g. a hub kind the runtime does not support). */
export class CompositionError extends CpsyncError {}

export type SecretRef = { file: string } | { secretArn: string };

/** Where a secret comes from, as errors name it (never what it holds). */
export function secretSource(ref: SecretRef): string {
  return 'file' in ref ? `file ${ref.file}` : `secret ${ref.secretArn}`;
}

/** The text of a secret: a file, or an AWS Secrets Manager secret. Never logged. */
export async function readSecret(ref: SecretRef, secrets?: SecretsManagerClient): Promise<string> {
  if ('file' in ref) return readFile(resolve(ref.file), 'utf8');
  const client = secrets ?? new SecretsManagerClient({});
  const answer = await client.send(new GetSecretValueCommand({ SecretId: ref.secretArn }));
  if (answer.SecretString === undefined)
    throw new CompositionError(`secret ${ref.secretArn} has no string value`);
  return answer.SecretString;
}

export interface ProviderModule {
  provider: Provider;
  /** The provider's source, when the configuration has the provider. */
  build(config: CpsyncConfig): Promise<ClusterSource | undefined>;
  /**
   * Every scope of the provider the configuration covers; with `accounts`, only those of these
   * accounts (canonical ids) that the configuration covers.
   */
  scopes(config: CpsyncConfig, source: ClusterSource, accounts?: readonly string[]): Promise<Scope[]>;
  close?(source: ClusterSource): Promise<void>;
}

export interface Sources {
  sources: Partial<Record<Provider, ClusterSource>>;
  modules: readonly ProviderModule[];
  close(): Promise<void>;
}

/**
 * The cloud sources of the configured providers, from the provider modules given: a function
 * passes only those it needs, so its bundle carries no other cloud's SDK.
 */
export async function buildSources(
  config: CpsyncConfig,
  modules: readonly ProviderModule[],
): Promise<Sources> {
  const sources: Partial<Record<Provider, ClusterSource>> = {};
  for (const module of modules) {
    const source = await module.build(config);
    if (source) sources[module.provider] = source;
  }
  return {
    sources,
    modules,
    close: async () => {
      for (const module of modules) {
        const source = sources[module.provider];
        if (source && module.close) await module.close(source);
      }
    },
  };
}

/** Where cpsync keeps profiles locally when no hub is configured. */
export const DEFAULT_FILE_HUB_DIRECTORY = 'inventory';

/** The Kubernetes client and hub, loaded only when a Kubernetes hub is configured (the library is large). */
function kubernetes() {
  return import('../hub/kubernetes.ts');
}

/** The hub, and the leases that keep two runs from applying the same account at once. */
export interface HubPorts {
  hub: Hub;
  leases: LeaseStore;
}

/** A KubeConfig from a kubeconfig file; errors name the file and never quote it (it may hold credentials). */
async function kubeConfigFromFile(path: string, context?: string): Promise<KubeConfig> {
  const { KubeConfig } = await kubernetes();
  const kubeConfig = new KubeConfig();
  try {
    kubeConfig.loadFromFile(resolve(path));
  } catch (error) {
    throw new CompositionError(`hub.kubeconfig ${path}: ${safeReason(error)}`);
  }
  if (context) {
    if (!kubeConfig.getContexts().some((c) => c.name === context))
      throw new CompositionError(`hub.context ${JSON.stringify(context)} is not a context of ${path}`);
    kubeConfig.setCurrentContext(context);
  }
  return kubeConfig;
}

/**
 * Why a credential-bearing document could not be read, without quoting it: parsers put the text
 * around the fault in their messages, and that text may be a key or a token.
 */
export function safeReason(error: unknown): string {
  // An AWS SDK error (Secrets Manager) names the call's failure, never the secret's value.
  if ((error as { $metadata?: unknown }).$metadata !== undefined)
    return `cannot be read: ${(error as Error).name}: ${(error as Error).message}`;
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') return 'no such file';
  if (code === 'EACCES' || code === 'EPERM') return 'cannot be read (permission denied)';
  if (code === 'EISDIR') return 'is a directory, not a file';
  const name = error instanceof Error ? error.name : '';
  if (name === 'SyntaxError' || name === 'YAMLException' || /YAML|JSON/i.test(name))
    return 'is not valid YAML or JSON';
  return 'cannot be read';
}

/**
 * The hub a configuration names, with its leases: a directory of files (the default: ./inventory), a
 * kubeconfig's cluster, a kubeconfig kept in AWS Secrets Manager, or an EKS hub reached with
 * IAM-signed tokens (renewed every 10 minutes). The CLI and the functions build it the same way.
 */
export async function connectHubPorts(config: CpsyncConfig): Promise<HubPorts> {
  const hub = config.hub ?? { directory: DEFAULT_FILE_HUB_DIRECTORY };
  const namespace = config.inventory.namespace;
  if ('directory' in hub) {
    const directory = resolve(hub.directory);
    return { hub: new FileHub({ directory }), leases: new FileLeaseStore(directory) };
  }
  const { KubeConfig, KubernetesHub, KubernetesLeaseStore } = await kubernetes();
  if ('eks' in hub) {
    const refreshing = new RefreshingHub(
      async () => new KubernetesHub({ kubeConfig: await eksHubKubeConfig(hub.eks) }),
      TOKEN_REFRESH_MILLIS,
    );
    const kubeConfig = async () =>
      ((await refreshing.current()) as InstanceType<typeof KubernetesHub>).kubeConfig;
    return { hub: refreshing, leases: new KubernetesLeaseStore({ kubeConfig, namespace }) };
  }
  let kubeConfig: KubeConfig;
  if ('kubeconfigSecretArn' in hub) {
    kubeConfig = new KubeConfig();
    let text: string;
    try {
      text = await readSecret({ secretArn: hub.kubeconfigSecretArn });
    } catch (error) {
      throw new CompositionError(`hub.kubeconfigSecretArn ${hub.kubeconfigSecretArn}: ${safeReason(error)}`);
    }
    try {
      kubeConfig.loadFromString(text);
    } catch (error) {
      throw new CompositionError(`hub.kubeconfigSecretArn ${hub.kubeconfigSecretArn}: ${safeReason(error)}`);
    }
  } else kubeConfig = await kubeConfigFromFile(hub.kubeconfig, hub.context);
  return {
    hub: new KubernetesHub({ kubeConfig }),
    leases: new KubernetesLeaseStore({ kubeConfig, namespace }),
  };
}

/** The hub a configuration names (see connectHubPorts). */
export async function connectHub(config: CpsyncConfig): Promise<Hub> {
  return (await connectHubPorts(config)).hub;
}

/** A KubeConfig for an EKS cluster with a fresh IAM token (endpoint and CA from DescribeCluster). */
export async function eksHubKubeConfig(
  hub: { clusterName: string; region: string; endpoint?: string; stsEndpoint?: string },
  credentials?: AwsCredentialIdentityProvider,
): Promise<KubeConfig> {
  const eks = new EKSClient({
    region: hub.region,
    ...(hub.endpoint ? { endpoint: hub.endpoint } : {}),
    ...(credentials ? { credentials } : {}),
  });
  const { cluster } = await eks.send(new DescribeClusterCommand({ name: hub.clusterName }));
  if (!cluster?.endpoint)
    throw new CompositionError(
      `hub EKS cluster ${hub.clusterName} has no endpoint (status ${cluster?.status ?? 'unknown'})`,
    );
  const token = await eksToken({
    clusterName: hub.clusterName,
    region: hub.region,
    credentials: credentials ?? eks.config.credentials,
    ...(hub.stsEndpoint ? { stsEndpoint: hub.stsEndpoint } : {}),
  });
  const { KubeConfig } = await kubernetes();
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromOptions({
    clusters: [
      {
        name: hub.clusterName,
        server: cluster.endpoint,
        ...(cluster.certificateAuthority?.data ? { caData: cluster.certificateAuthority.data } : {}),
        skipTLSVerify: false,
      },
    ],
    users: [{ name: 'cpsync', token }],
    contexts: [{ name: 'hub', cluster: hub.clusterName, user: 'cpsync' }],
    currentContext: 'hub',
  });
  return kubeConfig;
}

/** The bus: EventBridge, a JSON-lines file, or JSON lines on stdout (the default). */
export function buildBus(config: CpsyncConfig, stdout: NodeJS.WritableStream = process.stdout): EventSink {
  const bus = config.bus ?? { stdout: true as const };
  if ('eventBridge' in bus) {
    return new EventBridgeBus({
      busName: bus.eventBridge.busName,
      ...(bus.eventBridge.region ? { region: bus.eventBridge.region } : {}),
      ...(bus.eventBridge.endpoint ? { endpoint: bus.eventBridge.endpoint } : {}),
    });
  }
  if ('jsonl' in bus) return new JsonLinesFileBus(resolve(bus.jsonl));
  return new StreamBus(stdout as never);
}

/** What every engine run takes from the configuration: inventory options, event source, intent lease and limits. */
export function engineSettings(config: CpsyncConfig) {
  return {
    options: inventoryOptionsOf(config),
    eventSource: eventSourceOf(config),
    intentLeaseMillis: config.sync.intentLeaseSeconds * 1000,
    scopeTimeoutMillis: config.sync.scopeTimeoutSeconds * 1000,
    leaseWaitMillis: config.sync.leaseWaitSeconds * 1000,
    // A Kubernetes hub may still carry out a write whose client has gone; files are written or not.
    intentSettleDelayMillis: config.hub && !('directory' in config.hub) ? KUBERNETES_SETTLE_DELAY_MILLIS : 0,
  };
}

/** How long a Kubernetes hub is given to finish requests of a run that gave up its lease. */
const KUBERNETES_SETTLE_DELAY_MILLIS = 10_000;

/** The event source name events carry. */
export function eventSourceOf(config: CpsyncConfig): string {
  return config.bus && 'eventBridge' in config.bus ? config.bus.eventBridge.source : 'cpsync';
}

/** Where unpublished events wait: a DynamoDB table, or a directory (by default `.cpsync/outbox`). */
export function buildOutbox(config: CpsyncConfig): Outbox {
  const outbox = config.outbox ?? { directory: '.cpsync/outbox' };
  if ('table' in outbox)
    return new DynamoOutbox({
      tableName: outbox.table,
      ...(outbox.endpoint ? { endpoint: outbox.endpoint } : {}),
    });
  return new FileOutbox(resolve(outbox.directory));
}
