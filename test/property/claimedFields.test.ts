/**
 * What cpsync takes away from its profile is gone, whoever claims it.
 *
 * Server-side apply removes a field its manager stops applying only while no other manager claims it, and any writer
 * allowed to update a profile may write its `metadata.managedFields`: a claim on the fields cpsync wrote, which the
 * admission policy does not see (it compares the spec, the status, labels and annotations). So a writer could keep a
 * property, a condition, an access provider or a field of one, the Kubernetes version, or the spec's display name that
 * cpsync took away.
 *
 * On a real kube-apiserver, fast-check makes cpsync's first and second status and spec, other tools' own properties
 * and conditions (written by server-side apply of their own, as Kueue and Argo CD would), entries under cpsync's names
 * another writer wrote itself (where no admission policy stops it), and forged claims: copies of cpsync's own
 * managedFields entries under another manager, or cpsync's own name, as an Update or an Apply, filed under the status
 * or the main resource. After cpsync's second write, the profile reads as the model says: cpsync's second status and
 * spec, and the other tools' entries, nothing else. The model is this file's, not cpsync's ownership code.
 * (test/integration/adapters/hub/admissionPolicy.test.ts shows the same with the shipped policy in force.)
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import {
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  type V1ManagedFieldsEntry,
} from '@kubernetes/client-node';
import { KubernetesHub } from '../../adapters/hub/KubernetesHub.ts';
import {
  CLUSTER_PROFILE_API_VERSION,
  CLUSTER_PROFILE_GROUP,
  CLUSTER_PROFILE_KIND,
  CLUSTER_PROFILE_PLURAL,
  CLUSTER_PROFILE_VERSION,
  type ClusterProfile,
  type ClusterProfileStatus,
} from '../../core/domain/model/clusterProfile.ts';

type NamedExtension = { name: string; extension: Record<string, unknown> };
import { normalize } from '../../core/domain/normalize.ts';
import { startHubProxy } from '../env/hubProxy.ts';
import { cpsyncEntriesAs, writeClaims, type ManagedProfile } from '../support/claims.ts';
import { eksCluster } from '../support/fixtures.ts';
import { adminKubeConfig, localHub, uniqueNamespace } from '../support/hub.ts';
import { inventoryOptions } from '../support/settings.ts';

const SEED = Number(process.env.CPSYNC_PROPERTY_SEED ?? 20261203);
const NOW = '2026-12-03T00:00:00Z';
const PROFILES = {
  group: CLUSTER_PROFILE_GROUP,
  version: CLUSTER_PROFILE_VERSION,
  plural: CLUSTER_PROFILE_PLURAL,
};
const APPLY = setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply);

/** Names cpsync writes (its own domain, and the standard ones it fills). */
const CPSYNC_PROPERTIES = [
  'cpsync.io/status',
  'cpsync.io/created-at',
  'count.node.k8s.io',
  'type.node.k8s.io',
];
const CPSYNC_CONDITIONS = ['ControlPlaneHealthy', 'Joined', 'consumers.cpsync.io/argocd'];
/** Names other tools write on the same profile. */
const OTHERS_PROPERTIES = ['example.com/owner', 'kueue.x-k8s.io/flavor'];
const OTHERS_CONDITIONS = ['example.com/Audited'];
/** An entry under cpsync's names that another writer wrote itself. */
const FORGED_PROPERTY = 'cpsync.io/forged';
const FORGED_CONDITION = 'consumers.cpsync.io/forged';
const ACCESS_PROVIDER = 'eks';

type Property = NonNullable<ClusterProfileStatus['properties']>[number];
type Condition = NonNullable<ClusterProfileStatus['conditions']>[number];

const property = (name: string): fc.Arbitrary<Property> =>
  fc.record(
    { name: fc.constant(name), value: fc.constantFrom('a', 'b', '3'), lastObservedTime: fc.constant(NOW) },
    { requiredKeys: ['name', 'value'] },
  );
const condition = (type: string): fc.Arbitrary<Condition> =>
  fc.record(
    {
      type: fc.constant(type),
      status: fc.constantFrom('True', 'False'),
      reason: fc.constantFrom('Running', 'Gone'),
      message: fc.constantFrom('', 'one', 'two'),
      lastTransitionTime: fc.constant(NOW),
      observedGeneration: fc.constantFrom(1, 2),
    },
    { requiredKeys: ['type', 'status', 'reason', 'message', 'lastTransitionTime'] },
  );
const entries = <T>(names: readonly string[], make: (name: string) => fc.Arbitrary<T>) =>
  fc.subarray([...names]).chain((chosen) => fc.tuple(...chosen.map(make)));

