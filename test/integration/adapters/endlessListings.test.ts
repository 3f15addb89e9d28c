/**
 * Listings whose pages misbehave, through the real SDKs at local servers: empty pages that still carry a token (Resource
 * Manager's project search may answer them; Google's client gives up after eleven in a row and calls the search
 * whole), a token given again, a cycle of tokens. Drawn by fast-check for each listing cpsync pages through: EKS
 * ListClusters and ListNodegroups, Resource Manager's project search, ARM's subscriptions and role assignments, ARM's managed clusters of a subscription and Resource Graph's query.
 * A listing whose tokens never repeat is read whole, every page; one whose tokens repeat fails as a listing that would
 * never end, after at most one request more than its pages — never taken as whole, never asked for ever.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import type { ClientSecretCredential } from '@azure/identity';
import { AksSource } from '../../../adapters/aks/AksSource.ts';
import { AksRoleAssignments } from '../../../adapters/aks/roleAssignments.ts';
import { grantDescription } from '../../../adapters/grants/marks.ts';
import type { ClusterGrantPlan } from '../../../core/domain/grants.ts';
import { EksSource } from '../../../adapters/eks/EksSource.ts';
import { GkeSource } from '../../../adapters/gke/GkeSource.ts';
import { EndlessListingError } from '../../../adapters/shared/pages.ts';
import type { ScopeListing } from '../../../core/sync/ports.ts';
import { startFakeAws, type FakeAws } from '../../env/fakes/awsServer.ts';
import {
  armCredential,
  startArmServer,
  type ArmServer,
  type ManagedClusterJson,
} from '../../env/fakes/armServer.ts';
import { startGkeServer, type GkeServer } from '../../env/fakes/gkeServer.ts';
import type { PageScript } from '../../env/fakes/pageScript.ts';
import { HUB_ACCOUNT, HUB_CREDENTIALS } from '../../support/aws.ts';
import { TEST_CA_DATA } from '../../support/certificates.ts';

const REGION = 'eu-west-1';
const SUB = '00000000-1111-2222-3333-e00000000001';

/** A listing's pages as drawn: how many items each holds (leading empty pages first), and a token given again. */
interface Pages {
  sizes: number[];
  /** Page `at` gives page `to`'s token again (`to` ≤ `at`, and never the first page, which has none). */
  repeat?: { at: number; to: number };
}

const pagesArbitrary: fc.Arbitrary<Pages> = fc
  .record({
    leadingEmpty: fc.nat({ max: 14 }),
    sizes: fc.array(fc.nat({ max: 3 }), { minLength: 1, maxLength: 10 }),
    repeat: fc.option(fc.record({ at: fc.nat(), to: fc.nat() }), { nil: undefined }),
  })
  .map(({ leadingEmpty, sizes, repeat }) => {
    const all = [...Array.from({ length: leadingEmpty }, () => 0), ...sizes];
    if (!repeat || all.length < 2) return { sizes: all };
    const at = 1 + (repeat.at % (all.length - 1));
    return { sizes: all, repeat: { at, to: 1 + (repeat.to % at) } };
  });

const itemsOf = (pages: Pages) => pages.sizes.reduce((a, b) => a + b, 0);

/** The script a fake server answers `pages` by (`only` that listing, when named): page i's token is `p<i>`. */
function scriptOf(pages: Pages, only?: Parameters<PageScript>[0]): PageScript {
  const starts = pages.sizes.map((_, i) => pages.sizes.slice(0, i).reduce((a, b) => a + b, 0));
  return (listing, token) => {
    if (only !== undefined && listing !== only) return undefined;
    const index = token === undefined ? 0 : Number(/^p(\d+)$/.exec(token)?.[1] ?? NaN);
    if (!Number.isInteger(index) || index >= pages.sizes.length) return { from: 0, count: 0 };
    const next =
      pages.repeat?.at === index
        ? `p${pages.repeat.to}`
        : index + 1 < pages.sizes.length
          ? `p${index + 1}`
          : undefined;
    return { from: starts[index]!, count: pages.sizes[index]!, ...(next ? { next } : {}) };
  };
}

