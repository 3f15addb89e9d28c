/**
 * A run's lease whose renewals keep failing (the hub out of reach) is lost the moment it runs out, not at the next
 * renewal's tick: from then on another run may take it, so this one must have stopped. The clock is node's mock
 * timers: time moves only when the test moves it.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { LeaseStore } from '../../../../core/sync/ports.ts';
import { RunLeases } from '../../../../core/sync/runLeases.ts';

/** Lets the promises that the timers just settled run on. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('a run lease whose renewals fail', () => {
  it('is lost the moment it runs out, before the renewal tick that follows', async (t) => {
    t.mock.timers.enable({ apis: ['setInterval', 'setTimeout', 'Date'], now: 0 });
    let renewals = 0;
    let taken = false;
    const store: LeaseStore = {
      acquire: async () => {
        if (taken) {
          renewals += 1;
          throw new Error('the hub is out of reach');
        }
        // The first take is answered 500 ms after it was sent: the lease runs out 3 s after it was sent (at
        // 3,000), while the renewals tick every second from when it was answered (1,500, 2,500, 3,500).
        await new Promise((resolve) => setTimeout(resolve, 500));
        taken = true;
        return { acquired: true };
      },
      release: async () => {},
      holderOf: async () => undefined,
      sharers: async () => [],
    };
    const leases = new RunLeases(store, 'run-1', { durationMillis: 3_000, waitMillis: 0 });
    const entering = leases.enter('account-lease');
    await settle();
    t.mock.timers.tick(500);
    const hold = await entering;
    t.mock.timers.tick(2_499);
    await settle();
    assert.equal(renewals, 2, 'renewed at 1,500 and 2,500, and failed');
    assert.equal(hold.signal.aborted, false, 'still its own at 2,999');
    t.mock.timers.tick(1);
    await settle();
    assert.equal(hold.signal.aborted, true, 'lost at 3,000, when it ran out');
    assert.match(
      String(hold.signal.reason),
      /ran out at 1970-01-01T00:00:03\.000Z before it could be renewed/,
    );
    assert.equal(renewals, 2, 'lost before the tick at 3,500');
    await hold.exit();
    await leases.releaseAll();
  });
});
