/**
 * Table tests of the cloud mappers (adapters/<cloud>/mapCluster.ts): each row a payload as the cloud's
 * API answers it, and the fields of the ObservedCluster it must become; then the provider-id matchers
 * the event-triggered syncs rely on, each with the spellings the clouds use.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { isAksResourceId, mapAksCluster, resourceGroupOf } from '../../../adapters/aks/mapCluster.ts';
import { isEksClusterArn, mapEksCluster } from '../../../adapters/eks/mapCluster.ts';
import { isGkeSelfLink, mapGkeCluster } from '../../../adapters/gke/mapCluster.ts';
import type { ObservedCluster } from '../../../core/domain/model/observedCluster.ts';

type Expected = Partial<ObservedCluster>;

function expectFields(actual: ObservedCluster, expected: Expected) {
  for (const [field, value] of Object.entries(expected))
    assert.deepEqual(actual[field as keyof ObservedCluster], value, field);
}

const ARN = 'arn:aws:eks:eu-west-1:111122223333:cluster/payments';

describe('EKS mapper (DescribeCluster + DescribeNodegroup answers)', () => {
  const rows: Array<[string, Parameters<typeof mapEksCluster>, Expected]> = [
    [
      'a public cluster with two fixed node groups',
      [
        {
          name: 'payments',
          arn: ARN,
          endpoint: 'https://ABC.gr7.eu-west-1.eks.amazonaws.com/',
          version: '1.31',
          platformVersion: 'eks.12',
          status: 'ACTIVE',
          certificateAuthority: { data: 'Q0E=' },
          tags: { team: 'pay' },
          createdAt: new Date('2025-01-02T03:04:05Z'),
        },
        [
          { scalingConfig: { minSize: 2, maxSize: 2, desiredSize: 2 }, instanceTypes: ['m6i.large'] },
          { scalingConfig: { minSize: 1, maxSize: 1, desiredSize: 1 }, instanceTypes: ['c6i.xlarge'] },
        ],
        '111122223333',
        'eu-west-1',
      ],
      {
        providerId: ARN,
        name: 'payments',
        region: 'eu-west-1',
        endpoints: [{ url: 'https://ABC.gr7.eu-west-1.eks.amazonaws.com', visibility: 'public' }],
        certificateAuthorityData: 'Q0E=',
        kubernetesVersion: '1.31',
        platformVersion: 'eks.12',
        nodes: { count: 3, instanceTypes: ['m6i.large', 'c6i.xlarge'] },
        tags: { team: 'pay' },
        createdAt: '2025-01-02T03:04:05.000Z',
      },
    ],
    [
      'a private-only endpoint, an autoscaling group and health issues',
      [
        {
          name: 'private',
          arn: ARN,
          endpoint: 'https://XYZ.eks.amazonaws.com',
          status: 'ACTIVE',
          resourcesVpcConfig: { endpointPublicAccess: false, endpointPrivateAccess: true },
          health: { issues: [{ code: 'Ec2SubnetNotFound', message: 'gone' }] },
        },
        [{ scalingConfig: { minSize: 1, maxSize: 5, desiredSize: 2 }, instanceTypes: ['t3.large'] }],
        '111122223333',
        'eu-west-1',
      ],
      {
        endpoints: [{ url: 'https://XYZ.eks.amazonaws.com', visibility: 'private' }],
        health: { status: 'ACTIVE', issues: [{ code: 'Ec2SubnetNotFound', message: 'gone' }] },
        nodes: { count: 2, instanceTypes: ['t3.large'], autoscaling: { min: 1, max: 5 } },
      },
    ],
    [
      'a cluster still being created: no endpoint, no version, no node groups',
      [{ name: 'new', arn: ARN, status: 'CREATING' }, [], '111122223333', 'eu-west-1'],
      { endpoints: [], nodes: { instanceTypes: [] }, health: { status: 'CREATING', issues: [] }, tags: {} },
    ],
    [
      'an active cluster whose node groups are being created, updated and deleted (named, for the follow-up)',
      [
        { name: 'busy', arn: ARN, status: 'ACTIVE' },
        [
          { nodegroupName: 'workers', status: 'UPDATING', instanceTypes: ['m6i.large'] },
          { nodegroupName: 'spot', status: 'CREATING', instanceTypes: [] },
          { nodegroupName: 'old', status: 'DELETING' },
          { nodegroupName: 'steady', status: 'ACTIVE' },
          { nodegroupName: 'broken', status: 'CREATE_FAILED' },
        ],
        '111122223333',
        'eu-west-1',
      ],
      {
        nodes: {
          instanceTypes: ['m6i.large'],
          inChange: ['workers UPDATING', 'spot CREATING', 'old DELETING'],
        },
      },
    ],
  ];
  for (const [name, args, expected] of rows)
    it(name, () => expectFields(mapEksCluster(...args), { provider: 'eks', account: args[2], ...expected }));
});

describe('GKE mapper (projects.locations.clusters answers)', () => {
  const selfLink = 'https://container.googleapis.com/v1/projects/acme-data/zones/us-central1-a/clusters/ml';
  const rows: Array<[string, Parameters<typeof mapGkeCluster>[0], Expected]> = [
    [
      'a zonal cluster: region from its zone, public endpoint, counted nodes',
      {
        name: 'ml',
        selfLink,
        location: 'us-central1-a',
        endpoint: '34.1.2.3',
        currentMasterVersion: '1.30.5-gke.1014001',
        status: 'RUNNING' as never,
        currentNodeCount: 3,
        masterAuth: { clusterCaCertificate: 'Q0E=' },
        nodePools: [{ config: { machineType: 'e2-standard-4' }, initialNodeCount: 3 }],
        resourceLabels: { env: 'prod' },
      },
      {
        providerId: selfLink,
        region: 'us-central1',
        zone: 'us-central1-a',
        endpoints: [{ url: 'https://34.1.2.3', visibility: 'public' }],
        kubernetesVersion: '1.30.5-gke.1014001',
        certificateAuthorityData: 'Q0E=',
        nodes: { count: 3, instanceTypes: ['e2-standard-4'] },
        tags: { env: 'prod' },
      },
    ],
    [
      'a regional private cluster with a DNS endpoint and an autoscaling pool over three zones',
      {
        name: 'core',
        location: 'europe-west4',
        endpoint: '10.0.0.2',
        privateClusterConfig: { enablePrivateEndpoint: true, privateEndpoint: '10.0.0.2' },
        controlPlaneEndpointsConfig: {
          dnsEndpointConfig: { endpoint: 'gke-abc.europe-west4.gke.goog', allowExternalTraffic: true },
        },
        nodePools: [
          {
            locations: ['europe-west4-a', 'europe-west4-b', 'europe-west4-c'],
            initialNodeCount: 1,
            autoscaling: { enabled: true, minNodeCount: 1, maxNodeCount: 3 },
            config: { machineType: 'n2-standard-8' },
          },
        ],
      },
      {
        providerId:
          'https://container.googleapis.com/v1/projects/acme-data/locations/europe-west4/clusters/core',
        region: 'europe-west4',
        endpoints: [
          { url: 'https://10.0.0.2', visibility: 'private' },
          { url: 'https://gke-abc.europe-west4.gke.goog', visibility: 'public' },
        ],
        nodes: { count: 3, instanceTypes: ['n2-standard-8'], autoscaling: { min: 3, max: 9 } },
      },
    ],
  ];
  for (const [name, cluster, expected] of rows)
    it(name, () =>
      expectFields(mapGkeCluster(cluster, 'acme-data'), {
        provider: 'gke',
        account: 'acme-data',
        ...expected,
      }),
    );
});

describe('AKS mapper (managedClusters answers)', () => {
  const SUB = '00000000-0000-0000-0000-0000000000aa';
  const id = `/subscriptions/${SUB}/resourceGroups/rg-Web/providers/Microsoft.ContainerService/managedClusters/web`;
  /** `web` in power state `power`, with pools of 2 and 3 nodes in the power states given. */
  const twoPools = (power: string, first: string, second: string) =>
    ({
      id,
      name: 'web',
      location: 'westeurope',
      provisioningState: 'Succeeded',
      powerState: { code: power },
      agentPoolProfiles: [
        { name: 'sys', count: 2, vmSize: 'Standard_D4s_v5', powerState: { code: first } },
        { name: 'user', count: 3, vmSize: 'Standard_E8s_v5', powerState: { code: second } },
      ],
    }) as never;
  /** What `twoPools` maps to: `running` nodes of the 5 configured. */
  const twoPoolsObserved = (power: string, running: number): Expected => ({
    endpoints: [],
    health: { status: 'Succeeded', powerState: power, issues: [] },
    nodes: { count: running, configured: 5, instanceTypes: ['Standard_D4s_v5', 'Standard_E8s_v5'] },
  });
  const rows: Array<[string, Parameters<typeof mapAksCluster>[0], Expected]> = [
    [
      'a running cluster with public and private FQDNs and an autoscaling pool',
      {
        id,
        name: 'web',
        location: 'westeurope',
        fqdn: 'web-abc.hcp.westeurope.azmk8s.io',
        privateFqdn: 'web-abc.privatelink.westeurope.azmk8s.io',
        currentKubernetesVersion: '1.31.2',
        provisioningState: 'Succeeded',
        powerState: { code: 'Running' },
        agentPoolProfiles: [
          {
            name: 'sys',
            count: 2,
            vmSize: 'Standard_D4s_v5',
            enableAutoScaling: true,
            minCount: 1,
            maxCount: 4,
          },
          { name: 'user', count: 3, vmSize: 'Standard_E8s_v5' },
        ],
        tags: { team: 'web' },
        aadProfile: { managed: true, tenantID: '72f988bf-86f1-41af-91ab-2d7cd011db47' },
      } as never,
      {
        providerId: id,
        tenantId: '72f988bf-86f1-41af-91ab-2d7cd011db47',
        resourceGroup: 'rg-Web',
        region: 'westeurope',
        endpoints: [
          { url: 'https://web-abc.hcp.westeurope.azmk8s.io:443', visibility: 'public' },
          { url: 'https://web-abc.privatelink.westeurope.azmk8s.io:443', visibility: 'private' },
        ],
        kubernetesVersion: '1.31.2',
        health: { status: 'Succeeded', powerState: 'Running', issues: [] },
        nodes: {
          count: 5,
          instanceTypes: ['Standard_D4s_v5', 'Standard_E8s_v5'],
          autoscaling: { min: 4, max: 7 },
        },
        tags: { team: 'web' },
      },
    ],
    [
      'a stopped cluster whose provisioning failed',
      {
        id,
        name: 'web',
        location: 'westeurope',
        kubernetesVersion: '1.30',
        provisioningState: 'Failed',
        powerState: { code: 'Stopped' },
        status: { provisioningError: { code: 'QuotaExceeded', message: 'no cores' } },
      } as never,
      {
        kubernetesVersion: '1.30',
        endpoints: [],
        health: {
          status: 'Failed',
          powerState: 'Stopped',
          issues: [{ code: 'QuotaExceeded', message: 'no cores' }],
        },
        nodes: { instanceTypes: [] },
      },
    ],
    [
      'a stopped cluster runs no node; its pools keep their configured count, shown beside it',
      twoPools('Stopped', 'Stopped', 'Stopped'),
      twoPoolsObserved('Stopped', 0),
    ],
    [
      'a running cluster with one pool stopped counts the nodes of the others',
      twoPools('Running', 'Running', 'Stopped'),
      twoPoolsObserved('Running', 2),
    ],
  ];
  for (const [name, cluster, expected] of rows)
    it(name, () => expectFields(mapAksCluster(cluster, SUB), { provider: 'aks', account: SUB, ...expected }));

  it('reads the resource group of any ARM id spelling', () => {
    assert.equal(resourceGroupOf(id), 'rg-Web');
    assert.equal(resourceGroupOf(id.toLowerCase()), 'rg-web');
    assert.equal(resourceGroupOf('/subscriptions/x/providers/y'), undefined);
  });
});

