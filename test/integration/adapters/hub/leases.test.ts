import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { once } from 'node:events';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { before, describe, it } from 'node:test';
import fc from 'fast-check';
import { CoordinationV1Api, KubeConfig } from '@kubernetes/client-node';
import { FileLeaseStore } from '../../../../adapters/hub/FileLeases.ts';
import { HOST } from '../../../../adapters/shared/files.ts';
import { KubernetesHub } from '../../../../adapters/hub/KubernetesHub.ts';
import { KubernetesLeaseStore } from '../../../../adapters/hub/KubernetesLeases.ts';
import type { LeaseStore } from '../../../../core/sync/ports.ts';
import { LeaseBusyError, RunLeases } from '../../../../core/sync/runLeases.ts';
import { adminKubeConfig, localHub, uniqueNamespace } from '../../../support/hub.ts';
import type { HubState } from '../../../env/hub.ts';
import { startHubProxy, type HubProxy } from '../../../env/hubProxy.ts';
import { startTcpRelay } from '../../../env/net.ts';
import { temporaryDirectory } from '../../../support/tmp.ts';
import { until } from '../../../support/until.ts';

const MODULES = {
  file: fileURLToPath(new URL('../../../../adapters/hub/FileLeases.ts', import.meta.url)),
  kubernetes: fileURLToPath(new URL('../../../../adapters/hub/KubernetesLeases.ts', import.meta.url)),
};

/** Takes a lease in another process, which is then killed outright (a run killed with SIGKILL). */
async function takenByAKilledProcess(code: string): Promise<void> {
  const child = spawn(
    process.execPath,
    ['--input-type=module', '-e', `${code}\nconsole.log('held'); setInterval(() => {}, 1000);`],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => chunk.toString().includes('held') && resolve());
    child.on('exit', (status) => reject(new Error(`the holder exited (${status}) before taking the lease`)));
  });
  child.kill('SIGKILL');
  await new Promise((resolve) => child.on('close', resolve));
}

let accounts = 0;

