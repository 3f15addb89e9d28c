import type { TokenCredential } from '@azure/core-auth';
import type { AuthClient } from 'google-auth-library';
import type { Target } from './target.ts';

/** A bearer token and when it stops being accepted (client-go caches it until then). */
export interface ClusterToken {
  token: string;
  expiresAt?: Date;
}

/** Where the plugin's own settings come from: flags, else the environment. */
export interface TokenSettings {
  /** EKS: the role to assume in the cluster's account: an ARN, `{accountId}`/`{region}`/`{partition}` filled in. */
  roleArn?: string;
  /** EKS: the name of the role to assume in the cluster's account (`arn:<partition>:iam::<account>:role/<name>`). */
  roleName?: string;
  /** GKE: a key file (service account or external_account) instead of Application Default Credentials. */
  googleCredentialsFile?: string;
  env: NodeJS.ProcessEnv;
  now: () => Date;
  /** GKE: the Google auth client to take the token from (the member probe passes the one it lists with). */
  google?: AuthClient;
  /** AKS: the Azure credential to take the token from (the member probe passes the one it lists with). */
  azure?: TokenCredential;
}

/** The Entra application every AKS cluster with Entra ID integration accepts tokens for. */
const AKS_SERVER_SCOPE = '6dae42f8-4368-4678-94ff-3960e28e3630/.default';
/** EKS accepts a token 15 minutes after it is signed; client-go is told 14, as `aws eks get-token` does. */
const EKS_TOKEN_MINUTES = 14;

export class TokenError extends Error {
  override name = 'TokenError';
}

/**
 * The role to assume for `target`, if the plugin was told one: an ARN pattern (`{accountId}`, `{region}` and
 * `{partition}` filled in), or a role name of the cluster's account, in the partition of the cluster's region.
 */
export async function eksRoleArn(
  target: Extract<Target, { provider: 'eks' }>,
  settings: TokenSettings,
): Promise<string | undefined> {
  if (settings.roleArn) {
    if (settings.roleArn.includes('{accountId}') && !target.accountId)
      throw new TokenError(
        "the role ARN names {accountId}, but the cluster's account is not known (--account, or accountId in the extension)",
      );
    const partition = settings.roleArn.includes('{partition}') ? await partitionOf(target.region) : '';
    return settings.roleArn
      .replaceAll('{accountId}', target.accountId ?? '')
      .replaceAll('{region}', target.region)
      .replaceAll('{partition}', partition);
  }
  if (settings.roleName) {
    if (!target.accountId)
      throw new TokenError(
        "--role-name needs the cluster's account (--account, or accountId in the extension)",
      );
    return `arn:${await partitionOf(target.region)}:iam::${target.accountId}:role/${settings.roleName}`;
  }
  return undefined;
}

/** The partition of `region`, its table loaded only here: it is the AWS SDK's, which a GKE or AKS token never needs. */
async function partitionOf(region: string): Promise<string> {
  const { awsPartitionOf } = await import('../shared/awsPartition.ts');
  return awsPartitionOf(region).name;
}

async function eksClusterToken(
  target: Extract<Target, { provider: 'eks' }>,
  settings: TokenSettings,
): Promise<ClusterToken> {
  const [{ fromNodeProviderChain, fromTemporaryCredentials }, { eksToken }] = await Promise.all([
    import('@aws-sdk/credential-providers'),
    import('../hub/eksToken.ts'),
  ]);
  const stsEndpoint = settings.env.AWS_ENDPOINT_URL_STS ?? settings.env.AWS_ENDPOINT_URL;
  const roleArn = await eksRoleArn(target, settings);
  const chain = fromNodeProviderChain();
  const credentials = roleArn
    ? fromTemporaryCredentials({
        masterCredentials: chain,
        params: { RoleArn: roleArn, RoleSessionName: 'cpsync-credentials', DurationSeconds: 900 },
        clientConfig: { region: target.region, ...(stsEndpoint ? { endpoint: stsEndpoint } : {}) },
      })
    : chain;
  const now = settings.now();
  const token = await eksToken({
    clusterName: target.cluster,
    region: target.region,
    credentials: await credentials(),
    signingDate: now,
    ...(stsEndpoint ? { stsEndpoint } : {}),
  });
  return { token, expiresAt: new Date(now.getTime() + EKS_TOKEN_MINUTES * 60_000) };
}

async function gkeClusterToken(settings: TokenSettings): Promise<ClusterToken> {
  const client =
    settings.google ??
    (
      await (
        await import('../gke/authClient.ts')
      ).googleAuthClient(settings.googleCredentialsFile ?? settings.env.GOOGLE_APPLICATION_CREDENTIALS)
    ).client;
  const { token } = await client.getAccessToken();
  if (!token) throw new TokenError('Google returned no access token');
  const expiry = client.credentials.expiry_date;
  return { token, ...(typeof expiry === 'number' ? { expiresAt: new Date(expiry) } : {}) };
}

async function aksClusterToken(
  target: Extract<Target, { provider: 'aks' }>,
  settings: TokenSettings,
): Promise<ClusterToken> {
  const authorityHost = settings.env.AZURE_AUTHORITY_HOST;
  const credential = settings.azure ?? (await defaultAzureCredential(target, authorityHost));
  const token = await credential.getToken(
    AKS_SERVER_SCOPE,
    target.tenantId ? { tenantId: target.tenantId } : {},
  );
  if (!token) throw new TokenError('Entra returned no token');
  return { token: token.token, expiresAt: new Date(token.expiresOnTimestamp) };
}

async function defaultAzureCredential(
  target: Extract<Target, { provider: 'aks' }>,
  authorityHost: string | undefined,
): Promise<TokenCredential> {
  const { DefaultAzureCredential } = await import('@azure/identity');
  return new DefaultAzureCredential({
    // The cluster's tenant may not be the identity's home tenant (a guest or a multi-tenant application).
    additionallyAllowedTenants: ['*'],
    ...(target.tenantId ? { tenantId: target.tenantId } : {}),
    ...(authorityHost ? { authorityHost, disableInstanceDiscovery: true } : {}),
  });
}

/** A short-lived bearer token for the target cluster, from the cloud's usual credential chain. */
export function clusterToken(target: Target, settings: TokenSettings): Promise<ClusterToken> {
  switch (target.provider) {
    case 'eks':
      return eksClusterToken(target, settings);
    case 'gke':
      return gkeClusterToken(settings);
    case 'aks':
      return aksClusterToken(target, settings);
  }
}
