/**
 * One-cluster syncs (a cloud's event, a follow-up look) of different clusters of one account apply side by
 * side, and never beside a whole run of that account: each step below is held until the test has seen it, and
 * what the lease store held is read inside the cloud's own calls.
 */
import assert from 'node:assert/strict';
import { fork } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { JsonLinesFileBus } from '../../../../adapters/bus/JsonLinesBus.ts';
import { FileHub } from '../../../../adapters/hub/FileHub.ts';
import { FileLeaseStore } from '../../../../adapters/hub/FileLeases.ts';
import { KubernetesHub } from '../../../../adapters/hub/KubernetesHub.ts';
import { KubernetesLeaseStore } from '../../../../adapters/hub/KubernetesLeases.ts';
import { FileIntentLog } from '../../../../adapters/outbox/FileIntentLog.ts';
import { FileAbsenceStore } from '../../../../adapters/outbox/FileAbsenceStore.ts';
import { FileOutbox } from '../../../../adapters/outbox/FileOutbox.ts';
import type { Scope } from '../../../../core/domain/model/scope.ts';
import { runSync, syncCluster } from '../../../../core/sync/engine.ts';
import type { ClusterSource, LeaseStore } from '../../../../core/sync/ports.ts';
import { leaseName } from '../../../../core/sync/runLeases.ts';
import { eksCluster } from '../../../support/fixtures.ts';
import { adminKubeConfig, localHub, uniqueNamespace } from '../../../support/hub.ts';
import { inventoryOptions, runSettings } from '../../../support/settings.ts';
import { temporaryDirectory } from '../../../support/tmp.ts';
import { until } from '../../../support/until.ts';

/** A promise and what settles it. */
function signal(): { promise: Promise<void>; fire: () => void } {
  let fire!: () => void;
  const promise = new Promise<void>((resolve) => (fire = resolve));
  return { promise, fire };
}