function contract(
  name: string,
  make: () => Promise<{ store: (clock?: () => number) => LeaseStore; killedHolder: string }>,
  propertyRuns: number,
) {
  describe(`${name} leases`, () => {
    let setup: Awaited<ReturnType<typeof make>>;
    before(async () => (setup = await make()));

    it('gives a lease to one of two runs racing for it, and to the other once it is given up', async () => {
      const [a, b] = [setup.store(), setup.store()];
      const answers = await Promise.all([
        a.acquire('race', 'run-a', 30_000),
        b.acquire('race', 'run-b', 30_000),
      ]);
      assert.equal(answers.filter((x) => x.acquired).length, 1, JSON.stringify(answers));
      const [winner, loser] = answers[0]!.acquired ? (['run-a', b] as const) : (['run-b', a] as const);
      const refused = answers.find((x) => !x.acquired)!;
      assert.ok(!refused.acquired && refused.heldBy.holder === winner);
      assert.equal((await a.holderOf('race'))?.holder, winner);
      await (winner === 'run-a' ? a : b).release('race', winner);
      assert.equal(await a.holderOf('race'), undefined);
      assert.deepEqual(await loser.acquire('race', 'run-c', 30_000), { acquired: true });
      await loser.release('race', 'run-c');
    });

    it('renews a lease for its holder, and frees it once it runs out', async () => {
      const store = setup.store();
      assert.deepEqual(await store.acquire('short', 'holder-1', 1000), { acquired: true });
      assert.deepEqual(await store.acquire('short', 'holder-1', 1000), { acquired: true });
      assert.equal((await store.acquire('short', 'holder-2', 1000)).acquired, false);
      const later = setup.store(() => Date.now() + 2100); // past the lease's second
      assert.equal(await later.holderOf('short'), undefined);
      assert.deepEqual(await later.acquire('short', 'holder-2', 30_000), { acquired: true });
      await store.release('short', 'holder-1');
      assert.equal((await store.holderOf('short'))?.holder, 'holder-2', 'a former holder cannot give it up');
      await store.release('short', 'holder-2');
    });

    it('frees at once a lease whose process on this machine was killed', async () => {
      assert.equal((await setup.store().holderOf('killed'))?.holder, undefined);
      await takenByAKilledProcess(setup.killedHolder);
      assert.equal(await setup.store().holderOf('killed'), undefined);
      assert.deepEqual(await setup.store().acquire('killed', 'next-run', 30_000), { acquired: true });
    });

    it('forgets the shares that ran out when the shares of a lease are listed, and only those', async () => {
      const account = `forget-${++accounts}`;
      const now = setup.store();
      const later = setup.store(() => Date.now() + 60_000); // a minute on: a 30 s share has run out
      assert.deepEqual(await now.acquire(`${account}-gone`, 'event-gone', 30_000, account), {
        acquired: true,
      });
      assert.deepEqual(await later.acquire(`${account}-held`, 'event-held', 300_000, account), {
        acquired: true,
      });
      assert.deepEqual(
        (await later.sharers(account)).map((h) => h.holder),
        ['event-held'],
      );
      // Gone from the hub: by the first store's clock the share would still be held, were it there.
      assert.equal(await now.holderOf(`${account}-gone`), undefined);
      assert.equal((await now.holderOf(`${account}-held`))?.holder, 'event-held');
      assert.deepEqual(
        (await now.sharers(account)).map((h) => h.holder),
        ['event-held'],
      );
      await later.release(`${account}-held`, 'event-held');
    });

    it('lets a run hold an account for many scopes at once, and makes another run wait for it', async () => {
      const store = setup.store();
      const first = new RunLeases(store, 'first', { durationMillis: 30_000, waitMillis: 0 });
      const [a, b] = await Promise.all([first.enter('account'), first.enter('account')]);
      const second = new RunLeases(store, 'second', {
        durationMillis: 30_000,
        waitMillis: 300,
        pollMillis: 50,
      });
      await assert.rejects(second.enter('account'), LeaseBusyError);
      await a.exit();
      assert.equal((await store.holderOf('account'))?.holder, 'first', 'held while one scope still runs');
      const waiting = second.enter('account');
      await b.exit();
      await waiting;
      assert.equal((await store.holderOf('account'))?.holder, 'second');
      await second.releaseAll();
      assert.equal(await store.holderOf('account'), undefined);
    });

    it('lets one-cluster syncs of an account hold shares side by side, one per cluster, and keeps a whole run of it apart from them', async () => {
      const store = setup.store();
      const account = `shared-${++accounts}`;
      const once = { durationMillis: 30_000, waitMillis: 0 };
      const [a, b] = [new RunLeases(store, 'event-a', once), new RunLeases(store, 'event-b', once)];
      const [holdA, holdB] = await Promise.all([
        a.enterShared(account, 'us-east-1/alpha'),
        b.enterShared(account, 'us-east-1/beta'),
      ]);
      const sharers = async () => (await store.sharers(account)).map((h) => h.holder).sort();
      assert.deepEqual(await sharers(), ['event-a', 'event-b']);
      assert.notEqual(holdA.lease, holdB.lease, 'each cluster its own share');
      // A second sync of the same cluster takes its turn.
      await assert.rejects(new RunLeases(store, 'event-a2', once).enterShared(account, 'us-east-1/alpha'), {
        name: 'LeaseBusyError',
        message: /another run \(event-a\)/,
      });
      // A whole run takes the lease and waits for the shares; a share asked for meanwhile stands back.
      const whole = new RunLeases(store, 'whole', {
        durationMillis: 30_000,
        waitMillis: 120_000,
        pollMillis: 20,
      });
      const waiting = whole.enter(account);
      await until(
        async () => (await store.holderOf(account))?.holder === 'whole',
        'the whole run holding the lease',
      );
      const late = new RunLeases(store, 'event-c', once);
      await assert.rejects(late.enterShared(account, 'us-east-1/gamma'), {
        message: /another run \(whole\)/,
      });
      assert.deepEqual(await sharers(), ['event-a', 'event-b'], 'the late share was given up');
      await holdA.exit();
      await holdB.exit();
      const held = await waiting;
      assert.equal(held.lease, account);
      assert.deepEqual(await sharers(), []);
      await assert.rejects(late.enterShared(account, 'us-east-1/gamma'), LeaseBusyError);
      await whole.releaseAll();
      const next = await late.enterShared(account, 'us-east-1/gamma');
      assert.deepEqual(await sharers(), ['event-c']);
      await next.exit();
      assert.equal(await store.holderOf(account), undefined);
      assert.deepEqual(await sharers(), []);
    });

    it('loses a share whose renewal is answered only after it ran out, and gives up the share that renewal made again', async () => {
      const inner = setup.store();
      const account = `late-${++accounts}`;
      /** Renewals wait here, once the share is held, until the test lets them go on. */
      let open = () => {};
      const gate = new Promise<void>((resolve) => (open = resolve));
      let [gating, opened] = [false, false];
      let [renewals, answered, releasedAfter] = [0, 0, 0];
      const store: LeaseStore = {
        holderOf: (name) => inner.holderOf(name),
        sharers: (name) => inner.sharers(name),
        acquire: async (...args) => {
          if (!gating) return inner.acquire(...args);
          renewals += 1;
          await gate;
          const answer = await inner.acquire(...args);
          answered += 1;
          return answer;
        },
        release: async (...args) => {
          await inner.release(...args);
          if (opened) releasedAfter += 1;
        },
      };
      const leases = new RunLeases(store, 'event-late', { durationMillis: 600, waitMillis: 0 });
      const hold = await leases.enterShared(account, 'europe-west1/orders');
      gating = true;
      // Its renewal is on its way while the share runs out, and a whole run removes the share as run out.
      await until(async () => renewals > 0, 'a renewal sent');
      await until(async () => (await inner.sharers(account)).length === 0, 'the share ran out');
      await inner.release(hold.lease, 'event-late');
      assert.equal(await inner.holderOf(hold.lease), undefined);
      const sent = renewals;
      opened = true;
      open();
      // The renewals then answered made the share again: each such answer loses it, and gives it up.
      await until(async () => answered === sent, 'the renewals answered');
      await until(async () => releasedAfter >= 1, 'the share made again given up');
      assert.equal(await inner.holderOf(hold.lease), undefined);
      assert.deepEqual(await inner.sharers(account), []);
      assert.ok(hold.signal.aborted, 'the share lost');
      assert.match(String(hold.signal.reason), /ran out .* before it could be renewed/);
      await hold.exit();
      await leases.releaseAll();
    });

    it('never lets a whole run hold an account beside a share of it, nor two syncs of one cluster at once, in any order (property)', async () => {
      const store = setup.store();
      const actor = fc.record({
        whole: fc.boolean(),
        cluster: fc.constantFrom('alpha', 'beta', 'gamma'),
        /** Store reads before it asks, and while it holds: how its requests interleave with the others'. */
        before: fc.nat({ max: 3 }),
        holding: fc.nat({ max: 3 }),
      });
      await fc.assert(
        fc.asyncProperty(fc.array(actor, { minLength: 2, maxLength: 6 }), async (actors) => {
          const account = `prop-${++accounts}`;
          const inside = new Map<number, (typeof actors)[number]>();
          const overlaps: string[] = [];
          await Promise.all(
            actors.map(async (me, i) => {
              for (let k = 0; k < me.before; k++) await store.holderOf(account);
              const leases = new RunLeases(store, `actor-${i}`, {
                durationMillis: 30_000,
                waitMillis: 120_000,
                pollMillis: 10,
              });
              const hold = me.whole
                ? await leases.enter(account)
                : await leases.enterShared(account, me.cluster);
              for (const [j, other] of inside)
                if (me.whole || other.whole || me.cluster === other.cluster)
                  overlaps.push(`${JSON.stringify(me)} (${i}) beside ${JSON.stringify(other)} (${j})`);
              inside.set(i, me);
              for (let k = 0; k < me.holding; k++) await store.sharers(account);
              inside.delete(i);
              await hold.exit();
            }),
          );
          assert.deepEqual(overlaps, []);
          assert.equal(await store.holderOf(account), undefined, 'the account is free after');
          assert.deepEqual(await store.sharers(account), [], 'no share is left held');
        }),
        { numRuns: propertyRuns },
      );
    });

    it('keeps a lease that a scope takes while another of the same run is giving it up', async () => {
      const store = setup.store();
      const run = new RunLeases(store, 'run', { durationMillis: 30_000, waitMillis: 1000, pollMillis: 20 });
      for (let i = 0; i < 20; i++) {
        const done = await run.enter('handover');
        // The last scope lets go while the next one takes hold.
        const [, next] = await Promise.all([done.exit(), run.enter('handover')]);
        assert.equal((await store.holderOf('handover'))?.holder, 'run', `round ${i}: the lease is held`);
        await next.exit();
      }
      assert.equal(await store.holderOf('handover'), undefined);
    });
  });
}

