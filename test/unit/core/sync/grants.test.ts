import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { memberDue, providerIdOf, type MemberPacing } from '../../../../core/domain/member.ts';
import type { ClusterProfile } from '../../../../core/domain/model/clusterProfile.ts';
import type { Scope } from '../../../../core/domain/model/scope.ts';
import { normalizeAll } from '../../../../core/domain/normalize.ts';
import {
  ledgerKey,
  type ClusterGrantPlan,
  type Consumer,
  type GrantRecord,
  type GrantResult,
  type HeldGrant,
} from '../../../../core/domain/grants.ts';
import type { InventoryOptions } from '../../../../core/domain/options.ts';
import { withGrants, type AccountWork, type GrantsInput } from '../../../../core/sync/grants.ts';
import type { AccessGrants, GrantLedger, RoleHolders } from '../../../../core/sync/ports.ts';
import {
  aksCluster,
  eksCluster,
  gkeCluster,
  gkeDeployer,
  GOOGLE_DEPLOYER,
  NOW,
} from '../../../support/fixtures.ts';
import { inventoryOptions } from '../../../support/settings.ts';

const ROLE = 'arn:aws:iam::111122223333:role/argocd';
const consumer: Consumer = {
  name: 'argocd',
  namespaces: ['cluster-inventory'],
  level: 'edit',
  identities: { eks: ROLE },
};
const pacing: MemberPacing = { everyMillis: 60 * 60_000, slotMillis: 15 * 60_000 };
const GRANTS = 'cpsync.io/access-grants';

/** A ledger in memory, as the port is (the file and DynamoDB ledgers are tested against real stores). */
function memoryLedger(): GrantLedger & { records: Map<string, GrantRecord>; writes: number } {
  const ledger = {
    records: new Map<string, GrantRecord>(),
    writes: 0,
    async read(scope: Pick<Scope, 'provider' | 'account'>) {
      return [...ledger.records.values()]
        .filter((r) => r.provider === scope.provider && r.account === scope.account)
        .map((r) => structuredClone(r));
    },
    async write(records: readonly GrantRecord[], removed: readonly GrantRecord[] = []) {
      ledger.writes += 1;
      for (const r of records) ledger.records.set(ledgerKey(r), structuredClone(r));
      for (const r of removed) ledger.records.delete(ledgerKey(r));
    },
  };
  return ledger;
}

/**
 * The port as a counter: every grant it is asked to make holds (for `held`), or the call fails as `fail`
 * says; revocations and scans are counted with what they were given; the holders of each GKE project settle,
 * as it was asked for them (or refused when `refuseProjects`). Paced as the member probe unless `paced` is false.
 */
function counting(held = ROLE, { paced = true, refuseProjects = false, marks = [] as HeldGrant[] } = {}) {
  const port = {
    ...(paced ? { pacing } : {}),
    ensured: 0,
    revokedGrants: [] as HeldGrant[],
    swept: [] as Array<{ cluster: string; identities: readonly string[] }>,
    /** What carries cpsync's marks in the cloud, whatever any record says (what a scan finds). */
    marks: [...marks],
    fail: undefined as undefined | 'throw',
    settled: [] as Array<Record<string, string[]>>,
    async ensure(): Promise<GrantResult> {
      port.ensured += 1;
      if (port.fail === 'throw') throw new Error('the run was stopped');
      return { held, status: 'True', reason: 'Granted', message: 'in' };
    },
    async revoke(_plan: ClusterGrantPlan, grant: HeldGrant) {
      port.revokedGrants.push(grant);
      port.marks = port.marks.filter(
        (m) => !(m.consumer === grant.consumer && m.identity === grant.identity),
      );
      return { revoked: true, message: 'gone' };
    },
    async sweep(
      plan: ClusterGrantPlan,
      keep: (consumer: string, identity: string) => boolean,
      identities: readonly string[],
    ) {
      port.swept.push({ cluster: plan.providerId, identities });
      const removed = port.marks.filter((m) => !keep(m.consumer, m.identity));
      port.marks = port.marks.filter((m) => keep(m.consumer, m.identity));
      return { removed: removed.map((m) => ({ ...m, message: 'swept' })), complete: true };
    },
    async settleProjectRoles(_project: string, read: () => Promise<RoleHolders>) {
      const holders = await read();
      // As the port: a refusing project is a rejection only while something is held there.
      if (refuseProjects && holders.size > 0)
        throw Object.assign(new Error('The caller does not have permission'), { code: 403 });
      port.settled.push(Object.fromEntries([...holders].map(([c, ids]) => [c, [...ids].sort()])));
      return [];
    },
  };
  return port satisfies AccessGrants;
}

const EKS_SCOPE: Scope = { provider: 'eks', account: '111122223333', region: 'us-east-1' };

