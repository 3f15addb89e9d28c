import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ClusterProfile } from '../../../../core/domain/model/clusterProfile.ts';
import type { ObservedCluster } from '../../../../core/domain/model/observedCluster.ts';
import type { ScopeOutcome, ScopeOutcomeKind } from '../../../../core/domain/model/scope.ts';
import { normalize, normalizeAll } from '../../../../core/domain/normalize.ts';
import { inventoryOptions } from '../../../support/settings.ts';
import { plan, type PlanInput } from '../../../../core/domain/plan.ts';
import { ANNOTATION_DELETED_AT } from '../../../../core/domain/constants.ts';
import { aksCluster, eksCluster, LATER, NOW } from '../../../support/fixtures.ts';

const options = inventoryOptions();
const scope = { provider: 'eks' as const, account: '111122223333', region: 'us-east-1' };

function outcome(kind: ScopeOutcomeKind = 'complete'): ScopeOutcome {
  return { scope, kind };
}

function desiredOf(clusters: ObservedCluster[], now = NOW): ClusterProfile[] {
  return clusters.map((c) => normalize(c, options, now));
}

function run(desired: ClusterProfile[], current: ClusterProfile[], extra: Partial<PlanInput> = {}) {
  return plan({
    outcome: outcome(),
    desired,
    current,
    manager: 'cpsync',
    deletionGraceListings: 2,
    missedBefore: new Map(),
    accessProviderNames: Object.values(options.accessProviderNames),
    now: LATER,
    ...extra,
  });
}

/** The counts a plan leaves, as the absence store gives them to the next. */
function countsOf(result: ReturnType<typeof plan>): Map<string, number> {
  return new Map([...result.missed].map(([id, { missed }]) => [id, missed]));
}

/** What the hub would hold after a plan's writes (times as planned). */
function stored(profiles: ClusterProfile[]): ClusterProfile[] {
  return profiles.map((p, i) => ({ ...p, metadata: { ...p.metadata, resourceVersion: String(100 + i) } }));
}

const a = eksCluster({ name: 'alpha' });
const b = eksCluster({ name: 'beta' });