contract(
  'file hub',
  async () => {
    const directory = temporaryDirectory('cpsync-leases-');
    return {
      store: (clock) => new FileLeaseStore(directory, clock),
      killedHolder: `import { FileLeaseStore } from ${JSON.stringify(MODULES.file)};
      const answer = await new FileLeaseStore(${JSON.stringify(directory)}).acquire('killed', 'killed-run', 60_000);
      if (!answer.acquired) process.exit(3);`,
    };
  },
  60,
);

contract(
  'Kubernetes hub (coordination.k8s.io Lease)',
  async () => {
    const state = await localHub();
    const namespace = uniqueNamespace('leases');
    await new KubernetesHub({ kubeConfig: adminKubeConfig(state) }).ensureNamespace({ name: namespace });
    return {
      store: (clock) =>
        new KubernetesLeaseStore({
          kubeConfig: adminKubeConfig(state),
          namespace,
          ...(clock ? { clock } : {}),
        }),
      killedHolder: `import { KubeConfig } from '@kubernetes/client-node';
      import { KubernetesLeaseStore } from ${JSON.stringify(MODULES.kubernetes)};
      const kubeConfig = new KubeConfig(); kubeConfig.loadFromFile(${JSON.stringify(state.kubeconfig)});
      const answer = await new KubernetesLeaseStore({ kubeConfig, namespace: ${JSON.stringify(namespace)} }).acquire('killed', 'killed-run', 60_000);
      if (!answer.acquired) process.exit(3);`,
    };
  },
  15,
);

