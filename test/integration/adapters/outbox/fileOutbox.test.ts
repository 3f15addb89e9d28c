import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { FileOutbox } from '../../../../adapters/outbox/FileOutbox.ts';
import { FileIntentLog } from '../../../../adapters/outbox/FileIntentLog.ts';
import type { ChangeIntent } from '../../../../core/sync/changes.ts';
import type { CpsyncEvent } from '../../../../events/types.ts';
import { temporaryDirectory } from '../../../support/tmp.ts';
import { storedEvent, storedIntent } from '../../../support/outboxRecords.ts';

/** An event of the contract at `second` past 10:00 (the outbox orders by time). */
const event = (second: number): CpsyncEvent =>
  storedEvent(`2026-11-21T10:00:${String(second).padStart(2, '0')}Z`);

const intent = (): ChangeIntent => storedIntent();

const jsonFiles = (directory: string) => readdirSync(directory).filter((f) => f.endsWith('.json'));
const ids = (events: CpsyncEvent[]) => events.map((e) => e.detail.eventId);

describe('FileOutbox', () => {
  it('keeps each batch in one file, rewrites it as events go and removes it with the last', async () => {
    const directory = temporaryDirectory('cpsync-outbox-');
    const outbox = new FileOutbox(directory);
    const first = [event(3), event(1), event(5)];
    const second = [event(2), event(4)];
    await outbox.add(first);
    await outbox.add(second);
    assert.equal(jsonFiles(directory).length, 2);
    assert.deepEqual(
      ids(await outbox.pending()),
      ids([first[1]!, second[0]!, first[0]!, second[1]!, first[2]!]),
    );

    await outbox.remove([first[0]!.detail.eventId, second[1]!.detail.eventId]);
    assert.deepEqual(ids(await outbox.pending()), ids([first[1]!, second[0]!, first[2]!]));
    assert.equal(jsonFiles(directory).length, 2);

    await outbox.remove([...ids(first), second[0]!.detail.eventId]);
    assert.deepEqual(await outbox.pending(), []);
    assert.deepEqual(readdirSync(directory), []);
  });

  it('holds an event written twice under its id (a stopped run’s, then its recovered intent’s) once, and takes out both copies', async () => {
    const directory = temporaryDirectory('cpsync-outbox-');
    const twice = event(1);
    const other = event(2);
    // Two processes, one after the other, each writing the event in a batch of its own.
    await new FileOutbox(directory).add([twice, other]);
    await new FileOutbox(directory).add([twice]);
    assert.equal(jsonFiles(directory).length, 2);
    const next = new FileOutbox(directory);
    assert.deepEqual(ids(await next.pending()), ids([twice, other]), 'one event, offered once');
    await next.remove([twice.detail.eventId]);
    assert.deepEqual(ids(await next.pending()), ids([other]));
    assert.deepEqual(ids(await new FileOutbox(directory).pending()), ids([other]), 'no copy left on disk');
    await next.remove([other.detail.eventId]);
    assert.deepEqual(readdirSync(directory), []);
  });

  it('lets another outbox on the same directory take out events it did not write', async () => {
    const directory = temporaryDirectory('cpsync-outbox-');
    const events = [event(1), event(2), event(3)];
    await new FileOutbox(directory).add(events);
    const other = new FileOutbox(directory);
    await other.remove([events[1]!.detail.eventId]);
    assert.deepEqual(ids(await new FileOutbox(directory).pending()), ids([events[0]!, events[2]!]));
  });

  it('takes out events of one batch removed at the same time without losing either removal', async () => {
    const directory = temporaryDirectory('cpsync-outbox-');
    const outbox = new FileOutbox(directory);
    const events = Array.from({ length: 6 }, (_, i) => event(i));
    await outbox.add(events);
    await Promise.all(events.slice(0, 5).map((e) => outbox.remove([e.detail.eventId])));
    assert.deepEqual(ids(await outbox.pending()), ids([events[5]!]));
  });

  it('reads and removes an event left one to a file', async () => {
    const directory = temporaryDirectory('cpsync-outbox-');
    const left = event(7);
    writeFileSync(join(directory, `${left.detail.eventId}.json`), JSON.stringify(left));
    const outbox = new FileOutbox(directory);
    const added = event(8);
    await outbox.add([added]);
    assert.deepEqual(ids(await outbox.pending()), ids([left, added]));
    await outbox.remove([left.detail.eventId]);
    assert.equal((await outbox.pending()).length, 1);
    assert.equal(jsonFiles(directory).length, 1);
  });

  it('keeps intents apart (the intent log), a plan to a file', async () => {
    const directory = temporaryDirectory('cpsync-outbox-');
    const outbox = new FileOutbox(directory);
    const log = new FileIntentLog(directory);
    const plan = [intent(), intent(), intent()];
    await log.add(plan);
    await outbox.add([event(1)]);
    assert.equal(jsonFiles(join(directory, 'intents')).length, 1);
    assert.deepEqual(
      (await log.list()).map((i) => i.id),
      plan.map((i) => i.id),
    );
    assert.equal((await outbox.pending()).length, 1);
    await log.remove(plan.map((i) => i.id));
    assert.deepEqual(await log.list(), []);
    assert.deepEqual(readdirSync(join(directory, 'intents')), []);
  });

  it('holds what was added and not taken out, whichever outbox on the directory takes it out, and leaves no file empty', async () => {
    // The outbox that wrote a batch removes its file without reading it back once every record it wrote there is
    // going: another outbox on the directory may have taken some out before (it rewrites the file with the rest),
    // and an event may be written again under its id in a later batch (a stopped run's intents recovered).
    type Step =
      | { kind: 'add'; fresh: number; again: number[] }
      | { kind: 'remove'; by: 'writer' | 'other'; picks: number[] };
    const step: fc.Arbitrary<Step> = fc.oneof(
      fc.record({
        kind: fc.constant('add' as const),
        fresh: fc.integer({ min: 1, max: 4 }),
        again: fc.array(fc.nat(), { maxLength: 2 }),
      }),
      fc.record({
        kind: fc.constant('remove' as const),
        by: fc.constantFrom('writer' as const, 'other' as const),
        picks: fc.array(fc.nat(), { minLength: 1, maxLength: 5 }),
      }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 14 }), async (steps) => {
        const directory = temporaryDirectory('cpsync-outbox-');
        const writer = new FileOutbox(directory);
        const other = new FileOutbox(directory);
        const written: CpsyncEvent[] = [];
        const pending = new Set<string>();
        for (const [n, s] of steps.entries()) {
          if (s.kind === 'add') {
            const fresh = Array.from({ length: s.fresh }, (_, i) => event((n * 4 + i) % 60));
            const again = written.length === 0 ? [] : s.again.map((i) => written[i % written.length]!);
            await writer.add([...fresh, ...again]);
            written.push(...fresh);
            for (const e of [...fresh, ...again]) pending.add(e.detail.eventId);
          } else {
            const known = [...pending];
            const gone = known.length === 0 ? [] : s.picks.map((i) => known[i % known.length]!);
            await (s.by === 'writer' ? writer : other).remove(gone);
            for (const id of gone) pending.delete(id);
          }
          const onDisk = ids(await new FileOutbox(directory).pending());
          assert.deepEqual(new Set(onDisk), pending, `after step ${n + 1} of ${JSON.stringify(steps)}`);
          assert.equal(onDisk.length, pending.size, 'each pending event offered once');
          if (pending.size === 0) assert.deepEqual(jsonFiles(directory), [], 'no file left without a record');
        }
      }),
      { numRuns: 40 },
    );
  });

  it('refuses a batch with an id that is not a cpsync id, naming it, and writes none of it', async () => {
    const directory = temporaryDirectory('cpsync-outbox-');
    mkdirSync(directory, { recursive: true });
    const outbox = new FileOutbox(directory);
    const bad = { ...event(1), detail: { eventId: '../../etc/passwd' } } as unknown as CpsyncEvent;
    await assert.rejects(
      outbox.add([event(2), bad]),
      /event id "\.\.\/\.\.\/etc\/passwd" is not a cpsync event id/,
    );
    await assert.rejects(
      new FileIntentLog(directory).add([{ id: 'x' } as unknown as ChangeIntent]),
      /intent id "x" is not a cpsync intent id/,
    );
    assert.deepEqual(readdirSync(directory), []);
    assert.deepEqual(await outbox.pending(), []);
  });
});
