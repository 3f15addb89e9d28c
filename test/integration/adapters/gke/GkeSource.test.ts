import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { classifyGoogleError } from '../../../../adapters/gke/classify.ts';
import { enumerateGkeScopes, GkeSource } from '../../../../adapters/gke/GkeSource.ts';
import { messageOf } from '../../../../core/domain/errors.ts';
import type { ObservedCluster } from '../../../../core/domain/model/observedCluster.ts';
import {
  startGkeServer,
  type GkeClusterJson,
  type GkeServer,
  type GoogleError as GoogleErrorJson,
} from '../../../env/fakes/gkeServer.ts';
import { TEST_CA_DATA } from '../../../support/certificates.ts';

const CA = TEST_CA_DATA;

function cluster(
  project: string,
  name: string,
  location: string,
  extra: Record<string, unknown> = {},
): GkeClusterJson {
  const kind = /-[a-z]$/.test(location) ? 'zones' : 'locations';
  return {
    name,
    location,
    locations: [`${location.replace(/-[a-z]$/, '')}-b`],
    selfLink: `https://container.googleapis.com/v1/projects/${project}/${kind}/${location}/clusters/${name}`,
    id: `${name}-0123456789abcdef`,
    endpoint: '34.76.10.20',
    masterAuth: { clusterCaCertificate: CA },
    currentMasterVersion: '1.30.5-gke.1014001',
    currentNodeVersion: '1.30.5-gke.1014001',
    status: 2,
    conditions: [],
    currentNodeCount: 9,
    nodePools: [
      {
        name: 'default-pool',
        config: { machineType: 'e2-standard-4' },
        initialNodeCount: 3,
        locations: ['a', 'b', 'c'],
        autoscaling: { enabled: true, minNodeCount: 1, maxNodeCount: 5 },
        status: 2,
      },
      {
        name: 'highmem',
        config: { machineType: 'n2-highmem-8' },
        initialNodeCount: 0,
        locations: ['a'],
        autoscaling: { enabled: true, minNodeCount: 0, maxNodeCount: 3 },
        status: 2,
      },
    ],
    resourceLabels: { team: 'data', env: 'prod' },
    createTime: '2024-03-01T09:00:00+00:00',
    ...extra,
  };
}

