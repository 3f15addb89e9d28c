/**
 * Choosing clusters by their cloud tags with Argo CD's own ApplicationSet cluster generator. cpsync (the CLI, the
 * local clouds, the real hub) copies each cluster's `env` tag to its profiles' labels; cpsync's Argo CD subscriber
 * (its handler, given cpsync's events from moto's EventBridge: a rule of the kit's inventory pattern → SQS) writes
 * one cluster Secret per profile into Argo CD's namespace on the hub; Argo CD's cluster generator (v3.5.7,
 * applicationset/generators, test/env/tools/argocd/generator.go) selects among those Secrets with an
 * ApplicationSet's selector, listing them with a controller-runtime client as the ApplicationSet controller does.
 * The subscriber is cpsync's own path to Argo CD (the integration's copying of every label is walked in
 * argocd.test.ts): what is proven here is both the profiles' labels and the Secrets cpsync ships.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { EKSClient, TagResourceCommand } from '@aws-sdk/client-eks';
import { EventBridgeClient, PutRuleCommand, PutTargetsCommand } from '@aws-sdk/client-eventbridge';
import { CreateQueueCommand, GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { parse, stringify } from 'yaml';
import { compose } from '../../adapters/compose/compose.ts';
import { parseConfig } from '../../adapters/compose/config.ts';
import { patterns } from '../../events/index.ts';
import { ArgoCdClusters } from '../../functions/subscribers/argocd/ArgoCdClusters.ts';
import { makeArgoCdSubscriber, type ArgoCdDeps } from '../../functions/subscribers/argocd/handler.ts';
import { ensureArgoCdBinary } from '../env/binaries.ts';
import { AZURE_SUBSCRIPTION, EKS_ACCOUNT, GCP_PROJECT, type Emulators } from '../env/emulators.ts';
import { accountCredentials, HUB_CREDENTIALS } from '../support/aws.ts';
import { runCli } from '../support/cli.ts';
import { drainQueue, wholeEventTarget } from '../support/events.ts';
import { estateOnHub } from '../support/estate.ts';
import { adminKubeConfig } from '../support/hub.ts';
import { installAdmissionPolicy, type InstalledPolicy } from '../support/hubManifests.ts';
import { readHubGuard } from '../../adapters/hub/hubPolicy.ts';
import { lambdaContext } from '../support/lambda.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- hub documents and the generator's output are read freely here
type Doc = Record<string, any>;

const GROUP = { group: 'multicluster.x-k8s.io', version: 'v1alpha1', plural: 'clusterprofiles' };
const ENV = 'cpsync.io/tag-env';

describe("Argo CD's ApplicationSet cluster generator selects clusters by their cloud tags, through cpsync's profiles and its Argo CD subscriber's Secrets", () => {
  let emulators: Emulators;
  let namespace: string;
  let argocd: string;
  let kubeconfig: string;
  let argo: string;
  let config: string;
  let document: Doc;
  let queueUrl: string;
  let objects: CustomObjectsApi;
  let handler: ReturnType<typeof makeArgoCdSubscriber>;
  let policy: InstalledPolicy | undefined;
  const saved = { ...process.env };

  before(async () => {
    const estate = await estateOnHub('appset');
    ({ emulators, namespace } = estate);
    kubeconfig = estate.state.kubeconfig;
    argocd = `${namespace}-argocd`;
    argo = ensureArgoCdBinary((line) => console.log(`[argocd] ${line}`));
    const hub = adminKubeConfig(estate.state);
    objects = hub.makeApiClient(CustomObjectsApi);
    await hub.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: argocd } } });

    // cpsync: the estate's clouds, every profile labelled with its env tag, events on the estate's bus.
    const estateConfig = parse(readFileSync(emulators.configPath, 'utf8')) as Doc;
    document = {
      ...estateConfig,
      hub: { kubeconfig },
      outbox: { directory: join(emulators.directory, 'appset-outbox') },
      inventory: { namespace, labels: { fromTags: ['env'] } },
    };
    config = join(emulators.directory, 'appset.yaml');
    writeFileSync(config, stringify(document));

    // The subscriber's rule: cpsync's inventory events on that bus → its queue.
    const aws = { endpoint: emulators.moto.endpoint, region: 'us-east-1', credentials: HUB_CREDENTIALS };
    const sqs = new SQSClient(aws);
    const eventBridge = new EventBridgeClient(aws);
    queueUrl = (await sqs.send(new CreateQueueCommand({ QueueName: 'appset-argocd' }))).QueueUrl!;
    const arn = (
      await sqs.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn'] }))
    ).Attributes!.QueueArn!;
    const busName = estateConfig.bus.eventBridge.busName as string;
    await eventBridge.send(
      new PutRuleCommand({
        Name: 'argocd-inventory',
        EventBusName: busName,
        EventPattern: JSON.stringify(patterns.inventory()),
      }),
    );
    await eventBridge.send(
      new PutTargetsCommand({
        Rule: 'argocd-inventory',
        EventBusName: busName,
        Targets: [wholeEventTarget(arn)],
      }),
    );
    sqs.destroy();
    eventBridge.destroy();

    Object.assign(process.env, {
      POWERTOOLS_LOG_LEVEL: 'ERROR',
      POWERTOOLS_METRICS_DISABLED: 'true',
      POWERTOOLS_TRACE_ENABLED: 'false',
    });
    // The hub's admission policy in force everywhere, cpsync's identity the one the sync writes as here (the
    // admin): the subscriber acts only on profiles no one else can have written.
    policy = await installAdmissionPolicy(hub, {
      identity: 'cpsync-admin',
      binding: (b) => ({ ...b, spec: { ...b.spec!, matchResources: undefined } }),
    });
    const composition = await compose(parseConfig(document, config), []);
    const deps: ArgoCdDeps = {
      composition,
      clusters: new ArgoCdClusters(hub, { namespace: argocd }),
      guard: () => readHubGuard(hub, composition.settings.options.manager),
    };
    handler = makeArgoCdSubscriber(async () => deps);
  });

  after(async () => {
    process.env = saved;
    await policy?.remove();
    await emulators?.stop();
  });

  /** Sets (or changes) EKS tags in moto, as TagResource does. */
  async function tagEks(region: string, cluster: string, tags: Record<string, string>): Promise<void> {
    const eks = new EKSClient({
      endpoint: emulators.moto.endpoint,
      region,
      credentials: await accountCredentials(emulators.moto.endpoint, EKS_ACCOUNT),
    });
    await eks.send(
      new TagResourceCommand({
        resourceArn: `arn:aws:eks:${region}:${EKS_ACCOUNT}:cluster/${cluster}`,
        tags,
      }),
    );
    eks.destroy();
  }
  /** Sets the tags (GKE: resourceLabels) of a GKE or AKS cluster of the local clouds. */
  function tagGke(cluster: string, labels: Record<string, string>): void {
    emulators.gke.clusters.get(GCP_PROJECT)!.find((c) => c.name === cluster)!.resourceLabels = labels;
  }
  function tagAks(cluster: string, tags: Record<string, string>): void {
    emulators.arm.clusters.get(AZURE_SUBSCRIPTION)!.find((c) => c.name === cluster)!.tags = tags;
  }

  /**
   * One sync with `features`, then every event it published handed to the Argo CD subscriber as its Lambda
   * target would be; returns the events' detail-types and the subscriber's outcomes.
   */
  async function syncAndDeliver(
    features: Record<string, string> = {},
    options: string[] = [],
  ): Promise<Array<[string, string]>> {
    writeFileSync(config, stringify({ ...document, features }));
    const run = await runCli(['sync', ...options, '--config', config], { env: emulators.env });
    assert.equal(run.code, 0, run.stderr);
    const delivered: Array<[string, string]> = [];
    for (const event of await drainQueue(queueUrl)) {
      const result = (await handler(event, lambdaContext('argocd'))) as { outcome: string };
      delivered.push([event['detail-type'], result.outcome]);
    }
    return delivered;
  }

  /** Runs Argo CD's cluster generator with an ApplicationSet whose cluster generators select by `selectors`. */
  function generate(...selectors: Array<Record<string, string>>): Promise<Doc[][]> {
    const applicationSet = {
      apiVersion: 'argoproj.io/v1alpha1',
      kind: 'ApplicationSet',
      metadata: { name: 'guestbook', namespace: argocd },
      spec: {
        goTemplate: true,
        generators: selectors.map((matchLabels) => ({ clusters: { selector: { matchLabels } } })),
        template: {
          metadata: { name: '{{.name}}-guestbook' },
          spec: {
            project: 'default',
            source: { repoURL: 'https://github.com/argoproj/argocd-example-apps', path: 'guestbook' },
            destination: { server: '{{.server}}', namespace: 'guestbook' },
          },
        },
      },
    };
    return new Promise((resolve, reject) => {
      const child = spawn(argo, ['clusters', '-kubeconfig', kubeconfig, '-namespace', argocd]);
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
      child.on('error', reject);
      child.on('close', (code) =>
        code === 0 ? resolve(JSON.parse(stdout) as Doc[][]) : reject(new Error(`exit ${code}: ${stderr}`)),
      );
      child.stdin.end(JSON.stringify(applicationSet));
    });
  }

  /** The clusters (`<provider>/<region>/<cloud name>`) of the profiles named by the generator's parameters. */
  async function clustersOf(params: Doc[]): Promise<string[]> {
    const profiles = ((await objects.listNamespacedCustomObject({ ...GROUP, namespace })) as { items: Doc[] })
      .items;
    return params
      .map((p) => {
        const profile = profiles.find((q) => q.metadata.name === p.name);
        assert.ok(profile, `a Secret of a profile the hub holds: ${p.name}`);
        assert.equal(p.server, profile.status.accessProviders[0].cluster.server);
        const labels = profile.metadata.labels as Record<string, string>;
        return `${labels['cpsync.io/provider']}/${labels['topology.kubernetes.io/region']}/${profile.spec.displayName}`;
      })
      .sort();
  }

  it('selects exactly the clusters tagged env=prod, in every cloud, again after tags change, and none once the feature is off', async () => {
    // Tagged in each cloud: a value that is no label value is never rewritten into one (batch is not selected).
    await tagEks('us-east-1', 'payments', { env: 'prod' });
    await tagEks('us-east-1', 'checkout', { env: 'staging' });
    await tagEks('eu-west-1', 'payments', { env: 'prod' });
    tagGke('analytics', { team: 'data', env: 'prod' });
    tagGke('edge', { team: 'data', env: 'dev' });
    tagAks('web', { team: 'web', env: 'prod' });
    tagAks('batch', { team: 'web', env: 'Production Line' });

    const created = await syncAndDeliver();
    assert.equal(created.length, emulators.clusters);
    assert.ok(created.every(([type, outcome]) => type === 'ClusterProfile Created' && outcome === 'created'));
    const [prod, europe] = await generate(
      { [ENV]: 'prod' },
      { 'topology.kubernetes.io/region': 'europe-west1', 'cpsync.io/cloud': 'gcp' },
    );
    assert.deepEqual(await clustersOf(prod!), [
      'aks/westeurope/web',
      'eks/eu-west-1/payments',
      'eks/us-east-1/payments',
      'gke/europe-west1/analytics',
    ]);
    for (const params of prod!) assert.equal(params.metadata.labels[ENV], 'prod');
    assert.deepEqual(await clustersOf(europe!), ['gke/europe-west1/analytics', 'gke/europe-west1/edge']);
    const batch = (
      (await objects.listNamespacedCustomObject({ ...GROUP, namespace })) as { items: Doc[] }
    ).items.find((p) => p.spec.displayName === 'batch')!;
    assert.equal(batch.metadata.labels[ENV], undefined);
    assert.ok(
      batch.status.properties.some((p: Doc) => p.name === 'cpsync.io/tag-labels-omitted' && p.value === '1'),
    );

    // Tags change in each cloud: one Updated event for each cluster whose label changed, and the Secret follows.
    await tagEks('us-east-1', 'payments', { env: 'staging' });
    await tagEks('us-east-1', 'checkout', { env: 'prod' });
    tagGke('analytics', { team: 'data' });
    tagAks('batch', { team: 'web', env: 'prod' });
    // No CloudTrail TagResource event reaches the command (the deployed stack's EKS rule takes it): at the defaults
    // an EKS cluster's DescribeCluster answer stands for up to an hour, so the command is told to ask afresh.
    const changed = await syncAndDeliver({}, ['--fresh']);
    assert.deepEqual(
      changed,
      Array.from({ length: 4 }, () => ['ClusterProfile Updated', 'updated']),
    );
    const [again] = await generate({ [ENV]: 'prod' });
    assert.deepEqual(await clustersOf(again!), [
      'aks/westeurope/batch',
      'aks/westeurope/web',
      'eks/eu-west-1/payments',
      'eks/us-east-1/checkout',
    ]);

    // Nothing changed: nothing announced, nothing written.
    assert.deepEqual(await syncAndDeliver(), []);

    // The feature turned off: its labels go from every profile and, through the subscriber, from every Secret.
    const off = await syncAndDeliver({ tagLabels: 'off' });
    assert.deepEqual(
      off,
      Array.from({ length: 6 }, () => ['ClusterProfile Updated', 'updated']),
    );
    const [none, europeStill] = await generate(
      { [ENV]: 'prod' },
      { 'topology.kubernetes.io/region': 'europe-west1' },
    );
    assert.deepEqual(none, []);
    assert.deepEqual(await clustersOf(europeStill!), ['gke/europe-west1/analytics', 'gke/europe-west1/edge']);
  });
});
