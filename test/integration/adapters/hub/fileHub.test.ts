import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import fc from 'fast-check';
import { parse } from 'yaml';
import { HubConflictError, HubRejectedError } from '../../../../adapters/hub/errors.ts';
import { FileHub } from '../../../../adapters/hub/FileHub.ts';
import { KubernetesHub } from '../../../../adapters/hub/KubernetesHub.ts';
import type { ClusterProfile } from '../../../../core/domain/model/clusterProfile.ts';
import type { ObservedCluster } from '../../../../core/domain/model/observedCluster.ts';
import type { ScopeOutcomeKind } from '../../../../core/domain/model/scope.ts';
import { normalize } from '../../../../core/domain/normalize.ts';
import { inventoryOptions } from '../../../support/settings.ts';
import type { Plan } from '../../../../core/domain/plan.ts';
import type { Hub } from '../../../../core/sync/ports.ts';
import { syncScope } from '../../../support/absences.ts';
import { aksCluster, eksCluster } from '../../../support/fixtures.ts';
import { adminKubeConfig, localHub, uniqueNamespace } from '../../../support/hub.ts';
import { fileHubInodes, fileHubWrites } from '../../../support/hubCounts.ts';
import { temporaryDirectory } from '../../../support/tmp.ts';

const scope = { provider: 'aks' as const, account: '00000000-1111-2222-3333-444444444444', region: '*' };
const selector = { 'x-k8s.io/cluster-manager': 'cpsync' };

/** A run of listings that exercises create, update, miss, return, failure and delete. */
const web = aksCluster({ name: 'web' });
const api = aksCluster({ name: 'api', resourceGroup: 'rg-api' });
const batch = aksCluster({
  name: 'batch',
  resourceGroup: 'rg-batch',
  health: { status: 'Succeeded', powerState: 'Stopped', issues: [] },
});
const steps: Array<[ScopeOutcomeKind, ObservedCluster[]]> = [
  ['complete', [web, api, batch]],
  ['complete', [web, api, batch]],
  ['complete', [{ ...web, kubernetesVersion: '1.31.1' }, api]],
  ['failed', []],
  [
    'complete',
    [
      { ...web, kubernetesVersion: '1.31.1' },
      { ...api, nodes: { count: 5, instanceTypes: ['Standard_D8s_v5'] } },
    ],
  ],
  [
    'complete',
    [
      { ...web, kubernetesVersion: '1.31.1' },
      { ...api, nodes: { count: 5, instanceTypes: ['Standard_D8s_v5'] } },
      eksCluster({ name: 'x', provider: 'aks', account: scope.account, region: 'westeurope' }),
    ],
  ],
];

function summary(plan: Plan) {
  return {
    creates: plan.creates.map((c) => c.profile.metadata.name).sort(),
    updates: plan.updates
      .map((u) => [u.profile.metadata.name, u.changes, u.writeObject, u.writeStatus])
      .sort(),
    deletes: plan.deletes.map((d) => [d.current.metadata.name, d.reason]).sort(),
    unchanged: plan.unchanged,
  };
}

function owned(profiles: ClusterProfile[]) {
  return profiles
    .map((p) => ({
      name: p.metadata.name,
      labels: p.metadata.labels,
      annotations: p.metadata.annotations,
      spec: p.spec,
      status: p.status,
    }))
    .sort((a, b) => a.name.localeCompare(b.name));
}

async function replay(hub: Hub, namespace: string) {
  const options = inventoryOptions({ namespace });
  const plans = [];
  for (const [index, [kind, clusters]] of steps.entries()) {
    const result = await syncScope({
      hub,
      listing: { outcome: { scope, kind }, clusters },
      options,
      now: `2026-04-01T00:0${index}:00Z`,
    });
    assert.deepEqual(result.applied.failed, []);
    plans.push(summary(result.plan));
  }
  return { plans, profiles: owned(await hub.list(namespace, selector)) };
}

