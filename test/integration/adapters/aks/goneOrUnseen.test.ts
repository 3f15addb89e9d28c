/**
 * An AKS cluster is taken for deleted only when ARM says the cluster is not there: a 404 with one of ARM's codes
 * for a missing resource or resource group. Any other answer to the read of the cluster — a subscription ARM does
 * not show this identity (access taken, another tenant), a 404 without a code (a proxy), a missing-resource code
 * with another status — is a read that failed, and deletes nothing. Walked where a deletion is confirmed by that
 * read: a cloud's event or a follow-up look (the one-cluster sync), and a whole run listing through Resource Graph,
 * which confirms every cluster the graph no longer shows. The real Container Service and Resource Graph SDKs
 * against the local ARM; the oracle is the hub's files and the bus's lines.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { AksSource } from '../../../../adapters/aks/AksSource.ts';
import type { Scope } from '../../../../core/domain/model/scope.ts';
import { runSync, syncCluster } from '../../../../core/sync/engine.ts';
import { aksCluster } from '../../../env/emulators.ts';
import type { ArmError, ManagedClusterJson } from '../../../env/fakes/armServer.ts';
import { armForSuite } from '../../../support/arm.ts';
import { filePorts } from '../../../support/filePorts.ts';
import { inventoryOptions, runSettings } from '../../../support/settings.ts';

const SEED = Number(process.env.CPSYNC_PROPERTY_SEED ?? 20261129);
const SUB = '00000000-1111-2222-3333-0000000000a5';
const scope: Scope = { provider: 'aks', account: SUB, region: '*' };
/** ARM's codes for a resource (or its resource group) that is not there. */
const GONE = ['ResourceNotFound', 'NotFound', 'ResourceGroupNotFound'];

/** What ARM answers the read of the cluster. */
const answers: fc.Arbitrary<ArmError> = fc.record({
  status: fc.constantFrom(404, 404, 404, 403, 400, 410),
  code: fc.oneof(
    fc.constantFrom(...GONE),
    fc.constantFrom(
      'SubscriptionNotFound',
      'InvalidSubscriptionId',
      'ParentResourceNotFound',
      'AuthorizationFailed',
      '',
    ),
    fc.string({ minLength: 1, maxLength: 12 }),
  ),
  message: fc.constant('as ARM answered'),
});

const gone = (answer: ArmError) => answer.status === 404 && GONE.includes(answer.code);

let made = 0;

/** A running cluster of its own, in a resource group of its own. */
function cluster(): ManagedClusterJson {
  const name = `orders-${++made}`;
  return aksCluster(name, `rg-${name}`, {}, SUB);
}

describe('an AKS cluster is deleted only when ARM says it is not there', () => {
  const arm = armForSuite();

  /** Ports on files of their own, with `source`, for `work`. */
  async function withPorts(
    source: AksSource,
    work: (ports: Parameters<typeof runSync>[0], events: () => string[]) => Promise<void>,
  ): Promise<void> {
    const { ports, events } = filePorts({ aks: source }, 'cpsync-aks-gone-');
    await work(ports, events);
  }

  const settings = runSettings(inventoryOptions({ namespace: 'aks-gone' }));
  const profilesIn = async (ports: Parameters<typeof runSync>[0]) =>
    (await ports.hub.list('aks-gone', {})).map((p) => p.spec.displayName);

  it('a cloud’s event or a follow-up look: deletes on ARM’s not-found codes alone (generated answers)', async () => {
    await fc.assert(
      fc.asyncProperty(answers, async (answer) => {
        const { server, credential } = arm;
        const made = cluster();
        server.clusters.set(SUB, [made]);
        const path = made.id.toLowerCase();
        try {
          await withPorts(new AksSource({ credential, endpoint: server.endpoint }), async (ports, events) => {
            const ref = { scope, name: made.name, resourceGroup: `rg-${made.name}` };
            const look = (n: number) =>
              syncCluster(ports, { ...settings, syncId: `look-${made.name}-${n}`, ref });
            assert.equal((await look(1)).result, 'created');
            if (gone(answer)) server.clusters.set(SUB, []);
            server.readFailures.set(path, answer);
            const second = await look(2).then(
              (report) => report.result,
              (error: Error) => `failed: ${error.message}`,
            );
            if (gone(answer)) {
              assert.equal(second, 'deleted', JSON.stringify(answer));
              assert.deepEqual(await profilesIn(ports), []);
              assert.deepEqual(events(), ['ClusterProfile Created', 'ClusterProfile Deleted']);
            } else {
              assert.notEqual(second, 'deleted', JSON.stringify(answer));
              assert.deepEqual(await profilesIn(ports), [made.name], `${JSON.stringify(answer)}: kept`);
              assert.deepEqual(events(), ['ClusterProfile Created'], 'no Deleted announced');
            }
          });
        } finally {
          server.readFailures.delete(path);
          server.clusters.set(SUB, []);
        }
      }),
      { seed: SEED, numRuns: 30, endOnFailure: true },
    );
  });

  it('a whole run through Resource Graph: a cluster the graph no longer shows goes on ARM’s not-found codes alone (generated answers)', async () => {
    await fc.assert(
      fc.asyncProperty(answers, async (answer) => {
        const { server, credential } = arm;
        const made = cluster();
        server.clusters.set(SUB, [made]);
        server.indexGraph();
        const path = made.id.toLowerCase();
        try {
          const source = new AksSource({
            credential,
            endpoint: server.endpoint,
            listing: 'resourceGraph',
            graphShareMillis: 0,
          });
          await withPorts(source, async (ports, events) => {
            const run = (n: number) =>
              runSync(ports, { ...settings, syncId: `run-${made.name}-${n}`, scopes: [scope] });
            assert.equal((await run(1)).scopes[0]!.summary.counts.created, 1);
            // The graph no longer shows it; ARM answers its read as generated.
            server.clusters.set(SUB, []);
            server.indexGraph();
            if (!gone(answer)) server.clusters.set(SUB, [made]);
            server.readFailures.set(path, answer);
            const { counts } = (await run(2)).scopes[0]!.summary;
            if (gone(answer)) {
              assert.equal(counts.deleted, 1, JSON.stringify(answer));
              assert.deepEqual(await profilesIn(ports), []);
              assert.ok(events().includes('ClusterProfile Deleted'));
            } else {
              assert.equal(counts.deleted, 0, JSON.stringify(answer));
              assert.deepEqual(await profilesIn(ports), [made.name], `${JSON.stringify(answer)}: kept`);
              assert.ok(!events().includes('ClusterProfile Deleted'), 'no Deleted announced');
            }
          });
        } finally {
          server.readFailures.delete(path);
          server.clusters.set(SUB, []);
          server.indexGraph();
        }
      }),
      { seed: SEED, numRuns: 20, endOnFailure: true },
    );
  });
});
