/**
 * The Argo CD subscriber's identity of its own, against the real kube-apiserver, with the RBAC and admission policy
 * `cpsync consumers argocd-subscriber` prints applied as printed: the subscriber writes its cluster Secrets as its own
 * user; cpsync's identity (every sync function's) reaches no Secret in Argo CD's namespace; the subscriber's writes no
 * profile and no Secret but its own cluster Secrets, of the form it writes (a property over Secrets it makes, changed
 * in generated ways); and no one else changes those.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CoreV1Api, type KubeConfig, type V1Secret } from '@kubernetes/client-node';
import fc from 'fast-check';
import { parseConfig } from '../../../adapters/compose/config.ts';
import { consumerSetup, subscriberUser } from '../../../adapters/compose/consumers.ts';
import { HubForbiddenError } from '../../../adapters/hub/errors.ts';
import { KubernetesHub } from '../../../adapters/hub/KubernetesHub.ts';
import { LABEL_CLUSTER_MANAGER } from '../../../core/domain/constants.ts';
import type { ClusterProfile } from '../../../core/domain/model/clusterProfile.ts';
import { normalize } from '../../../core/domain/normalize.ts';
import { ArgoCdClusters } from '../../../functions/subscribers/argocd/ArgoCdClusters.ts';
import { clusterSecretOf, type ClusterSecret } from '../../../functions/subscribers/argocd/clusterSecret.ts';
import { aksCluster, eksCluster, gkeCluster, NOW } from '../../support/fixtures.ts';
import { adminKubeConfig, answer, localHub, uniqueNamespace, userKubeConfig } from '../../support/hub.ts';
import { applyPrinted, ensureShippedRbac } from '../../support/hubManifests.ts';
import { inventoryOptions } from '../../support/settings.ts';

const COMMAND = '/usr/local/bin/cpsync';
const EXTRA_ARGS = ['--role-name', 'cpsync-reader'];

describe("Argo CD: the subscriber's identity of its own (real hub)", () => {
  const inventory = uniqueNamespace('identity-inv');
  const argocd = uniqueNamespace('identity-argocd');
  const config = parseConfig({ inventory: { namespace: inventory } });
  const user = subscriberUser(config);
  let admin: KubeConfig;
  let subscriberCore: CoreV1Api;
  let cpsyncCore: CoreV1Api;
  let adminCore: CoreV1Api;
  let clusters: ArgoCdClusters;
  let profiles: ClusterProfile[];
  const cleanup: Array<() => Promise<void>> = [];

  before(async () => {
    const state = await localHub();
    admin = adminKubeConfig(state);
    adminCore = admin.makeApiClient(CoreV1Api);
    for (const name of [inventory, argocd]) await adminCore.createNamespace({ body: { metadata: { name } } });
    cleanup.push(await ensureShippedRbac(admin, ['ClusterRole/cpsync:admission-policy']));
    const setup = consumerSetup(config, {
      kind: 'argocd-subscriber',
      argocdNamespace: argocd,
      command: COMMAND,
    });
    cleanup.push(await applyPrinted(admin, setup.rbac!.map((m) => JSON.stringify(m)).join('\n---\n')));
    const hub = new KubernetesHub({ kubeConfig: admin });
    profiles = [];
    for (const cluster of [
      eksCluster({ name: 'web' }),
      gkeCluster({ name: 'batch' }),
      aksCluster({ name: 'ml' }),
    ]) {
      const profile = normalize(cluster, inventoryOptions({ namespace: inventory }), NOW);
      await hub.applyObject(profile);
      profiles.push(await hub.applyStatus(profile));
    }
    const subscriber = userKubeConfig(state, user);
    subscriberCore = subscriber.makeApiClient(CoreV1Api);
    cpsyncCore = userKubeConfig(state, 'cpsync').makeApiClient(CoreV1Api);
    clusters = new ArgoCdClusters(subscriber, { namespace: argocd, command: COMMAND, extraArgs: EXTRA_ARGS });
    await untilEnforced();
    // Argo CD's own settings, which its Role would otherwise reach.
    await adminCore.createNamespacedSecret({
      namespace: argocd,
      body: {
        metadata: { name: 'argocd-secret', labels: { 'app.kubernetes.io/part-of': 'argocd' } },
        stringData: { 'server.secretkey': 'kept' },
      },
    });
  });

  after(async () => {
    for (const step of cleanup.reverse()) await step().catch(() => {});
    for (const name of [argocd, inventory]) await adminCore?.deleteNamespace({ name }).catch(() => {});
  });

  /** Until the API server has taken the new policy up: a dry run of another writer's Secret of cpsync's is refused. */
  async function untilEnforced(): Promise<void> {
    const probe = secretOf(profiles[0]!);
    for (let attempt = 1; ; attempt++) {
      const { code, message } = await answer(
        adminCore.createNamespacedSecret({ namespace: argocd, body: probe, dryRun: 'All' }),
      );
      if (code === 403) {
        assert.match(message, /ValidatingAdmissionPolicy 'cpsync-argocd-secrets' .* denied request/);
        return;
      }
      assert.equal(code, 200, `the probe is let through (not yet enforced) or refused: ${message}`);
      assert.ok(attempt < 300, 'the policy was not enforced after 300 attempts');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  const secretOf = (profile: ClusterProfile): ClusterSecret => {
    const made = clusterSecretOf(profile, { namespace: argocd, command: COMMAND, extraArgs: EXTRA_ARGS });
    if (!('secret' in made)) throw new Error(made.skipped);
    return made.secret;
  };

  it('writes, marks and removes its cluster Secrets as its own user', async () => {
    for (const profile of profiles) assert.equal((await clusters.upsert(profile)).outcome, 'created');
    const { items } = await adminCore.listNamespacedSecret({
      namespace: argocd,
      labelSelector: 'app.kubernetes.io/managed-by=cpsync',
    });
    assert.equal(items.length, 3);
    const report = await clusters.reconcile(profiles.slice(1), { missingGraceMillis: 0 });
    assert.equal(report.deleted, 1, JSON.stringify(report));
    assert.equal((await clusters.upsert(profiles[0]!)).outcome, 'created');
  });

  it("reads the hub's profiles and writes none of them", async () => {
    const hub = new KubernetesHub({ kubeConfig: userKubeConfig(await localHub(), user) });
    assert.equal((await hub.list(inventory, {})).length, 3);
    const changed = { ...profiles[0]!, spec: { ...profiles[0]!.spec, displayName: 'elsewhere' } };
    await assert.rejects(hub.applyObject(changed), (error) => error instanceof HubForbiddenError);
    await assert.rejects(
      hub.delete({ namespace: inventory, name: profiles[0]!.metadata.name! }),
      (error) => error instanceof HubForbiddenError,
    );
  });

  it("cpsync's own identity reaches no Secret in Argo CD's namespace", async () => {
    const name = secretOf(profiles[0]!).metadata.name;
    const planted = secretOf(profiles[0]!);
    for (const call of [
      () => cpsyncCore.listNamespacedSecret({ namespace: argocd }),
      () => cpsyncCore.readNamespacedSecret({ name, namespace: argocd }),
      () =>
        cpsyncCore.createNamespacedSecret({
          namespace: argocd,
          body: { ...planted, metadata: { ...planted.metadata, name: 'cluster-planted' } },
        }),
      () => cpsyncCore.deleteNamespacedSecret({ name, namespace: argocd }),
    ])
      assert.equal((await answer(call())).code, 403);
  });

  it("leaves Argo CD's settings and other Secrets alone, and others leave its Secrets alone", async () => {
    const current = await subscriberCore.readNamespacedSecret({ name: 'argocd-secret', namespace: argocd });
    const settings = await answer(
      subscriberCore.replaceNamespacedSecret({
        name: 'argocd-secret',
        namespace: argocd,
        body: { ...current, data: { 'server.secretkey': Buffer.from('taken').toString('base64') } },
      }),
    );
    assert.equal(settings.code, 403, settings.message);
    assert.match(settings.message, /writes only the Argo CD cluster Secrets of manager cpsync/);
    assert.equal(
      (await answer(subscriberCore.deleteNamespacedSecret({ name: 'argocd-secret', namespace: argocd })))
        .code,
      403,
    );
    const ownSecret = secretOf(profiles[1]!);
    const planted = await answer(
      adminCore.createNamespacedSecret({
        namespace: argocd,
        body: { ...ownSecret, metadata: { ...ownSecret.metadata, name: 'cluster-planted' } },
      }),
    );
    assert.equal(planted.code, 403, planted.message);
    assert.match(planted.message, new RegExp(`only the user ${user} may create or change`));
    const rewritten = await answer(
      adminCore.patchNamespacedSecret({
        name: ownSecret.metadata.name,
        namespace: argocd,
        body: [
          {
            op: 'replace',
            path: '/data/server',
            value: Buffer.from('https://elsewhere.example').toString('base64'),
          },
        ],
      }),
    );
    assert.equal(rewritten.code, 403, rewritten.message);
    assert.equal(
      (await adminCore.readNamespacedSecret({ name: 'argocd-secret', namespace: argocd })).data?.[
        'server.secretkey'
      ],
      Buffer.from('kept').toString('base64'),
    );
  });

  /** A change to a Secret the subscriber makes, and whether the policy should let the subscriber write it. */
  type Change = { describe: string; admitted: boolean; apply: (secret: ClusterSecret) => V1Secret };

  const decoded = (value: string) => Buffer.from(value, 'base64').toString('utf8');
  const encoded = (text: string) => Buffer.from(text, 'utf8').toString('base64');
  const labelled = (s: ClusterSecret, key: string, value: string | undefined): V1Secret => {
    const labels = { ...s.metadata.labels };
    if (value === undefined) delete labels[key];
    else labels[key] = value;
    return { ...s, metadata: { ...s.metadata, labels } };
  };

  const text = fc.string({ maxLength: 16, unit: 'grapheme' });
  const change: fc.Arbitrary<Change> = fc.oneof(
    fc.constant<Change>({ describe: 'as made', admitted: true, apply: (s) => s }),
    // The server as any text: admitted when it begins https://, judged on the text itself.
    fc
      .oneof(
        text.map((t) => `https://${t}`),
        text,
        fc.constantFrom('http://', 'HTTPS://', 'https:/', 'https:', ' https://', 'https:\\\\', 'hxxps://'),
        fc
          .tuple(fc.constantFrom('http://', 'HTTPS://', 'https:/', 'ftp://', '//'), text)
          .map(([a, b]) => a + b),
      )
      .map<Change>((server) => ({
        describe: `server ${JSON.stringify(server)}`,
        admitted: server.startsWith('https://'),
        apply: (s) => ({ ...s, data: { ...s.data, server: encoded(server) } }),
      })),
    fc
      .tuple(
        fc.constantFrom(
          'namespaces',
          'project',
          'clusterResources',
          'shard',
          'bearerToken',
          'Config',
          'config.json',
        ),
        text,
      )
      .map<Change>(([key, value]) => ({
        describe: `data key ${JSON.stringify(key)}`,
        admitted: false,
        apply: (s) => ({ ...s, data: { ...s.data, [key]: encoded(value) } }),
      })),
    fc.constantFrom('config', 'server').map<Change>((key) => ({
      describe: `no ${key}`,
      admitted: false,
      apply: (s) => {
        const data = { ...s.data };
        delete data[key];
        return { ...s, data };
      },
    })),
    fc
      .oneof(
        fc.constantFrom('repository', 'repo-creds', 'Cluster', 'cluster '),
        text.filter((t) => t !== 'cluster'),
      )
      .filter((t) => /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/.test(t) && t.length <= 63)
      .map<Change>((type) => ({
        describe: `secret type ${JSON.stringify(type)}`,
        admitted: false,
        apply: (s) => labelled(s, 'argocd.argoproj.io/secret-type', type),
      })),
    fc.constant<Change>({
      describe: 'no secret type',
      admitted: false,
      apply: (s) => labelled(s, 'argocd.argoproj.io/secret-type', undefined),
    }),
    fc.constantFrom(LABEL_CLUSTER_MANAGER, 'app.kubernetes.io/managed-by').chain((key) =>
      fc
        .oneof(
          fc.constant(undefined),
          fc.constantFrom('platform', 'cpsync-eks', 'Cpsync', 'cpsync-x', 'argocd', ''),
        )
        .map<Change>((value) => ({
          describe: `label ${key} ${value === undefined ? 'removed' : `as ${value}`}`,
          admitted: false,
          apply: (s) => labelled(s, key, value),
        })),
    ),
    fc.constantFrom('http://', 'https:/').map<Change>((scheme) => ({
      describe: `the server given as stringData, ${scheme}`,
      admitted: false,
      apply: (s) => {
        const { server, ...data } = s.data;
        return { ...s, data, stringData: { server: decoded(server!).replace('https://', scheme) } };
      },
    })),
  );

  it('writes only cluster Secrets of the form it makes (property over generated changes)', async () => {
    let round = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...profiles.keys()),
        change,
        async (index, { describe, admitted, apply }) => {
          const made = secretOf(profiles[index]!);
          const body = apply({
            ...made,
            metadata: { ...made.metadata, name: `cluster-generated-${round++}` },
          });
          const created = await answer(subscriberCore.createNamespacedSecret({ namespace: argocd, body }));
          assert.equal(created.code, admitted ? 200 : 403, `${describe}: ${created.message}`);
          if (admitted) {
            // And a change of it the same way, from one as made.
            await subscriberCore.deleteNamespacedSecret({ name: body.metadata!.name!, namespace: argocd });
          } else {
            const { metadata } = await subscriberCore.createNamespacedSecret({
              namespace: argocd,
              body: { ...made, metadata: { ...made.metadata, name: body.metadata!.name! } },
            });
            const replaced = await answer(
              subscriberCore.replaceNamespacedSecret({
                name: body.metadata!.name!,
                namespace: argocd,
                body: {
                  ...body,
                  metadata: { ...body.metadata!, resourceVersion: metadata!.resourceVersion! },
                },
              }),
            );
            assert.equal(replaced.code, 403, `${describe}, as a change: ${replaced.message}`);
            await subscriberCore.deleteNamespacedSecret({ name: body.metadata!.name!, namespace: argocd });
          }
        },
      ),
      { numRuns: 60 },
    );
  });
});
