/* eslint-disable @typescript-eslint/no-explicit-any -- Argo CD's output taken apart as plain JSON */
/**
 * The Argo CD subscriber against the real local kube-apiserver: profiles in the hub, their events through
 * moto's EventBridge (rule from the kit → SQS, read back as Lambda would get them) into the handler, and the
 * cluster Secrets it writes read back by Argo CD's own conversion code (util/db.SecretToCluster and the
 * cluster's REST config, built from Argo CD's Go module).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  AdmissionregistrationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  type V1Secret,
} from '@kubernetes/client-node';
import fc from 'fast-check';
import {
  CreateEventBusCommand,
  EventBridgeClient,
  PutRuleCommand,
  PutTargetsCommand,
} from '@aws-sdk/client-eventbridge';
import { CreateQueueCommand, GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { CreateTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { compose } from '../../../adapters/compose/compose.ts';
import { parseConfig } from '../../../adapters/compose/config.ts';
import { KubernetesHub } from '../../../adapters/hub/KubernetesHub.ts';
import { normalize } from '../../../core/domain/normalize.ts';
import { ANNOTATION_DELETED_AT } from '../../../core/domain/constants.ts';
import {
  CLUSTER_PROFILE_API_VERSION,
  CLUSTER_PROFILE_KIND,
  type ClusterProfile,
} from '../../../core/domain/model/clusterProfile.ts';
import { buildAnnounceEvent, buildChangeEvent } from '../../../core/sync/events.ts';
import type { CpsyncEvent } from '../../../events/types.ts';
import { patterns } from '../../../events/index.ts';
import {
  ArgoCdClusters,
  type ReconcileReport,
} from '../../../functions/subscribers/argocd/ArgoCdClusters.ts';
import {
  clusterSecretOf,
  PROFILE_ANNOTATION,
  PROFILE_UID_ANNOTATION,
} from '../../../functions/subscribers/argocd/clusterSecret.ts';
import { makeArgoCdSubscriber, type ArgoCdDeps } from '../../../functions/subscribers/argocd/handler.ts';
import { main } from '../../../cli/program.ts';
import { ensureArgoCdBinary } from '../../env/binaries.ts';
import { startHubProxy } from '../../env/hubProxy.ts';
import { startMoto, type MotoServer } from '../../env/moto.ts';
import { HUB_CREDENTIALS } from '../../support/aws.ts';
import { drainQueue, publishTo, wholeEventTarget, type ReceivedEvent } from '../../support/events.ts';
import { aksCluster, eksCluster, gkeCluster, NOW } from '../../support/fixtures.ts';
import { adminKubeConfig, localHub, uniqueNamespace } from '../../support/hub.ts';
import {
  installAdmissionPolicy,
  POLICY_NAMESPACE_LABEL,
  type InstalledPolicy,
} from '../../support/hubManifests.ts';
import { readHubGuard, TRUSTED_HUB } from '../../../adapters/hub/hubPolicy.ts';
import { lambdaContext } from '../../support/lambda.ts';
import { until } from '../../support/until.ts';
import { asEarlierVersionWrote } from '../../support/argocdSecrets.ts';
import { inventoryOptions } from '../../support/settings.ts';
import { temporaryDirectory } from '../../support/tmp.ts';

const BUS = 'argocd-test';
/** What the subscriber says of a profile another writer deleted. */
const HELD =
  'being deleted by another writer, held by a finalizer: its Secret written from it stays as it is, none is made';
const inventory = uniqueNamespace('inv');
/** A second inventory namespace: clusters tagged `placement: moved` are placed there (a namespace rule). */
const moved = uniqueNamespace('moved');
const MOVED_RULE = { tag: { key: 'placement', value: 'moved' }, namespace: moved };
const argocd = uniqueNamespace('argocd');

/** Argo CD's reading of a Secret: the Cluster it makes of it and the REST config it would connect with. */
function argoCdReads(argo: string, secret: V1Secret): { cluster: any; rest: any } {
  const result = spawnSync(argo, [], { input: JSON.stringify(secret), encoding: 'utf8' });
  assert.equal(result.status, 0, `Argo CD could not read ${secret.metadata?.name}: ${result.stderr}`);
  return JSON.parse(result.stdout) as { cluster: any; rest: any };
}

/**
 * The Secret a version before Secrets named their manager wrote for the profile of an EKS cluster since gone: no
 * manager label, no mark of how its profile was judged, and the profile it names no longer in the hub.
 */
function goneClusterSecret(name: string): V1Secret {
  const profile = normalize(eksCluster({ name }), inventoryOptions({ namespace: inventory }), NOW);
  const made = clusterSecretOf(profile, { namespace: argocd });
  assert.ok('secret' in made, JSON.stringify(made));
  return asEarlierVersionWrote(made.secret);
}

