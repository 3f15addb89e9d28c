/**
 * Builds the adapters a configuration names: the composition root the CLI and the Lambda functions
 * share. Only here do configuration, credentials and SDK clients meet.
 */
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { ClientAssertionCredential, ClientSecretCredential } from '@azure/identity';
import type { TokenCredential } from '@azure/core-auth';
import { KubeConfig } from '@kubernetes/client-node';
import type { CpsyncConfig } from '../core/config.ts';
import { CpsyncError } from '../core/errors.ts';
import type { Provider } from '../core/model/observedCluster.ts';
import type { Scope } from '../core/model/scope.ts';
import type { ClusterSource, EventSink, Hub, Outbox } from '../core/ports.ts';
import { AksSource } from './aks/AksSource.ts';
import { enumerateAksScopes } from './aks/AksSource.ts';
import { EventBridgeBus } from './bus/EventBridgeBus.ts';
import { JsonLinesFileBus, StreamBus } from './bus/JsonLinesBus.ts';
import { awsClientFactory } from './eks/awsClients.ts';
import { enumerateEksScopes } from './eks/EksScopes.ts';
import { EksSource } from './eks/EksSource.ts';
import { enumerateGkeScopes, GkeSource } from './gke/GkeSource.ts';
import { FileHub } from './hub/FileHub.ts';
import { KubernetesHub } from './hub/KubernetesHub.ts';
import { FileOutbox } from './outbox/FileOutbox.ts';
import { DynamoOutbox } from './outbox/DynamoOutbox.ts';
import { eksToken, TOKEN_REFRESH_MILLIS } from './hub/eksToken.ts';
import { RefreshingHub } from './hub/RefreshingHub.ts';
import { DescribeClusterCommand, EKSClient } from '@aws-sdk/client-eks';
import type { AwsCredentialIdentityProvider } from '@smithy/types';

/** A configured part that cannot be built here (e.g. a hub kind the runtime does not support). */
export class CompositionError extends CpsyncError {}

type SecretRef = { file: string } | { secretArn: string };

/** The text of a secret: a file, or an AWS Secrets Manager secret. Never logged. */
export async function readSecret(ref: SecretRef, secrets?: SecretsManagerClient): Promise<string> {
  if ('file' in ref) return readFile(resolve(ref.file), 'utf8');
  const client = secrets ?? new SecretsManagerClient({});
  const answer = await client.send(new GetSecretValueCommand({ SecretId: ref.secretArn }));
  if (answer.SecretString === undefined)
    throw new CompositionError(`secret ${ref.secretArn} has no string value`);
  return answer.SecretString;
}

async function azureCredential(
  config: NonNullable<CpsyncConfig['providers']['aks']>,
): Promise<TokenCredential | undefined> {
  const credential = config.credential;
  if (!credential) return undefined;
  const options = {
    ...(config.authorityHost ? { authorityHost: config.authorityHost, disableInstanceDiscovery: true } : {}),
  };
  if ('federatedTokenFile' in credential) {
    const file = resolve(credential.federatedTokenFile);
    return new ClientAssertionCredential(
      credential.tenantId,
      credential.clientId,
      async () => (await readFile(file, 'utf8')).trim(),
      options,
    );
  }
  const secret = (await readSecret(credential.clientSecret)).trim();
  return new ClientSecretCredential(credential.tenantId, credential.clientId, secret, options);
}

export interface Sources {
  sources: Partial<Record<Provider, ClusterSource>>;
  eks?: EksSource;
  gke?: GkeSource;
  aks?: AksSource;
  close(): Promise<void>;
}

