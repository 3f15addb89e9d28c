import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { memberDue, providerIdOf, type MemberPacing } from '../../../../core/domain/member.ts';
import type { ClusterProfile } from '../../../../core/domain/model/clusterProfile.ts';
import { normalizeAll } from '../../../../core/domain/normalize.ts';
import type { Consumer, GrantResult } from '../../../../core/domain/grants.ts';
import { withGrants } from '../../../../core/sync/grants.ts';
import type { AccessGrants } from '../../../../core/sync/ports.ts';
import { eksCluster, gkeCluster, NOW } from '../../../support/fixtures.ts';
import { inventoryOptions } from '../../../support/settings.ts';

const ROLE = 'arn:aws:iam::111122223333:role/argocd';
const consumer: Consumer = {
  name: 'argocd',
  namespaces: ['cluster-inventory'],
  level: 'edit',
  identities: { eks: ROLE },
};
const pacing: MemberPacing = { everyMillis: 60 * 60_000, slotMillis: 15 * 60_000 };

/**
 * The port as a counter: every grant it is asked to make holds (for `held`); the holders of each GKE project
 * settle, as it was asked for them (or refused when `refuseProjects`). Paced as the member probe unless `paced`
 * is false.
 */
function counting(
  held = ROLE,
  { paced = true, refuseProjects = false } = {},
): AccessGrants & { ensured: number; revoked: number; settled: Array<Record<string, string[]>> } {
  const port = {
    ...(paced ? { pacing } : {}),
    ensured: 0,
    revoked: 0,
    settled: [] as Array<Record<string, string[]>>,
    async ensure(): Promise<GrantResult> {
      port.ensured += 1;
      return { held, status: 'True', reason: 'Granted', message: 'in' };
    },
    async revoke() {
      port.revoked += 1;
      return { revoked: true, message: 'gone' };
    },
    async settleProjectRoles(_project: string, holders: ReadonlyMap<string, ReadonlySet<string>>) {
      // As the port: a refusing project is a rejection only while something is held there.
      if (refuseProjects && holders.size > 0)
        throw Object.assign(new Error('The caller does not have permission'), { code: 403 });
      port.settled.push(Object.fromEntries([...holders].map(([c, ids]) => [c, [...ids].sort()])));
      return [];
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

describe("access grants in a scope's sync: a GKE project's cloud role is held while any cluster of the project holds the consumer", () => {
  const GOOGLE = 'deployer@consumers.iam.gserviceaccount.com';
  const deployer: Consumer = {
    name: 'deployer',
    namespaces: ['cluster-inventory'],
    level: 'view',
    identities: { gke: GOOGLE },
  };
  const options = inventoryOptions({ features: { accessGrants: true }, consumers: [deployer] });
  const clusters = normalizeAll(
    [gkeCluster({ name: 'edge' }), gkeCluster({ name: 'analytics' })],
    options,
    NOW,
  ).profiles;

  const googlePort = (refuseProjects = false) => {
    const port = counting(GOOGLE, { paced: false, refuseProjects });
    return { port, settled: port.settled };
  };
  const sync = (
    port: AccessGrants,
    desired: readonly ClusterProfile[],
    current: readonly ClusterProfile[],
    project?: string,
    opts = options,
  ) =>
    withGrants(desired, current, { options: opts, grants: port, now: NOW, ...(project ? { project } : {}) });

  it('counts every cluster of the project: the role stays while one still holds the consumer, and goes with the last', async () => {
    const { port, settled } = googlePort();
    const both = (await sync(port, clusters, [], 'acme-data')).profiles;
    assert.deepEqual(settled.at(-1), { deployer: [GOOGLE] });
    // One cluster gone from the listing (its profile deleted): the other still holds the consumer.
    const one = (await sync(port, both.slice(0, 1), both.slice(0, 1), 'acme-data')).profiles;
    assert.deepEqual(settled.at(-1), { deployer: [GOOGLE] });
    // A cluster the listing did not see (a partial listing) keeps its holding until its profile goes.
    await sync(port, [], both, 'acme-data');
    assert.deepEqual(settled.at(-1), { deployer: [GOOGLE] });
    // Turned off: every grant revoked, and the role with them.
    const off = inventoryOptions({ features: { accessGrants: false }, consumers: [deployer] });
    await sync(port, clusters, one, 'acme-data', off);
    assert.deepEqual(settled.at(-1), {});
  });

  it('is left alone where the scope does not see the whole project, and in a dry run', async () => {
    const { port, settled } = googlePort();
    await sync(port, clusters, [], undefined);
    await withGrants(clusters, [], { options, grants: port, now: NOW, project: 'acme-data', dryRun: true });
    assert.equal(settled.length, 0);
  });

  it('reports a project it cannot settle while it holds grants there, and not one where it holds none', async () => {
    const { port } = googlePort(true);
    const held = await sync(port, clusters, [], 'acme-data');
    assert.match(
      held.figures?.problems?.[0] ?? '',
      /cannot settle project acme-data's cloud role for consumers: The caller does not have permission/,
    );
    const none = inventoryOptions({
      features: { accessGrants: true },
      consumers: [{ ...deployer, namespaces: ['elsewhere'] }],
    });
    const nothing = await sync(port, clusters, [], 'acme-data', none);
    assert.equal(nothing.figures?.problems, undefined);
  });
});