describe('plan', () => {
  it('creates a profile for every listed cluster on the first sync', () => {
    const result = run(desiredOf([a, b]), []);
    assert.equal(result.creates.length, 2);
    assert.deepEqual([result.updates.length, result.deletes.length], [0, 0]);
  });

  it('plans nothing when the hub already matches the clouds', () => {
    const result = run(desiredOf([a, b], LATER), stored(desiredOf([a, b])));
    assert.deepEqual(
      [result.creates.length, result.updates.length, result.deletes.length, result.unchanged],
      [0, 0, 0, 2],
    );
  });

  it('turns one changed cloud value into one status-only update naming that field', () => {
    const current = stored(desiredOf([a, b]));
    const result = run(
      desiredOf([{ ...a, nodes: { count: 9, instanceTypes: a.nodes.instanceTypes } }, b], LATER),
      current,
    );
    assert.equal(result.updates.length, 1);
    const [update] = result.updates;
    assert.equal(update!.writeStatus, true);
    assert.equal(update!.writeObject, false);
    assert.deepEqual(update!.changes, [
      { field: 'status.properties[count.node.k8s.io]', before: '6', after: '9' },
    ]);
    const props = update!.profile.status!.properties!;
    assert.equal(props.find((p) => p.name === 'count.node.k8s.io')!.lastObservedTime, LATER);
    assert.ok(props.filter((p) => p.name !== 'count.node.k8s.io').every((p) => p.lastObservedTime === NOW));
  });

  it('reports a version upgrade as a change of status.version.kubernetes', () => {
    const result = run(desiredOf([{ ...a, kubernetesVersion: '1.32' }], LATER), stored(desiredOf([a])));
    assert.deepEqual(result.updates[0]!.changes, [
      { field: 'status.version.kubernetes', before: '1.31', after: '1.32' },
    ]);
  });

  it('moves lastTransitionTime only when a condition status changes', () => {
    const current = stored(desiredOf([a]));
    const degraded = run(
      desiredOf([{ ...a, health: { status: 'ACTIVE', issues: [{ code: 'X', message: 'y' }] } }], LATER),
      current,
    );
    const healthy = degraded.updates[0]!.profile.status!.conditions!.find(
      (c) => c.type === 'ControlPlaneHealthy',
    )!;
    assert.deepEqual([healthy.status, healthy.lastTransitionTime], ['False', LATER]);
    const updating = run(desiredOf([{ ...a, health: { status: 'UPDATING', issues: [] } }], LATER), current);
    const still = updating.updates[0]!.profile.status!.conditions!.find(
      (c) => c.type === 'ControlPlaneHealthy',
    )!;
    assert.deepEqual([still.status, still.reason, still.lastTransitionTime], ['True', 'Updating', NOW]);
  });

  it('writes the object, not the status, when only a label changes', () => {
    const current = stored(desiredOf([a]));
    current[0]!.metadata.labels = { ...current[0]!.metadata.labels, 'cpsync.io/region': 'stale' };
    const result = run(desiredOf([a], LATER), current);
    assert.deepEqual([result.updates[0]!.writeObject, result.updates[0]!.writeStatus], [true, false]);
    assert.deepEqual(result.updates[0]!.changes, [
      { field: 'metadata.labels[cpsync.io/region]', before: 'stale', after: 'us-east-1' },
    ]);
  });

  it('adds the topology labels and the cloud to a profile an earlier version wrote: one object write, once', () => {
    const earlier = stored(desiredOf([a]));
    const {
      'topology.kubernetes.io/region': _region,
      'cpsync.io/cloud': _cloud,
      ...before
    } = earlier[0]!.metadata.labels!;
    earlier[0]!.metadata.labels = before;
    const upgrade = run(desiredOf([a], LATER), earlier);
    assert.equal(upgrade.updates.length, 1);
    assert.deepEqual([upgrade.updates[0]!.writeObject, upgrade.updates[0]!.writeStatus], [true, false]);
    assert.deepEqual(upgrade.updates[0]!.changes, [
      { field: 'metadata.labels[cpsync.io/cloud]', after: 'aws' },
      { field: 'metadata.labels[topology.kubernetes.io/region]', after: 'us-east-1' },
    ]);
    assert.equal(run(desiredOf([a], LATER), stored([upgrade.updates[0]!.profile])).unchanged, 1);
  });

  it('ignores labels, annotations and properties that others wrote', () => {
    const current = stored(desiredOf([a]));
    current[0]!.metadata.labels = { ...current[0]!.metadata.labels, 'team.example.com/owner': 'ops' };
    current[0]!.metadata.annotations = {
      ...current[0]!.metadata.annotations,
      'kubectl.kubernetes.io/last-applied': '{}',
    };
    current[0]!.status!.properties = [
      ...current[0]!.status!.properties!,
      { name: 'example.com/rack', value: 'r1' },
    ];
    current[0]!.status!.accessProviders = [
      ...current[0]!.status!.accessProviders!,
      { name: 'vault', cluster: { server: 'https://v' } },
    ];
    assert.equal(run(desiredOf([a], LATER), current).unchanged, 1);
  });

  it('marks a cluster missing from a complete listing Joined=False/NotFoundInProvider before deleting it', () => {
    const first = run(desiredOf([a], LATER), stored(desiredOf([a, b])));
    assert.equal(first.deletes.length, 0);
    assert.equal(first.updates.length, 1);
    const marked = first.updates[0]!.profile;
    const joined = marked.status!.conditions!.find((c) => c.type === 'Joined')!;
    assert.deepEqual(
      [joined.status, joined.reason, joined.lastTransitionTime],
      ['False', 'NotFoundInProvider', LATER],
    );
    assert.equal(marked.status!.properties!.find((p) => p.name === 'cpsync.io/missed-listings')!.value, '1');
    assert.equal(first.updates[0]!.writeStatus, true);
    assert.equal(first.updates[0]!.writeObject, false);

    assert.deepEqual([...first.missed.values()], [{ providerId: b.providerId, missed: 1 }]);

    const second = run(
      desiredOf([a], LATER),
      [...stored(desiredOf([a])), { ...marked, metadata: { ...marked.metadata, resourceVersion: '7' } }],
      { missedBefore: countsOf(first) },
    );
    assert.equal(second.deletes.length, 1);
    assert.equal(second.deletes[0]!.reason, 'MissingFromListings');
    assert.equal(second.deletes[0]!.current.metadata.name, marked.metadata.name);
  });

  it('counts misses up to a longer grace', () => {
    let current = stored(desiredOf([b]));
    let missedBefore = new Map<string, number>();
    for (let missed = 1; missed < 4; missed++) {
      const result = run([], current, { deletionGraceListings: 4, missedBefore });
      assert.equal(result.deletes.length, 0, `miss ${missed}`);
      const property = result.updates[0]!.profile.status!.properties!.find(
        (p) => p.name === 'cpsync.io/missed-listings',
      );
      assert.equal(property!.value, String(missed));
      current = stored([result.updates[0]!.profile]);
      missedBefore = countsOf(result);
    }
    const last = run([], current, { deletionGraceListings: 4, missedBefore });
    assert.equal(last.deletes.length, 1);
    // Kept until the profile is gone: a deletion that does not land is tried again at the next listing.
    assert.deepEqual(
      [...last.missed.values()].map((m) => m.missed),
      [4],
    );
  });

  it("counts from what it is given, never from the hub's missed-listings property (shown there, not read back)", () => {
    const marked = run([], stored(desiredOf([b])), { deletionGraceListings: 3 }).updates[0]!.profile;
    const claiming = (value: string) =>
      stored([
        {
          ...marked,
          status: {
            ...marked.status,
            properties: marked.status!.properties!.map((p) =>
              p.name === 'cpsync.io/missed-listings' ? { ...p, value } : p,
            ),
          },
        },
      ]);
    // A hub that says it has been missed many times: counted once, as given.
    const hastened = run([], claiming('99'), { deletionGraceListings: 3 });
    assert.equal(hastened.deletes.length, 0);
    assert.deepEqual(
      [...hastened.missed.values()].map((m) => m.missed),
      [1],
    );
    // A hub that says it has never been missed: deleted once the given count reaches the grace.
    const cleared = run([], claiming('0'), {
      deletionGraceListings: 3,
      missedBefore: new Map([[b.providerId, 2]]),
    });
    assert.deepEqual(
      cleared.deletes.map((d) => d.reason),
      ['MissingFromListings'],
    );
  });

  it('deletes at once with a grace of one listing', () => {
    assert.equal(run([], stored(desiredOf([a])), { deletionGraceListings: 1 }).deletes.length, 1);
  });

  it('restores Joined and clears the miss count when a missing cluster is listed again', () => {
    const marked = run([], stored(desiredOf([a]))).updates[0]!.profile;
    const back = run(desiredOf([a], LATER), stored([marked]));
    const profile = back.updates[0]!.profile;
    assert.equal(profile.status!.conditions!.find((c) => c.type === 'Joined')!.status, 'True');
    assert.equal(
      profile.status!.properties!.some((p) => p.name === 'cpsync.io/missed-listings'),
      false,
    );
  });

  it('makes ControlPlaneHealthy Unknown while a cluster is missing, keeping when it became so, and healthy again once listed', () => {
    const health = (profile: ClusterProfile) =>
      profile.status!.conditions!.find((c) => c.type === 'ControlPlaneHealthy')!;
    assert.equal(health(desiredOf([a])[0]!).status, 'True', 'healthy while listed');
    const first = run([], stored(desiredOf([a])), { deletionGraceListings: 3 });
    const marked = first.updates[0]!;
    assert.deepEqual(
      [
        health(marked.profile).status,
        health(marked.profile).reason,
        health(marked.profile).lastTransitionTime,
      ],
      ['Unknown', 'NotFoundInProvider', LATER],
    );
    assert.match(
      health(marked.profile).message,
      /Not listed by the provider in 1 consecutive complete listing/,
    );
    assert.ok(marked.changes.some((c) => c.field === 'status.conditions[ControlPlaneHealthy]'));
    const second = run([], stored([marked.profile]), {
      deletionGraceListings: 3,
      missedBefore: countsOf(first),
      now: '2026-03-01T00:00:00Z',
    });
    assert.equal(
      health(second.updates[0]!.profile).lastTransitionTime,
      LATER,
      'Unknown since the first miss',
    );
    const back = run(desiredOf([a], '2026-03-02T00:00:00Z'), stored([second.updates[0]!.profile]));
    assert.equal(health(back.updates[0]!.profile).status, 'True');
    assert.equal(health(back.updates[0]!.profile).reason, 'Running');
  });

  for (const kind of ['partial', 'failed'] as const) {
    it(`neither deletes nor marks missing after a ${kind} listing`, () => {
      const result = run([], stored(desiredOf([a, b])), { outcome: outcome(kind) });
      assert.deepEqual([result.creates.length, result.updates.length, result.deletes.length], [0, 0, 0]);
    });
  }

  it('deletes at once when the provider confirmed the cluster gone, whatever the listing', () => {
    const current = stored(desiredOf([a, b]));
    const result = run(desiredOf([a], LATER), current, {
      outcome: outcome('partial'),
      confirmedGone: new Set([b.providerId]),
    });
    assert.equal(result.deletes.length, 1);
    assert.equal(result.deletes[0]!.reason, 'ConfirmedNotFound');
  });

  it('deletes at once a pruned profile (no configured scope covers it), saying so rather than that it is gone', () => {
    const result = run([], stored(desiredOf([a, b])), {
      outcome: outcome('partial'),
      pruned: new Set([b.providerId]),
    });
    assert.deepEqual(
      result.deletes.map((d) => [d.current.metadata.annotations?.['cpsync.io/provider-id'], d.reason]),
      [[b.providerId, 'NoLongerCovered']],
    );
  });

  it('never updates or deletes a profile of another cluster manager in the same namespace', () => {
    const foreign = stored(desiredOf([b]))[0]!;
    foreign.metadata.labels = { ...foreign.metadata.labels, 'x-k8s.io/cluster-manager': 'ocm' };
    foreign.spec = { ...foreign.spec, clusterManager: { name: 'ocm' } };
    const missing = run([], [foreign]);
    assert.deepEqual([missing.updates.length, missing.deletes.length], [0, 0]);
    const clash = run(desiredOf([b], LATER), [foreign]);
    assert.deepEqual([clash.creates.length, clash.updates.length, clash.deletes.length], [0, 0, 0]);
    assert.equal(clash.skipped[0]!.reason, 'OwnedByAnotherManager');
    assert.match(clash.skipped[0]!.detail, /"ocm"/);
  });

  it('never writes over a profile of another cloud cluster whose name collides, and says so; the stored one keeps its own life', () => {
    // The victim: a cluster of another account (another scope) whose profile has this name.
    const victim = stored(desiredOf([eksCluster({ name: 'beta', account: '999999999999' })]))[0]!;
    const colliding = desiredOf([b], LATER)[0]!;
    colliding.metadata.name = victim.metadata.name;
    const clash = run([colliding], [victim]);
    assert.deepEqual([clash.creates.length, clash.updates.length, clash.deletes.length], [0, 0, 0]);
    assert.equal(clash.skipped[0]!.reason, 'ProviderIdConflict');
    assert.match(clash.skipped[0]!.detail, /999999999999/);
    assert.match(clash.skipped[0]!.detail, /111122223333/);
    // In the same scope, the stored profile's own cluster gone from a complete listing: deleted as ever.
    const own = stored(desiredOf([a]))[0]!;
    const sameName = desiredOf([b], LATER)[0]!;
    sameName.metadata.name = own.metadata.name;
    const gone = run([sameName], [own], { deletionGraceListings: 1 });
    assert.deepEqual(
      gone.deletes.map((d) => d.current.metadata.name),
      [own.metadata.name],
    );
    assert.equal(gone.skipped[0]!.reason, 'ProviderIdConflict');
  });

  it('knows an Azure cluster by its id whatever the ASCII case: its copy elsewhere is no longer placed there, never missing', () => {
    const azure = aksCluster();
    const azureScope = { provider: 'aks' as const, account: azure.account, region: 'westeurope' };
    const projecting = inventoryOptions({ projections: [{ provider: 'aks', namespaces: ['kueue-system'] }] });
    // The copy was written when ARM spelled the id otherwise (ARM is not consistent about its case).
    const copy = stored(
      normalizeAll([{ ...azure, providerId: azure.providerId.toUpperCase() }], projecting, NOW).profiles,
    ).find((p) => p.metadata.namespace === 'kueue-system')!;
    const result = run([normalize(azure, options, LATER)], [copy], {
      outcome: { scope: azureScope, kind: 'complete' },
    });
    assert.deepEqual(
      result.deletes.map((d) => [d.current.metadata.namespace, d.reason]),
      [['kueue-system', 'NotPlacedHere']],
    );
    // Its own profile, written under the other spelling: the id stays as the hub spells it (its admission
    // policy refuses a change of id), and nothing else changed, so nothing is written.
    const own = stored([normalize({ ...azure, providerId: azure.providerId.toUpperCase() }, options, NOW)]);
    const again = run([normalize(azure, options, LATER)], own, {
      outcome: { scope: azureScope, kind: 'complete' },
    });
    assert.deepEqual(
      again.updates.flatMap((u) => u.changes.map((c) => c.field)),
      [],
      'no change for an id in another ASCII case',
    );
    // A twin in letters ARM tells apart is another cluster: its copy is not this one's.
    const twin = { ...azure, providerId: azure.providerId.replace('/rg-web/', '/rg-we\u212A/') };
    const twinCopy = stored(normalizeAll([twin], projecting, NOW).profiles).find(
      (p) => p.metadata.namespace === 'kueue-system',
    )!;
    const other = run([normalize(azure, options, LATER)], [twinCopy], {
      outcome: { scope: azureScope, kind: 'complete' },
    });
    assert.ok(
      !other.deletes.some((d) => d.reason === 'NotPlacedHere'),
      'the twin’s copy is not placed elsewhere',
    );
  });

  it('never deletes profiles outside the scope (another region of the same account)', () => {
    const west = stored(desiredOf([eksCluster({ name: 'gamma', region: 'us-west-2' })]));
    assert.equal(run([], west).deletes.length, 0);
  });

  it('is deterministic', () => {
    const current = stored(desiredOf([a, b]));
    assert.deepEqual(run(desiredOf([a], LATER), current), run(desiredOf([a], LATER), current));
  });

  it('keeps a listed cluster’s profiles where they are while its own profile cannot be written where it is placed now (a copy is no stand-in)', () => {
    const projecting = inventoryOptions({ projections: [{ provider: 'eks', namespaces: ['kueue-system'] }] });
    const both = stored(normalizeAll([a], projecting, NOW).profiles);
    // A namespace rule moves the cluster to team-b, where its name is held by another manager's profile: only its
    // copy is wanted (names.ts leaves the own profile out).
    const moved = inventoryOptions({
      namespaceRules: [{ provider: 'eks', namespace: 'team-b' }],
      projections: [{ provider: 'eks', namespaces: ['kueue-system'] }],
    });
    const wanted = normalizeAll([a], moved, LATER).profiles.filter((p) => p.metadata.namespace !== 'team-b');
    assert.deepEqual(
      wanted.map((p) => p.metadata.namespace),
      ['kueue-system'],
    );
    for (const kind of ['complete', 'partial'] as const) {
      const result = run(wanted, both, { outcome: outcome(kind), deletionGraceListings: 1 });
      assert.deepEqual(result.deletes, [], `${kind}: its own profile in cluster-inventory is kept`);
      assert.ok(
        !result.updates.some((u) => u.profile.metadata.namespace === 'cluster-inventory'),
        `${kind}: and not marked missing (the cluster is listed)`,
      );
    }
    // Once its own profile can be written in team-b, the old one goes.
    const placedNow = run(normalizeAll([a], moved, LATER).profiles, both);
    assert.deepEqual(
      placedNow.deletes.map((d) => [d.current.metadata.namespace, d.reason]),
      [['cluster-inventory', 'NotPlacedHere']],
    );
  });

  it('deletes at once the copy of a listed cluster in a namespace it is no longer placed in (any listing), never its new place', () => {
    const projecting = inventoryOptions({ projections: [{ provider: 'eks', namespaces: ['kueue-system'] }] });
    const both = stored(normalizeAll([a], projecting, NOW).profiles);
    assert.deepEqual(
      both.map((p) => p.metadata.namespace),
      ['cluster-inventory', 'kueue-system'],
    );
    for (const kind of ['complete', 'partial'] as const) {
      const result = run(desiredOf([a], LATER), both, { outcome: outcome(kind) });
      assert.deepEqual(
        result.deletes.map((d) => [d.current.metadata.namespace, d.reason]),
        [['kueue-system', 'NotPlacedHere']],
      );
      // The cluster label and the list of copies leave the profile in its own namespace.
      assert.deepEqual(
        result.updates.map((u) => u.changes.map((c) => c.field)),
        [['metadata.labels[cpsync.io/cluster]', 'metadata.annotations[cpsync.io/projected-to]']],
      );
    }
    // A cluster not listed keeps every copy through the grace, each counted in its own namespace; a listing
    // that is not complete touches no copy at all.
    const missing = run([], both);
    assert.deepEqual(missing.deletes, []);
    assert.equal(missing.updates.length, 2);
    for (const kind of ['partial', 'failed'] as const) {
      const incomplete = run([], both, { outcome: outcome(kind) });
      assert.deepEqual([incomplete.updates.length, incomplete.deletes.length], [0, 0], kind);
    }
    // A copy is not taken for the cluster's place when another manager holds that name there.
    const foreign = stored(desiredOf([a]))[0]!;
    foreign.metadata.labels = { ...foreign.metadata.labels, 'x-k8s.io/cluster-manager': 'ocm' };
    foreign.spec = { ...foreign.spec, clusterManager: { name: 'ocm' } };
    const moved = stored(
      normalizeAll([a], inventoryOptions({ namespaceRules: [{ provider: 'eks', namespace: 'other' }] }), NOW)
        .profiles,
    );
    assert.deepEqual(run(desiredOf([a], LATER), [foreign, ...moved]).deletes, []);
  });

  it('deletes in turn, once it would, a profile another writer deleted (held by a finalizer), never writing to it before; one cpsync deleted is left alone', () => {
    const [alpha, beta] = stored(desiredOf([a, b]));
    const held = (marked: boolean): ClusterProfile => ({
      ...beta!,
      metadata: {
        ...beta!.metadata,
        deletionTimestamp: NOW,
        finalizers: ['example.com/hold'],
        annotations: {
          ...beta!.metadata.annotations,
          ...(marked ? { [ANNOTATION_DELETED_AT]: NOW } : {}),
        },
      },
    });
    // Another writer's deletion: counted as missing, not written to, deleted by cpsync at the grace.
    const first = run(desiredOf([a], LATER), [alpha!, held(false)]);
    assert.deepEqual([first.updates, first.deletes], [[], []]);
    assert.deepEqual(countsOf(first), new Map([[b.providerId, 1]]));
    const second = run(desiredOf([a], LATER), [alpha!, held(false)], { missedBefore: countsOf(first) });
    assert.deepEqual(
      second.deletes.map((d) => [d.current.metadata.name, d.reason]),
      [[beta!.metadata.name, 'MissingFromListings']],
    );
    assert.deepEqual(
      run([], [held(false)], {
        outcome: outcome('partial'),
        confirmedGone: new Set([b.providerId]),
      }).deletes.map((d) => d.reason),
      ['ConfirmedNotFound'],
    );
    // cpsync's own deletion: neither counted, written, deleted nor announced again.
    for (const extra of [{ missedBefore: countsOf(first) }, { confirmedGone: new Set([b.providerId]) }]) {
      const again = run(desiredOf([a], LATER), [alpha!, held(true)], extra);
      assert.deepEqual([again.updates, again.deletes, [...again.missed.keys()]], [[], [], []]);
    }
    // Its cluster listed: skipped, whoever deleted it, saying who did.
    const listed = (marked: boolean) =>
      run(desiredOf([a, b], LATER), [alpha!, held(marked)]).skipped.map((k) => [k.reason, k.detail]);
    assert.match(
      String(listed(false)),
      /^Terminating,.* of a listed cluster was deleted by another writer, and is held by example\.com\/hold; created again once it is gone$/,
    );
    assert.match(
      String(listed(true)),
      /^Terminating,.* is being deleted, held by example\.com\/hold; created again once it is gone$/,
    );
  });

  it('takes off the mark of a deletion of its own that did not go through, whether the cluster is listed or missed', () => {
    const [alpha, beta] = stored(desiredOf([a, b]));
    const marked = (p: ClusterProfile): ClusterProfile => ({
      ...p,
      metadata: { ...p.metadata, annotations: { ...p.metadata.annotations, [ANNOTATION_DELETED_AT]: NOW } },
    });
    const result = run(desiredOf([a], LATER), [marked(alpha!), marked(beta!)]);
    const written = new Map(result.updates.map((u) => [u.profile.metadata.name, u.profile]));
    for (const profile of [alpha!, beta!]) {
      const update = written.get(profile.metadata.name);
      assert.ok(update, `${profile.metadata.name} written`);
      assert.equal(update.metadata.annotations?.[ANNOTATION_DELETED_AT], undefined, profile.metadata.name);
    }
  });
});
