/**
 * A run's look for orphans lists labels, and reads whole only the profiles of scopes it finds orphaned.
 * Whatever the inventory, the configured scopes and the providers whose scopes could be told (fast-check makes
 * them: three clouds, several accounts and regions, two inventory namespaces, profiles of another manager, and,
 * in the file hub, hand-made files that are no profile), `inventoryOrphans` finds exactly what `findOrphans`
 * finds in the whole inventory as `inventoryProfiles` reads it, on the file hub (with `listLabels` and without) and
 * on a real kube-apiserver.
 * And where no scope is orphaned, no profile is read whole: on the file hub no `list` or `get` reaches it,
 * and on the kube-apiserver the lists' response bytes, as the server counts them, are those of metadata only.
 */
import assert from 'node:assert/strict';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { FileHub } from '../../adapters/hub/FileHub.ts';
import { KubernetesHub } from '../../adapters/hub/KubernetesHub.ts';
import {
  LABEL_ACCOUNT,
  LABEL_CLUSTER_MANAGER,
  LABEL_PROVIDER,
  LABEL_REGION,
} from '../../core/domain/constants.ts';
import { normalize } from '../../core/domain/normalize.ts';
import type { InventoryOptions } from '../../core/domain/options.ts';
import { findOrphans } from '../../core/domain/orphans.ts';
import { PROVIDERS, type ObservedCluster, type Provider } from '../../core/domain/model/observedCluster.ts';
import { ALL_REGIONS, type Scope } from '../../core/domain/model/scope.ts';
import { inventoryOrphans, inventoryProfiles, orphanReport } from '../../core/sync/inventory.ts';
import type { Hub } from '../../core/sync/ports.ts';
import type { HubState } from '../env/hub.ts';
import { aksCluster, eksCluster, gkeCluster } from '../support/fixtures.ts';
import { adminKubeConfig, localHub, uniqueNamespace } from '../support/hub.ts';
import { listedByApiserver } from '../support/hubCounts.ts';
import { inventoryOptions } from '../support/settings.ts';
import { temporaryDirectory } from '../support/tmp.ts';

const SEED = Number(process.env.CPSYNC_PROPERTY_SEED ?? 20261129);
const NOW = '2026-11-29T00:00:00Z';

const ACCOUNTS: Record<Provider, readonly string[]> = {
  eks: ['111111111111', '222222222222'],
  gke: ['proj-a', 'proj-b'],
  aks: ['00000000-0000-0000-0000-00000000000a', '00000000-0000-0000-0000-00000000000b'],
};
const REGIONS: Record<Provider, readonly string[]> = {
  eks: ['us-east-1', 'eu-west-1'],
  gke: ['europe-west1', 'us-central1'],
  aks: ['westeurope', 'eastus'],
};
const MAKERS = { eks: eksCluster, gke: gkeCluster, aks: aksCluster };

interface Planted {
  provider: Provider;
  account: number;
  region: number;
  name: number;
  /** Written by another manager. */
  another: boolean;
  /** In the second inventory namespace. */
  second: boolean;
}

interface Case {
  planted: Planted[];
  /** Scopes configured: [provider, account, region or all]. */
  configured: Array<[Provider, number, number | 'all']>;
  determined: Provider[];
  /** File hub only: hand-made files that are no profile, labelled as one of a scope. */
  junk: Array<[Provider, number, number]>;
}

const provider = fc.constantFrom(...PROVIDERS);
const arbitraryCase: fc.Arbitrary<Case> = fc.record({
  planted: fc.array(
    fc.record({
      provider,
      account: fc.nat(1),
      region: fc.nat(1),
      name: fc.nat(3),
      another: fc.nat(5).map((n) => n === 0),
      second: fc.boolean(),
    }),
    { maxLength: 14 },
  ),
  configured: fc.array(fc.tuple(provider, fc.nat(1), fc.oneof(fc.nat(1), fc.constant('all' as const))), {
    maxLength: 8,
  }),
  determined: fc.subarray([...PROVIDERS]),
  junk: fc.array(fc.tuple(provider, fc.nat(1), fc.nat(1)), { maxLength: 2 }),
});