describe('file hub leases on disk', () => {
  it('are held by one process at a time, among processes taking, renewing and giving up one lease over and over', async () => {
    const directory = temporaryDirectory('cpsync-leases-');
    const marker = join(directory, 'inside');
    const turns = 20;
    // Each process, while it holds the lease, holds a marker file made exclusively: a second holder cannot make it.
    const code = `import { closeSync, openSync, unlinkSync } from 'node:fs';
      import { FileLeaseStore } from ${JSON.stringify(MODULES.file)};
      const store = new FileLeaseStore(${JSON.stringify(directory)});
      const me = 'process-' + process.pid;
      let held = 0, overlaps = 0, busy = 0;
      while (held < ${turns}) {
        if (!(await store.acquire('contended', me, 60_000)).acquired) { busy += 1; continue; }
        held += 1;
        let mine = false;
        try { closeSync(openSync(${JSON.stringify(marker)}, 'wx')); mine = true; } catch { overlaps += 1; }
        if (!(await store.acquire('contended', me, 60_000)).acquired) overlaps += 1; // renewed while held
        if (mine) unlinkSync(${JSON.stringify(marker)});
        await store.release('contended', me);
      }
      console.log(JSON.stringify({ held, overlaps, busy }));`;
    const run = () =>
      new Promise<{ held: number; overlaps: number; busy: number }>((resolve, reject) => {
        const child = spawn(process.execPath, ['--input-type=module', '-e', code], {
          stdio: ['ignore', 'pipe', 'inherit'],
        });
        let out = '';
        child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
        child.on('close', (status) =>
          status === 0 ? resolve(JSON.parse(out)) : reject(new Error(`a contender exited with ${status}`)),
        );
      });
    const results = await Promise.all([run(), run(), run(), run()]);
    assert.deepEqual(
      results.map(({ held, overlaps }) => ({ held, overlaps })),
      Array.from({ length: 4 }, () => ({ held: turns, overlaps: 0 })),
    );
    assert.ok(
      results.some(({ busy }) => busy > 0),
      'the processes did contend: some were answered busy',
    );
    assert.deepEqual(readdirSync(join(directory, '.leases')), ['.guard'], 'every lock given up');
    assert.equal(readdirSync(join(directory, '.leases', '.guard')).length, 1, 'the guard: one file');
  });

  it("take a lock file that is not a lock for nobody's: not JSON, not an object, no holder, or an end that is no date", async () => {
    const directory = temporaryDirectory('cpsync-leases-');
    mkdirSync(join(directory, '.leases'));
    const future = new Date(Date.now() + 600_000).toISOString();
    const notLocks = {
      garbage: '\u0000{not json',
      empty: '',
      null: 'null',
      list: JSON.stringify([{ holder: 'x', until: future }]),
      'no-holder': JSON.stringify({ until: future, host: 'elsewhere', pid: 1 }),
      'no-date': JSON.stringify({ holder: 'x', until: 'for ever', host: 'elsewhere', pid: 1 }),
      'no-until': JSON.stringify({ holder: 'x', host: 'elsewhere', pid: 1 }),
    };
    for (const [name, text] of Object.entries(notLocks))
      writeFileSync(join(directory, '.leases', `${name}.json`), text);
    const store = new FileLeaseStore(directory);
    for (const name of Object.keys(notLocks)) {
      assert.equal(await store.holderOf(name), undefined, name);
      assert.deepEqual(await store.acquire(name, 'run', 30_000), { acquired: true }, name);
      await store.release(name, 'run');
    }
    assert.deepEqual(readdirSync(join(directory, '.leases')), ['.guard']);
  });

  it('take a lock of another machine (or process-id namespace) for live until it runs out, whatever its pid', async () => {
    const directory = temporaryDirectory('cpsync-leases-');
    mkdirSync(join(directory, '.leases'));
    const until = new Date(Date.now() + 60_000).toISOString();
    // Process ids of another namespace mean nothing here: 999999 is no process of ours, yet it may be theirs.
    writeFileSync(
      join(directory, '.leases', 'shared.json'),
      JSON.stringify({ holder: 'pod-b', until, host: 'node-1/pid:[4026532999]', pid: 999999 }),
    );
    const store = new FileLeaseStore(directory);
    assert.equal((await store.holderOf('shared'))?.holder, 'pod-b');
    assert.equal((await store.acquire('shared', 'pod-a', 30_000)).acquired, false);
  });

  it("take a lock of a machine of this name and process-id namespace but another boot (another Lambda sandbox's microVM) for live until it runs out, whatever its pid", async () => {
    const directory = temporaryDirectory('cpsync-leases-');
    mkdirSync(join(directory, '.leases'));
    const until = new Date(Date.now() + 60_000).toISOString();
    const [name, boot, namespace] = HOST.split('/');
    assert.ok(boot && namespace, `this machine's boot and process-id namespace are recorded (${HOST})`);
    // Its kernel booted apart: its first process-id namespace has the same id as ours, its processes are not ours.
    const otherBoot = `${boot.slice(0, -4)}${boot.endsWith('0000') ? 'ffff' : '0000'}`;
    writeFileSync(
      join(directory, '.leases', 'shared.json'),
      JSON.stringify({ holder: 'sandbox-b', until, host: `${name}/${otherBoot}/${namespace}`, pid: 999999 }),
    );
    const store = new FileLeaseStore(directory);
    assert.equal((await store.holderOf('shared'))?.holder, 'sandbox-b');
    assert.equal((await store.acquire('shared', 'sandbox-a', 30_000)).acquired, false);
    // The same lock of this very boot, its process ended, is taken at once.
    writeFileSync(
      join(directory, '.leases', 'shared.json'),
      JSON.stringify({ holder: 'sandbox-b', until, host: HOST, pid: 999999 }),
    );
    assert.equal((await store.acquire('shared', 'sandbox-a', 30_000)).acquired, true);
  });

  it('stop a run from applying an account whose lease it lost, and let it hold nothing of it after', async () => {
    const directory = temporaryDirectory('cpsync-leases-');
    const store = new FileLeaseStore(directory);
    const run = new RunLeases(store, 'slow', { durationMillis: 300, waitMillis: 0 });
    const hold = await run.enter('account');
    // The run stalled past its lease; another run took the account.
    writeFileSync(
      join(directory, '.leases', 'account.json'),
      JSON.stringify({
        holder: 'fast',
        until: new Date(Date.now() + 60_000).toISOString(),
        host: 'elsewhere',
        pid: 1,
      }),
    );
    // Its next renewal (a third of the lease, 0.1 s) finds the account taken: waited for, however late it runs.
    if (!hold.signal.aborted) await once(hold.signal, 'abort');
    assert.ok(hold.signal.aborted, 'told to stop applying');
    assert.match(String(hold.signal.reason), /another run \(fast\) is applying this account/);
    await hold.exit();
    assert.equal(
      (await store.holderOf('account'))?.holder,
      'fast',
      'not renewed, not given up: not ours any more',
    );
  });

  it('leave no stray files: a lease is one file, gone once given up, beside the one file of their guard', async () => {
    const directory = temporaryDirectory('cpsync-leases-');
    const store = new FileLeaseStore(directory);
    for (let i = 0; i < 3; i++) await store.acquire(`lease-${i}`, 'h', 10_000);
    assert.deepEqual(readdirSync(join(directory, '.leases')).sort(), [
      '.guard',
      'lease-0.json',
      'lease-1.json',
      'lease-2.json',
    ]);
    for (let i = 0; i < 3; i++) await store.release(`lease-${i}`, 'h');
    assert.deepEqual(readdirSync(join(directory, '.leases')), ['.guard']);
    assert.deepEqual(
      readdirSync(join(directory, '.leases', '.guard')),
      ['12'],
      'the guard: one file, taken 6 times',
    );
  });
});

