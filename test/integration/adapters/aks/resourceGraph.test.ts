/**
 * AKS listed through Azure Resource Graph (`listing: 'resourceGraph'`), with the real Resource Graph and
 * Container Service SDKs against the local ARM, whose index can be held behind ARM as the real one lags. The
 * oracle is the server's own log of the requests it received and the clusters the test set in ARM.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import type { ClientSecretCredential } from '@azure/identity';
import { AksSource, type AksSourceOptions } from '../../../../adapters/aks/AksSource.ts';
import { JsonLinesFileBus } from '../../../../adapters/bus/JsonLinesBus.ts';
import { FileHub } from '../../../../adapters/hub/FileHub.ts';
import { FileAnswerStore } from '../../../../adapters/outbox/FileAnswerStore.ts';
import { FileIntentLog } from '../../../../adapters/outbox/FileIntentLog.ts';
import { FileAbsenceStore } from '../../../../adapters/outbox/FileAbsenceStore.ts';
import { FileOutbox } from '../../../../adapters/outbox/FileOutbox.ts';
import { runSync, syncCluster } from '../../../../core/sync/engine.ts';
import type { Scope } from '../../../../core/domain/model/scope.ts';
import type { ObservedCluster } from '../../../../core/domain/model/observedCluster.ts';
import {
  armCredential,
  startArmServer,
  type ArmServer,
  type ManagedClusterJson,
} from '../../../env/fakes/armServer.ts';
import { inventoryOptions, runSettings } from '../../../support/settings.ts';
import { temporaryDirectory } from '../../../support/tmp.ts';

const SUBS = [
  '00000000-1111-2222-3333-a00000000001',
  '00000000-1111-2222-3333-a00000000002',
  '00000000-1111-2222-3333-a00000000003',
];
const scopeOf = (account: string, region = '*'): Scope => ({ provider: 'aks', account, region });

const idOf = (sub: string, name: string) =>
  `/subscriptions/${sub}/resourcegroups/rg-${name}/providers/Microsoft.ContainerService/managedClusters/${name}`;

/** Clusters unlike one another in every field the mapping reads. */
function variants(sub: string): ManagedClusterJson[] {
  const base = (name: string, location: string, properties: Record<string, unknown>, extra = {}) => ({
    id: idOf(sub, name),
    name,
    location,
    systemData: { createdAt: '2024-06-01T08:30:00Z', lastModifiedAt: '2024-06-02T08:30:00Z' },
    ...extra,
    properties: {
      provisioningState: 'Succeeded',
      kubernetesVersion: '1.30',
      currentKubernetesVersion: '1.30.4',
      ...properties,
    },
  });
  return [
    base(
      'public',
      'westeurope',
      {
        fqdn: 'public-dns.hcp.westeurope.azmk8s.io',
        powerState: { code: 'Running' },
        agentPoolProfiles: [{ name: 'system', count: 3, vmSize: 'Standard_D4s_v5', mode: 'System' }],
      },
      { tags: { env: 'prod', team: 'data' } },
    ),
    base('private', 'eastus', {
      privateFQDN: 'private-dns.privatelink.eastus.azmk8s.io',
      azurePortalFQDN: 'private-portal.portal.hcp.eastus.azmk8s.io',
      aadProfile: { managed: true, tenantID: '11111111-2222-3333-4444-555555555555' },
      agentPoolProfiles: [
        { name: 'a', count: 2, vmSize: 'Standard_D2s_v5', enableAutoScaling: true, minCount: 1, maxCount: 5 },
        { name: 'b', count: 4, vmSize: 'Standard_E4s_v5', powerState: { code: 'Stopped' } },
      ],
    }),
    base('broken', 'westeurope', {
      provisioningState: 'Failed',
      fqdn: 'broken-dns.hcp.westeurope.azmk8s.io',
      status: { provisioningError: { code: 'QuotaExceeded', message: 'no cores left' } },
      agentPoolProfiles: [{ name: 'system', count: 1, vmSize: 'Standard_D2s_v5' }],
    }),
  ];
}