describe('Argo CD cluster Secrets from the inventory (real hub, moto EventBridge, Argo CD’s own conversion)', () => {
  let moto: MotoServer;
  let argo: string;
  let core: CoreV1Api;
  let hub: KubernetesHub;
  let queueUrl: string;
  let handler: ReturnType<typeof makeArgoCdSubscriber>;
  let configFile: string;
  let kubeConfig: ReturnType<typeof adminKubeConfig>;
  let policy: InstalledPolicy | undefined;
  /** Whether the subscriber is told to trust the hub's writers (`unguardedHub: trust`) rather than read its policy. */
  let trusting = false;
  const saved = { ...process.env };

  /**
   * The hub's admission policy as shipped, letting only the identity the hub is written as here (the admin) write
   * cpsync's profiles, its binding matching the inventory namespace (or, with `elsewhere`, another namespace only).
   */
  async function guardInventory(elsewhere = false): Promise<void> {
    await policy?.remove();
    policy = await installAdmissionPolicy(kubeConfig, {
      identity: 'cpsync-admin',
      selects: elsewhere ? `not-${inventory}` : inventory,
    });
  }

  before(async () => {
    argo = ensureArgoCdBinary((line) => console.error(line));
    const state = await localHub();
    kubeConfig = adminKubeConfig(state);
    core = kubeConfig.makeApiClient(CoreV1Api);
    hub = new KubernetesHub({ kubeConfig });
    await hub.ensureNamespace({ name: inventory });
    const namespace = await core.readNamespace({ name: inventory });
    namespace.metadata!.labels = { ...namespace.metadata!.labels, [POLICY_NAMESPACE_LABEL]: inventory };
    await core.replaceNamespace({ name: inventory, body: namespace });
    // Guarded by the same binding of the policy as the inventory namespace.
    await hub.ensureNamespace({ name: moved });
    const second = await core.readNamespace({ name: moved });
    second.metadata!.labels = { ...second.metadata!.labels, [POLICY_NAMESPACE_LABEL]: inventory };
    await core.replaceNamespace({ name: moved, body: second });
    await guardInventory();
    await core.createNamespace({ body: { metadata: { name: argocd } } });

    moto = await startMoto();
    Object.assign(process.env, {
      AWS_ACCESS_KEY_ID: HUB_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: HUB_CREDENTIALS.secretAccessKey,
      AWS_REGION: 'us-east-1',
      AWS_EC2_METADATA_DISABLED: 'true',
      AWS_ENDPOINT_URL_DYNAMODB: moto.endpoint,
      POWERTOOLS_LOG_LEVEL: 'ERROR',
      POWERTOOLS_METRICS_DISABLED: 'true',
      POWERTOOLS_TRACE_ENABLED: 'false',
      POWERTOOLS_IDEMPOTENCY_DISABLED: 'false',
      ARGOCD_IDEMPOTENCY_TABLE: 'argocd-idempotency',
    });
    const aws = { endpoint: moto.endpoint, region: 'us-east-1', credentials: HUB_CREDENTIALS };
    await new DynamoDBClient(aws).send(
      new CreateTableCommand({
        TableName: 'argocd-idempotency',
        KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }],
        AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }],
        BillingMode: 'PAY_PER_REQUEST',
      }),
    );
    const eventBridge = new EventBridgeClient(aws);
    const sqs = new SQSClient(aws);
    await eventBridge.send(new CreateEventBusCommand({ Name: BUS }));
    queueUrl = (await sqs.send(new CreateQueueCommand({ QueueName: 'argocd' }))).QueueUrl!;
    const arn = (
      await sqs.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn'] }))
    ).Attributes!.QueueArn!;
    await eventBridge.send(
      new PutRuleCommand({
        Name: 'inventory',
        EventBusName: BUS,
        EventPattern: JSON.stringify(patterns.inventory()),
      }),
    );
    await eventBridge.send(
      new PutTargetsCommand({ Rule: 'inventory', EventBusName: BUS, Targets: [wholeEventTarget(arn)] }),
    );

    const document = {
      hub: { kubeconfig: state.kubeconfig },
      inventory: { namespace: inventory, namespaceRules: [MOVED_RULE] },
      bus: { eventBridge: { busName: BUS, endpoint: moto.endpoint, region: 'us-east-1' } },
    };
    configFile = join(temporaryDirectory('cpsync-argocd-'), 'cpsync.json');
    writeFileSync(configFile, JSON.stringify(document));
    const composition = await compose(parseConfig(document, 'test'), []);
    const deps: ArgoCdDeps = {
      composition,
      clusters: new ArgoCdClusters(kubeConfig, {
        namespace: argocd,
        extraArgs: ['--role-name', 'argocd'],
      }),
      guard: async () =>
        trusting ? TRUSTED_HUB : readHubGuard(kubeConfig, composition.settings.options.manager),
    };
    handler = makeArgoCdSubscriber(async () => deps);
  });

  after(async () => {
    process.env = saved;
    await policy?.remove();
    await core?.deleteNamespace({ name: argocd }).catch(() => {});
    await core?.deleteNamespace({ name: moved }).catch(() => {});
    await moto?.stop();
  });

  const options = inventoryOptions({ namespace: inventory, features: { clusterSets: true } });

  /**
   * Writes `profile` to the hub as cpsync does (object, then status; `between` runs in between); returns it as
   * stored.
   */
  async function store(profile: ClusterProfile, between = async () => {}): Promise<ClusterProfile> {
    await hub.applyObject(profile);
    await between();
    return hub.applyStatus(profile);
  }

  /** The profile `ref` as the hub holds it, as cpsync writes it (no server-made fields): to store it again. */
  async function asWritten(ref: { namespace: string; name: string }): Promise<ClusterProfile> {
    const stored = (await hub.get(ref))!;
    return {
      ...stored,
      metadata: {
        name: stored.metadata.name,
        namespace: ref.namespace,
        labels: stored.metadata.labels!,
        annotations: stored.metadata.annotations!,
      },
    };
  }

  const publish = (events: readonly CpsyncEvent[]) => publishTo(moto.endpoint, BUS, events);

  /** Every event the rule delivered, handed to the handler as its Lambda target would be; their results. */
  async function deliver(): Promise<Array<{ event: ReceivedEvent; result: any }>> {
    const delivered = [];
    for (const event of await drainQueue(queueUrl))
      delivered.push({ event, result: await handler(event, lambdaContext('argocd')) });
    return delivered;
  }

  const secrets = async () =>
    (await core.listNamespacedSecret({ namespace: argocd })).items.sort((a, b) =>
      a.metadata!.name!.localeCompare(b.metadata!.name!),
    );
  const context = (p: ClusterProfile) => ({
    syncId: 'argocd-sync-1',
    occurredAt: NOW,
    scope: {
      provider: p.metadata.labels!['cpsync.io/provider'] as 'eks',
      account: p.metadata.labels!['cpsync.io/account']!,
      region: p.metadata.labels!['cpsync.io/region']!,
    },
  });
  let profiles: ClusterProfile[] = [];

  it('Created events become cluster Secrets Argo CD reads: server, CA, the cpsync credentials exec, selectable labels', async () => {
    const started = Date.now();
    profiles = [];
    for (const cluster of [eksCluster(), gkeCluster(), aksCluster()])
      profiles.push(await store(normalize(cluster, options, NOW)));
    await publish(
      profiles.map((p) =>
        buildChangeEvent(
          { kind: 'created', profile: p, changes: [{ field: 'spec', after: {} }] },
          context(p),
        ),
      ),
    );
    const results = await deliver();
    assert.deepEqual(
      results.map((r) => r.result.outcome),
      ['created', 'created', 'created'],
    );
    const written = await secrets();
    assert.equal(written.length, 3);
    console.log(
      `Argo CD: ${results.length} events in → ${written.length} Secrets out in ${Date.now() - started} ms`,
    );

    for (const profile of profiles) {
      const secret = written.find(
        (s) => s.metadata!.annotations!['cpsync.io/profile'] === `${inventory}/${profile.metadata.name}`,
      )!;
      assert.ok(secret, profile.metadata.name);
      const { cluster, rest } = argoCdReads(argo, secret);
      const access = profile.status!.accessProviders![0]!.cluster!;
      assert.equal(cluster.server, access.server.replace(/\/$/, ''));
      assert.equal(cluster.name, profile.metadata.name);
      assert.equal(rest.host, cluster.server);
      assert.equal(rest.insecure, false);
      const ca = access['certificate-authority-data'];
      assert.equal(rest.caDataLength, ca ? Buffer.from(ca, 'base64').length : 0);
      assert.equal(rest.exec.command, 'cpsync');
      assert.equal(rest.exec.apiVersion, 'client.authentication.k8s.io/v1beta1');
      const labels = profile.metadata.labels!;
      const provider = labels['cpsync.io/provider'];
      const args: string[] = rest.exec.args;
      assert.deepEqual(args.slice(0, 3), ['credentials', '--provider', provider]);
      assert.deepEqual(args.slice(-2), ['--role-name', 'argocd']);
      const flag = (name: string) => args[args.indexOf(name) + 1];
      const cloudName = { eks: 'payments', gke: 'analytics', aks: 'web' }[provider as 'eks' | 'gke' | 'aks'];
      assert.equal(flag('--cluster-name'), cloudName);
      if (provider === 'eks')
        assert.deepEqual([flag('--region'), flag('--account')], ['us-east-1', '111122223333']);
      if (provider === 'gke')
        assert.deepEqual([flag('--project'), flag('--location')], ['acme-data', 'europe-west1']);
      if (provider === 'aks') assert.equal(flag('--subscription'), '00000000-1111-2222-3333-444444444444');
      // Argo CD carries the Secret's labels onto the cluster: what ApplicationSet cluster generators select on.
      assert.equal(cluster.labels['cpsync.io/provider'], provider);
      assert.equal(cluster.labels['cpsync.io/region'], labels['cpsync.io/region']);
      assert.equal(cluster.labels['cpsync.io/account'], labels['cpsync.io/account']);
      assert.ok(cluster.labels['cpsync.io/kubernetes-version']);
      assert.equal(cluster.labels['argocd.argoproj.io/secret-type'], undefined);
      // No credential is written: Argo CD gets a token from the exec plugin each time it connects.
      const config = JSON.parse(Buffer.from(secret.data!.config!, 'base64').toString()) as Record<
        string,
        any
      >;
      assert.deepEqual(Object.keys(config).sort(), ['execProviderConfig', 'tlsClientConfig']);
      assert.deepEqual(
        Object.keys(config.tlsClientConfig).sort(),
        ca ? ['caData', 'insecure'] : ['insecure'],
      );
      assert.equal(config.execProviderConfig.env, undefined);
    }
  });

  it('an upgrade relabels the Secret; an older event arriving late changes nothing; a duplicate is answered once', async () => {
    const eks = profiles[0]!;
    const upgraded = await store({ ...eks, status: { ...eks.status!, version: { kubernetes: '1.32' } } });
    const upgrade = buildChangeEvent(
      {
        kind: 'updated',
        profile: upgraded,
        previousResourceVersion: eks.metadata.resourceVersion!,
        changes: [{ field: 'status.version.kubernetes', before: '1.31', after: '1.32' }],
      },
      context(upgraded),
    );
    await publish([upgrade]);
    assert.deepEqual(
      (await deliver()).map((r) => r.result.outcome),
      ['updated'],
    );
    const name = `cluster-${eks.metadata.name}`;
    const read = () => core.readNamespacedSecret({ name, namespace: argocd });
    assert.equal((await read()).metadata!.labels!['cpsync.io/kubernetes-version'], '1.32');

    // The creation event (resourceVersion older than the upgrade's) delivered again, late, with a new id.
    const late = buildChangeEvent(
      { kind: 'updated', profile: eks, previousResourceVersion: '1', changes: [{ field: 'x', after: 1 }] },
      context(eks),
    );
    await publish([late]);
    // The profile is read from the hub, whatever the event carries: the Secret is already what it says.
    assert.deepEqual(
      (await deliver()).map((r) => r.result.outcome),
      ['unchanged'],
    );
    assert.equal((await read()).metadata!.labels!['cpsync.io/kubernetes-version'], '1.32');

    // The upgrade delivered again (same event id): answered from the idempotency record — even with the
    // Secret gone meanwhile, nothing is written again.
    await core.deleteNamespacedSecret({ name, namespace: argocd });
    await publish([upgrade]);
    const again = await deliver();
    assert.equal(again.length, 1);
    assert.equal(again[0]!.result.outcome, 'updated', 'the first delivery’s result');
    await assert.rejects(read(), (e: any) => e.code === 404);
  });

  it('a forged event changes nothing the hub does not say: no redirected server, no Secret of a profile the hub lacks, and later real events still apply', async () => {
    const gke = (await hub.get({ namespace: inventory, name: profiles[1]!.metadata.name }))!;
    const secretName = `cluster-${gke.metadata.name}`;
    const server = async () =>
      Buffer.from(
        (await core.readNamespacedSecret({ name: secretName, namespace: argocd })).data!.server!,
        'base64',
      ).toString('utf8');
    const before = await server();
    // cpsync's source and detail-type, a server of the sender's choosing, a resourceVersion from the far future.
    const evil = structuredClone(gke);
    evil.metadata.resourceVersion = '999999999999';
    evil.status!.accessProviders = evil.status!.accessProviders!.map((provider) => ({
      ...provider,
      cluster: { ...provider.cluster!, server: 'https://34.76.10.20@evil.example.com' },
    }));
    const ghost = structuredClone(gke);
    ghost.metadata.name = 'ghost-0000000000';
    ghost.metadata.uid = '00000000-0000-0000-0000-000000000000';
    const elsewhere = structuredClone(gke);
    elsewhere.metadata.namespace = 'kube-system';
    await publish(
      [evil, ghost, elsewhere].map((p) => {
        const event = buildChangeEvent(
          { kind: 'created', profile: p, changes: [{ field: 'spec', after: {} }] },
          context(gke),
        );
        // Ids of the sender's choosing (the real Created event's id would be answered from the idempotency record).
        return { ...event, detail: { ...event.detail, eventId: randomUUID() } };
      }),
    );
    const results = await deliver();
    assert.deepEqual(
      results.map((r) => r.result.outcome).sort(),
      ['absent', 'skipped', 'unchanged'],
      JSON.stringify(results.map((r) => r.result)),
    );
    assert.equal(await server(), before, 'the server is what the hub says');
    assert.ok(
      !(await secrets()).some((secret) => secret.metadata!.name!.includes('ghost')),
      'no Secret for a profile the hub does not have',
    );

    // The real upgrade that follows is applied (the forged resourceVersion blocks nothing).
    const upgraded = await store({ ...gke, status: { ...gke.status!, version: { kubernetes: '1.33' } } });
    await publish([
      buildChangeEvent(
        {
          kind: 'updated',
          profile: upgraded,
          previousResourceVersion: gke.metadata.resourceVersion!,
          changes: [{ field: 'status.version.kubernetes', before: '1.31', after: '1.33' }],
        },
        context(upgraded),
      ),
    ]);
    assert.deepEqual(
      (await deliver()).map((r) => r.result.outcome),
      ['updated'],
    );
    const secret = await core.readNamespacedSecret({ name: secretName, namespace: argocd });
    assert.equal(secret.metadata!.labels!['cpsync.io/kubernetes-version'], '1.33');
  });

  it('a full reconcile from the hub repairs what missed events left wrong, and never touches a Secret made by hand', async () => {
    // Wrong in every way: a Secret missing (above), one of a profile gone, one edited, one made by hand.
    const [eks, gke, aks] = profiles;
    await core.createNamespacedSecret({ namespace: argocd, body: goneClusterSecret('gone-0') });
    await core.patchNamespacedSecret({
      name: `cluster-${gke!.metadata.name}`,
      namespace: argocd,
      body: [
        {
          op: 'replace',
          path: '/data/server',
          value: Buffer.from('https://wrong.example').toString('base64'),
        },
      ],
    });
    await core.deleteNamespacedSecret({ name: `cluster-${aks!.metadata.name}`, namespace: argocd });
    await core.createNamespacedSecret({
      namespace: argocd,
      body: {
        metadata: {
          name: `cluster-${aks!.metadata.name}`,
          labels: { 'argocd.argoproj.io/secret-type': 'cluster' },
        },
        stringData: { name: 'hand-made', server: 'https://hand.example' },
      },
    });
    const report = (await handler({ reconcile: true }, lambdaContext('argocd'))) as ReconcileReport;
    assert.deepEqual(
      {
        created: report.created,
        updated: report.updated,
        deleted: report.deleted,
        conflicts: report.conflicts.length,
      },
      { created: 1, updated: 1, deleted: 1, conflicts: 1 },
    );
    const names = (await secrets()).map((s) => s.metadata!.name);
    assert.deepEqual(names, [eks, gke, aks].map((p) => `cluster-${p!.metadata.name}`).sort());
    const handMade = await core.readNamespacedSecret({
      name: `cluster-${aks!.metadata.name}`,
      namespace: argocd,
    });
    assert.equal(Buffer.from(handMade.data!.server!, 'base64').toString(), 'https://hand.example');
    const repaired = await core.readNamespacedSecret({
      name: `cluster-${gke!.metadata.name}`,
      namespace: argocd,
    });
    assert.equal(
      argoCdReads(argo, repaired).cluster.server,
      gke!.status!.accessProviders![0]!.cluster!.server,
    );
    await core.deleteNamespacedSecret({ name: `cluster-${aks!.metadata.name}`, namespace: argocd });
  });

  it('a Secret the cluster refuses to write fails the reconcile, naming its profile, once every other Secret is set right and the stale ones removed; the refused one stays as it was', async () => {
    const [eks, , aks] = profiles;
    const refused = `cluster-${eks!.metadata.name}`;
    const stale = goneClusterSecret('gone-1');
    await core.createNamespacedSecret({ namespace: argocd, body: stale });
    const wrong = Buffer.from('https://wrong.example').toString('base64');
    await core.patchNamespacedSecret({
      name: refused,
      namespace: argocd,
      body: [{ op: 'replace', path: '/data/server', value: wrong }],
    });
    // The API server refuses any write of that one Secret (an admission policy of the cluster Argo CD runs in).
    const admission = kubeConfig.makeApiClient(AdmissionregistrationV1Api);
    const name = `refuse-${argocd}`;
    await admission.createValidatingAdmissionPolicy({
      body: {
        metadata: { name },
        spec: {
          failurePolicy: 'Fail',
          matchConstraints: {
            resourceRules: [
              {
                apiGroups: [''],
                apiVersions: ['v1'],
                operations: ['CREATE', 'UPDATE'],
                resources: ['secrets'],
              },
            ],
          },
          validations: [{ expression: `object.metadata.name != '${refused}'`, message: 'refused here' }],
        },
      },
    });
    try {
      await admission.createValidatingAdmissionPolicyBinding({
        body: {
          metadata: { name },
          spec: {
            policyName: name,
            validationActions: ['Deny'],
            matchResources: {
              namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': argocd } },
            },
          },
        },
      });
      const current = await core.readNamespacedSecret({ name: refused, namespace: argocd });
      await until(
        () =>
          core
            .replaceNamespacedSecret({ name: refused, namespace: argocd, body: current, dryRun: 'All' })
            .then(
              () => false,
              (error) => /refused here/.test(String((error as { body?: unknown }).body ?? error)),
            ),
        'the policy refusing the Secret in force',
      );
      await assert.rejects(
        handler({ reconcile: true }, lambdaContext('argocd')),
        new RegExp(
          `could not write the Argo CD cluster Secret of 1 profile\\(s\\): ${inventory}/${eks!.metadata.name} \\(.*refused here`,
        ),
      );
      const names = (await secrets()).map((s) => s.metadata!.name);
      assert.deepEqual(
        names,
        [...profiles.map((p) => `cluster-${p.metadata.name}`)].sort(),
        'the stale one removed',
      );
      const kept = await core.readNamespacedSecret({ name: refused, namespace: argocd });
      assert.equal(kept.data!.server, wrong, 'the refused Secret left as it was');
      const madeAgain = await core.readNamespacedSecret({
        name: `cluster-${aks!.metadata.name}`,
        namespace: argocd,
      });
      assert.equal(
        argoCdReads(argo, madeAgain).cluster.server,
        aks!.status!.accessProviders![0]!.cluster!.server,
      );
    } finally {
      await admission.deleteValidatingAdmissionPolicyBinding({ name }).catch(() => {});
      await admission.deleteValidatingAdmissionPolicy({ name }).catch(() => {});
    }
    // Once the cluster takes the write again, the next reconcile sets it right.
    await until(async () => {
      try {
        const report = (await handler({ reconcile: true }, lambdaContext('argocd'))) as ReconcileReport;
        return report.failed.length === 0;
      } catch {
        return false;
      }
    }, 'a reconcile writing every Secret');
    const repaired = await core.readNamespacedSecret({ name: refused, namespace: argocd });
    assert.equal(
      argoCdReads(argo, repaired).cluster.server,
      eks!.status!.accessProviders![0]!.cluster!.server,
    );
  });

  it('a profile someone else deleted keeps its Secret for the grace: marked missing, kept, removed once the grace is over; written again before that, unmarked', async () => {
    const eks = profiles[0]!;
    const ref = { namespace: inventory, name: eks.metadata.name };
    const secretName = `cluster-${eks.metadata.name}`;
    const original = await asWritten(ref);
    const reconcile = async () =>
      (await handler({ reconcile: true }, lambdaContext('argocd'))) as ReconcileReport;
    const mark = async () =>
      (await core.readNamespacedSecret({ name: secretName, namespace: argocd })).metadata?.annotations?.[
        'cpsync.io/profile-missing-since'
      ];
    const server = async () =>
      Buffer.from(
        (await core.readNamespacedSecret({ name: secretName, namespace: argocd })).data!.server!,
        'base64',
      ).toString();
    const before = await server();
    try {
      // Deleted by someone allowed to delete profiles (the policy guards writes, not deletions), no event of cpsync's.
      await hub.delete(ref);
      const first = await reconcile();
      assert.equal(first.deleted, 0, JSON.stringify(first));
      assert.deepEqual(
        first.missing.map((m) => m.profile),
        [`${inventory}/${eks.metadata.name}`],
      );
      const since = await mark();
      assert.ok(since && !Number.isNaN(Date.parse(since)), `marked: ${since}`);
      // Again at once (an on-demand reconcile, a replay): kept, the mark as it was.
      const second = await reconcile();
      assert.equal(second.deleted, 0);
      assert.equal(await mark(), since);
      assert.equal(await server(), before);

      // cpsync writes it again at its next sync: the Secret is written as it was, without the mark.
      await store(original);
      const third = await reconcile();
      assert.equal(third.updated, 1, JSON.stringify(third));
      assert.deepEqual(third.missing, []);
      assert.equal(await mark(), undefined);

      // Missing again, and for longer than the grace (the mark set an hour and a minute back): removed.
      await hub.delete(ref);
      await reconcile();
      const secret = await core.readNamespacedSecret({ name: secretName, namespace: argocd });
      secret.metadata!.annotations!['cpsync.io/profile-missing-since'] = new Date(
        Date.now() - 61 * 60_000,
      ).toISOString();
      await core.replaceNamespacedSecret({ name: secretName, namespace: argocd, body: secret });
      const last = await reconcile();
      assert.equal(last.deleted, 1, JSON.stringify(last));
      assert.ok(!(await secrets()).some((s) => s.metadata?.name === secretName));

      // A Secret made while the hub's writers were trusted (its profile may have been anyone's) is kept for no grace
      // once they are not: its profile missing, it goes at the first reconcile.
      await store(original);
      await reconcile();
      const trusted = await core.readNamespacedSecret({ name: secretName, namespace: argocd });
      trusted.metadata!.annotations!['cpsync.io/written-under'] = 'trusted';
      await core.replaceNamespacedSecret({ name: secretName, namespace: argocd, body: trusted });
      await hub.delete(ref);
      const untrusted = await reconcile();
      assert.equal(untrusted.deleted, 1, JSON.stringify(untrusted));
      assert.deepEqual(untrusted.missing, []);
    } finally {
      await store(original);
      await reconcile();
    }
    assert.equal(await server(), before, 'written again as it was');
  });

  it('a Deleted event removes the Secret — unless the profile is back in the hub', async () => {
    const [eks, gke] = profiles;
    await hub.delete({ namespace: inventory, name: gke!.metadata.name });
    await publish([
      buildChangeEvent(
        { kind: 'deleted', profile: gke!, changes: [{ field: 'metadata', before: {} }] },
        context(gke!),
      ),
      // eks is still in the hub: its Deleted event (of an earlier object) must not take its Secret.
      buildChangeEvent(
        {
          kind: 'deleted',
          profile: { ...eks!, metadata: { ...eks!.metadata, uid: 'an-earlier-object' } },
          changes: [{ field: 'metadata', before: {} }],
        },
        context(eks!),
      ),
    ]);
    const outcomes = (await deliver()).map((r) => [r.event.detail.name, r.result.outcome]).sort();
    assert.deepEqual(
      outcomes,
      [
        [eks!.metadata.name, 'unchanged'],
        [gke!.metadata.name, 'deleted'],
      ].sort(),
    );
    const names = (await secrets()).map((s) => s.metadata!.name);
    assert.ok(!names.includes(`cluster-${gke!.metadata.name}`));
    assert.ok(names.includes(`cluster-${eks!.metadata.name}`));
  });

  it("a cluster placed in another inventory namespace since, under the same name: its old place's Deleted event, before, with or after its new place's Created, leaves its Secret standing (the same object), made from the profile where it is now", async () => {
    const placed = inventoryOptions({
      namespace: inventory,
      namespaceRules: [MOVED_RULE],
      features: { clusterSets: true },
    });
    for (const order of ['deleted first', 'together', 'created first'] as const) {
      const cluster = eksCluster({ name: `wanderer-${order.split(' ')[0]}` });
      const before = await store(normalize(cluster, placed, NOW));
      await publish([
        buildChangeEvent(
          { kind: 'created', profile: before, changes: [{ field: 'spec', after: {} }] },
          context(before),
        ),
      ]);
      await deliver();
      const secretName = `cluster-${before.metadata.name}`;
      const made = await core.readNamespacedSecret({ name: secretName, namespace: argocd });
      // The cluster tagged to the rule's namespace: cpsync creates it there (the same name), then deletes the old.
      const after = await store(
        normalize({ ...cluster, tags: { ...cluster.tags, placement: 'moved' } }, placed, NOW),
      );
      assert.equal(after.metadata.namespace, moved);
      assert.equal(after.metadata.name, before.metadata.name);
      await hub.delete({ namespace: inventory, name: before.metadata.name });
      const deletedEvent = buildChangeEvent(
        { kind: 'deleted', profile: before, changes: [{ field: 'metadata', before: {} }] },
        context(before),
      );
      const createdEvent = buildChangeEvent(
        { kind: 'created', profile: after, changes: [{ field: 'spec', after: {} }] },
        context(after),
      );
      const outcomes: string[] = [];
      for (const events of order === 'deleted first'
        ? [[deletedEvent], [createdEvent]]
        : order === 'created first'
          ? [[createdEvent], [deletedEvent]]
          : [[deletedEvent, createdEvent]]) {
        await publish(events);
        for (const { result } of await deliver()) {
          outcomes.push(result.outcome);
          const now = await core.readNamespacedSecret({ name: secretName, namespace: argocd });
          assert.equal(now.metadata!.uid, made.metadata!.uid, `${order}: never removed, nor made again`);
        }
      }
      assert.ok(!outcomes.includes('deleted'), `${order}: ${outcomes.join(', ')}`);
      const last = await core.readNamespacedSecret({ name: secretName, namespace: argocd });
      assert.equal(last.metadata!.annotations![PROFILE_ANNOTATION], `${moved}/${after.metadata.name}`, order);

      // Gone from its new place too (the cluster deleted): its Deleted event removes the Secret.
      await hub.delete({ namespace: moved, name: after.metadata.name });
      await publish([
        buildChangeEvent(
          { kind: 'deleted', profile: after, changes: [{ field: 'metadata', before: {} }] },
          context(after),
        ),
      ]);
      assert.deepEqual(
        (await deliver()).map((r) => r.result.outcome),
        ['deleted'],
      );
      assert.ok(!(await secrets()).some((s) => s.metadata?.name === secretName), order);
    }
  });

  /** A profile of cpsync's in the hub, with what the finalizer cases do to it. */
  async function heldProfile(clusterName: string) {
    const objects = kubeConfig.makeApiClient(CustomObjectsApi);
    const held = await store(normalize(eksCluster({ name: clusterName }), options, NOW));
    const ref = { namespace: inventory, name: held.metadata.name };
    const path = {
      group: 'multicluster.x-k8s.io',
      version: 'v1alpha1',
      namespace: inventory,
      plural: 'clusterprofiles',
      name: ref.name,
    };
    const finalizers = (value: string[]) =>
      objects.patchNamespacedCustomObject(
        { ...path, body: [{ op: 'add', path: '/metadata/finalizers', value }] },
        setHeaderOptions('Content-Type', PatchStrategy.JsonPatch),
      );
    const secretOf = async () => (await secrets()).find((s) => s.metadata!.name === `cluster-${ref.name}`);
    return { held, ref, path, objects, finalizers, secretOf };
  }

  it("a profile being deleted, held by another controller's finalizer, is a profile gone: no event or reconcile writes its Secret, and its Deleted event removes it", async () => {
    const { held, ref, finalizers, secretOf } = await heldProfile('held-open');
    const created = (kind: 'created' | 'updated' | 'deleted') =>
      buildChangeEvent({ kind, profile: held, changes: [{ field: 'spec', after: {} }] }, context(held));
    try {
      await publish([created('created')]);
      assert.deepEqual(
        (await deliver()).map((r) => r.result.outcome),
        ['created'],
      );
      // Another controller holds it; cpsync deletes it (its cluster gone): the hub keeps it, being deleted.
      await finalizers(['example.com/hold']);
      await hub.delete(ref);
      assert.ok((await hub.get(ref))?.metadata.deletionTimestamp, 'being deleted, still in the hub');
      // Its Secret taken away while it was there: neither an event of it nor a reconcile makes it again.
      await core.deleteNamespacedSecret({ name: `cluster-${ref.name}`, namespace: argocd });
      await publish([created('updated')]);
      assert.deepEqual(
        (await deliver()).map((r) => r.result.outcome),
        ['absent'],
      );
      await handler({ reconcile: true }, lambdaContext('argocd'));
      assert.equal(await secretOf(), undefined, 'no Secret of a profile being deleted');
      // Its Secret as it was made before the deletion: the Deleted event removes it, the hub still holding the profile.
      const stored = (await hub.get(ref))!;
      const { deletionTimestamp: _deleting, ...metadata } = stored.metadata;
      await new ArgoCdClusters(kubeConfig, { namespace: argocd }).upsert(
        { ...stored, metadata },
        { newest: true },
      );
      assert.ok(await secretOf(), 'a Secret there');
      await publish([created('deleted')]);
      assert.deepEqual(
        (await deliver()).map((r) => r.result.outcome),
        ['deleted'],
      );
      assert.equal(await secretOf(), undefined);
    } finally {
      await finalizers([]).catch(() => {});
    }
  });

  it("a profile another writer deleted, held by a finalizer, is still its cluster's: its Secret stays as written past the grace, a Deleted event does not take it, and none is made from it; once cpsync deletes it in turn, it is a profile gone", async () => {
    const { held, ref, path, objects, finalizers, secretOf } = await heldProfile('held-by-another');
    const event = (kind: 'created' | 'deleted') =>
      buildChangeEvent({ kind, profile: held, changes: [{ field: 'spec', after: {} }] }, context(held));
    const reconcile = async () =>
      (await handler({ reconcile: true }, lambdaContext('argocd'))) as ReconcileReport;
    try {
      await publish([event('created')]);
      assert.deepEqual(
        (await deliver()).map((r) => r.result.outcome),
        ['created'],
      );
      const written = (await secretOf())!;
      // Another writer (allowed by RBAC to delete profiles) deletes it while its finalizer holds it: no mark of cpsync's.
      await finalizers(['example.com/hold']);
      await objects.deleteNamespacedCustomObject(path);
      const deleting = (await hub.get(ref))!;
      assert.ok(deleting.metadata.deletionTimestamp, 'being deleted, still in the hub');
      assert.equal(
        deleting.metadata.annotations?.[ANNOTATION_DELETED_AT],
        undefined,
        'not deleted by cpsync',
      );

      // A Deleted event (cpsync made none: anyone's, under an id of its own): the Secret stays as it was written.
      const anyones = event('deleted');
      await publish([{ ...anyones, detail: { ...anyones.detail, eventId: randomUUID() } }]);
      assert.deepEqual(
        (await deliver()).map((r) => [r.result.outcome, r.result.reason]),
        [['skipped', `${ref.namespace}/${ref.name}: ${HELD}`]],
      );
      // Reconciles: held as it is, so its Secret is never marked missing and no grace runs.
      for (let round = 0; round < 2; round++) {
        const report = await reconcile();
        assert.deepEqual(report.missing, [], JSON.stringify(report));
        assert.equal(report.deleted, 0, JSON.stringify(report));
        assert.ok(
          report.skipped.some((k) => k.reason === `${ref.namespace}/${ref.name}: ${HELD}`),
          JSON.stringify(report),
        );
      }
      const kept = (await secretOf())!;
      assert.equal(kept.metadata!.uid, written.metadata!.uid, 'the same Secret');
      assert.equal(kept.metadata!.annotations?.['cpsync.io/profile-missing-since'], undefined);

      // Nothing is made from it: without its Secret (as for a profile an earlier cpsync deleted, which carries no mark
      // either, its Secret removed then), neither an event nor a reconcile writes one.
      await core.deleteNamespacedSecret({ name: `cluster-${ref.name}`, namespace: argocd });
      const again = event('created');
      await publish([{ ...again, detail: { ...again.detail, eventId: randomUUID() } }]);
      assert.deepEqual(
        (await deliver()).map((r) => r.result.outcome),
        ['skipped'],
      );
      await reconcile();
      assert.equal(await secretOf(), undefined, 'no Secret made from a profile another writer deleted');

      // cpsync deletes it in turn (its cluster gone): marked as cpsync's deletion, a profile gone.
      await hub.delete(ref);
      const marked = (await hub.get(ref))!;
      assert.ok(marked.metadata.annotations?.[ANNOTATION_DELETED_AT], 'marked as cpsync’s deletion');
      assert.equal(marked.metadata.uid, deleting.metadata.uid, 'the same object, still held');
      await publish([event('deleted')]);
      assert.deepEqual(
        (await deliver()).map((r) => r.result.outcome),
        ['absent'],
      );
      await reconcile();
      assert.equal(await secretOf(), undefined, 'not written again from a profile cpsync deleted');
    } finally {
      await finalizers([]).catch(() => {});
    }
  });

  it('refuses an event that is not one it reads, and a bad setting, naming what is wrong', async () => {
    const built = buildChangeEvent(
      { kind: 'created', profile: profiles[0]!, changes: [{ field: 'spec', after: {} }] },
      context(profiles[0]!),
    );
    const event = {
      version: '0',
      id: '7b1e4a52-0c6d-4f1e-9a3b-2d5c8e7f9a10',
      'detail-type': built.detailType,
      source: built.source,
      account: '123456789012',
      time: built.time,
      region: 'us-east-1',
      resources: built.resources,
      detail: { ...built.detail, schemaVersion: '2.0' },
    };
    await assert.rejects(
      handler(event, lambdaContext('argocd')),
      /detail\.schemaVersion is 2\.0: this reader takes schema 1\.x/,
    );
    const saved = process.env.ARGOCD_CREDENTIALS_ARGS;
    process.env.ARGOCD_CREDENTIALS_ARGS = '--role-name reader';
    try {
      await assert.rejects(
        makeArgoCdSubscriber()({ reconcile: true }, lambdaContext('argocd')),
        /Argo CD subscriber settings: ARGOCD_CREDENTIALS_ARGS: must be a JSON list of strings/,
      );
    } finally {
      if (saved === undefined) delete process.env.ARGOCD_CREDENTIALS_ARGS;
      else process.env.ARGOCD_CREDENTIALS_ARGS = saved;
    }
    for (const [value, message] of [
      ['an hour', 'must be a whole number of minutes'],
      ['-5', 'must be 0 or more'],
      ['20000', 'must be at most 10080'],
    ] as const) {
      process.env.ARGOCD_MISSING_PROFILE_GRACE_MINUTES = value;
      try {
        await assert.rejects(
          makeArgoCdSubscriber()({ reconcile: true }, lambdaContext('argocd')),
          new RegExp(`Argo CD subscriber settings: ARGOCD_MISSING_PROFILE_GRACE_MINUTES: ${message}`),
        );
      } finally {
        delete process.env.ARGOCD_MISSING_PROFILE_GRACE_MINUTES;
      }
    }
  });

  it('replay: after losing its state, the subscriber rebuilds it from `cpsync announce --all`', async () => {
    for (const secret of await secrets())
      await core.deleteNamespacedSecret({ name: secret.metadata!.name!, namespace: argocd });
    const stdout: string[] = [];
    const stderr: string[] = [];
    const io = {
      stdout: { write: (s: string) => stdout.push(s) } as unknown as NodeJS.WritableStream,
      stderr: { write: (s: string) => stderr.push(s) } as unknown as NodeJS.WritableStream,
    };
    assert.equal(await main(['--config', configFile, 'announce'], io), 2, 'nothing chosen: a usage error');
    assert.match(stderr.join(''), /say what to announce: --all/);
    assert.equal(await main(['--config', configFile, 'announce', '--all'], io), 0, stderr.join(''));
    assert.match(stderr.join(''), /announced 2 of 2 profile\(s\) as ClusterProfile Announced events/);
    const results = await deliver();
    assert.deepEqual(
      results.map((r) => r.event['detail-type']),
      ['ClusterProfile Announced', 'ClusterProfile Announced'],
    );
    assert.ok(results.every((r) => r.result.outcome === 'created'));
    const remaining = profiles.filter((p) => p !== profiles[1]);
    assert.deepEqual(
      (await secrets()).map((s) => s.metadata!.name),
      remaining.map((p) => `cluster-${p.metadata.name}`).sort(),
    );
    // Announcing again is a new announcement: new event ids, nothing changed in Argo CD.
    assert.equal(await main(['--config', configFile, 'announce', '--provider', 'aks'], io), 0);
    const second = await deliver();
    assert.equal(second.length, 1);
    assert.ok(!results.some((r) => r.event.detail.eventId === second[0]!.event.detail.eventId));
    assert.equal(second[0]!.result.outcome, 'unchanged');
  });

  it("a profile made by hand with cpsync's manager label but no provider id gets no Secret, from an event or the full reconcile", async () => {
    // What anyone allowed to write ClusterProfiles here can make when the hub's admission policy is not applied:
    // a real cluster's exec extension (so the Secret's credential plugin would name it) and a server of their choosing.
    const real = profiles[0]!;
    const forged = (name: string, manager: string): ClusterProfile => ({
      apiVersion: CLUSTER_PROFILE_API_VERSION,
      kind: CLUSTER_PROFILE_KIND,
      metadata: { name, namespace: inventory, labels: { 'x-k8s.io/cluster-manager': 'cpsync' } },
      spec: { displayName: name, clusterManager: { name: manager } },
      status: {
        accessProviders: real.status!.accessProviders!.map((provider) => ({
          ...provider,
          cluster: { ...provider.cluster!, server: 'https://collector.example.com' },
        })),
      },
    });
    const made = [forged('forged-label-only', 'someone-else'), forged('forged-no-provider-id', 'cpsync')];
    try {
      for (const profile of made) await store(profile);
      const before = (await secrets()).map((s) => s.metadata!.name);
      await publish(
        made.map((p) =>
          buildChangeEvent(
            { kind: 'created', profile: p, changes: [{ field: 'spec', after: {} }] },
            context(real),
          ),
        ),
      );
      const results = (await deliver())
        .map((r) => [r.event.detail.name, r.result.outcome, r.result.reason])
        .sort();
      assert.deepEqual(results, [
        [
          'forged-label-only',
          'skipped',
          `${inventory}/forged-label-only is not managed by cpsync (spec.clusterManager.name: "someone-else")`,
        ],
        [
          'forged-no-provider-id',
          'skipped',
          `${inventory}/forged-no-provider-id has no cpsync.io/provider-id annotation: not a profile cpsync wrote`,
        ],
      ]);
      const report = (await handler({ reconcile: true }, lambdaContext('argocd'))) as ReconcileReport;
      assert.deepEqual(
        report.skipped
          .filter((s) => s.profile.includes('/forged-'))
          .sort((a, b) => a.profile.localeCompare(b.profile)),
        [
          {
            profile: `${inventory}/forged-label-only`,
            reason: `${inventory}/forged-label-only is not managed by cpsync (spec.clusterManager.name: "someone-else")`,
          },
          {
            profile: `${inventory}/forged-no-provider-id`,
            reason: `${inventory}/forged-no-provider-id has no cpsync.io/provider-id annotation: not a profile cpsync wrote`,
          },
        ],
      );
      const after = await secrets();
      assert.ok(!after.some((s) => s.metadata!.name!.includes('forged')), 'no Secret of a forged profile');
      assert.ok(
        !after.some(
          (s) => Buffer.from(s.data?.server ?? '', 'base64').toString() === 'https://collector.example.com',
        ),
        "no Secret names the writer's server",
      );
      assert.deepEqual(
        after.map((s) => s.metadata!.name),
        before,
        "cpsync's own profiles keep their Secrets",
      );
    } finally {
      for (const profile of made) await hub.delete(profile.metadata);
    }
  });

  it("where the hub's admission policy does not keep others from writing profiles, nothing written there reaches Argo CD: no Secret is made or changed, those written while it was guarded stay as they were, and any other is removed", async () => {
    /** The managed Secrets: each one's name and the server it sends Argo CD to. */
    const managed = async () =>
      (await secrets())
        .filter((s) => s.metadata?.labels?.['app.kubernetes.io/managed-by'] === 'cpsync')
        .map((s) => [s.metadata!.name!, Buffer.from(s.data!.server!, 'base64').toString()]);
    const before = await managed();
    assert.ok(before.length >= 2, 'Secrets of earlier cases to keep');
    // A server of theirs where such a cluster is reached (another cluster of the same cloud and region: theirs), so
    // that only the hub's guard stands between it and Argo CD.
    const collectorOf = (server: string) => server.replace(/^https:\/\/[^.:/]+/, 'https://collector');
    const ref = { namespace: inventory, name: profiles[0]!.metadata.name };
    const original = await asWritten(ref);
    // What anyone allowed to write ClusterProfiles in an unguarded namespace can do: point cpsync's profile at a
    // server of theirs, and make one like cpsync's in every field the subscriber reads, provider id included.
    const redirected = (profile: ClusterProfile): ClusterProfile => ({
      ...profile,
      status: {
        ...profile.status!,
        accessProviders: profile.status!.accessProviders!.map((provider) => ({
          ...provider,
          cluster: { ...provider.cluster!, server: collectorOf(provider.cluster!.server) },
        })),
      },
    });
    const planted = redirected({ ...original, metadata: { ...original.metadata, name: 'planted' } });
    const unguarded = new RegExp(
      `does not match the namespace ${inventory} \\(its namespaceSelector\\) — bind it there`,
    );
    // Each event of its own (an update's id is made of the version it starts from: the same twice is a duplicate).
    let versions = 0;
    const updated = (profile: ClusterProfile) =>
      buildChangeEvent(
        {
          kind: 'updated',
          profile,
          previousResourceVersion: `unguarded-${++versions}`,
          changes: [{ field: 'status', after: {} }],
        },
        context(original),
      );
    // A Secret as an earlier version wrote it, before the subscriber judged the hub: without the mark.
    const [unmarked] = before.find(([name]) => name !== `cluster-${original.metadata.name}`)!;
    const secret = await core.readNamespacedSecret({ name: unmarked!, namespace: argocd });
    delete secret.metadata!.annotations!['cpsync.io/written-under'];
    await core.replaceNamespacedSecret({ name: unmarked!, namespace: argocd, body: secret });
    try {
      await guardInventory(true);
      await store(planted);
      // Made while the subscriber trusted the hub's writers: a Secret of the planted profile.
      trusting = true;
      await publish([updated(planted)]);
      assert.deepEqual(
        (await deliver()).map((r) => r.result.outcome),
        ['created'],
      );
      assert.ok((await managed()).some(([name]) => name === 'cluster-planted'));
      trusting = false;

      const overwritten = await store(redirected(original));
      await publish([planted, overwritten].map(updated));
      const results = new Map(
        (await deliver()).map((r) => [
          r.event.detail.name as string,
          r.result as { outcome: string; reason: string },
        ]),
      );
      assert.equal(results.size, 2);
      for (const result of results.values()) {
        assert.equal(result.outcome, 'skipped');
        assert.match(result.reason, unguarded);
      }
      assert.match(results.get('planted')!.reason, /\(its Secret, not written while guarded, removed\)$/);
      assert.doesNotMatch(results.get(original.metadata.name)!.reason, /removed/);
      assert.deepEqual(await managed(), before, 'nothing made, nothing changed; the trusted one removed');

      const report = (await handler({ reconcile: true }, lambdaContext('argocd'))) as ReconcileReport;
      assert.equal(report.created + report.updated, 0, JSON.stringify(report));
      assert.equal(report.deleted, 1, 'the Secret without the mark removed');
      assert.ok(report.skipped.some((s) => s.profile === `${inventory}/planted` && unguarded.test(s.reason)));
      const kept = before.filter(([name]) => name !== unmarked);
      assert.deepEqual(await managed(), kept, 'those written while guarded kept as they were');

      // `cpsync announce` puts out nothing others could have written as cpsync's word: every profile there is
      // withheld with the reason, and it exits 1; trusting the hub's writers (--unguarded-hub trust), they go out.
      const said: string[] = [];
      const quiet = {
        stdout: { write: () => true } as unknown as NodeJS.WritableStream,
        stderr: { write: (s: string) => said.push(s) } as unknown as NodeJS.WritableStream,
      };
      assert.equal(await main(['--config', configFile, 'announce', '--all'], quiet), 1, said.join(''));
      assert.match(
        said.join(''),
        new RegExp(
          `not announced, as cpsync cannot tell it wrote them: (.*, )?${inventory}/planted(, .*)?: .*${unguarded.source}`,
        ),
      );
      assert.match(said.join(''), /announced 0 of 0 profile\(s\) .*; [2-9] withheld/);
      assert.deepEqual(await deliver(), [], 'nothing published');
      said.length = 0;
      assert.equal(
        await main(['--config', configFile, 'announce', '--all', '--unguarded-hub', 'trust'], quiet),
        0,
        said.join(''),
      );
      const announced = await deliver();
      assert.ok(
        announced.some((r) => r.event.detail.name === 'planted'),
        'trusted, the planted profile is announced',
      );
      // The subscriber still judges the hub for itself.
      assert.ok(announced.every((r) => r.result.outcome === 'skipped'));
      assert.deepEqual(await managed(), kept);

      // No policy at all: the same, saying so.
      await policy!.remove();
      policy = undefined;
      const bare = (await handler({ reconcile: true }, lambdaContext('argocd'))) as ReconcileReport;
      assert.equal(bare.created + bare.updated + bare.deleted, 0, JSON.stringify(bare));
      assert.ok(
        bare.skipped.some((s) =>
          /the ValidatingAdmissionPolicy cpsync-clusterprofiles is not on the hub/.test(s.reason),
        ),
        JSON.stringify(bare.skipped),
      );
      assert.deepEqual(await managed(), kept);

      // cpsync's profile deleted and made again there (another object, its uid new): its Secret was not written from
      // this one, and goes.
      await hub.delete(ref);
      await store(redirected(original));
      const remade = (await handler({ reconcile: true }, lambdaContext('argocd'))) as ReconcileReport;
      assert.equal(remade.created + remade.updated, 0, JSON.stringify(remade));
      assert.equal(remade.deleted, 1, JSON.stringify(remade));
      assert.deepEqual(
        await managed(),
        kept.filter(([name]) => name !== `cluster-${original.metadata.name}`),
      );
    } finally {
      trusting = false;
      await hub.delete({ namespace: inventory, name: 'planted' });
      await store(original);
      await guardInventory();
    }
    // Guarded again, cpsync's profile as cpsync wrote it (only its identity could have written it now).
    const again = (await handler({ reconcile: true }, lambdaContext('argocd'))) as ReconcileReport;
    assert.equal(again.created, 2, JSON.stringify(again));
    assert.equal(again.updated + again.deleted, 0, JSON.stringify(again));
    assert.deepEqual(await managed(), before);
    assert.ok(!before.some(([, server]) => server?.startsWith('https://collector.')));
  });

  it('where the hub is unguarded, a Secret is removed only as it was read: one another invocation wrote meanwhile while guarded stays', async () => {
    const proxy = await startHubProxy(await localHub());
    const profile = await store(normalize(eksCluster({ name: 'rewritten' }), options, NOW));
    const secretName = `cluster-${profile.metadata.name}`;
    try {
      const viaProxy = new KubeConfig();
      viaProxy.loadFromString(proxy.kubeconfig);
      const releasing = new ArgoCdClusters(viaProxy, { namespace: argocd });
      const other = new ArgoCdClusters(kubeConfig, { namespace: argocd });
      // Its Secret as written while the subscriber trusted the hub's writers: not to be kept once it is unguarded.
      await other.upsert(profile, { newest: true, writtenUnder: 'trusted' });
      // The release reads it; before that answer reaches it, another invocation, the namespace guarded at its
      // reading, writes the Secret again.
      let rewritten: Promise<unknown> | undefined;
      proxy.rule = ({ method, path }) =>
        method === 'GET' && path.endsWith(`/secrets/${secretName}`) && !rewritten
          ? {
              holdAnswer: true,
              until: (rewritten = other.upsert(profile, { newest: true, writtenUnder: 'guarded' })),
            }
          : undefined;
      assert.deepEqual(await releasing.release(profile), { outcome: 'unchanged' });
      assert.ok(rewritten, 'the release read the Secret');
      const kept = await core.readNamespacedSecret({ name: secretName, namespace: argocd });
      assert.equal(kept.metadata!.annotations!['cpsync.io/written-under'], 'guarded');
      // Written again meanwhile, but not while guarded (another invocation trusting the hub's writers): judged again
      // at the next reading, and removed.
      await other.upsert(profile, { newest: true, writtenUnder: 'trusted' });
      let again: Promise<unknown> | undefined;
      const versionChanged = { ...profile, status: { ...profile.status!, version: { kubernetes: '1.99' } } };
      const asked = proxy.requests.length;
      proxy.rule = ({ method, path }) =>
        method === 'GET' && path.endsWith(`/secrets/${secretName}`) && !again
          ? {
              holdAnswer: true,
              until: (again = other.upsert(versionChanged, { newest: true, writtenUnder: 'trusted' })),
            }
          : undefined;
      assert.deepEqual(await releasing.release(profile), { outcome: 'deleted' });
      assert.deepEqual(
        proxy.requests
          .slice(asked)
          .filter((r) => r.path.includes(`/secrets/${secretName}`))
          .map((r) => r.method),
        ['GET', 'DELETE', 'GET', 'DELETE'],
        'read, refused as written since, read again, removed',
      );
      await assert.rejects(
        core.readNamespacedSecret({ name: secretName, namespace: argocd }),
        /404|not found/i,
      );
    } finally {
      proxy.rule = undefined;
      await proxy.stop();
      await hub.delete({ namespace: inventory, name: profile.metadata.name });
      await core.deleteNamespacedSecret({ name: secretName, namespace: argocd }).catch(() => {});
    }
  });

  it('concurrent invocations, their requests reaching the hub in any order, deliveries repeated and failures retried as Lambda retries them, leave every Secret as the hub says (property); an event stops following a profile that never rests', async () => {
    // Every request of this handler to the hub and to Argo CD's cluster goes through a proxy that holds it until the
    // property lets it through: once every running invocation waits at the proxy, one of their requests, as drawn.
    const proxy = await startHubProxy(await localHub());
    const directory = temporaryDirectory('cpsync-argocd-concurrent-');
    const viaProxy = join(directory, 'proxy.kubeconfig');
    writeFileSync(viaProxy, proxy.kubeconfig);
    const composition = await compose(
      parseConfig(
        {
          hub: { kubeconfig: viaProxy },
          inventory: { namespace: inventory },
          bus: { eventBridge: { busName: BUS, endpoint: moto.endpoint, region: 'us-east-1' } },
        },
        'test',
      ),
      [],
    );
    const argoViaProxy = new KubeConfig();
    argoViaProxy.loadFromString(proxy.kubeconfig);
    /**
     * The subscriber trusting the hub's writers, or reading the hub's admission policy at each invocation (in force in
     * the inventory namespace throughout): its readings of the policy wait at the proxy like any other request.
     */
    const subscriber = (guarded: boolean) =>
      makeArgoCdSubscriber(async () => ({
        composition,
        clusters: new ArgoCdClusters(argoViaProxy, { namespace: argocd }),
        guard: async () =>
          guarded ? readHubGuard(argoViaProxy, composition.settings.options.manager) : TRUSTED_HUB,
        // A reconcile removes the Secret of a missing profile at once, and reads and writes one Secret at a time (so
        // that it too waits at the proxy one request at a time).
        missingGraceMillis: 0,
        concurrency: 1,
      }));
    let concurrent = subscriber(false);
    /** The requests held at the proxy, in the order they came. */
    const held: Array<{ method: string; path: string; release: () => void }> = [];
    let wake = () => {};
    let changed = new Promise<void>((resolve) => (wake = resolve));
    const tell = () => {
      const woken = wake;
      changed = new Promise<void>((resolve) => (wake = resolve));
      woken();
    };
    const holding = ({ method, path }: { method: string; path: string }) => {
      let release = () => {};
      const until = new Promise<void>((resolve) => (release = resolve));
      held.push({ method, path, release });
      tell();
      return { holdRequest: true as const, until };
    };
    // A change to a profile in the hub (its event delivered at once), a delivery repeated, or a held request let
    // through: mostly the last, so that invocations overtake one another.
    const step = fc.oneof(
      {
        weight: 2,
        arbitrary: fc.record({
          kind: fc.constant('change' as const),
          cluster: fc.constantFrom(0, 1),
          // `announce`: `cpsync announce` puts the profile out as it is now (an Announced event).
          change: fc.constantFrom('put', 'delete', 'recreate', 'announce'),
          // Held requests let through between the profile's object and its status being written (cpsync writes the
          // two apart): a reading of the hub in between sees the profile without its status.
          between: fc.nat({ max: 2 }),
        }),
      },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant('redeliver' as const), pick: fc.nat() }) },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant('reconcile' as const) }) },
      { weight: 4, arbitrary: fc.record({ kind: fc.constant('release' as const), pick: fc.nat() }) },
    );
    let run = 0;
    let mostTries = 0;
    const guardReadings = () =>
      proxy.requests.filter((r) => r.path.includes('validatingadmissionpolic')).length;
    try {
      for (const { guarded, numRuns } of [
        { guarded: false, numRuns: 100 },
        { guarded: true, numRuns: 40 },
      ]) {
        concurrent = subscriber(guarded);
        const readingsBefore = guardReadings();
        await fc.assert(
          fc.asyncProperty(
            fc.array(step, { minLength: 1, maxLength: 20 }),
            fc.array(fc.nat(), { minLength: 1, maxLength: 8 }),
            async (steps, drainOrder) => {
              run += 1;
              proxy.rule = holding;
              const clusters = [`race-${run}-a`, `race-${run}-b`];
              const names = new Map<number, string>();
              const stored = new Map<number, ClusterProfile>();
              const deliveries: ReceivedEvent[] = [];
              const running = new Map<string, number>();
              let invocations = 0;
              /** An event delivered, or the reconcile (as its schedule invokes it). */
              type Input = ReceivedEvent | { reconcile: true };
              const keyOf = (input: Input) => ('reconcile' in input ? 'reconcile' : input.detail.eventId);
              /** Failed invocations to try again, each with the try it will be of its delivery. */
              const retries: Array<{ input: Input; attempt: number }> = [];
              const failures: string[] = [];
              /**
               * Starts an invocation, then waits until it (and every other) waits at the proxy or is done: one invocation
               * starts at a time, so the requests come to the proxy in an order the drawn values alone decide.
               */
              const invoke = async (input: Input, attempt = 1) => {
                const id = keyOf(input);
                mostTries = Math.max(mostTries, attempt);
                running.set(id, (running.get(id) ?? 0) + 1);
                invocations += 1;
                void concurrent(input, lambdaContext('argocd'))
                  .then(
                    () => {},
                    (error: unknown) => {
                      const e = error as { name?: string; code?: number; message?: string };
                      failures.push(e.name === 'IdempotencyAlreadyInProgressError' ? e.name : `${e.code}`);
                      // Lambda tries a failed invocation again later (the schedule, a reconcile): here, once no other
                      // copy of it runs.
                      retries.push({ input, attempt: attempt + 1 });
                    },
                  )
                  .finally(() => {
                    running.set(id, running.get(id)! - 1);
                    invocations -= 1;
                    tell();
                  });
                await settled();
              };
              const retryWhatMay = async () => {
                for (const retry of retries.splice(0))
                  if ((running.get(keyOf(retry.input)) ?? 0) === 0) await invoke(retry.input, retry.attempt);
                  else retries.push(retry);
              };
              /** Until every running invocation waits at the proxy (or none runs). */
              const settled = async () => {
                while (held.length < invocations) await changed;
              };
              const publishAndDeliver = async (events: CpsyncEvent[]) => {
                await publish(events);
                for (const event of await drainQueue(queueUrl)) {
                  deliveries.push(event);
                  await invoke(event);
                }
              };
              const ref = (i: number) => ({ namespace: inventory, name: names.get(i)! });
              /** Secrets of a profile the hub held, at the time, that a request let through deleted. */
              const wronglyDeleted: string[] = [];
              const secretNamed = (name: string) =>
                core.readNamespacedSecret({ name, namespace: argocd }).catch((error: { code?: number }) => {
                  if (error.code === 404) return undefined;
                  throw error;
                });
              /**
               * Lets one held request through. Every other invocation waits at the proxy meanwhile, so a Secret this one
               * deletes is seen before and after: deleting it while the hub holds the very profile it was made from is
               * what must never happen (Argo CD would let go of a cluster that still exists).
               */
              const letThrough = async (request: (typeof held)[number]) => {
                const secret = /\/secrets\/([^/?]+)/.exec(request.path)?.[1];
                const before = request.method === 'DELETE' && secret ? await secretNamed(secret) : undefined;
                const answered = new Promise<void>((resolve) => (proxy.onAnswered = () => resolve()));
                request.release();
                await answered;
                proxy.onAnswered = undefined;
                if (before && !(await secretNamed(secret!))) {
                  const [namespace, name] = before.metadata!.annotations!['cpsync.io/profile']!.split('/');
                  const profile = await hub.get({ namespace: namespace!, name: name! });
                  if (profile?.metadata.uid === before.metadata!.annotations![PROFILE_UID_ANNOTATION])
                    wronglyDeleted.push(secret!);
                }
                // Nothing else happens until the invocation it let through waits at the proxy again, or is done.
                await settled();
              };
              const current = (i: number) => (names.has(i) ? hub.get(ref(i)) : Promise.resolve(undefined));
              /** Writes `profile` as cpsync does, `between` held requests let through between its object and status. */
              const write = (profile: ClusterProfile, between: number) =>
                store(profile, async () => {
                  for (let k = 0; k < between && held.length > 0; k += 1) await letThrough(held.shift()!);
                });
              const create = async (i: number, between: number) => {
                const profile = await write(
                  normalize(eksCluster({ name: clusters[i]! }), options, NOW),
                  between,
                );
                names.set(i, profile.metadata.name);
                stored.set(i, profile);
                return buildChangeEvent(
                  { kind: 'created', profile, changes: [{ field: 'spec', after: {} }] },
                  context(profile),
                );
              };
              const remove = async (i: number) => {
                await hub.delete(ref(i));
                return buildChangeEvent(
                  { kind: 'deleted', profile: stored.get(i)!, changes: [{ field: 'metadata', before: {} }] },
                  context(stored.get(i)!),
                );
              };
              for (const next of steps) {
                await retryWhatMay();
                if (next.kind === 'release') {
                  await settled();
                  if (held.length > 0) await letThrough(held.splice(next.pick % held.length, 1)[0]!);
                } else if (next.kind === 'reconcile') {
                  await invoke({ reconcile: true });
                } else if (next.kind === 'redeliver') {
                  if (deliveries.length > 0) await invoke(deliveries[next.pick % deliveries.length]!);
                } else {
                  const there = await current(next.cluster);
                  if (next.change === 'put' && there) {
                    const before = stored.get(next.cluster)!;
                    const minor = 30 + ((Number(before.status!.version!.kubernetes!.split('.')[1]) + 1) % 5);
                    const written = await asWritten(ref(next.cluster));
                    const profile = await write(
                      { ...written, status: { ...before.status!, version: { kubernetes: `1.${minor}` } } },
                      next.between,
                    );
                    stored.set(next.cluster, profile);
                    await publishAndDeliver([
                      buildChangeEvent(
                        {
                          kind: 'updated',
                          profile,
                          previousResourceVersion: before.metadata.resourceVersion!,
                          changes: [{ field: 'status.version.kubernetes', after: `1.${minor}` }],
                        },
                        context(profile),
                      ),
                    ]);
                  } else if (next.change === 'announce') {
                    if (there)
                      await publishAndDeliver([
                        buildAnnounceEvent(there, {
                          ...context(there),
                          syncId: `announce-${run}-${deliveries.length}`,
                        }),
                      ]);
                  } else if (next.change === 'delete') {
                    if (there) await publishAndDeliver([await remove(next.cluster)]);
                  } else {
                    const gone = there ? [await remove(next.cluster)] : [];
                    await publishAndDeliver([...gone, await create(next.cluster, next.between)]);
                  }
                }
              }
              // Everything delivered, retried and let through, in the order drawn.
              for (let drained = 0; ; drained += 1) {
                await retryWhatMay();
                if (invocations === 0 && retries.length === 0) break;
                await settled();
                const pick = drainOrder[drained % drainOrder.length]!;
                if (held.length > 0) await letThrough(held.splice(pick % held.length, 1)[0]!);
              }
              try {
                for (const [i, name] of names) {
                  const profile = await current(i);
                  const secret = await secretNamed(`cluster-${name}`);
                  if (!profile) {
                    assert.equal(secret, undefined, `${name}: a Secret of a profile the hub does not hold`);
                    continue;
                  }
                  assert.ok(secret, `${name}: no Secret for a profile the hub holds`);
                  assert.equal(
                    secret.metadata!.annotations![PROFILE_UID_ANNOTATION],
                    profile.metadata.uid,
                    name,
                  );
                  assert.equal(
                    secret.metadata!.labels!['cpsync.io/kubernetes-version'],
                    profile.status!.version!.kubernetes,
                    name,
                  );
                }
                assert.deepEqual(wronglyDeleted, [], 'the Secret of a profile the hub held was deleted');
                // A failed invocation failed only on another's write (a conflict, or the Secret gone under it) or on a
                // copy of itself still running, and no delivery kept failing (Lambda tries each 3 times; what is left
                // after that is the reconcile's).
                assert.deepEqual(
                  failures.filter((f) => !['409', '404', 'IdempotencyAlreadyInProgressError'].includes(f)),
                  [],
                );
                assert.ok(mostTries <= 10, `a delivery tried ${mostTries} times`);
              } finally {
                proxy.rule = undefined;
                for (const i of names.keys()) await hub.delete(ref(i)).catch(() => {});
                for (const name of names.values())
                  await core
                    .deleteNamespacedSecret({ name: `cluster-${name}`, namespace: argocd })
                    .catch(() => {});
              }
            },
          ),
          { numRuns },
        );
        // Guarded, every invocation read the policy and its binding through the proxy; trusting, none did.
        if (guarded) assert.ok(guardReadings() - readingsBefore >= numRuns, 'the policy was read');
        else assert.equal(guardReadings(), readingsBefore);
        console.log(
          `Argo CD, concurrent invocations (${guarded ? "the hub's policy read" : "the hub's writers trusted"}): ${run} runs so far; the most tries one delivery took: ${mostTries}`,
        );
      }
      concurrent = subscriber(false);

      // A profile written again at every reading of it: the event stops following it after 5 rounds, and says why
      // (Lambda tries it again). Once the profile rests, the next try writes its Secret.
      const churned = await store(normalize(eksCluster({ name: 'churned' }), options, NOW));
      const ref = { namespace: inventory, name: churned.metadata.name };
      let version = 0;
      proxy.rule = ({ method, path }) =>
        method === 'GET' && path.endsWith(`/clusterprofiles/${ref.name}`)
          ? {
              holdRequest: true,
              until: (async () => {
                version += 1;
                const written = await asWritten(ref);
                await store({
                  ...written,
                  status: { ...churned.status!, version: { kubernetes: `1.${version}` } },
                });
              })(),
            }
          : undefined;
      await publish([
        buildChangeEvent(
          { kind: 'created', profile: churned, changes: [{ field: 'spec', after: {} }] },
          context(churned),
        ),
      ]);
      const [event] = await drainQueue(queueUrl);
      await assert.rejects(
        concurrent(event, lambdaContext('argocd')),
        new RegExp(`${ref.namespace}/${ref.name} changed in the hub 5 times while its Secret was written`),
      );
      assert.equal(version, 6, 'read once, then again after each of 5 rounds');
      proxy.rule = undefined;
      const again = (await concurrent(event, lambdaContext('argocd'))) as { outcome: string };
      assert.match(again.outcome, /^(created|updated)$/);
      const secret = await core.readNamespacedSecret({ name: `cluster-${ref.name}`, namespace: argocd });
      assert.equal(secret.metadata!.labels!['cpsync.io/kubernetes-version'], `1.${version}`);
      await hub.delete(ref);
      await core.deleteNamespacedSecret({ name: `cluster-${ref.name}`, namespace: argocd });
    } finally {
      proxy.rule = undefined;
      for (const { release } of held.splice(0)) release();
      await proxy.stop();
    }
  });
});
