import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { normalize } from '../../../../core/domain/normalize.ts';
import { buildChangeEvent, buildOrphanEvent, buildScopeEvent } from '../../../../core/sync/events.ts';
import { MAX_DETAIL_BYTES } from '../../../../events/detailTypes.ts';
import { DetailValidator } from '../../../../events/validate.ts';
import { aksCluster } from '../../../support/fixtures.ts';
import { inventoryOptions } from '../../../support/settings.ts';

const validator = new DetailValidator();
const NOW = '2026-11-01T12:00:00Z';
const context = {
  syncId: 's-1',
  occurredAt: NOW,
  scope: { provider: 'aks' as const, account: 'a', region: 'r' },
};

describe('change events at every size', () => {
  it('fit the detail budget whatever the changes: the profile, then values, then the tail of the list go, each said; the first change stays', () => {
    const profile = normalize(aksCluster(), inventoryOptions(), NOW);
    profile.metadata.uid = 'u-1';
    const change = fc.record({
      field: fc.oneof(
        fc.string({ minLength: 1, maxLength: 40 }),
        fc.string({ minLength: 1, maxLength: 1200, unit: 'grapheme', size: 'max' }),
      ),
      before: fc.option(fc.string({ maxLength: 3000, size: 'max' }), { nil: undefined }),
      after: fc.option(fc.string({ maxLength: 3000, size: 'max' }), { nil: undefined }),
    });
    fc.assert(
      fc.property(
        fc.oneof(
          fc.array(change, { minLength: 1, maxLength: 5 }),
          fc.array(change, { minLength: 1, maxLength: 400, size: 'max' }),
        ),
        fc.constantFrom('created', 'updated'),
        (changes, kind) => {
          const clean = changes.map(
            (c) => Object.fromEntries(Object.entries(c).filter(([, v]) => v !== undefined)) as typeof c,
          );
          const { detail } = buildChangeEvent(
            { kind, profile, changes: clean, previousResourceVersion: '1' },
            context,
          );
          const size = Buffer.byteLength(JSON.stringify(detail));
          assert.ok(size <= MAX_DETAIL_BYTES, `${size} bytes`);
          assert.deepEqual(
            validator.errors(
              kind === 'created' ? 'ClusterProfile Created' : 'ClusterProfile Updated',
              detail,
            ),
            [],
          );
          const kept = detail.changes.length;
          assert.ok(kept >= 1);
          assert.equal(kept + (detail.changesOmitted ?? 0), clean.length, 'every change is kept or counted');
          if (detail.changesOmitted)
            assert.equal(detail.profileOmitted, true, 'the profile goes before any change');
          if (detail.changes.some((c) => 'before' in c || 'after' in c))
            assert.equal(detail.changesOmitted, undefined, 'values go before changes are cut');
          // The kept changes are the first ones, in order (fields cut only once values are gone).
          detail.changes.forEach((c, i) => assert.ok(clean[i]!.field.startsWith(c.field.replace(/…$/, ''))));
          assert.deepEqual(detail.changedFields, [...new Set(detail.changes.map((c) => c.field))]);
        },
      ),
      { numRuns: 40 },
    );
  });

  it('take each step only when the one before was not enough', () => {
    const profile = normalize(aksCluster(), inventoryOptions(), NOW);
    profile.metadata.uid = 'u-1';
    const detailOf = (count: number, valueLength: number, fieldLength = 20) =>
      buildChangeEvent(
        {
          kind: 'updated',
          profile,
          previousResourceVersion: '1',
          changes: Array.from({ length: count }, (_, i) => ({
            field: `status.properties[${String(i).padStart(fieldLength, 'x')}]`,
            before: 'b'.repeat(valueLength),
            after: 'a'.repeat(valueLength),
          })),
        },
        context,
      ).detail;
    const whole = detailOf(3, 10);
    assert.ok(whole.profile && !whole.profileOmitted && whole.changesOmitted === undefined);
    const valuesOut = detailOf(40, 2000);
    assert.equal(valuesOut.profileOmitted, true);
    assert.equal(valuesOut.changesOmitted, undefined);
    assert.equal(valuesOut.changes.length, 40);
    assert.ok(valuesOut.changes.every((c) => !('before' in c) && !('after' in c)));
    const cut = detailOf(600, 10, 200);
    assert.equal(cut.profileOmitted, true);
    assert.ok(cut.changesOmitted! > 0);
    assert.equal(cut.changes.length + cut.changesOmitted!, 600);
    assert.ok(Buffer.byteLength(JSON.stringify(cut)) <= MAX_DETAIL_BYTES);
  });
});

describe('summary events of one scope in one sync', () => {
  const summary = fc.record({
    outcome: fc.record({
      scope: fc.constant(context.scope),
      kind: fc.constantFrom('complete' as const, 'partial' as const, 'failed' as const),
      missing: fc.option(fc.array(fc.constantFrom('eu-west-1', 'us-east-1/payments'), { maxLength: 2 }), {
        nil: undefined,
      }),
    }),
    counts: fc.record({
      listed: fc.nat(3),
      created: fc.nat(2),
      updated: fc.nat(2),
      deleted: fc.nat(2),
      unchanged: fc.nat(2),
      failed: fc.nat(2),
      invalid: fc.nat(1),
    }),
    durationMs: fc.nat(5000),
    error: fc.option(
      fc.record({ reason: fc.constantFrom('HubError', 'Throttled'), message: fc.constantFrom('x', 'y') }),
      { nil: undefined },
    ),
  });

  it('share an id when they say the same (a summary published again), and have two when they do not (a retried scope)', () => {
    fc.assert(
      fc.property(summary, summary, fc.nat(5000), (a, b, otherDuration) => {
        const idOf = (s: typeof a) => buildScopeEvent(s, context).detail.eventId;
        const event = (s: typeof a) => buildScopeEvent(s, context).detail;
        // What the event says, less how long the scope took: the same report whatever its duration.
        const says = (s: typeof a) => {
          const { durationMs: _, eventId: __, ...rest } = event(s) as unknown as Record<string, unknown>;
          return rest;
        };
        assert.equal(idOf({ ...a, durationMs: otherDuration }), idOf(a));
        const same = JSON.stringify(says(a)) === JSON.stringify(says(b));
        assert.equal(idOf(a) === idOf(b), same, JSON.stringify([says(a), says(b)]));
      }),
      { numRuns: 300 },
    );
  });

  it('an orphan report names its profiles in its id: another report of the scope in the same sync is another event', () => {
    const a = buildOrphanEvent(['p-1', 'p-2'], context).detail.eventId;
    assert.equal(buildOrphanEvent(['p-1', 'p-2'], context).detail.eventId, a);
    assert.notEqual(buildOrphanEvent(['p-1'], context).detail.eventId, a);
  });
});
