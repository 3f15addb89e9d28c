import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, beforeEach, describe, it } from 'node:test';
import type { ClientSecretCredential } from '@azure/identity';
import { AksSource } from '../../../../adapters/aks/AksSource.ts';
import { FileAnswerStore } from '../../../../adapters/outbox/FileAnswerStore.ts';
import type { Scope } from '../../../../core/domain/model/scope.ts';
import type { AnswerStore } from '../../../../core/sync/ports.ts';
import {
  armCredential,
  startArmServer,
  type ArmServer,
  type ManagedClusterJson,
} from '../../../env/fakes/armServer.ts';
import { TEST_CA_DATA, TEST_CA_PEM } from '../../../support/certificates.ts';
import { temporaryDirectory } from '../../../support/tmp.ts';

const SUB = '00000000-1111-2222-3333-555555555555';
const SCOPE: Scope = { provider: 'aks', account: SUB, region: '*' };
const ROTATED = Buffer.from(`${TEST_CA_PEM}${TEST_CA_PEM}`).toString('base64');

const idOf = (name: string) =>
  `/subscriptions/${SUB}/resourcegroups/rg-${name}/providers/Microsoft.ContainerService/managedClusters/${name}`;

function managedCluster(name: string, location = 'westeurope'): ManagedClusterJson {
  return {
    id: idOf(name),
    name,
    location,
    systemData: { createdAt: '2024-06-01T08:30:00Z', lastModifiedAt: '2024-06-02T08:30:00Z' },
    properties: {
      provisioningState: 'Succeeded',
      powerState: { code: 'Running' },
      kubernetesVersion: '1.30',
      currentKubernetesVersion: '1.30.4',
      fqdn: `${name}-dns.hcp.${location}.azmk8s.io`,
      agentPoolProfiles: [{ name: 'system', count: 3, vmSize: 'Standard_D4s_v5', mode: 'System' }],
    },
  };
}