describe('access grants in a scope’s sync: when a cluster’s grants are looked at', () => {
  const options = inventoryOptions({ features: { accessGrants: true }, consumers: [consumer] });
  const desired = normalizeAll([eksCluster()], options, NOW).profiles;
  const id = providerIdOf(desired[0]!)!;
  const listed = new Set([ledgerKey({ provider: 'eks', providerId: id })]);
  // A time in the cluster's slot, and one outside it.
  const slots = [0, 1, 2, 3].map((i) => Date.parse(NOW) + i * pacing.slotMillis);
  const inSlot = new Date(slots.find((t) => memberDue(id, t, pacing))!).toISOString();
  const outOfSlot = new Date(slots.find((t) => !memberDue(id, t, pacing))!).toISOString();

  const run = (
    port: AccessGrants,
    ledger: GrantLedger,
    current: readonly ClusterProfile[],
    now: string,
    opts = options,
    extra: Partial<GrantsInput> = {},
  ) =>
    withGrants(desired, current, {
      options: opts,
      grants: port,
      ledger,
      now,
      scope: EKS_SCOPE,
      complete: true,
      listed,
      ...extra,
    });

  it('grants a new cluster at once, then looks again only in its slot while every grant holds', async () => {
    const port = counting();
    const ledger = memoryLedger();
    const first = await run(port, ledger, [], outOfSlot);
    assert.equal(port.ensured, 1);
    assert.equal(first.figures?.granted, 1);
    assert.deepEqual(
      [...ledger.records.values()][0]!.grants,
      [{ consumer: 'argocd', identity: ROLE, level: 'edit' }],
      'recorded in the ledger',
    );
    const held = first.profiles;

    const quiet = await run(port, ledger, held, outOfSlot);
    assert.equal(port.ensured, 1, 'settled and not its slot: not looked at');
    assert.deepEqual(quiet.profiles, held, 'the hub shows the same');

    await run(port, ledger, held, inSlot);
    assert.equal(port.ensured, 2, 'its slot: looked at again');
  });

  it('looks at once when a consumer’s terms change, it has something to revoke, or its last outcome was False', async () => {
    const port = counting();
    const ledger = memoryLedger();
    const held = (await run(port, ledger, [], outOfSlot)).profiles;
    const admin = inventoryOptions({
      features: { accessGrants: true },
      consumers: [{ ...consumer, level: 'admin' }],
    });
    const raised = await run(port, ledger, held, outOfSlot, admin);
    assert.equal(port.ensured, 2, 'another level');
    // Made again on other terms: announced, with the new level.
    assert.deepEqual(
      raised.figures?.actions.map((a) => [a.action, a.level]),
      [['grant', 'admin']],
    );
    // The ledger's last outcome False (a refusal, an unreachable member): looked at at every sync.
    const record = [...ledger.records.values()][0]!;
    record.outcomes = { argocd: { status: 'False', reason: 'Refused', message: 'AccessDenied' } };
    await run(port, ledger, held, outOfSlot, admin);
    assert.equal(port.ensured, 3);
    const off = inventoryOptions({ features: { accessGrants: false }, consumers: [consumer] });
    const revoked = await run(port, ledger, held, outOfSlot, off);
    assert.deepEqual(
      port.revokedGrants.map((g) => g.identity),
      [ROLE],
      'turned off',
    );
    assert.equal(revoked.profiles[0]!.metadata.annotations?.[GRANTS], undefined);
  });

  it('a dry run asks nothing of the clouds, writes nothing to the ledger and lists what it would do', async () => {
    const port = counting();
    const ledger = memoryLedger();
    const dry = await run(port, ledger, [], inSlot, options, { dryRun: true });
    assert.equal(port.ensured, 0);
    assert.equal(ledger.writes, 0);
    assert.deepEqual(
      dry.figures?.actions.map((a) => [a.action, a.consumer, a.identity]),
      [['grant', 'argocd', ROLE]],
    );
    assert.equal(dry.profiles[0]!.metadata.annotations?.[GRANTS], undefined);
  });
});

