/**
 * The member probe (the `memberProbe` feature) against a real member cluster: a second kube-apiserver
 * whose token webhook verifies each cloud's tokens as the cloud does (test/env/member.ts), with the
 * about-api CRD vendored from upstream and ClusterProperty objects in it. One cluster of each cloud points
 * at the member; the others at loopback ports nothing listens on (unreachable members). The real CLI
 * writes into the real hub; the oracle reads the hub, the member (its own kube-system UID) and the
 * member's token reviews.
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  KubernetesObjectApi,
  RbacAuthorizationV1Api,
  type KubernetesObject,
} from '@kubernetes/client-node';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { KubernetesHub } from '../../adapters/hub/KubernetesHub.ts';
import type { ClusterProfile } from '../../core/domain/model/clusterProfile.ts';
import {
  AZURE_SUBSCRIPTION,
  GCP_PROJECT,
  gkeCluster,
  localGoogleFederation,
  withEksClusters,
  type Emulators,
} from '../env/emulators.ts';
import { deleteCustomResourceDefinition, installCustomResourceDefinition } from '../env/hub.ts';
import { startEstateMember, type Member } from '../env/member.ts';
import { jsonLines, runCli } from '../support/cli.ts';
import { estateOnHub } from '../support/estate.ts';
import { assertNoCredentials } from '../support/secrets.ts';
import { orderedSteps } from '../support/steps.ts';
import { adminKubeConfig } from '../support/hub.ts';

const MANIFESTS = new URL('../../adapters/member/manifests/', import.meta.url);
const ABOUT_CRD = 'clusterproperties.about.k8s.io';
/** The clusters of the estate whose endpoint is the member: one per cloud. */
const AT_MEMBER = { eks: 'checkout', gke: 'edge', aks: 'batch' } as const;
/** A loopback address and port nothing listens on: an unreachable member that sends nothing anywhere. */
const NOWHERE = '127.0.0.1:2';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- CRD documents are edited freely here
type Doc = Record<string, any>;

const prop = (p: ClusterProfile, name: string) => p.status?.properties?.find((q) => q.name === name)?.value;
const condition = (p: ClusterProfile, type: string) => p.status?.conditions?.find((c) => c.type === type);

