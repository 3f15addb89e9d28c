/**
 * Feature states with a clean turn-off (KEP-3920), for every feature in the registry: the real CLI,
 * the local clouds and the real hub. For each feature: on → use → off, after which the hub holds,
 * field for field (times aside), what a hub that never had the feature on holds — profiles, the
 * ClusterSet labels of the namespace and the feature-state ConfigMap — and a further run writes nothing
 * (resourceVersions, as the hub keeps them). A feature registered without a way to use it here fails.
 */
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { parse, stringify } from 'yaml';
import { FEATURES, FEATURE_SUMMARY_KEY, type FeatureName } from '../../core/domain/features.ts';
import {
  AZURE_SUBSCRIPTION,
  GCP_PROJECT,
  gkeCluster,
  localGoogleFederation,
  withEksClusters,
  type Emulators,
} from '../env/emulators.ts';
import { serveEksAccessEntries, type EksAccessEntries } from '../env/eksAccessEntries.ts';
import { letCpsyncGrantInProject } from '../env/fakes/gkeServer.ts';
import { runCli, jsonLines } from '../support/cli.ts';
import { cloudSnapshot, estateOnHub } from '../support/estate.ts';
import { adminKubeConfig, listedProfiles } from '../support/hub.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- configuration and hub documents are read freely here
type Doc = Record<string, any>;

const SET_LABELS = ['multicluster.x-k8s.io/clusterset', 'clusterset.multicluster.x-k8s.io'];

/** The external_account configuration GKE tokens come from while the member probe is on. */
let googleFederation = '';
/** The local EKS access-entry API (the accessGrants feature). */
let accessEntries: EksAccessEntries | undefined;

/**
 * How each feature is put to use, and how the test sees (from the hub, not from cpsync's registry)
 * that it wrote something.
 */
const USE: Record<
  FeatureName,
  {
    configure(document: Doc, namespace: string): void;
    prepare?(emulators: Emulators): void;
    /** More namespaces the feature writes profiles to (compared with the inventory's own). */
    also?(namespace: string): string[];
    wrote(profiles: Doc[], namespaceLabels: Record<string, string>): boolean;
  }
