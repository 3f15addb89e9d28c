/**
 * Names no one can take, through the functions' entry points: a CloudTrail event (EKS, two scopes), an
 * Event Grid delivery to the webhook (AKS, one scope) and a follow-up look (GKE, one scope), each in both
 * orders, with the functions built as deployed (each cloud on first use) and a name scheme weak enough to
 * collide (test/support/weakNames.ts) injected where the composition's ports take it. The profile on the hub
 * keeps its name and is not written; the newcomer gets a name of its own and the function says so; when
 * either cluster is deleted, exactly its profile goes — never the other's.
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CreateTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { DeleteClusterCommand, EKSClient } from '@aws-sdk/client-eks';
import { CreateQueueCommand, SQSClient } from '@aws-sdk/client-sqs';
import { parse } from 'yaml';
import { compose } from '../../../adapters/compose/compose.ts';
import { parseConfig } from '../../../adapters/compose/config.ts';
import { ALL_PROVIDERS } from '../../../adapters/compose/providers/index.ts';
import { KubernetesHub } from '../../../adapters/hub/KubernetesHub.ts';
import type { ClusterProfile } from '../../../core/domain/model/clusterProfile.ts';
import { clusterKey } from '../../../core/sync/clusterKeys.ts';
import type { ClusterRef } from '../../../core/sync/ports.ts';
import { makeChases, type LookMessage } from '../../../functions/chases.ts';
import { makeEksEventHandler } from '../../../functions/eksEvents.ts';
import { makeFollowUp } from '../../../functions/followUp.ts';
import type { FunctionDeps } from '../../../functions/runtime.ts';
import { makeWebhook } from '../../../functions/webhook.ts';
import {
  aksCluster,
  AZURE_SUBSCRIPTION,
  EKS_ACCOUNT,
  GCP_PROJECT,
  gkeCluster,
  type Emulators,
} from '../../env/emulators.ts';
import type { HubState } from '../../env/hub.ts';
import { accountCredentials, createEksClusters, HUB_CREDENTIALS } from '../../support/aws.ts';
import { cloudSnapshot, estateOnHub } from '../../support/estate.ts';
import { drainQueue, type ReceivedEvent } from '../../support/events.ts';
import { adminKubeConfig } from '../../support/hub.ts';
import {
  cloudTrailEvent,
  eventGridEvent,
  functionUrlRequest,
  lambdaContext,
  sqsRecord,
} from '../../support/lambda.ts';
import { WEAK_NAMES, weakName } from '../../support/weakNames.ts';

const CHASES = 'cpsync-chases';
const context = lambdaContext();
const providerIdOf = (p: ClusterProfile) => p.metadata.annotations?.['cpsync.io/provider-id'];

describe('names no one can take, through the functions: a cloud event, the webhook, a follow-up look', () => {
  let emulators: Emulators;
  let state: HubState;
  let hub: KubernetesHub;
  let base: string;
  let document: Record<string, unknown>;
  let keyFile: string;
  let followQueue: string;
  let scenes = 0;
  let restoreClouds: () => void;
  const azureKey = 'event-grid-key-names';

  /** The functions' deps for an inventory namespace of the case's own, with the weak name scheme. */
  const scene = async () => {
    restoreClouds();
    const namespace = `${base}-${++scenes}`;
    const config = parseConfig(
      {
        ...document,
        inventory: { ...(document.inventory as Record<string, unknown>), namespace },
        hub: { kubeconfig: state.kubeconfig },
        outbox: { directory: join(emulators.directory, `outbox-${scenes}`) },
        webhook: { azure: { key: { file: keyFile } } },
        follow: {
          firstDelaySeconds: 1,
          maxDelaySeconds: 1,
          maxMinutes: 5,
          eks: { minDelaySeconds: 1, maxDelaySeconds: 1 },
        },
      },
      'names test',
    );
    const composed = await compose(config, ALL_PROVIDERS, { onDemand: true });
    const deps: FunctionDeps = { ...composed, ports: { ...composed.ports, naming: WEAK_NAMES } };
    await drainQueue(emulators.queueUrl);
    const profiles = () => hub.list(namespace, { 'x-k8s.io/cluster-manager': 'cpsync' });
    return {
      deps,
      getDeps: async () => deps,
      profiles,
      of: async (id: string) => {
        const found = (await profiles()).filter((p) => providerIdOf(p) === id);
        assert.ok(found.length <= 1, `at most one profile of ${id}`);
        return found[0];
      },
      changes: async (): Promise<ReceivedEvent[]> =>
        (await drainQueue(emulators.queueUrl)).filter((e) => e['detail-type'] !== 'Inventory Scope Synced'),
    };
  };
  const announced = (events: ReceivedEvent[]) =>
    events.map((e) => [e['detail-type'], (e.detail.cluster as { providerId: string }).providerId]);

  /** A chase of `ref` started in `state`, and its first look taken by the follow-up function as SQS delivers it. */
  const followUpLook = async (
    s: Awaited<ReturnType<typeof scene>>,
    ref: ClusterRef,
    state: string,
    messageId: string,
  ) => {
    const chases = makeChases(s.deps.config.follow, { queueUrl: followQueue, table: CHASES });
    const followUp = makeFollowUp(s.getDeps, () => chases);
    await chases.start(ref, state);
    const documents = DynamoDBDocumentClient.from(
      new DynamoDBClient({
        endpoint: emulators.moto.endpoint,
        region: 'us-east-1',
        credentials: HUB_CREDENTIALS,
      }),
    );
    const item = (
      await documents.send(new GetCommand({ TableName: CHASES, Key: { cluster: clusterKey(ref) } }))
    ).Item as { chaseId: string; startedAt: number };
    const message: LookMessage = {
      chaseId: item.chaseId,
      attempt: 1,
      ref,
      state,
      startedAt: item.startedAt,
      delaySeconds: 1,
    };
    const answer = await followUp(
      { Records: [sqsRecord(messageId, JSON.stringify(message))] } as never,
      context,
    );
    assert.deepEqual(answer, { batchItemFailures: [] });
  };

  before(async () => {
    Object.assign(process.env, {
      AWS_ACCESS_KEY_ID: HUB_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: HUB_CREDENTIALS.secretAccessKey,
      AWS_REGION: 'us-east-1',
      AWS_EC2_METADATA_DISABLED: 'true',
      POWERTOOLS_METRICS_DISABLED: 'true',
      POWERTOOLS_TRACE_ENABLED: 'false',
      POWERTOOLS_LOG_LEVEL: 'ERROR',
    });
    const estate = await estateOnHub('fn-names');
    ({ emulators, state } = estate);
    base = estate.namespace;
    hub = new KubernetesHub({ kubeConfig: adminKubeConfig(state) });
    restoreClouds = cloudSnapshot(emulators);
    document = parse(readFileSync(emulators.configPath, 'utf8')) as Record<string, unknown>;
    keyFile = join(emulators.directory, 'event-grid-key');
    writeFileSync(keyFile, azureKey);
    const aws = { endpoint: emulators.moto.endpoint, region: 'us-east-1', credentials: HUB_CREDENTIALS };
    await new DynamoDBClient(aws).send(
      new CreateTableCommand({
        TableName: CHASES,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [{ AttributeName: 'cluster', AttributeType: 'S' }],
        KeySchema: [{ AttributeName: 'cluster', KeyType: 'HASH' }],
      }),
    );
    followQueue = (await new SQSClient(aws).send(new CreateQueueCommand({ QueueName: 'cpsync-follow' })))
      .QueueUrl!;
    // The chases' own clients reach moto as the functions reach AWS: from the environment.
    process.env.AWS_ENDPOINT_URL_DYNAMODB = emulators.moto.endpoint;
    process.env.AWS_ENDPOINT_URL_SQS = emulators.moto.endpoint;
  });

  after(async () => emulators?.stop());

  for (const order of ['us-east-1 first', 'eu-west-1 first'] as const)
    it(`keeps the name of the profile a CloudTrail event made first, ${order}, and deletes only the cluster that is gone`, async () => {
      const s = await scene();
      const handler = makeEksEventHandler(s.getDeps);
      const regions = order === 'us-east-1 first' ? ['us-east-1', 'eu-west-1'] : ['eu-west-1', 'us-east-1'];
      const [first, second] = regions.map((r) => `arn:aws:eks:${r}:${EKS_ACCOUNT}:cluster/payments`);
      const created = await handler(
        cloudTrailEvent('CreateCluster', EKS_ACCOUNT, regions[0]!, { name: 'payments' }) as never,
        context,
      );
      assert.equal(created.result, 'created');
      const incumbent = (await s.of(first!))!;
      assert.equal(incumbent.metadata.name, weakName('eks', 'payments'));
      await s.changes();

      const newcomer = await handler(
        cloudTrailEvent('UpdateClusterConfig', EKS_ACCOUNT, regions[1]!, { name: 'payments' }) as never,
        context,
      );
      assert.equal(newcomer.result, 'created');
      assert.match(
        ((newcomer as { problems?: string[] }).problems ?? []).join('\n'),
        new RegExp(`name collision: .*is the profile of ${first!.replace(/[/.]/g, '\\$&')}`),
      );
      const kept = (await s.of(first!))!;
      assert.equal(kept.metadata.resourceVersion, incumbent.metadata.resourceVersion, 'not written');
      const own = (await s.of(second!))!;
      assert.notEqual(own.metadata.name, incumbent.metadata.name);
      assert.deepEqual(announced(await s.changes()), [['ClusterProfile Created', second]]);

      // The eu-west-1 cluster (the newcomer, or the incumbent) deleted in the cloud: its DeleteCluster event
      // deletes its profile alone, and the other is not written.
      const west = `arn:aws:eks:eu-west-1:${EKS_ACCOUNT}:cluster/payments`;
      const east = `arn:aws:eks:us-east-1:${EKS_ACCOUNT}:cluster/payments`;
      const eastBefore = (await s.of(east))!.metadata.resourceVersion;
      const eks = new EKSClient({
        endpoint: emulators.moto.endpoint,
        region: 'eu-west-1',
        credentials: await accountCredentials(emulators.moto.endpoint, EKS_ACCOUNT),
      });
      await eks.send(new DeleteClusterCommand({ name: 'payments' }));
      eks.destroy();
      const gone = await handler(
        cloudTrailEvent('DeleteCluster', EKS_ACCOUNT, 'eu-west-1', { name: 'payments' }) as never,
        context,
      );
      assert.equal(gone.result, 'deleted');
      assert.equal(await s.of(west), undefined);
      assert.equal((await s.of(east))!.metadata.resourceVersion, eastBefore);
      assert.deepEqual(announced(await s.changes()), [['ClusterProfile Deleted', west]]);
      // Back as the estate made it, for the cases after this one.
      await createEksClusters(emulators.moto.endpoint, EKS_ACCOUNT, 'eu-west-1', [{ name: 'payments' }]);
    });

  // EKS cluster names are case-sensitive: `orders` and `Orders` are two clusters of one account and region.
  for (const [gone, entry] of [
    ['Orders', 'its DeleteCluster event'],
    ['orders', 'its DeleteCluster event'],
    ['Orders', 'a follow-up look'],
    ['orders', 'a follow-up look'],
  ] as const)
    it(`deletes only ${gone}'s profile when ${gone} is deleted beside a cluster named alike but for case, through ${entry}`, async () => {
      const s = await scene();
      const handler = makeEksEventHandler(s.getDeps);
      const region = 'us-east-1';
      const arn = (name: string) => `arn:aws:eks:${region}:${EKS_ACCOUNT}:cluster/${name}`;
      const kept = gone === 'Orders' ? 'orders' : 'Orders';
      await createEksClusters(emulators.moto.endpoint, EKS_ACCOUNT, region, [
        { name: 'orders' },
        { name: 'Orders' },
      ]);
      try {
        for (const name of ['orders', 'Orders']) {
          const made = await handler(
            cloudTrailEvent('CreateCluster', EKS_ACCOUNT, region, { name }) as never,
            context,
          );
          assert.equal(made.result, 'created', name);
        }
        const before = (await s.of(arn(kept)))!;
        assert.ok(await s.of(arn(gone)), `${gone} has a profile`);
        await s.changes();

        const eks = new EKSClient({
          endpoint: emulators.moto.endpoint,
          region,
          credentials: await accountCredentials(emulators.moto.endpoint, EKS_ACCOUNT),
        });
        await eks.send(new DeleteClusterCommand({ name: gone }));
        eks.destroy();
        if (entry === 'its DeleteCluster event') {
          const answer = await handler(
            cloudTrailEvent('DeleteCluster', EKS_ACCOUNT, region, { name: gone }) as never,
            context,
          );
          assert.equal(answer.result, 'deleted');
        } else {
          const ref: ClusterRef = { scope: { provider: 'eks', account: EKS_ACCOUNT, region }, name: gone };
          await followUpLook(s, ref, 'EKS DELETING', `look-${gone}-${scenes}`);
          await drainQueue(followQueue);
        }
        assert.equal(await s.of(arn(gone)), undefined, `${gone}'s profile is gone`);
        assert.equal(
          (await s.of(arn(kept)))?.metadata.resourceVersion,
          before.metadata.resourceVersion,
          `${kept}'s profile is there, not written`,
        );
        assert.deepEqual(announced(await s.changes()), [['ClusterProfile Deleted', arn(gone)]]);
      } finally {
        // Back as the estate made it, for the cases after this one: neither there.
        const eks = new EKSClient({
          endpoint: emulators.moto.endpoint,
          region,
          credentials: await accountCredentials(emulators.moto.endpoint, EKS_ACCOUNT),
        });
        for (const name of ['orders', 'Orders'])
          await eks.send(new DeleteClusterCommand({ name })).catch(() => undefined);
        eks.destroy();
      }
    });

  for (const order of ['the incumbent listed first', 'the newcomer listed first'] as const)
    it(`keeps the incumbent's name when an Event Grid delivery names a newcomer of the same subscription, ${order}`, async () => {
      const s = await scene();
      const webhook = makeWebhook(s.getDeps);
      const id = (group: string) =>
        `/subscriptions/${AZURE_SUBSCRIPTION}/resourcegroups/${group}/providers/Microsoft.ContainerService/managedClusters/web`;
      const deliver = async (group: string, eventId: string, type = 'ResourceWriteSuccess') => {
        const response = await webhook(
          functionUrlRequest(
            '/azure',
            [eventGridEvent(`Microsoft.Resources.${type}`, id(group), eventId)],
            {},
            { key: azureKey },
          ),
          context,
        );
        assert.equal(response.statusCode, 200, String(response.body));
        return JSON.parse(response.body as string) as { synced: Record<string, string> };
      };
      assert.deepEqual(Object.values((await deliver('rg-web', `eg-a-${scenes}`)).synced), ['created']);
      const incumbent = (await s.of(id('rg-web')))!;
      assert.equal(incumbent.metadata.name, weakName('aks', 'web'));
      await s.changes();

      const clusters = [aksCluster('web', 'rg-web'), aksCluster('web', 'rg-twin')];
      emulators.arm.clusters.set(
        AZURE_SUBSCRIPTION,
        order === 'the newcomer listed first' ? clusters.reverse() : clusters,
      );
      assert.deepEqual(Object.values((await deliver('rg-twin', `eg-b-${scenes}`)).synced), ['created']);
      assert.equal(
        (await s.of(id('rg-web')))!.metadata.resourceVersion,
        incumbent.metadata.resourceVersion,
        'not written',
      );
      assert.notEqual((await s.of(id('rg-twin')))!.metadata.name, incumbent.metadata.name);
      assert.deepEqual(announced(await s.changes()), [['ClusterProfile Created', id('rg-twin')]]);

      // The incumbent's cluster deleted: its delivery deletes its profile alone, the newcomer's stays.
      emulators.arm.clusters.set(AZURE_SUBSCRIPTION, [aksCluster('web', 'rg-twin')]);
      assert.deepEqual(
        Object.values((await deliver('rg-web', `eg-c-${scenes}`, 'ResourceDeleteSuccess')).synced),
        ['deleted'],
      );
      assert.equal(await s.of(id('rg-web')), undefined);
      assert.ok(await s.of(id('rg-twin')));
      assert.deepEqual(announced(await s.changes()), [['ClusterProfile Deleted', id('rg-web')]]);
    });

  for (const order of ['the incumbent listed first', 'the newcomer listed first'] as const)
    it(`keeps the incumbent's name when a follow-up look finds a newcomer of the same project ready, ${order}`, async () => {
      const s = await scene();
      const selfLink = (location: string) =>
        `https://container.googleapis.com/v1/projects/${GCP_PROJECT}/locations/${location}/clusters/analytics`;
      // The incumbent, from a first look at it.
      const look = (location: string, messageId: string) =>
        followUpLook(
          s,
          { scope: { provider: 'gke', account: GCP_PROJECT, region: '*' }, name: 'analytics', location },
          'GKE PROVISIONING',
          messageId,
        );
      const incumbentCluster = gkeCluster('analytics', 'europe-west1');
      emulators.gke.clusters.set(GCP_PROJECT, [incumbentCluster]);
      await look('europe-west1', `look-a-${scenes}`);
      const incumbent = (await s.of(selfLink('europe-west1')))!;
      assert.equal(incumbent.metadata.name, weakName('gke', 'analytics'));
      await s.changes();

      const twin = gkeCluster('analytics', 'us-central1');
      emulators.gke.clusters.set(
        GCP_PROJECT,
        order === 'the newcomer listed first' ? [twin, incumbentCluster] : [incumbentCluster, twin],
      );
      await look('us-central1', `look-b-${scenes}`);
      assert.equal(
        (await s.of(selfLink('europe-west1')))!.metadata.resourceVersion,
        incumbent.metadata.resourceVersion,
        'not written',
      );
      assert.notEqual((await s.of(selfLink('us-central1')))!.metadata.name, incumbent.metadata.name);
      assert.deepEqual(announced(await s.changes()), [['ClusterProfile Created', selfLink('us-central1')]]);
      await drainQueue(followQueue);
    });
});