/** A status of cpsync's: some of its properties and conditions, its access provider (some of its fields), a version. */
const cpsyncStatus: fc.Arbitrary<ClusterProfileStatus> = fc
  .record(
    {
      properties: entries(CPSYNC_PROPERTIES, property),
      conditions: entries(CPSYNC_CONDITIONS, condition),
      cluster: fc.record(
        {
          server: fc.constantFrom('https://a.example.com', 'https://b.example.com'),
          'certificate-authority-data': fc.constantFrom('Y2E=', 'Y2Ey'),
          'tls-server-name': fc.constantFrom('a.example.com', 'b.example.com'),
          'proxy-url': fc.constant('https://proxy.example.com'),
          'insecure-skip-tls-verify': fc.boolean(),
          extensions: fc.constant<NamedExtension[]>([
            { name: 'client.authentication.k8s.io/exec', extension: { cluster: 'x' } },
          ]),
        },
        { requiredKeys: ['server'] },
      ),
      accessProvider: fc.boolean(),
      version: fc.constantFrom('1.30', '1.31'),
    },
    { requiredKeys: ['properties', 'conditions', 'cluster', 'accessProvider'] },
  )
  .map(({ properties, conditions, cluster, accessProvider, version }) => ({
    properties,
    conditions,
    accessProviders: accessProvider ? [{ name: ACCESS_PROVIDER, cluster }] : [],
    ...(version ? { version: { kubernetes: version } } : {}),
  }));

/** A claim on cpsync's fields: one of its managedFields entries copied under another name or operation. */
interface Forgery {
  /** cpsync's entry copied: its object's (labels, annotations, spec) or its status's. */
  of: 'object' | 'status';
  manager: string;
  operation: 'Update' | 'Apply';
  /** Where the copy is filed. */
  subresource: 'status' | '';
}
const forgery: fc.Arbitrary<Forgery> = fc.record({
  of: fc.constantFrom('object', 'status'),
  manager: fc.constantFrom('intruder', 'kueue', 'cpsync'),
  operation: fc.constantFrom('Update', 'Apply'),
  subresource: fc.constantFrom('status', ''),
});

interface Case {
  first: ClusterProfileStatus;
  second: ClusterProfileStatus;
  displayName: { first: boolean; second: boolean };
  /** Other tools' own entries, by their own server-side apply. */
  others: { properties: Property[]; conditions: Condition[] };
  /** Entries under cpsync's names another writer wrote itself. */
  forged: { property: boolean; condition: boolean };
  forgeries: Forgery[];
}
const cases: fc.Arbitrary<Case> = fc.record({
  first: cpsyncStatus,
  second: cpsyncStatus,
  displayName: fc.record({ first: fc.boolean(), second: fc.boolean() }),
  others: fc.record({
    properties: entries(OTHERS_PROPERTIES, property),
    conditions: entries(OTHERS_CONDITIONS, condition),
  }),
  forged: fc.record({ property: fc.boolean(), condition: fc.boolean() }),
  forgeries: fc.array(forgery, { minLength: 1, maxLength: 4 }),
});

/** A keyed list as a map, each entry in its JSON form (what the server gives back for what was sent). */
const keyed = <T extends object>(list: readonly T[] | undefined, key: (entry: T) => string) =>
  Object.fromEntries((list ?? []).map((entry) => [key(entry), JSON.parse(JSON.stringify(entry)) as unknown]));

