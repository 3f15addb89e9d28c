/**
 * The Argo CD ClusterProfile integration with cpsync's profiles. The integration's module
 * (argoproj-labs/clusterprofile-integration-for-argocd) is not served by the Go module proxy, so its documented
 * contract is walked with the code it is made of: its rendering of a profile into an Argo CD cluster Secret
 * (test/env/tools/argocd/integration.go: the upstream access library's BuildConfigFromCP mapped into Argo CD's
 * ClusterConfig, the profile's labels copied), its finalizer, and its pruning of the Secret when a profile goes.
 * The Secrets are then read by Argo CD's own code (v3.5.7: SecretToCluster, RESTConfig), which reaches one member
 * of each cloud through `cpsync credentials`. The integration watches ClusterProfiles in Argo CD's own namespace
 * by default: the profiles get there as projected copies. What the integration is given is what
 * `cpsync consumers argocd-integration` prints: the provider file as its ConfigMap holds it (the file its Deployment
 * mounts), and the hub RBAC its ServiceAccount holds its finalizer with.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CoreV1Api, CustomObjectsApi, KubeConfig, type V1Secret } from '@kubernetes/client-node';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { LABEL_INVENTORY_MEMBER_ID } from '../../core/domain/constants.ts';
import { ensureArgoCdBinary } from '../env/binaries.ts';
import { GCP_PROJECT, type Emulators } from '../env/emulators.ts';
import { AT_MEMBER, serveFromMember, startEstateMember, type Member } from '../env/member.ts';
import { jsonLines, runCli } from '../support/cli.ts';
import { consumerKit, printedPart, type ConsumerKit } from '../support/consumerKit.ts';
import { estateOnHub } from '../support/estate.ts';
import { adminKubeConfig } from '../support/hub.ts';
import { applyPrinted } from '../support/hubManifests.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- hub documents are read freely here
type Doc = Record<string, any>;

const GROUP = { group: 'multicluster.x-k8s.io', version: 'v1alpha1', plural: 'clusterprofiles' };
// The integration's finalizer and the label linking a Secret to its profile (its controller.go).
const FINALIZER = 'argoproj.io/cluster-profile-finalizer';
const ORIGIN_LABEL = 'argocd.argoproj.io/cluster-profile-origin';

describe('the Argo CD ClusterProfile integration renders cpsync profiles into cluster Secrets Argo CD uses', () => {
  let emulators: Emulators;
  let member: Member;
  let kit: ConsumerKit;
  let argo: string;
  let namespace: string;
  let argocd: string;
  let objects: CustomObjectsApi;
  /** The integration's ServiceAccount on the hub, bound only by the RBAC cpsync printed for it. */
  let integration: CustomObjectsApi;
  /** The provider file as the integration reads it: its ConfigMap's, as its Deployment mounts it. */
  let providersFile: string;
  let removeRbac: (() => Promise<void>) | undefined;
  let core: CoreV1Api;
  let config: string;
  let eventsFile: string;

  before(async () => {
    const estate = await estateOnHub('argocd');
    ({ emulators, namespace } = estate);
    argocd = `${namespace}-argocd`;
    const hub = adminKubeConfig(estate.state);
    objects = hub.makeApiClient(CustomObjectsApi);
    core = hub.makeApiClient(CoreV1Api);
    argo = ensureArgoCdBinary((line) => console.log(`[argocd] ${line}`));
    member = await startEstateMember(emulators, AT_MEMBER.eks);
    serveFromMember(emulators, member);
    kit = consumerKit(emulators);

    // cpsync writes the inventory, every cluster projected into Argo CD's namespace.
    eventsFile = join(emulators.directory, 'argocd-events.jsonl');
    config = join(emulators.directory, 'argocd.yaml');
    const document = parse(readFileSync(emulators.configPath, 'utf8')) as Doc;
    writeFileSync(
      config,
      stringify({
        ...document,
        hub: { kubeconfig: estate.state.kubeconfig },
        outbox: { directory: join(emulators.directory, 'argocd-outbox') },
        bus: { jsonl: eventsFile },
        inventory: {
          namespace,
          deletionGraceListings: 1,
          projections: [
            { provider: 'gke', namespaces: [argocd] },
            { provider: 'aks', namespaces: [argocd] },
            { provider: 'eks', namespaces: [argocd] },
          ],
        },
      }),
    );
    await sync();

    // What cpsync prints for the integration running in Argo CD's namespace.
    const printed = (part: string) =>
      printedPart(kit, config, 'argocd-integration', part, join(emulators.directory, `argocd-${part}`), [
        '--namespace',
        argocd,
      ]);
    const [configMap, deployment] = parseAllDocuments(
      readFileSync(await printed('argocd-integration'), 'utf8'),
    ).map((d) => d.toJS() as Doc);
    assert.equal(configMap!.metadata.namespace, argocd);
    providersFile = join(emulators.directory, 'argocd-mounted-providers.json');
    writeFileSync(providersFile, configMap!.data['providers.json']);
    assert.deepEqual(
      JSON.parse(readFileSync(providersFile, 'utf8')),
      JSON.parse(readFileSync(await printed('provider-file'), 'utf8')),
    );
    const container = deployment!.spec.template.spec.containers[0];
    assert.deepEqual(container.env, [
      {
        name: 'ARGOCD_CLUSTERPROFILE_CONTROLLER_CLUSTER_PROFILE_PROVIDERS_FILE',
        value: '/etc/cpsync/providers.json',
      },
    ]);
    removeRbac = await applyPrinted(hub, readFileSync(await printed('rbac'), 'utf8'));
    // The integration's ServiceAccount, as its manifests make it, with a token the hub issues for it.
    const serviceAccount = { namespace: argocd, name: 'argocd-clusterprofile-controller' };
    await core.createNamespacedServiceAccount({
      namespace: argocd,
      body: { metadata: { name: serviceAccount.name } },
    });
    const { status } = await core.createNamespacedServiceAccountToken({
      ...serviceAccount,
      body: { spec: { audiences: [], expirationSeconds: 3600 } },
    });
    const asIntegration = new KubeConfig();
    asIntegration.loadFromOptions({
      clusters: [
        { name: 'hub', server: estate.state.server, caFile: estate.state.caCert, skipTLSVerify: false },
      ],
      users: [{ name: 'integration', token: status!.token }],
      contexts: [{ name: 'integration', cluster: 'hub', user: 'integration' }],
      currentContext: 'integration',
    });
    integration = asIntegration.makeApiClient(CustomObjectsApi);
  });

  after(async () => {
    await removeRbac?.();
    await member?.stop();
    await emulators?.stop();
  });

  async function sync(): Promise<Doc[]> {
    writeFileSync(eventsFile, '');
    const run = await runCli(['sync', '--config', config], { env: emulators.env });
    assert.equal(run.code, 0, run.stderr);
    return jsonLines<Doc>(readFileSync(eventsFile, 'utf8')).filter(
      (e) => e['detail-type'] !== 'Inventory Scope Synced',
    );
  }
  const profilesIn = async (ns: string) =>
    ((await objects.listNamespacedCustomObject({ ...GROUP, namespace: ns })) as { items: Doc[] }).items;
  const secrets = async () =>
    (await core.listNamespacedSecret({ namespace: argocd, labelSelector: ORIGIN_LABEL })).items;

  /**
   * Runs the Argo CD tool with `input` on stdin. Asynchronously: the member's token webhook and the local
   * clouds answer from this process.
   */
  function tool(args: string[], input: unknown, env?: Record<string, string>): Promise<string> {
    return new Promise((resolve, reject) => {
      const child = spawn(argo, args, env ? { env } : {});
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
      child.on('error', reject);
      child.on('close', (code) =>
        code === 0 ? resolve(stdout) : reject(new Error(`argocd ${args.join(' ')}: exit ${code}: ${stderr}`)),
      );
      child.stdin.end(JSON.stringify(input));
    });
  }

  /**
   * The integration's reconcile of one profile: its finalizer (an Update, as it does, as its ServiceAccount), then
   * the Secret.
   */
  async function reconcile(profile: Doc): Promise<void> {
    if (!(profile.metadata.finalizers ?? []).includes(FINALIZER)) {
      profile.metadata.finalizers = [...(profile.metadata.finalizers ?? []), FINALIZER];
      await integration.replaceNamespacedCustomObject({
        ...GROUP,
        namespace: argocd,
        name: profile.metadata.name,
        body: profile,
      });
    }
    const rendered = await tool(['render', '-providers', providersFile, '-namespace', argocd], profile);
    await core.createNamespacedSecret({ namespace: argocd, body: JSON.parse(rendered) as V1Secret });
  }

  /** The integration's handling of a profile being deleted: its Secret pruned, then its finalizer removed. */
  async function prune(profile: Doc): Promise<void> {
    await core.deleteNamespacedSecret({ namespace: argocd, name: `cluster-${profile.metadata.name}` });
    profile.metadata.finalizers = profile.metadata.finalizers.filter((f: string) => f !== FINALIZER);
    await integration.replaceNamespacedCustomObject({
      ...GROUP,
      namespace: argocd,
      name: profile.metadata.name,
      body: profile,
    });
  }

  /** Argo CD's own reading of a Secret as the hub holds it, and (with `reach`) a call to the cluster. */
  const argoCdReads = async (secret: V1Secret, reach: boolean): Promise<Doc> =>
    JSON.parse(await tool(reach ? ['-reach'] : [], secret, kit.env)) as Doc;

  /** renders every projected profile into a Secret carrying its labels, one per member, that Argo CD reads and reaches the member of each cloud with */
  const renderedAndReached = async () => {
    const profiles = await profilesIn(argocd);
    assert.ok(profiles.length >= 6, `projected profiles: ${profiles.length}`);
    for (const profile of profiles) await reconcile(profile);

    const written = await secrets();
    assert.equal(written.length, profiles.length);
    const ids = new Set<string>();
    for (const profile of profiles) {
      const secret = written.find((s) => s.metadata!.name === `cluster-${profile.metadata.name}`)!;
      assert.ok(secret, profile.metadata.name);
      // Every label of the profile is on the Secret: the member id, the manager, cpsync's own.
      for (const [key, value] of Object.entries(profile.metadata.labels as Record<string, string>))
        assert.equal(secret.metadata!.labels![key], value, `${secret.metadata!.name}: ${key}`);
      assert.equal(secret.metadata!.labels!['argocd.argoproj.io/secret-type'], 'cluster');
      assert.equal(secret.metadata!.labels![ORIGIN_LABEL], `${argocd}-${profile.metadata.name}`);
      ids.add(secret.metadata!.labels![LABEL_INVENTORY_MEMBER_ID]!);

      // Argo CD's own reading: the cluster at the profile's server, authenticated by cpsync credentials with
      // the cluster's info (provideClusterInfo, the profile's exec extension as the plugin's config).
      const { cluster, rest } = await argoCdReads(secret, false);
      const provider = profile.status.accessProviders[0];
      assert.equal(cluster.name, profile.metadata.name);
      assert.equal(cluster.server, provider.cluster.server);
      assert.equal(rest.host, provider.cluster.server);
      assert.ok(rest.caDataLength > 0);
      assert.deepEqual(
        [rest.exec.command, rest.exec.args, rest.exec.provideClusterInfo, rest.exec.interactiveMode],
        [process.execPath, [kit.plugin], true, 'Never'],
      );
    }
    // A member is one Argo CD cluster: member ids are unique among the namespace's Secrets.
    assert.equal(ids.size, profiles.length);

    // One member per cloud: Argo CD's rest config runs cpsync credentials, whose token the member accepts.
    for (const [kind, name] of Object.entries(AT_MEMBER)) {
      const profile = profiles.find(
        (p) => p.spec.displayName === name && p.status.accessProviders[0].name === kind,
      )!;
      const secret = written.find((s) => s.metadata!.name === `cluster-${profile.metadata.name}`)!;
      const { reach } = await argoCdReads(secret, true);
      const accepted = member.reviews.filter((r) => r.kind === kind && r.authenticated);
      assert.ok(
        accepted.length > 0,
        `${kind}: ${JSON.stringify(member.reviews.map((r) => [r.kind, r.error]))}`,
      );
      assert.equal(reach.username, accepted.at(-1)!.user, kind);
      assert.ok(reach.groups.includes('cpsync:consumers'), JSON.stringify(reach));
    }
  };

  /** keeps the integration finalizer and writes nothing on later runs; a deleted cluster goes once the integration prunes its Secret */
  const heldUntilPruned = async () => {
    const before = new Map((await profilesIn(argocd)).map((p) => [p.metadata.name as string, p]));
    assert.deepEqual(await sync(), []);
    for (const profile of await profilesIn(argocd)) {
      assert.deepEqual(profile.metadata.finalizers, [FINALIZER]);
      assert.equal(
        profile.metadata.resourceVersion,
        before.get(profile.metadata.name)!.metadata.resourceVersion,
      );
    }

    // The GKE member's cluster is deleted in the cloud: one Deleted event for each of its profiles (cpsync's
    // own and the copy in Argo CD's namespace); the copy stays, terminating, until the integration has pruned
    // its Secret.
    emulators.gke.clusters.set(
      GCP_PROJECT,
      emulators.gke.clusters.get(GCP_PROJECT)!.filter((c) => c.name !== AT_MEMBER.gke),
    );
    const events = await sync();
    assert.deepEqual(
      events
        .filter((e) => e.detail.cluster.displayName === AT_MEMBER.gke)
        .map((e) => `${e['detail-type']} ${e.detail.namespace}`)
        .sort(),
      [`ClusterProfile Deleted ${namespace}`, `ClusterProfile Deleted ${argocd}`].sort(),
    );
    const gone = (await profilesIn(argocd)).find((p) => p.spec.displayName === AT_MEMBER.gke)!;
    assert.ok(gone.metadata.deletionTimestamp, 'terminating');
    assert.deepEqual(await sync(), [], 'a terminating profile is not announced again');
    await prune(gone);
    for (
      let i = 0;
      i < 50 && (await profilesIn(argocd)).some((p) => p.metadata.uid === gone.metadata.uid);
      i++
    )
      await new Promise((r) => setTimeout(r, 100));
    assert.equal((await profilesIn(argocd)).length, before.size - 1);
    assert.equal((await secrets()).length, before.size - 1);
    assert.deepEqual(await sync(), []);
  };

  // One lifecycle, in order: the end-to-end cases run in a random order, so its steps are one case.
  it("renders every projected profile into a Secret Argo CD reads and reaches the member with; keeps the integration's finalizer; a deleted cluster goes once the integration prunes its Secret", async () => {
    await renderedAndReached();
    await heldUntilPruned();
  });
});