describe('AKS CAs remembered between listings (a store only cpsync writes), against the local ARM', () => {
  let server: ArmServer;
  let credential: ClientSecretCredential;
  let directory: string;
  let store: FileAnswerStore;
  const source = (
    answers: AnswerStore | undefined = store,
    extra: Partial<ConstructorParameters<typeof AksSource>[0]> = {},
  ) => new AksSource({ credential, endpoint: server.endpoint, ...(answers ? { answers } : {}), ...extra });
  /** listClusterUserCredential requests the server received since `from`, by cluster name. */
  const credentialReads = (from: number) =>
    server.requests
      .slice(from)
      .filter((r) => r.path.endsWith('/listClusterUserCredential'))
      .map((r) => r.path.split('/').at(-2)!)
      .sort();
  const caOf = async (name: string, answers?: AnswerStore) => {
    const listing = await source(answers).listScope(SCOPE);
    assert.equal(listing.outcome.kind, 'complete');
    return listing.clusters.find((c) => c.name === name)?.certificateAuthorityData;
  };
  const cluster = (name: string) => server.clusters.get(SUB)!.find((c) => c.name === name)!;

  before(async () => {
    server = await startArmServer();
    credential = armCredential(server);
  });
  after(async () => server?.stop());
  beforeEach(() => {
    directory = temporaryDirectory('cpsync-answers-');
    store = new FileAnswerStore(directory);
    server.caData.clear();
    server.clusters.set(SUB, [
      managedCluster('web'),
      managedCluster('data'),
      managedCluster('east', 'eastus'),
    ]);
  });

  it('asks for no CA in a second listing that shows every cluster unchanged, and gives the same CAs', async () => {
    let from = server.requests.length;
    const first = await source().listScope(SCOPE);
    assert.deepEqual(credentialReads(from), ['data', 'east', 'web']);
    from = server.requests.length;
    const second = await source().listScope(SCOPE);
    assert.deepEqual(credentialReads(from), []);
    assert.deepEqual(second, first);
    assert.ok(second.clusters.every((c) => c.certificateAuthorityData === TEST_CA_DATA));
  });

  it('asks again for the CA of a cluster whose control plane the listing shows changed, and of that one only', async () => {
    await source().listScope(SCOPE);
    const changes: Array<[string, (c: ManagedClusterJson) => void]> = [
      ['an upgrade', (c) => (c.properties.currentKubernetesVersion = '1.31.1')],
      ['a new API server name', (c) => (c.properties.fqdn = 'web-other.hcp.westeurope.azmk8s.io')],
      ['a private API server', (c) => (c.properties.privateFQDN = 'web.privatelink.westeurope.azmk8s.io')],
      [
        'an ARM modification',
        (c) => (c.systemData = { ...c.systemData, lastModifiedAt: '2025-01-01T00:00:00Z' }),
      ],
    ];
    for (const [what, change] of changes) {
      change(cluster('web'));
      server.caData.set(idOf('web').toLowerCase(), ROTATED);
      const from = server.requests.length;
      assert.equal(await caOf('web'), ROTATED, what);
      assert.deepEqual(credentialReads(from), ['web'], what);
      server.caData.delete(idOf('web').toLowerCase());
      const again = server.requests.length;
      assert.equal(await caOf('web'), ROTATED, `${what}: the answer last given stands`);
      assert.deepEqual(credentialReads(again), [], what);
    }
  });

  it('asks at every listing while an operation runs on the cluster (a certificate rotation), and once more when it has settled', async () => {
    await source().listScope(SCOPE);
    cluster('web').properties.provisioningState = 'Updating';
    server.caData.set(idOf('web').toLowerCase(), ROTATED);
    for (let i = 0; i < 2; i++) {
      const from = server.requests.length;
      assert.equal(await caOf('web'), ROTATED);
      assert.deepEqual(credentialReads(from), ['web']);
    }
    cluster('web').properties.provisioningState = 'Succeeded';
    const third = Buffer.from(`${TEST_CA_PEM}\n${TEST_CA_PEM}`).toString('base64');
    server.caData.set(idOf('web').toLowerCase(), third);
    let from = server.requests.length;
    assert.equal(await caOf('web'), third);
    assert.deepEqual(credentialReads(from), ['web']);
    from = server.requests.length;
    assert.equal(await caOf('web'), third);
    assert.deepEqual(credentialReads(from), []);
  });

  it('asks again for a CA whose record is older than its age limit, and for every CA when told 0', async () => {
    await source().listScope(SCOPE);
    // The record of `web` as a run a day and a half ago left it.
    const records = await store.read(SCOPE);
    const web = records.find((r) => r.providerId === idOf('web'))!;
    await store.write([], [web]);
    await store.write([{ ...web, askedAt: Date.now() - 36 * 3_600_000 }]);
    const from = server.requests.length;
    await source().listScope(SCOPE);
    assert.deepEqual(credentialReads(from), ['web']);
    const always = server.requests.length;
    await source(store, { certificateAuthorityMaxAgeMillis: 0 }).listScope(SCOPE);
    assert.deepEqual(credentialReads(always), ['data', 'east', 'web']);
  });

  it('asks for the CA of a new cluster, and forgets a cluster the whole listing no longer shows', async () => {
    await source().listScope(SCOPE);
    server.clusters.get(SUB)!.push(managedCluster('new'));
    let from = server.requests.length;
    await source().listScope(SCOPE);
    assert.deepEqual(credentialReads(from), ['new']);
    server.clusters.set(
      SUB,
      server.clusters.get(SUB)!.filter((c) => c.name !== 'data'),
    );
    await source().listScope(SCOPE);
    assert.deepEqual((await store.read(SCOPE)).map((r) => r.providerId.split('/').at(-1)).sort(), [
      'east',
      'new',
      'web',
    ]);
    // Made again under the same id: a new creation time, so its CA is asked for.
    server.clusters
      .get(SUB)!
      .push({ ...managedCluster('data'), systemData: { createdAt: '2026-01-01T00:00:00Z' } });
    from = server.requests.length;
    await source().listScope(SCOPE);
    assert.deepEqual(credentialReads(from), ['data']);
  });

  it('keeps the records of other locations when a scope lists one location', async () => {
    await source().listScope(SCOPE);
    const from = server.requests.length;
    const east = await source().listScope({ ...SCOPE, region: 'eastus' });
    assert.deepEqual(
      east.clusters.map((c) => c.name),
      ['east'],
    );
    assert.deepEqual(credentialReads(from), []);
    assert.equal((await store.read(SCOPE)).length, 3);
  });

  it('asks the cloud, and lists completely, when the store is missing, unreadable or holds junk', async () => {
    await source().listScope(SCOPE);
    const folder = join(directory, 'answers');
    // Junk in every file the store wrote.
    const { readdirSync } = await import('node:fs');
    for (const account of readdirSync(folder))
      for (const file of readdirSync(join(folder, account)))
        writeFileSync(join(folder, account, file), '{"records": [{"provider": "aks"');
    let from = server.requests.length;
    assert.equal(await caOf('web'), TEST_CA_DATA);
    assert.deepEqual(credentialReads(from), ['data', 'east', 'web']);
    // A store whose directory cannot be read or written (a file where its folder should be).
    const blocked = temporaryDirectory('cpsync-answers-');
    writeFileSync(join(blocked, 'answers'), 'not a directory');
    const broken = new FileAnswerStore(blocked);
    for (let i = 0; i < 2; i++) {
      from = server.requests.length;
      const listing = await source(broken).listScope(SCOPE);
      assert.equal(listing.outcome.kind, 'complete');
      assert.equal(listing.clusters.length, 3);
      assert.deepEqual(credentialReads(from), ['data', 'east', 'web']);
    }
    // A store the process may not read (when not running as root, which reads anything).
    const locked = temporaryDirectory('cpsync-answers-');
    mkdirSync(join(locked, 'answers'), { mode: 0o000 });
    chmodSync(join(locked, 'answers'), 0o000);
    from = server.requests.length;
    assert.equal((await source(new FileAnswerStore(locked)).listScope(SCOPE)).outcome.kind, 'complete');
    assert.ok(credentialReads(from).length >= 1);
    chmodSync(join(locked, 'answers'), 0o700);
  });

  it('always asks when reading one cluster (the event and follow-up path), and a listing then gives what it said', async () => {
    await source().listScope(SCOPE);
    server.caData.set(idOf('web').toLowerCase(), ROTATED);
    let from = server.requests.length;
    const one = await source().getCluster({ scope: SCOPE, name: 'web', resourceGroup: 'rg-web' });
    assert.equal(one?.certificateAuthorityData, ROTATED);
    assert.deepEqual(credentialReads(from), ['web']);
    from = server.requests.length;
    assert.equal(await caOf('web'), ROTATED);
    assert.deepEqual(credentialReads(from), []);
  });

  it('asks again after a CA read that failed, and remembers nothing of it', async () => {
    await source().listScope(SCOPE);
    server.credentialFailures.set(idOf('web').toLowerCase(), {
      status: 403,
      code: 'AuthorizationFailed',
      message: 'no listClusterUserCredential',
    });
    try {
      const one = await source().getCluster({ scope: SCOPE, name: 'web', resourceGroup: 'rg-web' });
      assert.equal(one?.certificateAuthorityUnavailable, 'AccessDenied');
      let from = server.requests.length;
      const listing = await source().listScope(SCOPE);
      assert.equal(
        listing.clusters.find((c) => c.name === 'web')?.certificateAuthorityUnavailable,
        'AccessDenied',
      );
      assert.deepEqual(credentialReads(from), ['web']);
      server.credentialFailures.delete(idOf('web').toLowerCase());
      from = server.requests.length;
      assert.equal(await caOf('web'), TEST_CA_DATA);
      assert.deepEqual(credentialReads(from), ['web']);
    } finally {
      server.credentialFailures.delete(idOf('web').toLowerCase());
    }
  });

  it('asks every listing without a store', async () => {
    for (let i = 0; i < 2; i++) {
      const from = server.requests.length;
      await new AksSource({ credential, endpoint: server.endpoint }).listScope(SCOPE);
      assert.deepEqual(credentialReads(from), ['data', 'east', 'web']);
    }
  });
});
