/**
 * When a remembered answer stops standing for the cloud's (`stillStands`), over generated schedules: clusters asked
 * at a first sync, then at every scheduled sync whose answer no longer stands. The oracle is the schedule itself:
 * the answers' ages at each sync, the time between two asks of one cluster, and how many clusters each sync asks.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { eksClusterArn } from '../../../../adapters/eks/clusterArn.ts';
import { stillStands } from '../../../../adapters/shared/rememberedAnswers.ts';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

/** An EKS cluster's id as EKS spells it. */
const arn = (i: number) => eksClusterArn(String(100_000_000_000 + (i % 97)), 'us-east-1', `c-${i}`);

interface Schedule {
  ids: readonly string[];
  maxAgeMillis: number;
  /** When the first sync runs. */
  start: number;
  /** The schedule's period. */
  everyMillis: number;
  /** How late each sync runs after its scheduled time (a run's own length, a slow start), at most this. */
  lateMillis: number;
  /** Each sync's lateness, as a share of `lateMillis` (repeated). */
  lateness: readonly number[];
  syncs: number;
}

interface Walked {
  /** Per sync after the first: when it ran, and the clusters it asked. */
  syncs: Array<{ at: number; asked: number }>;
  /** Per cluster: when it was asked. */
  asks: Map<string, number[]>;
  /** The oldest answer any sync let stand. */
  oldestStanding: number;
}

/** Every cluster asked at the first sync; at each later one, those whose answer no longer stands. */
function walk(schedule: Schedule): Walked {
  const asked = new Map(schedule.ids.map((id) => [id, schedule.start]));
  const asks = new Map(schedule.ids.map((id) => [id, [schedule.start]]));
  const syncs: Walked['syncs'] = [];
  let oldestStanding = 0;
  for (let k = 1; k < schedule.syncs; k++) {
    const late = schedule.lateness[k % schedule.lateness.length]! * schedule.lateMillis;
    const at = schedule.start + k * schedule.everyMillis + late;
    let count = 0;
    for (const id of schedule.ids) {
      const askedAt = asked.get(id)!;
      if (stillStands(id, askedAt, schedule.maxAgeMillis, at)) {
        oldestStanding = Math.max(oldestStanding, at - askedAt);
        continue;
      }
      asked.set(id, at);
      asks.get(id)!.push(at);
      count++;
    }
    syncs.push({ at, asked: count });
  }
  return { syncs, asks, oldestStanding };
}

const schedules: fc.Arbitrary<Schedule> = fc
  .record({
    count: fc.integer({ min: 1, max: 30 }),
    salt: fc.string({ maxLength: 8 }),
    maxAgeMillis: fc.oneof(
      fc.constantFrom(HOUR, 6 * HOUR, 24 * HOUR),
      fc.integer({ min: 4 * MINUTE, max: 48 * HOUR }),
    ),
    start: fc.integer({ min: Date.UTC(2020, 0, 1), max: Date.UTC(2040, 0, 1) }),
    everyShare: fc.double({ min: 0.02, max: 0.25, noNaN: true }),
    lateShare: fc.double({ min: 0, max: 0.25, noNaN: true }),
    lateness: fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { minLength: 1, maxLength: 7 }),
    periods: fc.integer({ min: 3, max: 5 }),
  })
  .map(({ count, salt, maxAgeMillis, start, everyShare, lateShare, lateness, periods }) => {
    const everyMillis = Math.max(1, Math.floor(maxAgeMillis * everyShare));
    return {
      ids: Array.from({ length: count }, (_, i) => `${arn(i)}${salt}`),
      maxAgeMillis,
      start,
      everyMillis,
      lateMillis: Math.floor(everyMillis * lateShare),
      lateness,
      syncs: Math.ceil((periods * maxAgeMillis) / everyMillis),
    };
  });