> = {
  tagProperties: {
    configure: (document) => (document.inventory.tagAllowList = ['team']),
    wrote: (profiles) =>
      profiles.some((p) => p.status.properties.some((q: Doc) => q.name.startsWith('cpsync.io/tag.'))),
  },
  tagLabels: {
    configure: (document) => (document.inventory.labels = { fromTags: ['team', 'owner'] }),
    // An AKS cluster tagged with an owner whose value is no label value: left out, and counted.
    prepare: (emulators) => {
      const web = emulators.arm.clusters.get(AZURE_SUBSCRIPTION)!.find((c) => c.name === 'web')!;
      web.tags = { ...web.tags, owner: 'Jane Doe' };
    },
    wrote: (profiles) =>
      profiles.some(
        (p) =>
          p.metadata.labels['cpsync.io/tag-team'] !== undefined &&
          p.metadata.annotations['cpsync.io/labels-from-tags'] === 'cpsync.io/tag-team',
      ) &&
      profiles.some((p) =>
        p.status.properties.some((q: Doc) => q.name === 'cpsync.io/tag-labels-omitted' && q.value === '1'),
      ),
  },
  privateEndpoints: {
    configure: () => {},
    // A cluster with a public and a private endpoint.
    prepare: (emulators) =>
      emulators.gke.clusters.set(GCP_PROJECT, [
        gkeCluster('analytics', 'europe-west1', { privateClusterConfig: { privateEndpoint: '10.0.0.2' } }),
        gkeCluster('edge', 'europe-west1-c'),
      ]),
    wrote: (profiles) =>
      profiles.some((p) => p.status.accessProviders?.[0]?.cluster?.server === 'https://10.0.0.2'),
  },
  clusterSets: {
    configure: (document, namespace) => (document.inventory.clusterSets = { prod: [namespace] }),
    wrote: (profiles, labels) =>
      labels['multicluster.x-k8s.io/clusterset'] === 'prod' &&
      profiles.every((p) => p.status.properties.some((q: Doc) => q.name === 'clusterset.k8s.io')),
  },
  projections: {
    configure: (document, namespace) =>
      (document.inventory.projections = [{ provider: 'gke', namespaces: [`${namespace}-copies`] }]),
    also: (namespace) => [`${namespace}-copies`],
    wrote: (profiles) =>
      profiles.some((p) => p.metadata.labels['cpsync.io/projected-from'] !== undefined) &&
      profiles.some((p) => p.metadata.labels['cpsync.io/cluster'] !== undefined),
  },
  memberProbe: {
    configure: (document) => {
      // Every member refuses at once: the deadline is one no reading on a busy machine comes near, so what the
      // profiles say comes from the members' refusals, never from a clock.
      document.memberProbe = { everyMinutes: 15, slotMinutes: 15, timeoutSeconds: 60, budgetSeconds: 60 };
      // GKE tokens from the local Google STS (a service-account key's come from Google itself).
      document.providers.gke.credentials = { file: googleFederation };
    },
    // Every member at a loopback port nothing listens on (no traffic leaves the machine): each profile then
    // carries what the probe writes for a member it cannot reach (test/e2e/members.test.ts reads real ones).
    prepare: (emulators) => {
      googleFederation = localGoogleFederation(emulators.directory, emulators.gke);
      emulators.proxy.rewrite(withEksClusters(() => ({ endpoint: 'https://127.0.0.1:2' })));
      for (const cluster of emulators.gke.clusters.get(GCP_PROJECT) ?? []) cluster.endpoint = '127.0.0.1:2';
      for (const cluster of emulators.arm.clusters.get(AZURE_SUBSCRIPTION) ?? [])
        cluster.properties.fqdn = '127.0.0.3';
    },
    wrote: (profiles) =>
      profiles.length > 0 &&
      profiles.every((p) =>
        p.status.conditions.some((c: Doc) => c.type === 'MemberReachable' && c.status === 'False'),
      ),
  },
  accessGrants: {
    // One consumer bound to the inventory, with an identity on each cloud. EKS access entries are made at
    // the local EKS API (cpsync records them); GKE and AKS members are at ports nothing listens on, so their
    // consumer conditions say so (test/e2e/grants.test.ts grants on real members).
    configure: (document, namespace) => {
      document.consumers = [
        {
          name: 'deployer',
          namespaces: [namespace],
          level: 'view',
          identities: {
            eks: { roleArn: 'arn:aws:iam::111122223333:role/deployer' },
            gke: { principal: 'deployer@consumers.iam.gserviceaccount.com' },
            aks: { objectId: '7f3e2c1a-0000-4000-8000-00000000de01' },
          },
        },
      ];
      // One slot: the turn-off's scan of cpsync's marks looks at every cluster in the sync that turns it off
      // (paced over the slots otherwise). The GKE and AKS members cannot be reached, and the ledger names
      // nothing there: they are taken as holding nothing of cpsync's, and named. They refuse at once: the deadline
      // is one no look on a busy machine comes near (a look cut by it could not say that nothing was reached).
      document.memberProbe = { timeoutSeconds: 60, budgetSeconds: 60, everyMinutes: 15, slotMinutes: 15 };
      // GKE tokens from the local Google STS: a member cpsync has no token for is scanned again, never taken as
      // holding nothing (only a connection that never reached it is).
      document.providers.gke.credentials = { file: googleFederation };
    },
    prepare: (emulators) => {
      googleFederation = localGoogleFederation(emulators.directory, emulators.gke);
      accessEntries ??= serveEksAccessEntries(emulators.proxy);
      if (!emulators.gke.iamPolicies.has(GCP_PROJECT)) letCpsyncGrantInProject(emulators.gke, GCP_PROJECT);
      for (const cluster of emulators.gke.clusters.get(GCP_PROJECT) ?? []) cluster.endpoint = '127.0.0.1:2';
      for (const cluster of emulators.arm.clusters.get(AZURE_SUBSCRIPTION) ?? [])
        cluster.properties.fqdn = '127.0.0.3';
    },
    wrote: (profiles) =>
      profiles.some((p) => p.metadata.annotations['cpsync.io/access-grants'] !== undefined) &&
      profiles.every((p) => p.status.conditions.some((c: Doc) => c.type === 'consumers.cpsync.io/deployer')),
  },
  certificateAuthority: {
    configure: () => {},
    wrote: (profiles) =>
      profiles.some((p) => p.status.accessProviders?.[0]?.cluster?.['certificate-authority-data']),
  },
};

/** A profile as compared: what the hub holds, without times, identity and bookkeeping. */
function comparable(profile: Doc) {
  const { labels, annotations, name } = profile.metadata;
  const status = structuredClone(profile.status);
  for (const property of status.properties ?? []) delete property.lastObservedTime;
  for (const condition of status.conditions ?? []) delete condition.lastTransitionTime;
  return { name, labels, annotations, spec: profile.spec, status };
}

