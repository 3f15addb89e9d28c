/**
 * The grants ledger's record of what a sync granted is written beside the hub's writes, not before them: the
 * record is written ahead of every grant (pending), so a profile that shows a grant before the record says it was
 * made is safe. Held until the test has seen the hub written; a record that cannot be written is named, and the
 * next sync records it.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { JsonLinesFileBus } from '../../../../adapters/bus/JsonLinesBus.ts';
import { FileHub } from '../../../../adapters/hub/FileHub.ts';
import { FileLeaseStore } from '../../../../adapters/hub/FileLeases.ts';
import { FileGrantLedger } from '../../../../adapters/outbox/FileGrantLedger.ts';
import { FileIntentLog } from '../../../../adapters/outbox/FileIntentLog.ts';
import { FileAbsenceStore } from '../../../../adapters/outbox/FileAbsenceStore.ts';
import { FileOutbox } from '../../../../adapters/outbox/FileOutbox.ts';
import { ALL_REGIONS } from '../../../../core/domain/model/scope.ts';
import { syncCluster } from '../../../../core/sync/engine.ts';
import { ledgerKey, type Consumer, type GrantRecord } from '../../../../core/domain/grants.ts';
import type { Scope } from '../../../../core/domain/model/scope.ts';
import type {
  AccessGrants,
  ClusterSource,
  GrantLedger,
  IntentLog,
  RoleHolders,
} from '../../../../core/sync/ports.ts';
import { syncScope } from '../../../support/absences.ts';
import {
  eksCluster,
  gkeCluster,
  gkeDeployer,
  GOOGLE_DEPLOYER,
  LATER,
  NOW,
} from '../../../support/fixtures.ts';
import { inventoryOptions, runSettings } from '../../../support/settings.ts';
import { temporaryDirectory } from '../../../support/tmp.ts';

const ROLE = 'arn:aws:iam::111122223333:role/argocd';
const consumer: Consumer = {
  name: 'argocd',
  namespaces: ['cluster-inventory'],
  level: 'edit',
  identities: { eks: ROLE },
};
const scope: Scope = { provider: 'eks', account: '111122223333', region: 'us-east-1' };
const options = inventoryOptions({ features: { accessGrants: true }, consumers: [consumer] });
const GRANTS = 'cpsync.io/access-grants';

/** Every grant holds; how many were made is counted. */
function grants() {
  const port = {
    made: 0,
    async ensure() {
      port.made += 1;
      return { held: ROLE, status: 'True' as const, reason: 'Granted', message: 'granted' };
    },
    async revoke() {
      return { revoked: true, message: 'gone' };
    },
  };
  return port satisfies AccessGrants;
}

/** A ledger in memory whose writes after the first go through `after` (the record of what was done). */
function ledger(after: (write: () => Promise<void>) => Promise<void>) {
  const records = new Map<string, GrantRecord>();
  let writes = 0;
  const store: GrantLedger = {
    async read(account) {
      return [...records.values()]
        .filter((r) => r.provider === account.provider && r.account === account.account)
        .map((r) => structuredClone(r));
    },
    async write(written, removed = []) {
      const apply = async () => {
        for (const r of written) records.set(ledgerKey(r), structuredClone(r));
        for (const r of removed) records.delete(ledgerKey(r));
      };
      writes += 1;
      return writes === 1 ? apply() : after(apply);
    },
  };
  return { store, records };
}

const sync = (hub: FileHub, store: GrantLedger, port: AccessGrants, now = NOW) =>
  syncScope({
    hub,
    listing: { outcome: { scope, kind: 'complete' }, clusters: [eksCluster()] },
    options,
    now,
    grants: port,
    ledger: store,
  });

