/**
 * Profiles that others hold: a consumer controller (as the Argo CD ClusterProfile integration does) puts its
 * own finalizer, labels and annotations on cpsync's profiles. The real CLI, the local clouds and the real
 * hub; the oracle reads the hub (objects, uids, resourceVersions) and the delivered events.
 */
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { parse, stringify } from 'yaml';
import { GCP_PROJECT, gkeCluster, type Emulators } from '../env/emulators.ts';
import { jsonLines, runCli } from '../support/cli.ts';
import { estateOnHub } from '../support/estate.ts';
import { adminKubeConfig } from '../support/hub.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- hub documents are read freely here
type Doc = Record<string, any>;

// The finalizer the Argo CD ClusterProfile integration puts on each profile it renders (its controller.go).
const FINALIZER = 'argoproj.io/cluster-profile-finalizer';
const GROUP = { group: 'multicluster.x-k8s.io', version: 'v1alpha1', plural: 'clusterprofiles' };

describe('profiles that other controllers hold (a foreign finalizer, labels and annotations)', () => {
  let emulators: Emulators;
  let objects: CustomObjectsApi;
  let namespace: string;
  let config: string;
  let eventsFile: string;

  before(async () => {
    const estate = await estateOnHub('foreign');
    ({ emulators, namespace } = estate);
    objects = adminKubeConfig(estate.state).makeApiClient(CustomObjectsApi);
    const directory = join(emulators.directory, 'foreign');
    mkdirSync(directory, { recursive: true });
    config = join(directory, 'cpsync.yaml');
    eventsFile = join(directory, 'events.jsonl');
    const document = parse(readFileSync(emulators.configPath, 'utf8')) as Doc;
    document.hub = { kubeconfig: estate.state.kubeconfig };
    document.outbox = { directory: join(directory, 'outbox') };
    document.bus = { jsonl: eventsFile };
    // One complete listing without a cluster deletes its profile.
    document.inventory = { namespace, deletionGraceListings: 1 };
    writeFileSync(config, stringify(document));
  });
  after(() => emulators?.stop());

  const sync = async () => {
    writeFileSync(eventsFile, '');
    const run = await runCli(['sync', '--config', config], { env: emulators.env });
    assert.equal(run.code, 0, run.stderr);
    return { run, events: jsonLines<Doc>(readFileSync(eventsFile, 'utf8')) };
  };
  const about = (events: Doc[], name: string) =>
    events
      .filter((e) => e['detail-type'] !== 'Inventory Scope Synced')
      .filter((e) => e.detail.cluster.displayName === name)
      .map((e) => e['detail-type'] as string);
  const analytics = async (): Promise<Doc | undefined> =>
    ((await objects.listNamespacedCustomObject({ ...GROUP, namespace })) as { items: Doc[] }).items.find(
      (p) => p.spec.displayName === 'analytics',
    );
  /** What the consumer controller does to a profile, as its own field manager (a JSON merge patch). */
  const consumerPatch = (name: string, body: Doc) =>
    objects.patchNamespacedCustomObject(
      { ...GROUP, namespace, name, body, fieldManager: 'argocd-clusterprofile' },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );

  it('keeps what others put on a profile, announces its deletion once, leaves it terminating, and makes a new one once it is gone', async () => {
    await sync();
    const first = (await analytics())!;
    await consumerPatch(first.metadata.name, {
      metadata: {
        finalizers: [FINALIZER],
        labels: { 'argocd.argoproj.io/secret-type': 'cluster', team: 'data-platform' },
        annotations: { 'argocd.argoproj.io/managed-by': 'argocd' },
      },
    });

    // Synced again: nothing cpsync does removes the consumer's finalizer, labels or annotations.
    const kept = await sync();
    assert.deepEqual(about(kept.events, 'analytics'), []);
    const held = (await analytics())!;
    assert.deepEqual(held.metadata.finalizers, [FINALIZER]);
    assert.equal(held.metadata.labels['argocd.argoproj.io/secret-type'], 'cluster');
    assert.equal(held.metadata.labels.team, 'data-platform');
    assert.equal(held.metadata.annotations['argocd.argoproj.io/managed-by'], 'argocd');

    // The cluster is deleted in the cloud: one Deleted event; the object stays, terminating, held by the finalizer.
    const gke = emulators.gke.clusters.get(GCP_PROJECT)!;
    const cluster = gke.find((c) => c.name === 'analytics')!;
    emulators.gke.clusters.set(
      GCP_PROJECT,
      gke.filter((c) => c !== cluster),
    );
    const deleted = await sync();
    assert.deepEqual(about(deleted.events, 'analytics'), ['ClusterProfile Deleted']);
    const terminating = (await analytics())!;
    assert.ok(terminating.metadata.deletionTimestamp, 'being deleted');
    assert.equal(terminating.metadata.uid, first.metadata.uid);

    // Later runs neither delete it again, announce it again, nor write to it.
    for (let i = 0; i < 2; i++) {
      const later = await sync();
      assert.deepEqual(about(later.events, 'analytics'), []);
      assert.match(later.run.stderr, / 0 deleted/);
    }
    assert.equal((await analytics())!.metadata.resourceVersion, terminating.metadata.resourceVersion);

    // The cluster comes back while its old profile is still terminating: no write to the old object.
    emulators.gke.clusters.set(GCP_PROJECT, [
      ...emulators.gke.clusters.get(GCP_PROJECT)!,
      gkeCluster('analytics', 'europe-west1'),
    ]);
    const waiting = await sync();
    assert.equal(waiting.run.code, 0, waiting.run.stderr);
    assert.deepEqual(about(waiting.events, 'analytics'), []);
    assert.equal((await analytics())!.metadata.resourceVersion, terminating.metadata.resourceVersion);

    // The consumer lets go: the old object goes; the next run makes the cluster's new profile, announced once.
    await consumerPatch(first.metadata.name, { metadata: { finalizers: null } });
    for (let i = 0; i < 50 && (await analytics()); i++) await new Promise((r) => setTimeout(r, 100));
    assert.equal(await analytics(), undefined);
    const back = await sync();
    assert.deepEqual(about(back.events, 'analytics'), ['ClusterProfile Created']);
    const fresh = (await analytics())!;
    assert.notEqual(fresh.metadata.uid, first.metadata.uid);
    assert.equal(fresh.metadata.deletionTimestamp, undefined);
    assert.equal(
      fresh.metadata.labels['multicluster.x-k8s.io/inventory-member-id'],
      first.metadata.labels['multicluster.x-k8s.io/inventory-member-id'],
      'the same member id for the same cloud cluster',
    );
    const settled = await sync();
    assert.deepEqual(about(settled.events, 'analytics'), []);
  });
});
