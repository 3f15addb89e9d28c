/**
 * cpsync's marks on a grant (an EKS access entry's tags, an Azure role assignment's description) are anyone's to
 * write who may tag an entry or describe an assignment: a scan for them (the turn-off's, or one for a record lost)
 * must not delete a grant of a principal cpsync never grants to — a break-glass administrator's entry tagged as
 * cpsync's. Through the access-entry API's documented shapes on the AWS proxy and the local ARM server: whatever
 * entries and assignments a cluster holds, of whichever principals, marked or not, as whichever manager's, a scan
 * that keeps nothing deletes exactly those marked as this manager's of a principal it knows (a consumer's configured
 * identity, or one the ledger holds a grant of), and nothing else.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ManagedCluster } from '@azure/arm-containerservice';
import { EKSClient } from '@aws-sdk/client-eks';
import fc from 'fast-check';
import { AksRoleAssignments } from '../../../../adapters/aks/roleAssignments.ts';
import { EksAccessEntries } from '../../../../adapters/eks/accessEntries.ts';
import { CloudGrants } from '../../../../adapters/grants/CloudGrants.ts';
import {
  GRANT_CONSUMER_KEY,
  GRANT_MANAGER_KEY,
  grantDescription,
} from '../../../../adapters/grants/marks.ts';
import { planGrants } from '../../../../core/domain/grants.ts';
import { normalize } from '../../../../core/domain/normalize.ts';
import { startAwsProxy, type AwsProxy } from '../../../env/awsProxy.ts';
import {
  serveEksAccessEntries,
  type EksAccessEntries as EntriesServer,
} from '../../../env/eksAccessEntries.ts';
import { armCredential, startArmServer, type ArmServer } from '../../../env/fakes/armServer.ts';
import { freePort } from '../../../env/net.ts';
import { aksCluster, eksCluster, NOW, reachingMember } from '../../../support/fixtures.ts';
import { inventoryOptions } from '../../../support/settings.ts';

const MANAGER = 'cpsync';
const REGION = 'eu-west-1';
const LOOK_MILLIS = 10_000;

/** How a grant is marked: as this manager's (both marks), another manager's, one mark only, or not at all. */
type Marking = 'ours' | 'another manager' | 'consumer tag only' | 'none';
const markings: readonly Marking[] = ['ours', 'another manager', 'consumer tag only', 'none'];

/** Whose grant: a principal cpsync knows (configured, or held in the ledger) or one it never grants to. */
const principal = fc.record({
  known: fc.boolean(),
  index: fc.integer({ min: 0, max: 5 }),
  marking: fc.constantFrom(...markings),
});

/** The grants a cluster holds: at most one per principal. */
const grantsHeld = fc.uniqueArray(principal, { selector: (p) => `${p.known}${p.index}`, maxLength: 8 });

