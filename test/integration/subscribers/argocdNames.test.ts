/**
 * Two clusters whose profiles have one name in two inventory namespaces (a namespace rule places each in its own)
 * would share an Argo CD cluster Secret (`cluster-<name>`), and so the Argo CD cluster its Applications deploy to.
 * Against the real kube-apiserver: whatever the order of events and reconciles, the Secret is never moved to another
 * cluster while the profile it was made from lasts, and goes to the other only once it is removed; another profile of
 * the same cluster (a projection, or the cluster placed in another namespace since) writes it as before.
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
  // `a` and `c` are profiles of one cluster (a projection, or the cluster placed elsewhere since); `b` another's.
  const namespaces = {
    a: uniqueNamespace('names-a'),
    b: uniqueNamespace('names-b'),
    c: uniqueNamespace('names-c'),
  };
  type Key = keyof typeof namespaces;
  const clusterOf: Record<Key, string> = { a: 'X', b: 'Y', c: 'X' };
  const argocd = uniqueNamespace('names-argocd');
  let core: CoreV1Api;
  let clusters: ArgoCdClusters;
  const profiles = new Map<Key, ClusterProfile>();
  const servers = {
    a: 'https://CLUSTERA.gr7.us-east-1.eks.amazonaws.com',
    b: 'https://CLUSTERB.gr7.us-east-1.eks.amazonaws.com',
    c: 'https://CLUSTERA.gr7.us-east-1.eks.amazonaws.com',
  };

  before(async () => {
    const kubeConfig = adminKubeConfig(await localHub());
    core = kubeConfig.makeApiClient(CoreV1Api);
    const hub = new KubernetesHub({ kubeConfig });
    await core.createNamespace({ body: { metadata: { name: argocd } } });
    for (const [key, account] of [
      ['a', '111111111111'],
      ['b', '222222222222'],
      ['c', '111111111111'],
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
  async function holder(): Promise<Key | undefined> {
    let secret: V1Secret;
    try {
      secret = await core.readNamespacedSecret({ name: SECRET, namespace: argocd });
    } catch {
      return undefined;
    }
    const of = secret.metadata?.annotations?.[PROFILE_ANNOTATION];
    const key = (Object.keys(namespaces) as Key[]).find((k) => of === `${namespaces[k]}/${NAME}`);
    assert.ok(key, `the Secret names a profile of neither: ${of}`);
    const server = Buffer.from(secret.data!.server!, 'base64').toString();
    assert.equal(server, servers[key], `the Secret of ${of} says another cluster's server`);
    return key;
  }

  type Step =
    { kind: 'event'; of: Key } | { kind: 'deleted'; of: Key } | { kind: 'reconcile'; present: Key[] };

  const key = fc.constantFrom<Key>('a', 'b', 'c');
  const step: fc.Arbitrary<Step> = fc.oneof(
    fc.record({ kind: fc.constant('event' as const), of: key }),
    fc.record({ kind: fc.constant('deleted' as const), of: key }),
    fc.record({ kind: fc.constant('reconcile' as const), present: fc.subarray<Key>(['a', 'b', 'c']) }),
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
          // Never moved to another cluster while its profile lasts (its Deleted event, or a reconcile without it,
          // ends it); another profile of the same cluster may write it.
          const ended =
            (s.kind === 'deleted' && s.of === was) || (s.kind === 'reconcile' && !s.present.includes(was!));
          if (was !== undefined && !ended) {
            assert.ok(now !== undefined, `${JSON.stringify(s)} removed the Secret of ${was}`);
            assert.equal(
              clusterOf[now],
              clusterOf[was],
              `${JSON.stringify(s)} moved the Secret to another cluster`,
            );
          }
          // Another profile of its cluster that asks is given it.
          if (was !== undefined && s.kind === 'event' && clusterOf[s.of] === clusterOf[was])
            assert.equal(now, s.of);
          // And one that is free goes to the profile that asks.
          if (was === undefined && s.kind === 'event') assert.equal(now, s.of);
          if (was === undefined && s.kind === 'reconcile' && s.present.length > 0)
            assert.ok(now !== undefined && s.present.includes(now));
        }
      }),
      { numRuns: 25 },
    );
  });

  it('invocations at once (two handlers, or a handler and the reconcile): the Secret still never moves to another cluster while its profile lasts (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.option(key, { nil: undefined }),
        fc.array(step, { minLength: 2, maxLength: 4 }),
        async (first, together) => {
          await core.deleteNamespacedSecret({ name: SECRET, namespace: argocd }).catch(() => {});
          if (first) await clusters.upsert(profiles.get(first)!, { newest: true });
          const was = await holder();
          assert.equal(was, first);
          const outcomes = await Promise.allSettled(
            together.map((s) =>
              s.kind === 'event'
                ? clusters.upsert(profiles.get(s.of)!, { newest: true })
                : s.kind === 'deleted'
                  ? clusters.remove(namespaces[s.of], NAME)
                  : clusters.reconcile(
                      s.present.map((key) => profiles.get(key)!),
                      { missingGraceMillis: 0 },
                    ),
            ),
          );
          // Each judged again as the Secret is once another overtook it, not failed (the whole reconcile with it).
          for (const outcome of outcomes)
            assert.equal(
              outcome.status,
              'fulfilled',
              `${JSON.stringify(together)}: ${outcome.status === 'rejected' ? String(outcome.reason) : ''}`,
            );
          // Says its own profile's server, whichever it is of (holder checks).
          const now = await holder();
          // Ended: by a Deleted event of its profile, or of another of its cluster's that took it meanwhile, or by a
          // reconcile without its profile.
          const ended = together.some(
            (s) =>
              (s.kind === 'deleted' && clusterOf[s.of] === clusterOf[was!]) ||
              (s.kind === 'reconcile' && !s.present.includes(was!)),
          );
          if (was !== undefined && !ended) {
            assert.ok(now !== undefined, `${JSON.stringify(together)} removed the Secret of ${was}`);
            assert.equal(
              clusterOf[now],
              clusterOf[was],
              `${JSON.stringify(together)} moved it to another cluster`,
            );
          }
          // Free, and asked for by events alone: one of those that asked has it.
          if (was === undefined && together.every((s) => s.kind === 'event'))
            assert.ok(
              now !== undefined && together.some((s) => s.kind === 'event' && s.of === now),
              `${JSON.stringify(together)} left the Secret to ${now}`,
            );
        },
      ),
      { numRuns: 20 },
    );
  });
});