/** What each property checks of one drawn listing: read whole, or failed as endless after a bounded number of requests. */
function judged(
  pages: Pages,
  names: string[] | EndlessListingError | unknown,
  requests: number,
  held: string[],
) {
  if (pages.repeat) {
    assert.ok(
      names instanceof EndlessListingError,
      `a repeated token must fail the listing: ${String(names)}`,
    );
    assert.match(names.message, /gave a page token it had given before/);
    assert.ok(requests <= pages.sizes.length + 1, `${requests} requests for ${pages.sizes.length} pages`);
  } else {
    assert.ok(Array.isArray(names), `a listing whose tokens never repeat is read whole: ${String(names)}`);
    assert.deepEqual([...names].sort(), [...held].sort());
    assert.equal(requests, pages.sizes.length, 'every page asked once');
  }
}

/** The failure a scope listing names, as the listing error it reports (the reason `InvalidResponse`). */
function listedNames(listing: ScopeListing): string[] | EndlessListingError | unknown {
  if (listing.outcome.kind === 'complete') return listing.clusters.map((c) => c.name);
  const failure = listing.outcome.failure;
  if (failure?.reason === 'InvalidResponse' && /would never end/.test(failure.message))
    return new EndlessListingError(failure.message);
  return new Error(`listing ${listing.outcome.kind}: ${JSON.stringify(failure)}`);
}

/**
 * Named first: twelve empty pages that carry a token before the items (Google's client gave up after eleven), and a
 * last page that gives the first's token again.
 */
const EXAMPLES: Array<[Pages]> = [
  [{ sizes: [...Array.from({ length: 12 }, () => 0), 2, 1] }],
  [{ sizes: [1, 2, 0, 1], repeat: { at: 3, to: 1 } }],
];
const RUNS = { numRuns: 25, examples: EXAMPLES };

