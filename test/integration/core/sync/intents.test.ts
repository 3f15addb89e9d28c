import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { JsonLinesFileBus } from '../../../../adapters/bus/JsonLinesBus.ts';
import { KubernetesHub } from '../../../../adapters/hub/KubernetesHub.ts';
import { FileHub } from '../../../../adapters/hub/FileHub.ts';
import { FileLeaseStore } from '../../../../adapters/hub/FileLeases.ts';
import type { ObservedCluster } from '../../../../core/domain/model/observedCluster.ts';
import { FileOutbox } from '../../../../adapters/outbox/FileOutbox.ts';
import { FileIntentLog } from '../../../../adapters/outbox/FileIntentLog.ts';
import { FileAbsenceStore } from '../../../../adapters/outbox/FileAbsenceStore.ts';
import { runSync, syncCluster } from '../../../../core/sync/engine.ts';
import type { ClusterSource, Hub, IntentLog } from '../../../../core/sync/ports.ts';
import type { ClusterProfile } from '../../../../core/domain/model/clusterProfile.ts';
import { givenUp, planIntents, recoverIntents, type IntentOwner } from '../../../../core/sync/intents.ts';
import type { EventContext } from '../../../../core/sync/changes.ts';
import type { Plan } from '../../../../core/domain/plan.ts';
import { inventoryOptions, runSettings } from '../../../support/settings.ts';
import { absencesOf, syncScope } from '../../../support/absences.ts';
import { eksCluster } from '../../../support/fixtures.ts';
import { adminKubeConfig, localHub, uniqueNamespace } from '../../../support/hub.ts';
import { temporaryDirectory } from '../../../support/tmp.ts';

const scope = { provider: 'eks' as const, account: '111122223333', region: 'us-east-1' };

/** The intents of `plan` as a run in `context` writes them ahead (its lease `held`, when it has one). */
const intentsOf = (plan: Plan, context: EventContext, held?: IntentOwner['held']) =>
  planIntents(plan, {
    context,
    accessProviderNames: ['eks', 'gke', 'aks'],
    leaseMillis: runSettings().intentLeaseMillis,
    ...(held ? { held } : {}),
  });

/**
 * `hub` whose client gives up on every `write` (30 s, it says): `gaveUp` is given the write, which the hub carries out
 * when it is called. `hidden`: what the engine must not find on the hub.
 */
function givingUpOn(
  hub: FileHub,
  write: 'applyWhole' | 'applyStatus',
  gaveUp: (land: () => Promise<unknown>) => void,
  hidden: ReadonlyArray<keyof FileHub> = [],
): Hub {
  return new Proxy(hub, {
    get(target, key: keyof FileHub) {
      if (hidden.includes(key)) return undefined;
      if (key === write)
        return (profile: ClusterProfile) => {
          gaveUp(() => target[write](profile));
          return Promise.reject(new Error('the hub did not answer within 30 s'));
        };
      const value = target[key];
      return typeof value === 'function' ? (value as () => unknown).bind(target) : value;
    },
  }) as Hub;
}