describe('when a remembered answer is asked again', () => {
  it('never stands at its maximum age or older, and always stands for the first quarter of it', () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1 }),
        fc.integer({ min: 1, max: 7 * 24 * HOUR }),
        fc.integer({ min: 0, max: 4_000_000_000_000 }),
        fc.double({ min: 0, max: 3, noNaN: true }),
        (id, maxAgeMillis, askedAt, share) => {
          const age = Math.floor(maxAgeMillis * share);
          const stands = stillStands(id, askedAt, maxAgeMillis, askedAt + age);
          if (age >= maxAgeMillis) assert.equal(stands, false, `${age} ms old of ${maxAgeMillis}`);
          if (age < maxAgeMillis / 4) assert.equal(stands, true, `${age} ms old of ${maxAgeMillis}`);
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('never stands with no maximum age, nor when asked further in the future than a clock may be wrong', () => {
    fc.assert(
      fc.property(fc.string(), fc.integer({ min: 0, max: 4_000_000_000_000 }), (id, now) => {
        assert.equal(stillStands(id, now, 0, now), false, 'no maximum age');
        assert.equal(stillStands(id, now + 6 * MINUTE, HOUR, now), false, 'asked 6 minutes ahead');
        assert.equal(stillStands(id, now + 4 * MINUTE, HOUR, now), true, 'asked 4 minutes ahead');
      }),
      { numRuns: 500 },
    );
  });

  it('at any schedule, asks each cluster once a period once the first has passed, never letting an answer reach its maximum age', () => {
    fc.assert(
      fc.property(schedules, (schedule) => {
        const walked = walk(schedule);
        const { maxAgeMillis, everyMillis, lateMillis } = schedule;
        assert.ok(walked.oldestStanding < maxAgeMillis, `an answer ${walked.oldestStanding} ms old stood`);
        for (const [id, times] of walked.asks) {
          const gaps = times.slice(1).map((t, i) => t - times[i]!);
          // The first re-ask may come early (at a quarter of the age): the cluster's time fell soon after the first
          // sync. The next comes at its time a period on, so at three quarters of the age at least; from then on,
          // once a period, give or take a sync's spacing and lateness.
          const slack = everyMillis + lateMillis;
          assert.ok(gaps[0]! >= maxAgeMillis / 4, `${id}: asked again after ${gaps[0]} ms`);
          if (gaps.length > 1)
            assert.ok(gaps[1]! > (3 * maxAgeMillis) / 4 - slack, `${id}: asked again after ${gaps[1]} ms`);
          for (const gap of gaps.slice(1))
            assert.ok(gap <= maxAgeMillis + slack, `${id}: asked again after ${gap} ms`);
          for (const gap of gaps.slice(2))
            assert.ok(gap > maxAgeMillis - slack, `${id}: asked again after ${gap} ms, not once a period`);
          const end = walked.syncs.at(-1)!.at;
          const periods = Math.floor((end - schedule.start) / maxAgeMillis);
          assert.ok(
            times.length - 1 >= periods - 1,
            `${id}: asked ${times.length - 1} times in ${periods} periods`,
          );
        }
      }),
      { numRuns: 150 },
    );
  });

  it('spreads the answers one sync gathered over the period: a share of the clusters at each sync, not all in one', () => {
    fc.assert(
      fc.property(
        fc.string({ maxLength: 8 }),
        fc.integer({ min: Date.UTC(2020, 0, 1), max: Date.UTC(2040, 0, 1) }),
        fc.constantFrom(HOUR, 6 * HOUR),
        fc.constantFrom(15, 30),
        (salt, start, maxAgeMillis, everyMinutes) => {
          const clusters = 400;
          const everyMillis = Math.min(everyMinutes * MINUTE, maxAgeMillis / 4);
          const walked = walk({
            ids: Array.from({ length: clusters }, (_, i) => `${arn(i)}${salt}`),
            maxAgeMillis,
            start,
            everyMillis,
            lateMillis: 0,
            lateness: [0],
            syncs: Math.ceil((3 * maxAgeMillis) / everyMillis),
          });
          // A sync asks the clusters whose time fell since the last one: its share of the period, on average.
          // The first to come at a quarter of the age asks those whose time fell before it, too.
          const share = everyMillis / maxAgeMillis;
          const spread = 6 * Math.sqrt(clusters * 0.25);
          for (const { at, asked } of walked.syncs) {
            const since = at - start;
            const bound = since <= maxAgeMillis / 4 + everyMillis ? 0.25 + share : share;
            assert.ok(
              asked <= clusters * bound + spread,
              `${asked} of ${clusters} asked ${since / MINUTE} minutes after the first sync`,
            );
          }
          const asked = walked.syncs.reduce((sum, s) => sum + s.asked, 0);
          assert.ok(asked >= 2 * clusters, `${asked} asks of ${clusters} clusters in three periods`);
        },
      ),
      { numRuns: 20 },
    );
  });

  it('at the defaults (an hour, a sync every 15 minutes), each sync after the first asks about a quarter of the EKS clusters', () => {
    const clusters = Array.from({ length: 4000 }, (_, i) => arn(i));
    const start = Date.UTC(2026, 10, 29, 21, 0, 7);
    const walked = walk({
      ids: clusters,
      maxAgeMillis: HOUR,
      start,
      everyMillis: 15 * MINUTE,
      lateMillis: 0,
      lateness: [0],
      syncs: 13,
    });
    const shares = walked.syncs.map((s) => s.asked / clusters.length);
    for (const [i, share] of shares.entries())
      assert.ok(share > 0.2 && share < 0.3, `sync ${i + 1} asked ${(share * 100).toFixed(1)} %`);
    for (const times of walked.asks.values()) assert.ok(times.length >= 3 && times.length <= 4);
  });
});