describe('the member probe reads each member through its own access path (memberProbe feature)', () => {
  let emulators: Emulators;
  let member: Member;
  let namespace: string;
  let hub: KubernetesHub;
  let document: Doc;
  let configPath: string;
  let eventsFile: string;
  let memberConfig: KubeConfig;
  let kubeSystemUid: string;

  const sync = async () => {
    writeFileSync(configPath, stringify(document));
    writeFileSync(eventsFile, '');
    const started = performance.now();
    const run = await runCli(['sync', '--config', configPath], { env: emulators.env });
    assert.equal(run.code, 0, run.stderr);
    const events = readFileSync(eventsFile, 'utf8');
    captured.push(run.stdout, run.stderr, events, JSON.stringify(await profiles()));
    return { run, millis: performance.now() - started, events: jsonLines<Doc>(events) };
  };
  const profiles = () => hub.list(namespace, { 'x-k8s.io/cluster-manager': 'cpsync' });
  /** Everything the runs showed: output, events, profiles (no credential may be in it). */
  const captured: string[] = [];
  /** The profiles of the clusters served by the member, by cloud. */
  const atMember = async () => {
    const all = await profiles();
    const find = (provider: string, name: string) =>
      all.find(
        (p) =>
          p.metadata.labels?.['cpsync.io/provider'] === provider &&
          p.spec.displayName === name &&
          (provider !== 'eks' || p.metadata.labels?.['cpsync.io/region'] === 'us-east-1'),
      )!;
    return {
      eks: find('eks', AT_MEMBER.eks),
      gke: find('gke', AT_MEMBER.gke),
      aks: find('aks', AT_MEMBER.aks),
    };
  };
  const elsewhere = async () => {
    const reached = new Set(Object.values(await atMember()).map((p) => p.metadata.name));
    return (await profiles()).filter((p) => !reached.has(p.metadata.name));
  };
  const versions = async () =>
    Object.fromEntries((await profiles()).map((p) => [p.metadata.name, p.metadata.resourceVersion]));
  const objects = () => memberConfig.makeApiClient(CustomObjectsApi);
  /**
   * The vendored about-api CRD, with the annotation a real API server requires of any `*.k8s.io` group
   * (the upstream file has none: as it is, it cannot be installed; docs/configuring.md says so).
   */
  const aboutCrd = () => {
    const crd = parse(readFileSync(new URL('about.k8s.io_clusterproperties.yaml', MANIFESTS), 'utf8')) as Doc;
    crd.metadata.annotations = {
      ...crd.metadata.annotations,
      'api-approved.kubernetes.io': 'unapproved, the about-api CRD as published upstream',
    };
    return crd;
  };
  const setProperty = (version: string, name: string, value: string, labelled = true) =>
    objects().createClusterCustomObject({
      group: 'about.k8s.io',
      version,
      plural: 'clusterproperties',
      body: {
        apiVersion: `about.k8s.io/${version}`,
        kind: 'ClusterProperty',
        metadata: {
          name,
          ...(labelled ? { labels: { 'multicluster.x-k8s.io/clusterProfile': 'true' } } : {}),
        },
        spec: { value },
      },
    });

  // The cases build on each other: run in order as one test (end-to-end tests run in a random order).
  const { step, run: runSteps } = orderedSteps();

  before(async () => {
    const estate = await estateOnHub('members', (line) => console.log(line));
    ({ emulators, namespace } = estate);
    hub = new KubernetesHub({ kubeConfig: adminKubeConfig(estate.state) });
    member = await startEstateMember(emulators, AT_MEMBER.eks, (line) => console.log(`[member] ${line}`));
    memberConfig = new KubeConfig();
    memberConfig.loadFromFile(member.kubeconfig);
    kubeSystemUid = (await memberConfig.makeApiClient(CoreV1Api).readNamespace({ name: 'kube-system' }))
      .metadata!.uid!;
    // The probe's read-only role, bound to every identity the member's webhook authenticates.
    const apply = memberConfig.makeApiClient(KubernetesObjectApi);
    for (const manifest of parseAllDocuments(readFileSync(new URL('rbac.yaml', MANIFESTS), 'utf8'))) {
      const object = manifest.toJS() as Doc;
      if (object.kind === 'ClusterRoleBinding')
        object.subjects = [
          { apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'cpsync:consumers' },
        ];
      await apply.create(object as KubernetesObject);
    }
    await installCustomResourceDefinition(member.kubeconfig, aboutCrd() as never);
    await setProperty('v1beta1', 'clusterset.k8s.io', 'member-set');
    await setProperty('v1beta1', 'rack.example.com', 'r12');
    await setProperty('v1beta1', 'unlabelled.example.com', 'not for profiles', false);
    // What the member's administrators say of where it is and how it is reached: not theirs to say.
    await setProperty('v1beta1', 'location.topology.k8s.io', 'aws/member-says');
    await setProperty('v1beta1', 'cluster-endpoints.k8s.io', '["member-says.example:443"]');

    // One cluster of each cloud is served by the member; every other endpoint is a closed loopback port.
    const memberHost = new URL(member.server).hostname;
    emulators.proxy.rewrite(
      withEksClusters((name) =>
        name === AT_MEMBER.eks
          ? { ca: member.caData, endpoint: member.server }
          : { endpoint: `https://${NOWHERE}` },
      ),
    );
    emulators.gke.clusters.set(GCP_PROJECT, [
      gkeCluster('analytics', 'europe-west1', { endpoint: NOWHERE }),
      gkeCluster(AT_MEMBER.gke, 'europe-west1-c', {
        endpoint: memberHost,
        masterAuth: { clusterCaCertificate: member.caData },
      }),
    ]);
    for (const cluster of emulators.arm.clusters.get(AZURE_SUBSCRIPTION)!) {
      // AKS endpoints are https://<fqdn>:443: 127.0.0.3:443 has nothing listening.
      cluster.properties.fqdn = cluster.name === AT_MEMBER.aks ? memberHost : '127.0.0.3';
      if (cluster.name === AT_MEMBER.aks) emulators.arm.caData.set(cluster.id.toLowerCase(), member.caData);
    }

    document = parse(readFileSync(emulators.configPath, 'utf8')) as Doc;
    configPath = join(emulators.directory, 'members.yaml');
    eventsFile = join(emulators.directory, 'members-events.jsonl');
    document.hub = { kubeconfig: estate.state.kubeconfig };
    // GKE through workload identity federation (the local Google STS issues the access tokens): a
    // service-account key's tokens come from Google's own token endpoint, which no test may reach.
    document.providers.gke.credentials = { file: localGoogleFederation(emulators.directory, emulators.gke) };
    document.bus = { jsonl: eventsFile };
    document.inventory = { namespace, clusterSets: { prod: [namespace] } };
    document.features = { memberProbe: 'on' };
    // One slot: every member is due on every run (pacing has its own test).
    // No member keeps cpsync waiting (analytics' refuses at once): a deadline no reading comes near.
    document.memberProbe = { everyMinutes: 15, slotMinutes: 15, timeoutSeconds: 60, budgetSeconds: 60 };
  });

  after(async () => {
    await member?.stop();
    await emulators?.stop();
  });

  step(
    'copies the labelled ClusterProperties unchanged, takes the id from kube-system, lists the CRD groups, and keeps what the clouds and the configuration say (its ClusterSet, with the member’s visible as a conflict)',
    async () => {
      const reviewsBefore = member.reviews.length;
      const { millis, run } = await sync();
      assert.match(run.stderr, /members: 7 read \(4 could not be\), \d+ ms of probing/);
      const reached = await atMember();
      for (const [provider, profile] of Object.entries(reached)) {
        assert.equal(
          condition(profile, 'MemberReachable')?.status,
          'True',
          `${provider}: ${JSON.stringify(profile.status?.conditions)}`,
        );
        assert.equal(prop(profile, 'rack.example.com'), 'r12', provider);
        assert.equal(prop(profile, 'unlabelled.example.com'), undefined, provider);
        assert.equal(prop(profile, 'cluster.clusterset.k8s.io'), kubeSystemUid, provider);
        assert.equal(prop(profile, 'cpsync.io/cluster-id-source'), 'kube-system-uid', provider);
        assert.ok(
          JSON.parse(prop(profile, 'group.customResource.k8s.io')!).includes('about.k8s.io'),
          provider,
        );
        assert.equal(prop(profile, 'clusterset.k8s.io'), 'prod', provider);
        assert.equal(prop(profile, 'cpsync.io/clusterset-conflict'), 'configured prod, member member-set');
        // The cloud's location and the endpoint the cloud gives (the member's own address here), not the member's.
        assert.match(prop(profile, 'location.topology.k8s.io') ?? '', /^(aws|gcp|azure)\/(?!member-says)/);
        assert.deepEqual(JSON.parse(prop(profile, 'cluster-endpoints.k8s.io')!), [
          `${new URL(member.server).hostname}:${new URL(member.server).port || 443}`,
        ]);
        assert.match(
          condition(profile, 'MemberReachable')?.message ?? '',
          /not copied: cluster-endpoints\.k8s\.io \(cpsync's, from the clouds and the configuration\), clusterset\.k8s\.io \(.*\), location\.topology\.k8s\.io \(/,
        );
        assert.deepEqual(JSON.parse(prop(profile, 'cpsync.io/member-properties')!), [
          'cluster.clusterset.k8s.io',
          'group.customResource.k8s.io',
          'rack.example.com',
        ]);
      }
      // Each cloud's token, made in process by the credential code, was verified the cloud's way.
      const reviews = member.reviews.slice(reviewsBefore);
      for (const provider of ['eks', 'gke', 'aks'])
        assert.ok(
          reviews.some((r) => r.kind === provider && r.authenticated),
          `${provider}: ${JSON.stringify(reviews)}`,
        );
      // An unreachable member is a condition with the reason, and nothing else of the profile changes.
      const others = await elsewhere();
      assert.equal(others.length, 4);
      for (const profile of others) {
        const reachable = condition(profile, 'MemberReachable');
        assert.equal(reachable?.status, 'False', profile.metadata.name);
        assert.equal(reachable?.reason, 'Unreachable');
        // Why, and where: the system's refusal and the address, not only `fetch failed`.
        assert.match(
          reachable?.message ?? '',
          /: fetch failed: connect ECONNREFUSED 127\.\d+\.\d+\.\d+:\d+$/,
        );
        assert.equal(condition(profile, 'ControlPlaneHealthy')?.status, 'True');
        assert.equal(condition(profile, 'Joined')?.status, 'True');
        assert.equal(prop(profile, 'clusterset.k8s.io'), 'prod');
        assert.equal(prop(profile, 'cpsync.io/member-properties'), undefined);
      }
      console.log(
        `[figures] ${/members: .*/.exec(run.stderr)?.[0]}; the whole sync ${Math.round(millis)} ms`,
      );
    },
  );

  step(
    'writes nothing on a run where no member changed (resourceVersions, as the hub keeps them)',
    async () => {
      const before = await versions();
      const { events, millis, run } = await sync();
      assert.deepEqual(await versions(), before);
      assert.match(run.stderr, /hub: \d+ read\(s\), 0 write\(s\)/);
      assert.deepEqual(
        events.filter((e) => e['detail-type'] !== 'Inventory Scope Synced').map((e) => e['detail-type']),
        [],
      );
      console.log(
        `[figures] unchanged: ${/members: .*/.exec(run.stderr)?.[0]}; 0 writes (resourceVersions); the whole sync ${Math.round(millis)} ms`,
      );
    },
  );

  step(
    'takes the member’s own cluster id, finds ClusterProperty through discovery as v1, and drops what a member without the CRD no longer says',
    async () => {
      await setProperty('v1beta1', 'cluster.clusterset.k8s.io', 'member-id-7');
      await sync();
      for (const profile of Object.values(await atMember())) {
        assert.equal(prop(profile, 'cluster.clusterset.k8s.io'), 'member-id-7');
        assert.equal(prop(profile, 'cpsync.io/cluster-id-source'), 'ClusterProperty');
      }

      // The same objects served as about.k8s.io/v1 only (the version of the KEP's examples).
      await deleteCustomResourceDefinition(member.kubeconfig, ABOUT_CRD);
      const v1 = aboutCrd();
      v1.spec.versions = [{ ...v1.spec.versions.find((v: Doc) => v.name === 'v1beta1'), name: 'v1' }];
      await installCustomResourceDefinition(member.kubeconfig, v1 as never);
      await setProperty('v1', 'clusterset.k8s.io', 'member-set');
      await setProperty('v1', 'rack.example.com', 'r12');
      await setProperty('v1', 'cluster.clusterset.k8s.io', 'member-id-7');
      const before = await atMember();
      const { events: throughV1 } = await sync();
      // The same properties read through v1: only the condition's message (which names the version) changes.
      for (const [provider, profile] of Object.entries(await atMember())) {
        assert.deepEqual(
          profile.status?.properties,
          before[provider as keyof typeof before].status?.properties,
        );
        assert.match(condition(profile, 'MemberReachable')?.message ?? '', /about\.k8s\.io\/v1\)/);
      }
      assert.deepEqual(
        [...new Set(throughV1.flatMap((e) => (e.detail.changedFields as string[] | undefined) ?? []))],
        ['status.conditions[MemberReachable]'],
      );

      // No ClusterProperty API at all: nothing to copy; the id falls back to kube-system's UID.
      await deleteCustomResourceDefinition(member.kubeconfig, ABOUT_CRD);
      const { events } = await sync();
      for (const profile of Object.values(await atMember())) {
        assert.equal(prop(profile, 'rack.example.com'), undefined);
        assert.equal(prop(profile, 'cluster.clusterset.k8s.io'), kubeSystemUid);
        assert.equal(prop(profile, 'clusterset.k8s.io'), 'prod', 'the configured ClusterSet again');
        assert.equal(prop(profile, 'cpsync.io/clusterset-conflict'), undefined);
        assert.ok(!JSON.parse(prop(profile, 'group.customResource.k8s.io') ?? '[]').includes('about.k8s.io'));
        assert.match(condition(profile, 'MemberReachable')?.message ?? '', /No ClusterProperty API served/);
      }
      const updated = events.filter((e) => e['detail-type'] === 'ClusterProfile Updated');
      assert.equal(updated.length, 3);
      assert.ok(updated.every((e) => e.detail.changedFields.includes('status.properties[rack.example.com]')));
    },
  );

  step(
    'keeps what was read before when the member refuses, with the reason, and changes nothing else',
    async () => {
      const before = await atMember();
      const rbac = memberConfig.makeApiClient(RbacAuthorizationV1Api);
      await rbac.deleteClusterRoleBinding({ name: 'cpsync:member-probe' });
      const { events } = await sync();
      for (const [provider, profile] of Object.entries(await atMember())) {
        const was = before[provider as keyof typeof before];
        const reachable = condition(profile, 'MemberReachable');
        assert.equal(reachable?.status, 'False');
        assert.equal(reachable?.reason, 'Forbidden', JSON.stringify(reachable));
        const withoutCondition = (p: ClusterProfile) => ({
          properties: p.status?.properties,
          others: p.status?.conditions?.filter((c) => c.type !== 'MemberReachable'),
          accessProviders: p.status?.accessProviders,
        });
        assert.deepEqual(withoutCondition(profile), withoutCondition(was), provider);
      }
      assert.deepEqual(
        events
          .filter((e) => e['detail-type'] === 'ClusterProfile Updated')
          .map((e) => e.detail.changedFields)
          .flat()
          .filter((f: string) => f !== 'status.conditions[MemberReachable]'),
        [],
      );
      assert.equal(events.filter((e) => e['detail-type'] === 'ClusterProfile Deleted').length, 0);
    },
  );

  step(
    'leaks no credential, nor any token it reached a member with, into output, events or profiles',
    async () => {
      const all = await assertNoCredentials(captured, emulators);
      const tokens = member.reviews.filter((r) => r.authenticated).map((r) => r.token);
      assert.ok(tokens.length >= 3);
      for (const token of tokens) assert.ok(!all.includes(token), 'a member token leaked');
    },
  );

  step('turned off, removes every property it wrote and its condition', async () => {
    document.features = { memberProbe: 'off' };
    await sync();
    for (const profile of await profiles()) {
      const names = (profile.status?.properties ?? []).map((p) => p.name);
      for (const name of [
        'cluster.clusterset.k8s.io',
        'group.customResource.k8s.io',
        'cpsync.io/cluster-id-source',
        'cpsync.io/member-properties',
        'cpsync.io/clusterset-conflict',
        'rack.example.com',
      ])
        assert.ok(!names.includes(name), `${profile.metadata.name}: ${name}`);
      assert.equal(condition(profile, 'MemberReachable'), undefined);
      assert.equal(prop(profile, 'clusterset.k8s.io'), 'prod');
    }
  });

  it('reads, keeps, falls back and cleans up, in this order', async () => {
    await runSteps();
  });
});