describe('file hub', () => {
  let directory: string;
  let kube: KubernetesHub;

  before(async () => {
    directory = temporaryDirectory('cpsync-files-');
    kube = new KubernetesHub({ kubeConfig: adminKubeConfig(await localHub()) });
  });

  it('round-trips the same profiles and the same plans as the Kubernetes hub', async () => {
    const namespace = uniqueNamespace('parity');
    const files = await replay(new FileHub({ directory }), namespace);
    const cluster = await replay(kube, namespace);
    assert.deepEqual(files.plans, cluster.plans);
    assert.deepEqual(files.profiles, cluster.profiles);
    assert.equal(files.profiles.length, 3);
  });

  it('keeps one readable YAML file per profile', async () => {
    const namespace = uniqueNamespace('files');
    const hub = new FileHub({ directory });
    await syncScope({
      hub,
      listing: { outcome: { scope, kind: 'complete' }, clusters: [web, api] },
      options: inventoryOptions({ namespace }),
      now: '2026-04-01T00:00:00Z',
    });
    const names = readdirSync(join(directory, namespace))
      .filter((f) => f !== '_namespace.yaml')
      .sort();
    assert.equal(names.length, 2);
    const profile = parse(readFileSync(join(directory, namespace, names[0]!), 'utf8')) as ClusterProfile;
    assert.equal(profile.apiVersion, 'multicluster.x-k8s.io/v1alpha1');
    assert.equal(`${profile.metadata.name}.yaml`, names[0]);
  });

  it('takes the ClusterSet labels off a namespace no longer a ClusterSet, once, and makes no namespace', async () => {
    const namespace = uniqueNamespace('files-set');
    const hub = new FileHub({ directory });
    const file = join(directory, namespace, '_namespace.yaml');
    await hub.ensureNamespace({ name: namespace, clusterSet: 'prod' });
    assert.deepEqual(parse(readFileSync(file, 'utf8')).metadata.labels, {
      'multicluster.x-k8s.io/clusterset': 'prod',
      'clusterset.multicluster.x-k8s.io': 'prod',
    });
    await hub.dropClusterSet(namespace);
    assert.deepEqual(parse(readFileSync(file, 'utf8')).metadata.labels, {});
    // Again: nothing to take off, the file is not written (its time set in the past stays).
    const past = new Date('2020-01-01T00:00:00Z');
    utimesSync(file, past, past);
    await hub.dropClusterSet(namespace);
    assert.equal(statSync(file).mtimeMs, past.getTime());
    const absent = uniqueNamespace('files-absent');
    await hub.dropClusterSet(absent);
    assert.equal(existsSync(join(directory, absent)), false);
  });

  it('performs zero writes when nothing changed', async () => {
    const namespace = uniqueNamespace('files-zero');
    const options = inventoryOptions({ namespace });
    const listing = { outcome: { scope, kind: 'complete' as const }, clusters: [web, api] };
    await syncScope({ hub: new FileHub({ directory }), listing, options, now: '2026-04-01T00:00:00Z' });
    const before = fileHubInodes(directory);
    const result = await syncScope({
      hub: new FileHub({ directory }),
      listing,
      options,
      now: '2026-04-01T00:15:00Z',
    });
    assert.equal(result.plan.unchanged, 2);
    assert.deepEqual(fileHubWrites(before, fileHubInodes(directory)), {
      created: 0,
      replaced: 0,
      removed: 0,
      total: 0,
    });
  });

  it('writes a created profile once, object and status together, and a change of both once', async () => {
    const namespace = uniqueNamespace('files-whole');
    const options = inventoryOptions({
      namespace,
      features: { tagLabels: true },
      labels: { fromTags: ['team'], prefix: 'cpsync.io/tag-' },
    });
    const hub = new FileHub({ directory });
    const at = (clusters: ObservedCluster[], now: string) =>
      syncScope({ hub, listing: { outcome: { scope, kind: 'complete' as const }, clusters }, options, now });
    let before = fileHubInodes(directory);
    const created = await at([web, api], '2026-04-01T00:00:00Z');
    assert.deepEqual(created.applied.failed, []);
    assert.deepEqual(fileHubWrites(before, fileHubInodes(directory)), {
      created: 2,
      replaced: 0,
      removed: 0,
      total: 2,
    });
    const stored = await hub.list(namespace, selector);
    // The hub's own count of writes: a resourceVersion moves on with each.
    assert.deepEqual(
      stored.map((p) => p.metadata.resourceVersion),
      ['1', '1'],
    );
    assert.ok(stored.every((p) => p.status?.accessProviders?.length && p.status.version));

    // Another team (a label: the object) and a new version (the status): one write.
    const upgraded = { ...web, kubernetesVersion: '1.31.1', tags: { team: 'checkout' } };
    before = fileHubInodes(directory);
    const changed = await at([upgraded, api], '2026-04-01T00:15:00Z');
    assert.equal(changed.plan.updates.length, 1);
    const update = changed.plan.updates[0]!;
    assert.ok(update.writeObject && update.writeStatus, 'the change is to both the object and the status');
    assert.deepEqual(fileHubWrites(before, fileHubInodes(directory)), {
      created: 0,
      replaced: 1,
      removed: 0,
      total: 1,
    });
    const web2 = (await hub.get(update.profile.metadata))!;
    assert.equal(web2.metadata.resourceVersion, '2');
    assert.equal(web2.metadata.labels?.['cpsync.io/tag-team'], 'checkout');
    assert.equal(web2.status?.version?.kubernetes, '1.31.1');
  });

  it('writes whole what an object apply then a status apply would write, for any profile and any stored one', async () => {
    const hub = new FileHub({ directory });
    const namespace = uniqueNamespace('files-whole-property');
    const options = inventoryOptions({
      namespace,
      features: { tagLabels: true },
      labels: { fromTags: ['team', 'env'], prefix: 'cpsync.io/tag-' },
    });
    const word = fc.stringMatching(/^[a-z][a-z0-9]{0,6}$/);
    const clusterOf = fc.record({
      version: fc.constantFrom('1.30.4', '1.31.1', '1.32.0'),
      count: fc.nat(40),
      tags: fc.dictionary(fc.constantFrom('team', 'env', 'other'), word, { maxKeys: 3 }),
      running: fc.boolean(),
      // A cluster still being created has no endpoint yet.
      reachable: fc.boolean(),
    });
    let n = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.option(clusterOf, { nil: undefined }),
        clusterOf,
        fc.dictionary(
          fc.constantFrom('team.example/owner', 'argocd.argoproj.io/x', 'cpsync.io/cluster'),
          word,
          { maxKeys: 2 },
        ),
        async (was, now, foreign) => {
          const name = `w${n++}`;
          const cluster = (c: typeof now) =>
            aksCluster({
              name,
              resourceGroup: `rg-${name}`,
              kubernetesVersion: c.version,
              nodes: { count: c.count, instanceTypes: ['Standard_D4s_v5'] },
              tags: c.tags,
              health: { status: 'Succeeded', powerState: c.running ? 'Running' : 'Stopped', issues: [] },
              ...(c.reachable ? {} : { endpoints: [] }),
            });
          const next = normalize(cluster(now), options, '2026-04-01T00:15:00Z');
          const whole = { namespace, name };
          const apart = { namespace, name: `${name}-apart` };
          const named = (p: ClusterProfile, ref: { name: string }) => ({
            ...p,
            metadata: { ...p.metadata, name: ref.name },
          });
          if (was) {
            // What the hub holds already, with labels and annotations another writer added to its file.
            const stored = normalize(cluster(was), options, '2026-04-01T00:00:00Z');
            for (const ref of [whole, apart]) {
              await hub.applyObject(named(stored, ref));
              await hub.applyStatus(named(stored, ref));
              const file = join(directory, namespace, `${ref.name}.yaml`);
              const edited = JSON.parse(readFileSync(file, 'utf8')) as ClusterProfile;
              Object.assign(edited.metadata.labels!, foreign);
              edited.metadata.annotations = { ...edited.metadata.annotations, ...foreign };
              writeFileSync(file, JSON.stringify(edited));
            }
          }
          const one = await hub.applyWhole(named(next, whole));
          await hub.applyObject(named(next, apart));
          const two = await hub.applyStatus(named(next, apart));
          const comparable = (p: ClusterProfile) => ({
            labels: p.metadata.labels,
            annotations: p.metadata.annotations,
            generation: p.metadata.generation,
            spec: p.spec,
            status: p.status,
          });
          assert.deepEqual(comparable(one), comparable(two));
          assert.deepEqual(comparable((await hub.get(whole))!), comparable(one), 'as stored');
          // One write where the two applies made two.
          assert.equal(Number(two.metadata.resourceVersion) - Number(one.metadata.resourceVersion), 1);
        },
      ),
      { numRuns: 60 },
    );
  });

  it('finds every profile written at once into a namespace that had no directory, each written apart or whole', async () => {
    const namespace = uniqueNamespace('files-first');
    const hub = new FileHub({ directory });
    const options = inventoryOptions({ namespace });
    const profiles = Array.from({ length: 24 }, (_, i) =>
      normalize(
        aksCluster({ name: `first-${i}`, resourceGroup: `rg-${i}` }),
        options,
        '2026-04-01T00:00:00Z',
      ),
    );
    // No list first: the namespace's first read happens while the other writes are under way.
    await Promise.all(
      profiles.map(async (profile, i) => {
        if (i % 2) return hub.applyWhole(profile);
        await hub.applyObject(profile);
        return hub.applyStatus(profile);
      }),
    );
    const listed = await hub.list(namespace, selector);
    assert.deepEqual(listed.map((p) => p.metadata.name).sort(), profiles.map((p) => p.metadata.name).sort());
    assert.ok(listed.every((p) => p.status?.version));
  });

  it('refuses a delete whose precondition no longer holds', async () => {
    const namespace = uniqueNamespace('files-rv');
    const hub = new FileHub({ directory });
    await syncScope({
      hub,
      listing: { outcome: { scope, kind: 'complete' }, clusters: [web] },
      options: inventoryOptions({ namespace }),
      now: '2026-04-01T00:00:00Z',
    });
    const [profile] = await hub.list(namespace, selector);
    await assert.rejects(
      hub.delete({ namespace, name: profile!.metadata.name, resourceVersion: '999' }),
      HubConflictError,
    );
    await hub.delete({
      namespace,
      name: profile!.metadata.name,
      resourceVersion: profile!.metadata.resourceVersion!,
    });
    assert.deepEqual(await hub.list(namespace, selector), []);
  });

  it('serves lists from memory yet sees what another process changed in the directory', async () => {
    const namespace = uniqueNamespace('files-index');
    const options = inventoryOptions({ namespace });
    const hub = new FileHub({ directory });
    await syncScope({
      hub,
      listing: { outcome: { scope, kind: 'complete' }, clusters: [web] },
      options,
      now: '2026-04-01T00:00:00Z',
    });
    assert.deepEqual(
      (await hub.list(namespace, selector)).map((p) => p.spec.displayName),
      ['web'],
    );
    // Another process (its own FileHub) adds a profile and removes one by hand.
    const other = new FileHub({ directory });
    await syncScope({
      hub: other,
      listing: { outcome: { scope, kind: 'complete' }, clusters: [web, api] },
      options,
      now: '2026-04-01T00:15:00Z',
    });
    assert.deepEqual((await hub.list(namespace, selector)).map((p) => p.spec.displayName).sort(), [
      'api',
      'web',
    ]);
    const webFile = readdirSync(join(directory, namespace)).find((f) => f.includes('-web-'))!;
    rmSync(join(directory, namespace, webFile));
    assert.deepEqual(
      (await hub.list(namespace, selector)).map((p) => p.spec.displayName),
      ['api'],
    );
    // What a caller does with a listed profile does not leak into the next list.
    const [listed] = await hub.list(namespace, selector);
    listed!.metadata.labels = {};
    assert.equal((await hub.list(namespace, selector)).length, 1);
  });

  // Owned labels only: the hub writes cpsync's labels (core/domain/ownership.ts).
  it('lists by every label of the selector as labels change, from its index and from the files', async () => {
    const namespace = uniqueNamespace('files-labels');
    const hub = new FileHub({ directory });
    await hub.ensureNamespace({ name: namespace });
    const profile = (name: string, labels: Record<string, string>): ClusterProfile => ({
      apiVersion: 'multicluster.x-k8s.io/v1alpha1',
      kind: 'ClusterProfile',
      metadata: { name, namespace, labels },
      spec: { displayName: name, clusterManager: { name: 'cpsync' } },
    });
    await hub.applyObject(profile('a', { 'cpsync.io/region': 'web', 'cpsync.io/account': 'prod' }));
    await hub.applyObject(profile('b', { 'cpsync.io/region': 'web', 'cpsync.io/account': 'dev' }));
    await hub.applyObject(profile('c', { 'cpsync.io/region': 'data', 'cpsync.io/account': 'prod' }));
    const names = async (selector: Record<string, string>, from: FileHub = hub) =>
      (await from.list(namespace, selector)).map((p) => p.metadata.name);
    assert.deepEqual(await names({}), ['a', 'b', 'c']);
    assert.deepEqual(await names({ 'cpsync.io/region': 'web' }), ['a', 'b']);
    assert.deepEqual(await names({ 'cpsync.io/region': 'web', 'cpsync.io/account': 'prod' }), ['a']);
    assert.deepEqual(await names({ 'cpsync.io/region': 'web', 'cpsync.io/account': 'test' }), []);
    assert.deepEqual(await names({ owner: 'nobody' }), []);
    await hub.applyObject(profile('b', { 'cpsync.io/region': 'data' }));
    await hub.delete({ namespace, name: 'c' });
    assert.deepEqual(await names({ 'cpsync.io/region': 'web' }), ['a']);
    assert.deepEqual(await names({ 'cpsync.io/region': 'data' }), ['b']);
    // An owned label no longer applied is gone, as server-side apply removes it.
    assert.deepEqual(await names({ 'cpsync.io/account': 'dev' }), []);
    assert.deepEqual(await names({ 'cpsync.io/account': 'prod' }), ['a']);
    // A hub that reads the same files builds the same index.
    const fresh = new FileHub({ directory });
    assert.deepEqual(await names({ 'cpsync.io/region': 'data' }, fresh), ['b']);
    assert.deepEqual(await names({ 'cpsync.io/region': 'data', 'cpsync.io/account': 'dev' }, fresh), []);
    assert.deepEqual(await names({ 'cpsync.io/account': 'prod' }, fresh), ['a']);
  });

  it('keeps every one of many concurrent writes while it reads again what another process changed', async () => {
    const namespace = uniqueNamespace('files-race');
    const hub = new FileHub({ directory });
    await hub.ensureNamespace({ name: namespace });
    const profile = (name: string): ClusterProfile => ({
      apiVersion: 'multicluster.x-k8s.io/v1alpha1',
      kind: 'ClusterProfile',
      metadata: { name, namespace, labels: { 'cpsync.io/region': 'web' } },
      spec: { displayName: name, clusterManager: { name: 'cpsync' } },
      status: { version: { kubernetes: '1.31' } },
    });
    await hub.applyObject(profile('first'));
    assert.equal((await hub.list(namespace, {})).length, 1);
    // Another process writes to the same directory: the hub must read it again, with writes arriving.
    await new FileHub({ directory }).applyObject(profile('other'));
    const names = Array.from({ length: 60 }, (_, i) => `p-${i}`);
    await Promise.all(
      names.map(async (name) => {
        await hub.applyObject(profile(name));
        await hub.applyStatus(profile(name));
      }),
    );
    const listed = await hub.list(namespace, { 'cpsync.io/region': 'web' });
    assert.equal(listed.length, 62);
    assert.ok(listed.filter((p) => p.metadata.name.startsWith('p-')).every((p) => p.status?.version));
    assert.equal(
      (await new FileHub({ directory }).list(namespace, { 'cpsync.io/region': 'web' })).length,
      62,
    );
  });

  it('refuses names that could escape its directory, as the Kubernetes hub refuses them (HubRejectedError)', async () => {
    const hub = new FileHub({ directory });
    await assert.rejects(
      hub.list('../etc', {}),
      (error: unknown) =>
        error instanceof HubRejectedError && /not a valid namespace name/.test(error.message),
    );
    await assert.rejects(
      hub.delete({ namespace: 'ok', name: '../../x' }),
      (error: unknown) => error instanceof HubRejectedError && /not a valid object name/.test(error.message),
    );
  });

  it('refuses a change of the immutable cluster manager with the Kubernetes hub’s error (HubRejectedError)', async () => {
    const namespace = uniqueNamespace('files-immutable');
    const hub = new FileHub({ directory });
    const profile = normalize(
      eksCluster({ name: 'fixed' }),
      inventoryOptions({ namespace }),
      '2026-04-01T00:00:00Z',
    );
    await hub.applyObject(profile);
    const other = { ...profile, spec: { ...profile.spec, clusterManager: { name: 'someone-else' } } };
    for (const apply of [hub.applyObject, hub.applyWhole])
      await assert.rejects(
        apply.call(hub, other),
        (error: unknown) =>
          error instanceof HubRejectedError && /ClusterManager is immutable/.test(error.message),
      );
    assert.equal(
      (await hub.get(profile.metadata))!.spec.clusterManager.name,
      profile.spec.clusterManager.name,
    );
  });

  it('refuses to change the cluster a profile is of (its provider id), as the hub’s admission policy refuses it', async () => {
    const namespace = uniqueNamespace('files-provider-id');
    const hub = new FileHub({ directory });
    const profile = normalize(
      eksCluster({ name: 'twin' }),
      inventoryOptions({ namespace }),
      '2026-04-01T00:00:00Z',
    );
    await hub.applyObject(profile);
    const other = {
      ...profile,
      metadata: {
        ...profile.metadata,
        annotations: {
          ...profile.metadata.annotations,
          'cpsync.io/provider-id': 'arn:aws:eks:eu-west-1:111122223333:cluster/twin',
        },
      },
    };
    for (const apply of [hub.applyObject, hub.applyWhole])
      await assert.rejects(
        apply.call(hub, other),
        (error: unknown) =>
          error instanceof HubRejectedError && /a profile's cluster never changes/.test(error.message),
      );
    assert.equal(
      (await hub.get(profile.metadata))!.metadata.annotations?.['cpsync.io/provider-id'],
      profile.metadata.annotations?.['cpsync.io/provider-id'],
    );
    // An Azure id in another case is the same cluster.
    const aks = normalize(aksCluster(), inventoryOptions({ namespace }), '2026-04-01T00:00:00Z');
    await hub.applyObject(aks);
    const shouted = aks.metadata.annotations!['cpsync.io/provider-id']!.toUpperCase();
    await hub.applyObject({
      ...aks,
      metadata: {
        ...aks.metadata,
        annotations: { ...aks.metadata.annotations, 'cpsync.io/provider-id': shouted },
      },
    });
  });
});
