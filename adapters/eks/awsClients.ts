import type { EC2Client } from '@aws-sdk/client-ec2';
import { EKSClient } from '@aws-sdk/client-eks';
import type { OrganizationsClient } from '@aws-sdk/client-organizations';
import { STSClient } from '@aws-sdk/client-sts';
import { fromTemporaryCredentials } from '@aws-sdk/credential-providers';
import type { Agent as HttpAgent } from 'node:http';
import type { Agent as HttpsAgent } from 'node:https';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { LRUCache } from 'lru-cache';
import type { AwsCredentialIdentity, AwsCredentialIdentityProvider } from '@smithy/types';
import { SigV4Sha256, withoutSdkLogger } from '../shared/awsSdk.ts';
import { awsAgents } from '../shared/proxy.ts';

export type AwsService = 'eks' | 'sts' | 'ec2' | 'organizations';

export interface AwsClientOptions {
  /**
   * Endpoint override: one URL for every service (an emulator or proxy), or one per service
   * (VPC interface endpoints).
   * @default the public regional endpoints
   */
  endpoint?: string | Partial<Record<AwsService, string>>;
  /**
   * Credentials cpsync runs with (the function role).
   * @default the SDK's default provider chain
   */
  credentials?: AwsCredentialIdentityProvider;
  /**
   * Attempts per call, throttling included; the SDK's retry strategy spaces them.
   * @default 8
   */
  maxAttempts?: number;
  /**
   * The SDK's retry mode: `adaptive` also rate-limits the client when it is throttled.
   * @default 'adaptive'
   */
  retryMode?: 'standard' | 'adaptive';
  /**
   * Time one HTTP request may take before it is abandoned (and retried, within maxAttempts).
   * @default 30000
   */
  requestTimeoutMillis?: number;
  /**
   * Region the account-wide calls go to (STS, EC2 DescribeRegions, Organizations): the partition its credentials
   * and member roles are in, so a role is assumed through that partition's STS.
   * @default 'us-east-1'
   */
  homeRegion?: string;
}

const DEFAULT_MAX_ATTEMPTS = 8;

function endpointFor(options: AwsClientOptions, service: AwsService): string | undefined {
  return typeof options.endpoint === 'string' ? options.endpoint : options.endpoint?.[service];
}

/**
 * The connection pools a factory's clients share: kept-alive sockets, as many per endpoint as calls
 * in flight (cpsync's own per-account and overall limits bound those, not the pool).
 */
interface Agents {
  httpAgent: HttpAgent;
  httpsAgent: HttpsAgent;
}

/** Client configuration shared by every AWS client cpsync makes. */
function clientConfig(
  options: AwsClientOptions,
  agents: Agents,
  service: AwsService,
  region: string,
  credentials?: AwsCredentialIdentityProvider,
) {
  const endpoint = endpointFor(options, service);
  const chosen = credentials ?? options.credentials;
  return {
    region,
    sha256: SigV4Sha256,
    maxAttempts: options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS,
    retryMode: options.retryMode ?? 'adaptive',
    requestHandler: new NodeHttpHandler({
      requestTimeout: options.requestTimeoutMillis ?? 30_000,
      throwOnRequestTimeout: true,
      connectionTimeout: 5_000,
      ...agents,
    }),
    ...(endpoint ? { endpoint } : {}),
    ...(chosen ? { credentials: chosen } : {}),
  };
}

/**
 * Makes the clients the EKS adapter uses; replace it to inject clients. The clients of discovery (EC2 for
 * an account's regions, Organizations for its accounts) are loaded when first asked for: a sync of
 * configured regions, or one cluster's event, never loads them.
 */
export interface AwsClientFactory {
  eks(region: string, credentials?: AwsCredentialIdentityProvider): EKSClient;
  ec2(region: string, credentials?: AwsCredentialIdentityProvider): Promise<EC2Client>;
  sts(region: string, credentials?: AwsCredentialIdentityProvider): STSClient;
  organizations(credentials?: AwsCredentialIdentityProvider): Promise<OrganizationsClient>;
  /**
   * Credentials of `roleArn`, assumed with the base credentials and refreshed before they expire; with
   * `sourceIdentity`, a session that carries it (STS SourceIdentity), apart from the one without.
   */
  assumeRole(
    roleArn: string,
    externalId: string | undefined,
    sessionName: string,
    sourceIdentity?: string,
  ): AwsCredentialIdentityProvider;
}

/**
 * Clients kept for reuse, the least recently used forgotten beyond these. A sync asks each account's region through a
 * client of its own (its role's credentials), a few scopes at a time: kept for the whole run, the clients of an
 * estate of 300 accounts held some 50 MB (each its middleware, configuration and serializer buffers). Enough for
 * every scope in flight at the largest concurrency and the events in between; a client forgotten is only made again
 * (its adaptive retry's view of the account's throttling starting afresh).
 */