function cluster(p: Planted): ObservedCluster {
  const account = ACCOUNTS[p.provider][p.account]!;
  const region = REGIONS[p.provider][p.region]!;
  return MAKERS[p.provider]({ name: `c${p.name}`, account, region });
}

function scopesOf(c: Case): Scope[] {
  return c.configured.map(([p, a, r]) => ({
    provider: p,
    account: ACCOUNTS[p][a]!,
    region: r === 'all' ? ALL_REGIONS : REGIONS[p][r]!,
  }));
}

/** The inventory's two namespaces: the cluster's own, and a rule's. */
function optionsFor(first: string, second: string, manager = 'cpsync'): InventoryOptions {
  const options = inventoryOptions({ namespace: first, manager });
  return { ...options, namespaceRules: [{ namespace: second, tag: { key: 'never-set' } }] };
}

/** Writes `c`'s profiles into `hub` (each cluster once, whichever manager wrote it first). */
async function plant(
  hub: Hub,
  c: Case,
  first: string,
  second: string,
  write: (hub: Hub, profile: ReturnType<typeof normalize>) => Promise<void>,
): Promise<void> {
  const seen = new Set<string>();
  for (const p of c.planted) {
    const observed = cluster(p);
    if (seen.has(observed.providerId)) continue;
    seen.add(observed.providerId);
    const profile = normalize(observed, optionsFor(first, second, p.another ? 'another' : 'cpsync'), NOW);
    profile.metadata.namespace = p.second ? second : first;
    await write(hub, profile);
  }
}

/** What the look for orphans reports, as reports carry it (names and provider ids, by scope). */
async function bothWays(hub: Hub, options: InventoryOptions, c: Case) {
  const configured = scopesOf(c);
  const determined = new Set(c.determined);
  const whole = await inventoryProfiles(hub, options);
  const expected = findOrphans(whole.profiles, configured, determined).map(orphanReport);
  const found = (await inventoryOrphans(hub, options, configured, determined)).map(orphanReport);
  return { expected, found };
}

/** `hub`, with the calls that read profiles whole counted. */
function counted(hub: Hub): { hub: Hub; whole: () => number } {
  let whole = 0;
  const proxy = new Proxy(hub, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver) as unknown;
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        if (key === 'list' || key === 'get') whole += 1;
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { hub: proxy, whole: () => whole };
}

