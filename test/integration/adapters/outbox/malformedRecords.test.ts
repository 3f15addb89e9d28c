/**
 * Records of another shape in the outbox and the intent log — well-formed JSON with the right kind of id, edited by
 * hand or written by another version — are set aside and named, never read as what they are not: every other
 * record is still settled and published, by a whole run and by a one-cluster sync alike. fast-check draws which
 * field of a stored event or intent is taken away or given a value of another type.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { JsonLinesFileBus } from '../../../../adapters/bus/JsonLinesBus.ts';
import { FileHub } from '../../../../adapters/hub/FileHub.ts';
import { FileLeaseStore } from '../../../../adapters/hub/FileLeases.ts';
import { FileIntentLog } from '../../../../adapters/outbox/FileIntentLog.ts';
import { FileAbsenceStore } from '../../../../adapters/outbox/FileAbsenceStore.ts';
import { FileOutbox } from '../../../../adapters/outbox/FileOutbox.ts';
import type { Scope } from '../../../../core/domain/model/scope.ts';
import { syncCluster } from '../../../../core/sync/engine.ts';
import type { ClusterSource } from '../../../../core/sync/ports.ts';
import { eksCluster } from '../../../support/fixtures.ts';
import { storedEvent, storedIntent } from '../../../support/outboxRecords.ts';
import { inventoryOptions, runSettings } from '../../../support/settings.ts';
import { temporaryDirectory } from '../../../support/tmp.ts';

/** The fields of a stored event and of a stored intent a reader relies on (the id kept: it passes the old check). */
const EVENT_FIELDS = ['source', 'detailType', 'time', 'resources', 'detail.schemaVersion', 'detail.scope'];
const INTENT_FIELDS = [
  'kind',
  'namespace',
  'name',
  'changes',
  'target',
  'context',
  'context.syncId',
  'context.occurredAt',
  'context.scope',
  'notBefore',
  'givenUpAt',
];

/** A value of another type than any of these fields holds (or the field taken away). */
const wrong = fc.constantFrom<unknown>(undefined, null, 42, true, [], {}, '', 'not a date');

/** `record` with `path` set to `value` (taken away when undefined). */
function mutated(record: object, path: string, value: unknown): Record<string, unknown> {
  const copy = structuredClone(record) as Record<string, unknown>;
  const keys = path.split('.');
  let at = copy;
  for (const key of keys.slice(0, -1)) at = at[key] as Record<string, unknown>;
  if (value === undefined) delete at[keys.at(-1)!];
  else at[keys.at(-1)!] = value;
  return copy;
}

const isDate = (value: unknown) => typeof value === 'string' && !Number.isNaN(Date.parse(value));
const nonEmpty = (value: unknown) => typeof value === 'string' && value !== '';

/** Whether `value` at `path` still makes a record of that shape (an optional field taken away, a list empty). */
function stillValid(kind: 'event' | 'intent', path: string, value: unknown): boolean {
  const valid: Record<string, (value: unknown) => boolean> =
    kind === 'event'
      ? { source: nonEmpty, time: isDate, resources: Array.isArray }
      : {
          namespace: nonEmpty,
          name: nonEmpty,
          changes: Array.isArray,
          target: (v) => typeof v === 'string',
          'context.syncId': nonEmpty,
          'context.occurredAt': isDate,
          notBefore: isDate,
          givenUpAt: (v) => v === undefined || isDate(v),
        };
  return valid[path]?.(value) ?? false;
}

