import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { compose, type Composition } from '../../../../adapters/compose/compose.ts';
import { aksProvider } from '../../../../adapters/compose/providers/aks.ts';
import { eksProvider } from '../../../../adapters/compose/providers/eks.ts';
import {
  CreateAccountCommand,
  CreateOrganizationCommand,
  OrganizationsClient,
} from '@aws-sdk/client-organizations';
import { startAwsProxy, type AwsProxy } from '../../../env/awsProxy.ts';
import { startMoto, type MotoServer } from '../../../env/moto.ts';
import { HUB_CREDENTIALS } from '../../../support/aws.ts';
import { gkeProvider } from '../../../../adapters/compose/providers/gke.ts';
import { parseConfig } from '../../../../adapters/compose/config.ts';
import { startGkeServer, type GkeServer } from '../../../env/fakes/gkeServer.ts';
import { startArmServer } from '../../../env/fakes/armServer.ts';
import { localCloudAccess } from '../../../env/emulators.ts';
import { temporaryDirectory } from '../../../support/tmp.ts';

const SUBSCRIPTION = '00000000-1111-2222-3333-c00000000001';

describe('what the configuration covers, when it is discovered', () => {
  let server: GkeServer;
  let composition: Composition;
  let config: ReturnType<typeof parseConfig>;
  let gke: Record<string, unknown>;

  before(async () => {
    server = await startGkeServer();
    server.projects.push({ projectId: 'acme-data', state: 1 }, { projectId: 'acme-web', state: 1 });
    const { writeFileSync } = await import('node:fs');
    const { join } = await import('node:path');
    const key = join(temporaryDirectory('cpsync-coverage-'), 'key.json');
    writeFileSync(key, JSON.stringify(server.serviceAccountKey));
    gke = { projects: { search: { query: '' } }, credentials: { file: key }, endpoint: server.endpoint };
    config = parseConfig({ providers: { gke } });
    composition = await compose(config, [gkeProvider]);
  });
  after(async () => {
    await composition?.close();
    await server?.stop();
  });

  it("answers listed projects and subscriptions from the configuration alone, made on demand as the functions are: the clouds' secrets are read only where discovery needs them", async () => {
    const dir = temporaryDirectory('cpsync-listed-');
    const { join } = await import('node:path');
    const { rmSync } = await import('node:fs');
    // Secrets that cannot be read: a provider built would fail, naming its secret.
    const missing = join(dir, 'never-written.json');
    const listed = parseConfig({
      providers: {
        gke: {
          projects: ['acme-web', 'acme-data', 'acme-web'],
          credentials: { file: missing },
          endpoint: server.endpoint,
        },
        aks: {
          subscriptions: [SUBSCRIPTION.toUpperCase()],
          credential: { tenantId: 'tenant', clientId: 'client', clientSecret: { file: missing } },
          endpoint: 'http://127.0.0.1:9',
        },
      },
    });
    const onDemand = await compose(listed, [gkeProvider, aksProvider], { onDemand: true });
    const discovering = await compose(
      parseConfig({ providers: { gke: { ...gke, credentials: { file: missing } } } }),
      [gkeProvider],
      { onDemand: true },
    );
    try {
      const searches = server.requests.length;
      const all = await onDemand.resolveScopes();
      assert.deepEqual(all.failures, []);
      assert.deepEqual(
        all.scopes.map((scope) => `${scope.provider}/${scope.account}/${scope.region}`).sort(),
        ['aks/' + SUBSCRIPTION + '/*', 'gke/acme-data/*', 'gke/acme-web/*'],
      );
      const one = await onDemand.resolveScopes({
        scopes: [
          { provider: 'gke', account: 'acme-data' },
          { provider: 'gke', account: 'acme-other' },
          { provider: 'aks', account: SUBSCRIPTION.toUpperCase() },
        ],
      });
      assert.deepEqual(
        one.scopes.map((scope) => `${scope.provider}/${scope.account}`),
        ['gke/acme-data', `aks/${SUBSCRIPTION}`],
      );
      assert.deepEqual(
        one.refused.map((r) => [r.requested, r.reason]),
        [['gke/acme-other', 'acme-other is not covered by providers.gke.projects']],
      );
      assert.equal(server.requests.length, searches, 'no call to Google for listed projects');
      // Discovered projects need the cloud: its secret is read, and what is wrong with it named.
      const found = await discovering.resolveScopes();
      assert.deepEqual(found.scopes, []);
      assert.equal(found.failures.length, 1);
      assert.match(found.failures[0]!.message, /providers\.gke\.credentials \(file .*never-written\.json\)/);
    } finally {
      await onDemand.close();
      await discovering.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('says it cannot tell (and may be asked again) when discovery fails, rather than no', async () => {
    server.searchFailures.push(
      ...Array.from({ length: 10 }, () => ({
        status: 403,
        code: 'PERMISSION_DENIED',
        message: 'search denied',
      })),
    );
    const failed = await composition.resolveScopes({
      scopes: [{ provider: 'gke', account: 'acme-data' }],
    });
    server.searchFailures.length = 0;
    assert.deepEqual(failed.scopes, []);
    assert.equal(failed.refused.length, 1);
    assert.equal(failed.refused[0]!.undetermined, true);
    assert.match(
      failed.refused[0]!.reason,
      /cannot tell whether the configuration covers it: .*search denied/,
    );
    // A failed discovery is not remembered: asked again, the answer comes.
    const covered = await composition.resolveScopes({
      scopes: [{ provider: 'gke', account: 'ACME-DATA' }],
    });
    assert.deepEqual(covered.scopes, [{ provider: 'gke', account: 'acme-data', region: '*' }]);
    const other = await composition.resolveScopes({
      scopes: [{ provider: 'gke', account: 'acme-other' }],
    });
    assert.deepEqual(
      other.refused.map((r) => [r.reason, r.undetermined]),
      [['acme-other is not covered by providers.gke.projects', undefined]],
    );
  });

  /** Ids asked for one by one (by a cloud's event, a queue message): none of them a covered one. */
  const uncovered = (covered: readonly string[], id: fc.Arbitrary<string>) =>
    fc.uniqueArray(
      id.filter((one) => !covered.includes(one)),
      { minLength: 20, maxLength: 40 },
    );

  it('reads an asked-for project from the whole search, made once for its time: ids no configuration covers cost no call', async () => {
    const fresh = await compose(config, [gkeProvider]);
    const searches = () => server.requests.filter((r) => r.path === '/v3/projects:search').length;
    const before = searches();
    try {
      await fc.assert(
        fc.asyncProperty(
          uncovered(['acme-data', 'acme-web'], fc.stringMatching(/^[a-z][a-z0-9-]{4,28}[a-z0-9]$/)),
          async (projects) => {
            const resolved = await fresh.resolveScopes({
              scopes: projects.map((account) => ({ provider: 'gke', account })),
            });
            assert.deepEqual(resolved.scopes, []);
            assert.deepEqual(
              resolved.refused.map((r) => r.reason),
              projects.map((p) => `${p} is not covered by providers.gke.projects`),
            );
          },
        ),
        { numRuns: 10 },
      );
      const covered = await fresh.resolveScopes({ scopes: [{ provider: 'gke', account: 'acme-web' }] });
      assert.deepEqual(covered.scopes, [{ provider: 'gke', account: 'acme-web', region: '*' }]);
      assert.equal(searches() - before, 1, 'one search, as the local Resource Manager counted it');
    } finally {
      await fresh.close();
    }
  });

  it('reads an asked-for subscription from the whole listing of subscriptions, made once for its time', async () => {
    const arm = await startArmServer();
    const subscriptions = [SUBSCRIPTION, '00000000-1111-2222-3333-c00000000002'];
    arm.subscriptions.push(
      ...subscriptions.map((subscriptionId) => ({
        subscriptionId,
        displayName: subscriptionId,
        state: 'Enabled',
      })),
    );
    const access = localCloudAccess(temporaryDirectory('cpsync-coverage-arm-'), server, arm);
    const azure = await compose(
      parseConfig({ providers: { aks: { ...access.aks, subscriptions: { all: true } } } }),
      [aksProvider],
    );
    const listings = () => arm.requests.filter((r) => r.path === '/subscriptions').length;
    try {
      await fc.assert(
        fc.asyncProperty(uncovered(subscriptions, fc.uuid()), async (asked) => {
          const resolved = await azure.resolveScopes({
            scopes: asked.map((account) => ({ provider: 'aks', account })),
          });
          assert.deepEqual(resolved.scopes, []);
          assert.equal(resolved.refused.length, asked.length);
          for (const refusal of resolved.refused)
            assert.match(refusal.reason, /is not covered by providers\.aks\.subscriptions$/);
        }),
        { numRuns: 10 },
      );
      const covered = await azure.resolveScopes({
        scopes: [{ provider: 'aks', account: subscriptions[1]!.toUpperCase() }],
      });
      assert.deepEqual(covered.scopes, [{ provider: 'aks', account: subscriptions[1], region: '*' }]);
      assert.equal(listings(), 1, 'one listing of subscriptions, as the local ARM counted it');
    } finally {
      await azure.close();
      await arm.stop();
    }
  });

  it("lists every other provider's scopes while one provider's discovery never answers, and names that one's failure", async () => {
    let release!: () => void;
    server.searchHeld = new Promise<void>((resolve) => (release = resolve));
    const both = await compose(
      parseConfig({
        providers: {
          gke,
          // Listed after GKE, and known without a call: its scopes are there however long GKE's search takes.
          aks: { subscriptions: [SUBSCRIPTION] },
        },
        sync: { scopeTimeoutSeconds: 1 },
      }),
      [gkeProvider, aksProvider],
    );
    try {
      const resolved = await both.resolveScopes();
      assert.deepEqual(resolved.scopes, [{ provider: 'aks', account: SUBSCRIPTION, region: '*' }]);
      assert.deepEqual(
        resolved.failures.map((f) => [f.provider, f.message]),
        [['gke', 'discovering the scopes of providers.gke: no answer within 1 s']],
      );
    } finally {
      release();
      delete server.searchHeld;
      await both.close();
    }
  });
});

describe('what an AWS organization covers, asked for one account at a time', () => {
  let moto: MotoServer;
  let proxy: AwsProxy;
  let composition: Composition;
  const members: string[] = [];
  const saved = { ...process.env };

  before(async () => {
    moto = await startMoto();
    proxy = await startAwsProxy(moto.endpoint);
    const organizations = new OrganizationsClient({
      endpoint: moto.endpoint,
      region: 'us-east-1',
      credentials: HUB_CREDENTIALS,
    });
    await organizations.send(new CreateOrganizationCommand({ FeatureSet: 'ALL' }));
    for (const name of ['payments', 'data']) {
      const created = await organizations.send(
        new CreateAccountCommand({ AccountName: name, Email: `${name}@example.com` }),
      );
      members.push(created.CreateAccountStatus!.AccountId!);
    }
    Object.assign(process.env, {
      AWS_ACCESS_KEY_ID: HUB_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: HUB_CREDENTIALS.secretAccessKey,
      AWS_EC2_METADATA_DISABLED: 'true',
    });
    composition = await compose(
      parseConfig({
        providers: {
          eks: {
            accounts: { organization: {} },
            regions: ['us-east-1', 'eu-west-1'],
            homeRegion: 'us-east-1',
            endpoint: proxy.endpoint,
          },
        },
      }),
      [eksProvider],
    );
  });
  after(async () => {
    await composition?.close();
    await proxy?.stop();
    await moto?.stop();
    for (const key of ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_EC2_METADATA_DISABLED'])
      if (saved[key] === undefined) delete process.env[key];
      else process.env[key] = saved[key];
  });

  it('lists the organization once for its time: ids of no member cost no call; a member is covered in its regions', async () => {
    proxy.calls.length = 0;
    const listings = () => proxy.calls.filter((c) => c.service === 'organizations').length;
    const member = await composition.resolveScopes({ scopes: [{ provider: 'eks', account: members[0]! }] });
    assert.deepEqual(member.scopes.map((s) => `${s.account}/${s.region}`).sort(), [
      `${members[0]}/eu-west-1`,
      `${members[0]}/us-east-1`,
    ]);
    const listed = listings();
    assert.ok(listed > 0, 'the organization was listed');
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(
          fc.stringMatching(/^\d{12}$/).filter((id) => !members.includes(id)),
          { minLength: 20, maxLength: 40 },
        ),
        async (accounts) => {
          const resolved = await composition.resolveScopes({
            scopes: accounts.map((account) => ({ provider: 'eks', account })),
          });
          assert.deepEqual(resolved.scopes, []);
          assert.deepEqual(
            resolved.refused.map((r) => r.reason),
            accounts.map((a) => `${a} is not covered by providers.eks.accounts`),
          );
        },
      ),
      { numRuns: 10 },
    );
    const other = await composition.resolveScopes({ scopes: [{ provider: 'eks', account: members[1]! }] });
    assert.equal(other.scopes.length, 2);
    assert.equal(listings(), listed, 'no more calls to Organizations, as the proxy before moto counted them');
  });
});
