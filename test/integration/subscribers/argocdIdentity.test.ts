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
/** An earlier version's Secret: labelled as cpsync's, naming no manager. */
const LEGACY = 'cluster-legacy';
const EXTRA_ARGS = ['--role-name', 'argocd'];

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
  /** The profile of an earlier version's Secret. */
  let adopted: ClusterProfile;
  const cleanup: Array<() => Promise<void>> = [];

  before(async () => {
    const state = await localHub();
    admin = adminKubeConfig(state);
    adminCore = admin.makeApiClient(CoreV1Api);
    for (const name of [inventory, argocd]) await adminCore.createNamespace({ body: { metadata: { name } } });
    cleanup.push(await ensureShippedRbac(admin, ['ClusterRole/cpsync:admission-policy']));
    // A profile whose cluster Secret an earlier version made, saying what it likes of its profile (planted: a later
    // resourceVersion and another server), there before the policy.
    const hub = new KubernetesHub({ kubeConfig: admin });
    const adoptedProfile = normalize(
      eksCluster({ name: 'adopted' }),
      inventoryOptions({ namespace: inventory }),
      NOW,
    );
    await hub.applyObject(adoptedProfile);
    adopted = await hub.applyStatus(adoptedProfile);
    const earlier = secretOf(adopted);
    const { [LABEL_CLUSTER_MANAGER]: _manager, ...unnamed } = earlier.metadata.labels;
    await adminCore.createNamespacedSecret({
      namespace: argocd,
      body: {
        ...earlier,
        metadata: {
          ...earlier.metadata,
          labels: unnamed,
          annotations: { ...earlier.metadata.annotations, 'cpsync.io/profile-resource-version': '999999999' },
        },
        data: { ...earlier.data, server: Buffer.from('https://planted.example').toString('base64') },
      },
    });
    // A cluster Secret an earlier version made (cpsync's, naming no manager), there before the policy.
    await adminCore.createNamespacedSecret({
      namespace: argocd,
      body: {
        metadata: {
          name: LEGACY,
          labels: { 'argocd.argoproj.io/secret-type': 'cluster', 'app.kubernetes.io/managed-by': 'cpsync' },
        },
        stringData: { name: 'legacy', server: 'https://legacy.example', config: '{}' },
      },
    });
    const setup = consumerSetup(config, {
      kind: 'argocd-subscriber',
      argocdNamespace: argocd,
      command: COMMAND,
    });
    cleanup.push(await applyPrinted(admin, setup.rbac!.map((m) => JSON.stringify(m)).join('\n---\n')));
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

  it("writes an earlier version's Secret over from the hub, whatever the Secret says of its profile", async () => {
    assert.equal((await clusters.upsert(adopted)).outcome, 'updated');
    const name = secretOf(adopted).metadata.name;
    const stored = await adminCore.readNamespacedSecret({ name, namespace: argocd });
    assert.equal(
      Buffer.from(stored.data!.server!, 'base64').toString(),
      adopted.status!.accessProviders![0]!.cluster!.server,
    );
    assert.equal(stored.metadata!.labels![LABEL_CLUSTER_MANAGER], 'cpsync');
    await subscriberCore.deleteNamespacedSecret({ name, namespace: argocd });
  });

  it('writes, marks and removes its cluster Secrets as its own user', async () => {
    for (const profile of profiles) assert.equal((await clusters.upsert(profile)).outcome, 'created');
    const { items } = await adminCore.listNamespacedSecret({
      namespace: argocd,
      labelSelector: 'app.kubernetes.io/managed-by=cpsync,x-k8s.io/cluster-manager=cpsync',
    });
    assert.equal(items.length, 3);
    const report = await clusters.reconcile(profiles.slice(1), { missingGraceMillis: 0 });
    assert.equal(report.deleted, 1, JSON.stringify(report));
    assert.equal((await clusters.upsert(profiles[0]!)).outcome, 'created');
  });

  it('marks a Secret whose profile is missing, within the grace, as its own user (a patch)', async () => {
    const report = await clusters.reconcile(profiles.slice(1), {
      missingGraceMillis: 60 * 60_000,
      guardedNamespaces: new Set([inventory]),
    });
    assert.equal(report.deleted, 0, JSON.stringify(report));
    const marked = await adminCore.readNamespacedSecret({
      name: secretOf(profiles[0]!).metadata.name,
      namespace: argocd,
    });
    assert.ok(
      marked.metadata?.annotations?.['cpsync.io/profile-missing-since'],
      JSON.stringify(marked.metadata),
    );
    assert.equal((await clusters.upsert(profiles[0]!)).outcome, 'updated');
  });

  it("takes an earlier version's Secret as its own; no one else makes one, or strips its own Secrets' marks", async () => {
    const legacy = await subscriberCore.readNamespacedSecret({ name: LEGACY, namespace: argocd });
    const labels = { ...legacy.metadata!.labels, [LABEL_CLUSTER_MANAGER]: 'cpsync' };
    const relabelled = await answer(
      subscriberCore.replaceNamespacedSecret({
        name: LEGACY,
        namespace: argocd,
        body: { ...legacy, metadata: { ...legacy.metadata, labels } },
      }),
    );
    assert.equal(relabelled.code, 200, relabelled.message);
    const made = await answer(
      adminCore.createNamespacedSecret({
        namespace: argocd,
        body: {
          metadata: {
            name: 'cluster-passing',
            labels: { 'argocd.argoproj.io/secret-type': 'cluster', 'app.kubernetes.io/managed-by': 'cpsync' },
          },
          stringData: { name: 'x', server: 'https://x.example', config: '{}' },
        },
      }),
    );
    assert.equal(made.code, 403, made.message);
    assert.match(
      made.message,
      new RegExp(`only the user ${user} may make a Secret labelled app.kubernetes.io/managed-by: cpsync`),
    );
    const own = await adminCore.readNamespacedSecret({
      name: secretOf(profiles[1]!).metadata.name,
      namespace: argocd,
    });
    const stripped = await answer(
      adminCore.replaceNamespacedSecret({
        name: own.metadata!.name!,
        namespace: argocd,
        body: {
          ...own,
          metadata: { ...own.metadata, labels: { 'argocd.argoproj.io/secret-type': 'cluster' } },
        },
      }),
    );
    assert.equal(stripped.code, 403, stripped.message);
    // Another manager's cluster Secret: its own subscriber's to write, not this one's.
    const others = secretOf(profiles[2]!);
    const theirs = {
      ...others,
      metadata: {
        ...others.metadata,
        name: 'cluster-platform',
        labels: { ...others.metadata.labels, [LABEL_CLUSTER_MANAGER]: 'platform' },
      },
    };
    assert.equal(
      (await answer(adminCore.createNamespacedSecret({ namespace: argocd, body: theirs }))).code,
      200,
    );
    const stored = await subscriberCore.readNamespacedSecret({ name: 'cluster-platform', namespace: argocd });
    assert.equal(
      (
        await answer(
          subscriberCore.replaceNamespacedSecret({
            name: 'cluster-platform',
            namespace: argocd,
            body: stored,
          }),
        )
      ).code,
      403,
    );
    assert.equal(
      (await answer(subscriberCore.deleteNamespacedSecret({ name: 'cluster-platform', namespace: argocd })))
        .code,
      403,
    );
  });

  it("reads the hub's profiles and writes none of them", async () => {
    const hub = new KubernetesHub({ kubeConfig: userKubeConfig(await localHub(), user) });
    assert.equal((await hub.list(inventory, {})).length, profiles.length + 1);
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
  type Change = {
    describe: string;
    admitted: boolean;
    apply: (secret: ClusterSecret) => V1Secret;
    /** A field the API server keeps as created (a Secret's type): asked of a creation only. */
    createOnly?: true;
  };

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
    fc.constantFrom('example.com/cluster', 'bootstrap.example/token').map<Change>((type) => ({
      describe: `type ${type}`,
      admitted: false,
      apply: (s) => ({ ...s, type }),
      createOnly: true,
    })),
    fc.constantFrom('http://', 'https:/', 'https://').map<Change>((scheme) => ({
      describe: `the server given as stringData, ${scheme}`,
      admitted: scheme === 'https://',
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
        async (index, { describe, admitted, apply, createOnly }) => {
          const made = secretOf(profiles[index]!);
          const name = `cluster-generated-${round++}`;
          const body = apply({ ...made, metadata: { ...made.metadata, name } });
          const created = await answer(subscriberCore.createNamespacedSecret({ namespace: argocd, body }));
          assert.equal(created.code, admitted ? 200 : 403, `${describe}: ${created.message}`);
          if (!admitted && !createOnly) {
            // And the same change made to one as made: refused too.
            const { metadata } = await subscriberCore.createNamespacedSecret({
              namespace: argocd,
              body: { ...made, metadata: { ...made.metadata, name } },
            });
            const replaced = await answer(
              subscriberCore.replaceNamespacedSecret({
                name,
                namespace: argocd,
                body: {
                  ...body,
                  metadata: { ...body.metadata!, resourceVersion: metadata!.resourceVersion! },
                },
              }),
            );
            assert.equal(replaced.code, 403, `${describe}, as a change: ${replaced.message}`);
          }
          if (admitted || !createOnly)
            await subscriberCore.deleteNamespacedSecret({ name, namespace: argocd });
        },
      ),
      { numRuns: 60 },
    );
  });
});
