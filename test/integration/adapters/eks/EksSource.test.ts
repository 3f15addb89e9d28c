import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  CloseAccountCommand,
  CreateAccountCommand,
  CreateOrganizationalUnitCommand,
  CreateOrganizationCommand,
  ListRootsCommand,
  MoveAccountCommand,
  OrganizationsClient,
} from '@aws-sdk/client-organizations';
import fc from 'fast-check';
import { ListClustersCommand } from '@aws-sdk/client-eks';
import { enumerateEksScopes } from '../../../../adapters/eks/EksScopes.ts';
import { EksSource } from '../../../../adapters/eks/EksSource.ts';
import type { ObservedCluster } from '../../../../core/domain/model/observedCluster.ts';
import { normalize } from '../../../../core/domain/normalize.ts';
import { inventoryOptions } from '../../../support/settings.ts';
import { restJsonError, startAwsProxy, stsAccessDenied, type AwsProxy } from '../../../env/awsProxy.ts';
import { startMoto, type MotoServer } from '../../../env/moto.ts';
import { createEksClusters, HUB_ACCOUNT, HUB_CREDENTIALS } from '../../../support/aws.ts';

const credentials = async () => HUB_CREDENTIALS;

describe('EKS adapter against moto server', () => {
  let moto: MotoServer;
  let proxy: AwsProxy;
  let organizations: OrganizationsClient;
  const accounts: Record<'a' | 'b' | 'denied' | 'suspended' | 'sandbox', string> = {
    a: '',
    b: '',
    denied: '',
    suspended: '',
    sandbox: '',
  };
  let sandboxOu = '';

  const source = (extra: ConstructorParameters<typeof EksSource>[0] = {}) =>
    new EksSource({ endpoint: proxy.endpoint, credentials, roleName: 'cpsync-reader', ...extra });

  before(async () => {
    moto = await startMoto((line) => console.log(line));
    proxy = await startAwsProxy(moto.endpoint);
    organizations = new OrganizationsClient({ endpoint: moto.endpoint, region: 'us-east-1', credentials });
    await organizations.send(new CreateOrganizationCommand({ FeatureSet: 'ALL' }));
    for (const key of Object.keys(accounts) as Array<keyof typeof accounts>) {
      const created = await organizations.send(
        new CreateAccountCommand({ AccountName: key, Email: `${key}@example.com` }),
      );
      accounts[key] = created.CreateAccountStatus!.AccountId!;
    }
    const root = (await organizations.send(new ListRootsCommand({}))).Roots![0]!.Id!;
    sandboxOu = (
      await organizations.send(new CreateOrganizationalUnitCommand({ ParentId: root, Name: 'sandbox' }))
    ).OrganizationalUnit!.Id!;
    await organizations.send(
      new MoveAccountCommand({
        AccountId: accounts.sandbox,
        SourceParentId: root,
        DestinationParentId: sandboxOu,
      }),
    );
    await organizations.send(new CloseAccountCommand({ AccountId: accounts.suspended }));

    const bulk = Array.from({ length: 105 }, (_, i) => ({ name: `bulk-${String(i).padStart(3, '0')}` }));
    await createEksClusters(moto.endpoint, accounts.a, 'us-east-1', [
      ...bulk,
      {
        name: 'payments',
        version: '1.31',
        tags: { team: 'payments', env: 'prod' },
        nodegroups: [
          { name: 'general', instanceTypes: ['m6i.large'], desiredSize: 3 },
          { name: 'compute', instanceTypes: ['c6i.xlarge', 'c6i.2xlarge'], desiredSize: 2 },
        ],
      },
      { name: 'internal', privateOnly: true },
      { name: 'creating' },
    ]);
    await createEksClusters(moto.endpoint, accounts.a, 'eu-west-1', [
      { name: 'payments' },
      { name: 'eu-only' },
    ]);
    await createEksClusters(moto.endpoint, accounts.b, 'us-east-1', [{ name: 'payments' }]);
    await createEksClusters(moto.endpoint, HUB_ACCOUNT, 'us-east-1', [{ name: 'hub-local' }]);

    // What moto cannot express: a role that may not be assumed, and a cluster still being created.
    proxy.intercept((call) =>
      call.operation === 'AssumeRole' &&
      call.body.includes(encodeURIComponent(`arn:aws:iam::${accounts.denied}:role/cpsync-reader`))
        ? stsAccessDenied(`arn:aws:iam::${accounts.denied}:role/cpsync-reader`)
        : undefined,
    );
    proxy.rewrite((call, status, body) => {
      if (status !== 200 || call.method !== 'GET' || !/^\/clusters\/creating$/.test(call.path))
        return undefined;
      const answer = JSON.parse(body);
      answer.cluster.status = 'CREATING';
      delete answer.cluster.endpoint;
      delete answer.cluster.certificateAuthority;
      return JSON.stringify(answer);
    });
  });

  after(async () => {
    await proxy?.stop();
    await moto?.stop();
  });

  it('enumerates the organization: active accounts only, OU filters, configured regions', async () => {
    const all = await enumerateEksScopes(source(), {
      accounts: { organization: {} },
      regions: ['us-east-1', 'eu-west-1'],
      organizations,
    });
    const listed = new Set(all.scopes.map((s) => s.account));
    assert.ok(listed.has(accounts.a) && listed.has(accounts.b) && listed.has(accounts.sandbox));
    assert.ok(!listed.has(accounts.suspended), 'suspended accounts are skipped');
    assert.equal(all.scopes.filter((s) => s.account === accounts.a).length, 2);

    const onlySandbox = await enumerateEksScopes(source(), {
      accounts: { organization: { includeOus: [sandboxOu] } },
      regions: ['us-east-1'],
      organizations,
    });
    assert.deepEqual(
      onlySandbox.scopes.map((s) => s.account),
      [accounts.sandbox],
    );
    const noSandbox = await enumerateEksScopes(source(), {
      accounts: { organization: { excludeOus: [sandboxOu] } },
      regions: ['us-east-1'],
      organizations,
    });
    assert.ok(!noSandbox.scopes.some((s) => s.account === accounts.sandbox));
  });

  it('finds every region enabled for an account when none are configured', async () => {
    const { scopes } = await enumerateEksScopes(source(), { accounts: { accounts: [accounts.a] } });
    const regions = scopes.map((s) => s.region);
    assert.ok(
      regions.includes('us-east-1') && regions.includes('eu-west-1') && regions.length > 10,
      regions.join(','),
    );
  });

  it('lists more than 100 clusters in a region across pages, each with its node groups', async () => {
    proxy.clear();
    const listing = await source().listScope({ provider: 'eks', account: accounts.a, region: 'us-east-1' });
    assert.equal(listing.outcome.kind, 'complete');
    assert.equal(listing.clusters.length, 108);
    const pages = proxy.calls.filter(
      (c) => (c.method === 'GET' && c.path.startsWith('/clusters?')) || c.path === '/clusters',
    );
    assert.ok(pages.length >= 2, `ListClusters pages: ${pages.length}`);
  });

  it('extracts every field a profile needs', async () => {
    const listing = await source().listScope({ provider: 'eks', account: accounts.a, region: 'us-east-1' });
    const payments = listing.clusters.find((c) => c.name === 'payments')!;
    const expected: Partial<Record<keyof ObservedCluster, unknown>> = {
      provider: 'eks',
      providerId: `arn:aws:eks:us-east-1:${accounts.a}:cluster/payments`,
      name: 'payments',
      account: accounts.a,
      region: 'us-east-1',
      kubernetesVersion: '1.31',
      platformVersion: 'eks.4',
      health: { status: 'ACTIVE', issues: [] },
      nodes: {
        count: 5,
        instanceTypes: ['m6i.large', 'c6i.xlarge', 'c6i.2xlarge'].sort(),
        autoscaling: { min: 0, max: 9 },
      },
      tags: { team: 'payments', env: 'prod' },
    };
    for (const [field, value] of Object.entries(expected)) {
      const actual =
        field === 'nodes'
          ? { ...payments.nodes, instanceTypes: [...payments.nodes.instanceTypes].sort() }
          : payments[field as keyof ObservedCluster];
      assert.deepEqual(actual, value, field);
    }
    assert.equal(payments.endpoints.length, 1);
    assert.equal(payments.endpoints[0]!.visibility, 'public');
    assert.match(payments.endpoints[0]!.url, /^https:\/\/.+\.eks\.amazonaws\.com$/);
    assert.ok(payments.certificateAuthorityData && payments.certificateAuthorityData.length > 100);
    assert.ok(!Number.isNaN(Date.parse(payments.createdAt!)));

    const internal = listing.clusters.find((c) => c.name === 'internal')!;
    assert.equal(internal.endpoints[0]!.visibility, 'private');
    assert.equal(internal.nodes.count, undefined, 'no node groups: node count unknown');
  });

  it('reports a cluster still being created without an endpoint', async () => {
    const listing = await source().listScope({ provider: 'eks', account: accounts.a, region: 'us-east-1' });
    const creating = listing.clusters.find((c) => c.name === 'creating')!;
    assert.deepEqual(creating.endpoints, []);
    assert.equal(creating.certificateAuthorityData, undefined);
    assert.equal(creating.health.status, 'CREATING');
    const profile = normalize(creating, inventoryOptions(), '2026-01-01T00:00:00Z');
    assert.equal(
      profile.status!.conditions!.find((c) => c.type === 'ControlPlaneHealthy')!.status,
      'Unknown',
    );
  });

  it('keeps clusters of the same name in two accounts and two regions apart', async () => {
    const eu = await source().listScope({ provider: 'eks', account: accounts.a, region: 'eu-west-1' });
    const b = await source().listScope({ provider: 'eks', account: accounts.b, region: 'us-east-1' });
    const a = await source().listScope({ provider: 'eks', account: accounts.a, region: 'us-east-1' });
    const names = [a, eu, b].map(
      (l) =>
        normalize(
          l.clusters.find((c) => c.name === 'payments')!,
          inventoryOptions(),
          '2026-01-01T00:00:00Z',
        ).metadata.name,
    );
    assert.equal(new Set(names).size, 3);
  });

  it('lists every enabled region of an account-wide scope, and never calls it complete: a region disabled since keeps its clusters', async () => {
    const listing = await source().listScope({ provider: 'eks', account: accounts.a, region: '*' });
    assert.equal(listing.clusters.length, 110);
    // The regions DescribeRegions answers are those enabled now; clusters in one the account has disabled since are
    // still there, so their profiles are not to be deleted for being missing from this listing.
    assert.equal(listing.outcome.kind, 'partial');
    assert.equal(listing.outcome.failure, undefined);
    assert.match(listing.outcome.missing!.at(-1)!, /^every region but .*us-east-1.* \(not enabled now\)$/);
  });

  it('reports an account whose role cannot be assumed as a failed scope, never an empty complete one', async () => {
    const listing = await source().listScope({
      provider: 'eks',
      account: accounts.denied,
      region: 'us-east-1',
    });
    assert.equal(listing.outcome.kind, 'failed');
    assert.equal(listing.outcome.failure!.reason, 'AccessDenied');
    assert.match(
      listing.outcome.failure!.message,
      new RegExp(`cannot assume arn:aws:iam::${accounts.denied}:role/cpsync-reader`),
    );
    assert.deepEqual(listing.clusters, []);
  });

  it('lists the hub account with its own credentials, without assuming a role', async () => {
    proxy.clear();
    const listing = await source().listScope({ provider: 'eks', account: HUB_ACCOUNT, region: 'us-east-1' });
    assert.deepEqual(
      listing.clusters.map((c) => c.name),
      ['hub-local'],
    );
    assert.equal(proxy.calls.filter((c) => c.operation === 'AssumeRole').length, 0);
  });

  it('passes the external id when assuming member roles', async () => {
    proxy.clear();
    await source({ externalId: 'cpsync-2026' }).listScope({
      provider: 'eks',
      account: accounts.b,
      region: 'us-east-1',
    });
    const assume = proxy.calls.find((c) => c.operation === 'AssumeRole')!;
    assert.match(assume.body, /ExternalId=cpsync-2026/);
    assert.match(
      assume.body,
      new RegExp(`RoleArn=${encodeURIComponent(`arn:aws:iam::${accounts.b}:role/cpsync-reader`)}`),
    );
  });

  it('opens the access grants’ session of a member role apart, with the granting source identity; reads never carry it', async () => {
    proxy.clear();
    const shared = source({ externalId: 'cpsync-2026' });
    await shared.listScope({ provider: 'eks', account: accounts.b, region: 'us-east-1' });
    const grants = await shared.grantClient(accounts.b, 'us-east-1');
    await grants.send(new ListClustersCommand({}));
    await (await shared.grantClient(accounts.b, 'eu-west-1')).send(new ListClustersCommand({}));
    const assumed = proxy.calls
      .filter((c) => c.operation === 'AssumeRole')
      .map((c) => new URLSearchParams(c.body));
    assert.equal(assumed.length, 2, 'one session to read, one to grant, for every region');
    assert.deepEqual(
      assumed.map((p) => [p.get('SourceIdentity'), p.get('ExternalId')]).sort(),
      [
        ['cpsync-grants', 'cpsync-2026'],
        [null, 'cpsync-2026'],
      ].sort(),
    );
    // In the base credentials' own account, no role is assumed for either.
    proxy.clear();
    await (await shared.grantClient(HUB_ACCOUNT, 'us-east-1')).send(new ListClustersCommand({}));
    assert.equal(proxy.calls.filter((c) => c.operation === 'AssumeRole').length, 0);
  });

  it('assumes a member role once for all of its regions and callers', async () => {
    proxy.clear();
    const shared = source();
    const regions = ['us-east-1', 'eu-west-1', 'us-west-2', 'ap-southeast-1'];
    const listings = await Promise.all(
      regions.map((region) => shared.listScope({ provider: 'eks', account: accounts.b, region })),
    );
    assert.ok(listings.every((l) => l.outcome.kind === 'complete'));
    assert.equal(proxy.calls.filter((c) => c.operation === 'AssumeRole').length, 1);
  });

  it('rides out throttling with the SDK retry strategy', async () => {
    proxy.clear();
    let throttled = 0;
    const remove = proxy.intercept((call) =>
      call.method === 'GET' && call.path.startsWith('/clusters/bulk-00') && throttled++ < 6
        ? restJsonError(429, 'ThrottlingException', 'Rate exceeded')
        : undefined,
    );
    const listing = await source({ retryMode: 'standard' }).listScope({
      provider: 'eks',
      account: accounts.a,
      region: 'us-east-1',
    });
    assert.equal(listing.outcome.kind, 'complete');
    assert.equal(listing.clusters.length, 108);
    assert.equal(throttled >= 6, true);
    remove();
  });

  it('marks the scope partial when describing a cluster stays throttled past the retries, and failed when listing does', async () => {
    const removeDescribe = proxy.intercept((call) =>
      call.method === 'GET' && call.path === '/clusters/bulk-007'
        ? restJsonError(429, 'ThrottlingException', 'Rate exceeded')
        : undefined,
    );
    const partial = await source({ maxAttempts: 2, retryMode: 'standard' }).listScope({
      provider: 'eks',
      account: accounts.a,
      region: 'us-east-1',
    });
    assert.equal(partial.outcome.kind, 'partial');
    assert.deepEqual(partial.outcome.missing, ['us-east-1/bulk-007']);
    assert.equal(partial.outcome.failure!.reason, 'Throttled');
    assert.equal(partial.clusters.length, 107);
    removeDescribe();

    const removeList = proxy.intercept((call) =>
      call.method === 'GET' && call.path.startsWith('/clusters?')
        ? restJsonError(429, 'ThrottlingException', 'Rate exceeded')
        : undefined,
    );
    const failed = await source({ maxAttempts: 2, retryMode: 'standard' }).listScope({
      provider: 'eks',
      account: accounts.b,
      region: 'us-east-1',
    });
    assert.equal(failed.outcome.kind, 'failed');
    assert.equal(failed.outcome.failure!.reason, 'Throttled');
    removeList();
  });

  it('takes no successful answer that describes nothing as the cluster or a node group gone, in a listing or a look', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('/clusters/payments', '/clusters/payments/node-groups/general'),
        fc.constantFrom(200, 204),
        fc.constantFrom('', '{}', '{"cluster":null,"nodegroup":null}', '{"other":{"name":"payments"}}'),
        async (path, status, body) => {
          const remove = proxy.intercept((call) =>
            call.method === 'GET' && call.path === path
              ? { status, headers: { 'content-type': 'application/json' }, body: status === 204 ? '' : body }
              : undefined,
          );
          try {
            const eks = source({ maxAttempts: 1 });
            const listing = await eks.listScope({
              provider: 'eks',
              account: accounts.a,
              region: 'us-east-1',
            });
            assert.equal(listing.outcome.kind, 'partial');
            assert.deepEqual(listing.outcome.missing, ['us-east-1/payments']);
            assert.equal(listing.outcome.failure!.reason, 'InvalidResponse');
            assert.equal(listing.clusters.length, 107);
            // A look (an event, a follow-up) fails rather than answering that the cluster is gone.
            await assert.rejects(
              eks.getCluster({
                scope: { provider: 'eks', account: accounts.a, region: 'us-east-1' },
                name: 'payments',
              }),
              /describes nothing; not taken as the object gone/,
            );
          } finally {
            remove();
          }
        },
      ),
      { numRuns: 12 },
    );
  });

  it('takes no page without its list as an empty listing: of the region (the scope fails) or of a cluster’s node groups', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('clusters', 'node groups'),
        fc.constantFrom(
          '',
          '{}',
          '{"clusters":null,"nodegroups":null}',
          '{"clusters":"ab","nodegroups":"ab"}',
        ),
        async (listing, body) => {
          const remove = proxy.intercept((call) =>
            call.method === 'GET' &&
            (listing === 'clusters'
              ? call.path.startsWith('/clusters?')
              : call.path.startsWith('/clusters/payments/node-groups?'))
              ? { status: 200, headers: { 'content-type': 'application/json' }, body }
              : undefined,
          );
          try {
            const scope = { provider: 'eks' as const, account: accounts.a, region: 'us-east-1' };
            const answer = await source({ maxAttempts: 1 }).listScope(scope);
            if (listing === 'clusters') {
              assert.equal(answer.outcome.kind, 'failed', body);
              assert.equal(answer.outcome.failure!.reason, 'InvalidResponse');
              assert.match(answer.outcome.failure!.message, /not taken as an empty listing/);
              assert.deepEqual(answer.clusters, []);
            } else {
              assert.equal(answer.outcome.kind, 'partial', body);
              assert.deepEqual(answer.outcome.missing, ['us-east-1/payments']);
              assert.equal(answer.outcome.failure!.reason, 'InvalidResponse');
            }
          } finally {
            remove();
          }
        },
      ),
      { numRuns: 8 },
    );
  });

  it('fails a scope whose calls time out, classified as Timeout', async () => {
    const stalled = await startAwsProxy(moto.endpoint, { latencyMs: 1500 });
    try {
      const listing = await new EksSource({
        endpoint: stalled.endpoint,
        credentials,
        requestTimeoutMillis: 200,
        maxAttempts: 1,
      }).listScope({
        provider: 'eks',
        account: HUB_ACCOUNT,
        region: 'us-east-1',
      });
      assert.deepEqual(
        [listing.outcome.kind, listing.outcome.failure?.reason, listing.clusters],
        ['failed', 'Timeout', []],
      );
    } finally {
      await stalled.stop();
    }
  });

  it('bounds the calls in flight against one account', async () => {
    const slow = await startAwsProxy(moto.endpoint, { latencyMs: 20 });
    try {
      const listing = await new EksSource({
        endpoint: slow.endpoint,
        credentials,
        perAccountConcurrency: 4,
      }).listScope({ provider: 'eks', account: accounts.a, region: 'us-east-1' });
      assert.equal(listing.clusters.length, 108);
      const peak = slow.maxInFlight();
      assert.ok(peak <= 4, `peak in flight ${peak}`);
      assert.ok(peak >= 3, `peak in flight ${peak}`);
      slow.clear();
      const overall = new EksSource({
        endpoint: slow.endpoint,
        credentials,
        perAccountConcurrency: 8,
        overallConcurrency: 2,
      });
      const both = await Promise.all([
        overall.listScope({ provider: 'eks', account: accounts.a, region: 'eu-west-1' }),
        overall.listScope({ provider: 'eks', account: accounts.b, region: 'us-east-1' }),
      ]);
      assert.deepEqual(
        both.map((l) => l.clusters.length),
        [2, 1],
      );
      assert.ok(
        slow.maxInFlight() <= 2 + 2,
        `peak in flight over two accounts ${slow.maxInFlight()} (2 describe slots + the 2 unbounded list calls)`,
      );
    } finally {
      await slow.stop();
    }
  });
});
