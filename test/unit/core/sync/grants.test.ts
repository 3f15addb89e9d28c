import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { memberDue, providerIdOf, type MemberPacing } from '../../../../core/domain/member.ts';
import type { ClusterProfile } from '../../../../core/domain/model/clusterProfile.ts';
import { normalizeAll } from '../../../../core/domain/normalize.ts';
import type { Consumer, GrantResult } from '../../../../core/domain/grants.ts';
import { withGrants } from '../../../../core/sync/grants.ts';
import type { AccessGrants } from '../../../../core/sync/ports.ts';
import { eksCluster, NOW } from '../../../support/fixtures.ts';
import { inventoryOptions } from '../../../support/settings.ts';

const ROLE = 'arn:aws:iam::111122223333:role/argocd';
const consumer: Consumer = {
  name: 'argocd',
  namespaces: ['cluster-inventory'],
  level: 'edit',
  identities: { eks: ROLE },
};
const pacing: MemberPacing = { everyMillis: 60 * 60_000, slotMillis: 15 * 60_000 };

/** The port as a counter: every grant it is asked to make holds. */
function counting(): AccessGrants & { ensured: number; revoked: number } {
  const port = {
    pacing,
    ensured: 0,
    revoked: 0,
    async ensure(): Promise<GrantResult> {
      port.ensured += 1;
      return { held: ROLE, status: 'True', reason: 'Granted', message: 'in' };
    },
    async revoke() {
      port.revoked += 1;
      return { revoked: true, message: 'gone' };
    },
  };
  return port;
}

describe('access grants in a scope’s sync: when a cluster’s grants are looked at', () => {
  const options = inventoryOptions({ features: { accessGrants: true }, consumers: [consumer] });
  const desired = normalizeAll([eksCluster()], options, NOW).profiles;
  const id = providerIdOf(desired[0]!)!;
  // A time in the cluster's slot, and one outside it.
  const slots = [0, 1, 2, 3].map((i) => Date.parse(NOW) + i * pacing.slotMillis);
  const inSlot = new Date(slots.find((t) => memberDue(id, t, pacing))!).toISOString();
  const outOfSlot = new Date(slots.find((t) => !memberDue(id, t, pacing))!).toISOString();

  const run = (
    port: AccessGrants,
    current: readonly ClusterProfile[],
    now: string,
    opts = options,
    dryRun = false,
  ) => withGrants(desired, current, { options: opts, grants: port, now, ...(dryRun ? { dryRun } : {}) });

  it('grants a new cluster at once, then looks again only in its slot while every grant holds', async () => {
    const port = counting();
    const first = await run(port, [], outOfSlot);
    assert.equal(port.ensured, 1);
    assert.equal(first.figures?.granted, 1);
    const held = first.profiles;

    const quiet = await run(port, held, outOfSlot);
    assert.equal(port.ensured, 1, 'settled and not its slot: not looked at');
    assert.deepEqual(quiet.profiles, held, 'what the hub holds stays');

    await run(port, held, inSlot);
    assert.equal(port.ensured, 2, 'its slot: looked at again');
  });

  it('looks at once when a consumer’s terms change, it has something to revoke, or its grant did not hold', async () => {
    const port = counting();
    const held = (await run(port, [], outOfSlot)).profiles;
    const admin = inventoryOptions({
      features: { accessGrants: true },
      consumers: [{ ...consumer, level: 'admin' }],
    });
    const raised = await run(port, held, outOfSlot, admin);
    assert.equal(port.ensured, 2, 'another level');
    // Made again on other terms: announced, with the new level.
    assert.deepEqual(
      raised.figures?.actions.map((a) => [a.action, a.level]),
      [['grant', 'admin']],
    );
    const scoped = inventoryOptions({
      features: { accessGrants: true },
      consumers: [{ ...consumer, memberNamespaces: ['apps'] }],
    });
    await run(port, held, outOfSlot, scoped);
    assert.equal(port.ensured, 3, 'member namespaces');
    const off = inventoryOptions({ features: { accessGrants: false }, consumers: [consumer] });
    const revoked = await run(port, held, outOfSlot, off);
    assert.equal(port.revoked, 1, 'turned off');
    assert.equal(revoked.profiles[0]!.metadata.annotations?.['cpsync.io/access-grants'], undefined);
    // A grant whose condition is False (refused, unreachable) is tried at every sync.
    const refused = held.map((p) => ({
      ...p,
      status: {
        ...p.status,
        conditions: p.status!.conditions!.map((c) =>
          c.type === 'consumers.cpsync.io/argocd' ? { ...c, status: 'False' as const, reason: 'Refused' } : c,
        ),
      },
    }));
    await run(port, refused, outOfSlot);
    assert.equal(port.ensured, 4);
  });

  it('a dry run asks nothing of the clouds, lists what it would do and keeps what the hub holds', async () => {
    const port = counting();
    const dry = await run(port, [], inSlot, options, true);
    assert.equal(port.ensured, 0);
    assert.deepEqual(
      dry.figures?.actions.map((a) => [a.action, a.consumer, a.identity]),
      [['grant', 'argocd', ROLE]],
    );
    assert.equal(dry.profiles[0]!.metadata.annotations?.['cpsync.io/access-grants'], undefined);
  });
});
