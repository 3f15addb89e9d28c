import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { parseConfig } from '../../../../adapters/compose/config.ts';
import {
  lookScheduleOf,
  nextLookDelay,
  operationOf,
  type ChaseMoment,
  type LookSchedule,
} from '../../../../core/domain/lookSchedule.ts';

const DEFAULTS = lookScheduleOf(parseConfig({}, 'test').follow);
const MINUTE = 60_000;

/** The looks of one chase on `schedule`, from the operation's start until `endsAfter` (or its last look). */
function chase(schedule: LookSchedule, state: string, endsAfter: number, since = 0) {
  const delays: number[] = [];
  let now = since;
  for (;;) {
    const delay = nextLookDelay(schedule, {
      provider: 'eks',
      state,
      looks: delays.length,
      ...(delays.length ? { previousDelayMillis: delays.at(-1)! } : {}),
      sinceMillis: since,
      nowMillis: now,
    });
    if (delay === undefined) return { delays, seenAfter: undefined };
    delays.push(delay);
    now += delay;
    if (now - since >= endsAfter) return { delays, seenAfter: now - since - endsAfter };
  }
}

describe('the look schedule', () => {
  it('has EKS defaults from what EKS typically takes: 12 min to create, 10 to update, 8 to delete', () => {
    assert.deepEqual(DEFAULTS.eks.typicalMillis, {
      create: 12 * MINUTE,
      update: 10 * MINUTE,
      delete: 8 * MINUTE,
    });
    assert.deepEqual(
      [
        DEFAULTS.eks.minDelayMillis,
        DEFAULTS.eks.maxDelayMillis,
        DEFAULTS.eks.tightening,
        DEFAULTS.eks.maxLooks,
      ],
      [5000, 60_000, 0.25, 60],
    );
  });

  it('tells the operation from the state in change', () => {
    const cases: Array<[string, string]> = [
      ['EKS CREATING', 'create'],
      ['EKS PENDING', 'create'],
      ['EKS UPDATING', 'update'],
      ['EKS DELETING', 'delete'],
      ['EKS node group workers CREATING', 'update'],
      ['EKS node group workers DELETING', 'update'],
      ['GKE PROVISIONING', 'create'],
      ['AKS Deleting', 'delete'],
      ['AKS Upgrading', 'update'],
    ];
    for (const [state, operation] of cases) assert.equal(operationOf(state), operation, state);
  });

  it('keeps GKE and AKS on the backstop: the first delay, then doubling to the cap', () => {
    const delays: number[] = [];
    for (let looks = 0; looks < 5; looks++)
      delays.push(
        nextLookDelay(DEFAULTS, {
          provider: 'gke',
          state: 'GKE PROVISIONING',
          looks,
          ...(looks ? { previousDelayMillis: delays.at(-1)! } : {}),
          sinceMillis: 0,
          nowMillis: 1_000_000,
        })!,
      );
    assert.deepEqual(delays, [10_000, 20_000, 20_000, 20_000, 20_000]);
  });

  it('looks at an EKS creation seldom at first, every 5 s near its typical 12 minutes, and less often past it', () => {
    const at = (minutes: number, state = 'EKS CREATING') =>
      nextLookDelay(DEFAULTS, {
        provider: 'eks',
        state,
        looks: 1,
        sinceMillis: 0,
        nowMillis: minutes * MINUTE,
      });
    assert.deepEqual(
      [0, 5, 10, 11, 11.9, 12, 12.2, 13, 20].map((m) => at(m)! / 1000),
      [60, 60, 30, 15, 5, 5, 8, 20, 60],
    );
    assert.equal(at(7.9, 'EKS DELETING'), 5000, 'a deletion nears its typical 8 minutes');
  });

  it('places the looks from the cluster’s creation, not from when the chase began', () => {
    const moment = (since: number): ChaseMoment => ({
      provider: 'eks',
      state: 'EKS CREATING',
      looks: 0,
      sinceMillis: since,
      nowMillis: 20 * MINUTE,
    });
    assert.equal(nextLookDelay(DEFAULTS, moment(20 * MINUTE)), 60_000, 'a creation that just began');
    assert.equal(
      nextLookDelay(DEFAULTS, moment(8.5 * MINUTE)),
      8000,
      'created 11.5 minutes ago: a quarter of the 30 s left',
    );
  });

  it('sees a default EKS creation of typical length within the floor, in a bounded number of looks', () => {
    for (const minutes of [10, 11, 12, 13]) {
      const { delays, seenAfter } = chase(DEFAULTS, 'EKS CREATING', minutes * MINUTE);
      assert.ok(seenAfter !== undefined && seenAfter < 31_000, `${minutes} min: seen ${seenAfter} ms late`);
      assert.ok(delays.length <= 40, `${minutes} min: ${delays.length} looks`);
    }
    const { delays } = chase(DEFAULTS, 'EKS CREATING', 12 * MINUTE);
    assert.ok(delays.length < (12 * MINUTE) / 20_000, 'fewer looks than every 20 s would make');
  });

  it('ends the chase after its looks: an operation that never ends costs at most maxLooks looks', () => {
    const { delays, seenAfter } = chase(DEFAULTS, 'EKS UPDATING', 24 * 60 * MINUTE);
    assert.equal(seenAfter, undefined);
    assert.equal(delays.length, 60);
  });

  const knobs = fc
    .record({
      typical: fc.record({
        create: fc.integer({ min: 1, max: 7200 }),
        update: fc.integer({ min: 1, max: 7200 }),
        delete: fc.integer({ min: 1, max: 7200 }),
      }),
      min: fc.integer({ min: 1, max: 120 }),
      extra: fc.integer({ min: 0, max: 600 }),
      tightening: fc.double({ min: 0.01, max: 1, noNaN: true }),
      maxLooks: fc.integer({ min: 1, max: 200 }),
    })
    .map(({ typical, min, extra, tightening, maxLooks }) =>
      lookScheduleOf(
        parseConfig(
          {
            follow: {
              eks: {
                typicalSeconds: typical,
                minDelaySeconds: min,
                maxDelaySeconds: Math.min(900, min + extra),
                tightening,
                maxLooks,
              },
            },
          },
          'test',
        ).follow,
      ),
    );
  const state = fc.constantFrom('EKS CREATING', 'EKS UPDATING', 'EKS DELETING', 'EKS node group ng UPDATING');

  it('never waits less than the floor nor more than the cap, in whole seconds, and stops at maxLooks (property)', () => {
    fc.assert(
      fc.property(
        knobs,
        state,
        fc.integer({ min: 0, max: 400 }),
        fc.integer({ min: 0, max: 10 * 3600_000 }),
        fc.integer({ min: -3600_000, max: 10 * 3600_000 }),
        (schedule, state, looks, since, elapsed) => {
          const delay = nextLookDelay(schedule, {
            provider: 'eks',
            state,
            looks,
            sinceMillis: since,
            nowMillis: since + elapsed,
          });
          if (looks >= schedule.eks.maxLooks) return delay === undefined;
          return (
            delay !== undefined &&
            delay >= schedule.eks.minDelayMillis &&
            delay <= schedule.eks.maxDelayMillis &&
            delay % 1000 === 0
          );
        },
      ),
    );
  });

  it('waits no longer nearer the typical time than farther from it, on either side (property)', () => {
    fc.assert(
      fc.property(
        knobs,
        state,
        fc.integer({ min: 0, max: 4 * 3600_000 }),
        fc.integer({ min: 0, max: 4 * 3600_000 }),
        fc.boolean(),
        (schedule, state, a, b, before) => {
          const typical = schedule.eks.typicalMillis[operationOf(state)];
          const [near, far] = a <= b ? [a, b] : [b, a];
          const elapsed = (distance: number) =>
            before ? Math.max(0, typical - distance) : typical + distance;
          const delay = (distance: number) =>
            nextLookDelay(schedule, {
              provider: 'eks',
              state,
              looks: 0,
              sinceMillis: 0,
              nowMillis: elapsed(distance),
            })!;
          return delay(near) <= delay(far);
        },
      ),
    );
  });

  it('makes at most maxLooks looks in any chase, however long the operation (property)', () => {
    fc.assert(
      fc.property(knobs, state, fc.integer({ min: 1, max: 48 * 3600_000 }), (schedule, state, lasts) => {
        const { delays } = chase(schedule, state, lasts);
        return delays.length <= schedule.eks.maxLooks;
      }),
    );
  });

  it('refuses knobs whose floor passes the cap, naming them', () => {
    assert.throws(
      () => parseConfig({ follow: { eks: { minDelaySeconds: 90, maxDelaySeconds: 60 } } }, 'test'),
      /follow\.eks\.minDelaySeconds: minDelaySeconds must not be longer than maxDelaySeconds/,
    );
    assert.throws(
      () => parseConfig({ follow: { eks: { tightening: 0 } } }, 'test'),
      /follow\.eks\.tightening/,
    );
    assert.throws(() => parseConfig({ follow: { eks: { maxLooks: 0 } } }, 'test'), /follow\.eks\.maxLooks/);
  });
});
