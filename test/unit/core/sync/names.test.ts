import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { MalformedObjectError } from '../../../../core/domain/errors.ts';
import { profileKey, type ClusterProfile } from '../../../../core/domain/model/clusterProfile.ts';
import type { ObservedCluster } from '../../../../core/domain/model/observedCluster.ts';
import { PROFILE_NAMES } from '../../../../core/domain/naming.ts';
import { normalizeAll } from '../../../../core/domain/normalize.ts';
import { chooseNames, nameKey, type NameChoice, type NameRequest } from '../../../../core/sync/names.ts';
import { aksCluster, eksCluster, gkeCluster, NOW } from '../../../support/fixtures.ts';
import { inventoryOptions } from '../../../support/settings.ts';
import { WEAK_NAMES, weakName } from '../../../support/weakNames.ts';

const NS = 'cluster-inventory';
const options = inventoryOptions();

/** The profile of `cluster` as the hub would hold it under `name`. */
function stored(cluster: ObservedCluster, name: string, namespace = NS): ClusterProfile {
  const [profile] = normalizeAll([cluster], { ...options, namespace }, NOW, () => name).profiles;
  return { ...profile!, metadata: { ...profile!.metadata, uid: `uid-${name}`, resourceVersion: '7' } };
}

/** A hub holding `profiles` (and `broken` names, not well-formed), as `chooseNames` asks it. */
function hubOf(profiles: readonly ClusterProfile[], broken: readonly string[] = []) {
  const byKey = new Map(profiles.map((p) => [profileKey(p.metadata), p]));
  const asked: string[] = [];
  return {
    asked,
    get: async (ref: { namespace: string; name: string }) => {
      asked.push(profileKey(ref));
      if (broken.includes(ref.name)) throw new MalformedObjectError(ref.namespace, ref.name, 'has no spec');
      return byKey.get(profileKey(ref));
    },
  };
}

const requests = (clusters: readonly ObservedCluster[], namespace = NS): NameRequest[] =>
  clusters.map((cluster) => ({ cluster, namespace }));

const nameOf = (choice: Awaited<ReturnType<typeof chooseNames>>, cluster: ObservedCluster, ns = NS) =>
  choice.names.get(nameKey(ns, cluster));

// Two clusters whose names collide under the weak scheme: the same display name in two regions.
const east = eksCluster({ name: 'payments', region: 'us-east-1' });
const eastTwin = eksCluster({ name: 'payments', account: '999999999999', region: 'us-east-1' });

