/**
 * Projections: one cpsync serving several inventories. The real CLI, the local clouds and the real hub;
 * the oracle reads the hub (objects and resourceVersions) and the delivered events. A cluster a rule
 * matches is written into each of the rule's namespaces — the same profile, with one cross-inventory
 * label — and every copy is created, updated, graced and deleted like the one in the cluster's own
 * namespace; a copy no rule asks for any more goes at once, the cluster's own profile stays.
 */
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CustomObjectsApi } from '@kubernetes/client-node';
import { parse, stringify } from 'yaml';
import { DetailValidator } from '../../events/validate.ts';
import { EKS_ACCOUNT, GCP_PROJECT, gkeCluster, type Emulators } from '../env/emulators.ts';
import { jsonLines, runCli } from '../support/cli.ts';
import { estateOnHub } from '../support/estate.ts';
import { orderedSteps } from '../support/steps.ts';
import { adminKubeConfig, listedProfiles } from '../support/hub.ts';
import { conformance } from '../support/conformance.ts';
import { v1alpha2Violations } from '../support/v1alpha2.ts';
import type { ClusterProfile } from '../../core/domain/model/clusterProfile.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- configuration and hub documents are read freely here
type Doc = Record<string, any>;

/**
 * What must be the same in every copy: all but the namespace, where the copy came from or went (label and
 * annotation), identity and times.
 */
function content(profile: Doc) {
  const labels = { ...profile.metadata.labels };
  delete labels['cpsync.io/projected-from'];
  const annotations = { ...profile.metadata.annotations };
  delete annotations['cpsync.io/projected-to'];
  const status = structuredClone(profile.status);
  for (const property of status.properties ?? []) delete property.lastObservedTime;
  for (const condition of status.conditions ?? []) delete condition.lastTransitionTime;
  return {
    name: profile.metadata.name,
    labels,
    annotations,
    spec: profile.spec,
    status,
  };
}

