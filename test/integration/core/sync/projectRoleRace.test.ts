/**
 * A GKE project's cloud role, settled by one cluster's sync while another cluster of the project is granted to the
 * same consumer: the settle must not take out the identity the other cluster's grant holds, wherever that grant's
 * record and its hold fall among the settle's readings and writes. Through the real Resource Manager client at the
 * local server (which checks the policy's etag), the engine's one-cluster syncs, and the file stores; the other
 * sync is run whole at a drawn point of the settle's calls, held there until it is done.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { JsonLinesFileBus } from '../../../../adapters/bus/JsonLinesBus.ts';
import { GkeSource } from '../../../../adapters/gke/GkeSource.ts';
import { CLUSTER_VIEWER_ROLE, GkeProjectRoles, iamMember } from '../../../../adapters/gke/projectRoles.ts';
import { FileHub } from '../../../../adapters/hub/FileHub.ts';
import { FileLeaseStore } from '../../../../adapters/hub/FileLeases.ts';
import { FileGrantLedger } from '../../../../adapters/outbox/FileGrantLedger.ts';
import { FileIntentLog } from '../../../../adapters/outbox/FileIntentLog.ts';
import { FileOutbox } from '../../../../adapters/outbox/FileOutbox.ts';
import { ALL_REGIONS, type Scope } from '../../../../core/domain/model/scope.ts';
import { syncCluster } from '../../../../core/sync/engine.ts';
import type { AccessGrants, ClusterSource } from '../../../../core/sync/ports.ts';
import { letCpsyncGrantInProject, startGkeServer, type GkeServer } from '../../../env/fakes/gkeServer.ts';
import { gkeCluster, gkeDeployer, GOOGLE_DEPLOYER } from '../../../support/fixtures.ts';
import { inventoryOptions, runSettings } from '../../../support/settings.ts';
import { temporaryDirectory } from '../../../support/tmp.ts';

const PROJECT = 'acme-data';
const [GOOGLE, deployer] = [GOOGLE_DEPLOYER, gkeDeployer];
const options = inventoryOptions({ features: { accessGrants: true }, consumers: [deployer] });
const project: Scope = { provider: 'gke', account: PROJECT, region: ALL_REGIONS };

/** The Resource Manager calls a settle makes, each with a point before and after it. */
const CALLS = ['getIamPolicy', 'setIamPolicy'];

