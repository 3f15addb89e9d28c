import assert from 'node:assert/strict';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { parse, stringify } from 'yaml';
import type { ClusterProfile } from '../../../../core/domain/model/clusterProfile.ts';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { JsonLinesFileBus } from '../../../../adapters/bus/JsonLinesBus.ts';
import { FileHub } from '../../../../adapters/hub/FileHub.ts';
import { FileOutbox } from '../../../../adapters/outbox/FileOutbox.ts';
import { FileIntentLog } from '../../../../adapters/outbox/FileIntentLog.ts';
import { FileAbsenceStore } from '../../../../adapters/outbox/FileAbsenceStore.ts';
import { runSync } from '../../../../core/sync/engine.ts';
import { scopeKey, type Scope } from '../../../../core/domain/model/scope.ts';
import { inventoryOptions, runSettings } from '../../../support/settings.ts';
import type { ClusterSource } from '../../../../core/sync/ports.ts';
import { eksCluster, gkeCluster } from '../../../support/fixtures.ts';
import { temporaryDirectory } from '../../../support/tmp.ts';

/** A cloud whose every scope holds one cluster named after the scope. */
function cloud(make: typeof eksCluster): ClusterSource {
  return {
    listScope: async (scope) => ({
      outcome: { scope, kind: 'complete' },
      clusters: [make({ name: `c-${scope.account}`, account: scope.account })],
    }),
    getCluster: async () => undefined,
    isProviderIdOf: () => false,
  };
}

describe('runSync over many scopes', () => {
  const eks = ['111111111111', '222222222222', '333333333333'].map((account): Scope => ({
    provider: 'eks',
    account,
    region: 'us-east-1',
  }));
  const gke: Scope = { provider: 'gke', account: 'acme-data', region: '*' };

  const ports = () => {
    const directory = temporaryDirectory('cpsync-run-');
    return {
      directory,
      ports: {
        sources: { eks: cloud(eksCluster), gke: cloud(gkeCluster) },
        hub: new FileHub({ directory: join(directory, 'hub') }),
        bus: new JsonLinesFileBus(join(directory, 'events.jsonl')),
        outbox: new FileOutbox(join(directory, 'outbox')),
        intents: new FileIntentLog(join(directory, 'outbox')),
        absences: new FileAbsenceStore(join(directory, 'outbox')),
      },
    };
  };

  it('lets the clouds take turns, whatever order the scopes come in', async () => {
    const started: string[] = [];
    const { ports: p } = ports();
    for (const source of [p.sources.eks, p.sources.gke]) {
      const list = source.listScope;
      source.listScope = (scope, signal) => (started.push(scopeKey(scope)), list(scope, signal));
    }
    await runSync(p, {
      syncId: 'turns',
      scopes: [...eks, gke],
      ...runSettings(inventoryOptions({ namespace: 'turns' })),
      concurrency: 1,
    });
    assert.deepEqual(
      started,
      [eks[0], gke, eks[1], eks[2]].map((s) => scopeKey(s!)),
    );
  });

  it('keeps only the summaries when asked to, yet publishes and reports the same', async () => {
    const { ports: p, directory } = ports();
    const report = await runSync(p, {
      syncId: 'brief',
      scopes: [...eks, gke],
      ...runSettings(inventoryOptions({ namespace: 'brief' })),
      retainDetails: false,
    });
    assert.equal(report.scopes.length, 4);
    assert.ok(report.scopes.every((s) => s.plan === undefined && s.events.length === 0));
    assert.deepEqual(
      report.scopes.map((s) => s.summary.counts.created),
      [1, 1, 1, 1],
    );
    assert.equal(report.events.published, 8, '4 Created + 4 scope summaries');
    const published = readFileSync(join(directory, 'events.jsonl'), 'utf8').trim().split('\n');
    assert.equal(published.length, 8);
  });

  it('ends in a report even when a progress callback throws', async () => {
    const { ports: p } = ports();
    const report = await runSync(p, {
      syncId: 'progress',
      scopes: [eks[0]!],
      ...runSettings(inventoryOptions({ namespace: 'progress' })),
      onScope: () => {
        throw new Error('the terminal went away');
      },
    });
    assert.equal(report.scopes.length, 1);
    assert.match(report.problems.join('\n'), /the progress display failed: the terminal went away/);
  });

  it('takes a complete listing with a cluster it cannot read for partial, and deletes nothing', async () => {
    const { ports: p } = ports();
    const options = inventoryOptions({ namespace: 'unreadable', deletionGraceListings: 1 });
    const a = eksCluster({ name: 'a', account: '111111111111' });
    const b = eksCluster({ name: 'b', account: '111111111111' });
    let clusters = [a, b];
    p.sources.eks = {
      listScope: async (scope) => ({ outcome: { scope, kind: 'complete' }, clusters }),
      getCluster: async () => undefined,
      isProviderIdOf: () => false,
    };
    await runSync(p, { syncId: 'first', scopes: [eks[0]!], ...runSettings(options) });
    // b comes back without the fields a profile needs (a cloud answering something odd).
    clusters = [a, { ...b, name: '' }];
    const report = await runSync(p, { syncId: 'second', scopes: [eks[0]!], ...runSettings(options) });
    const [scope] = report.scopes;
    assert.equal(scope!.outcome.kind, 'partial');
    assert.deepEqual([scope!.summary.counts.deleted, scope!.summary.counts.invalid], [0, 1]);
    assert.equal((await p.hub.list('unreadable', {})).length, 2, 'b is kept');
  });

  it('adds the member id to profiles an earlier version wrote without it: one Updated event each, once', async () => {
    const { ports: p, directory } = ports();
    const options = inventoryOptions({ namespace: 'upgrade' });
    const settings = { scopes: eks, ...runSettings(options) };
    await runSync(p, { syncId: 'old', ...settings });
    // The profiles as a version without the member id left them: the label taken out of each file.
    const folder = join(directory, 'hub', 'upgrade');
    const files = readdirSync(folder).filter(
      (f) =>
        f.endsWith('.yaml') &&
        (parse(readFileSync(join(folder, f), 'utf8')) as ClusterProfile).kind === 'ClusterProfile',
    );
    assert.equal(files.length, 3);
    for (const file of files) {
      const profile = parse(readFileSync(join(folder, file), 'utf8')) as ClusterProfile;
      delete profile.metadata.labels!['multicluster.x-k8s.io/inventory-member-id'];
      writeFileSync(join(folder, file), stringify(profile));
    }
    const events = () =>
      readFileSync(join(directory, 'events.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as { 'detail-type': string; detail: { changedFields?: string[] } })
        .filter((e) => e['detail-type'] !== 'Inventory Scope Synced');
    const before = events().length;
    const upgraded = await runSync(p, { syncId: 'new', ...settings });
    assert.deepEqual(
      upgraded.scopes.map((s) => s.summary.counts.updated),
      [1, 1, 1],
    );
    const updates = events().slice(before);
    assert.deepEqual(
      updates.map((e) => [e['detail-type'], e.detail.changedFields]),
      Array(3).fill([
        'ClusterProfile Updated',
        ['metadata.labels[multicluster.x-k8s.io/inventory-member-id]'],
      ]),
    );
    for (const file of files) {
      const profile = parse(readFileSync(join(folder, file), 'utf8')) as ClusterProfile;
      assert.match(profile.metadata.labels!['multicluster.x-k8s.io/inventory-member-id']!, /^[0-9a-f]{20}$/);
    }
    const after = events().length;
    await runSync(p, { syncId: 'then', ...settings });
    assert.equal(events().length, after, 'once');
  });
});