describe('AKS listed through Resource Graph, against the local ARM', () => {
  let server: ArmServer;
  let credential: ClientSecretCredential;
  let store: FileAnswerStore;
  const source = (extra: Partial<AksSourceOptions> = {}) =>
    new AksSource({
      credential,
      endpoint: server.endpoint,
      answers: store,
      listing: 'resourceGraph',
      graphSubscriptions: SUBS,
      ...extra,
    });
  const requestsSince = (from: number) => server.requests.slice(from);
  const clusterReads = (from: number) =>
    requestsSince(from)
      .filter((r) => r.method === 'GET' && /\/managedClusters\/[^/]+$/i.test(r.path))
      .map((r) => r.path.split('/').at(-1)!)
      .sort();
  const armLists = (from: number) =>
    requestsSince(from).filter((r) => /\/managedClusters$/i.test(r.path)).length;
  const graphQueries = (from: number) =>
    requestsSince(from).filter((r) => /resourcegraph\/resources$/i.test(r.path)).length;
  const byName = (clusters: ObservedCluster[]) => new Map(clusters.map((c) => [c.name, c]));

  before(async () => {
    server = await startArmServer();
    credential = armCredential(server);
  });
  after(async () => server?.stop());
  beforeEach(() => {
    store = new FileAnswerStore(temporaryDirectory('cpsync-graph-'));
    server.clusters.clear();
    for (const sub of SUBS) server.clusters.set(sub, variants(sub));
    server.graph = undefined;
    server.graphPageSize = 1000;
    server.graphFailures = [];
  });

  it('lists what ARM lists, field for field, and then asks ARM nothing for clusters the graph shows unchanged', async () => {
    const arm = await new AksSource({ credential, endpoint: server.endpoint }).listScope(scopeOf(SUBS[0]!));
    const first = source();
    let mark = server.requests.length;
    const graphed = await first.listScope(scopeOf(SUBS[0]!));
    assert.equal(graphed.outcome.kind, 'complete');
    assert.deepEqual(
      graphed.clusters,
      arm.clusters,
      'the graph listing is ARM listing, CA and creation time included',
    );
    assert.deepEqual(
      clusterReads(mark),
      ['broken', 'private', 'public'],
      'a cluster never read is read from ARM once',
    );
    assert.equal(armLists(mark), 0);

    mark = server.requests.length;
    const again = await source().listScope(scopeOf(SUBS[0]!));
    assert.deepEqual(again.clusters, arm.clusters);
    assert.deepEqual(clusterReads(mark), ['broken'], 'only the cluster in a failed operation is read again');
    assert.equal(
      requestsSince(mark).filter((r) => r.path.endsWith('/listClusterUserCredential')).length,
      1,
      'and only its CA',
    );
  });

  it('serves every subscription of a run from one query, read page by page', async () => {
    server.graphPageSize = 2;
    const shared = source();
    for (const sub of SUBS) await shared.listScope(scopeOf(sub));
    const mark = server.requests.length;
    const listings = await Promise.all(SUBS.map((sub) => shared.listScope(scopeOf(sub))));
    assert.equal(graphQueries(mark), 0, 'within the share window the answer is shared');
    const fresh = source();
    const mark2 = server.requests.length;
    const again = await Promise.all(SUBS.map((sub) => fresh.listScope(scopeOf(sub))));
    assert.equal(graphQueries(mark2), 5, '9 rows at 2 a page: one query of 5 pages for 3 subscriptions');
    assert.equal(armLists(mark2), 0);
    assert.deepEqual(clusterReads(mark2), ['broken', 'broken', 'broken']);
    for (const [i, listing] of again.entries()) {
      assert.deepEqual(listing.clusters, listings[i]!.clusters);
      assert.ok(listing.clusters.every((c) => c.account === SUBS[i]));
    }
    assert.deepEqual(
      server.graphQueries.at(-1)?.subscriptions,
      SUBS,
      'the configured subscriptions are asked',
    );
  });

  it('asks for every subscription the identity can read when the configuration takes them all, and keeps each scope to its own', async () => {
    const all = source({ graphSubscriptions: undefined });
    const listing = await all.listScope(scopeOf(SUBS[2]!));
    assert.equal(server.graphQueries.at(-1)?.subscriptions, undefined, 'a tenant-wide query');
    assert.deepEqual(
      listing.clusters.map((c) => [c.account, c.name]),
      [
        [SUBS[2], 'broken'],
        [SUBS[2], 'private'],
        [SUBS[2], 'public'],
      ],
    );
  });

  it('keeps to one location when the scope names one', async () => {
    const listing = await source().listScope(scopeOf(SUBS[1]!, 'eastus'));
    assert.deepEqual(
      listing.clusters.map((c) => c.name),
      ['private'],
    );
  });

  it('reads from ARM a cluster the graph shows changed, and takes ARM’s answer over a graph behind it', async () => {
    await source().listScope(scopeOf(SUBS[0]!));
    const publicCluster = server.clusters.get(SUBS[0]!)!.find((c) => c.name === 'public')!;
    // The graph sees an upgrade half done; ARM has finished it.
    publicCluster.properties.currentKubernetesVersion = '1.31.1';
    server.indexGraph();
    publicCluster.properties.currentKubernetesVersion = '1.31.2';
    const mark = server.requests.length;
    const listing = await source().listScope(scopeOf(SUBS[0]!));
    assert.deepEqual(clusterReads(mark), ['broken', 'public']);
    assert.equal(byName(listing.clusters).get('public')?.kubernetesVersion, '1.31.2');
  });

  it('never lets a graph behind ARM undo what a cluster’s own read saw', async () => {
    const s = source();
    await s.listScope(scopeOf(SUBS[0]!));
    server.indexGraph();
    const publicCluster = server.clusters.get(SUBS[0]!)!.find((c) => c.name === 'public')!;
    publicCluster.properties.currentKubernetesVersion = '1.31.2';
    // The event's read sees the upgrade; the graph still shows 1.30.4.
    const read = await s.getCluster({ scope: scopeOf(SUBS[0]!), name: 'public', resourceGroup: 'rg-public' });
    assert.equal(read?.kubernetesVersion, '1.31.2');
    const listing = await source().listScope(scopeOf(SUBS[0]!));
    assert.equal(byName(listing.clusters).get('public')?.kubernetesVersion, '1.31.2');
  });

  it('leaves out a cluster the graph still shows once ARM answers it is gone, and forgets it on the event that said so', async () => {
    const s = source();
    await s.listScope(scopeOf(SUBS[0]!));
    server.indexGraph();
    server.clusters.set(
      SUBS[0]!,
      server.clusters.get(SUBS[0]!)!.filter((c) => c.name !== 'public'),
    );
    const gone = await s.getCluster({ scope: scopeOf(SUBS[0]!), name: 'public', resourceGroup: 'rg-public' });
    assert.equal(gone, undefined);
    const mark = server.requests.length;
    const listing = await source().listScope(scopeOf(SUBS[0]!));
    assert.equal(listing.outcome.kind, 'complete');
    assert.deepEqual(
      listing.clusters.map((c) => c.name),
      ['broken', 'private'],
    );
    assert.deepEqual(
      clusterReads(mark),
      ['broken', 'public'],
      'the row ARM no longer has is asked, and answered not found',
    );
  });

  it('answers for the clusters the graph does not show: there, gone, or not told', async () => {
    await source().listScope(scopeOf(SUBS[0]!));
    server.indexGraph();
    // Made after the graph was indexed: ARM has it, the graph not yet.
    const made: ManagedClusterJson = {
      ...variants(SUBS[0]!)[0]!,
      id: idOf(SUBS[0]!, 'newer'),
      name: 'newer',
    };
    server.clusters.get(SUBS[0]!)!.push(made);
    const listing = await source().listScope(scopeOf(SUBS[0]!));
    assert.ok(!listing.clusters.some((c) => c.name === 'newer'));
    assert.ok(listing.confirmAbsent, 'a graph listing has its absences confirmed');
    const elsewhere = idOf(SUBS[1]!, 'public');
    const answer = await listing.confirmAbsent([
      idOf(SUBS[0]!, 'newer'),
      idOf(SUBS[0]!, 'long-gone'),
      elsewhere,
    ]);
    assert.deepEqual(
      answer.present.map((c) => [c.name, c.createdAt, c.certificateAuthorityData !== undefined]),
      [['newer', '2024-06-01T08:30:00.000Z', true]],
    );
    assert.deepEqual(answer.gone, [idOf(SUBS[0]!, 'long-gone')]);
    assert.deepEqual(
      answer.unknown,
      [elsewhere],
      'another subscription’s cluster is not this scope’s to answer for',
    );
  });

  it('counts and follows, in a whole run, the clusters the graph did not show that ARM answered present', async () => {
    const directory = temporaryDirectory('cpsync-graph-run-');
    const ports = {
      sources: { aks: source({ graphShareMillis: 0 }) },
      hub: new FileHub({ directory: `${directory}/hub` }),
      bus: new JsonLinesFileBus(`${directory}/events.jsonl`),
      outbox: new FileOutbox(`${directory}/outbox`),
      intents: new FileIntentLog(`${directory}/outbox`),
      absences: new FileAbsenceStore(`${directory}/outbox`),
    };
    const settings = runSettings(inventoryOptions({ namespace: 'graph-run' }));
    const scope = scopeOf(SUBS[0]!);
    const run = () => runSync(ports, { syncId: `graph-run-${Math.random()}`, scopes: [scope], ...settings });
    const first = await run();
    assert.equal(first.scopes[0]!.summary.counts.created, 3);
    server.indexGraph();
    // Made after the graph was indexed and told by its event; ARM then starts upgrading it.
    server.clusters
      .get(SUBS[0]!)!
      .push({ ...variants(SUBS[0]!)[0]!, id: idOf(SUBS[0]!, 'newer'), name: 'newer' });
    const told = await syncCluster(ports, {
      syncId: 'graph-run-event',
      ref: { scope, name: 'newer', resourceGroup: 'rg-newer' },
      ...settings,
    });
    assert.equal(told.result, 'created');
    server.clusters.get(SUBS[0]!)!.at(-1)!.properties.provisioningState = 'Upgrading';

    const whole = await run();
    const { counts } = whole.scopes[0]!.summary;
    assert.equal(counts.listed, 4, 'the 3 rows the graph shows and the cluster ARM answered present');
    assert.equal(counts.updated, 1);
    assert.equal(counts.deleted, 0);
    assert.deepEqual(
      whole.settling.map((s) => [s.ref.name, s.state]),
      [['newer', 'AKS Upgrading']],
      'followed until it settles, as a listed cluster would be',
    );
  });

  it('lists through ARM when the graph cannot be read', async () => {
    server.graphFailures.push({
      status: 403,
      code: 'AuthorizationFailed',
      message: 'no Resource Graph read',
    });
    const mark = server.requests.length;
    const listing = await source().listScope(scopeOf(SUBS[0]!));
    assert.equal(listing.outcome.kind, 'complete');
    assert.equal(armLists(mark), 2, 'the subscription is listed by ARM instead (3 clusters, 2 a page)');
    assert.equal(listing.confirmAbsent, undefined, 'ARM’s own listing needs no confirming');
    assert.equal(listing.clusters.length, 3);
    assert.equal(graphQueries(server.requests.length), 0);
  });

  it('takes a listing whose changed cluster ARM cannot read for partial, naming it', async () => {
    await source().listScope(scopeOf(SUBS[0]!));
    const publicCluster = server.clusters.get(SUBS[0]!)!.find((c) => c.name === 'public')!;
    publicCluster.properties.currentKubernetesVersion = '1.31.2';
    server.readFailures.set(idOf(SUBS[0]!, 'public').toLowerCase(), {
      status: 403,
      code: 'AuthorizationFailed',
      message: 'no read on this resource group',
    });
    try {
      const listing = await source().listScope(scopeOf(SUBS[0]!));
      assert.equal(listing.outcome.kind, 'partial');
      assert.deepEqual(listing.outcome.missing, [idOf(SUBS[0]!, 'public')]);
      assert.deepEqual(
        listing.clusters.map((c) => c.name),
        ['broken', 'private'],
      );
    } finally {
      server.readFailures.clear();
    }
  });
});