describe('write-ahead intents', () => {
  it('a run stopped between its hub writes and its events: the next run announces exactly what reached the hub', async () => {
    const hub = new KubernetesHub({ kubeConfig: adminKubeConfig(await localHub()) });
    const namespace = uniqueNamespace('intents');
    const options = inventoryOptions({ namespace });
    const directory = temporaryDirectory('cpsync-intents-');
    const directoryOfOutbox = join(directory, 'outbox');
    const outbox = new FileOutbox(directoryOfOutbox);
    const log = new FileIntentLog(directoryOfOutbox);
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
      beforeApply: async (plan) => log.add(intentsOf(plan, context)),
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
    await log.add(intentsOf(never.plan, { ...context, syncId: 'stopped-run-2' }));
    assert.equal((await log.list()).length, 3);
    assert.deepEqual(await outbox.pending(), []);

    const events = join(directory, 'events.jsonl');
    const report = await runSync(
      {
        sources: {},
        hub,
        bus: new JsonLinesFileBus(events),
        outbox,
        intents: log,
        absences: absencesOf(hub),
      },
      { syncId: 'next', scopes: [], ...runSettings(options) },
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
    assert.deepEqual(await log.list(), []);
    assert.deepEqual(await outbox.pending(), []);
  });

  it(
    "a cloud's event: the cluster is read while a stopped run's intents are settled, and nothing is written until they are",
    { timeout: 120_000 },
    async () => {
      const directory = temporaryDirectory('cpsync-beside-');
      const hub = new FileHub({ directory: join(directory, 'hub') });
      const options = inventoryOptions({ namespace: 'beside' });
      const outbox = new FileOutbox(join(directory, 'outbox'));
      const stored = new FileIntentLog(join(directory, 'outbox'));
      const context = { syncId: 'stopped-run', occurredAt: '2026-05-01T00:00:00Z', scope };
      // The stopped run created the profile and stopped before announcing it.
      await syncScope({
        hub,
        listing: {
          outcome: { scope, kind: 'partial' as const, missing: [] },
          clusters: [eksCluster({ name: 'a' })],
        },
        options,
        now: context.occurredAt,
        beforeApply: async (plan) => stored.add(intentsOf(plan, context)),
      });
      const [left] = await stored.list();
      const created = (await hub.get({ namespace: 'beside', name: left!.name }))!;
      assert.ok(created.metadata.resourceVersion);

      // The earlier runs' intents are listed only once the cloud has been read: the two go side by side. What
      // reaches the hub and the outbox, in order:
      const seen: string[] = [];
      let read!: () => void;
      const cloudRead = new Promise<void>((resolve) => (read = resolve));
      const log: IntentLog = {
        list: async () => {
          await cloudRead;
          seen.push('intents listed');
          return stored.list();
        },
        add: (intents) => stored.add(intents),
        remove: (ids) => stored.remove(ids),
      };
      const watched = new Proxy(hub, {
        get(target, key: keyof FileHub) {
          const value = target[key];
          if (typeof value !== 'function') return value;
          return (...args: unknown[]) => {
            if (/^apply|^delete$/.test(String(key))) seen.push('hub written');
            return (value as (...a: unknown[]) => unknown).apply(target, args);
          };
        },
      });
      const box = {
        add: async (added: Parameters<FileOutbox['add']>[0]) => {
          for (const event of added) seen.push(`outbox: ${event.detailType} of ${event.detail.syncId}`);
          return outbox.add(added);
        },
        pending: () => outbox.pending(),
        remove: (ids: readonly string[]) => outbox.remove(ids),
      };
      const source: ClusterSource = {
        listScope: () => Promise.reject(new Error('not listed')),
        getCluster: async (ref) => {
          read();
          return eksCluster({ name: ref.name, kubernetesVersion: '1.32' });
        },
        isProviderIdOf: () => false,
      };
      const events = join(directory, 'events.jsonl');
      const report = await syncCluster(
        {
          sources: { eks: source },
          hub: watched,
          leases: new FileLeaseStore(join(directory, 'hub')),
          bus: new JsonLinesFileBus(events),
          outbox: box,
          intents: log,
          absences: absencesOf(watched),
        },
        { ...runSettings(options), syncId: 'event-a', ref: { scope, name: 'a' } },
      );
      assert.equal(report.result, 'updated');
      assert.deepEqual(seen, [
        'intents listed',
        // The stopped run's change, announced from the profile as it stored it, before the event's sync writes.
        'outbox: ClusterProfile Created of stopped-run',
        'hub written',
        'outbox: ClusterProfile Updated of event-a',
      ]);
      const [recovered] = await outbox.pending();
      assert.equal(
        (recovered?.detail as { profile?: { metadata: { resourceVersion?: string } } }).profile?.metadata
          .resourceVersion,
        created.metadata.resourceVersion,
        'announced from the object as the stopped run left it',
      );
      const published = readFileSync(events, 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { 'detail-type': string; detail: { syncId: string } });
      assert.deepEqual(
        published.map((e) => [e['detail-type'], e.detail.syncId]),
        [['ClusterProfile Updated', 'event-a']],
        "the event's own change is published at once (the recovered one waits in the outbox for the next run)",
      );
      assert.deepEqual(await stored.list(), []);
    },
  );

  it(
    "a cloud's event: its change is published once in the outbox, while its intents are removed",
    { timeout: 60_000 },
    async () => {
      const directory = temporaryDirectory('cpsync-beside-');
      const outbox = new FileOutbox(join(directory, 'outbox'));
      const stored = new FileIntentLog(join(directory, 'outbox'));
      const events = join(directory, 'events.jsonl');
      const bus = new JsonLinesFileBus(events);
      let published!: () => void;
      const onBus = new Promise<void>((resolve) => (published = resolve));
      const seen: string[] = [];
      const source: ClusterSource = {
        listScope: () => Promise.reject(new Error('not listed')),
        getCluster: async (ref) => eksCluster({ name: ref.name }),
        isProviderIdOf: () => false,
      };
      const report = await syncCluster(
        {
          sources: { eks: source },
          hub: new FileHub({ directory: join(directory, 'hub') }),
          leases: new FileLeaseStore(join(directory, 'hub')),
          bus: {
            publish: async (sent) => {
              const answer = await bus.publish(sent);
              seen.push(`published ${sent.map((e) => e.detailType).join()}`);
              published();
              return answer;
            },
            describe: () => bus.describe(),
          },
          outbox,
          absences: new FileAbsenceStore(join(directory, 'outbox')),
          // The intents' removal is held until the bus has the event.
          intents: {
            list: () => stored.list(),
            add: (intents) => stored.add(intents),
            remove: async (ids) => {
              if (ids.length === 0) return;
              seen.push(`removing ${ids.length} intent(s)`);
              await onBus;
              await stored.remove(ids);
              seen.push('intents removed');
            },
          },
        },
        {
          ...runSettings(inventoryOptions({ namespace: 'beside' })),
          syncId: 'event-a',
          ref: { scope, name: 'a' },
        },
      );
      assert.equal(report.result, 'created');
      assert.equal(report.published, 1);
      assert.deepEqual(seen, ['removing 1 intent(s)', 'published ClusterProfile Created', 'intents removed']);
      assert.deepEqual(await stored.list(), []);
      assert.deepEqual(await outbox.pending(), [], 'published, so gone from the outbox');
    },
  );

  it("leaves another run's intents alone while their lease lasts", async () => {
    const hub = new KubernetesHub({ kubeConfig: adminKubeConfig(await localHub()) });
    const options = inventoryOptions({ namespace: uniqueNamespace('lease') });
    const directoryOfOutbox = temporaryDirectory('cpsync-lease-');
    const outbox = new FileOutbox(directoryOfOutbox);
    const log = new FileIntentLog(directoryOfOutbox);
    const planned = await syncScope({
      hub,
      listing: { outcome: { scope, kind: 'complete' as const }, clusters: [eksCluster({ name: 'busy' })] },
      options,
      now: '2026-05-01T00:00:00Z',
      dryRun: true,
    });
    await log.add(
      intentsOf(planned.plan, { syncId: 'running-elsewhere', occurredAt: new Date().toISOString(), scope }),
    );
    await runSync(
      {
        sources: {},
        hub,
        bus: new JsonLinesFileBus(join(tmpdir(), 'unused.jsonl')),
        outbox,
        intents: log,
        absences: absencesOf(hub),
      },
      { syncId: 'concurrent', scopes: [], ...runSettings(options) },
    );
    assert.equal((await log.list()).length, 1, 'still leased to its run');
  });

  it('announces the object half of an update whose object write reached the hub but whose answer was lost', async () => {
    const directory = temporaryDirectory('cpsync-half-');
    const hub = new FileHub({ directory: join(directory, 'hub') });
    const directoryOfOutbox = join(directory, 'outbox');
    const outbox = new FileOutbox(directoryOfOutbox);
    const log = new FileIntentLog(directoryOfOutbox);
    const options = inventoryOptions({ namespace: 'half', tagAllowList: ['team'] });
    const listing = (clusters: ObservedCluster[]) => ({
      outcome: { scope, kind: 'complete' as const },
      clusters,
    });
    await syncScope({
      hub,
      listing: listing([eksCluster({ name: 'half' })]),
      options,
      now: '2026-05-01T00:00:00Z',
    });
    // A label to restore (object: the account as an older version spelled it) and an upgrade (status)
    // at once; the run writes the object, then stops.
    const [stored] = await hub.list('half', {});
    await hub.applyObject({
      ...stored!,
      metadata: {
        ...stored!.metadata,
        labels: { ...stored!.metadata.labels, 'cpsync.io/account': 'old-spelling' },
      },
    });
    const planned = await syncScope({
      hub,
      listing: listing([eksCluster({ name: 'half', kubernetesVersion: '1.34' })]),
      options,
      now: '2026-05-01T00:05:00Z',
      dryRun: true,
    });
    const update = planned.plan.updates[0]!;
    assert.ok(update.writeObject && update.writeStatus, 'the plan writes both');
    const context = { syncId: 'lost-answer', occurredAt: '2026-05-01T00:05:00Z', scope };
    await log.add(intentsOf(planned.plan, context));
    await hub.applyObject(update.profile);

    const events = join(directory, 'events.jsonl');
    await runSync(
      {
        sources: {},
        hub,
        bus: new JsonLinesFileBus(events),
        outbox,
        intents: log,
        absences: absencesOf(hub),
      },
      { syncId: 'next', scopes: [], ...runSettings(options) },
    );
    const lines = readFileSync(events, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { 'detail-type': string; detail: { changedFields: string[] } });
    assert.deepEqual(
      lines.map((e) => [e['detail-type'], e.detail.changedFields]),
      [
        [
          'ClusterProfile Updated',
          update.changes.filter((c) => !c.field.startsWith('status.')).map((c) => c.field),
        ],
      ],
    );
    assert.deepEqual(await log.list(), []);
  });

  it('settles an intent whose profile is malformed without an event, and still recovers the others', async () => {
    const directory = temporaryDirectory('cpsync-malformed-intent-');
    const hub = new FileHub({ directory: join(directory, 'hub') });
    const directoryOfOutbox = join(directory, 'outbox');
    const outbox = new FileOutbox(directoryOfOutbox);
    const log = new FileIntentLog(directoryOfOutbox);
    const options = inventoryOptions({ namespace: 'broken' });
    const context = { syncId: 'stopped', occurredAt: '2026-05-01T00:00:00Z', scope };
    await syncScope({
      hub,
      listing: {
        outcome: { scope, kind: 'complete' as const },
        clusters: [eksCluster({ name: 'good' }), eksCluster({ name: 'bad' })],
      },
      options,
      now: context.occurredAt,
      beforeApply: async (plan) => log.add(intentsOf(plan, context)),
    });
    const bad = readdirSync(join(directory, 'hub', 'broken')).find((f) => f.startsWith('cpsync-eks-bad-'))!;
    writeFileSync(join(directory, 'hub', 'broken', bad), 'status:\n  conditions: 7\n');
    const events = join(directory, 'events.jsonl');
    const report = await runSync(
      {
        sources: {},
        hub,
        bus: new JsonLinesFileBus(events),
        outbox,
        intents: log,
        absences: absencesOf(hub),
      },
      { syncId: 'next', scopes: [], ...runSettings(options) },
    );
    assert.equal(report.events.republished, 1, 'the good one is announced');
    assert.match(
      report.problems.join('\n'),
      /intent for broken\/cpsync-eks-bad-\w+ settled without an event/,
    );
    assert.deepEqual(await log.list(), []);
  });

  it('never settles the intents of a run that still holds its lease, however old they are', async () => {
    const directory = temporaryDirectory('cpsync-held-');
    const hub = new FileHub({ directory: join(directory, 'hub') });
    const leases = new FileLeaseStore(join(directory, 'hub'));
    const directoryOfOutbox = join(directory, 'outbox');
    const outbox = new FileOutbox(directoryOfOutbox);
    const log = new FileIntentLog(directoryOfOutbox);
    const options = inventoryOptions({ namespace: 'held' });
    const planned = await syncScope({
      hub,
      listing: { outcome: { scope, kind: 'complete' as const }, clusters: [eksCluster({ name: 'slow' })] },
      options,
      now: '2026-05-01T00:00:00Z',
      dryRun: true,
    });
    await leases.acquire('the-lease', 'slow-run', 60_000);
    await log.add(
      intentsOf(
        planned.plan,
        // Its time was up long ago: a run applying for longer than intentLeaseSeconds.
        { syncId: 'slow-run', occurredAt: '2026-05-01T00:00:00Z', scope },
        { holder: 'slow-run', lease: 'the-lease' },
      ),
    );
    const run = () =>
      runSync(
        {
          sources: {},
          hub,
          leases,
          bus: new JsonLinesFileBus(join(directory, 'events.jsonl')),
          outbox,
          intents: log,
          absences: absencesOf(hub),
        },
        { syncId: 'other', scopes: [], ...runSettings(options) },
      );
    await run();
    assert.equal((await log.list()).length, 1, "still its run's");
    await leases.release('the-lease', 'slow-run');
    await run();
    assert.equal((await log.list()).length, 0, 'settled once the run let go');
  });

  it('a run stopped between putting its events in the outbox and removing its intents: the next announces each change once and leaves nothing pending', async () => {
    const directory = temporaryDirectory('cpsync-intents-');
    const outboxDirectory = join(directory, 'outbox');
    const hub = new FileHub({ directory: join(directory, 'hub') });
    const options = inventoryOptions({ namespace: 'stopped-in-settle' });
    const source = {
      listScope: async () => ({
        outcome: { scope, kind: 'complete' as const },
        clusters: [eksCluster({ name: 'a' })],
      }),
      getCluster: async () => undefined,
      isProviderIdOf: () => false,
    };
    // Held exactly where a stop would leave it: the events written, the intents not yet removed.
    let reached!: () => void;
    const inWindow = new Promise<void>((resolve) => (reached = resolve));
    const stoppedLog = new FileIntentLog(outboxDirectory);
    const held = Object.assign(Object.create(stoppedLog) as FileIntentLog, {
      add: stoppedLog.add.bind(stoppedLog),
      list: stoppedLog.list.bind(stoppedLog),
      // The removal of the applied changes' intents (the start's removes none).
      remove: (ids: readonly string[]) =>
        ids.length === 0 ? stoppedLog.remove(ids) : (reached(), new Promise<void>(() => {})),
    });
    void runSync(
      {
        sources: { eks: source },
        hub,
        bus: new JsonLinesFileBus(join(directory, 'stopped.jsonl')),
        outbox: new FileOutbox(outboxDirectory),
        intents: held,
        absences: new FileAbsenceStore(outboxDirectory),
      },
      {
        syncId: 'stopped',
        scopes: [scope],
        ...runSettings(options),
        intentLeaseMillis: 0,
        intentSettleDelayMillis: 0,
      },
    );
    await inWindow;

    const events = join(directory, 'next.jsonl');
    const report = await runSync(
      {
        sources: { eks: source },
        hub,
        bus: new JsonLinesFileBus(events),
        outbox: new FileOutbox(outboxDirectory),
        intents: new FileIntentLog(outboxDirectory),
        absences: new FileAbsenceStore(outboxDirectory),
      },
      {
        syncId: 'next',
        scopes: [scope],
        ...runSettings(options),
        intentLeaseMillis: 0,
        intentSettleDelayMillis: 0,
      },
    );
    assert.equal(report.events.pending, 0, JSON.stringify(report.problems));
    assert.deepEqual(await new FileIntentLog(outboxDirectory).list(), []);
    assert.deepEqual(
      readdirSync(outboxDirectory).filter((f) => f.endsWith('.json')),
      [],
    );
    const created = readFileSync(events, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { 'detail-type': string; detail: { eventId: string } })
      .filter((e) => e['detail-type'] === 'ClusterProfile Created');
    assert.equal(created.length, 1, 'the Created the stopped run wrote, once');
  });

  for (const entry of ['a full sync', "one cluster's sync (a cloud's event, a look)"] as const)
    it(`a write ${entry} gave up on: later runs wait the settle delay from when it was given up, and announce it when it lands late`, async () => {
      const directory = temporaryDirectory('cpsync-late-');
      const hub = new FileHub({ directory: join(directory, 'hub') });
      const leases = new FileLeaseStore(join(directory, 'hub'));
      const outboxDirectory = join(directory, 'outbox');
      const intents = new FileIntentLog(outboxDirectory);
      const options = inventoryOptions({ namespace: 'late' });
      const start = Date.parse('2026-05-01T00:00:00Z');
      let time = start;
      const clock = () => new Date(time);
      const source: ClusterSource = {
        listScope: async () => ({
          outcome: { scope, kind: 'complete' as const },
          clusters: [eksCluster({ name: 'late' })],
        }),
        getCluster: async () => eksCluster({ name: 'late' }),
        isProviderIdOf: () => false,
      };
      // The hub's client gives up on the write after 30 s; the hub carries it out later, when the test says.
      let land: (() => Promise<unknown>) | undefined;
      const givingUp = givingUpOn(hub, 'applyWhole', (write) => {
        land = write;
        time += 30_000;
      });
      const settings = { ...runSettings(options), intentSettleDelayMillis: 10_000 };
      const portsOf = (syncId: string, used: Hub) => ({
        sources: { eks: source },
        hub: used,
        leases,
        bus: new JsonLinesFileBus(join(directory, `${syncId}.jsonl`)),
        outbox: new FileOutbox(outboxDirectory),
        intents,
        absences: new FileAbsenceStore(outboxDirectory),
        clock,
      });
      /** A run that only settles what earlier runs left (it syncs no scope). */
      const settling = (syncId: string, at: number) => {
        time = at;
        return runSync(portsOf(syncId, hub), { syncId, scopes: [], ...settings });
      };
      const published = (syncId: string) =>
        readFileSync(join(directory, `${syncId}.jsonl`), 'utf8')
          .trim()
          .split('\n')
          .filter((line) => line !== '')
          .map((line) => JSON.parse(line) as { 'detail-type': string; detail: { syncId: string } })
          .filter((e) => e['detail-type'].startsWith('ClusterProfile'))
          .map((e) => `${e['detail-type']} of ${e.detail.syncId}`);

      if (entry === 'a full sync') {
        const first = await runSync(portsOf('gave-up', givingUp), {
          syncId: 'gave-up',
          scopes: [scope],
          ...settings,
        });
        assert.equal(first.intents.waiting, 1, 'its intent is left for a later run');
      } else
        await assert.rejects(
          syncCluster(portsOf('gave-up', givingUp), {
            ...settings,
            syncId: 'gave-up',
            ref: { scope, name: 'late' },
          }),
          /did not answer within 30 s/,
        );
      assert.ok(land, 'the write was sent');
      assert.equal((await intents.list()).length, 1, 'its intent is left for a later run');
      if (entry === 'a full sync')
        assert.deepEqual(
          published('gave-up'),
          [],
          'nothing announced: the run does not know the write landed',
        );

      // 31 s after the run began, 1 s after it gave the write up (and its lease): the write may still land.
      await settling('one-second-later', start + 31_000);
      assert.equal(
        (await intents.list()).length,
        1,
        'left until the settle delay has passed since it was given up',
      );
      await land!();

      // 10 s after it was given up: the write that landed is announced, from the profile as the hub stored it.
      await settling('ten-seconds-later', start + 40_000);
      assert.deepEqual(await intents.list(), []);
      assert.deepEqual(published('ten-seconds-later'), ['ClusterProfile Created of gave-up']);
    });

  it('an intent given up on waits the settle delay from then, its copy left by a stopped process too (property)', async () => {
    const plannedIn = temporaryDirectory('cpsync-given-up-');
    const { plan } = await syncScope({
      hub: new FileHub({ directory: join(plannedIn, 'hub') }),
      listing: {
        outcome: { scope, kind: 'complete' as const },
        clusters: [eksCluster({ name: 'given-up' })],
      },
      options: inventoryOptions({ namespace: 'given-up' }),
      now: '2026-05-01T00:00:00Z',
      dryRun: true,
    });
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          /** From the run's start to when it gave the write up. */
          givenUpAfter: fc.integer({ min: 0, max: 300_000 }),
          settleDelay: fc.integer({ min: 0, max: 30_000 }),
          /** From when it gave up to the next run's look. */
          lookAfter: fc.integer({ min: 0, max: 40_000 }),
          /** A process stopped between writing the given-up copy and removing the first intent. */
          bothLeft: fc.boolean(),
          /** The run held a lease (a hub that keeps none: the intent's own time alone), and still holds it. */
          leased: fc.boolean(),
          held: fc.boolean(),
          /** The write landed after all. */
          landed: fc.boolean(),
          /** `sync.intentLeaseSeconds` (0 is allowed): the intent's own time, from the run's start. */
          intentLease: fc.constantFrom(0, 60_000, 900_000),
        }),
        async ({ givenUpAfter, settleDelay, lookAfter, bothLeft, leased, held, landed, intentLease }) => {
          const directory = temporaryDirectory('cpsync-given-up-');
          const leases = new FileLeaseStore(join(directory, 'hub'));
          const log = new FileIntentLog(join(directory, 'outbox'));
          const hub = new FileHub({ directory: join(directory, 'hub') });
          const outbox = new FileOutbox(join(directory, 'outbox'));
          if (landed) await hub.applyWhole!(plan.creates[0]!.profile);
          const started = Date.parse('2026-05-01T00:00:00Z');
          await leases.acquire('the-lease', 'the-run', 3_600_000);
          if (!held) await leases.release('the-lease', 'the-run');
          const [first] = planIntents(plan, {
            context: { syncId: 'the-run', occurredAt: new Date(started).toISOString(), scope },
            accessProviderNames: ['eks', 'gke', 'aks'],
            leaseMillis: intentLease,
            ...(leased ? { held: { holder: 'the-run', lease: 'the-lease' } } : {}),
          });
          const copy = givenUp(first!, new Date(started + givenUpAfter));
          await log.add(bothLeft ? [first!, copy] : [copy]);
          await recoverIntents(
            { hub, outbox, intents: log },
            ['eks', 'gke', 'aks'],
            new Date(started + givenUpAfter + lookAfter),
            { leases, settleDelayMillis: settleDelay },
          );
          // Never while its run holds its lease; else once its own time is over (or, leased, its run gone), and in
          // every case not before the settle delay has passed since the write was given up.
          const delayed = lookAfter < settleDelay;
          const ownTimeOver = givenUpAfter + lookAfter >= intentLease;
          const left = leased ? held || delayed : delayed || !ownTimeOver;
          assert.equal((await log.list()).length, left ? (bothLeft ? 2 : 1) : 0);
          // Settled, a write that landed is announced once, however many of its intents were left.
          assert.deepEqual(
            (await outbox.pending()).map((e) => e.detailType),
            !left && landed ? ['ClusterProfile Created'] : [],
          );
        },
      ),
      { numRuns: 60 },
    );
  });

  it('an update whose status write was given up, left by a process stopped in its settle: each half announced once, never the whole again', async () => {
    const directory = temporaryDirectory('cpsync-halves-');
    const hub = new FileHub({ directory: join(directory, 'hub') });
    const outboxDirectory = join(directory, 'outbox');
    const options = inventoryOptions({
      namespace: 'halves',
      labels: { fromTags: ['env'], prefix: 'cpsync.io/tag-' },
    });
    let time = Date.parse('2026-05-01T00:00:00Z');
    let cluster = eksCluster({ name: 'halves' });
    const source: ClusterSource = {
      listScope: async () => ({ outcome: { scope, kind: 'complete' as const }, clusters: [cluster] }),
      getCluster: async () => cluster,
      isProviderIdOf: () => false,
    };
    const settings = {
      ...runSettings(options),
      intentLeaseMillis: 0,
      intentSettleDelayMillis: 10_000,
    };
    const portsOf = (syncId: string, used: Hub, intents: IntentLog) => ({
      sources: { eks: source },
      hub: used,
      bus: new JsonLinesFileBus(join(directory, `${syncId}.jsonl`)),
      outbox: new FileOutbox(outboxDirectory),
      intents,
      absences: new FileAbsenceStore(outboxDirectory),
      clock: () => new Date(time),
    });
    await runSync(portsOf('first', hub, new FileIntentLog(outboxDirectory)), {
      syncId: 'first',
      scopes: [scope],
      ...settings,
    });

    // A tag (the object's labels) and the version (its status) change; the status write is given up after 30 s,
    // and the process stops once the given-up copy is written, before the intents it replaces are removed.
    cluster = eksCluster({
      name: 'halves',
      kubernetesVersion: '1.32',
      tags: { team: 'payments', env: 'staging' },
    });
    let land: (() => Promise<unknown>) | undefined;
    // The object and the status written apart, as on a Kubernetes hub.
    const split = givingUpOn(
      hub,
      'applyStatus',
      (write) => {
        land = write;
        time += 30_000;
      },
      ['applyWhole'],
    );
    const stored = new FileIntentLog(outboxDirectory);
    let stopped!: () => void;
    const inSettle = new Promise<void>((resolve) => (stopped = resolve));
    const stopping: IntentLog = {
      list: () => stored.list(),
      add: (intents) => stored.add(intents),
      remove: (ids) => (ids.length === 0 ? stored.remove(ids) : (stopped(), new Promise<void>(() => {}))),
    };
    void runSync(portsOf('stopped', split, stopping), { syncId: 'stopped', scopes: [scope], ...settings });
    await inSettle;
    assert.ok(land, 'the status write was sent');
    assert.equal((await stored.list()).length, 2, 'the update and its status half given up');
    await land!();

    time += 10_000;
    await runSync(portsOf('settling', hub, new FileIntentLog(outboxDirectory)), {
      syncId: 'settling',
      scopes: [],
      ...settings,
    });
    assert.deepEqual(await new FileIntentLog(outboxDirectory).list(), []);
    // Every update announced, by whichever run published it, once each (subscribers de-duplicate by id).
    const updates = new Map<string, string[]>();
    const published = (run: string) =>
      existsSync(join(directory, `${run}.jsonl`))
        ? readFileSync(join(directory, `${run}.jsonl`), 'utf8')
        : '';
    for (const run of ['stopped', 'settling'])
      for (const line of published(run).split('\n'))
        if (line.trim() !== '') {
          const event = JSON.parse(line) as {
            'detail-type': string;
            detail: { eventId: string; changedFields: string[] };
          };
          if (event['detail-type'] === 'ClusterProfile Updated')
            updates.set(event.detail.eventId, event.detail.changedFields);
        }
    const halves = [...updates.values()].map((fields) =>
      fields.every((f) => f.startsWith('status.'))
        ? 'status'
        : fields.some((f) => f.startsWith('status.'))
          ? 'whole'
          : 'object',
    );
    assert.deepEqual(halves.sort(), ['object', 'status'], JSON.stringify([...updates.values()]));
  });

  it("an event delivered again (one sync id) that planned another change: its intent is announced, not taken for the earlier delivery's given-up write", async () => {
    const directory = temporaryDirectory('cpsync-redelivered-');
    const hub = new FileHub({ directory: join(directory, 'hub') });
    const log = new FileIntentLog(join(directory, 'outbox'));
    const outbox = new FileOutbox(join(directory, 'outbox'));
    const context = { syncId: 'event-1', occurredAt: '2026-05-01T00:00:00Z', scope };
    const planOf = async (cluster: ObservedCluster) =>
      (
        await syncScope({
          hub,
          listing: { outcome: { scope, kind: 'complete' as const }, clusters: [cluster] },
          options: inventoryOptions({
            namespace: 'redelivered',
            labels: { fromTags: ['env'], prefix: 'cpsync.io/tag-' },
          }),
          now: context.occurredAt,
          dryRun: true,
        })
      ).plan;
    // The first delivery's create was given up (it never landed); the second, the cluster read again, planned its own
    // create (an intent of its own: the change is in the id), wrote it, and stopped before it settled.
    // (a tag copied to a label: the object each create leads to differs)
    const [first] = intentsOf(
      await planOf(eksCluster({ name: 'again', tags: { env: 'prod' }, kubernetesVersion: '1.31' })),
      context,
    );
    const secondPlan = await planOf(
      eksCluster({ name: 'again', tags: { env: 'staging' }, kubernetesVersion: '1.32' }),
    );
    const [second] = intentsOf(secondPlan, context);
    assert.notEqual(second!.id, first!.id, 'one sync id, another change: another intent id');
    await log.add([givenUp(first!, new Date('2026-05-01T00:00:30Z')), second!]);
    await hub.applyWhole!(secondPlan.creates[0]!.profile);
    await recoverIntents(
      { hub, outbox, intents: log },
      ['eks', 'gke', 'aks'],
      new Date('2026-05-01T01:00:00Z'),
    );
    assert.deepEqual(await log.list(), []);
    const [created] = await outbox.pending();
    assert.equal(created?.detailType, 'ClusterProfile Created', "the second delivery's create, announced");
    assert.equal(
      (created!.detail as { profile?: ClusterProfile }).profile?.status?.version?.kubernetes,
      '1.32',
    );
  });
});
