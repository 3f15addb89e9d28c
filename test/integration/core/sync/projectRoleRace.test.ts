/**
 * A GKE project's cloud role, settled by one cluster's sync while other clusters of the project are granted to the
 * same consumer: the settle must not take out the identity their grants hold, however their ledger writes and
 * policy edits interleave with its readings and writes. Through the real GKE and Resource Manager clients at the
 * local server (which checks the policy's etag), the engine's one-cluster syncs, and the grants ledger in files or in
 * DynamoDB (moto) with its account index lagging: the index shows no record written during the race, as DynamoDB's
 * eventually consistent index may not. Each sync stops before each ledger call and each IAM policy call; a drawn
 * schedule says which stopped sync goes on next, each held until it is let go.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { JsonLinesFileBus } from '../../../../adapters/bus/JsonLinesBus.ts';
import { GkeSource } from '../../../../adapters/gke/GkeSource.ts';
import { CLUSTER_VIEWER_ROLE, GkeProjectRoles, iamMember } from '../../../../adapters/gke/projectRoles.ts';
import { FileHub } from '../../../../adapters/hub/FileHub.ts';
import { FileLeaseStore } from '../../../../adapters/hub/FileLeases.ts';
import { FileGrantLedger } from '../../../../adapters/outbox/FileGrantLedger.ts';
import { FileIntentLog } from '../../../../adapters/outbox/FileIntentLog.ts';
import { FileAbsenceStore } from '../../../../adapters/outbox/FileAbsenceStore.ts';
import { FileOutbox } from '../../../../adapters/outbox/FileOutbox.ts';
import { ALL_REGIONS, type Scope } from '../../../../core/domain/model/scope.ts';
import { syncCluster } from '../../../../core/sync/engine.ts';
import type { AccessGrants, GrantLedger } from '../../../../core/sync/ports.ts';
import { startAwsProxy, type AwsProxy } from '../../../env/awsProxy.ts';
import { gkeCluster } from '../../../env/emulators.ts';
import { letCpsyncGrantInProject, startGkeServer, type GkeServer } from '../../../env/fakes/gkeServer.ts';
import { dynamoLedgerAt, laggingIndex, type LaggingIndex } from '../../../env/ledgerTable.ts';
import { startMoto, type MotoServer } from '../../../env/moto.ts';
import { gkeDeployer, GOOGLE_DEPLOYER } from '../../../support/fixtures.ts';
import { inventoryOptions, runSettings } from '../../../support/settings.ts';
import { temporaryDirectory } from '../../../support/tmp.ts';

const PROJECT = 'acme-data';
const LOCATION = 'europe-west1';
const options = inventoryOptions({ features: { accessGrants: true }, consumers: [gkeDeployer] });
const project: Scope = { provider: 'gke', account: PROJECT, region: ALL_REGIONS };
/** The Resource Manager calls a settle and a grant's hold make. */
const POLICY_CALLS = new Set(['getIamPolicy', 'setIamPolicy']);

/**
 * Syncs run side by side, each stopping at its gates; once every sync still running stands at a gate, the next
 * drawn number picks which goes on (in order, the first, once the numbers run out).
 */
class Schedule {
  readonly #draws: number[];
  readonly #parked = new Map<string, () => void>();
  #arrived: () => void = () => {};
  on = false;
  /** Which sync went on at each turn. */
  readonly turns: string[] = [];

  constructor(draws: number[]) {
    this.#draws = [...draws];
  }

  /** Where `side` stops until it is let go (at once while the schedule is off). */
  gate(side: string): Promise<void> {
    if (!this.on) return Promise.resolve();
    return new Promise((resolve) => {
      this.#parked.set(side, resolve);
      this.#arrived();
    });
  }

