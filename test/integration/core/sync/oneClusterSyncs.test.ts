/**
 * One-cluster syncs (a cloud's event, a follow-up look) of different clusters of one account apply side by
 * side, and never beside a whole run of that account: each step below is held until the test has seen it, and
 * what the lease store held is read inside the cloud's own calls.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { JsonLinesFileBus } from '../../../../adapters/bus/JsonLinesBus.ts';
import { FileHub } from '../../../../adapters/hub/FileHub.ts';
import { FileLeaseStore } from '../../../../adapters/hub/FileLeases.ts';
import { FileIntentLog } from '../../../../adapters/outbox/FileIntentLog.ts';
import { FileOutbox } from '../../../../adapters/outbox/FileOutbox.ts';
import type { Scope } from '../../../../core/domain/model/scope.ts';
import { runSync, syncCluster } from '../../../../core/sync/engine.ts';
import type { ClusterSource } from '../../../../core/sync/ports.ts';
import { leaseName } from '../../../../core/sync/runLeases.ts';
import { eksCluster } from '../../../support/fixtures.ts';
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
});
