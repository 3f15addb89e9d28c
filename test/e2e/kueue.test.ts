/**
 * Kueue's MultiKueue with cpsync's profiles, by Kueue's own code: the MultiKueue cluster controller from the
 * released module sigs.k8s.io/kueue v0.17.0 (test/env/tools/kueue: `multikueue.SetupControllers`), given the
 * Kueue Configuration `cpsync consumers kueue` prints — read by Kueue's own loader, which sets the
 * `MultiKueueClusterProfile` gate, Kueue's namespace and the access providers (`multiKueue.clusterProfile`) from
 * it. Kueue looks a `clusterProfileRef` up in its own namespace only: the profiles get there as projected copies
 * (the `projections` feature). One cluster of each cloud points at a member kube-apiserver whose token webhook
 * verifies each cloud's tokens; `cpsync credentials` is the exec plugin.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CustomObjectsApi, KubeConfig, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { installCustomResourceDefinition } from '../env/hub.ts';
import { parse, stringify } from 'yaml';
import { ensureKueue } from '../env/binaries.ts';
import type { Emulators } from '../env/emulators.ts';
import { AT_MEMBER, serveFromMember, startEstateMember, type Member } from '../env/member.ts';
import { runCli } from '../support/cli.ts';
import { consumerKit, printedPart } from '../support/consumerKit.ts';
import { estateOnHub } from '../support/estate.ts';
import { adminKubeConfig } from '../support/hub.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- hub documents are read freely here
type Doc = Record<string, any>;

/** Applies Kueue's CRDs (as a Kueue installation does) where they are not yet, and waits until they are served. */
async function installKueueCrds(kubeconfig: string, directory: string): Promise<void> {
  for (const file of readdirSync(directory).filter((f) => f.endsWith('.yaml'))) {
    try {
      await installCustomResourceDefinition(
        kubeconfig,
        parse(readFileSync(join(directory, file), 'utf8')) as Parameters<
          typeof installCustomResourceDefinition
        >[1],
      );
    } catch (error) {
      // Installed by an earlier run on the shared hub.
      if (!/\(409\)/.test((error as Error).message)) throw error;
    }
  }
}