describe('features: on → use → off leaves the hub as if never on (every registered feature)', () => {
  let emulators: Emulators;
  let base: Doc;
  let objects: CustomObjectsApi;
  let core: CoreV1Api;
  let restoreClouds: () => void;
  let counter = 0;

  before(async () => {
    const estate = await estateOnHub('features');
    emulators = estate.emulators;
    base = parse(readFileSync(emulators.configPath, 'utf8')) as Doc;
    base.hub = { kubeconfig: estate.state.kubeconfig };
    const kubeConfig = adminKubeConfig(estate.state);
    objects = kubeConfig.makeApiClient(CustomObjectsApi);
    core = kubeConfig.makeApiClient(CoreV1Api);
    restoreClouds = cloudSnapshot(emulators);
  });
  after(() => emulators?.stop());

  const profilesIn = (namespace: string) => listedProfiles(objects, namespace);
  /** The ClusterSet labels of a namespace. */
  const setLabelsOf = async (namespace: string) => {
    const all = (await core.readNamespace({ name: namespace })).metadata?.labels ?? {};
    return Object.fromEntries(SET_LABELS.filter((k) => all[k] !== undefined).map((k) => [k, all[k]!]));
  };

  /** An inventory of its own: namespace, outbox, event file; `sync(features)` runs the CLI with them. */
  const inventory = (feature: FeatureName) => {
    const namespace = `features-${++counter}-${feature.toLowerCase()}`;
    const directory = join(emulators.directory, namespace);
    mkdirSync(directory, { recursive: true });
    const events = join(directory, 'events.jsonl');
    /** `change`: the configuration changed further after the feature's own (a later edit). */
    const sync = async (features: Record<string, string>, exitCode = 0, change?: (document: Doc) => void) => {
      const document: Doc = structuredClone(base);
      document.inventory = { namespace };
      document.outbox = { directory: join(directory, 'outbox') };
      document.bus = { jsonl: events };
      document.features = features;
      USE[feature].configure(document, namespace);
      change?.(document);
      const config = join(directory, 'cpsync.yaml');
      writeFileSync(config, stringify(document));
      writeFileSync(events, '');
      const run = await runCli(['sync', '--config', config], { env: emulators.env });
      assert.equal(run.code, exitCode, run.stderr);
      return { run, events: jsonLines<Doc>(readFileSync(events, 'utf8')) };
    };
    const namespaces = [namespace, ...(USE[feature].also?.(namespace) ?? [])];
    /** The profiles of the inventory's namespace and of those the feature also writes to. */
    const profiles = async (): Promise<Doc[]> => {
      const all: Doc[] = [];
      for (const ns of namespaces) all.push(...(await profilesIn(ns)));
      return all.sort(
        (a, b) =>
          a.metadata.name.localeCompare(b.metadata.name) ||
          a.metadata.namespace.localeCompare(b.metadata.namespace),
      );
    };
    const labels = () => setLabelsOf(namespace);
    const featureMap = async (ns = namespace) =>
      (await core.readNamespacedConfigMap({ namespace: ns, name: 'cpsync-features' })).data ?? {};
    /** Every resourceVersion of the inventory: profiles, the namespace, the ConfigMap. */
    const versions = async () => ({
      profiles: Object.fromEntries(
        (await profiles()).map((p) => [p.metadata.name, p.metadata.resourceVersion]),
      ),
      namespace: (await core.readNamespace({ name: namespace })).metadata?.resourceVersion,
      configMap: (await core.readNamespacedConfigMap({ namespace, name: 'cpsync-features' })).metadata
        ?.resourceVersion,
    });
    return { namespace, namespaces, sync, profiles, labels, featureMap, versions };
  };

  it('has a way to use every registered feature', () => {
    assert.deepEqual(
      FEATURES.map((f) => f.name).filter((name) => !(name in USE)),
      [],
      'register how the test uses the feature in USE',
    );
  });

  for (const feature of FEATURES) {
    it(`${feature.name} (${feature.maturity}, default ${feature.default ? 'on' : 'off'})`, async () => {
      restoreClouds();
      USE[feature.name].prepare?.(emulators);
      const used = inventory(feature.name);
      const on = await used.sync({ [feature.name]: 'on' });
      assert.ok(
        USE[feature.name].wrote(await used.profiles(), await used.labels()),
        'the feature wrote nothing',
      );
      assert.match(on.run.stderr, new RegExp(`features: .*\\b${feature.name} on\\b`));
      const onState = JSON.parse((await used.featureMap())[FEATURE_SUMMARY_KEY]!);
      assert.deepEqual(onState[feature.name], {
        maturity: feature.maturity,
        default: feature.default ? 'on' : 'off',
        desired: 'on',
        actual: 'on',
      });

      const off = await used.sync({ [feature.name]: 'off' });
      assert.match(off.run.stderr, new RegExp(`features: .*\\b${feature.name} off\\b`));
      const scopeStates = off.events
        .filter((e) => e['detail-type'] === 'Inventory Scope Synced')
        .map((e) => e.detail.features[feature.name]);
      assert.ok(scopeStates.length > 0);
      for (const state of scopeStates)
        assert.deepEqual(state, { desired: 'off', actual: 'off', profiles: 0 });
      // The clean-up is announced like any change.
      assert.ok(off.events.some((e) => e['detail-type'] === 'ClusterProfile Updated'));

      // A hub that never had the feature on.
      const never = inventory(feature.name);
      await never.sync({ [feature.name]: 'off' });
      assert.deepEqual((await used.profiles()).map(comparable), (await never.profiles()).map(comparable));
      assert.deepEqual(await used.labels(), await never.labels());
      assert.deepEqual(await used.labels(), {});
      assert.deepEqual(await used.featureMap(), await never.featureMap());
      for (const ns of used.namespaces)
        assert.equal(
          JSON.parse((await used.featureMap(ns))[FEATURE_SUMMARY_KEY]!)[feature.name].actual,
          'off',
        );

      // Clean: a further run writes nothing, as the hub counts it.
      const before = await used.versions();
      const again = await used.sync({ [feature.name]: 'off' });
      assert.deepEqual(await used.versions(), before);
      assert.equal(
        again.events.filter((e) => e['detail-type'] !== 'Inventory Scope Synced').length,
        0,
        'an unchanged run announces no change',
      );
    });
  }

  it('takes the ClusterSet labels off a namespace taken out of inventory.clusterSets, the feature on, and then writes nothing', async () => {
    restoreClouds();
    const used = inventory('clusterSets');
    // A namespace a rule routes GKE's clusters to (the inventory's own is labelled at every sync's start).
    const routed = `${used.namespace}-gke`;
    const setting = (clusterSets: Record<string, string[]>) => (document: Doc) => {
      document.inventory.namespaceRules = [{ provider: 'gke', namespace: routed }];
      document.inventory.clusterSets = clusterSets;
    };
    const namespaceOf = async () => (await core.readNamespace({ name: routed })).metadata!;
    const setLabels = () => setLabelsOf(routed);
    const routedProfiles = () => profilesIn(routed);
    await used.sync({ clusterSets: 'on' }, 0, setting({ prod: [routed] }));
    assert.deepEqual(await setLabels(), Object.fromEntries(SET_LABELS.map((key) => [key, 'prod'])));
    assert.ok((await routedProfiles()).length > 0);
    const out = await used.sync({ clusterSets: 'on' }, 0, setting({}));
    assert.deepEqual(await setLabels(), {});
    assert.ok(
      (await routedProfiles()).every(
        (p) => !p.status.properties.some((q: Doc) => q.name === 'clusterset.k8s.io'),
      ),
    );
    assert.ok(out.events.some((e) => e['detail-type'] === 'ClusterProfile Updated'));
    // Taken off once: a further run writes nothing to the namespace.
    const before = (await namespaceOf()).resourceVersion;
    await used.sync({ clusterSets: 'on' }, 0, setting({}));
    assert.equal((await namespaceOf()).resourceVersion, before);
  });

  it('reads turning-off while a scope that could not be listed keeps what the feature wrote, and off once it is listed', async () => {
    restoreClouds();
    const used = inventory('tagProperties');
    await used.sync({ tagProperties: 'on' });
    const azureTagged = (await used.profiles()).filter(
      (p) =>
        p.metadata.labels['cpsync.io/provider'] === 'aks' &&
        p.status.properties.some((q: Doc) => q.name.startsWith('cpsync.io/tag.')),
    ).length;
    assert.ok(azureTagged > 0);
    emulators.arm.failures.set(
      AZURE_SUBSCRIPTION,
      Array.from({ length: 60 }, () => ({ status: 403, code: 'AuthorizationFailed', message: 'outage' })),
    );
    try {
      const off = await used.sync({ tagProperties: 'off' }, 1);
      assert.match(
        off.run.stderr,
        new RegExp(
          `tagProperties turning-off \\(${azureTagged} profiles? still carr(y|ies) what it wrote\\)`,
        ),
      );
      const azure = off.events.find(
        (e) => e['detail-type'] === 'Inventory Scope Synced' && e.detail.scope.provider === 'aks',
      );
      assert.deepEqual(azure?.detail.features.tagProperties, {
        desired: 'off',
        actual: 'turning-off',
        profiles: azureTagged,
      });
      const state = JSON.parse((await used.featureMap())[FEATURE_SUMMARY_KEY]!);
      assert.deepEqual(state.tagProperties, {
        maturity: 'beta',
        default: 'on',
        desired: 'off',
        actual: 'turning-off',
        profilesLeft: azureTagged,
      });
    } finally {
      emulators.arm.failures.delete(AZURE_SUBSCRIPTION);
    }
    const healed = await used.sync({ tagProperties: 'off' });
    assert.match(healed.run.stderr, /tagProperties off\b/);
    assert.equal(JSON.parse((await used.featureMap())[FEATURE_SUMMARY_KEY]!).tagProperties.actual, 'off');
    assert.deepEqual(
      Object.keys(await used.featureMap()).filter((k) => k.startsWith('scope.')),
      [],
      'nothing left to remove in any scope',
    );
  });
});