describe("a GKE project's role settled while another cluster of the project is granted", () => {
  let server: GkeServer;
  let source: GkeSource;
  before(async () => {
    server = await startGkeServer();
    source = new GkeSource({
      credentials: server.serviceAccountKey,
      endpoint: server.endpoint,
      maxRetries: 0,
    });
  });
  after(async () => {
    await source.close();
    await server.stop();
  });

  const members = () =>
    (server.iamPolicies.get(PROJECT)?.bindings ?? [])
      .filter((b) => b.role === CLUSTER_VIEWER_ROLE && b.condition?.description?.startsWith('cpsync: '))
      .flatMap((b) => b.members ?? []);

  /**
   * One case: cluster `edge` is granted, then gone; its sync settles the role. At the settle's `point`-th point (before
   * or after one of its Resource Manager calls), the whole sync of the new cluster `web` runs, granting the same
   * consumer. `held`: whether the role still held the identity when edge's sync began (else another writer took it
   * out, and web's grant adds it again).
   */
  async function race(point: number, held: boolean) {
    const directory = temporaryDirectory('cpsync-role-race-');
    letCpsyncGrantInProject(server, PROJECT);
    server.iamPolicies.set(PROJECT, {
      ...server.iamPolicies.get(PROJECT)!,
      bindings: (server.iamPolicies.get(PROJECT)!.bindings ?? []).filter(
        (b) => b.role !== CLUSTER_VIEWER_ROLE,
      ),
    });
    const there = new Set(['edge']);
    const cloud: ClusterSource = {
      listScope: () => Promise.reject(new Error('not listed')),
      getCluster: async (ref) => (there.has(ref.name) ? gkeCluster({ name: ref.name }) : undefined),
      isProviderIdOf: (id) => id.startsWith(`https://container.googleapis.com/v1/projects/${PROJECT}/`),
    };
    // The settle's calls, each point a chance for web's sync to run whole before the settle goes on.
    let points = 0;
    let webRun: Promise<unknown> | undefined;
    const atPoint = async () => {
      if (points++ === point) await (webRun = syncWeb());
    };
    const plain = new GkeProjectRoles({
      projects: () => source.projectsClient(),
      manager: 'cpsync',
      timeoutMillis: 10_000,
    });
    const settling = new GkeProjectRoles({
      projects: async () => {
        const client = await source.projectsClient();
        return new Proxy(client, {
          get(target, key, receiver) {
            const value: unknown = Reflect.get(target, key, receiver);
            if (typeof key !== 'string' || !CALLS.includes(key) || typeof value !== 'function') return value;
            return async (...args: unknown[]) => {
              await atPoint();
              const answer: unknown = await (value as (...a: unknown[]) => Promise<unknown>).apply(
                target,
                args,
              );
              await atPoint();
              return answer;
            };
          },
        });
      },
      manager: 'cpsync',
      timeoutMillis: 10_000,
    });
    const grantsThrough = (roles: GkeProjectRoles): AccessGrants => ({
      async ensure(plan, consumer, signal) {
        await roles.hold(plan.providerId, consumer.name, consumer.identities.gke!, signal);
        return { held: consumer.identities.gke!, status: 'True', reason: 'Granted', message: 'granted' };
      },
      async revoke() {
        return { revoked: true, message: 'gone' };
      },
      settleProjectRoles: (name, holders, signal) => roles.settle(name, holders, signal),
    });
    const stores = {
      hub: new FileHub({ directory: join(directory, 'hub') }),
      leases: new FileLeaseStore(join(directory, 'hub')),
      bus: new JsonLinesFileBus(join(directory, 'events.jsonl')),
      outbox: new FileOutbox(join(directory, 'outbox')),
      intents: new FileIntentLog(join(directory, 'outbox')),
      ledger: new FileGrantLedger(join(directory, 'outbox')),
      sources: { gke: cloud },
    };
    const sync = (name: string, roles: GkeProjectRoles) =>
      syncCluster(
        { ...stores, grants: grantsThrough(roles) },
        {
          ...runSettings(options),
          syncId: `${name}-${points}`,
          ref: { scope: project, name, location: 'europe-west1' },
        },
      );
    const syncWeb = async () => {
      there.add('web');
      return sync('web', plain);
    };

    assert.equal((await sync('edge', plain)).result, 'created');
    assert.deepEqual(members(), [iamMember(GOOGLE)]);
    if (!held)
      server.iamPolicies.get(PROJECT)!.bindings = server.iamPolicies
        .get(PROJECT)!
        .bindings!.filter((b) => b.role !== CLUSTER_VIEWER_ROLE);

    there.delete('edge');
    const edge = await sync('edge', settling);
    assert.equal(edge.result, 'deleted');
    const web = await (webRun ?? syncWeb());
    assert.equal((web as Awaited<ReturnType<typeof sync>>).result, 'created');

    // Web's grant stands, and the project's role holds its identity.
    const records = await stores.ledger.read(project);
    assert.deepEqual(
      records.map((r) => [
        r.providerId.split('/').at(-1),
        r.grants.map((g) => [g.identity, g.pending ?? false]),
      ]),
      [['web', [[GOOGLE, false]]]],
    );
    assert.deepEqual(
      members(),
      [iamMember(GOOGLE)],
      `web's grant holds the role (point ${point}, held ${held})`,
    );
    return points;
  }

  it(
    "keeps the identity another cluster was granted, wherever its grant falls among the settle's calls",
    { timeout: 120_000 },
    async () => {
      // Every point a settle reaches (counted by one settle each way, with web's sync after it), each way.
      let reached = 0;
      for (const held of [true, false]) reached = Math.max(reached, await race(1_000, held));
      assert.ok(reached >= 4, `the settle made its calls (${reached} points)`);
      for (let point = 0; point <= reached; point++)
        for (const held of [true, false]) await race(point, held);
    },
  );
});