describe("Kueue's MultiKueue reaches the members through cpsync's profiles (Kueue's own controller)", () => {
  let emulators: Emulators;
  let member: Member;
  let namespace: string;
  let kueueNamespace: string;
  let objects: CustomObjectsApi;
  let kueue: ChildProcessWithoutNullStreams | undefined;
  const lines: Doc[] = [];
  let stderr = '';
  const clusterNames: string[] = [];

  /** A MultiKueueCluster (cluster-scoped) connecting through the ClusterProfile `profile` of Kueue's namespace. */
  const multiKueueCluster = (name: string, profile: string) => {
    clusterNames.push(name);
    return objects.createClusterCustomObject({
      group: 'kueue.x-k8s.io',
      version: 'v1beta2',
      plural: 'multikueueclusters',
      body: {
        apiVersion: 'kueue.x-k8s.io/v1beta2',
        kind: 'MultiKueueCluster',
        metadata: { name },
        spec: { clusterSource: { clusterProfileRef: { name: profile } } },
      },
    });
  };
  /** The ClusterProfiles in `ns`. */
  const profilesIn = async (ns: string) =>
    (
      (await objects.listNamespacedCustomObject({
        group: 'multicluster.x-k8s.io',
        version: 'v1alpha1',
        namespace: ns,
        plural: 'clusterprofiles',
      })) as { items: Doc[] }
    ).items;

  before(async () => {
    const estate = await estateOnHub('kueue');
    ({ emulators, namespace } = estate);
    kueueNamespace = `${namespace}-kueue`;
    const hubConfig = adminKubeConfig(estate.state);
    objects = hubConfig.makeApiClient(CustomObjectsApi);
    const { binary, crds } = ensureKueue((line) => console.log(`[kueue] ${line}`));

    member = await startEstateMember(emulators, AT_MEMBER.eks);
    serveFromMember(emulators, member);

    // Kueue on the hub; on the member, what its MultiKueue controller watches there (Workloads), and the
    // consumers' identities let watch them (by hand, as a worker cluster is prepared for MultiKueue today).
    await installKueueCrds(estate.state.kubeconfig, crds);
    await installKueueCrds(member.kubeconfig, crds);
    const memberConfig = new KubeConfig();
    memberConfig.loadFromFile(member.kubeconfig);
    const rbac = memberConfig.makeApiClient(RbacAuthorizationV1Api);
    await rbac.createClusterRole({
      body: {
        metadata: { name: 'multikueue-worker' },
        rules: [{ apiGroups: ['kueue.x-k8s.io'], resources: ['workloads'], verbs: ['get', 'list', 'watch'] }],
      },
    });
    await rbac.createClusterRoleBinding({
      body: {
        metadata: { name: 'multikueue-worker' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'multikueue-worker' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'cpsync:consumers' }],
      },
    });

    // cpsync writes the inventory, every cluster projected into Kueue's namespace.
    const document = parse(readFileSync(emulators.configPath, 'utf8')) as Doc;
    const config = join(emulators.directory, 'kueue.yaml');
    writeFileSync(
      config,
      stringify({
        ...document,
        hub: { kubeconfig: estate.state.kubeconfig },
        bus: { stdout: true },
        inventory: {
          namespace,
          projections: [
            { provider: 'gke', namespaces: [kueueNamespace] },
            { provider: 'aks', namespaces: [kueueNamespace] },
            { provider: 'eks', region: 'us-east-1', namespaces: [kueueNamespace] },
          ],
        },
      }),
    );
    const run = await runCli(['sync', '--config', config], { env: emulators.env });
    assert.equal(run.code, 0, run.stderr);

    // A MultiKueueCluster per member profile, by its name in Kueue's namespace.
    const profiles = (await profilesIn(kueueNamespace)).filter((p) =>
      Object.values(AT_MEMBER).includes(p.spec.displayName),
    );
    assert.equal(profiles.length, 3);
    for (const profile of profiles) {
      await multiKueueCluster(`${namespace}-${profile.spec.displayName}`, profile.metadata.name);
    }
    // And one whose profile is only in cpsync's own namespace: Kueue does not look there.
    const own = (await profilesIn(namespace)).find(
      (p) => p.spec.displayName === 'payments' && p.metadata.labels['cpsync.io/region'] === 'eu-west-1',
    )!;
    await multiKueueCluster(`${namespace}-elsewhere`, own.metadata.name);

    // Kueue's Configuration as cpsync prints it for this configuration, Kueue's namespace and the plugin as the
    // consumer's image carries it.
    const kit = consumerKit(emulators);
    const kueueConfiguration = await printedPart(
      kit,
      config,
      'kueue',
      'kueue-configuration',
      join(emulators.directory, 'kueue-configuration.yaml'),
      ['--namespace', kueueNamespace],
    );
    kueue = spawn(binary, ['-kubeconfig', estate.state.kubeconfig, '-config', kueueConfiguration], {
      env: kit.env,
    });
    kueue.stdout.on('data', (chunk: Buffer) => {
      for (const line of chunk.toString().split('\n'))
        if (line.startsWith('{')) lines.push(JSON.parse(line) as Doc);
    });
    kueue.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-20_000)));
  });

  after(async () => {
    if (kueue && kueue.exitCode === null)
      await new Promise<void>((done) => {
        kueue!.once('close', () => done());
        kueue!.kill('SIGTERM');
      });
    for (const name of clusterNames)
      await objects
        ?.deleteClusterCustomObject({
          group: 'kueue.x-k8s.io',
          version: 'v1beta2',
          plural: 'multikueueclusters',
          name,
        })
        .catch(() => undefined);
    await member?.stop();
    await emulators?.stop();
  });

  const latest = (name: string) => lines.filter((l) => l.event === 'cluster' && l.name === name).at(-1);

  it('connects to the member of each cloud through the projected profile (Active=True, Connected), and refuses a profile outside its namespace', async () => {
    const members = clusterNames.filter((n) => !n.endsWith('-elsewhere'));
    // Until Kueue has said its word on every cluster: each member active, and the profile outside its namespace judged.
    const settled = () =>
      members.every((n) => latest(n)?.active === 'True') && latest(`${namespace}-elsewhere`) !== undefined;
    for (let i = 0; i < 240 && !settled(); i++) {
      assert.equal(kueue!.exitCode, null, `the controller stopped:\n${stderr.slice(-3000)}`);
      await new Promise((r) => setTimeout(r, 250));
    }
    // Kueue took its namespace, as the rest, from the Configuration cpsync printed.
    assert.equal(lines.find((l) => l.event === 'started')?.namespace, kueueNamespace);
    for (const name of members)
      assert.deepEqual(
        [latest(name)?.active, latest(name)?.reason, latest(name)?.message],
        ['True', 'Active', 'Connected'],
        `${name}: ${JSON.stringify(latest(name))}\n${stderr.slice(-3000)}`,
      );
    // Each cloud's token reached the member's authenticator and was accepted.
    for (const kind of ['eks', 'gke', 'aks'])
      assert.ok(
        member.reviews.some((r) => r.kind === kind && r.authenticated),
        `${kind}: ${JSON.stringify(member.reviews.map((r) => [r.kind, r.authenticated, r.error]))}`,
      );
    const elsewhere = latest(`${namespace}-elsewhere`);
    assert.equal(elsewhere?.active, 'False', JSON.stringify(elsewhere));
    assert.equal(elsewhere?.reason, 'BadClusterProfile');
  });
});