describe('what cpsync takes away from its profile on a real kube-apiserver', () => {
  const namespace = uniqueNamespace('claimed');
  let core: CoreV1Api;
  let objects: CustomObjectsApi;
  let cpsync: KubernetesHub;

  before(async () => {
    const admin = adminKubeConfig(await localHub());
    core = admin.makeApiClient(CoreV1Api);
    objects = admin.makeApiClient(CustomObjectsApi);
    cpsync = new KubernetesHub({ kubeConfig: admin, accessProviderNames: [ACCESS_PROVIDER] });
    await core.createNamespace({ body: { metadata: { name: namespace } } });
  });

  after(async () => {
    await core?.deleteNamespace({ name: namespace });
  });

  it('is gone whoever claims it or wrote it under cpsync’s names; the other tools’ own entries stay', async () => {
    const base = normalize(eksCluster({ name: 'claimed' }), inventoryOptions({ namespace }), NOW);
    let run = 0;
    const read = async (name: string) =>
      (await objects.getNamespacedCustomObject({ ...PROFILES, namespace, name })) as ClusterProfile;
    await fc.assert(
      fc.asyncProperty(cases, async (c) => {
        const name = `claimed-${++run}`;
        const profile = (status: ClusterProfileStatus, displayName: boolean): ClusterProfile => ({
          ...base,
          metadata: { ...base.metadata, name },
          spec: { ...(displayName ? { displayName: 'claimed' } : {}), clusterManager: { name: 'cpsync' } },
          status,
        });
        const first = profile(c.first, c.displayName.first);
        await cpsync.applyObject(first);
        await cpsync.applyStatus(first);

        // Other tools' own entries, and entries under cpsync's names written by another writer.
        const written = {
          properties: [
            ...c.others.properties,
            ...(c.forged.property ? [{ name: FORGED_PROPERTY, value: 'kept?' }] : []),
          ],
          conditions: [
            ...c.others.conditions,
            ...(c.forged.condition
              ? [
                  {
                    type: FORGED_CONDITION,
                    status: 'True',
                    reason: 'Forged',
                    message: '',
                    lastTransitionTime: NOW,
                  },
                ]
              : []),
          ],
        };
        if (written.properties.length + written.conditions.length > 0)
          await objects.patchNamespacedCustomObjectStatus(
            {
              ...PROFILES,
              namespace,
              name,
              body: {
                apiVersion: CLUSTER_PROFILE_API_VERSION,
                kind: CLUSTER_PROFILE_KIND,
                metadata: { name, namespace },
                status: written,
              },
              fieldManager: 'kueue',
            },
            APPLY,
          );

        // The forged claims: cpsync's own entries copied, written back with the profile (a PUT).
        const current = (await read(name)) as ClusterProfile & {
          metadata: { managedFields?: V1ManagedFieldsEntry[] };
        };
        const entries = current.metadata.managedFields ?? [];
        const cpsyncs = (of: Forgery['of']) =>
          entries.find(
            (e) =>
              e.manager === 'cpsync' &&
              e.operation === 'Apply' &&
              (of === 'status' ? e.subresource === 'status' : !e.subresource),
          );
        const forged = c.forgeries.flatMap((f) => {
          const copied = cpsyncs(f.of);
          if (!copied) return [];
          const { subresource: _subresource, ...rest } = copied;
          return [
            {
              ...rest,
              manager: f.manager,
              operation: f.operation,
              ...(f.subresource ? { subresource: f.subresource } : {}),
            },
          ];
        });
        const replaced = (await objects.replaceNamespacedCustomObject({
          ...PROFILES,
          namespace,
          name,
          body: { ...current, metadata: { ...current.metadata, managedFields: [...entries, ...forged] } },
        })) as ClusterProfile & { metadata: { managedFields?: V1ManagedFieldsEntry[] } };
        // The claims were taken: the server keeps some entry for each forged manager (it merges one manager's
        // entries of one operation and subresource).
        for (const f of forged)
          assert.ok(
            (replaced.metadata.managedFields ?? []).some(
              (e) => e.manager === f.manager && e.operation === f.operation,
            ),
            `the server took the claim of ${f.manager} (${f.operation})`,
          );

        const second = profile(c.second, c.displayName.second);
        await cpsync.applyObject(second);
        await cpsync.applyStatus(second);

        // The model: cpsync's second write, and the other tools' own entries; nothing of cpsync's first, nothing
        // forged under its names.
        const stored = await read(name);
        assert.deepEqual(stored.spec, JSON.parse(JSON.stringify(second.spec)));
        const status = stored.status ?? {};
        assert.deepEqual(
          keyed(status.properties, (p) => p.name),
          { ...keyed(c.second.properties, (p) => p.name), ...keyed(c.others.properties, (p) => p.name) },
          'properties',
        );
        assert.deepEqual(
          keyed(status.conditions, (x) => x.type),
          { ...keyed(c.second.conditions, (x) => x.type), ...keyed(c.others.conditions, (x) => x.type) },
          'conditions',
        );
        assert.deepEqual(
          keyed(status.accessProviders, (a) => a.name),
          keyed(c.second.accessProviders, (a) => a.name),
          'access providers',
        );
        assert.deepEqual(status.version, c.second.version, 'the Kubernetes version');
        await objects.deleteNamespacedCustomObject({ ...PROFILES, namespace, name });
      }),
      { numRuns: 30, seed: SEED, endOnFailure: true },
    );
  });

  it('removes what a claim keeps when another write comes between, and never fails a write that landed', async () => {
    const proxy = await startHubProxy(await localHub());
    try {
      const through = new KubeConfig();
      through.loadFromString(proxy.kubeconfig);
      const viaProxy = new KubernetesHub({ kubeConfig: through, accessProviderNames: [ACCESS_PROVIDER] });
      const first = normalize(eksCluster({ name: 'raced' }), inventoryOptions({ namespace }), NOW);
      const { name } = first.metadata;
      const nodeFigures = (profile: ClusterProfile) =>
        (profile.status?.properties ?? []).map((p) => p.name).filter((n) => n.endsWith('.node.k8s.io'));
      const statusOf = (value: string): ClusterProfile => {
        const next = structuredClone(first);
        next.status!.properties = next.status!.properties!.filter((p) => !p.name.endsWith('.node.k8s.io'));
        next.status!.properties.find((p) => p.name === 'cpsync.io/status')!.value = value;
        return next;
      };
      /** cpsync writes `first`, and another manager claims its status's fields. */
      const claimed = async () => {
        await cpsync.applyObject(first);
        await cpsync.applyStatus(first);
        const current = (await read(name)) as ManagedProfile;
        await writeClaims(objects, current, cpsyncEntriesAs(current, 'intruder', 'status'));
      };
      const read = async (n: string) =>
        (await objects.getNamespacedCustomObject({ ...PROFILES, namespace, name: n })) as ClusterProfile;

      // Another write between the apply and the removal: the removal is tried again at the version it made.
      await claimed();
      let patches = 0;
      proxy.rule = ({ method, path }) =>
        method === 'PATCH' && path.split('?')[0]!.endsWith('/status') && ++patches === 2
          ? {
              holdRequest: true,
              until: objects.patchNamespacedCustomObject(
                {
                  ...PROFILES,
                  namespace,
                  name,
                  body: { metadata: { labels: { 'example.com/between': 'yes' } } },
                },
                setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
              ),
            }
          : undefined;
      const between = await viaProxy.applyStatus(statusOf('UPDATING'));
      assert.equal(patches, 3, 'the apply, the removal refused, the removal again');
      assert.deepEqual(nodeFigures(between), []);
      const afterBetween = await read(name);
      assert.deepEqual(nodeFigures(afterBetween), []);
      assert.equal(afterBetween.metadata.labels?.['example.com/between'], 'yes', 'the write between kept');

      // The removal refused every time: the write that landed is given back, not failed; the next write removes it.
      await claimed();
      proxy.rule = ({ method, path }) =>
        method === 'PATCH' && path.split('?')[0]!.endsWith('/status') && ++patches > 4
          ? { status: 409 }
          : undefined;
      const landed = await viaProxy.applyStatus(statusOf('FAILED'));
      assert.equal(landed.status?.properties?.find((p) => p.name === 'cpsync.io/status')?.value, 'FAILED');
      assert.deepEqual(nodeFigures(await read(name)), nodeFigures(first), 'left for the next write');
      proxy.rule = undefined;
      await viaProxy.applyStatus(statusOf('FAILED'));
      assert.deepEqual(nodeFigures(await read(name)), []);
      await objects.deleteNamespacedCustomObject({ ...PROFILES, namespace, name });
    } finally {
      await proxy.stop();
    }
  });

  it('removes a property the member probe listed before the write and no longer does, whoever claims it', async () => {
    const listed = normalize(eksCluster({ name: 'probed' }), inventoryOptions({ namespace }), NOW);
    const { name } = listed.metadata;
    listed.status!.properties!.push(
      { name: 'cpsync.io/member-properties', value: '["example.org/capacity"]', lastObservedTime: NOW },
      { name: 'example.org/capacity', value: '40', lastObservedTime: NOW },
    );
    await cpsync.applyObject(listed);
    const before = await cpsync.applyStatus(listed);
    const current = (await objects.getNamespacedCustomObject({
      ...PROFILES,
      namespace,
      name,
    })) as ManagedProfile;
    // The claim is on the property alone (the list of names goes with cpsync's write).
    const key = 'k:{"name":"example.org/capacity"}';
    const claims = cpsyncEntriesAs(current, 'intruder', 'status').map((e) => {
      const properties = (e.fieldsV1 as { 'f:status': { 'f:properties': Record<string, unknown> } })[
        'f:status'
      ]['f:properties'];
      assert.ok(properties[key], 'cpsync wrote the property');
      return { ...e, fieldsV1: { 'f:status': { 'f:properties': { [key]: properties[key] } } } };
    });
    await writeClaims(objects, current, claims);
    // The probe no longer reports the property: the list and the property go, though the list written names it not.
    const unlisted = structuredClone(listed);
    unlisted.status!.properties = unlisted.status!.properties!.filter(
      (p) => p.name !== 'cpsync.io/member-properties' && p.name !== 'example.org/capacity',
    );
    await cpsync.applyStatus(unlisted, before);
    const stored = (await objects.getNamespacedCustomObject({
      ...PROFILES,
      namespace,
      name,
    })) as ClusterProfile;
    assert.deepEqual(
      (stored.status?.properties ?? []).map((p) => p.name).sort(),
      unlisted.status!.properties.map((p) => p.name).sort(),
    );
    await objects.deleteNamespacedCustomObject({ ...PROFILES, namespace, name });
  });
});