describe('Kubernetes hub connections, as counted in front of the kube-apiserver', () => {
  it("keeps one connection for all of a lease store's requests, as the hub does for its own", async () => {
    const state = await localHub();
    // A TCP relay to the kube-apiserver: TLS (and HTTP/2) pass through untouched; it counts connections.
    const upstream = new URL(state.server);
    const relay = await startTcpRelay(upstream.hostname, Number(upstream.port));
    try {
      const kubeConfig = adminKubeConfig(state);
      kubeConfig.clusters[0] = { ...kubeConfig.clusters[0]!, server: `https://127.0.0.1:${relay.port}` };
      const namespace = uniqueNamespace('connections');
      const hub = new KubernetesHub({ kubeConfig });
      await hub.ensureNamespace({ name: namespace });
      for (let i = 0; i < 10; i++) assert.equal(await hub.get({ namespace, name: `absent-${i}` }), undefined);
      assert.equal(relay.connections(), 1, 'the hub: one connection for 12 requests');
      const store = new KubernetesLeaseStore({ kubeConfig, namespace });
      for (let i = 0; i < 5; i++) {
        assert.deepEqual(await store.acquire(`account-${i}`, 'run', 60_000), { acquired: true });
        await store.release(`account-${i}`, 'run');
      }
      assert.equal(
        relay.connections(),
        2,
        'the lease store: one more connection for 20 requests, not one each',
      );
    } finally {
      await relay.stop();
    }
  });
});