  /** Runs the syncs to their ends, letting one go on at a time. */
  async run(sides: Record<string, () => Promise<unknown>>): Promise<void> {
    const running = new Set(Object.keys(sides));
    const ended: Promise<unknown>[] = [];
    let wake: Promise<void> = new Promise((resolve) => (this.#arrived = resolve));
    for (const [side, work] of Object.entries(sides))
      ended.push(
        work().finally(() => {
          running.delete(side);
          this.#arrived();
        }),
      );
    for (;;) {
      // Every sync still running stands at a gate (or none is left).
      while ([...running].some((side) => !this.#parked.has(side))) {
        await wake;
        wake = new Promise((resolve) => (this.#arrived = resolve));
      }
      if (running.size === 0) break;
      const parked = [...this.#parked.keys()].sort();
      const side = parked[(this.#draws.shift() ?? 0) % parked.length]!;
      this.turns.push(side);
      const go = this.#parked.get(side)!;
      this.#parked.delete(side);
      go();
    }
    await Promise.all(ended);
  }
}

describe("a GKE project's role settled while other clusters of the project are granted", () => {
  let server: GkeServer;
  let source: GkeSource;
  let moto: MotoServer;
  let proxy: AwsProxy;
  let index: LaggingIndex;

  before(async () => {
    server = await startGkeServer();
    source = new GkeSource({
      credentials: server.serviceAccountKey,
      endpoint: server.endpoint,
      maxRetries: 0,
    });
    moto = await startMoto();
    proxy = await startAwsProxy(moto.endpoint);
    index = laggingIndex(proxy);
  });
  after(async () => {
    await source?.close();
    await server?.stop();
    await proxy?.stop();
    await moto?.stop();
  });

  const members = () =>
    (server.iamPolicies.get(PROJECT)?.bindings ?? [])
      .filter((b) => b.role === CLUSTER_VIEWER_ROLE && b.condition?.description?.startsWith('cpsync: '))
      .flatMap((b) => b.members ?? []);

  /**
   * One race: cluster `edge` was granted and is gone; its sync settles the role. The new clusters `newcomers` are
   * synced beside it, each granting the same consumer. `held`: whether the role still held the identity when the
   * syncs began (else another writer took it out, and the newcomers' grants add it again).
   */
  async function race(
    ledgerKind: 'files' | 'DynamoDB',
    newcomers: readonly string[],
    held: boolean,
    draws: number[],
  ) {
    const directory = temporaryDirectory('cpsync-role-race-');
    server.iamPolicies.delete(PROJECT);
    letCpsyncGrantInProject(server, PROJECT);
    server.clusters.set(PROJECT, [gkeCluster('edge', LOCATION)]);
    const store: GrantLedger =
      ledgerKind === 'files'
        ? new FileGrantLedger(join(directory, 'outbox'))
        : await dynamoLedgerAt(proxy.endpoint);
    const schedule = new Schedule(draws);

    /** The ledger as `side` uses it: stopping before each call. */
    const ledgerOf = (side: string): GrantLedger => ({
      read: async (scope, clusters) => (await schedule.gate(side), store.read(scope, clusters)),
      write: async (records, removed) => (await schedule.gate(side), store.write(records, removed)),
    });
    /** The project's role as `side` edits it: stopping before each policy call. */
    const rolesOf = (side: string) =>
      new GkeProjectRoles({
        projects: async () => {
          const client = await source.projectsClient();
          return new Proxy(client, {
            get(target, key, receiver) {
              const value: unknown = Reflect.get(target, key, receiver);
              if (typeof key !== 'string' || !POLICY_CALLS.has(key) || typeof value !== 'function')
                return value;
              return async (...args: unknown[]) => {
                await schedule.gate(side);
                return (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
              };
            },
          });
        },
        manager: 'cpsync',
        timeoutMillis: 30_000,
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
      absences: new FileAbsenceStore(join(directory, 'outbox')),
      sources: { gke: source },
    };
    const sync = (name: string) =>
      syncCluster(
        { ...stores, ledger: ledgerOf(name), grants: grantsThrough(rolesOf(name)) },
        {
          ...runSettings(options),
          syncId: `${name}-sync`,
          ref: { scope: project, name, location: LOCATION },
        },
      );

    assert.equal((await sync('edge')).result, 'created');
    assert.deepEqual(members(), [iamMember(GOOGLE_DEPLOYER)]);
    if (!held)
      server.iamPolicies.get(PROJECT)!.bindings = server.iamPolicies
        .get(PROJECT)!
        .bindings!.filter((b) => b.role !== CLUSTER_VIEWER_ROLE);
    if (ledgerKind === 'DynamoDB') {
      // The index as it is now (edge's record): it shows nothing written from here on.
      await index.stopAt(() => store.read(project));
    }

    // Edge is gone and the newcomers are there; each one's sync runs beside edge's.
    server.clusters.set(
      PROJECT,
      newcomers.map((name) => gkeCluster(name, LOCATION)),
    );
    const results: Record<string, string> = {};
    schedule.on = true;
    try {
      await schedule.run(
        Object.fromEntries(
          ['edge', ...newcomers].map((name) => [
            name,
            async () => (results[name] = (await sync(name)).result),
          ]),
        ),
      );
    } finally {
      schedule.on = false;
      index.catchUp();
    }
    const at = `(${ledgerKind}, ${held ? 'held' : 'taken out'}, turns ${schedule.turns.join(' ')})`;
    assert.deepEqual(
      results,
      { edge: 'deleted', ...Object.fromEntries(newcomers.map((n) => [n, 'created'])) },
      at,
    );
    // The newcomers' grants stand, recorded as made, and the project's role holds their identity.
    const records = await store.read(project);
    assert.deepEqual(
      records
        .map((r) => [r.providerId.split('/').at(-1), r.grants.map((g) => [g.identity, g.pending ?? false])])
        .sort(),
      newcomers.map((name) => [name, [[GOOGLE_DEPLOYER, false]]]).sort(),
      at,
    );
    assert.deepEqual(members(), [iamMember(GOOGLE_DEPLOYER)], `the newcomers' grants hold the role ${at}`);
    return schedule.turns.length;
  }

  for (const ledgerKind of ['files', 'DynamoDB'] as const)
    it(
      `keeps the identity the other clusters' grants hold, however their syncs interleave with the settle (ledger in ${ledgerKind})`,
      { timeout: 600_000 },
      async () => {
        const turns: number[] = [];
        await fc.assert(
          fc.asyncProperty(
            fc.constantFrom(['web'], ['web', 'blue']),
            fc.boolean(),
            fc.array(fc.nat({ max: 5 }), { maxLength: 60 }),
            async (newcomers, held, draws) => {
              turns.push(await race(ledgerKind, newcomers, held, draws));
            },
          ),
          {
            numRuns: ledgerKind === 'files' ? 60 : 25,
            // First, web's sync run whole once edge's has passed each of its first gates in turn.
            examples: [true, false].flatMap((held) =>
              Array.from({ length: 14 }, (_, k): [readonly string[], boolean, number[]] => [
                ['web'],
                held,
                [...Array<number>(k).fill(0), ...Array<number>(12).fill(1)],
              ]),
            ),
          },
        );
        // The races had turns to draw from: each sync stopped at its ledger and policy calls.
        assert.ok(Math.min(...turns) >= 8, `turns per race: ${Math.min(...turns)} at least`);
      },
    );
});