describe('access grants: the hub is never the record', () => {
  const options = inventoryOptions({ features: { accessGrants: true }, consumers: [consumer] });
  const off = inventoryOptions({ features: { accessGrants: false }, consumers: [consumer] });
  const desired = normalizeAll([eksCluster()], options, NOW).profiles;
  const id = providerIdOf(desired[0]!)!;
  const input = (opts: InventoryOptions, port: AccessGrants, ledger: GrantLedger, extra = {}) => ({
    options: opts,
    grants: port,
    ledger,
    now: NOW,
    scope: EKS_SCOPE,
    complete: true,
    listed: new Set([ledgerKey({ provider: 'eks', providerId: id })]),
    ...extra,
  });
  const withShown = (profile: ClusterProfile, text: string | undefined): ClusterProfile => {
    const annotations = { ...profile.metadata.annotations };
    if (text === undefined) delete annotations[GRANTS];
    else annotations[GRANTS] = text;
    return { ...profile, metadata: { ...profile.metadata, annotations } };
  };
  const intruder = 'arn:aws:iam::999999999999:role/intruder';

  for (const [edit, change] of [
    ['deleted', () => undefined],
    ['edited', () => JSON.stringify({ argocd: { identity: intruder, level: 'admin' } })],
    ['forged', () => JSON.stringify({ stranger: { identity: intruder, level: 'admin' } })],
  ] as const)
    it(`takes back exactly what it granted at turn-off, the record on the hub ${edit}`, async () => {
      const port = counting();
      const ledger = memoryLedger();
      const made = (await withGrants(desired, [], input(options, port, ledger))).profiles;
      const hub = made.map((p) => withShown(p, change()));
      // With the feature on, the hub's record changes nothing: nothing more granted, nothing forgotten.
      const again = await withGrants(desired, hub, input(options, port, ledger));
      assert.equal(again.figures?.granted ?? 0, 0);
      assert.deepEqual(
        JSON.parse(again.profiles[0]!.metadata.annotations![GRANTS]!),
        { argocd: { identity: ROLE, level: 'edit' } },
        'the ledger’s record is shown again',
      );
      const turnedOff = await withGrants(desired, hub, input(off, port, ledger));
      assert.deepEqual(
        port.revokedGrants.map((g) => [g.consumer, g.identity]),
        [['argocd', ROLE]],
        'exactly the grant it made, never the hub’s',
      );
      assert.equal(turnedOff.profiles[0]!.metadata.annotations?.[GRANTS], undefined);
      assert.deepEqual(
        [...ledger.records.values()].flatMap((r) => r.grants),
        [],
      );
    });

  it('grants a GKE project’s role to configured consumers’ identities only, whatever the ledger or the hub name', async () => {
    const GOOGLE = 'deployer@consumers.iam.gserviceaccount.com';
    const deployer: Consumer = { ...consumer, name: 'deployer', identities: { gke: GOOGLE } };
    const gkeOptions = inventoryOptions({ features: { accessGrants: true }, consumers: [deployer] });
    const clusters = normalizeAll([gkeCluster()], gkeOptions, NOW).profiles;
    const gkeId = providerIdOf(clusters[0]!)!;
    const port = counting(GOOGLE, { paced: false });
    const ledger = memoryLedger();
    // A record naming an identity no consumer is configured with (a ledger of another configuration).
    await ledger.write([
      {
        providerId: 'https://container.googleapis.com/v1/projects/acme-data/locations/us-east1/clusters/old',
        provider: 'gke',
        account: 'acme-data',
        region: 'us-east1',
        grants: [{ consumer: 'stranger', identity: 'allUsers', level: 'admin' }],
      },
    ]);
    const hub = clusters.map((p) => withShown(p, JSON.stringify({ deployer: 'evil@example.com' })));
    await withGrants(clusters, hub, {
      options: gkeOptions,
      grants: port,
      ledger,
      now: NOW,
      scope: { provider: 'gke', account: 'acme-data', region: '*' },
      complete: false,
      listed: new Set([ledgerKey({ provider: 'gke', providerId: gkeId })]),
      project: 'acme-data',
    });
    assert.deepEqual(port.settled.at(-1), { deployer: [GOOGLE] });
  });

  it("grants nothing on a cluster it writes no profile of, and takes back there only what the configuration no longer wants, never for the hub's sake", async () => {
    const port = counting();
    const ledger = memoryLedger();
    await withGrants(desired, [], input(options, port, ledger));
    // Every name squatted, or the profile held terminating by someone's finalizer: the hub keeps cpsync from
    // writing it, which decides nothing about what cpsync holds there.
    const squatted = await withGrants([], [], input(options, port, ledger, { unwritten: desired }));
    const deleting = await withGrants(desired, [], input(options, port, ledger, { writable: () => false }));
    assert.equal(port.ensured, 1, 'never granted again');
    assert.equal(port.revokedGrants.length, 0, 'nothing taken back');
    assert.equal(squatted.figures?.revoked ?? 0, 0);
    assert.equal(deleting.figures?.revoked ?? 0, 0);
    assert.deepEqual(
      [...ledger.records.values()].flatMap((r) => r.grants.map((g) => g.identity)),
      [ROLE],
      'the ledger still names the grant',
    );
    // The configuration's own word still holds there: its level changed, the grant is taken back, not raised.
    const raised = inventoryOptions({
      features: { accessGrants: true },
      consumers: [{ ...consumer, level: 'admin' }],
    });
    const changed = await withGrants([], [], input(raised, port, ledger, { unwritten: desired }));
    assert.equal(port.ensured, 1, 'never granted on new terms where no profile is written');
    assert.deepEqual(
      port.revokedGrants.map((g) => g.identity),
      [ROLE],
    );
    assert.equal(changed.figures?.revoked, 1);
    assert.equal(ledger.records.size, 0);
  });

  it('does nothing, and changes nothing shown, while its ledger cannot be read; says so', async () => {
    const port = counting();
    const ledger = memoryLedger();
    const shown = (await withGrants(desired, [], input(options, port, ledger))).profiles;
    const broken = {
      ...ledger,
      read: async () => Promise.reject(new Error('ThrottlingException: slow down')),
    };
    const off = inventoryOptions({ features: { accessGrants: false }, consumers: [consumer] });
    const stalled = await withGrants(desired, shown, input(off, port, broken));
    assert.deepEqual(port.revokedGrants, [], 'nothing revoked without its record');
    assert.equal(
      stalled.profiles[0]!.metadata.annotations?.[GRANTS],
      shown[0]!.metadata.annotations?.[GRANTS],
      'what the hub shows stays',
    );
    assert.match(
      stalled.figures?.problems?.[0] ?? '',
      /cannot read what cpsync granted \(its ledger\): ThrottlingException/,
    );
  });

  it('takes a consumer named like a prototype property (constructor) as any other', async () => {
    const named = inventoryOptions({
      features: { accessGrants: true },
      consumers: [{ ...consumer, name: 'constructor' }],
    });
    const ledger = memoryLedger();
    const port = counting(ROLE, { paced: true });
    const slots = [0, 1, 2, 3].map((i) => Date.parse(NOW) + i * pacing.slotMillis);
    const now = new Date(slots.find((t) => !memberDue(id, t, pacing))!).toISOString();
    const first = await withGrants(desired, [], { ...input(named, port, ledger), now });
    const condition = first.profiles[0]!.status!.conditions!.find(
      (c) => c.type === 'consumers.cpsync.io/constructor',
    );
    assert.deepEqual([condition?.status, condition?.reason], ['True', 'Granted']);
    await withGrants(desired, first.profiles, { ...input(named, port, ledger), now });
    assert.equal(port.ensured, 1, 'held, its outcome read as its own: not looked at again out of its slot');
  });

  it('leaves no record of a grant whose member was never reached (nothing was asked of it)', async () => {
    const port = counting();
    port.ensure = async () => {
      port.ensured += 1;
      return { status: 'False', reason: 'MemberUnreachable', message: 'fetch failed', untouched: true };
    };
    const ledger = memoryLedger();
    await withGrants(desired, [], input(options, port, ledger));
    assert.equal(port.ensured, 1);
    assert.equal(ledger.records.size, 0, 'the record written ahead is taken back');
  });

  it('takes back, on the next run, a grant a stopped run was making: it was recorded before the cloud was asked', async () => {
    const port = counting();
    const ledger = memoryLedger();
    port.fail = 'throw';
    await assert.rejects(withGrants(desired, [], input(options, port, ledger)), /stopped/);
    assert.deepEqual([...ledger.records.values()][0]!.grants, [
      { consumer: 'argocd', identity: ROLE, level: 'edit', pending: true },
    ]);
    port.fail = undefined;
    const removed = inventoryOptions({ features: { accessGrants: true }, consumers: [] });
    const after = await withGrants(desired, [], input(removed, port, ledger));
    assert.deepEqual(
      port.revokedGrants.map((g) => g.identity),
      [ROLE],
    );
    assert.deepEqual(after.figures?.actions ?? [], [], 'never announced, as never known to be made');
    assert.equal(ledger.records.size, 0);
  });

  /** A ledger holding a grant on another cluster of the account: the feature has left a trace there. */
  const withTrace = async () => {
    const ledger = memoryLedger();
    await ledger.write([
      {
        providerId: 'arn:aws:eks:us-east-1:111122223333:cluster/other',
        provider: 'eks',
        account: '111122223333',
        region: 'us-east-1',
        grants: [{ consumer: 'argocd', identity: ROLE, level: 'edit' }],
      },
    ]);
    return ledger;
  };

  it('scans each cluster once at turn-off for cpsync’s marks no record names, and reads turning-off until every one is scanned', async () => {
    const lost = { consumer: 'argocd', identity: ROLE };
    const port = counting(ROLE, { paced: false, marks: [lost] });
    const ledger = await withTrace();
    // The other cluster is no longer listed: its record goes after the grace, as its cluster went.
    const first = await withGrants(desired, [], input(off, port, ledger));
    assert.equal(port.swept.length, 1);
    assert.deepEqual(port.marks, [], 'what no record named is gone');
    assert.deepEqual(
      first.figures?.actions.map((a) => [a.action, a.identity]),
      [['revoke', ROLE]],
    );
    for (let run = 0; run < 3; run++) await withGrants(desired, [], input(off, port, ledger));
    assert.equal(port.swept.length, 1, 'once');
    assert.deepEqual(
      [...ledger.records.values()].map((r) => [r.providerId, r.grants, r.swept]),
      [[id, [], true]],
      'the scan is remembered while the turn-off lasts (the other record went with its cluster)',
    );
    const quiet = await withGrants(desired, [], input(off, port, ledger));
    assert.equal(quiet.figures?.remaining, undefined, 'scanned: nothing left');
    // Consumers removed (the turn-off is over): what the scans found is forgotten.
    const done = inventoryOptions({ features: { accessGrants: false }, consumers: [] });
    await withGrants(desired, [], input(done, port, ledger));
    assert.equal(ledger.records.size, 0);
  });

  it('scans at turn-off a cluster whose profile the hub keeps it from writing (squatted, or held terminating), though no record names it', async () => {
    for (const kept of [{ unwritten: desired }, { writable: () => false }]) {
      const lost = { consumer: 'argocd', identity: ROLE };
      const port = counting(ROLE, { paced: false, marks: [lost] });
      const ledger = await withTrace();
      const profiles = 'unwritten' in kept ? [] : desired;
      await withGrants(profiles, [], input(off, port, ledger, kept));
      assert.deepEqual(
        port.swept.map((s) => s.cluster),
        [id],
        'scanned for the marks no record names',
      );
      assert.deepEqual(port.marks, [], 'what no record named is gone');
    }
  });

  it('scans nothing and holds nothing while consumers are configured and the feature was never on', async () => {
    const port = counting(ROLE, { paced: false, marks: [{ consumer: 'argocd', identity: ROLE }] });
    const ledger = memoryLedger();
    const never = await withGrants(desired, [], input(off, port, ledger));
    assert.equal(port.swept.length, 0);
    assert.equal(never.figures?.remaining, undefined);
    assert.equal(ledger.records.size, 0);
  });

  it('counts a cluster not yet scanned at turn-off (outside its slot) among what the feature still holds', async () => {
    const port = counting(ROLE, { paced: true });
    const ledger = await withTrace();
    const slots = [0, 1, 2, 3].map((i) => Date.parse(NOW) + i * pacing.slotMillis);
    const outOfSlot = new Date(slots.find((t) => !memberDue(id, t, pacing))!).toISOString();
    const waiting = await withGrants(desired, [], { ...input(off, port, ledger), now: outOfSlot });
    assert.equal(port.swept.length, 0);
    // This cluster, not yet scanned, and the other, whose record still names a grant (within the grace).
    assert.equal(waiting.figures?.remaining, 2);
  });

  it('scans a cluster the hub shows grants for that its ledger does not know (a lost record, or one written before the ledger), keeping what is configured', async () => {
    const stale = { consumer: 'gone', identity: 'arn:aws:iam::111122223333:role/gone' };
    const port = counting(ROLE, { paced: false, marks: [stale, { consumer: 'argocd', identity: ROLE }] });
    const ledger = memoryLedger();
    const shown = desired.map((p) => withShown(p, JSON.stringify({ gone: stale.identity })));
    await withGrants(desired, shown, input(options, port, ledger));
    assert.deepEqual(port.marks, [{ consumer: 'argocd', identity: ROLE }]);
  });

  it("keeps, in that scan, the grant of a consumer the configuration wants there through a namespace the hub keeps cpsync's profile from", async () => {
    const stale = { consumer: 'gone', identity: 'arn:aws:iam::111122223333:role/gone' };
    const port = counting(ROLE, { paced: false, marks: [stale, { consumer: 'argocd', identity: ROLE }] });
    const ledger = memoryLedger();
    // Written in a namespace another consumer reads; in argocd's own, every name is squatted.
    const other: Consumer = { ...consumer, name: 'other', namespaces: ['elsewhere'] };
    const both = inventoryOptions({ features: { accessGrants: true }, consumers: [consumer, other] });
    const elsewhere = desired.map((p) => ({ ...p, metadata: { ...p.metadata, namespace: 'elsewhere' } }));
    const shown = elsewhere.map((p) => withShown(p, JSON.stringify({ gone: stale.identity })));
    await withGrants(elsewhere, shown, input(both, port, ledger, { unwritten: desired }));
    assert.equal(port.swept.length, 1, 'scanned');
    assert.deepEqual(port.marks, [{ consumer: 'argocd', identity: ROLE }], 'the configured grant kept');
  });

  it('forgets a record once its cluster is gone: after the grace of complete listings, or at once when the cloud says so', async () => {
    const port = counting();
    const ledger = memoryLedger();
    await withGrants(desired, [], input(options, port, ledger));
    const gone = input(options, port, ledger, { listed: new Set<string>() });
    await withGrants([], [], gone);
    assert.equal([...ledger.records.values()][0]!.missed, 1);
    await withGrants([], [], { ...gone, complete: false });
    assert.equal([...ledger.records.values()][0]!.missed, 1, 'a partial listing judges nothing');
    await withGrants([], [], gone);
    assert.equal(ledger.records.size, 0, 'the default grace: two complete listings');
    await withGrants(desired, [], input(options, port, ledger));
    await withGrants(
      [],
      [],
      input(options, port, ledger, {
        listed: new Set<string>(),
        complete: false,
        confirmedGone: new Set([id]),
      }),
    );
    assert.equal(ledger.records.size, 0);
  });

  it('forgets the record of an Azure cluster the cloud says is gone, whatever ASCII case the hub spelled its id in', async () => {
    const ledger = memoryLedger();
    const subscription = '00000000-1111-2222-3333-444444444444';
    const stored = `/subscriptions/${subscription}/resourceGroups/RG-Orders/providers/Microsoft.ContainerService/managedClusters/Orders`;
    await ledger.write([
      {
        providerId: stored,
        provider: 'aks',
        account: subscription,
        region: 'westeurope',
        grants: [{ consumer: 'argocd', identity: '0b7e3c1d-2f4a-4b5c-8d6e-7f8091a2b3c4', level: 'edit' }],
      },
    ]);
    const run = (gone: string) =>
      withGrants([], [], {
        options,
        grants: counting(),
        ledger,
        now: NOW,
        scope: { provider: 'aks', account: subscription, region: '*' },
        complete: false,
        listed: new Set<string>(),
        confirmedGone: new Set([gone]),
      });
    await run(stored.replace('Orders', 'Orders-2'));
    assert.equal(ledger.records.size, 1, 'another cluster gone: the record stays');
    await run(stored.toLowerCase());
    assert.equal(ledger.records.size, 0, 'one cluster in either spelling: the record goes');
  });

  it("keeps what a run granted on an Azure cluster listed again after a miss, whatever ASCII case its record's id is in", async () => {
    const subscription = '00000000-1111-2222-3333-444444444444';
    const entra = '0b7e3c1d-2f4a-4b5c-8d6e-7f8091a2b3c4';
    const azureConsumer: Consumer = { ...consumer, identities: { aks: entra } };
    const azure = inventoryOptions({ features: { accessGrants: true }, consumers: [azureConsumer] });
    const listedNow = normalizeAll(
      [aksCluster({ account: subscription, resourceGroup: 'rg-orders', name: 'orders' })],
      azure,
      NOW,
    ).profiles;
    const listedId = providerIdOf(listedNow[0]!)!;
    for (const spelling of [
      listedId,
      listedId.replace('rg-orders', 'RG-Orders').replace('/orders', '/Orders'),
    ]) {
      const ledger = memoryLedger();
      // Recorded before, holding nothing yet, and missed by one complete listing since.
      await ledger.write([
        {
          providerId: spelling,
          provider: 'aks',
          account: subscription,
          region: 'westeurope',
          grants: [],
          missed: 1,
        },
      ]);
      await withGrants(listedNow, [], {
        options: azure,
        grants: counting(entra, { paced: false }),
        ledger,
        now: NOW,
        scope: { provider: 'aks', account: subscription, region: '*' },
        complete: true,
        listed: new Set([ledgerKey({ provider: 'aks', providerId: listedId })]),
      });
      assert.equal(ledger.records.size, 1, spelling);
      const [record] = [...ledger.records.values()];
      assert.deepEqual(
        record!.grants.map((g) => `${g.consumer} ${g.identity}`),
        [`argocd ${entra}`],
        `${spelling}: the grant made in the run is recorded`,
      );
      assert.ok(!record!.missed, `${spelling}: listed again, no longer missed`);
    }
  });

  it('revokes exactly what its ledger holds and no consumer is wanted with, whatever the hub carries (property)', async () => {
    const identity = fc.constantFrom(ROLE, 'arn:aws:iam::111122223333:role/x', intruder);
    await fc.assert(
      fc.asyncProperty(
        fc.dictionary(fc.constantFrom('argocd', 'gone', 'stranger'), identity),
        fc.option(fc.dictionary(fc.constantFrom('argocd', 'gone', 'stranger'), identity)),
        fc.boolean(),
        async (recorded, shown, on) => {
          const port = counting(ROLE, { paced: false });
          const ledger = memoryLedger();
          const record: GrantRecord = {
            providerId: id,
            provider: 'eks',
            account: '111122223333',
            region: 'us-east-1',
            grants: Object.entries(recorded).map(([c, i]) => ({ consumer: c, identity: i })),
            swept: true,
          };
          await ledger.write([record]);
          const hub = desired.map((p) => withShown(p, shown ? JSON.stringify(shown) : undefined));
          await withGrants(desired, hub, input(on ? options : off, port, ledger));
          const expected = Object.entries(recorded)
            .filter(([c, i]) => !(on && c === 'argocd' && i === ROLE))
            .map(([c, i]) => `${c} ${i}`)
            .sort();
          assert.deepEqual(port.revokedGrants.map((g) => `${g.consumer} ${g.identity}`).sort(), expected);
        },
      ),
      { numRuns: 150 },
    );
  });
});

