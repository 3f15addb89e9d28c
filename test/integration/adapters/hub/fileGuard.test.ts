import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, readdirSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { FileGuard, FileGuardBusyError } from '../../../../adapters/hub/fileGuard.ts';
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
    const slow = new FileGuard(directory, {
      step: async (what) => {
        if (what === 'guard: create' && !created) {
          created = true;
          atCreate.settle();
          await mayCreate.settled;
        }
        if (what === 'guard: wait') waiting.settle();
      },
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

  it("is taken over from a process that ended holding it, and from another machine's holder long past", async () => {
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
    // Another machine's holder (its pid means nothing here), whose record was written an hour ago by the disk's clock.
    const hourAgo = new Date(Date.now() - 3_600_000);
    writeFileSync(
      join(directory, '7'),
      JSON.stringify({ host: 'elsewhere', pid: 1, id: 'stuck', at: new Date().toISOString() }),
    );
    utimesSync(join(directory, '7'), hourAgo, hourAgo);
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
      const done = new FileGuard(directory, {
        step: async (what) => {
          if (what === 'guard: wait') waited.settle();
        },
      }).hold(async () => void (ran = true));
      await waited.settled;
      assert.equal(ran, false, `ran beside the live holder of ${host}`);
      writeFileSync(join(directory, String(n + 1)), ''); // the holder gives it up
      await done;
      assert.equal(ran, true);
    }
  });

  it('is not taken over from a live holder of this machine however long it holds on, and a waiter that gives up names it', async () => {
    const directory = temporaryDirectory('cpsync-guard-');
    mkdirSync(directory, { recursive: true });
    // Another live process of this machine (this test's parent, the runner), and its record an hour old.
    const hourAgo = new Date(Date.now() - 3_600_000);
    writeFileSync(
      join(directory, '30'),
      JSON.stringify({ host: HOST, pid: process.ppid, id: 'live', at: hourAgo.toISOString() }),
    );
    utimesSync(join(directory, '30'), hourAgo, hourAgo);
    let ran = false;
    await assert.rejects(
      new FileGuard(directory, { waitMillis: 0 }).hold(async () => void (ran = true)),
      {
        name: FileGuardBusyError.name,
        message: new RegExp(`held by process ${process.ppid} on .* since ${hourAgo.toISOString()}`),
      },
    );
    assert.equal(ran, false);
    assert.deepEqual(readdirSync(directory), ['30'], 'left as it was');
  });

  it("gives the guard up after work that failed, and one that could not be given up does not hide the work's answer", async () => {
    const directory = temporaryDirectory('cpsync-guard-');
    await assert.rejects(
      new FileGuard(directory).hold(async () => {
        throw new Error('the work failed');
      }),
      /the work failed/,
    );
    const next = () => new FileGuard(directory, { waitMillis: 0 }).hold(async () => 'next');
    assert.equal(await next(), 'next', 'free after the failed work');
    // Giving up fails (a full disk): the work's answer still comes back, and the next taker here takes it over.
    const failing = new FileGuard(directory, {
      step: async (what) => {
        if (what === 'guard: give up') throw new Error('ENOSPC: no space left on device');
      },
    });
    assert.equal(await failing.hold(async () => 'done'), 'done');
    assert.equal(
      JSON.parse(readFileSync(join(directory, readdirSync(directory)[0]!), 'utf8')).pid,
      process.pid,
    );
    assert.equal(await next(), 'next');
  });

  it('is not held up by files it does not write: numbers spelled otherwise, and garbage as the highest', async () => {
    const directory = temporaryDirectory('cpsync-guard-');
    mkdirSync(directory, { recursive: true });
    const strangers = ['0099', '007', '1e3', '9007199254740993', '12.json'];
    for (const name of strangers) writeFileSync(join(directory, name), '');
    writeFileSync(join(directory, '41'), '\u0000{not a record');
    let ran = false;
    await new FileGuard(directory, { waitMillis: 0 }).hold(async () => void (ran = true));
    assert.equal(ran, true);
    assert.deepEqual(
      readdirSync(directory).sort(),
      [...strangers, '43'].sort(),
      'only its own numbers touched',
    );
  });
});