/** A Kubernetes lease store of a fresh namespace, reaching the hub through a proxy that can answer in its place. */
async function throughProxy(
  prefix: string,
  body: (setup: {
    store: KubernetesLeaseStore;
    proxy: HubProxy;
    state: HubState;
    namespace: string;
  }) => Promise<void>,
) {
  const state = await localHub();
  const proxy = await startHubProxy(state);
  try {
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromString(proxy.kubeconfig);
    const namespace = uniqueNamespace(prefix);
    await new KubernetesHub({ kubeConfig: adminKubeConfig(state) }).ensureNamespace({ name: namespace });
    await body({ store: new KubernetesLeaseStore({ kubeConfig, namespace }), proxy, state, namespace });
  } finally {
    proxy.rule = undefined;
    await proxy.stop();
  }
}

describe('Kubernetes hub leases, taken while this same process lists them', () => {
  it('never removes a share it is taking again as one given up, while its write is on its way back', () =>
    throughProxy('retaken', async ({ store, proxy, state, namespace }) => {
      // A one-cluster sync held its share and gave it up: this process counts that holder as gone.
      assert.deepEqual(await store.acquire('share-alpha', 'sync-1', 30_000, 'account'), { acquired: true });
      await store.release('share-alpha', 'sync-1');
      // Its next sync takes the share again; the hub makes the lease, and its answer is held on the way back.
      let answer!: () => void;
      const held = new Promise<void>((resolve) => (answer = resolve));
      proxy.rule = ({ method, path }) =>
        method === 'POST' && path.includes('/leases') ? { holdAnswer: true, until: held } : undefined;
      const taking = store.acquire('share-alpha', 'sync-1', 30_000, 'account');
      // The Lease as the hub keeps it (read as its admin, not through the store: no view of this process's).
      const leases = adminKubeConfig(state).makeApiClient(CoordinationV1Api);
      const holder = () =>
        leases.readNamespacedLease({ name: 'share-alpha', namespace }).then(
          (lease) => lease.spec?.holderIdentity,
          () => undefined,
        );
      await until(async () => (await holder()) === 'sync-1', 'the hub holds the share');
      // A whole run of the account, in this process, lists its shares meanwhile: the share is held, not given up.
      assert.deepEqual(
        (await store.sharers('account')).map((s) => s.holder),
        ['sync-1'],
      );
      assert.equal(await holder(), 'sync-1', 'the Lease is still there');
      answer();
      assert.deepEqual(await taking, { acquired: true });
      proxy.rule = undefined;
      assert.deepEqual(
        (await store.sharers('account')).map((s) => s.holder),
        ['sync-1'],
        'still held after',
      );
      await store.release('share-alpha', 'sync-1');
      assert.deepEqual(await store.sharers('account'), []);
    }));
});