describe("access grants in a scope's sync: a GKE project's cloud role is held while any cluster of the project holds the consumer", () => {
  const [GOOGLE, deployer] = [GOOGLE_DEPLOYER, gkeDeployer];
  const options = inventoryOptions({ features: { accessGrants: true }, consumers: [deployer] });
  const clusters = normalizeAll(
    [gkeCluster({ name: 'edge' }), gkeCluster({ name: 'analytics' })],
    options,
    NOW,
  ).profiles;
  const project: Scope = { provider: 'gke', account: 'acme-data', region: '*' };
  const keys = (profiles: readonly ClusterProfile[]) =>
    new Set(profiles.map((p) => ledgerKey({ provider: 'gke', providerId: providerIdOf(p)! })));

  const sync = (
    port: AccessGrants,
    ledger: GrantLedger,
    desired: readonly ClusterProfile[],
    { whole = true, complete = true, opts = options, dryRun = false } = {},
  ) =>
    withGrants(desired, [], {
      options: opts,
      grants: port,
      ledger,
      now: NOW,
      scope: project,
      complete,
      listed: keys(desired),
      ...(whole ? { project: 'acme-data' } : {}),
      ...(dryRun ? { dryRun } : {}),
    });

  /** One cluster's sync of the project (a partial listing of the whole project). */
  const one = (
    port: AccessGrants,
    ledger: GrantLedger,
    desired: readonly ClusterProfile[],
    extra: Partial<GrantsInput> = {},
  ) =>
    withGrants(desired, [], {
      options,
      grants: port,
      ledger,
      now: NOW,
      scope: project,
      complete: false,
      listed: keys(desired),
      project: 'acme-data',
      ...extra,
    });

  it('counts every cluster of the project: the role stays while one still holds the consumer, and goes with the last', async () => {
    const port = counting(GOOGLE, { paced: false });
    const ledger = memoryLedger();
    await sync(port, ledger, clusters);
    assert.deepEqual(port.settled.at(-1), { deployer: [GOOGLE] });
    // A partial listing without one cluster: its record stands, and holds the role.
    await sync(port, ledger, clusters.slice(0, 1), { complete: false });
    assert.deepEqual(port.settled.at(-1), { deployer: [GOOGLE] });
    // Turned off: every grant revoked, and the role with them.
    const off = inventoryOptions({ features: { accessGrants: false }, consumers: [deployer] });
    await sync(port, ledger, clusters, { opts: off });
    assert.deepEqual(port.settled.at(-1), {});
  });

  it('settles the role from the ledger as read inside `alone`, when one-cluster syncs of the project run side by side', async () => {
    const outcomes: Array<Record<string, string[]> | undefined> = [];
    for (const serialized of [false, true]) {
      const port = counting(GOOGLE, { paced: false });
      const ledger = memoryLedger();
      await sync(port, ledger, clusters);
      assert.deepEqual(port.settled.at(-1), { deployer: [GOOGLE] });
      // Both clusters go, each seen by its own event's sync; each reads the ledger before the other writes.
      let arrived = 0;
      let bothRead!: () => void;
      const together = new Promise<void>((resolve) => (bothRead = resolve));
      const reading: GrantLedger = {
        ...ledger,
        read: async (scope) => {
          const records = await ledger.read(scope);
          if (arrived < 2 && ++arrived === 2) bothRead();
          if (arrived <= 2) await together;
          return records;
        },
      };
      let tail = Promise.resolve();
      const alone: AccountWork = (work) => {
        const turn = tail.then(() => work(new AbortController().signal));
        tail = turn.then(
          () => undefined,
          () => undefined,
        );
        return turn;
      };
      await Promise.all(
        clusters.map((gone) =>
          withGrants([], [], {
            options,
            grants: port,
            ledger: reading,
            now: NOW,
            scope: project,
            complete: false,
            listed: new Set(),
            confirmedGone: new Set([providerIdOf(gone)!]),
            project: 'acme-data',
            ...(serialized ? { alone } : {}),
          }),
        ),
      );
      assert.equal(ledger.records.size, 0, 'both records gone');
      outcomes.push(port.settled.at(-1));
    }
    // Each settling from its own first reading, the last still counts the other's cluster: the role stays.
    assert.deepEqual(outcomes[0], { deployer: [GOOGLE] });
    // Settled one at a time from the ledger as it is then: nothing holds the role, and it goes.
    assert.deepEqual(outcomes[1], {});
  });

  it('beside other syncs of the project, settles the role only after taking something out, and counts grants they have under way', async () => {
    const [edge, analytics] = clusters.map((p) => providerIdOf(p)!);
    const alone: AccountWork = (work) => work(new AbortController().signal);
    const seed = async (ledger: GrantLedger) =>
      ledger.write(
        [edge!, analytics!].map((providerId, i) => ({
          providerId,
          provider: 'gke' as const,
          account: 'acme-data',
          region: 'us-east1',
          // analytics' grant is under way in another sync: recorded ahead, not yet known to be made.
          grants: [
            {
              consumer: 'deployer',
              identity: GOOGLE,
              level: 'view' as const,
              ...(i === 1 ? { pending: true as const } : {}),
            },
          ],
        })),
      );
    // A new cluster's sync that only grants: the grant's own step holds the role; nothing is settled.
    const granting = counting(GOOGLE, { paced: false });
    const fresh = memoryLedger();
    await one(granting, fresh, clusters.slice(0, 1), { alone });
    assert.equal(fresh.records.size, 1);
    assert.equal(granting.settled.length, 0);

    // edge goes: the role stays, for analytics' grant under way.
    const beside = counting(GOOGLE, { paced: false });
    const ledger = memoryLedger();
    await seed(ledger);
    await one(beside, ledger, [], { alone, confirmedGone: new Set([edge!]) });
    assert.deepEqual(beside.settled, [{ deployer: [GOOGLE] }]);

    // A whole run of the project, which no other sync runs beside: a grant left pending holds nothing.
    const whole = counting(GOOGLE, { paced: false });
    const alsoLedger = memoryLedger();
    await seed(alsoLedger);
    await one(whole, alsoLedger, [], { confirmedGone: new Set([edge!]) });
    assert.deepEqual(whole.settled, [{}]);
  });

  it('beside other syncs of the project, a look at a cluster not yet running writes nothing and settles nothing', async () => {
    const port = counting(GOOGLE, { paced: false });
    const ledger = memoryLedger();
    // One cluster's sync beside others of the project.
    const alone: AccountWork = (work) => work(new AbortController().signal);
    const look = (desired: readonly ClusterProfile[], extra: Partial<GrantsInput> = {}) =>
      one(port, ledger, desired, { alone, ...extra });
    const creating = normalizeAll(
      [gkeCluster({ name: 'edge', health: { status: 'PROVISIONING', issues: [] } })],
      options,
      NOW,
    ).profiles;
    const looked = await look(creating);
    assert.equal(ledger.writes, 0, 'nothing written ahead, nothing removed');
    assert.equal(port.ensured, 0);
    assert.deepEqual(port.settled, [], "the project's role is not settled");
    assert.equal(looked.figures?.notUsable, 1, 'the consumer is told the cluster is not running yet');

    // Once it runs: granted, recorded, and (the grant's own step holding the role) still nothing settled.
    await look(clusters.slice(0, 1));
    assert.equal(port.ensured, 1);
    assert.deepEqual(
      [...ledger.records.values()].map((r) => r.grants.map((g) => g.identity)),
      [[GOOGLE]],
    );
    assert.deepEqual(port.settled, []);

    // A cluster gone whose record named no grant (a scan remembered): its record goes, the role is left as it is.
    const analytics = providerIdOf(clusters[1]!)!;
    const remembered = {
      providerId: analytics,
      provider: 'gke' as const,
      account: 'acme-data',
      region: 'us-east1',
    };
    await ledger.write([{ ...remembered, grants: [], swept: true }]);
    await look([], { confirmedGone: new Set([analytics]) });
    assert.equal(ledger.records.size, 1, "the gone cluster's record is removed");
    assert.deepEqual(port.settled, []);
  });

  it('is left alone where the scope does not see the whole project, and in a dry run', async () => {
    const port = counting(GOOGLE, { paced: false });
    const ledger = memoryLedger();
    await sync(port, ledger, clusters, { whole: false });
    await sync(port, ledger, clusters, { dryRun: true });
    assert.equal(port.settled.length, 0);
  });

  it('reports a project it cannot settle while it holds grants there, and not one where it holds none', async () => {
    const port = counting(GOOGLE, { paced: false, refuseProjects: true });
    const held = await sync(port, memoryLedger(), clusters);
    assert.match(
      held.figures?.problems?.[0] ?? '',
      /cannot settle project acme-data's cloud role for consumers: The caller does not have permission/,
    );
    const none = inventoryOptions({
      features: { accessGrants: true },
      consumers: [{ ...deployer, namespaces: ['elsewhere'] }],
    });
    const nothing = await sync(port, memoryLedger(), clusters, { opts: none });
    assert.equal(nothing.figures?.problems, undefined);
  });
});