describe('one-cluster syncs of one account', () => {
  it('apply side by side; a whole run of the account waits until they are done, and a sync asked for meanwhile waits for the run', async () => {
    const directory = temporaryDirectory('cpsync-shares-');
    const scope: Scope = { provider: 'eks', account: '111122223333', region: 'us-east-1' };
    const names = ['alpha', 'beta', 'gamma'];
    const leases = new FileLeaseStore(join(directory, 'hub'));
    const settings = runSettings(inventoryOptions({ namespace: 'shares' }));
    const account = leaseName(settings.options.manager, scope);
    const log: string[] = [];
    const entered = new Map(names.map((name) => [name, signal()]));
    const gates = new Map(names.map((name) => [name, signal()]));
    const source: ClusterSource = {
      listScope: async (listed) => {
        log.push(`list, shares held: ${(await leases.sharers(account)).length}`);
        return {
          outcome: { scope: listed, kind: 'complete' },
          clusters: names.map((name) => eksCluster({ name, account: listed.account })),
        };
      },
      getCluster: async (ref) => {
        const holder = await leases.holderOf(account);
        log.push(`get ${ref.name}, account lease ${holder ? `held by ${holder.holder}` : 'free'}`);
        entered.get(ref.name)!.fire();
        await gates.get(ref.name)!.promise;
        return eksCluster({ name: ref.name, account: ref.scope.account });
      },
      isProviderIdOf: () => false,
    };
    const ports = {
      sources: { eks: source },
      hub: new FileHub({ directory: join(directory, 'hub') }),
      leases,
      bus: new JsonLinesFileBus(join(directory, 'events.jsonl')),
      outbox: new FileOutbox(join(directory, 'outbox')),
      intents: new FileIntentLog(join(directory, 'outbox')),
      absences: new FileAbsenceStore(join(directory, 'outbox')),
    };
    const one = (name: string) =>
      syncCluster(ports, { ...settings, syncId: `event-${name}`, ref: { scope, name } });

    // Two clusters' events: both syncs are inside the cloud's answer at once, each holding its share.
    const [alpha, beta] = [one('alpha'), one('beta')];
    await Promise.all([entered.get('alpha')!.promise, entered.get('beta')!.promise]);
    assert.equal((await leases.sharers(account)).length, 2);

    // A whole run of the account takes its lease and waits: it lists nothing while the shares are held.
    const whole = runSync(ports, { ...settings, syncId: 'whole', scopes: [scope] });
    await until(
      async () => (await leases.holderOf(account))?.holder.startsWith('whole#') === true,
      'the whole run holding the account',
    );
    // An event meanwhile: its sync waits for the run.
    gates.get('gamma')!.fire();
    const gamma = one('gamma');
    assert.ok(!log.some((line) => line.startsWith('list')), log.join('\n'));

    gates.get('alpha')!.fire();
    gates.get('beta')!.fire();
    assert.equal((await alpha).result, 'created');
    assert.equal((await beta).result, 'created');
    const report = await whole;
    assert.equal(
      report.scopes[0]?.summary.counts.created,
      1,
      'the run created gamma, the one not yet synced',
    );
    assert.equal((await gamma).result, 'unchanged');

    assert.deepEqual(log.slice(0, 2).sort(), [
      'get alpha, account lease free',
      'get beta, account lease free',
    ]);
    assert.deepEqual(log.slice(2), ['list, shares held: 0', 'get gamma, account lease free']);
    assert.equal(await leases.holderOf(account), undefined);
    assert.deepEqual(await leases.sharers(account), []);
  });

  for (const store of ['file', 'kubernetes'] as const)
    it(`one killed holding its share after its hub write (${store} leases): left alone while it lives, announced once after; nothing is deleted`, async () => {
      const directory = temporaryDirectory('cpsync-killed-share-');
      const scope: Scope = { provider: 'eks', account: '111122223333', region: 'us-east-1' };
      const namespace = uniqueNamespace('killed');
      const settings = runSettings(inventoryOptions({ namespace }));
      const account = leaseName(settings.options.manager, scope);
      // The leases: files beside the file hub, or the real hub's Lease objects in the inventory namespace.
      const hubState = store === 'kubernetes' ? await localHub() : undefined;
      if (hubState)
        await new KubernetesHub({ kubeConfig: adminKubeConfig(hubState) }).ensureNamespace({
          name: namespace,
        });
      const leases = (): LeaseStore =>
        hubState
          ? new KubernetesLeaseStore({ kubeConfig: adminKubeConfig(hubState), namespace })
          : new FileLeaseStore(join(directory, 'hub'));
      const inCloud = new Set(['kept']);
      const cluster = (name: string) => eksCluster({ name, account: scope.account, region: scope.region });
      const source: ClusterSource = {
        listScope: async (listed) => ({
          outcome: { scope: listed, kind: 'complete' },
          clusters: [...inCloud].map(cluster),
        }),
        getCluster: async (ref) => (inCloud.has(ref.name) ? cluster(ref.name) : undefined),
        isProviderIdOf: () => false,
      };
      const events = join(directory, 'events.jsonl');
      const hub = new FileHub({ directory: join(directory, 'hub') });
      const intents = new FileIntentLog(join(directory, 'outbox'));
      const now = {
        sources: { eks: source },
        hub,
        leases: leases(),
        bus: new JsonLinesFileBus(events),
        outbox: new FileOutbox(join(directory, 'outbox')),
        intents,
        absences: new FileAbsenceStore(join(directory, 'outbox')),
      };
      const announced = () =>
        (existsSync(events) ? readFileSync(events, 'utf8').trim().split('\n') : [])
          .map(
            (line) =>
              JSON.parse(line) as { 'detail-type': string; detail: { cluster?: { displayName?: string } } },
          )
          .filter((e) => e['detail-type'].startsWith('ClusterProfile '))
          .map((e) => `${e['detail-type']} ${e.detail.cluster?.displayName}`);
      const profiles = async () => (await hub.list(namespace, {})).map((p) => p.spec.displayName).sort();

      await runSync(now, { ...settings, syncId: 'first', scopes: [scope] });
      assert.deepEqual(announced(), ['ClusterProfile Created kept']);

      // A cluster's event: its sync, in a process of its own, writes the profile and stalls there.
      inCloud.add('fresh');
      const child = fork(
        fileURLToPath(new URL('../../../support/stalledClusterSync.ts', import.meta.url)),
        [
          directory,
          namespace,
          scope.account,
          scope.region,
          'fresh',
          ...(hubState ? [hubState.kubeconfig] : []),
        ],
        { stdio: ['ignore', 'ignore', 'pipe', 'ipc'] },
      );
      try {
        let stderr = '';
        child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
        const exited = new Promise<NodeJS.Signals | null>((resolve) =>
          child.on('exit', (_code, sig) => resolve(sig)),
        );
        const written = await Promise.race([
          new Promise<unknown>((resolve) => child.once('message', resolve)),
          exited.then(() => assert.fail(`the sync's process ended before its hub write: ${stderr}`)),
        ]);
        assert.ok((written as { written?: string }).written, 'its profile reached the hub');
        assert.deepEqual(await profiles(), ['fresh', 'kept']);
        const left = await intents.list();
        assert.equal(left.length, 1, 'its write-ahead intent');

        // While it lives, stalled: another cluster's sync goes on beside it and leaves its intent alone; a whole
        // run of the account waits for its share and gives up Busy, having listed, changed and deleted nothing.
        assert.equal((await now.leases.sharers(account)).length, 1);
        assert.equal(
          (await syncCluster(now, { ...settings, syncId: 'event-kept', ref: { scope, name: 'kept' } }))
            .result,
          'unchanged',
        );
        const busy = await runSync(now, {
          ...settings,
          leaseWaitMillis: 200,
          syncId: 'busy',
          scopes: [scope],
        });
        assert.equal(busy.scopes[0]?.outcome.failure?.reason, 'Busy');
        assert.deepEqual(await intents.list(), left);
        assert.deepEqual(announced(), ['ClusterProfile Created kept'], 'nothing announced of it yet');
        assert.deepEqual(await profiles(), ['fresh', 'kept']);

        // Killed. Its share is free at once, its process being gone from this machine (another machine's share
        // would be held until it ran out; leases.test.ts). The next run announces its change once, from its intent,
        // and finds both clusters as they are.
        child.kill('SIGKILL');
        assert.equal(await exited, 'SIGKILL');
        assert.deepEqual(await now.leases.sharers(account), []);
        const report = await runSync(now, { ...settings, syncId: 'next', scopes: [scope] });
        assert.equal(report.events.republished, 1);
        assert.equal(report.scopes[0]?.summary.counts.unchanged, 2);
        assert.deepEqual(announced(), ['ClusterProfile Created kept', 'ClusterProfile Created fresh']);
        assert.deepEqual(await intents.list(), []);
        assert.deepEqual(await profiles(), ['fresh', 'kept']);
        assert.equal(await now.leases.holderOf(account), undefined);
      } finally {
        // However the test ends, the process it started is gone.
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      }
    });
});
