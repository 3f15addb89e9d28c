/**
 * Two clusters whose profiles have one name in two inventory namespaces (a namespace rule places each in its own)
 * would share an Argo CD cluster Secret (`cluster-<name>`), and so the Argo CD cluster its Applications deploy to.
 * Against the real kube-apiserver: whatever the order of events and reconciles, the Secret stays the profile's it
 * was made from while it lasts, never changed to the other cluster's server, and goes to the other only once it is
 * removed.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CoreV1Api, type V1Secret } from '@kubernetes/client-node';
import fc from 'fast-check';
import { KubernetesHub } from '../../../adapters/hub/KubernetesHub.ts';
import { normalize } from '../../../core/domain/normalize.ts';
import type { ClusterProfile } from '../../../core/domain/model/clusterProfile.ts';
import { ArgoCdClusters } from '../../../functions/subscribers/argocd/ArgoCdClusters.ts';
import { PROFILE_ANNOTATION } from '../../../functions/subscribers/argocd/clusterSecret.ts';
import { eksCluster, NOW } from '../../support/fixtures.ts';
import { adminKubeConfig, localHub, uniqueNamespace } from '../../support/hub.ts';
import { inventoryOptions } from '../../support/settings.ts';

const NAME = 'web';
const SECRET = `cluster-${NAME}`;

describe('Argo CD: two profiles of one name in two inventory namespaces (real hub)', () => {
  const namespaces = { a: uniqueNamespace('names-a'), b: uniqueNamespace('names-b') };
  const argocd = uniqueNamespace('names-argocd');
  let core: CoreV1Api;
  let clusters: ArgoCdClusters;
  const profiles = new Map<'a' | 'b', ClusterProfile>();
  const servers = { a: 'https://cluster-a.example', b: 'https://cluster-b.example' };

  before(async () => {
    const kubeConfig = adminKubeConfig(await localHub());
    core = kubeConfig.makeApiClient(CoreV1Api);
    const hub = new KubernetesHub({ kubeConfig });
    await core.createNamespace({ body: { metadata: { name: argocd } } });
    for (const [key, account] of [
      ['a', '111111111111'],
      ['b', '222222222222'],
    ] as const) {
      const namespace = namespaces[key];
      await hub.ensureNamespace({ name: namespace });
      const profile = normalize(
        eksCluster({ name: NAME, account, endpoints: [{ url: servers[key], visibility: 'public' }] }),
        inventoryOptions({ namespace }),
        NOW,
      );
      profile.metadata.name = NAME;
      await hub.applyObject(profile);
      profiles.set(key, await hub.applyStatus(profile));
    }
    clusters = new ArgoCdClusters(kubeConfig, { namespace: argocd });
  });

  after(async () => {
    for (const namespace of [argocd, ...Object.values(namespaces)])
      await core?.deleteNamespace({ name: namespace }).catch(() => {});
  });

  /** Which profile the Secret is of (`a`, `b`), and whether it says that profile's server; undefined: no Secret. */
  async function holder(): Promise<'a' | 'b' | undefined> {
    let secret: V1Secret;
    try {
      secret = await core.readNamespacedSecret({ name: SECRET, namespace: argocd });
    } catch {
      return undefined;
    }
    const of = secret.metadata?.annotations?.[PROFILE_ANNOTATION];
    const key = of === `${namespaces.a}/${NAME}` ? 'a' : of === `${namespaces.b}/${NAME}` ? 'b' : undefined;
    assert.ok(key, `the Secret names a profile of neither: ${of}`);
    const server = Buffer.from(secret.data!.server!, 'base64').toString();
    assert.equal(server, servers[key], `the Secret of ${of} says another cluster's server`);
    return key;
  }

  type Step =
    | { kind: 'event'; of: 'a' | 'b' }
    | { kind: 'deleted'; of: 'a' | 'b' }
    | { kind: 'reconcile'; present: Array<'a' | 'b'> };

  const step: fc.Arbitrary<Step> = fc.oneof(
    fc.record({ kind: fc.constant('event' as const), of: fc.constantFrom('a' as const, 'b' as const) }),
    fc.record({ kind: fc.constant('deleted' as const), of: fc.constantFrom('a' as const, 'b' as const) }),
    fc.record({
      kind: fc.constant('reconcile' as const),
      present: fc.subarray(['a', 'b'] as Array<'a' | 'b'>),
    }),
  );

  it('the Secret stays the profile it was made from while it lasts, whatever comes in whatever order (property)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 8 }), async (steps) => {
        await core.deleteNamespacedSecret({ name: SECRET, namespace: argocd }).catch(() => {});
        for (const s of steps) {
          const was = await holder();
          if (s.kind === 'event') await clusters.upsert(profiles.get(s.of)!, { newest: true });
          else if (s.kind === 'deleted') await clusters.remove(namespaces[s.of], NAME);
          else
            await clusters.reconcile(
              s.present.map((key) => profiles.get(key)!),
              { missingGraceMillis: 0 },
            );
          const now = await holder();
          // Taken from its profile only by that profile's end (its Deleted event, or a reconcile without it).
          const ended =
            (s.kind === 'deleted' && s.of === was) || (s.kind === 'reconcile' && !s.present.includes(was!));
          if (was !== undefined && !ended) assert.equal(now, was, `${JSON.stringify(s)} moved the Secret`);
          // And one that is free goes to the profile that asks.
          if (was === undefined && s.kind === 'event') assert.equal(now, s.of);
          if (was === undefined && s.kind === 'reconcile' && s.present.length > 0)
            assert.ok(now !== undefined && s.present.includes(now));
        }
      }),
      { numRuns: 25 },
    );
  });
});