describe('Kubernetes hub leases, when other writers win every race for one', () => {
  it('answers busy, not an error, and a sync waiting for its share takes it once the races end', () =>
    throughProxy('contended', async ({ store, proxy }) => {
      // Every write of a Lease is answered as the hub answers a writer that lost a race: 409, someone was first.
      const raced = ({ method, path }: { method: string; path: string }) =>
        (method === 'POST' || method === 'PUT') && path.includes('/leases');
      proxy.rule = (request) => (raced(request) ? { status: 409 } : undefined);
      assert.deepEqual(await store.acquire('share-alpha', 'sync-1', 30_000, 'account'), {
        acquired: false,
        heldBy: { holder: '(unknown)', until: '' },
      });
      // A one-cluster sync asks for its share meanwhile: it waits, as for a share held, rather than failing.
      const leases = new RunLeases(store, 'sync-2', {
        durationMillis: 30_000,
        waitMillis: 120_000,
        pollMillis: 10,
      });
      const lost = () => proxy.requests.filter((r) => r.fault !== undefined && raced(r)).length;
      const before = lost();
      const entering = leases.enterShared('account', 'alpha');
      await until(async () => lost() >= before + 10, 'the sync has lost two acquisitions of its share');
      proxy.rule = undefined;
      const hold = await entering;
      assert.deepEqual(
        (await store.sharers('account')).map((s) => s.holder),
        ['sync-2'],
      );
      await hold.exit();
      assert.deepEqual(await store.sharers('account'), []);
    }));
});

/**
 * Runs actors one step at a time: a step waits until every actor still running waits at one, then `choose`
 * says which of them goes on. Whatever an actor does between two steps (its own file operations) is done
 * before any other actor's next step, so the order of the steps is all that `choose` decides.
 */
function lockstep(choose: (waiting: number) => number) {
  let running = 0;
  const waiting: Array<() => void> = [];
  const next = () => {
    if (running > 0 && waiting.length === running) waiting.splice(choose(waiting.length), 1)[0]!();
  };
  return {
    step: () =>
      new Promise<void>((resolve) => {
        waiting.push(resolve);
        next();
      }),
    /** Runs the actors to their end, every one of them, then fails with the first that failed. */
    run: async (actors: Array<() => Promise<void>>) => {
      running = actors.length;
      const ends = await Promise.allSettled(
        actors.map(async (actor) => {
          try {
            await actor();
          } finally {
            running -= 1;
            next();
          }
        }),
      );
      for (const end of ends) if (end.status === 'rejected') throw end.reason;
    },
  };
}

