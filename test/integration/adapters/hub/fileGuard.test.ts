import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { FileGuard } from '../../../../adapters/hub/fileGuard.ts';
import { HOST } from '../../../../adapters/shared/files.ts';
import { temporaryDirectory } from '../../../support/tmp.ts';

/** A promise and what settles it. */
function signal() {
  let settle!: () => void;
  const settled = new Promise<void>((resolve) => (settle = resolve));
  return { settle, settled };
}

describe('the file guard', { timeout: 60_000 }, () => {
  it('is not held by one that read an old listing and created a number removed since', async () => {
    const directory = temporaryDirectory('cpsync-guard-');
    const atCreate = signal();
    const mayCreate = signal();
    const waiting = signal();
    // The slow one has listed the guard (nothing there) and is about to create number 1.
    let created = false;
    const slow = new FileGuard(directory, async (what) => {
      if (what === 'guard: create' && !created) {
        created = true;
        atCreate.settle();
        await mayCreate.settled;
      }
      if (what === 'guard: wait') waiting.settle();
    });
    let otherInside = false;
    let slowSawOtherInside: boolean | undefined;
    const slowInside = signal();
    const slowDone = slow.hold(async () => {
      slowSawOtherInside = otherInside;
      slowInside.settle();
    });
    await atCreate.settled;
    // Meanwhile another takes the guard and gives it up (numbers 1 and 2, and 1 is removed), and takes it again.
    const other = new FileGuard(directory);
    await other.hold(async () => {});
    const holds = signal();
    const letGo = signal();
    const otherDone = other.hold(async () => {
      otherInside = true;
      holds.settle();
      await letGo.settled;
      otherInside = false;
    });
    await holds.settled;
    assert.deepEqual(readdirSync(directory), ['3']);
    // Number 1 is free to be created again: the slow one creates it, and must see 3 above it and wait.
    mayCreate.settle();
    await Promise.race([waiting.settled, slowInside.settled]);
    letGo.settle();
    await Promise.all([slowDone, otherDone]);
    assert.equal(slowSawOtherInside, false, 'the slow one held the guard while the other did');
    assert.deepEqual(readdirSync(directory), ['6'], 'given up: only the highest number is left');
  });

  it('is taken over from a process that ended holding it, and from a holder that held it past all reason', async () => {
    const directory = temporaryDirectory('cpsync-guard-');
    mkdirSync(directory, { recursive: true });
    const gone = spawnSync(process.execPath, ['-e', '']).pid;
    writeFileSync(
      join(directory, '4'),
      JSON.stringify({ host: HOST, pid: gone, id: 'ended', at: new Date().toISOString() }),
    );
    let ran = 0;
    await new FileGuard(directory).hold(async () => void (ran += 1));
    assert.deepEqual(readdirSync(directory), ['6']);
    // Another machine's holder (its pid means nothing here), an hour ago.
    writeFileSync(
      join(directory, '7'),
      JSON.stringify({
        host: 'elsewhere',
        pid: 1,
        id: 'stuck',
        at: new Date(Date.now() - 3_600_000).toISOString(),
      }),
    );
    await new FileGuard(directory).hold(async () => void (ran += 1));
    assert.equal(ran, 2);
    assert.deepEqual(readdirSync(directory), ['9']);
  });

  it('waits for a live holder of another process, however long it holds on', async () => {
    const directory = temporaryDirectory('cpsync-guard-');
    mkdirSync(directory, { recursive: true });
    // This very process, by another guard: alive. Another machine's holder, just now: alive until it is long past.
    for (const [n, host] of [
      [10, HOST],
      [20, 'elsewhere'],
    ] as const) {
      writeFileSync(
        join(directory, String(n)),
        JSON.stringify({ host, pid: process.pid, id: 'live', at: new Date().toISOString() }),
      );
      const waited = signal();
      let ran = false;
      const done = new FileGuard(directory, async (what) => {
        if (what === 'guard: wait') waited.settle();
      }).hold(async () => void (ran = true));
      await waited.settled;
      assert.equal(ran, false, `ran beside the live holder of ${host}`);
      writeFileSync(join(directory, String(n + 1)), ''); // the holder gives it up
      await done;
      assert.equal(ran, true);
    }
  });
});