/** The cloud sources of the configured providers. */
export async function buildSources(config: CpsyncConfig): Promise<Sources> {
  const built: Sources = { sources: {}, close: async () => {} };
  const { eks, gke, aks } = config.providers;
  if (eks) {
    built.eks = new EksSource({
      roleName: eks.roleName,
      homeRegion: eks.homeRegion,
      maxAttempts: eks.maxAttempts,
      perAccountConcurrency: eks.perAccountConcurrency,
      overallConcurrency: eks.overallConcurrency,
      ...(eks.externalId ? { externalId: eks.externalId } : {}),
      ...(eks.endpoint ? { endpoint: eks.endpoint } : {}),
    });
    built.sources.eks = built.eks;
  }
  if (gke) {
    const credentials = gke.credentials
      ? (JSON.parse(await readSecret(gke.credentials)) as Record<string, unknown>)
      : undefined;
    built.gke = new GkeSource({
      maxRetries: gke.maxRetries,
      ...(credentials ? { credentials } : {}),
      ...(gke.endpoint ? { endpoint: gke.endpoint } : {}),
    });
    built.sources.gke = built.gke;
  }
  if (aks) {
    const credential = await azureCredential(aks);
    built.aks = new AksSource({
      fetchCertificateAuthority: aks.fetchCertificateAuthority,
      ...(credential ? { credential } : {}),
      ...(aks.endpoint ? { endpoint: aks.endpoint } : {}),
    });
    built.sources.aks = built.aks;
  }
  built.close = async () => {
    await built.gke?.close();
  };
  return built;
}

/** Every scope the configuration covers, optionally only those of some providers. */
export async function enumerateScopes(
  config: CpsyncConfig,
  sources: Sources,
  providers?: readonly Provider[],
): Promise<Scope[]> {
  const wanted = (p: Provider) => !providers || providers.length === 0 || providers.includes(p);
  const scopes: Scope[] = [];
  const { eks, gke, aks } = config.providers;
  if (eks && sources.eks && wanted('eks')) {
    const organizations =
      'organization' in eks.accounts
        ? awsClientFactory(eks.endpoint ? { endpoint: eks.endpoint } : {}).organizations()
        : undefined;
    const selection = Array.isArray(eks.accounts)
      ? { accounts: eks.accounts }
      : { organization: eks.accounts.organization };
    const found = await enumerateEksScopes(sources.eks, {
      accounts: selection,
      ...(eks.regions ? { regions: eks.regions } : {}),
      ...(organizations ? { organizations } : {}),
    });
    scopes.push(...found.scopes);
  }
  if (gke && sources.gke && wanted('gke')) {
    scopes.push(
      ...(await enumerateGkeScopes(
        sources.gke,
        Array.isArray(gke.projects) ? { projects: gke.projects } : { search: gke.projects.search },
      )),
    );
  }
  if (aks && sources.aks && wanted('aks')) {
    scopes.push(
      ...(await enumerateAksScopes(
        sources.aks,
        Array.isArray(aks.subscriptions) ? { subscriptions: aks.subscriptions } : { all: true },
      )),
    );
  }
  return scopes;
}

/** Where cpsync keeps profiles locally when no hub is configured. */
export const DEFAULT_FILE_HUB_DIRECTORY = 'inventory';

/** The hub: a kubeconfig's cluster, or a directory of files (the default: ./inventory). */
export function buildHub(config: CpsyncConfig): Hub {
  const hub = config.hub ?? { directory: DEFAULT_FILE_HUB_DIRECTORY };
  if ('directory' in hub) return new FileHub({ directory: resolve(hub.directory) });
  if ('kubeconfig' in hub) {
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromFile(resolve(hub.kubeconfig));
    if (hub.context) kubeConfig.setCurrentContext(hub.context);
    return new KubernetesHub({ kubeConfig });
  }
  throw new CompositionError(`hub.${Object.keys(hub)[0]} needs AWS at start-up; build it with connectHub()`);
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

/**
 * Any configured hub, including those the Lambda functions use: an EKS hub reached with IAM-signed
 * tokens (renewed every 10 minutes), or a kubeconfig kept in AWS Secrets Manager.
 */
export async function connectHub(config: CpsyncConfig): Promise<Hub> {
  const hub = config.hub;
  if (hub && 'eks' in hub)
    return new RefreshingHub(
      async () => new KubernetesHub({ kubeConfig: await eksHubKubeConfig(hub.eks) }),
      TOKEN_REFRESH_MILLIS,
    );
  if (hub && 'kubeconfigSecretArn' in hub) {
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromString(await readSecret({ secretArn: hub.kubeconfigSecretArn }));
    return new KubernetesHub({ kubeConfig });
  }
  return buildHub(config);
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