describe('malformed outbox and intent records', () => {
  it('are set aside and named, file by file, and every other record is read', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.oneof(
            fc.record({
              kind: fc.constant('event' as const),
              path: fc.constantFrom(...EVENT_FIELDS),
              value: wrong,
            }),
            fc.record({
              kind: fc.constant('intent' as const),
              path: fc.constantFrom(...INTENT_FIELDS),
              value: wrong,
            }),
          ),
          { minLength: 1, maxLength: 4 },
        ),
        async (damage) => {
          const directory = temporaryDirectory('cpsync-malformed-');
          const good = { events: [storedEvent('2026-11-21T10:00:01Z')], intents: [storedIntent()] };
          await new FileOutbox(directory).add(good.events);
          await new FileIntentLog(directory).add(good.intents);
          mkdirSync(join(directory, 'intents'), { recursive: true });
          const planted: Array<{ file: string; valid: boolean; id: string }> = [];
          damage.forEach(({ kind, path, value }, index) => {
            const event = kind === 'event' ? storedEvent(`2026-11-21T10:00:0${index + 2}Z`) : undefined;
            const intent =
              kind === 'intent' ? { ...storedIntent(), givenUpAt: '2026-11-21T10:01:00Z' } : undefined;
            const record = mutated((event ?? intent)!, path, value);
            const file = `0000000${index}-planted.json`;
            writeFileSync(join(directory, kind === 'event' ? '' : 'intents', file), JSON.stringify([record]));
            const id = event ? event.detail.eventId : intent!.id;
            planted.push({ file, valid: stillValid(kind, path, value), id });
          });
          const outbox = new FileOutbox(directory);
          const log = new FileIntentLog(directory);
          const pending = (await outbox.pending()).map((e) => e.detail.eventId);
          const listed = (await log.list()).map((i) => i.id);
          const read = new Set([...pending, ...listed]);
          for (const { id } of [...good.events.map((e) => ({ id: e.detail.eventId })), ...good.intents])
            assert.ok(read.has(id));
          const quarantined = [...outbox.quarantined(), ...log.quarantined()];
          for (const { file, valid, id } of planted) {
            const aside = quarantined.find((q) => q.path.endsWith(`-${file}`));
            if (valid) {
              assert.ok(read.has(id), `${file} is still a record`);
              continue;
            }
            assert.ok(!read.has(id), `${file} was read`);
            assert.ok(aside, `${file} was not set aside`);
            assert.match(
              aside.reason,
              /holds something that is not a cpsync (event|intent) \(record 1: .+\)/,
            );
            assert.ok(existsSync(aside.path) && readFileSync(aside.path, 'utf8').length > 0, 'nothing lost');
          }
        },
      ),
      { numRuns: 60 },
    );
  });

  it('never stop a one-cluster sync (a cloud event, a follow-up look) from settling, applying and publishing', async () => {
    const directory = temporaryDirectory('cpsync-malformed-sync-');
    const outboxDirectory = join(directory, 'outbox');
    const scope: Scope = { provider: 'eks', account: '111122223333', region: 'us-east-1' };
    const settings = runSettings(inventoryOptions({ namespace: 'malformed' }));
    // What the review found: an intent with a cpsync id and nothing else, and an event with a cpsync id and no time.
    mkdirSync(join(outboxDirectory, 'intents'), { recursive: true });
    writeFileSync(
      join(outboxDirectory, 'intents', 'hand-edited.json'),
      JSON.stringify([{ id: 'a'.repeat(32) }]),
    );
    writeFileSync(
      join(outboxDirectory, 'hand-edited.json'),
      JSON.stringify({ detail: { eventId: '00000000-0000-4000-8000-000000000000' } }),
    );
    const source: ClusterSource = {
      listScope: async (listed) => ({ outcome: { scope: listed, kind: 'complete' }, clusters: [] }),
      getCluster: async (ref) => eksCluster({ name: ref.name, account: ref.scope.account }),
      isProviderIdOf: () => false,
    };
    const events = join(directory, 'events.jsonl');
    const ports = {
      sources: { eks: source },
      hub: new FileHub({ directory: join(directory, 'hub') }),
      leases: new FileLeaseStore(join(directory, 'hub')),
      bus: new JsonLinesFileBus(events),
      outbox: new FileOutbox(outboxDirectory),
      intents: new FileIntentLog(outboxDirectory),
      absences: new FileAbsenceStore(outboxDirectory),
    };
    const result = await syncCluster(ports, {
      ...settings,
      syncId: 'event-payments',
      ref: { scope, name: 'payments' },
    });
    assert.equal(result.result, 'created');
    const published = readFileSync(events, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { 'detail-type': string });
    assert.ok(
      published.some((e) => e['detail-type'] === 'ClusterProfile Created'),
      'the creation was announced',
    );
    // The intents are read before any one-cluster sync applies; the outbox's leftovers at the next whole run.
    assert.deepEqual(
      readdirSync(join(outboxDirectory, 'quarantine')).map((name) => name.replace(/^\d+-/, '')),
      ['hand-edited.json'],
    );
    assert.match(ports.intents.quarantined()[0]!.reason, /record 1: kind: /);
  });
});
