/**
 * Three cpsync managers (hubs, or configurations of one) whose Argo CD subscribers write into the same Argo CD
 * namespace, one named as another's EKS names begin (`cpsync-eks`). Against the real kube-apiserver: whatever one
 * does — an event, a Deleted event (its own profile's, or one naming another's), a reconcile of any part of its
 * inventory with no grace — the others' cluster Secrets are never written or deleted, those made before Secrets named
 * their manager included; and a reconcile of the whole inventory gives each of its own profiles a Secret labelled as
 * its own.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CoreV1Api, type V1Secret } from '@kubernetes/client-node';
import fc from 'fast-check';
import { KubernetesHub } from '../../../adapters/hub/KubernetesHub.ts';
import { normalize } from '../../../core/domain/normalize.ts';
import { LABEL_CLUSTER_MANAGER } from '../../../core/domain/constants.ts';
import type { ClusterProfile } from '../../../core/domain/model/clusterProfile.ts';
import { ArgoCdClusters } from '../../../functions/subscribers/argocd/ArgoCdClusters.ts';
import {
  MANAGED_BY,
  MANAGED_BY_LABEL,
  PROFILE_ANNOTATION,
  SECRET_TYPE_LABEL,
  secretNameOf,
} from '../../../functions/subscribers/argocd/clusterSecret.ts';
import { eksCluster, NOW } from '../../support/fixtures.ts';
import { adminKubeConfig, localHub, uniqueNamespace } from '../../support/hub.ts';
import { inventoryOptions } from '../../support/settings.ts';

// `cpsync-eks`'s names all begin as `cpsync`'s EKS names do (`cpsync-eks-…`), and end in the same hash of a cluster's id.
const MANAGERS = ['cpsync', 'cpsync-eks', 'platform'] as const;
type Manager = (typeof MANAGERS)[number];

describe('Argo CD: three managers write into one Argo CD namespace (real hub)', () => {
  const argocd = uniqueNamespace('managers-argocd');
  const inventory: Record<Manager, string> = {
    cpsync: uniqueNamespace('managers-a'),
    'cpsync-eks': uniqueNamespace('managers-c'),
    platform: uniqueNamespace('managers-b'),
  };
  let core: CoreV1Api;
  const clusters = new Map<Manager, ArgoCdClusters>();
  const profiles = new Map<Manager, ClusterProfile[]>();

  before(async () => {
    const kubeConfig = adminKubeConfig(await localHub());
    core = kubeConfig.makeApiClient(CoreV1Api);
    const hub = new KubernetesHub({ kubeConfig });
    await core.createNamespace({ body: { metadata: { name: argocd } } });
    for (const manager of MANAGERS) {
      const namespace = inventory[manager];
      await hub.ensureNamespace({ name: namespace });
      const own: ClusterProfile[] = [];
      // Clusters of one name in one account: the profiles' names differ by their managers alone.
      for (const name of ['web', 'batch']) {
        const profile = normalize(
          eksCluster({ name, account: '111111111111' }),
          inventoryOptions({ namespace, manager }),
          NOW,
        );
        await hub.applyObject(profile);
        own.push(await hub.applyStatus(profile));
      }
      profiles.set(manager, own);
      clusters.set(manager, new ArgoCdClusters(kubeConfig, { namespace: argocd, manager }));
    }
  });

  after(async () => {
    for (const namespace of [argocd, ...Object.values(inventory)])
      await core?.deleteNamespace({ name: namespace }).catch(() => {});
  });

  /** The cluster Secrets of `manager`'s profiles, by name, as written (name → resourceVersion and labels). */
  async function secretsOf(manager: Manager): Promise<Map<string, V1Secret>> {
    const names = new Set(profiles.get(manager)!.map((p) => secretNameOf(p.metadata.name!)));
    const { items } = await core.listNamespacedSecret({
      namespace: argocd,
      labelSelector: `${SECRET_TYPE_LABEL}=cluster`,
    });
    return new Map(items.filter((s) => names.has(s.metadata!.name!)).map((s) => [s.metadata!.name!, s]));
  }

  const snapshot = (secrets: Map<string, V1Secret>) =>
    [...secrets].map(([name, s]) => `${name}@${s.metadata!.resourceVersion}`).sort();

  type Step =
    | { kind: 'event' | 'deleted'; by: Manager; of: Manager; index: number }
    | { kind: 'reconcile'; by: Manager; present: number[] }
    | { kind: 'made-earlier'; of: Manager; index: number };

  const manager = fc.constantFrom<Manager>(...MANAGERS);
  const index = fc.constantFrom(0, 1);
  const step: fc.Arbitrary<Step> = fc.oneof(
    fc.record({
      kind: fc.constantFrom('event' as const, 'deleted' as const),
      by: manager,
      of: manager,
      index,
    }),
    fc.record({ kind: fc.constant('reconcile' as const), by: manager, present: fc.subarray([0, 1]) }),
    // A Secret as a version before this one made it: no manager label.
    fc.record({ kind: fc.constant('made-earlier' as const), of: manager, index }),
  );

  it("no manager's events, Deleted events or reconciles write or delete another's Secrets (property)", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 8 }), async (steps) => {
        for (const manager of MANAGERS)
          for (const name of (await secretsOf(manager)).keys())
            await core.deleteNamespacedSecret({ name, namespace: argocd });
        for (const s of steps) {
          if (s.kind === 'made-earlier') {
            const name = secretNameOf(profiles.get(s.of)![s.index]!.metadata.name!);
            const secret = (await secretsOf(s.of)).get(name);
            if (secret?.metadata!.labels![LABEL_CLUSTER_MANAGER] !== undefined)
              await core.patchNamespacedSecret({
                name,
                namespace: argocd,
                body: [
                  { op: 'remove', path: `/metadata/labels/${LABEL_CLUSTER_MANAGER.replace('/', '~1')}` },
                ],
              });
            continue;
          }
          const others = MANAGERS.filter((m) => m !== s.by);
          const before = await Promise.all(others.map(async (m) => snapshot(await secretsOf(m))));
          const acting = clusters.get(s.by)!;
          if (s.kind === 'event') await acting.upsert(profiles.get(s.of)![s.index]!, { newest: true });
          else if (s.kind === 'deleted')
            await acting.remove(inventory[s.of], profiles.get(s.of)![s.index]!.metadata.name!);
          else if (s.kind === 'reconcile')
            await acting.reconcile(
              s.present.map((i) => profiles.get(s.by)![i]!),
              { missingGraceMillis: 0 },
            );
          for (const [i, other] of others.entries())
            assert.deepEqual(
              snapshot(await secretsOf(other)),
              before[i],
              `${JSON.stringify(s)} wrote or deleted a Secret of ${other}`,
            );
        }
        // A reconcile of the whole inventory: each of its profiles' Secrets there, and labelled as its own.
        for (const m of MANAGERS) {
          await clusters.get(m)!.reconcile(profiles.get(m)!, { missingGraceMillis: 0 });
          const secrets = await secretsOf(m);
          for (const profile of profiles.get(m)!) {
            const secret = secrets.get(secretNameOf(profile.metadata.name!));
            assert.ok(secret, `${m}: the Secret of ${profile.metadata.name}`);
            assert.equal(secret.metadata!.labels![LABEL_CLUSTER_MANAGER], m);
            assert.equal(secret.metadata!.labels![MANAGED_BY_LABEL], MANAGED_BY);
            assert.equal(
              secret.metadata!.annotations![PROFILE_ANNOTATION],
              `${inventory[m]}/${profile.metadata.name}`,
            );
          }
        }
      }),
      {
        numRuns: 20,
        examples: [
          // `cpsync-eks`'s Secret as an earlier version wrote it, then a reconcile of `cpsync`'s, and its Deleted event.
          [
            [
              { kind: 'event', by: 'cpsync-eks', of: 'cpsync-eks', index: 0 },
              { kind: 'made-earlier', of: 'cpsync-eks', index: 0 },
              { kind: 'reconcile', by: 'cpsync', present: [] },
              { kind: 'deleted', by: 'cpsync', of: 'cpsync-eks', index: 0 },
            ],
          ],
        ],
      },
    );
  });
});