describe('listings whose pages misbehave: read whole, or failed as never ending', () => {
  let aws: FakeAws;
  let gke: GkeServer;
  let arm: ArmServer;
  let credential: ClientSecretCredential;
  let google: GkeSource;

  before(async () => {
    [aws, gke, arm] = await Promise.all([
      startFakeAws({ hubAccount: HUB_ACCOUNT }),
      startGkeServer(),
      startArmServer(),
    ]);
    credential = armCredential(arm);
    google = new GkeSource({ endpoint: gke.endpoint, credentials: gke.serviceAccountKey, maxRetries: 0 });
  });
  after(async () => {
    await google?.close();
    await Promise.all([aws?.stop(), gke?.stop(), arm?.stop()]);
  });

  it('EKS ListClusters (a scope listing)', async () => {
    await fc.assert(
      fc.asyncProperty(pagesArbitrary, async (pages) => {
        const names = Array.from({ length: itemsOf(pages) }, (_, i) => `c${String(i).padStart(3, '0')}`);
        aws.clusters.set(
          `${HUB_ACCOUNT}/${REGION}`,
          names.map((name) => ({
            cluster: {
              name,
              arn: `arn:aws:eks:${REGION}:${HUB_ACCOUNT}:cluster/${name}`,
              createdAt: 1_700_000_000,
              version: '1.31',
              endpoint: `https://${name.toUpperCase()}.gr7.${REGION}.eks.amazonaws.com`,
              status: 'ACTIVE',
              certificateAuthority: { data: TEST_CA_DATA },
            },
            nodegroups: [],
          })),
        );
        aws.pages = scriptOf(pages, 'ListClusters');
        const before = aws.calls.get('ListClusters') ?? 0;
        const listing = await new EksSource({
          endpoint: aws.endpoint,
          credentials: async () => HUB_CREDENTIALS,
          hubAccountId: HUB_ACCOUNT,
        }).listScope({ provider: 'eks', account: HUB_ACCOUNT, region: REGION });
        judged(pages, listedNames(listing), (aws.calls.get('ListClusters') ?? 0) - before, names);
      }),
      RUNS,
    );
  });

  it("EKS ListNodegroups (a cluster's node groups, in a scope listing and in one cluster's read)", async () => {
    const eks = new EksSource({
      endpoint: aws.endpoint,
      credentials: async () => HUB_CREDENTIALS,
      hubAccountId: HUB_ACCOUNT,
    });
    const scope = { provider: 'eks' as const, account: HUB_ACCOUNT, region: REGION };
    await fc.assert(
      fc.asyncProperty(pagesArbitrary, fc.boolean(), async (pages, oneCluster) => {
        // Each node group's instance type is its own: the profile's types name the groups that were read.
        const groups = Array.from({ length: itemsOf(pages) }, (_, i) => `ng${String(i).padStart(3, '0')}`);
        aws.clusters.set(`${HUB_ACCOUNT}/${REGION}`, [
          {
            cluster: {
              name: 'grouped',
              arn: `arn:aws:eks:${REGION}:${HUB_ACCOUNT}:cluster/grouped`,
              createdAt: 1_700_000_000,
              version: '1.31',
              endpoint: `https://GROUPED.gr7.${REGION}.eks.amazonaws.com`,
              status: 'ACTIVE',
              certificateAuthority: { data: TEST_CA_DATA },
            },
            nodegroups: groups.map((nodegroupName) => ({
              nodegroupName,
              status: 'ACTIVE',
              instanceTypes: [`${nodegroupName}.large`],
              scalingConfig: { minSize: 1, maxSize: 1, desiredSize: 1 },
            })),
          },
        ]);
        aws.pages = scriptOf(pages, 'ListNodegroups');
        const before = aws.calls.get('ListNodegroups') ?? 0;
        let read: string[] | unknown;
        if (oneCluster)
          read = await eks.getCluster({ scope, name: 'grouped' }).then(
            (cluster) => (cluster?.nodes.instanceTypes ?? []).map((t) => t.replace(/\.large$/, '')),
            (error: unknown) => error,
          );
        else {
          const listing = await eks.listScope(scope);
          const listed = listedNames(listing);
          read = Array.isArray(listed)
            ? listing.clusters[0]!.nodes.instanceTypes.map((t) => t.replace(/\.large$/, ''))
            : listed;
        }
        if (pages.repeat && read instanceof Error && !(read instanceof EndlessListingError))
          // One cluster's read fails with the adapter's own error: judged by its words.
          read = /would never end/.test(read.message) ? new EndlessListingError(read.message) : read;
        judged(pages, read, (aws.calls.get('ListNodegroups') ?? 0) - before, groups);
      }),
      {
        ...RUNS,
        examples: EXAMPLES.flatMap(([pages]) => [
          [pages, false] as [Pages, boolean],
          [pages, true] as [Pages, boolean],
        ]),
      },
    );
  });

  it("Resource Manager's project search (the projects a configuration's search selects)", async () => {
    await fc.assert(
      fc.asyncProperty(pagesArbitrary, async (pages) => {
        const ids = Array.from({ length: itemsOf(pages) }, (_, i) => `acme-p${String(i).padStart(3, '0')}`);
        gke.projects.splice(0, gke.projects.length, ...ids.map((projectId) => ({ projectId, state: 1 })));
        gke.pages = scriptOf(pages);
        const searches = () => gke.requests.filter((r) => r.path === '/v3/projects:search').length;
        const before = searches();
        const found = await google.selectProjects({ search: { query: '' } }).catch((error: unknown) => error);
        judged(pages, found, searches() - before, ids);
      }),
      RUNS,
    );
  });

  it("ARM's subscriptions (the subscriptions a configuration without a list selects, nextLink)", async () => {
    await fc.assert(
      fc.asyncProperty(pagesArbitrary, async (pages) => {
        const ids = Array.from(
          { length: itemsOf(pages) },
          (_, i) => `00000000-1111-2222-3333-${String(i).padStart(12, '0')}`,
        );
        arm.subscriptions.splice(
          0,
          arm.subscriptions.length,
          ...ids.map((subscriptionId) => ({ subscriptionId, displayName: subscriptionId, state: 'Enabled' })),
        );
        arm.pages = scriptOf(pages, 'subscriptions');
        const counted = () =>
          arm.requests.filter((r) => r.method === 'GET' && r.path === '/subscriptions').length;
        const before = counted();
        const source = new AksSource({
          credential,
          endpoint: arm.endpoint,
          fetchCertificateAuthority: false,
        });
        const found = await source.selectSubscriptions({ all: true }).catch((error: unknown) => error);
        judged(pages, found, counted() - before, ids);
      }),
      RUNS,
    );
  });

  it("ARM's role assignments on a cluster (what a sweep of cpsync's grants finds, nextLink)", async () => {
    const cluster = `/subscriptions/${SUB}/resourceGroups/rg-pages/providers/Microsoft.ContainerService/managedClusters/granted`;
    const assignments = new AksRoleAssignments({
      credential,
      endpoint: arm.endpoint,
      manager: 'cpsync',
      cluster: async () => undefined,
    });
    await fc.assert(
      fc.asyncProperty(pagesArbitrary, async (pages) => {
        const names = Array.from(
          { length: itemsOf(pages) },
          (_, i) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
        );
        arm.roleAssignments.clear();
        for (const name of names) {
          const id = `${cluster}/providers/Microsoft.Authorization/roleAssignments/${name}`;
          arm.roleAssignments.set(id.toLowerCase(), {
            id,
            name,
            type: 'Microsoft.Authorization/roleAssignments',
            properties: {
              scope: cluster,
              roleDefinitionId: '7f6c6a51-bcf8-42ba-9220-52d62157d7db',
              principalId: `principal-${name}`,
              description: `${grantDescription('cpsync', 'gone')}`,
            },
          });
        }
        arm.pages = scriptOf(pages, 'roleAssignments');
        const counted = () =>
          arm.requests.filter(
            (r) =>
              r.method === 'GET' && /\/roleAssignments$/i.test(r.path) && !r.query.includes('principalId'),
          ).length;
        const before = counted();
        // Nothing kept: the sweep takes back every grant of cpsync's it finds, so what it found is what it removed.
        const swept = await assignments
          .sweep(
            { providerId: cluster } as ClusterGrantPlan,
            () => false,
            names.map((name) => `principal-${name}`),
          )
          .then((removed) => removed.map((r) => r.identity.replace(/^principal-/, '')))
          .catch((error: unknown) => error);
        judged(pages, swept, counted() - before, names);
        if (pages.repeat)
          assert.equal(arm.roleAssignments.size, names.length, 'nothing taken back on a part');
      }),
      RUNS,
    );
  });

  const managedCluster = (name: string): ManagedClusterJson => ({
    id: `/subscriptions/${SUB}/resourceGroups/rg-pages/providers/Microsoft.ContainerService/managedClusters/${name}`,
    name,
    location: 'westeurope',
    properties: {
      provisioningState: 'Succeeded',
      kubernetesVersion: '1.30',
      currentKubernetesVersion: '1.30.4',
      fqdn: `${name}-dns.hcp.westeurope.azmk8s.io`,
      powerState: { code: 'Running' },
    },
  });

  for (const listing of ['managedClusters', 'resources'] as const)
    it(
      listing === 'managedClusters'
        ? "ARM's managed clusters of a subscription (a scope listing, nextLink)"
        : "Resource Graph's query of managed clusters (a scope listing through the graph, $skipToken)",
      async () => {
        await fc.assert(
          fc.asyncProperty(pagesArbitrary, async (pages) => {
            const names = Array.from(
              { length: itemsOf(pages) },
              (_, i) => `aks${String(i).padStart(3, '0')}`,
            );
            arm.clusters.set(SUB, names.map(managedCluster));
            arm.graph = undefined;
            const script = scriptOf(pages);
            arm.pages = (asked, token) => (asked === listing ? script(asked, token) : undefined);
            const counted = () =>
              arm.requests.filter((r) =>
                listing === 'managedClusters'
                  ? r.method === 'GET' && /\/managedClusters$/i.test(r.path)
                  : /resourcegraph\/resources$/i.test(r.path),
              ).length;
            const before = counted();
            const source = new AksSource({
              credential,
              endpoint: arm.endpoint,
              fetchCertificateAuthority: false,
              ...(listing === 'resources'
                ? { listing: 'resourceGraph' as const, graphSubscriptions: [SUB], graphShareMillis: 0 }
                : {}),
            });
            const scope = { provider: 'aks' as const, account: SUB, region: '*' };
            if (listing === 'managedClusters') {
              judged(pages, listedNames(await source.listScope(scope)), counted() - before, names);
              return;
            }
            // The graph read whole is what the scope lists; a graph that would never end is not read, and the
            // scope is listed through ARM instead (its listing answered as the server pages it by itself).
            const armLists = arm.requests.filter((r) => /\/managedClusters$/i.test(r.path)).length;
            const listed = listedNames(await source.listScope(scope));
            const graphRequests = counted() - before;
            const armListed =
              arm.requests.filter((r) => /\/managedClusters$/i.test(r.path)).length - armLists;
            assert.ok(Array.isArray(listed), `the scope is listed: ${String(listed)}`);
            assert.deepEqual([...listed].sort(), [...names].sort());
            if (pages.repeat) {
              assert.ok(graphRequests <= pages.sizes.length + 1, `${graphRequests} graph requests`);
              assert.ok(armListed > 0, "a graph that would never end leaves the scope to ARM's listing");
            } else {
              assert.equal(graphRequests, pages.sizes.length, 'every page of the graph asked once');
              assert.equal(armListed, 0, "a graph read whole asks ARM's listing nothing");
            }
          }),
          RUNS,
        );
      },
    );
});
