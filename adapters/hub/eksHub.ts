/** An EKS cluster as the hub: endpoint and CA from DescribeCluster, an IAM-signed token renewed before it expires. */
import { DescribeClusterCommand, EKSClient } from '@aws-sdk/client-eks';
import type { KubeConfig } from '@kubernetes/client-node';
import type { AwsCredentialIdentityProvider } from '@smithy/types';
import { HubError } from './errors.ts';
import { eksToken } from './eksToken.ts';
import { awsProxyConfig } from '../shared/proxy.ts';

export interface EksHubOptions {
  clusterName: string;
  region: string;
  /** EKS API endpoint (local emulators). */
  endpoint?: string;
  /** STS endpoint the token is signed for. */
  stsEndpoint?: string;
}

/** A KubeConfig for an EKS cluster with a fresh IAM token. */
export async function eksHubKubeConfig(
  hub: EksHubOptions,
  credentials?: AwsCredentialIdentityProvider,
): Promise<KubeConfig> {
  const eks = new EKSClient({
    region: hub.region,
    ...(hub.endpoint ? { endpoint: hub.endpoint } : {}),
    ...(credentials ? { credentials } : {}),
    ...awsProxyConfig(),
  });
  const { cluster } = await eks.send(new DescribeClusterCommand({ name: hub.clusterName }));
  if (!cluster?.endpoint)
    throw new HubError(
      'connect to',
      `EKS cluster ${hub.clusterName}`,
      `it has no endpoint (status ${cluster?.status ?? 'unknown'})`,
    );
  const token = await eksToken({
    clusterName: hub.clusterName,
    region: hub.region,
    credentials: credentials ?? eks.config.credentials,
    ...(hub.stsEndpoint ? { stsEndpoint: hub.stsEndpoint } : {}),
  });
  // The Kubernetes client is large: loaded when an EKS hub is used, through the module that names what cpsync
  // uses of it (importing the package's namespace whole would keep every API of it in the bundle).
  const { KubeConfig } = await import('./kubernetes.ts');
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
