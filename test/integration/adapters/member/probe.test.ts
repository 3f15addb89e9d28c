/**
 * The member probe's limits, against a member that takes connections and never answers (a loopback socket
 * that accepts and stays silent): one deadline per member, and a budget for the whole reading after which
 * members are left unread (they keep what they carry) rather than read as failed.
 */
import assert from 'node:assert/strict';
import { createServer, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { KubernetesMemberProbe } from '../../../../adapters/member/KubernetesMemberProbe.ts';
import { normalize } from '../../../../core/domain/normalize.ts';
import { eksCluster, NOW } from '../../../support/fixtures.ts';
import { inventoryOptions } from '../../../support/settings.ts';

// The silent member listens on this machine, as an emulated cloud's clusters do.
const options = inventoryOptions({ localClouds: ['eks'] });

describe('member probe limits', () => {
  // Every connection the silent member took.
  const sockets: Socket[] = [];
  const silent = createServer((socket) => void sockets.push(socket));
  let server = '';

  before(async () => {
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const address = silent.address();
    server = `https://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  });
  after(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => silent.close(resolve));
  });

  /** Profiles whose access provider points at the silent member. */
  const silentProfiles = (count: number) =>
    Array.from({ length: count }, (_, i) =>
      normalize(
        eksCluster({ name: `silent-${i}`, endpoints: [{ url: server, visibility: 'public' }] }),
        options,
        NOW,
      ),
    );
  const probe = (budgetMillis: number, concurrency: number) =>
    new KubernetesMemberProbe({
      tokens: { eks: async () => ({ token: 'k8s-aws-v1.test' }) },
      // The member is a local server: a cloud the configuration would reach on this machine.
      localClouds: ['eks', 'gke', 'aks'],
      accessProviderNames: options.accessProviderNames,
      timeoutMillis: 300,
      concurrency,
      budgetMillis,
      pacing: { everyMillis: 60_000, slotMillis: 60_000 },
    });

  it('ends each member at its deadline with a Timeout reading that says so, the same text each time', async () => {
    const readings = await probe(5_000, 4).readAll(silentProfiles(4));
    // Each member was read as failed, not left unread: its own deadline ended it, not the budget.
    assert.equal(readings.size, 4);
    const texts = new Set<string>();
    for (const reading of readings.values()) {
      assert.equal(reading.reachable, false);
      if (!reading.reachable) {
        assert.equal(reading.reason, 'Timeout');
        texts.add(reading.message.replace(/silent-\d+-[0-9a-f]+/, 'member'));
      }
    }
    assert.equal(texts.size, 1, [...texts].join(' | '));
    assert.match([...texts][0]!, /within 0\.3 s/);
  });

  it('leaves unread, rather than failed, the members its budget does not reach', async () => {
    const before = sockets.length;
    const readings = await probe(450, 1).readAll(silentProfiles(5));
    // One at a time: the first ends at its deadline (0.3 s), the second is stopped by the budget (0.45 s), and
    // the three after it are never asked.
    assert.equal(readings.size, 1);
    assert.equal([...readings.values()][0]!.reachable, false);
    assert.ok(sockets.length - before <= 2, `${sockets.length - before} members were reached`);
  });

  it('stops with the run: nothing is read as failed once the run’s signal aborts', async () => {
    const run = new AbortController();
    setTimeout(() => run.abort(new Error('SIGTERM')), 100);
    const readings = await probe(5_000, 2).readAll(silentProfiles(3), run.signal);
    assert.equal(readings.size, 0);
  });
});
