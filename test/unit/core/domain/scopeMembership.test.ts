/**
 * Whose a profile is, when two scopes' labels are one. A scope selects its profiles by label values, and a label
 * value is cut to 63 characters with other characters made `-` (`labelValue`): two domain-scoped GCP projects that
 * differ past the cut, or whose `:` falls where the other has `-`, select each other's profiles. Only the
 * profile's provider id tells whose it is, and only its own scope's listing may mark it missing or delete it.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { labelValue, scopeSelector } from '../../../../core/domain/labels.ts';
import { ANNOTATION_PROVIDER_ID } from '../../../../core/domain/constants.ts';
import type { ClusterProfile } from '../../../../core/domain/model/clusterProfile.ts';
import type { ObservedCluster } from '../../../../core/domain/model/observedCluster.ts';
import { ALL_REGIONS, type Scope } from '../../../../core/domain/model/scope.ts';
import { normalize } from '../../../../core/domain/normalize.ts';
import { plan } from '../../../../core/domain/plan.ts';
import { canonicalScope, placeOfProviderId, providerIdInScope } from '../../../../core/domain/scopes.ts';
import { isEksClusterArn } from '../../../../adapters/eks/mapCluster.ts';
import { isGkeSelfLink } from '../../../../adapters/gke/mapCluster.ts';
import { isAksResourceId } from '../../../../adapters/aks/mapCluster.ts';
import { confirmAbsences } from '../../../../core/sync/absences.ts';
import { inventoryOptions } from '../../../support/settings.ts';
import { aksCluster, eksCluster, gkeCluster, LATER, NOW } from '../../../support/fixtures.ts';

const options = inventoryOptions();
const SEED = Number(process.env.CPSYNC_PROPERTY_SEED ?? 20261202);

const letter = fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz');
const alnum = fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz0123456789');
const word = (min: number, max: number) =>
  fc.array(alnum, { minLength: min, maxLength: max }).map((chars) => chars.join(''));
/** A GCP project id: a letter, then letters, digits and hyphens, 6 to 30 characters, not ending in a hyphen. */
const projectId = fc
  .tuple(
    letter,
    fc.array(fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz0123456789-'), { maxLength: 27 }),
    alnum,
  )
  .map(([first, middle, last]) => `${first}${middle.join('')}${last}`)
  .filter((id) => id.length >= 6);
/** A domain: labels joined by dots (a hyphen inside some). */
const domain = fc
  .array(fc.tuple(word(1, 12), fc.option(word(1, 8), { nil: undefined })), { minLength: 1, maxLength: 7 })
  .map((labels) => labels.map(([a, b]) => (b ? `${a}-${b}` : a)).join('.'));

/** Two domain-scoped projects whose label values are one: they differ only past the 63rd character. */
const cutPair = fc.tuple(domain, projectId, projectId).map(([d, x, y]) => {
  const first = `${d}:${x}`;
  // The second shares all of the first up to the cut and differs after it (as far as a project id may).
  const kept = Math.max(0, Math.min(x.length, 63 - d.length - 1));
  return [first, `${d}:${x.slice(0, kept)}${y}`.slice(0, d.length + 1 + 30)] as const;
});
/** Two projects where one's `:` stands where the other has a `-`: `d:q-rest` and `d-q:rest`. */
const colonPair = fc
  .tuple(domain, letter, word(0, 4), projectId)
  .map(([d, q0, q, rest]) => [`${d}:${q0}${q}-${rest}`, `${d}-${q0}${q}:${rest}`] as const);

/** Distinct valid GKE scopes (project-wide, or of one region) whose selectors select the same profiles. */
const collidingGkeScopes = fc
  .tuple(fc.oneof(cutPair, colonPair), fc.constantFrom(ALL_REGIONS, 'europe-west1'))
  .map(([[a, b], region]): [Scope, Scope] | undefined => {
    try {
      return [
        canonicalScope({ provider: 'gke', account: a, region }),
        canonicalScope({ provider: 'gke', account: b, region }),
      ];
    } catch {
      return undefined; // one of the two is no valid project id (too long a project part, say)
    }
  })
  .filter(
    (pair): pair is [Scope, Scope] =>
      pair !== undefined &&
      pair[0].account !== pair[1].account &&
      JSON.stringify(scopeSelector('cpsync', pair[0])) === JSON.stringify(scopeSelector('cpsync', pair[1])),
  );

function stored(profile: ClusterProfile, version: number): ClusterProfile {
  return { ...profile, metadata: { ...profile.metadata, resourceVersion: String(version) } };
}

const clusterOf = (scope: Scope, name: string, zone?: string): ObservedCluster =>
  gkeCluster({
    name,
    account: scope.account,
    region: 'europe-west1',
    ...(zone ? { zone } : {}),
  });

describe('scope membership', () => {
  it('collision generators do make colliding labels (the precondition the property rests on)', () => {
    const a = canonicalScope({
      provider: 'gke',
      account: `${'engineering.'.repeat(4)}example.com:payments-prod-1`,
    });
    const b = canonicalScope({
      provider: 'gke',
      account: `${'engineering.'.repeat(4)}example.com:payments-prod-2`,
    });
    assert.equal(labelValue(a.account), labelValue(b.account));
    assert.notEqual(a.account, b.account);
    fc.assert(
      fc.property(collidingGkeScopes, ([x, y]) => labelValue(x.account) === labelValue(y.account)),
      { seed: SEED, numRuns: 50 },
    );
  });

  it('a complete listing never marks missing nor deletes a profile of another scope its labels select; its own it does', () => {
    fc.assert(
      fc.property(
        collidingGkeScopes,
        fc.integer({ min: 1, max: 3 }),
        fc.array(fc.boolean(), { minLength: 1, maxLength: 4 }),
        fc.array(fc.constantFrom(undefined, 'europe-west1-b', 'europe-west1-c'), {
          minLength: 1,
          maxLength: 3,
        }),
        ([mine, theirs], grace, listedOfMine, theirZones) => {
          const own = listedOfMine.map((_, i) => clusterOf(mine, `own-${i}`));
          const others = theirZones.map((zone, i) => clusterOf(theirs, `other-${i}`, zone));
          let version = 100;
          const current = [...own, ...others].map((c) => stored(normalize(c, options, NOW), version++));
          const listed = own.filter((_, i) => listedOfMine[i]);
          const result = plan({
            outcome: { scope: mine, kind: 'complete' },
            desired: listed.map((c) => normalize(c, options, LATER)),
            current,
            manager: 'cpsync',
            deletionGraceListings: grace,
            missedBefore: new Map(),
            accessProviderNames: Object.values(options.accessProviderNames),
            now: LATER,
          });
          const touched = [
            ...result.deletes.map((d) => d.current),
            ...result.updates.map((u) => u.profile),
          ].map((p) => p.metadata.annotations?.[ANNOTATION_PROVIDER_ID] ?? '');
          const theirIds = new Set(others.map((c) => c.providerId));
          assert.deepEqual(
            touched.filter((id) => theirIds.has(id)),
            [],
            `${mine.account}'s listing touched ${theirs.account}'s profiles`,
          );
          // Control: each of its own clusters it did not list is marked missing, or deleted at the grace.
          const unlisted = own.filter((_, i) => !listedOfMine[i]).map((c) => c.providerId);
          for (const id of unlisted) assert.ok(touched.includes(id), `its own unlisted ${id} is acted on`);
        },
      ),
      { seed: SEED, numRuns: 150 },
    );
  });

  it('a lagging listing asks the cloud only about its own clusters, never about another scope its labels select', async () => {
    await fc.assert(
      fc.asyncProperty(collidingGkeScopes, async ([mine, theirs]) => {
        const current = [clusterOf(mine, 'own'), clusterOf(theirs, 'other')].map((c) =>
          normalize(c, options, NOW),
        );
        const asked: string[] = [];
        const confirmed = await confirmAbsences(
          {
            outcome: { scope: mine, kind: 'complete' },
            clusters: [],
            confirmAbsent: async (ids) => {
              asked.push(...ids);
              return { present: [], gone: [...ids], unknown: [] };
            },
          },
          current,
        );
        assert.deepEqual(asked, [clusterOf(mine, 'own').providerId]);
        assert.deepEqual(confirmed.gone, asked);
      }),
      { seed: SEED, numRuns: 50 },
    );
  });

  it("agrees with each adapter's own test of a cluster's id: in its scope, and in no other account's or region's", () => {
    const eksRegion = fc.constantFrom('us-east-1', 'eu-west-1', 'cn-north-1', 'us-gov-west-1');
    const eksName = fc
      .tuple(fc.constantFrom(...'abcXYZ019'), fc.array(fc.constantFrom(...'abcXYZ019-_'), { maxLength: 20 }))
      .map(([first, rest]) => `${first}${rest.join('')}`);
    const partitionOf = (region: string) =>
      region.startsWith('cn-') ? 'aws-cn' : region.startsWith('us-gov-') ? 'aws-us-gov' : 'aws';
    const account12 = fc
      .array(fc.constantFrom(...'0123456789'), { minLength: 12, maxLength: 12 })
      .map((d) => d.join(''));
    fc.assert(
      fc.property(
        account12,
        account12,
        eksRegion,
        eksRegion,
        eksName,
        (account, other, region, elsewhere, name) => {
          const arn = `arn:${partitionOf(region)}:eks:${region}:${account}:cluster/${name}`;
          assert.ok(isEksClusterArn(arn, account, region, name));
          assert.ok(providerIdInScope(arn, canonicalScope({ provider: 'eks', account, region })));
          assert.equal(
            providerIdInScope(arn, canonicalScope({ provider: 'eks', account: other, region: elsewhere })),
            other === account && elsewhere === region,
          );
        },
      ),
      { seed: SEED, numRuns: 200 },
    );

    const gkeRegion = fc.constantFrom('europe-west1', 'us-central1', 'asia-south2');
    fc.assert(
      fc.property(
        fc.oneof(
          projectId,
          fc.tuple(domain, projectId).map(([d, p]) => `${d}:${p}`),
        ),
        projectId,
        gkeRegion,
        gkeRegion,
        fc.option(fc.constantFrom('a', 'b', 'c'), { nil: undefined }),
        word(1, 20),
        (project, other, region, elsewhere, zone, name) => {
          const location = zone ? `${region}-${zone}` : region;
          const kind = zone ? 'zones' : 'locations';
          const link = `https://container.googleapis.com/v1/projects/${project}/${kind}/${location}/clusters/${name}`;
          assert.ok(isGkeSelfLink(link, project, location, name));
          let scope: Scope;
          try {
            scope = canonicalScope({ provider: 'gke', account: project, region });
          } catch {
            return; // a domain-scoped id the configuration would refuse
          }
          assert.ok(providerIdInScope(link, scope));
          assert.ok(providerIdInScope(link, { ...scope, region: ALL_REGIONS }));
          assert.equal(providerIdInScope(link, { ...scope, region: elsewhere }), elsewhere === region);
          assert.equal(providerIdInScope(link, { ...scope, account: other }), other === project);
        },
      ),
      { seed: SEED, numRuns: 200 },
    );

    const hex = (n: number) =>
      fc.array(fc.constantFrom(...'0123456789abcdef'), { minLength: n, maxLength: n }).map((d) => d.join(''));
    const guid = fc.tuple(hex(8), hex(4), hex(4), hex(4), hex(12)).map((parts) => parts.join('-'));
    const recase = (text: string, upper: boolean[]) =>
      [...text].map((c, i) => (upper[i % upper.length] ? c.toUpperCase() : c)).join('');
    fc.assert(
      fc.property(
        guid,
        guid,
        word(1, 20),
        word(1, 20),
        fc.array(fc.boolean(), { minLength: 1, maxLength: 9 }),
        (subscription, other, group, name, upper) => {
          const id = recase(
            `/subscriptions/${subscription}/resourceGroups/${group}/providers/Microsoft.ContainerService/managedClusters/${name}`,
            upper,
          );
          assert.ok(isAksResourceId(id, subscription, group, name));
          const scope = canonicalScope({ provider: 'aks', account: subscription, region: 'westeurope' });
          assert.ok(providerIdInScope(id, scope));
          assert.equal(
            providerIdInScope(id, canonicalScope({ provider: 'aks', account: other })),
            other === subscription,
          );
        },
      ),
      { seed: SEED, numRuns: 200 },
    );
  });

  it('places no id that is not one of the provider’s (another cloud’s, a bare name, a path beside it)', () => {
    const ids = [eksCluster().providerId, gkeCluster().providerId, aksCluster().providerId];
    for (const provider of ['eks', 'gke', 'aks'] as const)
      for (const id of ids)
        assert.equal(
          placeOfProviderId(provider, id) !== undefined,
          id.includes(
            provider === 'eks' ? 'arn:aws' : provider === 'gke' ? 'container.googleapis' : 'ContainerService',
          ),
        );
    assert.equal(placeOfProviderId('eks', 'prod'), undefined);
    assert.equal(placeOfProviderId('gke', `${gkeCluster().providerId}/nodePools/default`), undefined);
    // GKE spells projects and locations in lower case: one spelled otherwise is no cluster of GKE's.
    assert.equal(
      placeOfProviderId('gke', gkeCluster().providerId.replace('acme-data', 'ACME-DATA')),
      undefined,
    );
    assert.equal(
      placeOfProviderId('gke', gkeCluster().providerId.replace('europe-west1', 'Europe-West1')),
      undefined,
    );
    assert.equal(placeOfProviderId('aks', `${aksCluster().providerId}/agentPools/system`), undefined);
  });
});