describe('the look for orphans reads labels, and whole profiles only of orphaned scopes', () => {
  describe('on the file hub', () => {
    let root: string;
    let n = 0;
    before(() => {
      root = temporaryDirectory('cpsync-orphans-property-');
    });
    after(() => rmSync(root, { recursive: true, force: true }));

    it('finds what the whole inventory shows, and reads no profile whole where nothing is orphaned', async () => {
      let withOrphans = 0;
      let without = 0;
      await fc.assert(
        fc.asyncProperty(arbitraryCase, async (c) => {
          const directory = join(root, `hub-${++n}`);
          const hub = new FileHub({ directory });
          await plant(hub, c, 'inventory', 'second', async (h, profile) => {
            await h.applyWhole!(profile);
          });
          for (const [i, [p, a, r]] of c.junk.entries()) {
            mkdirSync(join(directory, 'inventory'), { recursive: true });
            const labels = {
              [LABEL_CLUSTER_MANAGER]: 'cpsync',
              [LABEL_PROVIDER]: p,
              [LABEL_ACCOUNT]: ACCOUNTS[p][a]!,
              [LABEL_REGION]: REGIONS[p][r]!,
            };
            writeFileSync(
              join(directory, 'inventory', `junk-${i}.yaml`),
              JSON.stringify({ metadata: { name: `junk-${i}`, namespace: 'inventory', labels } }),
            );
          }
          // A process of its own reads the directory as a new run would.
          const fresh = counted(new FileHub({ directory }));
          const options = optionsFor('inventory', 'second');
          const { expected, found } = await bothWays(fresh.hub, options, c);
          assert.deepEqual(found, expected);
          // A hub without `listLabels` (the port leaves it optional): its whole profiles stand for their labels.
          const plain = new FileHub({ directory });
          const listOnly = { list: plain.list.bind(plain) } as unknown as Hub;
          assert.deepEqual(
            (await inventoryOrphans(listOnly, options, scopesOf(c), new Set(c.determined))).map(orphanReport),
            expected,
          );

          const alone = counted(new FileHub({ directory }));
          await inventoryOrphans(alone.hub, options, scopesOf(c), new Set(c.determined));
          if (expected.length === 0) {
            without += 1;
            assert.equal(alone.whole(), 0, 'no orphaned scope, and yet profiles were read whole');
          } else {
            withOrphans += 1;
            // One list per orphaned scope and namespace at most.
            assert.ok(alone.whole() <= expected.length * 2, `${alone.whole()} whole reads`);
          }
        }),
        { seed: SEED, numRuns: 60 },
      );
      // Both kinds of case were reached.
      assert.ok(withOrphans > 5 && without > 5, `${withOrphans} with orphans, ${without} without`);
    });
  });

  describe('on a real kube-apiserver', () => {
    let state: HubState;
    let hub: KubernetesHub;
    before(async () => {
      state = await localHub();
      hub = new KubernetesHub({ kubeConfig: adminKubeConfig(state), pageSize: 3 });
    });

    it('finds what the whole inventory shows, through pages', async () => {
      await fc.assert(
        fc.asyncProperty(arbitraryCase, async (c) => {
          const first = uniqueNamespace('orphans-p');
          const second = uniqueNamespace('orphans-q');
          await hub.ensureNamespace({ name: first });
          await hub.ensureNamespace({ name: second });
          await plant(hub, c, first, second, async (h, profile) => {
            await h.applyObject(profile);
            await h.applyStatus(profile);
          });
          const options = optionsFor(first, second);
          const { expected, found } = await bothWays(hub, options, c);
          assert.deepEqual(found, expected);
        }),
        { seed: SEED, numRuns: 12 },
      );
    });

    it('asks the server for fewer bytes than the profiles themselves', async () => {
      const namespace = uniqueNamespace('orphans-bytes');
      await hub.ensureNamespace({ name: namespace });
      const options = inventoryOptions({ namespace });
      const clusters = Array.from({ length: 12 }, (_, i) =>
        eksCluster({ name: `sized-${i}`, account: ACCOUNTS.eks[i % 2]! }),
      );
      for (const observed of clusters) {
        const profile = normalize(observed, options, NOW);
        await hub.applyObject(profile);
        await hub.applyStatus(profile);
      }
      const selector = { [LABEL_CLUSTER_MANAGER]: 'cpsync' };
      const byLabels = await listedByApiserver(state, () => hub.listLabels(namespace, selector));
      const whole = await listedByApiserver(state, () => hub.list(namespace, selector));
      assert.equal(byLabels.lists, 4); // 12 profiles, 3 a page
      assert.equal(whole.lists, 4);
      const labels = await hub.listLabels(namespace, selector);
      const profiles = await hub.list(namespace, selector);
      assert.deepEqual(
        labels,
        profiles.map((p) => ({ name: p.metadata.name, labels: p.metadata.labels })),
      );
      assert.ok(
        byLabels.bytes * 1.5 < whole.bytes,
        `metadata alone was ${byLabels.bytes} bytes, the profiles ${whole.bytes}`,
      );
      // Everything configured: nothing orphaned, and nothing but metadata listed.
      const none = await listedByApiserver(state, async () =>
        assert.deepEqual(
          await inventoryOrphans(
            hub,
            options,
            [
              { provider: 'eks', account: ACCOUNTS.eks[0]!, region: ALL_REGIONS },
              { provider: 'eks', account: ACCOUNTS.eks[1]!, region: ALL_REGIONS },
            ],
            new Set(PROVIDERS),
          ),
          [],
        ),
      );
      assert.equal(none.bytes, byLabels.bytes);
    });
  });
});
