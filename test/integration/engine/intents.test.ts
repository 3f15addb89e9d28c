import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { JsonLinesFileBus } from '../../../adapters/bus/JsonLinesBus.ts';
import { KubernetesHub } from '../../../adapters/hub/KubernetesHub.ts';
import { FileOutbox } from '../../../adapters/outbox/FileOutbox.ts';
import { runSync } from '../../../core/engine.ts';
import { planIntents } from '../../../core/intents.ts';
import { inventoryOptions } from '../../../core/options.ts';
import { syncScope } from '../../../core/syncScope.ts';
import { eksCluster } from '../../support/fixtures.ts';
import { adminKubeConfig, localHub, uniqueNamespace } from '../../support/hub.ts';

const scope = { provider: 'eks' as const, account: '111122223333', region: 'us-east-1' };

describe('write-ahead intents', () => {
  it('a run stopped between its hub writes and its events: the next run announces exactly what reached the hub', async () => {
    const hub = new KubernetesHub({ kubeConfig: adminKubeConfig(await localHub()) });
    const namespace = uniqueNamespace('intents');
    const options = inventoryOptions({ namespace });
    const directory = mkdtempSync(join(tmpdir(), 'cpsync-intents-'));
    const outbox = new FileOutbox(join(directory, 'outbox'));
    const context = { syncId: 'stopped-run', occurredAt: '2026-05-01T00:00:00Z', scope };
    const listing = {
      outcome: { scope, kind: 'complete' as const },
      clusters: [eksCluster({ name: 'a' }), eksCluster({ name: 'b' })],
    };

    // The stopped run: intents written, both profiles written to the hub, then nothing more.
    await syncScope({
      hub,
      listing,
      options,
      now: context.occurredAt,
      beforeApply: async (plan) => outbox.addIntents(planIntents(plan, context, ['eks', 'gke', 'aks'])),
    });
    // An intent whose write never happened (the process stopped before it).
    const never = await syncScope({
      hub,
      listing: {
        ...listing,
        clusters: [eksCluster({ name: 'c' })],
        outcome: { scope, kind: 'partial' as const },
      },
      options,
      now: context.occurredAt,
      dryRun: true,
    });
    await outbox.addIntents(
      planIntents(never.plan, { ...context, syncId: 'stopped-run-2' }, ['eks', 'gke', 'aks']),
    );
    assert.equal((await outbox.intents()).length, 3);
    assert.deepEqual(await outbox.pending(), []);

    const events = join(directory, 'events.jsonl');
    const report = await runSync(
      { sources: {}, hub, bus: new JsonLinesFileBus(events), outbox },
      { syncId: 'next', scopes: [], options },
    );
    assert.equal(report.events.republished, 2);
    const lines = readFileSync(events, 'utf8')
      .trim()
      .split('\n')
      .map(
        (l) =>
          JSON.parse(l) as {
            'detail-type': string;
            detail: { name: string; syncId: string; profile?: { status?: unknown } };
          },
      );
    assert.deepEqual(
      lines.map((e) => [e['detail-type'], e.detail.syncId]),
      [
        ['ClusterProfile Created', 'stopped-run'],
        ['ClusterProfile Created', 'stopped-run'],
      ],
    );
    assert.ok(
      lines.every((e) => e.detail.profile?.status),
      'announced from the object as stored',
    );
    assert.deepEqual(await outbox.intents(), []);
    assert.deepEqual(await outbox.pending(), []);
  });

  it("leaves another run's intents alone while their lease lasts", async () => {
    const hub = new KubernetesHub({ kubeConfig: adminKubeConfig(await localHub()) });
    const options = inventoryOptions({ namespace: uniqueNamespace('lease') });
    const outbox = new FileOutbox(mkdtempSync(join(tmpdir(), 'cpsync-lease-')));
    const planned = await syncScope({
      hub,
      listing: { outcome: { scope, kind: 'complete' as const }, clusters: [eksCluster({ name: 'busy' })] },
      options,
      now: '2026-05-01T00:00:00Z',
      dryRun: true,
    });
    await outbox.addIntents(
      planIntents(
        planned.plan,
        { syncId: 'running-elsewhere', occurredAt: new Date().toISOString(), scope },
        ['eks', 'gke', 'aks'],
      ),
    );
    await runSync(
      { sources: {}, hub, bus: new JsonLinesFileBus(join(tmpdir(), 'unused.jsonl')), outbox },
      { syncId: 'concurrent', scopes: [], options },
    );
    assert.equal((await outbox.intents()).length, 1, 'still leased to its run');
  });
});