describe('file hub leases, whatever order the steps on the disk of several processes meet in', () => {
  it('never let two holders hold one lease at once, nor remove a lock that changed hands, beside a crashed holder (property)', async () => {
    const parent = temporaryDirectory('cpsync-leases-');
    // A process of this machine that has ended: what it left behind is a crashed holder's.
    const gone = spawnSync(process.execPath, ['-e', '']).pid;
    const crashed = (extra: object) =>
      JSON.stringify({
        holder: 'crashed',
        until: new Date(Date.now() + 600_000).toISOString(),
        host: HOST,
        pid: gone,
        ...extra,
      });
    let round = 0;
    const actor = fc.record({
      lease: fc.oneof(
        { weight: 3, arbitrary: fc.constant('account') },
        fc.constantFrom('account-alpha', 'account-beta'),
      ),
      turns: fc.integer({ min: 1, max: 3 }),
      /** While holding: lists the account's shares (removing those that ran out), or only lets others go on. */
      lists: fc.boolean(),
    });
    const left = fc.record({ lock: fc.boolean(), share: fc.boolean(), guard: fc.boolean() });
    await fc.assert(
      fc.asyncProperty(
        fc.array(actor, { minLength: 2, maxLength: 5 }),
        left,
        fc.gen(),
        async (actors, leftBehind, g) => {
          const directory = mkdtempSync(join(parent, 'run-'));
          try {
            const leases = join(directory, '.leases');
            mkdirSync(join(leases, '.guard'), { recursive: true });
            if (leftBehind.lock) writeFileSync(join(leases, 'account.json'), crashed({}));
            if (leftBehind.share)
              writeFileSync(join(leases, 'account-beta.json'), crashed({ shares: 'account' }));
            if (leftBehind.guard)
              writeFileSync(
                join(leases, '.guard', '7'),
                JSON.stringify({ host: HOST, pid: gone, id: 'crashed', at: new Date().toISOString() }),
              );
            const { step, run } = lockstep((waiting) => g(fc.nat, { max: waiting - 1 }));
            const tag = ++round;
            const inside = new Map<string, number>();
            const overlaps: string[] = [];
            await run(
              actors.map((me, i) => async () => {
                // Each actor a process of its own, as far as the disk goes: a store (and guard) of its own.
                const store = new FileLeaseStore(directory, { step });
                const holder = `run-${tag}-actor-${i}`;
                const shares = me.lease === 'account' ? undefined : 'account';
                for (let turn = 0, attempts = 0; turn < me.turns && attempts < 8; attempts++) {
                  const answer = await store.acquire(me.lease, holder, 600_000, shares);
                  if (!answer.acquired) {
                    await step();
                    continue;
                  }
                  turn += 1;
                  const other = inside.get(me.lease);
                  if (other !== undefined) overlaps.push(`${me.lease}: actor ${i} beside actor ${other}`);
                  inside.set(me.lease, i);
                  if (me.lists) await store.sharers('account');
                  else await step();
                  // Held until it is given up: from the call on, this process counts the holder as gone.
                  if (inside.get(me.lease) === i) inside.delete(me.lease);
                  await store.release(me.lease, holder);
                }
              }),
            );
            assert.deepEqual(overlaps, []);
            // Every holder gave its lease up: no lock names one of them; a crashed holder's lock is either
            // still there, untouched, or was taken over and given up.
            for (const file of readdirSync(leases).filter((f) => f.endsWith('.json'))) {
              const lock = JSON.parse(readFileSync(join(leases, file), 'utf8')) as { holder: string };
              assert.equal(lock.holder, 'crashed', `${file} is left held by ${lock.holder}`);
            }
            assert.equal(readdirSync(join(leases, '.guard')).length, 1, 'the guard: one file');
          } finally {
            rmSync(directory, { recursive: true, force: true });
          }
        },
      ),
      { numRuns: 150 },
    );
  });
});
