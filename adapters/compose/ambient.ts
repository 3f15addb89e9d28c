/**
 * Ambient discovery: with no configuration file, cpsync syncs what the machine's default credentials
 * reach, as the cloud CLIs do — AWS's default chain (the caller's account, every enabled region),
 * Google's Application Default Credentials (every project the identity can see), Azure's default
 * credential chain (every subscription it can see). Each cloud is probed with one cheap call; one that
 * does not answer is skipped with the reason.
 *
 * Endpoint overrides (private endpoints, proxies, local emulators) come from the environment:
 * AWS_ENDPOINT_URL (the AWS SDK's own), CPSYNC_GKE_ENDPOINT, CPSYNC_AKS_ENDPOINT and AZURE_AUTHORITY_HOST.
 */
import type { Provider } from '../../core/domain/model/observedCluster.ts';
import { firstLineOf } from '../../core/domain/errors.ts';
import { withDeadline } from '../../core/sync/deadline.ts';
import { awsProxyConfig } from '../shared/proxy.ts';

export interface AmbientCloud {
  provider: Provider;
  /** Whether the cloud's credentials answered. */
  found: boolean;
  /** What will be synced, or why the cloud is skipped. */
  detail: string;
}

export interface AmbientDiscovery {
  /** `providers` of a configuration for the clouds found (empty when none). */
  providers: Record<string, Record<string, unknown>>;
  clouds: AmbientCloud[];
}

const ARM_SCOPE = 'https://management.azure.com/.default';

/** The first line of an SDK's message: the chains explain themselves at length. */
const reason = (error: unknown) => firstLineOf(error, 200);

async function probeAws(env: NodeJS.ProcessEnv, millis: number) {
  const { STSClient, GetCallerIdentityCommand } = await import('@aws-sdk/client-sts');
  // The region named here (the environment's, or the AWS profile's), whose partition the credentials are of.
  const { ambientAwsRegion } = await import('../shared/awsPartition.ts');
  const region = (await ambientAwsRegion(env)) ?? 'us-east-1';
  const sts = new STSClient({ region, maxAttempts: 1, ...awsProxyConfig() });
  try {
    const identity = await withDeadline('AWS STS', millis, (signal) =>
      sts.send(new GetCallerIdentityCommand({}), { abortSignal: signal }),
    );
    const account = identity.Account!;
    return {
      cloud: { provider: 'eks' as const, found: true, detail: `account ${account}, every enabled region` },
      config: { accounts: [account], homeRegion: region },
    };
  } catch (error) {
    const name = (error as Error).name;
    const detail =
      name === 'CredentialsProviderError'
        ? 'skipped: no AWS credentials (the default chain found none)'
        : `skipped: ${reason(error)}`;
    return { cloud: { provider: 'eks' as const, found: false, detail } };
  } finally {
    sts.destroy();
  }
}

async function probeGoogle(env: NodeJS.ProcessEnv, millis: number) {
  try {
    const { googleAuthClient } = await import('../gke/authClient.ts');
    // Key files cpsync reads itself go into the configuration; anything else (a gcloud login) stays ADC.
    const { client, keyFile } = await googleAuthClient(env.GOOGLE_APPLICATION_CREDENTIALS);
    const credentials = keyFile ? { file: keyFile } : undefined;
    const token = await withDeadline('Google', millis, () => client.getAccessToken());
    if (!token.token) throw new Error('Google gave no access token');
    return {
      cloud: { provider: 'gke' as const, found: true, detail: 'every project the identity can see' },
      config: {
        projects: { search: {} },
        ...(credentials ? { credentials } : {}),
        ...(env.CPSYNC_GKE_ENDPOINT ? { endpoint: env.CPSYNC_GKE_ENDPOINT } : {}),
      },
    };
  } catch (error) {
    const text = reason(error);
    const detail = /Could not load the default credentials/i.test(text)
      ? 'skipped: no Google credentials (Application Default Credentials found none)'
      : `skipped: ${text}`;
    return { cloud: { provider: 'gke' as const, found: false, detail } };
  }
}

async function probeAzure(env: NodeJS.ProcessEnv, millis: number) {
  const { DefaultAzureCredential } = await import('@azure/identity');
  const authorityHost = env.AZURE_AUTHORITY_HOST;
  const credential = new DefaultAzureCredential(
    authorityHost ? { authorityHost, disableInstanceDiscovery: true } : {},
  );
  try {
    await withDeadline('Azure', millis, (abortSignal) => credential.getToken(ARM_SCOPE, { abortSignal }));
    return {
      cloud: { provider: 'aks' as const, found: true, detail: 'every subscription the identity can see' },
      config: {
        subscriptions: { all: true },
        ...(env.CPSYNC_AKS_ENDPOINT ? { endpoint: env.CPSYNC_AKS_ENDPOINT } : {}),
        ...(authorityHost ? { authorityHost } : {}),
      },
    };
  } catch (error) {
    const detail =
      (error as Error).name === 'CredentialUnavailableError' ||
      (error as Error).name === 'AggregateAuthenticationError'
        ? 'skipped: no Azure credentials (the default credential chain found none)'
        : `skipped: ${reason(error)}`;
    return { cloud: { provider: 'aks' as const, found: false, detail } };
  }
}

/** Probes the three clouds at once; resolves to the providers found and what happened to each. */
export async function discoverAmbient(
  env: NodeJS.ProcessEnv = process.env,
  timeoutMillis = 15_000,
): Promise<AmbientDiscovery> {
  const results = await Promise.all([
    probeAws(env, timeoutMillis),
    probeGoogle(env, timeoutMillis),
    probeAzure(env, timeoutMillis),
  ]);
  const providers: AmbientDiscovery['providers'] = {};
  for (const result of results)
    if ('config' in result && result.config) providers[result.cloud.provider] = result.config;
  return { providers, clouds: results.map((r) => r.cloud) };
}