const CLIENTS_KEPT = 128;

/** The default factory: real SDK clients, one per (service, region, credentials), reused. */
export function awsClientFactory(options: AwsClientOptions = {}): AwsClientFactory {
  const homeRegion = options.homeRegion ?? 'us-east-1';
  const clients = new LRUCache<string, object>({ max: CLIENTS_KEPT });
  // A role's credentials, one per account, are kept for the run: forgotten, they would be asked of STS again.
  const roles = new Map<string, AwsCredentialIdentityProvider>();
  // One pool for all clients rather than one per client: an account's scopes (a client per region
  // and role) and every account's calls to the same regional endpoint reuse the same connections,
  // instead of each client opening (and handshaking) its own. Through the environment's proxy, if it names one.
  const agents: Agents = awsAgents();
  const ids = new WeakMap<object, number>();
  let nextId = 0;
  const idOf = (credentials?: AwsCredentialIdentityProvider) => {
    if (!credentials) return 0;
    if (!ids.has(credentials)) ids.set(credentials, ++nextId);
    return ids.get(credentials)!;
  };
  // The clients of cpsync's own credentials, one per service and region, are kept for the run: made again, each
  // would resolve the default credential chain again (the instance's metadata service, a web identity's STS call).
  const own = new Map<string, object>();
  function kept<T extends object>(
    store: { get(key: string): object | undefined; set(key: string, value: object): unknown },
    key: string,
    make: () => T,
  ): T {
    let value = store.get(key);
    if (value === undefined) store.set(key, (value = make()));
    return value as T;
  }
  const cached = <T extends object>(key: string, make: () => T, credentials?: object): T =>
    kept(credentials === undefined ? own : clients, key, make);
  return {
    eks: (region, credentials) =>
      cached(
        `eks:${region}:${idOf(credentials)}`,
        () => withoutSdkLogger(new EKSClient(clientConfig(options, agents, 'eks', region, credentials))),
        credentials,
      ),
    ec2: (region, credentials) =>
      cached(
        `ec2:${region}:${idOf(credentials)}`,
        async () => {
          const { EC2Client } = await import('./ec2Api.ts');
          return withoutSdkLogger(new EC2Client(clientConfig(options, agents, 'ec2', region, credentials)));
        },
        credentials,
      ),
    sts: (region, credentials) =>
      cached(
        `sts:${region}:${idOf(credentials)}`,
        () => withoutSdkLogger(new STSClient(clientConfig(options, agents, 'sts', region, credentials))),
        credentials,
      ),
    organizations: (credentials) =>
      cached(
        `organizations:${idOf(credentials)}`,
        async () => {
          const { OrganizationsClient } = await import('./organizationsApi.ts');
          return withoutSdkLogger(
            new OrganizationsClient(clientConfig(options, agents, 'organizations', homeRegion, credentials)),
          );
        },
        credentials,
      ),
    assumeRole: (roleArn, externalId, sessionName, sourceIdentity) =>
      kept(roles, `${roleArn}:${externalId ?? ''}:${sourceIdentity ?? ''}`, () =>
        sharedCredentials(
          fromTemporaryCredentials({
            params: {
              RoleArn: roleArn,
              RoleSessionName: sessionName,
              ...(externalId ? { ExternalId: externalId } : {}),
              ...(sourceIdentity ? { SourceIdentity: sourceIdentity } : {}),
            },
            clientConfig: clientConfig(options, agents, 'sts', homeRegion),
            ...(options.credentials ? { masterCredentials: options.credentials } : {}),
          }),
        ),
      ),
  };
}

/** Credentials are renewed this long before they expire. */
const RENEW_BEFORE_MILLIS = 5 * 60 * 1000;

/**
 * One role's credentials shared by every client and caller: the SDK caches credentials per client,
 * so without this each region's client (and each caller awaiting them at once) made its own
 * AssumeRole call — eight per account for four regions.
 */
function sharedCredentials(provider: AwsCredentialIdentityProvider): AwsCredentialIdentityProvider {
  let current: Promise<AwsCredentialIdentity> | undefined;
  const fresh = (credentials: AwsCredentialIdentity) =>
    !credentials.expiration || credentials.expiration.getTime() - Date.now() > RENEW_BEFORE_MILLIS;
  return async () => {
    if (current) {
      const credentials = await current.catch(() => undefined);
      if (credentials && fresh(credentials)) return credentials;
    }
    current = provider();
    return current;
  };
}
