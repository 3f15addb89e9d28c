import { TEST_CA_DATA } from './certificates.ts';
import { documentedPartitionOf } from './awsPartitions.ts';
import type { Consumer } from '../../core/domain/grants.ts';
import type { ClusterProfile } from '../../core/domain/model/clusterProfile.ts';
import type { ObservedCluster } from '../../core/domain/model/observedCluster.ts';

/** An EKS cluster as the EKS adapter reports it; override any field. */
export function eksCluster(overrides: Partial<ObservedCluster> = {}): ObservedCluster {
  const name = overrides.name ?? 'payments';
  const account = overrides.account ?? '111122223333';
  const region = overrides.region ?? 'us-east-1';
  return {
    provider: 'eks',
    providerId: `arn:${documentedPartitionOf(region).name}:eks:${region}:${account}:cluster/${name}`,
    name,
    account,
    region,
    endpoints: [
      {
        url: `https://${name.toUpperCase()}1234.gr7.${region}.eks.${documentedPartitionOf(region).dnsSuffix}`,
        visibility: 'public',
      },
    ],
    certificateAuthorityData: TEST_CA_DATA,
    kubernetesVersion: '1.31',
    platformVersion: 'eks.12',
    health: { status: 'ACTIVE', issues: [] },
    nodes: { count: 6, instanceTypes: ['m6i.large', 'm6i.large', 'c6i.xlarge'] },
    tags: { team: 'payments', env: 'prod' },
    createdAt: '2024-05-01T10:00:00Z',
    ...overrides,
  };
}

/** A GKE cluster (regional unless `zone` is given). */
export function gkeCluster(overrides: Partial<ObservedCluster> = {}): ObservedCluster {
  const name = overrides.name ?? 'analytics';
  const account = overrides.account ?? 'acme-data';
  const location = overrides.zone ?? overrides.region ?? 'europe-west1';
  return {
    provider: 'gke',
    providerId: `https://container.googleapis.com/v1/projects/${account}/locations/${location}/clusters/${name}`,
    name,
    account,
    region: 'europe-west1',
    endpoints: [
      { url: 'https://34.76.10.20', visibility: 'public' },
      { url: 'https://10.0.0.2', visibility: 'private' },
    ],
    certificateAuthorityData: TEST_CA_DATA,
    kubernetesVersion: '1.30.5-gke.1014001',
    health: { status: 'RUNNING', issues: [] },
    nodes: { count: 9, instanceTypes: ['e2-standard-4'] },
    tags: { team: 'data' },
    ...overrides,
  };
}

/** An AKS cluster. */
export function aksCluster(overrides: Partial<ObservedCluster> = {}): ObservedCluster {
  const name = overrides.name ?? 'web';
  const account = overrides.account ?? '00000000-1111-2222-3333-444444444444';
  const group = overrides.resourceGroup ?? 'rg-web';
  return {
    provider: 'aks',
    providerId: `/subscriptions/${account}/resourceGroups/${group}/providers/Microsoft.ContainerService/managedClusters/${name}`,
    name,
    account,
    region: 'westeurope',
    resourceGroup: group,
    endpoints: [{ url: `https://${name}-dns-abc123.hcp.westeurope.azmk8s.io:443`, visibility: 'public' }],
    kubernetesVersion: '1.30.4',
    health: { status: 'Succeeded', powerState: 'Running', issues: [] },
    nodes: { count: 3, instanceTypes: ['Standard_D4s_v5'] },
    tags: { team: 'web' },
    ...overrides,
  };
}

export const NOW = '2026-01-01T00:00:00Z';
export const LATER = '2026-01-01T00:15:00Z';

/**
 * `count` profiles as cpsync writes them, spread over the three clouds, 100 accounts each and a few
 * versions (every 50th unhealthy): an inventory of any size for the report and its bench.
 */
export async function syntheticProfiles(count: number) {
  const { normalize } = await import('../../core/domain/normalize.ts');
  const { inventoryOptions } = await import('./settings.ts');
  const options = inventoryOptions();
  const makers = [eksCluster, gkeCluster, aksCluster];
  return Array.from({ length: count }, (_, i) => {
    const make = makers[i % 3]!;
    const profile = normalize(
      make({
        name: `svc-${i.toString(36)}`,
        account: make === eksCluster ? String(100000000000 + (i % 100)) : `account-${i % 100}`,
        kubernetesVersion: `1.${29 + (i % 4)}.${i % 7}`,
        ...(i % 50 === 0 ? { health: { status: 'FAILED', issues: [] } } : {}),
      }),
      options,
      '2026-11-01T12:00:00Z',
    );
    profile.metadata.namespace = 'inventory';
    return profile;
  });
}

/** A copy of `profile` whose access provider reaches its member at `server` (with `caData`, when given). */
export function reachingMember(profile: ClusterProfile, server: string, caData?: string): ClusterProfile {
  const copy = structuredClone(profile);
  const [access] = copy.status!.accessProviders!;
  access!.cluster = {
    ...access!.cluster,
    server,
    ...(caData === undefined ? {} : { 'certificate-authority-data': caData }),
  };
  return copy;
}

/** A consumer's Google identity (a service account) in the grants' tests. */
export const GOOGLE_DEPLOYER = 'deployer@consumers.iam.gserviceaccount.com';
/** A consumer reading `cluster-inventory` with view, known to GKE by its Google identity alone. */
export const gkeDeployer: Consumer = {
  name: 'deployer',
  namespaces: ['cluster-inventory'],
  level: 'view',
  identities: { gke: GOOGLE_DEPLOYER },
};
