import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ClientSecretCredential } from '@azure/identity';
import { AksSource, enumerateAksScopes } from '../../../../adapters/aks/AksSource.ts';
import type { ObservedCluster } from '../../../../core/domain/model/observedCluster.ts';
import {
  armCredential,
  startArmServer,
  type ArmServer,
  type ManagedClusterJson,
} from '../../../env/fakes/armServer.ts';
import { TEST_CA_DATA, TEST_CA_PEM } from '../../../support/certificates.ts';

const SUB = '00000000-1111-2222-3333-444444444444';
const DENIED = '00000000-0000-0000-0000-00000000dead';
const UNREGISTERED = '00000000-0000-0000-0000-0000000000aa';

function managedCluster(
  name: string,
  group: string,
  properties: Record<string, unknown> = {},
  extra: Partial<ManagedClusterJson> = {},
): ManagedClusterJson {
  return {
    id: `/subscriptions/${SUB}/resourcegroups/${group}/providers/Microsoft.ContainerService/managedClusters/${name}`,
    name,
    location: 'westeurope',
    tags: { team: 'web' },
    systemData: { createdAt: '2024-06-01T08:30:00Z', createdBy: 'someone@example.com' },
    properties: {
      provisioningState: 'Succeeded',
      powerState: { code: 'Running' },
      kubernetesVersion: '1.30',
      currentKubernetesVersion: '1.30.4',
      dnsPrefix: name,
      fqdn: `${name}-dns-abc123.hcp.westeurope.azmk8s.io`,
      azurePortalFQDN: `${name}-portal.hcp.westeurope.azmk8s.io`,
      agentPoolProfiles: [
        {
          name: 'system',
          count: 3,
          vmSize: 'Standard_D4s_v5',
          mode: 'System',
          osType: 'Linux',
          enableAutoScaling: true,
          minCount: 1,
          maxCount: 5,
        },
        { name: 'user', count: 2, vmSize: 'Standard_E8s_v5', mode: 'User', osType: 'Linux' },
      ],
      ...properties,
    },
    ...extra,
  };
}