describe("the grants ledger's record, beside the hub's writes", () => {
  it(
    'the profile is written while the record of its grant is still on its way',
    { timeout: 60_000 },
    async () => {
      const directory = temporaryDirectory('cpsync-beside-');
      const hub = new FileHub({ directory: join(directory, 'hub') });
      let profileWritten!: () => void;
      const written = new Promise<void>((resolve) => (profileWritten = resolve));
      const seen: string[] = [];
      // The record of the grant is held until the hub holds the profile.
      const { store, records } = ledger(async (apply) => {
        seen.push('record sent');
        await written;
        seen.push('record written');
        return apply();
      });
      const watched = new Proxy(hub, {
        get(target, key: keyof FileHub) {
          const value = target[key];
          if (typeof value !== 'function') return value;
          return async (...args: unknown[]) => {
            const answer: unknown = await (value as (...a: unknown[]) => Promise<unknown>).apply(
              target,
              args,
            );
            if (/^apply/.test(String(key))) {
              seen.push('profile written');
              profileWritten();
            }
            return answer;
          };
        },
      });
      const port = grants();
      const result = await sync(watched, store, port);

      assert.deepEqual(seen, ['record sent', 'profile written', 'record written']);
      assert.equal(result.applied.applied[0]?.kind, 'created');
      assert.equal(result.grants?.granted, 1);
      assert.equal(result.grants?.problems, undefined);
      const [record] = [...records.values()];
      assert.deepEqual(
        record?.grants.map((g) => [g.consumer, g.identity, g.pending ?? false]),
        [['argocd', ROLE, false]],
        'the record says the grant was made',
      );
      const [profile] = await hub.list(options.namespace, {});
      assert.match(profile?.metadata.annotations?.[GRANTS] ?? '', /argocd/);
    },
  );

  it('a record that cannot be written is named among the problems, the profile is written, and the next sync records it', async () => {
    const directory = temporaryDirectory('cpsync-beside-');
    const hub = new FileHub({ directory: join(directory, 'hub') });
    let failing = true;
    const { store, records } = ledger(async (apply) => {
      if (failing) throw new Error('ProvisionedThroughputExceededException: slow down');
      return apply();
    });
    const port = grants();
    const first = await sync(hub, store, port);
    assert.equal(first.applied.applied[0]?.kind, 'created');
    assert.deepEqual(first.grants?.problems, [
      "cannot record in cpsync's ledger what this run granted: ProvisionedThroughputExceededException: slow down",
    ]);
    assert.equal(
      [...records.values()][0]?.grants[0]?.pending,
      true,
      'the ledger holds the grant as written ahead of it',
    );
    const [profile] = await hub.list(options.namespace, {});
    assert.match(profile?.metadata.annotations?.[GRANTS] ?? '', /argocd/);

    failing = false;
    const second = await sync(hub, store, port, LATER);
    assert.equal(second.grants?.problems, undefined);
    assert.equal([...records.values()][0]?.grants[0]?.pending ?? false, false, 'recorded as made');
  });
});

