/**
 * A change another sync made and never announced (its write's answer lost, the sync gone before it could tell)
 * is announced by the next sync that writes over it, even while recovery must still leave that sync's intent alone:
 * once written over, no later recovery could tell the change reached the hub. The oracle is the bus: the events it
 * received, one per change, each once.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { JsonLinesFileBus } from '../../../../adapters/bus/JsonLinesBus.ts';
import { FileHub } from '../../../../adapters/hub/FileHub.ts';
import { FileLeaseStore } from '../../../../adapters/hub/FileLeases.ts';
import { FileIntentLog } from '../../../../adapters/outbox/FileIntentLog.ts';
import { FileAbsenceStore } from '../../../../adapters/outbox/FileAbsenceStore.ts';
import { FileOutbox } from '../../../../adapters/outbox/FileOutbox.ts';
import type { Scope } from '../../../../core/domain/model/scope.ts';
import { runSync, syncCluster } from '../../../../core/sync/engine.ts';
import type { ClusterSource, Hub } from '../../../../core/sync/ports.ts';
import { eksCluster } from '../../../support/fixtures.ts';
import { inventoryOptions, runSettings } from '../../../support/settings.ts';
import { temporaryDirectory } from '../../../support/tmp.ts';

interface Delivered {
  'detail-type': string;
  detail: { eventId: string; changes?: Array<{ field: string; before?: unknown; after?: unknown }> };
}

/** A hub whose next write lands and then fails, as one whose answer was lost. */
function losingAnswers(hub: Hub): { hub: Hub; loseNext(): void } {
  let lose = false;
  const writes = new Set(['applyObject', 'applyStatus', 'applyWhole', 'delete']);
  const wrapped = new Proxy(hub, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver) as unknown;
      if (typeof value !== 'function') return value;
      if (!writes.has(String(property))) return value.bind(target);
      return async (...args: unknown[]) => {
        const answer = await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        if (lose) {
          lose = false;
          throw new Error('the answer to the write was lost');
        }
        return answer;
      };
    },
  });
  return { hub: wrapped, loseNext: () => (lose = true) };
}

describe('a change another sync made and never announced', () => {
  for (const path of ['one-cluster', 'whole run'] as const)
    for (const next of ['another sync', 'the same event delivered again'] as const)
      for (const lost of ['the write’s answer', 'its process, before the outbox'] as const)
        it(`is announced by the next sync that writes over it (${path}, ${next}, ${lost} lost), once, and never again by the recovery after`, async () => {
          const directory = temporaryDirectory('cpsync-landed-');
          const scope: Scope = { provider: 'eks', account: '111122223333', region: 'us-east-1' };
          let version = '1.30';
          const source: ClusterSource = {
            listScope: async (listed) => ({
              outcome: { scope: listed, kind: 'complete' },
              clusters: [
                eksCluster({ name: 'payments', account: listed.account, kubernetesVersion: version }),
              ],
            }),
            getCluster: async (ref) =>
              eksCluster({ name: ref.name, account: ref.scope.account, kubernetesVersion: version }),
            isProviderIdOf: () => true,
          };
          const { hub, loseNext } = losingAnswers(new FileHub({ directory: join(directory, 'hub') }));
          let now = new Date('2026-12-01T10:00:00Z');
          const events = join(directory, 'events.jsonl');
          // An outbox whose next write fails: the sync stops after its hub write, its intent left as written.
          const outbox = new FileOutbox(join(directory, 'outbox'));
          let stopBeforeOutbox = false;
          const add = outbox.add.bind(outbox);
          outbox.add = async (added) => {
            if (stopBeforeOutbox && added.length > 0) {
              stopBeforeOutbox = false;
              throw new Error('the process stopped');
            }
            return add(added);
          };
          const ports = {
            sources: { eks: source },
            hub,
            leases: new FileLeaseStore(join(directory, 'hub')),
            bus: new JsonLinesFileBus(events),
            outbox,
            intents: new FileIntentLog(join(directory, 'outbox')),
            absences: new FileAbsenceStore(join(directory, 'outbox')),
            clock: () => now,
          };
          // A write given up on is settled by others an hour after (a hub whose late writes may still land).
          const settings = {
            ...runSettings(inventoryOptions({ namespace: 'landed' })),
            intentSettleDelayMillis: 3_600_000,
          };
          const one = (syncId: string) =>
            syncCluster(ports, { ...settings, syncId, ref: { scope, name: 'payments' } });
          const sync = (syncId: string) =>
            path === 'one-cluster' ? one(syncId) : runSync(ports, { ...settings, syncId, scopes: [scope] });

          assert.equal((await one('event-created')).result, 'created');
          // The upgrade to 1.31 reaches the hub, and its sync never learns so: nothing announced, its intent kept.
          version = '1.31';
          if (lost === 'the write’s answer') loseNext();
          else stopBeforeOutbox = true;
          await assert.rejects(one('event-upgraded'), /the answer to the write was lost|the process stopped/);
          // The next sync, while that one's intent is its own still (or given up on within the hour), writes over it.
          now = new Date(now.getTime() + 1_000);
          version = '1.32';
          // A redelivery of the same event (its sync id) plans another change: an intent of its own, not over the first.
          await sync(next === 'another sync' ? 'event-upgraded-again' : 'event-upgraded');
          // Two hours later, the given-up intent is settled: its change was announced already, so nothing more.
          now = new Date(now.getTime() + 7_200_000);
          await sync('later');

          const delivered = readFileSync(events, 'utf8')
            .trim()
            .split('\n')
            .map((line) => JSON.parse(line) as Delivered)
            .filter((e) => e['detail-type'] === 'ClusterProfile Updated');
          const versions = delivered.map((e) =>
            (e.detail.changes ?? [])
              .filter((c) => c.field.endsWith('version.kubernetes'))
              .map((c) => `${String(c.before)}→${String(c.after)}`)
              .join(','),
          );
          assert.deepEqual(
            [...new Set(delivered.map((e) => e.detail.eventId))].length,
            new Set(versions).size,
            `one event per change: ${versions.join(' | ')}`,
          );
          assert.deepEqual([...new Set(versions)].sort(), ['1.30→1.31', '1.31→1.32']);
        });
});