describe('choosing profile names', () => {
  for (const order of ['incumbent first', 'newcomer first'] as const)
    it(`keeps the incumbent's name and gives the newcomer a name of its own, whatever the listing's order (${order})`, async () => {
      const incumbent = stored(east, weakName('eks', 'payments'));
      const listing = order === 'incumbent first' ? [east, eastTwin] : [eastTwin, east];
      const choice = await chooseNames({
        requests: requests(listing),
        current: [incumbent],
        malformedHere: [],
        hub: hubOf([incumbent]),
        manager: 'cpsync',
        scheme: WEAK_NAMES,
      });
      assert.equal(nameOf(choice, east), weakName('eks', 'payments'));
      assert.equal(nameOf(choice, eastTwin), PROFILE_NAMES.candidates('cpsync', eastTwin)[0]);
      assert.equal(choice.collisions.length, 1);
      assert.match(
        choice.collisions[0]!,
        new RegExp(`${NS}/${weakName('eks', 'payments')} is the profile of ${east.providerId}`),
      );
      assert.match(choice.collisions[0]!, /is written as/);
    });

  it('gives the name to the incumbent when the incumbent is another scope’s, found on the hub only', async () => {
    const incumbent = stored(eastTwin, weakName('eks', 'payments'));
    const hub = hubOf([incumbent]);
    const choice = await chooseNames({
      requests: requests([east]),
      current: [],
      malformedHere: [],
      hub,
      manager: 'cpsync',
      scheme: WEAK_NAMES,
    });
    assert.equal(nameOf(choice, east), PROFILE_NAMES.candidates('cpsync', east)[0]);
    assert.deepEqual(hub.asked, [
      `${NS}/${weakName('eks', 'payments')}`,
      `${NS}/${PROFILE_NAMES.candidates('cpsync', east)[0]}`,
    ]);
  });

  it('settles two newcomers by their ids, never by the listing order', async () => {
    const results = [];
    for (const listing of [
      [east, eastTwin],
      [eastTwin, east],
    ]) {
      const choice = await chooseNames({
        requests: requests(listing),
        current: [],
        malformedHere: [],
        hub: hubOf([]),
        manager: 'cpsync',
        scheme: WEAK_NAMES,
      });
      results.push([nameOf(choice, east), nameOf(choice, eastTwin)]);
    }
    assert.deepEqual(results[0], results[1]);
    const first = [east, eastTwin].sort((a, b) => a.providerId.localeCompare(b.providerId))[0]!;
    assert.equal(results[0]![first === east ? 0 : 1], weakName('eks', 'payments'));
  });

  it('keeps a name an earlier version gave (40 bits), with no look at the hub', async () => {
    const [legacy] = PROFILE_NAMES.legacy('cpsync', east);
    const hub = hubOf([]);
    const choice = await chooseNames({
      requests: requests([east]),
      current: [stored(east, legacy!)],
      malformedHere: [],
      hub,
      manager: 'cpsync',
      scheme: PROFILE_NAMES,
    });
    assert.equal(nameOf(choice, east), legacy);
    assert.deepEqual(hub.asked, []);
    assert.deepEqual(choice.collisions, []);
  });

  it('keeps the name an earlier version gave an Azure cluster whose id holds a non-ASCII capital (it lower-cased the whole id); the twin it shared that id with gets one of its own', async () => {
    const [upper, lower] = ['Équipe', 'équipe'].map((group) => aksCluster({ resourceGroup: group }));
    // As earlier versions named it: the slug and 64 bits of the hash of the id lower-cased whole.
    const hash = createHash('sha256').update(upper!.providerId.toLowerCase()).digest('hex').slice(0, 16);
    const earlier = `cpsync-aks-web-${hash}`;
    assert.ok(
      !PROFILE_NAMES.candidates('cpsync', upper!).includes(earlier),
      "not a name today's version gives",
    );
    for (const listed of [[upper!], [upper!, lower!], [lower!, upper!]]) {
      const hub = hubOf([]);
      const choice = await chooseNames({
        requests: requests(listed),
        current: [stored(upper!, earlier)],
        malformedHere: [],
        hub,
        manager: 'cpsync',
        scheme: PROFILE_NAMES,
      });
      assert.equal(nameOf(choice, upper!), earlier, 'kept: the cluster is not renamed');
      // Today's first name of the twin is that very name (its id, folded as today, is the other's lowered whole):
      // a collision, which it yields, taking its next.
      if (listed.includes(lower!)) {
        assert.equal(PROFILE_NAMES.candidates('cpsync', lower!)[0], earlier);
        assert.equal(nameOf(choice, lower!), PROFILE_NAMES.candidates('cpsync', lower!)[1], 'its next name');
      }
      assert.equal(choice.collisions.length, listed.includes(lower!) ? 1 : 0, 'a collision, said as one');
    }
  });

  it('never keeps a name the hub holds for the cluster unless it is one of the cluster’s own names', async () => {
    const choice = await chooseNames({
      requests: requests([east]),
      current: [stored(east, 'cpsync-eks-chosen-by-someone')],
      malformedHere: [],
      hub: hubOf([]),
      manager: 'cpsync',
      scheme: PROFILE_NAMES,
    });
    assert.equal(nameOf(choice, east), PROFILE_NAMES.candidates('cpsync', east)[0]);
  });

  it('leaves a cluster unwritten where a profile of another manager holds its name, never writing it under another, and says so', async () => {
    for (const scheme of [WEAK_NAMES, PROFILE_NAMES]) {
      const name = scheme.candidates('cpsync', eastTwin)[0]!;
      const theirs = stored(eastTwin, name);
      theirs.metadata.labels!['x-k8s.io/cluster-manager'] = 'other';
      theirs.spec = { ...theirs.spec, clusterManager: { name: 'other' } };
      const choice = await chooseNames({
        requests: requests([eastTwin]),
        current: [],
        malformedHere: [],
        hub: hubOf([theirs]),
        manager: 'cpsync',
        scheme,
      });
      assert.equal(nameOf(choice, eastTwin), undefined);
      assert.deepEqual(choice.collisions, []);
      assert.deepEqual(
        choice.skipped.map((s) => [s.name, s.reason]),
        [[name, 'NameUnavailable']],
      );
      assert.equal(
        choice.skipped[0]!.detail,
        `${NS}/${name} is held by a profile of another manager ("other"), which that name was not made for: ${eastTwin.providerId} is not written under another name in ${NS}; it is written there once ${NS}/${name} is free`,
      );
    }
  });

  it('leaves a cluster unwritten where a profile of cpsync not made for that name holds it (an id whose names it is not, no id, no provider)', async () => {
    const name = PROFILE_NAMES.candidates('cpsync', east)[0]!;
    const forged = stored(eastTwin, name);
    const noId = stored(eastTwin, name);
    delete noId.metadata.annotations!['cpsync.io/provider-id'];
    const noProvider = stored(eastTwin, name);
    noProvider.metadata.annotations!['cpsync.io/provider-id'] = east.providerId.replace('payments', 'other');
    delete noProvider.metadata.labels!['cpsync.io/provider'];
    for (const holder of [forged, noId, noProvider])
      for (const where of ['in the scope', 'found on the hub'] as const) {
        const choice = await chooseNames({
          requests: requests([east]),
          current: where === 'in the scope' ? [holder] : [],
          malformedHere: [],
          hub: hubOf([holder]),
          manager: 'cpsync',
          scheme: PROFILE_NAMES,
        });
        assert.equal(nameOf(choice, east), undefined, where);
        assert.deepEqual(
          choice.skipped.map((s) => [s.name, s.reason]),
          [[name, 'NameUnavailable']],
        );
        assert.match(choice.skipped[0]!.detail, /which that name was not made for/);
      }
  });

  it("updates its own profile found by its name outside the scope's selection", async () => {
    const own = stored(eastTwin, PROFILE_NAMES.candidates('cpsync', eastTwin)[0]!);
    const choice = await chooseNames({
      requests: requests([eastTwin]),
      current: [],
      malformedHere: [],
      hub: hubOf([own]),
      manager: 'cpsync',
      scheme: PROFILE_NAMES,
    });
    assert.equal(nameOf(choice, eastTwin), own.metadata.name);
    assert.deepEqual(choice.found, [own]);
    assert.deepEqual(choice.skipped, []);
  });

  it('leaves a cluster whose name holds a malformed object unwritten there, and names the object', async () => {
    const choice = await chooseNames({
      requests: requests([east]),
      current: [],
      malformedHere: [],
      hub: hubOf([], [weakName('eks', 'payments')]),
      manager: 'cpsync',
      scheme: WEAK_NAMES,
    });
    assert.equal(nameOf(choice, east), undefined);
    assert.deepEqual(
      choice.skipped.map((s) => s.reason),
      ['Malformed'],
    );
    assert.deepEqual(
      choice.malformed.map((m) => m.name),
      [weakName('eks', 'payments')],
    );
  });

  it('gives no name when every name the cluster may have is held by clusters it was made for too, and says why', async () => {
    // A scheme whose names say nothing of the id (WEAK_NAMES): any of cpsync's clusters may hold any name.
    const names = WEAK_NAMES.candidates('cpsync', east);
    const squatters = names.map((name, i) => stored(gkeCluster({ name: `squat-${i}` }), name));
    const choice = await chooseNames({
      requests: requests([east]),
      current: [],
      malformedHere: [],
      hub: hubOf(squatters),
      manager: 'cpsync',
      scheme: WEAK_NAMES,
    });
    assert.equal(nameOf(choice, east), undefined);
    assert.equal(choice.skipped[0]!.reason, 'NameUnavailable');
    assert.match(choice.skipped[0]!.detail, /has no name free/);
  });

  it('names the cluster per namespace: a name taken in one namespace leaves its copies elsewhere their first name', async () => {
    const other = 'argocd';
    const squatter = stored(eastTwin, weakName('eks', 'payments'), other);
    const choice = await chooseNames({
      requests: [...requests([east]), ...requests([east], other)],
      current: [],
      malformedHere: [],
      hub: hubOf([squatter]),
      manager: 'cpsync',
      scheme: WEAK_NAMES,
    });
    assert.equal(nameOf(choice, east), weakName('eks', 'payments'));
    assert.equal(nameOf(choice, east, other), PROFILE_NAMES.candidates('cpsync', east)[0]);
  });

  it('never gives one name twice when two scopes of one run name their newcomers at once, however their hub reads interleave', async () => {
    for (const releaseFirst of [0, 1]) {
      // Every hub read waits until the test lets it answer: both scopes ask before either hears back.
      const gates: Array<() => void> = [];
      const gated = {
        get: (_ref: { namespace: string; name: string }) =>
          new Promise<undefined>((resolve) => gates.push(() => resolve(undefined))),
      };
      const claims = new Map<string, string>();
      const choose = (cluster: ObservedCluster) =>
        chooseNames({
          requests: requests([cluster]),
          current: [],
          malformedHere: [],
          hub: gated,
          manager: 'cpsync',
          scheme: WEAK_NAMES,
          claims,
        });
      const both = [choose(east), choose(eastTwin)];
      while (gates.length < 2) await new Promise((resolve) => setImmediate(resolve));
      gates.splice(releaseFirst, 1)[0]!();
      gates.splice(0, 1)[0]!();
      const [a, b] = (await Promise.all(both)) as [NameChoice, NameChoice];
      assert.notEqual(nameOf(a, east), nameOf(b, eastTwin));
      assert.deepEqual(
        [nameOf(a, east), nameOf(b, eastTwin)],
        [weakName('eks', 'payments'), PROFILE_NAMES.candidates('cpsync', eastTwin)[0]],
        'the first to ask holds the name while the hub answers',
      );
      assert.equal(b.collisions.length, 1);
    }
  });

  it('never gives one name to two clusters, keeps every incumbent’s name and ignores the listing’s order (property)', async () => {
    const displayNames = fc.constantFrom('payments', 'edge', 'batch');
    const clusterArb = fc
      .record({
        name: displayNames,
        account: fc.constantFrom('111111111111', '222222222222', '333333333333'),
        region: fc.constantFrom('us-east-1', 'eu-west-1'),
        incumbent: fc.boolean(),
      })
      .map(({ incumbent, ...fields }) => ({ cluster: eksCluster(fields), incumbent }));
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(clusterArb, { selector: (c) => c.cluster.providerId, minLength: 1, maxLength: 8 }),
        fc.infiniteStream(fc.nat()),
        async (listed, shuffle) => {
          // Incumbents hold the names a first run gave them (the hub is the outcome of such a run).
          const first = await chooseNames({
            requests: requests(listed.filter((c) => c.incumbent).map((c) => c.cluster)),
            current: [],
            malformedHere: [],
            hub: hubOf([]),
            manager: 'cpsync',
            scheme: WEAK_NAMES,
          });
          const hubProfiles = listed
            .filter((c) => c.incumbent)
            .map((c) => stored(c.cluster, nameOf(first, c.cluster)!));
          const order = [...listed.map((c) => c.cluster)];
          const steps = shuffle.take(order.length);
          for (let i = order.length - 1; i > 0; i--) {
            const j = steps.next().value! % (i + 1);
            [order[i], order[j]] = [order[j]!, order[i]!];
          }
          const run = (clusters: ObservedCluster[]) =>
            chooseNames({
              requests: requests(clusters),
              current: hubProfiles,
              malformedHere: [],
              hub: hubOf(hubProfiles),
              manager: 'cpsync',
              scheme: WEAK_NAMES,
            });
          const a = await run(listed.map((c) => c.cluster));
          const b = await run(order);
          assert.deepEqual(new Map([...a.names].sort()), new Map([...b.names].sort()), 'order-free');
          const given = [...a.names.values()];
          assert.equal(new Set(given).size, given.length, 'one name, one cluster');
          for (const profile of hubProfiles) {
            const cluster = listed.find(
              (c) => c.cluster.providerId === profile.metadata.annotations!['cpsync.io/provider-id'],
            )!.cluster;
            assert.equal(nameOf(a, cluster), profile.metadata.name, 'an incumbent keeps its name');
          }
          assert.equal(a.names.size, listed.length, 'every cluster is named');
        },
      ),
      { numRuns: 200 },
    );
  });

  it('never moves a cluster to another name because of what the hub holds under its own: whoever holds it, in any spelling of a holder, the cluster gets its first name or none (property)', async () => {
    const clusterArb = fc
      .record({
        name: fc.constantFrom('payments', 'edge', 'batch'),
        account: fc.constantFrom('111111111111', '222222222222'),
        region: fc.constantFrom('us-east-1', 'eu-west-1'),
      })
      .map((fields) => eksCluster(fields));
    /** What may hold a cluster's first name on the hub, as anyone allowed to write profiles there can make it. */
    const holderArb = fc.record({
      kind: fc.constantFrom(
        'its own profile',
        'another manager',
        'no manager',
        "cpsync's, of another cluster",
        "cpsync's, of another provider's id",
        "cpsync's, no id",
        "cpsync's, no provider label",
        'malformed',
      ),
      other: clusterArb,
      inScope: fc.boolean(),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(fc.record({ cluster: clusterArb, holder: fc.option(holderArb) }), {
          selector: (c) => c.cluster.providerId,
          minLength: 1,
          maxLength: 6,
        }),
        async (listed) => {
          const profiles: ClusterProfile[] = [];
          const broken: string[] = [];
          const current: ClusterProfile[] = [];
          for (const { cluster, holder } of listed) {
            if (!holder) continue;
            const name = PROFILE_NAMES.candidates('cpsync', cluster)[0]!;
            if (holder.kind === 'malformed') {
              broken.push(name);
              continue;
            }
            const made =
              holder.kind === 'its own profile'
                ? stored(cluster, name)
                : holder.kind === "cpsync's, of another provider's id"
                  ? stored(gkeCluster({ name: holder.other.name }), name)
                  : stored(
                      holder.other.providerId === cluster.providerId
                        ? eksCluster({ name: 'elsewhere', account: '999999999999' })
                        : holder.other,
                      name,
                    );
            if (holder.kind === 'another manager' || holder.kind === 'no manager') {
              delete made.metadata.labels!['x-k8s.io/cluster-manager'];
              made.spec = {
                ...made.spec,
                clusterManager: { name: holder.kind === 'no manager' ? '' : 'other' },
              };
              if (holder.kind === 'another manager')
                made.metadata.labels!['x-k8s.io/cluster-manager'] = 'other';
            }
            if (holder.kind === "cpsync's, no id") delete made.metadata.annotations!['cpsync.io/provider-id'];
            if (holder.kind === "cpsync's, no provider label")
              delete made.metadata.labels!['cpsync.io/provider'];
            profiles.push(made);
            if (holder.inScope && holder.kind !== 'another manager' && holder.kind !== 'no manager')
              current.push(made);
          }
          const choice = await chooseNames({
            requests: requests(listed.map((c) => c.cluster)),
            current,
            malformedHere: [],
            hub: hubOf(profiles, broken),
            manager: 'cpsync',
            scheme: PROFILE_NAMES,
          });
          for (const { cluster, holder } of listed) {
            const first = PROFILE_NAMES.candidates('cpsync', cluster)[0]!;
            const given = nameOf(choice, cluster);
            if (!holder || holder.kind === 'its own profile')
              assert.equal(given, first, `${cluster.providerId}: its first name`);
            else {
              assert.equal(given, undefined, `${cluster.providerId}: held (${holder.kind}), written nowhere`);
              const skipped = choice.skipped.find((s) => s.name === first);
              assert.equal(skipped?.reason, holder.kind === 'malformed' ? 'Malformed' : 'NameUnavailable');
            }
          }
          assert.deepEqual(choice.collisions, [], 'no cluster took a name other than its first');
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('choosing profile names: an earlier version’s fold of case', () => {
  /** Letters beyond ASCII that `toLowerCase()` (an earlier version's fold of Azure ids) makes an ASCII letter. */
  const folding: Array<[string, string]> = [];
  for (let point = 0x80; point <= 0x10ffff; point++) {
    if (point >= 0xd800 && point <= 0xdfff) continue;
    const letter = String.fromCodePoint(point);
    if (/^[a-z]$/.test(letter.toLowerCase())) folding.push([letter.toLowerCase(), letter]);
  }
  const part = fc.stringMatching(/^[a-z0-9-]{0,10}$/);

  it('yields a newcomer’s name to a profile that fold made for it only when the cloud listed that profile’s cluster too', async () => {
    assert.ok(folding.length > 0, 'letters found in Unicode’s tables');
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...folding),
        part,
        part,
        fc.stringMatching(/^[a-z][a-z0-9-]{0,10}$/),
        fc.boolean(),
        fc.boolean(),
        async ([ascii, wide], before, after, name, upper, onHubOnly) => {
          // Two resource groups ARM tells apart (`k` and KELVIN SIGN), and an earlier version named alike.
          const newcomer = aksCluster({
            name,
            resourceGroup: `${before}${upper ? ascii.toUpperCase() : ascii}${after}`,
          });
          const twin = aksCluster({ name, resourceGroup: `${before}${wide}${after}` });
          const [first, next] = PROFILE_NAMES.candidates('cpsync', newcomer);
          // The twin's profile at the newcomer's first name, as that version wrote it (or as anyone may write it
          // where the hub's admission policy is not in force).
          const holder = stored(twin, first!);
          const choose = (listing: ObservedCluster[]) =>
            chooseNames({
              requests: requests(listing),
              current: onHubOnly ? [] : [holder],
              malformedHere: [],
              hub: hubOf([holder]),
              manager: 'cpsync',
              scheme: PROFILE_NAMES,
            });
          // Listed alone: the profile is no proof of a collision; the newcomer is left unwritten, never renamed.
          const alone = await choose([newcomer]);
          assert.equal(nameOf(alone, newcomer), undefined);
          assert.deepEqual(
            alone.skipped.map((s) => [s.name, s.reason]),
            [[first, 'NameUnavailable']],
          );
          // Listed with the twin (a collision of the cloud's own clusters): the twin keeps its name (its profile in the
          // scope's selection), the newcomer takes its next.
          const both = await choose([newcomer, twin]);
          if (!onHubOnly) assert.equal(nameOf(both, twin), first);
          assert.equal(nameOf(both, newcomer), next);
        },
      ),
      { numRuns: 200 },
    );
  });
});
