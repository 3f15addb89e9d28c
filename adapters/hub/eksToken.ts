import { Sha256 } from '@aws-crypto/sha256-js';
import { HttpRequest } from '@smithy/protocol-http';
import { SignatureV4 } from '@smithy/signature-v4';
import type { AwsCredentialIdentity, AwsCredentialIdentityProvider } from '@smithy/types';

/** How long an EKS token is accepted after it is made (the presigned URL's lifetime). */
export const TOKEN_LIFETIME_SECONDS = 60;
/** EKS accepts a token for 15 minutes; cpsync makes a new one well before. */
export const TOKEN_REFRESH_MILLIS = 10 * 60 * 1000;

export interface EksTokenOptions {
  clusterName: string;
  region: string;
  credentials: AwsCredentialIdentity | AwsCredentialIdentityProvider;
  /** @default the STS regional endpoint, in the region's partition (`sts.cn-north-1.amazonaws.com.cn`) */
  stsEndpoint?: string;
  /** @default now */
  signingDate?: Date;
}

/**
 * A bearer token for an EKS cluster, made in-process the way `aws eks get-token` makes it: a presigned
 * STS GetCallerIdentity URL carrying the cluster name in the signed `x-k8s-aws-id` header, base64url
 * encoded behind `k8s-aws-v1.`. It holds no secret beyond a short-lived signature.
 */
export async function eksToken(options: EksTokenOptions): Promise<string> {
  const endpoint = new URL(options.stsEndpoint ?? (await regionalSts(options.region)));
  const request = new HttpRequest({
    method: 'GET',
    protocol: endpoint.protocol,
    hostname: endpoint.hostname,
    ...(endpoint.port ? { port: Number(endpoint.port) } : {}),
    path: '/',
    query: { Action: 'GetCallerIdentity', Version: '2011-06-15' },
    headers: { host: endpoint.host, 'x-k8s-aws-id': options.clusterName },
  });
  const signer = new SignatureV4({
    credentials: options.credentials,
    region: options.region,
    service: 'sts',
    sha256: Sha256,
  });
  const signed = await signer.presign(request, {
    expiresIn: TOKEN_LIFETIME_SECONDS,
    ...(options.signingDate ? { signingDate: options.signingDate } : {}),
  });
  const query = Object.entries(signed.query ?? {})
    .map(([key, value]) => `${encodeURIComponent(key)}=${encodeURIComponent(String(value))}`)
    .join('&');
  const url = `${endpoint.protocol}//${endpoint.host}/?${query}`;
  return `k8s-aws-v1.${Buffer.from(url).toString('base64url')}`;
}

/** The STS endpoint of `region`, in its partition's domain (`sts.cn-north-1.amazonaws.com.cn`). */
async function regionalSts(region: string): Promise<string> {
  // Loaded when a token is made: the partition table is the AWS SDK's, which a GKE or AKS run never needs.
  const { awsPartitionOf } = await import('../shared/awsPartition.ts');
  return `https://sts.${region}.${awsPartitionOf(region).dnsSuffix}/`;
}