describe('AKS adapter against a local Azure Resource Manager over TLS', () => {
  let server: ArmServer;
  let credential: ClientSecretCredential;
  const source = (extra: Partial<ConstructorParameters<typeof AksSource>[0]> = {}) =>
    new AksSource({ credential, endpoint: server.endpoint, ...extra });
  const byName = (clusters: ObservedCluster[], name: string) => clusters.find((c) => c.name === name)!;

  before(async () => {
    server = await startArmServer();
    credential = armCredential(server);
    server.clusters.set(SUB, [
      managedCluster('web', 'rg-web'),
      managedCluster('vault', 'rg-sec', {
        fqdn: undefined,
        privateFQDN: 'vault-1a2b.privatelink.westeurope.azmk8s.io',
        apiServerAccessProfile: { enablePrivateCluster: true },
      }),
      managedCluster('batch', 'rg-batch', { powerState: { code: 'Stopped' } }),
      managedCluster('broken', 'rg-batch', {
        provisioningState: 'Failed',
        status: {
          provisioningError: { code: 'VMExtensionProvisioningError', message: 'vm extension failed' },
        },
      }),
      managedCluster('us-east', 'rg-us', {}, { location: 'eastus' }),
    ]);
    server.subscriptions.push(
      { subscriptionId: SUB, displayName: 'prod', state: 'Enabled' },
      { subscriptionId: DENIED, displayName: 'locked', state: 'Warned' },
      { subscriptionId: '00000000-0000-0000-0000-0000000000dd', displayName: 'old', state: 'Disabled' },
    );
  });

  after(async () => server?.stop());

  it('lists every page and extracts every field a profile needs', async () => {
    const listing = await source().listScope({ provider: 'aks', account: SUB, region: '*' });
    assert.equal(listing.outcome.kind, 'complete');
    assert.equal(listing.clusters.length, 5);
    assert.ok(
      server.requests.filter((r) => r.path.endsWith('/managedClusters') && r.query.includes('skiptoken'))
        .length >= 2,
      'followed nextLink',
    );
    const web = byName(listing.clusters, 'web');
    const expected: Record<string, unknown> = {
      provider: 'aks',
      providerId: `/subscriptions/${SUB}/resourcegroups/rg-web/providers/Microsoft.ContainerService/managedClusters/web`,
      name: 'web',
      account: SUB,
      region: 'westeurope',
      resourceGroup: 'rg-web',
      endpoints: [{ url: 'https://web-dns-abc123.hcp.westeurope.azmk8s.io:443', visibility: 'public' }],
      certificateAuthorityData: TEST_CA_DATA,
      kubernetesVersion: '1.30.4',
      health: { status: 'Succeeded', powerState: 'Running', issues: [] },
      nodes: {
        count: 5,
        instanceTypes: ['Standard_D4s_v5', 'Standard_E8s_v5'],
        autoscaling: { min: 3, max: 7 },
      },
      tags: { team: 'web' },
      createdAt: '2024-06-01T08:30:00.000Z',
    };
    for (const [field, value] of Object.entries(expected))
      assert.deepEqual(web[field as keyof ObservedCluster], value, field);
  });

  it('reports a private-only cluster by its private FQDN, a stopped one and a failed one as they are', async () => {
    const listing = await source().listScope({ provider: 'aks', account: SUB, region: '*' });
    assert.deepEqual(byName(listing.clusters, 'vault').endpoints, [
      { url: 'https://vault-1a2b.privatelink.westeurope.azmk8s.io:443', visibility: 'private' },
    ]);
    assert.deepEqual(byName(listing.clusters, 'batch').health, {
      status: 'Succeeded',
      powerState: 'Stopped',
      issues: [],
    });
    assert.deepEqual(byName(listing.clusters, 'broken').health, {
      status: 'Failed',
      powerState: 'Running',
      issues: [{ code: 'VMExtensionProvisioningError', message: 'vm extension failed' }],
    });
  });

  it('filters to one location when the scope names it', async () => {
    const listing = await source().listScope({ provider: 'aks', account: SUB, region: 'eastus' });
    assert.deepEqual(
      listing.clusters.map((c) => c.name),
      ['us-east'],
    );
  });

  it('reads each CA bundle through listClusterUserCredential by default, and keeps nothing else of the kubeconfig', async () => {
    const vault = `/subscriptions/${SUB}/resourcegroups/rg-sec/providers/microsoft.containerservice/managedclusters/vault`;
    const other = Buffer.from(`${TEST_CA_PEM}${TEST_CA_PEM}`).toString('base64');
    server.caData.set(vault, other);
    try {
      const listing = await source().listScope({ provider: 'aks', account: SUB, region: '*' });
      assert.equal(byName(listing.clusters, 'web').certificateAuthorityData, TEST_CA_DATA);
      assert.equal(byName(listing.clusters, 'vault').certificateAuthorityData, other);
      assert.doesNotMatch(JSON.stringify(listing), /local-user-token/);
    } finally {
      server.caData.delete(vault);
    }
  });

  it('lists a cluster whose CA it may not read, says why, and keeps the listing complete', async () => {
    const web = `/subscriptions/${SUB}/resourcegroups/rg-web/providers/microsoft.containerservice/managedclusters/web`;
    server.credentialFailures.set(web, {
      status: 403,
      code: 'AuthorizationFailed',
      message: `The client does not have authorization to perform action 'Microsoft.ContainerService/managedClusters/listClusterUserCredential/action'.`,
    });
    try {
      const listing = await source().listScope({ provider: 'aks', account: SUB, region: '*' });
      assert.equal(listing.outcome.kind, 'complete');
      assert.equal(listing.clusters.length, 5);
      const refused = byName(listing.clusters, 'web');
      assert.equal(refused.certificateAuthorityData, undefined);
      assert.equal(refused.certificateAuthorityUnavailable, 'AccessDenied');
      assert.equal(byName(listing.clusters, 'batch').certificateAuthorityData, TEST_CA_DATA);
    } finally {
      server.credentialFailures.delete(web);
    }
    const unread = await source({ fetchCertificateAuthority: false }).listScope({
      provider: 'aks',
      account: SUB,
      region: '*',
    });
    assert.ok(unread.clusters.every((c) => c.certificateAuthorityUnavailable === 'NotRead'));
    assert.ok(unread.clusters.every((c) => c.certificateAuthorityData === undefined));
  });

  it('reads one cluster (the Event Grid path) without its CA when that read is refused, instead of failing', async () => {
    const web = `/subscriptions/${SUB}/resourcegroups/rg-web/providers/microsoft.containerservice/managedclusters/web`;
    server.credentialFailures.set(web, {
      status: 403,
      code: 'AuthorizationFailed',
      message: 'The client does not have authorization to perform action listClusterUserCredential.',
    });
    try {
      const one = await source().getCluster({
        scope: { provider: 'aks', account: SUB, region: '*' },
        name: 'web',
        resourceGroup: 'rg-web',
      });
      assert.equal(one?.name, 'web');
      assert.equal(one?.certificateAuthorityData, undefined);
      assert.equal(one?.certificateAuthorityUnavailable, 'AccessDenied');
    } finally {
      server.credentialFailures.delete(web);
    }
  });

  it('names the configured tenant for clusters without their own AAD tenant', async () => {
    const tenant = '11111111-2222-4333-8444-555555555555';
    const listing = await source({ tenantId: tenant }).listScope({
      provider: 'aks',
      account: SUB,
      region: '*',
    });
    assert.ok(listing.clusters.every((c) => c.tenantId === tenant));
  });

  it('reads at most perSubscriptionConcurrency CAs of one subscription at once, over all its scopes (default 8)', async () => {
    // A server of its own whose every answer takes 20 ms, so that reads overlap.
    const slow = await startArmServer({ latencyMillis: 20 });
    try {
      const slowCredential = new ClientSecretCredential(slow.tenantId, slow.clientId, slow.clientSecret, {
        authorityHost: slow.endpoint,
        disableInstanceDiscovery: true,
      });
      slow.pageSize = 50;
      slow.clusters.set(
        SUB,
        Array.from({ length: 40 }, (_, i) =>
          managedCluster(`c${i}`, 'rg', {}, { location: i % 2 ? 'eastus' : 'westeurope' }),
        ),
      );
      const listTwoRegions = async (options: Partial<ConstructorParameters<typeof AksSource>[0]>) => {
        const limited = new AksSource({ credential: slowCredential, endpoint: slow.endpoint, ...options });
        slow.peakCredentialReads.clear();
        const listings = await Promise.all(
          ['westeurope', 'eastus'].map((region) =>
            limited.listScope({ provider: 'aks', account: SUB, region }),
          ),
        );
        for (const listing of listings) {
          assert.equal(listing.outcome.kind, 'complete');
          assert.equal(listing.clusters.length, 20);
          assert.ok(listing.clusters.every((c) => c.certificateAuthorityData === TEST_CA_DATA));
        }
        return slow.peakCredentialReads.get(SUB);
      };
      assert.equal(await listTwoRegions({ perSubscriptionConcurrency: 3 }), 3);
      assert.equal(await listTwoRegions({}), 8);
    } finally {
      await slow.stop();
    }
  });

  it('waits out a 429 with Retry-After and completes', async () => {
    server.failures.set(SUB, [
      { status: 429, code: 'TooManyRequests', message: 'Too many requests', retryAfterSeconds: 1 },
    ]);
    const started = Date.now();
    const listing = await source().listScope({ provider: 'aks', account: SUB, region: '*' });
    assert.equal(listing.outcome.kind, 'complete');
    assert.equal(listing.clusters.length, 5);
    assert.ok(Date.now() - started >= 900, 'honoured Retry-After');
  });

  it('classifies AuthorizationFailed, an unregistered subscription and a bad secret as failed scopes', async () => {
    server.failures.set(DENIED, [
      {
        status: 403,
        code: 'AuthorizationFailed',
        message: `The client does not have authorization to perform action 'Microsoft.ContainerService/managedClusters/read' over scope '/subscriptions/${DENIED}'.`,
      },
    ]);
    const denied = await source().listScope({ provider: 'aks', account: DENIED, region: '*' });
    assert.deepEqual(
      [denied.outcome.kind, denied.outcome.failure?.reason, denied.clusters],
      ['failed', 'AccessDenied', []],
    );
    assert.match(denied.outcome.failure!.message, /AuthorizationFailed \(HTTP 403\)/);

    server.failures.set(UNREGISTERED, [
      {
        status: 409,
        code: 'MissingSubscriptionRegistration',
        message: "The subscription is not registered to use namespace 'Microsoft.ContainerService'.",
      },
    ]);
    const unregistered = await source().listScope({ provider: 'aks', account: UNREGISTERED, region: '*' });
    assert.deepEqual(
      [unregistered.outcome.kind, unregistered.outcome.failure?.reason],
      ['failed', 'NotRegistered'],
    );

    const wrong = new ClientSecretCredential(server.tenantId, server.clientId, 'wrong', {
      authorityHost: server.endpoint,
      disableInstanceDiscovery: true,
    });
    const badSecret = await new AksSource({ credential: wrong, endpoint: server.endpoint }).listScope({
      provider: 'aks',
      account: SUB,
      region: '*',
    });
    assert.deepEqual([badSecret.outcome.kind, badSecret.outcome.failure?.reason], ['failed', 'AccessDenied']);
  });

  it('finds the subscriptions the identity can use', async () => {
    const scopes = await enumerateAksScopes(source(), { all: true });
    assert.deepEqual(
      scopes,
      [
        { provider: 'aks', account: SUB, region: '*' },
        { provider: 'aks', account: DENIED, region: '*' },
      ].sort((a, b) => a.account.localeCompare(b.account)),
    );
  });
});
