/**
 * A look at a consumer's grant made through the cloud itself (an EKS access entry and its access policy; Azure
 * role assignments on a cluster that uses Azure RBAC) says it left nothing only when nothing of cpsync's for
 * the identity may be there: a refusal after the look made something keeps the grant named in the ledger.
 * EKS is the access-entry API's documented shapes on the AWS proxy; Azure is the local ARM server; the
 * member (for the Azure look's bindings and proof) is the local kube-apiserver behind the TLS proxy.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import type { ManagedCluster } from '@azure/arm-containerservice';
import { EKSClient } from '@aws-sdk/client-eks';
import { AksRoleAssignments } from '../../../../adapters/aks/roleAssignments.ts';
import { EksAccessEntries } from '../../../../adapters/eks/accessEntries.ts';
import { CloudGrants } from '../../../../adapters/grants/CloudGrants.ts';
import { GRANT_CONSUMER_KEY, GRANT_MANAGER_KEY } from '../../../../adapters/grants/marks.ts';
import {
  planGrants,
  recordAfter,
  recordBefore,
  type Consumer,
  type GrantResult,
} from '../../../../core/domain/grants.ts';
import type { ClusterProfile } from '../../../../core/domain/model/clusterProfile.ts';
import { normalize } from '../../../../core/domain/normalize.ts';
import { restJsonError, startAwsProxy, type AwsProxy } from '../../../env/awsProxy.ts';
import {
  serveEksAccessEntries,
  type EksAccessEntries as EntriesServer,
} from '../../../env/eksAccessEntries.ts';
import { armCredential, startArmServer, type ArmServer } from '../../../env/fakes/armServer.ts';
import { startHubProxy, type HubProxy } from '../../../env/hubProxy.ts';
import { freePort } from '../../../env/net.ts';
import { aksCluster, eksCluster, NOW, reachingMember } from '../../../support/fixtures.ts';
import { localHub, uniqueNamespace } from '../../../support/hub.ts';
import { inventoryOptions } from '../../../support/settings.ts';

const REGION = 'eu-west-1';
/** One look's deadline in these tests. */
const LOOK_MILLIS = 10_000;

/** Resolves (to nothing) after `millis`: a client that takes that long to make. */
const made = (millis: number) =>
  millis > 0 ? new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), millis)) : undefined;
const ROLE = 'arn:aws:iam::111122223333:role/deployer';
const ENTRA = '0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0';
/** The Entra principal of the test of slow clients, apart from the others' assignments. */
const SLOW_ENTRA = '9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d';

/** The record after one look at `consumer` on the cluster of `profile`, as the engine takes it. */
async function look(grants: CloudGrants, profile: ClusterProfile, consumer: Consumer) {
  const [plan] = planGrants([profile], new Map(), [consumer]);
  assert.ok(plan?.ready);
  const ahead = recordBefore(plan);
  const result: GrantResult = await grants.ensure(plan, consumer);
  const record = recordAfter(plan, { results: new Map([[consumer.name, result]]), revoked: [] }, ahead);
  return { plan, result, named: record.grants.find((g) => g.consumer === consumer.name) };
}