describe('projections: a cluster in several inventories', () => {
  let emulators: Emulators;
  let objects: CustomObjectsApi;
  let document: Doc;
  let own: string;
  let kueue: string;
  let argo: string;
  let config: string;
  let eventsFile: string;
  const validator = new DetailValidator();

  // The cases build on each other: run in order as one test (end-to-end tests run in a random order).
  const { step, run: runSteps } = orderedSteps();

  before(async () => {
    const estate = await estateOnHub('projections');
    emulators = estate.emulators;
    objects = adminKubeConfig(estate.state).makeApiClient(CustomObjectsApi);
    own = estate.namespace;
    kueue = `${own}-kueue`;
    argo = `${own}-argocd`;
    const directory = join(emulators.directory, 'projections');
    mkdirSync(directory, { recursive: true });
    config = join(directory, 'cpsync.yaml');
    eventsFile = join(directory, 'events.jsonl');
    document = parse(readFileSync(emulators.configPath, 'utf8')) as Doc;
    document.hub = { kubeconfig: estate.state.kubeconfig };
    document.outbox = { directory: join(directory, 'outbox') };
    document.bus = { jsonl: eventsFile };
    document.inventory = {
      namespace: own,
      projections: [
        { provider: 'eks', region: 'us-east-1', namespaces: [kueue] },
        { tag: { key: 'team', value: 'data' }, namespaces: [argo, kueue] },
      ],
    };
  });
  after(() => emulators?.stop());

  const sync = async (...args: string[]) => {
    writeFileSync(config, stringify(document));
    writeFileSync(eventsFile, '');
    const run = await runCli(['sync', '--config', config, ...args], { env: emulators.env });
    assert.equal(run.code, 0, run.stderr);
    const events = jsonLines<Doc>(readFileSync(eventsFile, 'utf8'));
    for (const event of events) assert.deepEqual(validator.errors(event['detail-type'], event.detail), []);
    return { run, events };
  };
  const changes = (events: Doc[], type: string) =>
    events
      .filter((e) => e['detail-type'] === `ClusterProfile ${type}`)
      .map((e) => `${e.detail.namespace}/${e.detail.cluster.displayName}`)
      .sort();
  const profiles = async (namespace: string): Promise<Doc[]> =>
    (await listedProfiles(objects, namespace)).sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
  const byName = async (namespace: string) =>
    new Map((await profiles(namespace)).map((p) => [p.spec.displayName as string, p]));
  const versions = async () =>
    Object.fromEntries(
      (await Promise.all([own, kueue, argo].map(profiles)))
        .flat()
        .map((p) => [`${p.metadata.namespace}/${p.metadata.name}`, p.metadata.resourceVersion]),
    );

  step(
    'writes each matching cluster into every namespace its rules name, the same profile under one cluster label, each copy announced',
    async () => {
      const { events } = await sync();
      const copies = { [kueue]: await byName(kueue), [argo]: await byName(argo) };
      assert.equal((await profiles(own)).length, 7);
      assert.deepEqual([...copies[kueue]!.keys()].sort(), ['analytics', 'checkout', 'edge', 'payments']);
      assert.deepEqual([...copies[argo]!.keys()].sort(), ['analytics', 'edge']);
      assert.equal(
        copies[kueue]!.get('payments')!.metadata.annotations['cpsync.io/provider-id'],
        (await profiles(own)).find(
          (p) => p.spec.displayName === 'payments' && p.metadata.labels['cpsync.io/region'] === 'us-east-1',
        )!.metadata.annotations['cpsync.io/provider-id'],
        'the us-east-1 payments cluster, not its eu-west-1 namesake',
      );
      for (const [namespace, copied] of Object.entries(copies))
        for (const [name, copy] of copied) {
          const primary = (await profiles(own)).find((p) => p.metadata.name === copy.metadata.name)!;
          assert.deepEqual(content(copy), content(primary), `${namespace}/${name}`);
          assert.equal(copy.metadata.labels['cpsync.io/projected-from'], own);
          assert.ok(primary.metadata.annotations['cpsync.io/projected-to'].split(',').includes(namespace));
          assert.match(copy.metadata.labels['cpsync.io/cluster'], /^[0-9a-f]{20}$/);
        }
      // The upstream conformance suite's specs (held as ours: test/support/conformance.ts), in every
      // inventory cpsync writes, its own and the projections, and v1alpha2's rules on every profile.
      for (const namespace of [own, kueue, argo]) {
        const inventory = (await profiles(namespace)) as ClusterProfile[];
        for (const result of conformance(inventory, 'cpsync'))
          assert.equal(result.failure, undefined, `${namespace}: ${result.label}: ${result.spec}`);
        for (const profile of inventory)
          assert.deepEqual(v1alpha2Violations(profile), [], `${namespace}/${profile.metadata.name}`);
      }
      // One member id per cluster: the same on its copies, another for its namesake in eu-west-1.
      const memberIds = new Map<string, Set<string>>();
      for (const namespace of [own, kueue, argo])
        for (const p of await profiles(namespace))
          memberIds.set(
            p.metadata.annotations['cpsync.io/provider-id'],
            (memberIds.get(p.metadata.annotations['cpsync.io/provider-id']) ?? new Set()).add(
              p.metadata.labels['multicluster.x-k8s.io/inventory-member-id'],
            ),
          );
      assert.equal(memberIds.size, 7);
      assert.ok([...memberIds.values()].every((ids) => ids.size === 1));
      assert.equal(new Set([...memberIds.values()].flatMap((ids) => [...ids])).size, 7);
      // Clusters no rule matches carry no cluster label.
      assert.deepEqual(
        (await profiles(own))
          .filter((p) => p.metadata.labels['cpsync.io/cluster'] === undefined)
          .map((p) => `${p.spec.displayName}@${p.metadata.labels['cpsync.io/region']}`)
          .sort(),
        ['batch@westeurope', 'payments@eu-west-1', 'web@westeurope'],
      );
      assert.equal(changes(events, 'Created').length, 7 + 4 + 2);
      assert.deepEqual(
        changes(events, 'Created').filter((c) => c.startsWith(`${argo}/`)),
        [`${argo}/analytics`, `${argo}/edge`],
      );
    },
  );

  step(
    'writes nothing when nothing changed, in any inventory (resourceVersions, as the hub keeps them)',
    async () => {
      const before = await versions();
      const { events } = await sync();
      assert.deepEqual(await versions(), before);
      assert.deepEqual(
        events.filter((e) => e['detail-type'] !== 'Inventory Scope Synced'),
        [],
      );
    },
  );

  step(
    'updates every copy of a changed cluster, and graces and deletes a gone cluster in every inventory at the same listing',
    async () => {
      emulators.gke.clusters.set(GCP_PROJECT, [
        gkeCluster('analytics', 'europe-west1'),
        gkeCluster('edge', 'europe-west1-c', { currentMasterVersion: '1.31.2-gke.1100000' }),
      ]);
      const upgraded = await sync();
      assert.deepEqual(changes(upgraded.events, 'Updated'), [`${argo}/edge`, `${kueue}/edge`, `${own}/edge`]);
      for (const namespace of [own, kueue, argo])
        assert.equal((await byName(namespace)).get('edge')!.status.version.kubernetes, '1.31.2-gke.1100000');

      emulators.gke.clusters.set(GCP_PROJECT, [
        gkeCluster('edge', 'europe-west1-c', { currentMasterVersion: '1.31.2-gke.1100000' }),
      ]);
      const missed = await sync();
      assert.deepEqual(changes(missed.events, 'Deleted'), []);
      for (const namespace of [own, kueue, argo]) {
        const analytics = (await byName(namespace)).get('analytics')!;
        const joined = analytics.status.conditions.find((c: Doc) => c.type === 'Joined');
        assert.equal(joined.reason, 'NotFoundInProvider', namespace);
      }
      const gone = await sync();
      assert.deepEqual(changes(gone.events, 'Deleted'), [
        `${argo}/analytics`,
        `${kueue}/analytics`,
        `${own}/analytics`,
      ]);
      for (const namespace of [own, kueue, argo])
        assert.equal((await byName(namespace)).has('analytics'), false);
    },
  );

  step(
    'deletes at once the copies a rule no longer asks for, and keeps the cluster’s own profile without the cluster label',
    async () => {
      const kept = Object.fromEntries(
        [...(await byName(kueue))]
          .filter(([name]) => name !== 'edge')
          .map(([n, p]) => [n, p.metadata.resourceVersion]),
      );
      document.inventory.projections = [{ provider: 'eks', region: 'us-east-1', namespaces: [kueue] }];
      const { events } = await sync();
      assert.deepEqual(changes(events, 'Deleted'), [`${argo}/edge`, `${kueue}/edge`]);
      assert.deepEqual(changes(events, 'Updated'), [`${own}/edge`]);
      const edge = (await byName(own)).get('edge')!;
      assert.equal(edge.metadata.labels['cpsync.io/cluster'], undefined);
      assert.equal(edge.metadata.annotations['cpsync.io/projected-to'], undefined);
      const payments = (await profiles(own)).find(
        (p) => p.spec.displayName === 'payments' && p.metadata.labels['cpsync.io/region'] === 'us-east-1',
      )!;
      assert.equal(payments.metadata.annotations['cpsync.io/projected-to'], kueue);
      assert.deepEqual(await profiles(argo), []);
      assert.deepEqual(
        Object.fromEntries([...(await byName(kueue))].map(([n, p]) => [n, p.metadata.resourceVersion])),
        kept,
        'the EKS copies are not written',
      );
    },
  );

  step('confines a --scope sync to the copies of its own scope', async () => {
    const eks = ['--scope', `eks/${EKS_ACCOUNT}/us-east-1`];
    const gke = ['--scope', `gke/${GCP_PROJECT}`];
    document.inventory.projections = [
      { provider: 'eks', region: 'us-east-1', namespaces: [kueue] },
      { provider: 'gke', namespaces: [argo] },
    ];
    const added = await sync(...gke);
    assert.deepEqual(changes(added.events, 'Created'), [`${argo}/edge`]);
    // The GKE rule removed, but only EKS synced: the GKE copy is not its to judge.
    document.inventory.projections = [{ provider: 'eks', region: 'us-east-1', namespaces: [kueue] }];
    const other = await sync(...eks);
    assert.deepEqual(changes(other.events, 'Deleted'), []);
    assert.equal((await byName(argo)).has('edge'), true);
    const own = await sync(...gke);
    assert.deepEqual(changes(own.events, 'Deleted'), [`${argo}/edge`]);
    assert.equal((await byName(kueue)).size, 2, 'the EKS copies stay');
  });

  it('projects, updates, graces and deletes every copy, in this order', async () => {
    await runSteps();
  });
});
