import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { memoizeUntilFailure } from '../../../../adapters/shared/memo.ts';
import { DeadlineError, InterruptedError, withDeadline } from '../../../../core/sync/deadline.ts';

describe('deadlines', () => {
  it('ends work that never settles, even when it ignores its signal', async () => {
    let aborted = false;
    await assert.rejects(
      withDeadline('listing x', 50, (signal) => {
        signal.addEventListener('abort', () => (aborted = true));
        return new Promise(() => {});
      }),
      (e: unknown) => e instanceof DeadlineError && /listing x: no answer within 0\.1 s/.test(e.message),
    );
    // The work never settles: only the deadline can have ended it.
    assert.ok(aborted, 'the work was told to stop');
  });

  it('ends work when the run is stopped, naming the signal', async () => {
    const stop = new AbortController();
    setTimeout(() => stop.abort('SIGTERM'), 20);
    await assert.rejects(
      withDeadline('listing y', 10_000, () => new Promise(() => {}), stop.signal),
      (e: unknown) => e instanceof InterruptedError && /stopped \(SIGTERM\)/.test(e.message),
    );
  });

  it('hands back what work that finishes in time returns', async () => {
    assert.equal(await withDeadline('quick', 1000, async () => 42), 42);
  });
});

describe('values made once', () => {
  it('keeps a value, but not a failure: the next caller tries again', async () => {
    let calls = 0;
    const read = memoizeUntilFailure(async () => {
      calls += 1;
      if (calls === 1) throw new Error('secret not readable yet');
      return `key-${calls}`;
    });
    await assert.rejects(read(), /not readable yet/);
    assert.equal(await read(), 'key-2');
    assert.equal(await read(), 'key-2');
    assert.equal(calls, 2);
  });
});