describe("a scan for cpsync's marks deletes only grants of principals cpsync grants to", () => {
  let aws: AwsProxy;
  let entries: EntriesServer;
  let arm: ArmServer;
  let runs = 0;
  let closedPort: number;

  before(async () => {
    closedPort = await freePort();
    aws = await startAwsProxy('http://127.0.0.1:9'); // every call is answered by the interceptors
    entries = serveEksAccessEntries(aws);
    arm = await startArmServer();
  });
  after(async () => {
    entries?.stop();
    await aws?.stop();
    await arm?.stop();
  });

  const grants = () =>
    new CloudGrants({
      manager: MANAGER,
      tokens: {},
      localClouds: ['eks', 'gke', 'aks'],
      accessProviderNames: { eks: 'eks', gke: 'gke', aks: 'aks' },
      eks: async () =>
        new EksAccessEntries({
          manager: MANAGER,
          client: async (_account, region) =>
            new EKSClient({
              region,
              endpoint: aws.endpoint,
              credentials: { accessKeyId: 'AKIDMARKS', secretAccessKey: 'marks' },
            }),
        }),
      aks: async () =>
        new AksRoleAssignments({
          credential: armCredential(arm),
          endpoint: arm.endpoint,
          manager: MANAGER,
          cluster: async (providerId: string) =>
            ({
              id: providerId,
              provisioningState: 'Succeeded',
              aadProfile: { managed: true, enableAzureRbac: true },
            }) as ManagedCluster,
        }),
      timeoutMillis: LOOK_MILLIS,
    });

  const marks = (marking: Marking, consumer: string): Record<string, string> =>
    marking === 'ours'
      ? { [GRANT_MANAGER_KEY]: MANAGER, [GRANT_CONSUMER_KEY]: consumer }
      : marking === 'another manager'
        ? { [GRANT_MANAGER_KEY]: 'platform', [GRANT_CONSUMER_KEY]: consumer }
        : marking === 'consumer tag only'
          ? { [GRANT_CONSUMER_KEY]: consumer }
          : {};

  it('EKS access entries, tagged by anyone (property)', async () => {
    await fc.assert(
      fc.asyncProperty(grantsHeld, async (held) => {
        runs += 1;
        const name = `marks-${runs}`;
        const role = (p: { known: boolean; index: number }) =>
          `arn:aws:iam::111122223333:role/${p.known ? 'consumer' : 'break-glass'}-${p.index}`;
        for (const p of held) {
          entries.put(REGION, name, role(p));
          entries.of(REGION, name).get(role(p))!.tags = marks(p.marking, `c${p.index}`);
        }
        const profile = normalize(eksCluster({ name, region: REGION }), inventoryOptions(), NOW);
        const [plan] = planGrants([profile], new Map(), [], { everyCluster: true });
        // What cpsync knows: every known role, whether a grant of it is there or not.
        const known = Array.from({ length: 6 }, (_, index) => role({ known: true, index }));
        const scan = await grants().sweep(plan!, () => false, known);
        assert.equal(scan.complete, true);
        const taken = held.filter((p) => p.known && p.marking === 'ours').map(role);
        assert.deepEqual(scan.removed.map((r) => r.identity).sort(), [...taken].sort());
        assert.deepEqual(
          [...entries.of(REGION, name).keys()].sort(),
          held
            .map(role)
            .filter((r) => !taken.includes(r))
            .sort(),
          'every other entry is there as it was',
        );
      }),
      { numRuns: 25 },
    );
  });

  it('EKS: a listing page without its list, or an entry answered without itself, is a failed scan or revocation', async () => {
    runs += 1;
    const name = `marks-${runs}`;
    const role = 'arn:aws:iam::111122223333:role/consumer-0';
    entries.put(REGION, name, role);
    entries.of(REGION, name).get(role)!.tags = marks('ours', 'c0');
    const profile = normalize(eksCluster({ name, region: REGION }), inventoryOptions(), NOW);
    const [plan] = planGrants([profile], new Map(), [], { everyCluster: true });
    for (const body of ['{}', '{"accessEntries":null}', '{"accessEntry":null}', '']) {
      // Ahead of the entries' own interceptor: the next listing and the next description answer this.
      let left = 2;
      const stop = aws.intercept(
        (call) =>
          call.method === 'GET' && call.path.includes('/access-entries') && left-- > 0
            ? { status: 200, headers: { 'content-type': 'application/json' }, body }
            : undefined,
        { first: true },
      );
      try {
        const scan = await grants().sweep(plan!, () => false, [role]);
        assert.equal(scan.complete, false, body);
        const revoked = await grants().revoke(plan!, {
          consumer: 'c0',
          identity: role,
          level: 'view',
        } as never);
        assert.equal(revoked.revoked, false, `${body}: ${JSON.stringify(revoked)}`);
      } finally {
        stop();
      }
      assert.deepEqual([...entries.of(REGION, name).keys()], [role], `${body}: the entry is there as it was`);
    }
  });

  it('Azure role assignments on a cluster that uses Azure RBAC, described by anyone (property)', async () => {
    await fc.assert(
      fc.asyncProperty(grantsHeld, async (held) => {
        runs += 1;
        // Its member on a port nothing listens on: refused (loopback, a cloud this configuration reaches locally).
        const cluster = reachingMember(
          normalize(aksCluster({ name: `marks-${runs}` }), inventoryOptions(), NOW),
          `https://127.0.0.1:${closedPort}`,
        );
        const scope = cluster.metadata.annotations!['cpsync.io/provider-id']!;
        const principalOf = (p: { known: boolean; index: number }) =>
          `${p.known ? '0000000a' : '0000000b'}-0000-4000-8000-${String(p.index).padStart(12, '0')}`;
        arm.roleAssignments.clear();
        for (const p of held) {
          const id = `${scope}/providers/Microsoft.Authorization/roleAssignments/${principalOf(p)}`;
          const marked = marks(p.marking, `c${p.index}`);
          arm.roleAssignments.set(id.toLowerCase(), {
            id,
            name: principalOf(p),
            type: 'Microsoft.Authorization/roleAssignments',
            properties: {
              scope,
              roleDefinitionId:
                '/providers/Microsoft.Authorization/roleDefinitions/7f6c6a51-bcf8-42ba-9220-52d62157d7db',
              principalId: principalOf(p),
              ...(marked[GRANT_MANAGER_KEY]
                ? { description: grantDescription(marked[GRANT_MANAGER_KEY], `c${p.index}`) }
                : {}),
            },
          });
        }
        const [plan] = planGrants([cluster], new Map(), [], { everyCluster: true });
        const known = Array.from({ length: 6 }, (_, index) => principalOf({ known: true, index }));
        const taken = held.filter((p) => p.known && p.marking === 'ours').map(principalOf);
        // The member is not reached (its bindings are another test's): the cloud's part is scanned whole first.
        const scan = await grants().sweep(plan!, () => false, known);
        assert.deepEqual(
          [...arm.roleAssignments.values()].map((a) => a.properties.principalId).sort(),
          held
            .map(principalOf)
            .filter((p) => !taken.includes(p))
            .sort(),
          `every other assignment is there as it was (${JSON.stringify(scan)})`,
        );
      }),
      { numRuns: 25 },
    );
  });
});
