/**
 * A cloud's answer of another shape than its API's — an empty body, a list without its `value`, a 404 in no envelope
 * of ARM's, a cluster without a location — says nothing of what cpsync asked: it is never read as "gone", "none
 * granted", "a listing of all" or "no CA". Against the local ARM server over TLS and the local GKE server, each
 * answering once as a proxy, a gateway or an endpoint override might.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ManagedCluster } from '@azure/arm-containerservice';
import { AksSource } from '../../../adapters/aks/AksSource.ts';
import { AksRoleAssignments } from '../../../adapters/aks/roleAssignments.ts';
import { GkeSource } from '../../../adapters/gke/GkeSource.ts';
import { planGrants } from '../../../core/domain/grants.ts';
import { normalize } from '../../../core/domain/normalize.ts';
import { aksCluster as armCluster, gkeCluster as googleCluster } from '../../env/emulators.ts';
import { armCredential, startArmServer, type ArmServer } from '../../env/fakes/armServer.ts';
import { startGkeServer, type GkeServer } from '../../env/fakes/gkeServer.ts';
import { aksCluster, NOW } from '../../support/fixtures.ts';
import { inventoryOptions } from '../../support/settings.ts';

const SUB = '00000000-1111-2222-3333-555555555555';

describe('cloud answers of another shape', () => {
  let arm: ArmServer;
  let gke: GkeServer;

  before(async () => {
    arm = await startArmServer();
    gke = await startGkeServer();
  });
  after(async () => {
    await arm?.stop();
    await gke?.stop();
  });

  const aks = () => new AksSource({ credential: armCredential(arm), endpoint: arm.endpoint });
  const id = (name: string, group = 'rg-shapes') =>
    `/subscriptions/${SUB}/resourcegroups/${group}/providers/Microsoft.ContainerService/managedClusters/${name}`;

  it('AKS: a 404 in no ARM envelope (a gateway’s) is a failed read, not the cluster gone; ARM’s own is', async () => {
    arm.clusters.set(SUB, []);
    const ref = {
      scope: { provider: 'aks' as const, account: SUB, region: '*' },
      name: 'gone',
      resourceGroup: 'rg-shapes',
    };
    for (const raw of [
      '{"code":"NotFound","message":"no route"}',
      '{"code":"ResourceNotFound"}',
      '<html>404</html>',
      '',
    ]) {
      arm.readFailures.set(id('gone').toLowerCase(), { status: 404, code: '', message: '', raw });
      await assert.rejects(aks().getCluster(ref), (error: unknown) => error instanceof Error, raw);
    }
    arm.readFailures.clear();
    assert.equal(await aks().getCluster(ref), undefined, "ARM's own not-found: gone");
  });

  it('AKS: a user kubeconfig answer without a CA is a CA not read (asked again), never a cluster without one', async () => {
    arm.clusters.set(SUB, [armCluster('ca', 'rg-shapes', {}, SUB)]);
    for (const raw of [
      '{"kubeconfigs":[]}',
      '{"kubeconfigs":null}',
      '{}',
      `{"kubeconfigs":[{"name":"clusterUser","value":"${Buffer.from('kind: Config\n').toString('base64')}"}]}`,
    ]) {
      arm.credentialFailures.set(id('ca').toLowerCase(), { status: 200, code: '', message: '', raw });
      const listing = await aks().listScope({ provider: 'aks', account: SUB, region: '*' });
      const [cluster] = listing.clusters;
      assert.equal(cluster?.certificateAuthorityData, undefined, raw);
      assert.match(
        cluster?.certificateAuthorityUnavailable ?? '',
        /^(InvalidResponse|UnreadableKubeconfig)$/,
        raw,
      );
    }
    arm.credentialFailures.clear();
    // Read again at the next listing (nothing of the answer stood for the CA), as the cluster's CA.
    const [read] = (await aks().listScope({ provider: 'aks', account: SUB, region: '*' })).clusters;
    assert.ok(read?.certificateAuthorityData);
  });

  it('AKS and GKE: a listed cluster whose location is not told makes a region’s listing partial, not its absence', async () => {
    arm.clusters.set(SUB, [
      armCluster('here', 'rg-shapes', {}, SUB),
      { ...armCluster('nowhere', 'rg-shapes', {}, SUB), location: undefined as never },
    ]);
    const azure = await aks().listScope({ provider: 'aks', account: SUB, region: 'westeurope' });
    assert.deepEqual([azure.outcome.kind, azure.outcome.missing], ['partial', ['nowhere (no location)']]);
    assert.deepEqual(
      azure.clusters.map((c) => c.name),
      ['here'],
    );
    const whole = await aks().listScope({ provider: 'aks', account: SUB, region: '*' });
    assert.equal(whole.outcome.kind, 'complete', 'a subscription listed whole needs no location');

    const project = 'acme-shapes';
    gke.clusters.set(project, [
      googleCluster('here', 'europe-west1'),
      { ...googleCluster('nowhere', 'europe-west1'), location: '', zone: '' } as never,
    ]);
    const source = new GkeSource({
      credentials: gke.serviceAccountKey,
      endpoint: gke.endpoint,
      maxRetries: 0,
    });
    try {
      const google = await source.listScope({ provider: 'gke', account: project, region: 'europe-west1' });
      assert.deepEqual([google.outcome.kind, google.outcome.missing], ['partial', ['nowhere (no location)']]);
    } finally {
      await source.close();
    }
  });

  it('AKS grants: a role assignment page without its list, or a cluster answered without itself, is a failed scan or revocation', async () => {
    const cluster = normalize(aksCluster({ name: 'granted' }), inventoryOptions(), NOW);
    const [plan] = planGrants([cluster], new Map(), [], { everyCluster: true });
    const withRbac = {
      id: 'x',
      provisioningState: 'Succeeded',
      aadProfile: { managed: true, enableAzureRbac: true },
    };
    const assignments = (answer: object) =>
      new AksRoleAssignments({
        credential: armCredential(arm),
        endpoint: arm.endpoint,
        manager: 'cpsync',
        cluster: async () => answer as ManagedCluster,
      });
    for (const raw of ['{"value":null}', '{}', '{"error":{"code":"Gateway"}}']) {
      arm.assignmentFaults.push({ method: 'GET', fault: { status: 200, code: '', message: '', raw } });
      await assert.rejects(
        assignments(withRbac).sweep(plan!, () => false, []),
        /a page without its list \(value\)/,
        raw,
      );
      arm.assignmentFaults.push({ method: 'GET', fault: { status: 200, code: '', message: '', raw } });
      await assert.rejects(
        assignments(withRbac).revoke(plan!, {
          consumer: 'deployer',
          identity: '0000000a-0000-4000-8000-000000000001',
          level: 'view',
        } as never),
        /a page without its list \(value\)/,
        raw,
      );
    }
    arm.assignmentFaults.splice(0);
    await assert.rejects(assignments({}).usesAzureRbac(plan!), /an answer without its id or properties/);
    assert.equal(await assignments(withRbac).usesAzureRbac(plan!), true);
  });
});