describe('GKE adapter against a local server speaking the GKE REST shapes', () => {
  let server: GkeServer;
  let source: GkeSource;

  before(async () => {
    server = await startGkeServer();
    server.clusters.set('acme-data', [
      cluster('acme-data', 'analytics', 'europe-west1'),
      cluster('acme-data', 'edge', 'europe-west1-c', {
        currentNodeCount: 2,
        status: 6,
        conditions: [{ code: 'GCE_STOCKOUT', message: 'no e2 capacity', canonicalCode: 8 }],
      }),
      cluster('acme-data', 'vault', 'us-central1', {
        endpoint: '10.10.0.2',
        privateClusterConfig: {
          enablePrivateNodes: true,
          enablePrivateEndpoint: true,
          privateEndpoint: '10.10.0.2',
          publicEndpoint: '35.1.2.3',
        },
      }),
      cluster('acme-data', 'mixed', 'us-east1', {
        privateClusterConfig: {
          enablePrivateNodes: true,
          enablePrivateEndpoint: false,
          privateEndpoint: '10.20.0.2',
          publicEndpoint: '34.76.10.20',
        },
      }),
    ]);
    server.clusters.set('acme-web', [cluster('acme-web', 'web', 'us-central1')]);
    server.missingZones.set('acme-web', ['us-central1-f']);
    server.clusters.set('acme-busy', [cluster('acme-busy', 'busy', 'asia-east1')]);
    server.projects.push(
      { projectId: 'acme-data', state: 1, parent: 'folders/100' },
      { projectId: 'acme-web', state: 1, parent: 'folders/100' },
      { projectId: 'acme-old', state: 2, parent: 'folders/100' },
      { projectId: 'acme-other', state: 1, parent: 'folders/200' },
    );
    source = new GkeSource({
      endpoint: server.endpoint,
      credentials: server.serviceAccountKey,
      maxRetries: 3,
    });
  });

  after(async () => {
    await source?.close();
    await server?.stop();
  });

  const byName = (clusters: ObservedCluster[], name: string) => clusters.find((c) => c.name === name)!;

  it('lists every location of a project at once and extracts every field a profile needs', async () => {
    const listing = await source.listScope({ provider: 'gke', account: 'acme-data', region: '*' });
    assert.equal(listing.outcome.kind, 'complete');
    assert.deepEqual(server.requests.at(-1), {
      method: 'GET',
      path: '/v1/projects/acme-data/locations/-/clusters',
    });
    const analytics = byName(listing.clusters, 'analytics');
    const expected: Record<string, unknown> = {
      provider: 'gke',
      providerId:
        'https://container.googleapis.com/v1/projects/acme-data/locations/europe-west1/clusters/analytics',
      name: 'analytics',
      account: 'acme-data',
      region: 'europe-west1',
      zone: undefined,
      endpoints: [{ url: 'https://34.76.10.20', visibility: 'public' }],
      certificateAuthorityData: CA,
      kubernetesVersion: '1.30.5-gke.1014001',
      health: { status: 'RUNNING', issues: [] },
      nodes: { count: 9, instanceTypes: ['e2-standard-4', 'n2-highmem-8'], autoscaling: { min: 3, max: 18 } },
      tags: { team: 'data', env: 'prod' },
      createdAt: '2024-03-01T09:00:00.000Z',
    };
    for (const [field, value] of Object.entries(expected))
      assert.deepEqual(analytics[field as keyof ObservedCluster], value, field);
  });

  it('tells a zonal cluster from a regional one and carries its conditions', async () => {
    const listing = await source.listScope({ provider: 'gke', account: 'acme-data', region: '*' });
    const edge = byName(listing.clusters, 'edge');
    assert.equal(edge.zone, 'europe-west1-c');
    assert.equal(edge.region, 'europe-west1');
    assert.equal(
      edge.providerId,
      'https://container.googleapis.com/v1/projects/acme-data/zones/europe-west1-c/clusters/edge',
    );
    assert.equal(edge.health.status, 'DEGRADED');
    assert.deepEqual(edge.health.issues, [{ code: 'GCE_STOCKOUT', message: 'no e2 capacity' }]);
    assert.equal(edge.nodes.count, 2);
  });

  it('reports a private cluster by its private endpoint only, and both endpoints when public access stays on', async () => {
    const listing = await source.listScope({ provider: 'gke', account: 'acme-data', region: '*' });
    assert.deepEqual(byName(listing.clusters, 'vault').endpoints, [
      { url: 'https://10.10.0.2', visibility: 'private' },
    ]);
    assert.deepEqual(byName(listing.clusters, 'mixed').endpoints, [
      { url: 'https://34.76.10.20', visibility: 'public' },
      { url: 'https://10.20.0.2', visibility: 'private' },
    ]);
  });

  it('makes a listing with missingZones partial, keeping what it did list', async () => {
    const listing = await source.listScope({ provider: 'gke', account: 'acme-web', region: '*' });
    assert.equal(listing.outcome.kind, 'partial');
    assert.deepEqual(listing.outcome.missing, ['us-central1-f']);
    assert.deepEqual(
      listing.clusters.map((c) => c.name),
      ['web'],
    );
  });

  it('lists a region scope with the zonal clusters of its zones, and only its own missing zones', async () => {
    const region = await source.listScope({ provider: 'gke', account: 'acme-data', region: 'europe-west1' });
    assert.equal(region.outcome.kind, 'complete');
    assert.deepEqual(region.clusters.map((c) => c.name).sort(), ['analytics', 'edge']);
    const web = await source.listScope({ provider: 'gke', account: 'acme-web', region: 'us-central1' });
    assert.deepEqual([web.outcome.kind, web.outcome.missing], ['partial', ['us-central1-f']]);
    const elsewhere = await source.listScope({
      provider: 'gke',
      account: 'acme-web',
      region: 'europe-west1',
    });
    assert.deepEqual([elsewhere.outcome.kind, elsewhere.clusters], ['complete', []]);
  });

  it('classifies 403 PERMISSION_DENIED as AccessDenied and a disabled API as ApiNotEnabled', async () => {
    server.failures.set('acme-locked', [
      {
        status: 403,
        code: 'PERMISSION_DENIED',
        message: "Required 'container.clusters.list' permission for 'projects/acme-locked'.",
      },
    ]);
    const denied = await source.listScope({ provider: 'gke', account: 'acme-locked', region: '*' });
    assert.deepEqual(
      [denied.outcome.kind, denied.outcome.failure?.reason, denied.clusters],
      ['failed', 'AccessDenied', []],
    );
    assert.match(denied.outcome.failure!.message, /container\.clusters\.list/);

    server.failures.set('acme-new', [
      {
        status: 403,
        code: 'PERMISSION_DENIED',
        reason: 'SERVICE_DISABLED',
        message: 'Kubernetes Engine API has not been used in project 4242 before or it is disabled.',
      },
    ]);
    const disabled = await source.listScope({ provider: 'gke', account: 'acme-new', region: '*' });
    assert.deepEqual([disabled.outcome.kind, disabled.outcome.failure?.reason], ['failed', 'ApiNotEnabled']);
  });

  it("names an answer that is not the API's JSON (a proxy's HTML page) InvalidResponse, not a timeout", async () => {
    const page = {
      status: 200,
      code: 'OK',
      message: '',
      raw: '<html><body>Gateway says hello</body></html>',
    };
    server.failures.set(
      'acme-proxied',
      Array.from({ length: 10 }, () => page),
    );
    const listing = await source.listScope({ provider: 'gke', account: 'acme-proxied', region: '*' });
    server.failures.delete('acme-proxied');
    assert.deepEqual(
      [listing.outcome.kind, listing.outcome.failure?.reason, listing.clusters],
      ['failed', 'InvalidResponse', []],
    );
    assert.match(listing.outcome.failure!.message, /not valid JSON/);
  });

  it('retries 429 answers with the client backoff, and fails the scope as Throttled when they outlast the retries', async () => {
    const quota = {
      status: 429,
      code: 'RESOURCE_EXHAUSTED',
      message: 'Quota exceeded for quota metric ListClusters',
    };
    server.failures.set('acme-busy', [quota, quota]);
    const recovered = await source.listScope({ provider: 'gke', account: 'acme-busy', region: '*' });
    assert.equal(recovered.outcome.kind, 'complete');
    assert.deepEqual(
      recovered.clusters.map((c) => c.name),
      ['busy'],
    );

    server.failures.set(
      'acme-busy',
      Array.from({ length: 10 }, () => quota),
    );
    const asked = () => server.requests.filter((r) => r.path.startsWith('/v1/projects/acme-busy/')).length;
    const before = asked();
    const throttled = await source.listScope({ provider: 'gke', account: 'acme-busy', region: '*' });
    assert.equal(asked() - before, 4, 'asked once, and again as many times as maxRetries (3)');
    assert.deepEqual(
      [throttled.outcome.kind, throttled.outcome.failure?.reason, throttled.clusters],
      ['failed', 'Throttled', []],
    );
    server.failures.delete('acme-busy');
  });

  it('asks the project search again when Resource Manager is briefly unavailable, not when it refuses', async () => {
    const searches = () => server.requests.filter((r) => r.path === '/v3/projects:search').length;
    const search = () => enumerateGkeScopes(source, { search: { query: 'parent:folders/100' } });
    let before = searches();
    await search();
    const pages = searches() - before;
    before = searches();
    server.searchFailures.push({
      status: 503,
      code: 'UNAVAILABLE',
      message: 'The service is currently unavailable.',
    });
    assert.deepEqual(
      (await search()).map((s) => s.account),
      ['acme-data', 'acme-web'],
    );
    assert.equal(searches() - before, pages + 1, 'the refused page asked again once');
    before = searches();
    server.searchFailures.push({
      status: 403,
      code: 'PERMISSION_DENIED',
      message: 'The caller does not have permission',
    });
    await assert.rejects(search(), { code: 403 });
    assert.equal(searches() - before, 1, 'a refusal is not asked again');
  });

  it('finds projects with Resource Manager search, active ones only, across pages', async () => {
    const all = await enumerateGkeScopes(source, { search: {} });
    assert.deepEqual(
      all.map((s) => s.account),
      ['acme-data', 'acme-other', 'acme-web'],
    );
    assert.ok(all.every((s) => s.provider === 'gke' && s.region === '*'));
    const folder = await enumerateGkeScopes(source, { search: { query: 'parent:folders/100' } });
    assert.deepEqual(
      folder.map((s) => s.account),
      ['acme-data', 'acme-web'],
    );
    assert.deepEqual(
      (await enumerateGkeScopes(source, { projects: ['b', 'a', 'b'] })).map((s) => s.account),
      ['a', 'b'],
    );
  });

  it("says a refused project search in Google's own words, and classifies it as the cluster listing's refusals", async () => {
    const search = { search: { query: 'parent:folders/100' } };
    /** What a search refused with `failure` (the next answer) rejects with. */
    const refusedWith = async (failure: GoogleErrorJson) => {
      server.searchFailures.push(failure);
      return enumerateGkeScopes(source, search).then(
        () => assert.fail('the search was refused'),
        (error: unknown) => error as { code?: number; reason?: string },
      );
    };
    const denied = await refusedWith({
      status: 403,
      code: 'PERMISSION_DENIED',
      message: 'The caller does not have permission to search projects',
    });
    // The answer's message, not its JSON document (Resource Manager's client reports the whole body).
    assert.deepEqual(
      [messageOf(denied), classifyGoogleError(denied), denied.code],
      ['The caller does not have permission to search projects', 'AccessDenied', 403],
    );
    const disabled = await refusedWith({
      status: 403,
      code: 'PERMISSION_DENIED',
      reason: 'SERVICE_DISABLED',
      message: 'Cloud Resource Manager API has not been used in project 4242 before or it is disabled.',
    });
    assert.deepEqual([classifyGoogleError(disabled), disabled.reason], ['ApiNotEnabled', 'SERVICE_DISABLED']);
    assert.match(messageOf(disabled), /^Cloud Resource Manager API has not been used/);
    assert.deepEqual(
      (await enumerateGkeScopes(source, search)).map((s) => s.account),
      ['acme-data', 'acme-web'],
    );
  });

  it('refuses requests without valid credentials', async () => {
    const response = await fetch(`${server.endpoint}/v1/projects/acme-data/locations/-/clusters`, {
      headers: { authorization: 'Bearer forged' },
    });
    assert.equal(response.status, 401);
  });
});