describe("a look through the cloud's own grants names what it made, whatever refuses it afterwards", () => {
  const manager = uniqueNamespace('cpsync-cloud-looks');
  let aws: AwsProxy;
  let entries: EntriesServer;
  let arm: ArmServer;
  let member: HubProxy;
  let memberCa: string;
  let refuseAssociate = false;

  before(async () => {
    aws = await startAwsProxy('http://127.0.0.1:9'); // every call is answered by the interceptors
    // EKS refusing the access policy's association (the caller may create entries, not associate policies).
    aws.intercept((call) =>
      refuseAssociate && call.method === 'POST' && call.path.endsWith('/access-policies')
        ? restJsonError(403, 'AccessDeniedException', 'not authorized to perform eks:AssociateAccessPolicy')
        : undefined,
    );
    entries = serveEksAccessEntries(aws);
    arm = await startArmServer();
    const hub = await localHub();
    member = await startHubProxy(hub);
    memberCa = readFileSync(hub.caCert).toString('base64');
  });
  after(async () => {
    entries?.stop();
    await aws?.stop();
    await arm?.stop();
    await member?.stop();
  });

  /**
   * CloudGrants for AKS clusters that use Azure RBAC: role assignments on the local ARM, bindings on the member.
   * `makingMillis`: how long the role-assignment client takes to make (as its SDK's first load does).
   */
  const azureGrants = (armEndpoint?: string, makingMillis = 0) =>
    new CloudGrants({
      manager,
      tokens: { aks: async () => ({ token: 'aks-token' }) },
      // The member is a local server: a cloud the configuration would reach on this machine.
      localClouds: ['eks', 'gke', 'aks'],
      accessProviderNames: { eks: 'eks', gke: 'gke', aks: 'aks' },
      aks: async () =>
        (await made(makingMillis)) ??
        new AksRoleAssignments({
          credential: armCredential(arm),
          endpoint: armEndpoint ?? arm.endpoint,
          manager,
          cluster: async (providerId: string) =>
            ({
              id: providerId,
              provisioningState: 'Succeeded',
              aadProfile: { managed: true, enableAzureRbac: true },
            }) as ManagedCluster,
        }),
      timeoutMillis: LOOK_MILLIS,
    });

  /** CloudGrants for EKS clusters: access entries through the access-entry API's shapes on the AWS proxy. */
  const eksGrants = (makingMillis = 0) =>
    new CloudGrants({
      manager,
      tokens: {},
      // The member is a local server: a cloud the configuration would reach on this machine.
      localClouds: ['eks', 'gke', 'aks'],
      accessProviderNames: { eks: 'eks', gke: 'gke', aks: 'aks' },
      eks: async () =>
        (await made(makingMillis)) ??
        new EksAccessEntries({
          manager,
          client: async (_account, region) =>
            new EKSClient({
              region,
              endpoint: aws.endpoint,
              credentials: { accessKeyId: 'AKIDLOOKS', secretAccessKey: 'looks' },
            }),
        }),
      timeoutMillis: LOOK_MILLIS,
    });

  /** A ready AKS cluster whose profile reaches the member through the proxy. */
  function azureProfile(name: string): ClusterProfile {
    return reachingMember(
      normalize(aksCluster({ name }), inventoryOptions({ namespace: 'cluster-inventory' }), NOW),
      member.server,
      memberCa,
    );
  }

  it("EKS in another partition: grants with the access policy of the cluster's partition, and moves the level within it", async () => {
    const grants = eksGrants();
    for (const [region, partition] of [
      ['cn-north-1', 'aws-cn'],
      ['us-gov-west-1', 'aws-us-gov'],
    ] as const) {
      const role = `arn:${partition}:iam::111122223333:role/deployer`;
      const cluster = eksCluster({ name: 'sovereign', region });
      assert.ok(cluster.providerId.startsWith(`arn:${partition}:eks:${region}:`));
      const profile = normalize(cluster, inventoryOptions({ namespace: 'cluster-inventory' }), NOW);
      const consumer: Consumer = {
        name: 'deployer',
        namespaces: ['cluster-inventory'],
        level: 'view',
        identities: { eks: role },
      };
      const viewed = await look(grants, profile, consumer);
      assert.deepEqual(
        [viewed.result.status, viewed.result.reason],
        ['True', 'Granted'],
        viewed.result.message,
      );
      // EKS holds the policy by its ARN in the cluster's partition (the server refuses any other partition's).
      const policies = () =>
        entries
          .of(region, 'sovereign')
          .get(role)
          ?.policies.map((p) => p.policyArn);
      assert.deepEqual(policies(), [`arn:${partition}:eks::aws:cluster-access-policy/AmazonEKSViewPolicy`]);
      // Another level: the partition's edit policy in, its view policy (cpsync's, another level) out.
      const edited = await look(grants, profile, { ...consumer, level: 'edit' });
      assert.deepEqual(
        [edited.result.status, edited.result.reason],
        ['True', 'Granted'],
        edited.result.message,
      );
      assert.deepEqual(policies(), [`arn:${partition}:eks::aws:cluster-access-policy/AmazonEKSEditPolicy`]);
    }
  });

  it("EKS: another level's policy on a later page of the entry's associated policies is taken off", async () => {
    const grants = eksGrants();
    const region = 'eu-central-1';
    const role = 'arn:aws:iam::111122223333:role/paged';
    const profile = normalize(
      eksCluster({ name: 'paged', region }),
      inventoryOptions({ namespace: 'cluster-inventory' }),
      NOW,
    );
    const consumer: Consumer = {
      name: 'paged',
      namespaces: ['cluster-inventory'],
      level: 'view',
      identities: { eks: role },
    };
    const policy = (name: string) => `arn:aws:eks::aws:cluster-access-policy/${name}`;
    const policies = () =>
      entries
        .of(region, 'paged')
        .get(role)
        ?.policies.map((p) => p.policyArn);
    try {
      entries.policiesPageSize = 1;
      const viewed = await look(grants, profile, consumer);
      assert.equal(viewed.result.status, 'True', viewed.result.message);
      assert.deepEqual(policies(), [policy('AmazonEKSViewPolicy')]);
      // An earlier look at `edit` associated its policy and stopped before taking the view policy off: EKS lists
      // the edit policy first, one a page, so the view policy is on the second page.
      const entry = entries.of(region, 'paged').get(role)!;
      entry.policies.unshift({ ...entry.policies[0]!, policyArn: policy('AmazonEKSEditPolicy') });
      const edited = await look(grants, profile, { ...consumer, level: 'edit' });
      assert.equal(edited.result.status, 'True', edited.result.message);
      assert.deepEqual(policies(), [policy('AmazonEKSEditPolicy')]);
    } finally {
      delete entries.policiesPageSize;
    }
  });

  it("a look's deadline starts once the cloud's client is made: a client slow to make (its SDK's first load) takes none of it", async () => {
    // Each client takes as long to make as a look's deadline. Made within the look, every look would end at
    // its deadline, whose timer is set first and so fires first; made before, each look has its whole deadline.
    const options = inventoryOptions({ namespace: 'cluster-inventory' });
    const eks = (name: string) => normalize(eksCluster({ name, region: REGION }), options, NOW);
    const viewer = (identities: Consumer['identities']): Consumer => ({
      name: 'slow',
      namespaces: ['cluster-inventory'],
      level: 'view',
      identities,
    });
    const everyCluster = (profile: ClusterProfile) =>
      planGrants([profile], new Map(), [], { everyCluster: true })[0]!;
    // A grant of cpsync's to revoke on each cloud: an access entry, a role assignment on the cluster.
    const revokedEks = eks('slow-revoked');
    entries.put(REGION, 'slow-revoked', ROLE);
    entries.of(REGION, 'slow-revoked').get(ROLE)!.tags = {
      [GRANT_MANAGER_KEY]: manager,
      [GRANT_CONSUMER_KEY]: 'slow',
    };
    const revokedAks = azureProfile('slow-revoked');
    const revokedAksScope = revokedAks.metadata.annotations!['cpsync.io/provider-id']!;
    const assignment =
      `${revokedAksScope}/providers/Microsoft.Authorization/roleAssignments/slow`.toLowerCase();
    arm.roleAssignments.set(assignment, {
      id: assignment,
      name: 'slow',
      type: 'Microsoft.Authorization/roleAssignments',
      properties: {
        scope: revokedAksScope,
        roleDefinitionId:
          '/providers/Microsoft.Authorization/roleDefinitions/7f6c6a51-bcf8-42ba-9220-52d62157d7db',
        principalId: SLOW_ENTRA,
        description: `${manager}: access grant for consumer slow`,
      },
    });
    const held = (identity: string) => ({ consumer: 'slow', identity });
    const revokePlan = (profile: ClusterProfile, identity: string) => {
      const plan = everyCluster(profile);
      return { ...plan, held: [held(identity)] };
    };
    const [eksGrant, aksGrant, eksScan, aksScan, eksRevoke, aksRevoke] = await Promise.all([
      look(eksGrants(LOOK_MILLIS), eks('slow-granted'), viewer({ eks: ROLE })),
      look(azureGrants(undefined, LOOK_MILLIS), azureProfile('slow-granted'), viewer({ aks: SLOW_ENTRA })),
      eksGrants(LOOK_MILLIS).sweep(everyCluster(eks('slow-scanned')), () => false, [ROLE]),
      azureGrants(undefined, LOOK_MILLIS).sweep(everyCluster(azureProfile('slow-scanned')), () => false, [
        SLOW_ENTRA,
      ]),
      eksGrants(LOOK_MILLIS).revoke(revokePlan(revokedEks, ROLE), held(ROLE)),
      azureGrants(undefined, LOOK_MILLIS).revoke(revokePlan(revokedAks, SLOW_ENTRA), held(SLOW_ENTRA)),
    ]);
    assert.deepEqual(
      [eksGrant.result.reason, eksGrant.named?.pending],
      ['Granted', undefined],
      eksGrant.result.message,
    );
    // Azure's assignment made and held; the member here (a kube-apiserver) does not authorize by Azure RBAC,
    // so its proof says no: an answer, not the deadline.
    assert.deepEqual(
      [aksGrant.result.reason, aksGrant.named?.identity, aksGrant.named?.pending],
      ['NotAllowed', SLOW_ENTRA, undefined],
      aksGrant.result.message,
    );
    assert.deepEqual(
      [...arm.roleAssignments.values()]
        .filter((a) => a.properties.principalId === SLOW_ENTRA)
        .map((a) => a.properties.scope.split('/').at(-1)),
      ['slow-granted'],
    );
    assert.deepEqual(eksScan, { removed: [], complete: true });
    assert.deepEqual(aksScan, { removed: [], complete: true });
    assert.deepEqual(eksRevoke, { revoked: true, message: `access entry for ${ROLE} deleted` });
    assert.equal(entries.of(REGION, 'slow-revoked').size, 0);
    assert.equal(aksRevoke.revoked, true, aksRevoke.message);
    assert.equal(arm.roleAssignments.has(assignment), false, "cpsync's role assignment was taken off");
  });

  it('EKS: the access entry made before its policy was refused stays named', async () => {
    const grants = eksGrants();
    const profile = normalize(
      eksCluster({ name: 'looks', region: REGION }),
      inventoryOptions({ namespace: 'cluster-inventory' }),
      NOW,
    );
    const consumer: Consumer = {
      name: 'deployer',
      namespaces: ['cluster-inventory'],
      level: 'edit',
      identities: { eks: ROLE },
    };
    refuseAssociate = true;
    const refused = await look(grants, profile, consumer);
    assert.equal(refused.result.reason, 'Refused');
    assert.equal(refused.result.untouched, undefined);
    const entry = entries.of(REGION, 'looks').get(ROLE);
    assert.equal(entry?.tags[GRANT_CONSUMER_KEY], 'deployer', "cpsync's entry was made");
    assert.deepEqual(entry?.policies, [], 'without its policy');
    assert.equal(refused.named?.pending, true, 'the entry is named, pending');
    // cpsync's entry already there (an earlier look made it, no record names it), its policy refused: the look
    // made nothing, but found cpsync's entry, and names it.
    entries.of(REGION, 'looks').clear();
    entries.put(REGION, 'looks', ROLE);
    entries.of(REGION, 'looks').get(ROLE)!.tags = {
      [GRANT_MANAGER_KEY]: manager,
      [GRANT_CONSUMER_KEY]: 'deployer',
    };
    const found = await look(grants, profile, consumer);
    assert.deepEqual(
      [found.result.reason, found.result.untouched, found.named?.pending],
      ['Refused', undefined, true],
    );
    // Refused at its first write (nothing made): nothing named.
    entries.of(REGION, 'looks').clear();
    entries.refuse.add(`${REGION}/looks`);
    const first = await look(grants, profile, consumer);
    assert.deepEqual(
      [first.result.reason, first.result.untouched, first.named],
      ['Refused', true, undefined],
    );
    assert.equal(entries.of(REGION, 'looks').size, 0);
    // Allowed: granted and named as held.
    entries.refuse.clear();
    refuseAssociate = false;
    const granted = await look(grants, profile, consumer);
    assert.deepEqual([granted.result.status, granted.named?.pending], ['True', undefined]);
  });

  it("Azure RBAC: the first namespace's assignment made before the second was refused stays named", async () => {
    const namespaces = [uniqueNamespace('looks-a'), uniqueNamespace('looks-b')];
    const grants = azureGrants();
    const profile = azureProfile('looks');
    const providerId = profile.metadata.annotations!['cpsync.io/provider-id']!;
    const consumer: Consumer = {
      name: 'analyst',
      namespaces: ['cluster-inventory'],
      level: 'view',
      identities: { aks: ENTRA },
      memberNamespaces: namespaces,
    };
    arm.refuseAssignments.add(`${providerId}/namespaces/${namespaces[1]}`.toLowerCase());
    const refused = await look(grants, profile, consumer);
    assert.equal(refused.result.reason, 'Refused');
    assert.match(refused.result.message, /Azure refused the role assignment/);
    const made = [...arm.roleAssignments.values()].filter((a) => a.properties.principalId === ENTRA);
    assert.deepEqual(
      made.map((a) => a.properties.scope.toLowerCase()),
      [`${providerId}/namespaces/${namespaces[0]}`.toLowerCase()],
      'the first namespace was assigned',
    );
    assert.equal(refused.named?.pending, true, 'the assignment is named, pending');
    // Refused at the first namespace (nothing made): nothing named.
    for (const id of arm.roleAssignments.keys()) arm.roleAssignments.delete(id);
    arm.refuseAssignments.add(`${providerId}/namespaces/${namespaces[0]}`.toLowerCase());
    const first = await look(grants, profile, consumer);
    assert.deepEqual(
      [first.result.reason, first.result.untouched, first.named],
      ['Refused', true, undefined],
    );
    assert.equal(arm.roleAssignments.size, 0);
  });

  it("Azure RBAC: a consumer's namespaces changed take its old assignments off, and a revocation takes every one of cpsync's whatever terms the record gives", async () => {
    const [a, b, c] = [uniqueNamespace('moved-a'), uniqueNamespace('moved-b'), uniqueNamespace('moved-c')];
    const grants = azureGrants();
    const profile = azureProfile('moved');
    const providerId = profile.metadata.annotations!['cpsync.io/provider-id']!.toLowerCase();
    const consumer = (memberNamespaces: string[]): Consumer => ({
      name: 'mover',
      namespaces: ['cluster-inventory'],
      level: 'view',
      identities: { aks: ENTRA },
      memberNamespaces,
    });
    const scopes = () =>
      [...arm.roleAssignments.values()]
        .filter(
          (x) =>
            x.properties.principalId === ENTRA && x.properties.scope.toLowerCase().startsWith(providerId),
        )
        .map((x) => x.properties.scope.toLowerCase().slice(providerId.length))
        .sort();
    // Someone else's assignment of the same principal in a namespace the consumer leaves: never touched.
    const foreignId = `${providerId}/namespaces/${a}/providers/microsoft.authorization/roleassignments/foreign-${a}`;
    arm.roleAssignments.set(foreignId, {
      id: foreignId,
      name: `foreign-${a}`,
      type: 'Microsoft.Authorization/roleAssignments',
      properties: {
        scope: `${providerId}/namespaces/${a}`,
        // Another role than the consumer's: cpsync still makes its own.
        roleDefinitionId:
          '/providers/Microsoft.Authorization/roleDefinitions/a7ffa36f-339b-4b5c-8bdf-e2c188b2c0eb',
        principalId: ENTRA,
        description: 'granted by hand',
      },
    });
    const ours = () =>
      [...arm.roleAssignments.values()]
        .filter((x) => x.properties.description !== 'granted by hand')
        .map((x) => x.properties.scope.toLowerCase());
    await look(grants, profile, consumer([a]));
    assert.deepEqual(ours().filter((x) => x.startsWith(providerId)).length, 1);
    await look(grants, profile, consumer([b]));
    assert.deepEqual(
      scopes(),
      [`/namespaces/${a}`, `/namespaces/${b}`],
      "cpsync's in the old namespace is taken off once the new one holds; the one by hand stays",
    );
    assert.ok(arm.roleAssignments.has(foreignId));
    // Moved again, refused in the new namespace: the old one stays (and the record names the grant).
    arm.refuseAssignments.add(`${providerId}/namespaces/${c}`);
    const refused = await look(grants, profile, consumer([c]));
    assert.equal(refused.named?.pending, true);
    assert.deepEqual(refused.named?.memberNamespaces, [c]);
    assert.deepEqual(scopes(), [`/namespaces/${a}`, `/namespaces/${b}`]);
    // Revoked as the record names it (namespace c only): b's assignment goes too, the one by hand stays.
    const revoked = await grants.revoke({ ...refused.plan, held: [refused.named!] }, refused.named!);
    assert.equal(revoked.revoked, true, revoked.message);
    assert.deepEqual(scopes(), [`/namespaces/${a}`]);
    assert.ok(arm.roleAssignments.has(foreignId));
  });

  it('Azure RBAC: a scan of its marks says the cluster unreachable only when Azure was scanned whole and the member never answered', async () => {
    const profile = azureProfile('scanned');
    const providerId = profile.metadata.annotations!['cpsync.io/provider-id']!;
    const [plan] = planGrants([profile], new Map(), [], { everyCluster: true });
    const plant = () => {
      const id = `${providerId}/providers/Microsoft.Authorization/roleAssignments/left-behind`.toLowerCase();
      arm.roleAssignments.set(id, {
        id,
        name: 'left-behind',
        type: 'Microsoft.Authorization/roleAssignments',
        properties: {
          scope: providerId,
          roleDefinitionId:
            '/providers/Microsoft.Authorization/roleDefinitions/7f6c6a51-bcf8-42ba-9220-52d62157d7db',
          principalId: ENTRA,
          description: `${manager}: access grant for consumer gone`,
        },
      });
      return id;
    };
    const closed = `https://127.0.0.1:${await freePort()}`;
    // The member never answers, Azure does: Azure's marks are taken out, and the member is said unreachable.
    const planted = plant();
    const memberAway = await azureGrants().sweep(
      { ...plan!, profile: reachingMember(profile, closed) },
      () => false,
      [ENTRA],
    );
    assert.deepEqual([memberAway.complete, memberAway.unreachable], [false, true]);
    assert.equal(arm.roleAssignments.has(planted), false, "Azure's own part was scanned whole");
    // Azure never answers: not said unreachable (what Azure holds is unknown), and kept for the next look.
    plant();
    const armAway = await azureGrants(closed).sweep(plan!, () => false, [ENTRA]);
    assert.deepEqual([armAway.complete, armAway.unreachable], [false, undefined]);
  });
});
