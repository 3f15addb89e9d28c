/**
 * The member probe's pacing, end to end through syncScope and the file hub: a new profile's member is read
 * at once; after that each run reads only the members of its slot, every member once a period, and an
 * unchanged member is never written. The member side is a probe that answers from a table (what a member
 * would say) and records which members it was asked about; the real probe is in test/e2e/members.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FileHub } from '../../../../adapters/hub/FileHub.ts';
import { memberDue, providerIdOf, type MemberReading } from '../../../../core/domain/member.ts';
import type { ClusterProfile } from '../../../../core/domain/model/clusterProfile.ts';
import type { MemberProbe } from '../../../../core/sync/ports.ts';
import { syncScope } from '../../../support/absences.ts';
import { eksCluster } from '../../../support/fixtures.ts';
import { inventoryOptions } from '../../../support/settings.ts';
import { temporaryDirectory } from '../../../support/tmp.ts';

const scope = { provider: 'eks' as const, account: '111122223333', region: 'us-east-1' };
const pacing = { everyMillis: 60 * 60_000, slotMillis: 15 * 60_000 };
const options = inventoryOptions({ features: { memberProbe: true } });
const clusters = Array.from({ length: 200 }, (_, i) => eksCluster({ name: `member-${i}` }));
const stamp = (millis: number) => new Date(millis).toISOString().replace(/\.\d+Z$/, 'Z');

/** Answers what the table says each member holds; records who was asked. */
function tableProbe(says: Map<string, string>) {
  const asked: string[] = [];
  const probe: MemberProbe = {
    pacing,
    async readAll(profiles: readonly ClusterProfile[]) {
      const readings = new Map<string, MemberReading>();
      for (const profile of profiles) {
        const id = providerIdOf(profile)!;
        asked.push(id);
        readings.set(id, {
          reachable: true,
          properties: [{ name: 'rack.example.com', value: says.get(id) ?? 'r1' }],
          clusterPropertyVersion: 'v1beta1',
          kubeSystemUid: `uid-${id.split('/').pop()}`,
          crdGroups: ['argoproj.io'],
        });
      }
      return readings;
    },
  };
  return { probe, asked };
}

describe('member probe pacing through a scope sync', () => {
  it('reads new members at once, then one slot’s share a run, each once a period, writing only what changed', async () => {
    const hub = new FileHub({ directory: temporaryDirectory('cpsync-members-') });
    const says = new Map<string, string>();
    const { probe, asked } = tableProbe(says);
    const listing = { outcome: { scope, kind: 'complete' as const }, clusters };
    const sync = (millis: number) => syncScope({ hub, listing, options, now: stamp(millis), members: probe });
    const start = Date.UTC(2026, 10, 23, 12, 0, 0);

    const first = await sync(start);
    assert.equal(first.applied.applied.length, 200);
    assert.equal(new Set(asked).size, 200, 'every new member is read at once');
    assert.deepEqual(first.members, { read: 200, unreachable: 0, millis: first.members!.millis });

    // One member changes what it says; it is seen in its slot, not before.
    const changed = providerIdOf(first.applied.applied[0]!.profile)!;
    says.set(changed, 'r2');
    const readOnce = new Map<string, number>();
    let seenAt: number | undefined;
    for (let slot = 1; slot <= 4; slot++) {
      asked.length = 0;
      const at = start + slot * pacing.slotMillis;
      const result = await sync(at);
      const due = clusters.map((c) => c.providerId).filter((id) => memberDue(id, at, pacing));
      assert.deepEqual([...asked].sort(), due.sort(), `slot ${slot}: exactly the members due`);
      assert.ok(asked.length < 100, `slot ${slot}: ${asked.length} of 200 read`);
      for (const id of asked) readOnce.set(id, (readOnce.get(id) ?? 0) + 1);
      const written = result.applied.applied.map((c) => providerIdOf(c.profile));
      if (asked.includes(changed)) {
        seenAt = slot;
        assert.deepEqual(written, [changed], 'only the member that changed is written');
      } else assert.deepEqual(written, [], `slot ${slot}: nothing changed, nothing written`);
    }
    assert.equal(readOnce.size, 200, 'every member is read within the period');
    assert.ok(
      [...readOnce.values()].every((n) => n === 1),
      'and only once',
    );
    assert.notEqual(seenAt, undefined);
    const stored = (await hub.list('cluster-inventory', {})).find((p) => providerIdOf(p) === changed)!;
    assert.equal(stored.status?.properties?.find((p) => p.name === 'rack.example.com')?.value, 'r2');
  });
});