describe("a GKE project's role, beside other syncs of the project", () => {
  const [GOOGLE, deployer] = [GOOGLE_DEPLOYER, gkeDeployer];
  const gkeOptions = inventoryOptions({ features: { accessGrants: true }, consumers: [deployer] });
  const project: Scope = { provider: 'gke', account: 'acme-data', region: ALL_REGIONS };
  const cluster = gkeCluster({ name: 'edge' });

  /** An intent log whose writes fail once there is something to write (the deletion's intent). */
  const failingAdds = (log: IntentLog): IntentLog => ({
    list: () => log.list(),
    add: (intents) =>
      intents.some((i) => i.kind === 'deleted')
        ? Promise.reject(new Error('the intent log is unavailable'))
        : log.add(intents),
    remove: (ids) => log.remove(ids),
  });

  /** One cluster's syncs (a cloud's event), the cluster there until `gone`, what was done written to `seen`. */
  function setup({
    failDelete = false,
    failIntents = false,
    listing = 'complete' as 'complete' | 'partial',
  } = {}) {
    const directory = temporaryDirectory('cpsync-role-');
    const seen: string[] = [];
    const state = { gone: false };
    const hub = new FileHub({ directory: join(directory, 'hub') });
    const bus = new JsonLinesFileBus(join(directory, 'events.jsonl'));
    const source: ClusterSource = {
      // The project as the cloud lists it (what its role's settle reads the ledger by, beside the index).
      listScope: async (scope) => ({
        outcome:
          listing === 'complete'
            ? { scope, kind: 'complete' }
            : { scope, kind: 'partial', missing: ['europe-west4-b'] },
        clusters: state.gone ? [] : [cluster],
      }),
      getCluster: async () => (state.gone ? undefined : cluster),
      isProviderIdOf: (id) => id === cluster.providerId,
    };
    const port = {
      async ensure() {
        return { held: GOOGLE, status: 'True' as const, reason: 'Granted', message: 'granted' };
      },
      async revoke() {
        seen.push('grant revoked');
        return { revoked: true, message: 'gone' };
      },
      async settleProjectRoles(_project: string, holders: () => Promise<RoleHolders>) {
        seen.push(`role settled: ${JSON.stringify([...(await holders()).keys()])}`);
        return [];
      },
    } satisfies AccessGrants;
    const ports = {
      sources: { gke: source },
      hub: new Proxy(hub, {
        get(target, key: keyof FileHub) {
          const value = target[key];
          if (typeof value !== 'function') return value;
          if (key === 'delete' && failDelete)
            return () => Promise.reject(Object.assign(new Error('the hub is unavailable'), { status: 503 }));
          return (value as (...a: unknown[]) => unknown).bind(target);
        },
      }),
      leases: new FileLeaseStore(join(directory, 'hub')),
      bus: {
        publish: async (events: Parameters<typeof bus.publish>[0]) => {
          seen.push(`published ${events.map((e) => e.detailType).join()}`);
          return bus.publish(events);
        },
        describe: () => bus.describe(),
      },
      outbox: new FileOutbox(join(directory, 'outbox')),
      intents: failIntents
        ? failingAdds(new FileIntentLog(join(directory, 'outbox')))
        : new FileIntentLog(join(directory, 'outbox')),
      absences: new FileAbsenceStore(join(directory, 'outbox')),
      grants: port,
      ledger: new FileGrantLedger(join(directory, 'outbox')),
    };
    const sync = (syncId: string) =>
      syncCluster(ports, {
        ...runSettings(gkeOptions),
        syncId,
        ref: { scope: project, name: 'edge', location: 'europe-west1' },
      });
    return { seen, state, sync, ledger: ports.ledger };
  }

  it('is settled once the Deleted event of a cluster gone is published, not before', async () => {
    const { seen, state, sync, ledger } = setup();
    assert.equal((await sync('created')).result, 'created');
    assert.deepEqual(seen, ['published ClusterProfile Created,Consumer Access Granted']);

    state.gone = true;
    seen.length = 0;
    const report = await sync('deleted');
    assert.equal(report.result, 'deleted');
    assert.deepEqual(seen, [
      // The cluster is gone, its grants with it: nothing to revoke, the role to settle.
      'published ClusterProfile Deleted',
      'role settled: []',
    ]);
    assert.deepEqual(await ledger.read(project), []);
  });

  it('is not settled, and says why, when the cloud does not list the project whole (a grant it did not list may be recorded)', async () => {
    const { seen, state, sync } = setup({ listing: 'partial' });
    await sync('created');
    state.gone = true;
    seen.length = 0;
    const report = await sync('deleted');
    assert.equal(report.result, 'deleted');
    assert.deepEqual(seen, ['published ClusterProfile Deleted']);
    assert.match(
      report.problems?.join('\n') ?? '',
      /cannot settle project acme-data's cloud role for consumers: cannot list all of project acme-data's clusters \(no answer for europe-west4-b\)/,
    );
  });

  it('is settled all the same when the deletion cannot be written, and the sync fails', async () => {
    const { seen, state, sync } = setup({ failDelete: true });
    await sync('created');
    state.gone = true;
    seen.length = 0;
    await assert.rejects(sync('deleted'), /the hub is unavailable/);
    assert.deepEqual(seen, ['role settled: []']);
  });

  it('is settled all the same when the sync stops before its hub writes', async () => {
    const { seen, state, sync } = setup({ failIntents: true });
    await sync('created');
    state.gone = true;
    seen.length = 0;
    await assert.rejects(sync('deleted'), /the intent log is unavailable/);
    assert.deepEqual(seen, ['role settled: []']);
  });

  it(
    "a cloud's event: the ledger is read while the cluster is, and a reading that fails grants nothing",
    { timeout: 60_000 },
    async () => {
      for (const failing of [false, true]) {
        const directory = temporaryDirectory('cpsync-ahead-');
        const stored = new FileGrantLedger(join(directory, 'outbox'));
        // The cloud answers only once the ledger is being read, and the ledger only once the cloud is being asked.
        let asked!: () => void;
        let reading!: () => void;
        const cloudAsked = new Promise<void>((resolve) => (asked = resolve));
        const ledgerRead = new Promise<void>((resolve) => (reading = resolve));
        const ledger: GrantLedger = {
          read: async (account) => {
            reading();
            await cloudAsked;
            if (failing) throw new Error('ProvisionedThroughputExceededException: slow down');
            return stored.read(account);
          },
          write: (records, removed) => stored.write(records, removed),
        };
        const source: ClusterSource = {
          listScope: () => Promise.reject(new Error('not listed')),
          getCluster: async () => {
            asked();
            await ledgerRead;
            return cluster;
          },
          isProviderIdOf: (id) => id === cluster.providerId,
        };
        const made: string[] = [];
        const report = await syncCluster(
          {
            sources: { gke: source },
            hub: new FileHub({ directory: join(directory, 'hub') }),
            leases: new FileLeaseStore(join(directory, 'hub')),
            bus: new JsonLinesFileBus(join(directory, 'events.jsonl')),
            outbox: new FileOutbox(join(directory, 'outbox')),
            intents: new FileIntentLog(join(directory, 'outbox')),
            absences: new FileAbsenceStore(join(directory, 'outbox')),
            grants: {
              async ensure() {
                made.push('granted');
                return { held: GOOGLE, status: 'True' as const, reason: 'Granted', message: 'granted' };
              },
              async revoke() {
                return { revoked: true, message: 'gone' };
              },
            },
            ledger,
          },
          {
            ...runSettings(gkeOptions),
            syncId: 'event',
            ref: { scope: project, name: 'edge', location: 'europe-west1' },
          },
        );
        assert.equal(report.result, 'created');
        if (failing) {
          assert.deepEqual(made, [], 'nothing granted without the ledger');
          assert.match(
            report.problems?.join('\n') ?? '',
            /cannot read what cpsync granted \(its ledger\): ProvisionedThroughputExceededException/,
          );
        } else {
          assert.deepEqual(made, ['granted']);
          assert.equal((await stored.read(project))[0]?.grants[0]?.identity, GOOGLE);
        }
      }
    },
  );
});