describe('provider-id matchers (what a cloud event names, against the profiles cpsync wrote)', () => {
  const rows: Array<[string, boolean, boolean]> = [
    ['EKS: the same ARN', isEksClusterArn(ARN, '111122223333', 'eu-west-1', 'payments'), true],
    [
      'EKS: a cluster named alike but for case (EKS names are case-sensitive: another cluster)',
      isEksClusterArn(ARN, '111122223333', 'eu-west-1', 'Payments'),
      false,
    ],
    [
      'EKS: the ARN in another case',
      isEksClusterArn(ARN.toUpperCase(), '111122223333', 'EU-WEST-1', 'PAYMENTS'),
      false,
    ],
    [
      'EKS: the same ARN in another partition',
      isEksClusterArn(ARN.replace('arn:aws:', 'arn:aws-cn:'), '111122223333', 'eu-west-1', 'payments'),
      true,
    ],
    [
      'EKS: the same name in another region',
      isEksClusterArn(ARN, '111122223333', 'us-east-1', 'payments'),
      false,
    ],
    [
      'EKS: the same name in another account',
      isEksClusterArn(ARN, '444455556666', 'eu-west-1', 'payments'),
      false,
    ],
    [
      'EKS: a name that only ends the same',
      isEksClusterArn(ARN, '111122223333', 'eu-west-1', 'ments'),
      false,
    ],
    [
      'GKE: zones/ and locations/ spellings of a zonal cluster',
      isGkeSelfLink(
        'https://container.googleapis.com/v1/projects/acme-data/zones/us-central1-a/clusters/ml',
        'acme-data',
        'us-central1-a',
        'ml',
      ) &&
        isGkeSelfLink(
          'https://container.googleapis.com/v1/projects/acme-data/locations/us-central1-a/clusters/ml',
          'acme-data',
          'us-central1-a',
          'ml',
        ),
      true,
    ],
    [
      'GKE: another location of the same name',
      isGkeSelfLink(
        'https://container.googleapis.com/v1/projects/acme-data/locations/europe-west4/clusters/ml',
        'acme-data',
        'us-central1',
        'ml',
      ),
      false,
    ],
    [
      'AKS: the resource id in ARM’s other casing',
      isAksResourceId(
        '/subscriptions/S/resourcegroups/RG-WEB/providers/microsoft.containerservice/managedClusters/WEB',
        's',
        'rg-web',
        'web',
      ),
      true,
    ],
    [
      'AKS: another resource group',
      isAksResourceId(
        '/subscriptions/s/resourceGroups/rg-other/providers/Microsoft.ContainerService/managedClusters/web',
        's',
        'rg-web',
        'web',
      ),
      false,
    ],
  ];
  for (const [name, actual, expected] of rows) it(name, () => assert.equal(actual, expected));

  it("EKS: an ARN names a cluster only when its account, region and name are that cluster's exactly, whatever the spelling (property)", () => {
    const name = fc.stringMatching(/^[0-9A-Za-z][A-Za-z0-9_-]{0,20}$/);
    const account = fc.stringMatching(/^\d{12}$/);
    const region = fc.constantFrom('us-east-1', 'eu-west-1', 'ap-southeast-2');
    /** The same text with some letters' case flipped (every flip a name EKS may hold beside the first). */
    const respelled = (text: string, flips: boolean[]) =>
      [...text]
        .map((c, i) =>
          flips[i % flips.length] ? (c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase()) : c,
        )
        .join('');
    fc.assert(
      fc.property(
        fc.record({ name, account, region, partition: fc.constantFrom('aws', 'aws-cn', 'aws-us-gov') }),
        fc.record({ name, account, region }),
        fc.array(fc.boolean(), { minLength: 1, maxLength: 8 }),
        fc.constantFrom('own', 'respelled', 'other'),
        (cluster, other, flips, kind) => {
          const arn = `arn:${cluster.partition}:eks:${cluster.region}:${cluster.account}:cluster/${cluster.name}`;
          const asked =
            kind === 'own'
              ? cluster
              : kind === 'respelled'
                ? { ...cluster, name: respelled(cluster.name, flips) }
                : other;
          const same =
            asked.name === cluster.name &&
            asked.account === cluster.account &&
            asked.region === cluster.region;
          assert.equal(isEksClusterArn(arn, asked.account, asked.region, asked.name), same);
        },
      ),
      { numRuns: 500 },
    );
  });
});
