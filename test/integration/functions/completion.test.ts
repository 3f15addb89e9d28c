/**
 * The clouds' word that an operation ended, through the webhook as deployed beside its chases (moto's
 * DynamoDB and SQS): GKE's last audit entry of the operation and Azure's Activity Log alert end the
 * cluster's chase once the sync finds the cluster settled or gone, and the look still on its way then does
 * nothing (no cloud read, no next look); an end said while the cloud still has the cluster deletes nothing.
 * The clusters are held in change by the local clouds until the test settles them; what the chase table,
 * the follow-up queue, the hub and the bus hold is read back with clients of the test's own.
 */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CreateTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { CreateQueueCommand, SQSClient } from '@aws-sdk/client-sqs';
import { parse } from 'yaml';
import { KubernetesHub } from '../../../adapters/hub/KubernetesHub.ts';
import { ALL_PROVIDERS } from '../../../adapters/compose/providers/index.ts';
import { parseConfig } from '../../../adapters/compose/config.ts';
import { compose } from '../../../adapters/compose/compose.ts';
import type { ClusterProfile } from '../../../core/domain/model/clusterProfile.ts';
import type { LookMessage } from '../../../functions/chases.ts';
import type { FunctionDeps } from '../../../functions/runtime.ts';
import {
  aksCluster,
  AZURE_SUBSCRIPTION,
  GCP_PROJECT,
  gkeCluster,
  type Emulators,
} from '../../env/emulators.ts';
import {
  announcedTransition,
  holdTransition,
  operationEvents,
  type CloudEvent,
} from '../../env/transitions.ts';
import { HUB_CREDENTIALS, createClusterRecordsTable } from '../../support/aws.ts';
import { drainMessages, drainQueue } from '../../support/events.ts';
import { adminKubeConfig } from '../../support/hub.ts';
import { estateOnHub } from '../../support/estate.ts';
import {
  activityLogAlert,
  functionUrlRequest,
  gkeAuditEntry,
  lambdaContext,
  pubSubPush,
  sqsRecord,
  startGoogleSigner,
  type GoogleSigner,
} from '../../support/lambda.ts';

const AUDIENCE = 'https://cpsync-webhook.example.com/gcp';
const PUSHER = 'pubsub-push@acme-data.iam.gserviceaccount.com';
const CHASES = 'cpsync-chases';
const AZURE_KEY = 'event-grid-key-completion-0123';

describe('the clouds’ word that an operation ended ends the chase, and deletes nothing the cloud still has', () => {
  let emulators: Emulators;
  let deps: FunctionDeps;
  let hub: KubernetesHub;
  let namespace: string;
  let signer: GoogleSigner;
  let followQueue: string;
  let documents: DynamoDBDocumentClient;
  let webhook: (event: unknown, context: unknown) => Promise<{ statusCode?: number; body?: string }>;
  let followUp: (event: unknown, context: unknown) => Promise<{ batchItemFailures: unknown[] }>;
  const context = lambdaContext();

  const profiles = async (): Promise<ClusterProfile[]> =>
    hub.list(namespace, { 'x-k8s.io/cluster-manager': 'cpsync' });
  const profileOf = async (name: string) => (await profiles()).find((p) => p.spec.displayName === name);
  const chaseOf = async (name: string) =>
    (
      ((await documents.send(new ScanCommand({ TableName: CHASES }))).Items ?? []) as Array<{
        cluster: string;
      }>
    ).find((i) => i.cluster.endsWith(`/${name}`));
  /** Looks taken from the follow-up queue and not yet asked for (the queue is drained whole). */
  const taken: LookMessage[] = [];
  /** The looks of `name` in the follow-up queue, once SQS hands them over (after their delay). */
  const looksOf = async (name: string): Promise<LookMessage[]> => {
    for (let tries = 0; tries < 100; tries++) {
      taken.push(...(await drainMessages<LookMessage>(followQueue)));
      const looks = taken.filter((l) => l.ref.name === name);
      if (looks.length > 0) {
        taken.splice(0, taken.length, ...taken.filter((l) => l.ref.name !== name));
        return looks;
      }
      await new Promise((r) => setTimeout(r, 200));
    }
    throw new Error(`no look at ${name} came`);
  };
  const changes = async () =>
    (await drainQueue(emulators.queueUrl))
      .filter((e) => e['detail-type'] !== 'Inventory Scope Synced')
      .map((e) => `${e['detail-type']} ${(e.detail.cluster as { displayName: string }).displayName}`);

  /** What the cloud sent, delivered to the webhook as Pub/Sub, Event Grid and the action group deliver it. */
  const deliver = async (event: CloudEvent) => {
    const request =
      event.via === 'pubsub'
        ? functionUrlRequest('/gcp', event.push, { authorization: `Bearer ${await signer.sign()}` })
        : event.via === 'eventgrid'
          ? functionUrlRequest('/azure', event.events, {}, { key: AZURE_KEY })
          : event.via === 'alert'
            ? functionUrlRequest('/azure/alert', event.alert, {}, { key: AZURE_KEY })
            : undefined;
    assert.ok(request, `${event.via} is not delivered to the webhook`);
    const answer = await webhook(request, context);
    assert.equal(answer.statusCode, 200, answer.body);
    return JSON.parse(answer.body!) as { synced?: Record<string, string>; operationEnded?: boolean };
  };
  /** The `operation` of the audit entry a Pub/Sub push carries. */
  const operationOf = (event: CloudEvent) =>
    event.via === 'pubsub'
      ? (
          JSON.parse(Buffer.from(event.push.message.data, 'base64').toString('utf8')) as {
            operation?: { id: string };
          }
        ).operation
      : undefined;
  /** Holds `name` in `transition`; the cloud's events kept for the test to deliver when it chooses. */
  const transition = (provider: 'gke' | 'aks', name: string, kind: 'creating' | 'deleting') => {
    const sent: Record<'start' | 'end', CloudEvent[]> = { start: [], end: [] };
    const held = announcedTransition(
      emulators,
      provider,
      name,
      kind,
      (event, phase) => sent[phase].push(event),
      {
        resourceGroup: `rg-${name}`,
      },
    );
    return { held, sent };
  };

  before(async () => {
    process.env.POWERTOOLS_METRICS_DISABLED = 'true';
    process.env.POWERTOOLS_TRACE_ENABLED = 'false';
    process.env.POWERTOOLS_LOG_LEVEL = 'ERROR';
    const { state, ...estate } = await estateOnHub('completion');
    ({ namespace, emulators } = estate);
    Object.assign(process.env, {
      AWS_ACCESS_KEY_ID: HUB_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: HUB_CREDENTIALS.secretAccessKey,
      AWS_REGION: 'us-east-1',
      // The chases' own clients (SQS, DynamoDB) reach moto.
      AWS_ENDPOINT_URL: emulators.moto.endpoint,
      AWS_EC2_METADATA_DISABLED: 'true',
    });
    const aws = { endpoint: emulators.moto.endpoint, region: 'us-east-1', credentials: HUB_CREDENTIALS };
    const dynamo = new DynamoDBClient(aws);
    for (const [TableName, key] of [
      ['cpsync-outbox', 'eventId'],
      ['cpsync-idempotency', 'id'],
      [CHASES, 'cluster'],
    ] as const)
      await dynamo.send(
        new CreateTableCommand({
          TableName,
          BillingMode: 'PAY_PER_REQUEST',
          AttributeDefinitions: [{ AttributeName: key, AttributeType: 'S' }],
          KeySchema: [{ AttributeName: key, KeyType: 'HASH' }],
        }),
      );
    documents = DynamoDBDocumentClient.from(dynamo);
    followQueue = (await new SQSClient(aws).send(new CreateQueueCommand({ QueueName: 'cpsync-follow' })))
      .QueueUrl!;
    process.env.CPSYNC_FOLLOW_QUEUE_URL = followQueue;
    process.env.CPSYNC_CHASE_TABLE = CHASES;

    signer = await startGoogleSigner(AUDIENCE, PUSHER);
    const keyFile = join(emulators.directory, 'event-grid-key');
    writeFileSync(keyFile, AZURE_KEY);
    await createClusterRecordsTable(emulators.moto.endpoint, 'cpsync-absences');
    const document = parse(readFileSync(emulators.configPath, 'utf8')) as Record<string, unknown>;
    const config = parseConfig(
      {
        ...document,
        hub: { kubeconfig: state.kubeconfig },
        outbox: { table: 'cpsync-outbox', endpoint: emulators.moto.endpoint },
        absences: { table: 'cpsync-absences', endpoint: emulators.moto.endpoint },
        idempotency: { table: 'cpsync-idempotency', endpoint: emulators.moto.endpoint },
        webhook: {
          azure: { key: { file: keyFile } },
          gcp: { audience: AUDIENCE, serviceAccountEmail: PUSHER, jwksUri: signer.jwksUri },
        },
        // GKE's and AKS's backstop look after 1 s: the look is on its way when the operation's end is said.
        follow: { firstDelaySeconds: 1, maxDelaySeconds: 2, maxMinutes: 5 },
      },
      'completion test',
    );
    deps = await compose(config, ALL_PROVIDERS, { onDemand: true });
    hub = new KubernetesHub({ kubeConfig: adminKubeConfig(state) });
    const { makeWebhook } = await import('../../../functions/webhook.ts');
    const { makeFollowUp } = await import('../../../functions/followUp.ts');
    webhook = makeWebhook(async () => deps) as never;
    followUp = makeFollowUp(async () => deps) as never;
  });

  after(async () => {
    await deps?.close();
    await emulators?.stop();
    await signer?.stop();
  });

  /** The look handed to the follow-up function; what the clouds were asked meanwhile. */
  const staleLook = async (look: LookMessage) => {
    const reads = { gke: emulators.gke.requests.length, arm: emulators.arm.requests.length };
    const answer = await followUp(
      { Records: [sqsRecord(`look-${look.chaseId}`, JSON.stringify(look))] },
      context,
    );
    assert.deepEqual(answer.batchItemFailures, []);
    assert.deepEqual(
      { gke: emulators.gke.requests.length - reads.gke, arm: emulators.arm.requests.length - reads.arm },
      { gke: 0, arm: 0 },
      'the stale look read no cloud',
    );
    taken.push(...(await drainMessages<LookMessage>(followQueue)));
    assert.deepEqual(
      taken.filter((l) => l.ref.name === look.ref.name),
      [],
      'and sent no next look',
    );
    assert.equal(await chaseOf(look.ref.name), undefined, 'nor began a chase');
  };

  it('GKE: the operation’s last audit entry ends the chase its first began; the look on its way does nothing', async () => {
    emulators.gke.clusters.get(GCP_PROJECT)!.push(gkeCluster('rising', 'us-central1'));
    const { held, sent } = transition('gke', 'rising', 'creating');
    const first = operationOf(sent.start[0]!);
    assert.deepEqual(first, { id: first?.id, producer: 'container.googleapis.com', first: true });
    assert.deepEqual(sent.end, [], 'nothing said of its end yet');
    assert.deepEqual((await deliver(sent.start[0]!)).synced, {
      [`${GCP_PROJECT}/us-central1/rising`]: 'created',
    });
    assert.ok(await chaseOf('rising'), 'the creation is followed');
    held.settle();
    assert.equal(sent.end.length, 1, 'the last entry, sent as the operation ended');
    assert.deepEqual(operationOf(sent.end[0]!), {
      id: first?.id,
      producer: 'container.googleapis.com',
      last: true,
    });
    const ended = await deliver(sent.end[0]!);
    assert.deepEqual(ended, {
      synced: { [`${GCP_PROJECT}/us-central1/rising`]: 'updated' },
      operationEnded: true,
    });
    assert.equal(await chaseOf('rising'), undefined, 'the chase is over');
    const profile = await profileOf('rising');
    assert.equal(profile?.status?.conditions?.find((c) => c.type === 'ControlPlaneHealthy')?.status, 'True');
    const [look] = await looksOf('rising');
    await staleLook(look!);
    assert.deepEqual(await changes(), ['ClusterProfile Created rising', 'ClusterProfile Updated rising']);
  });

  it('AKS: the Activity Log alert of the operation’s end (Succeeded) ends the chase Event Grid’s event began', async () => {
    const cluster = aksCluster('climbing', 'rg-climbing');
    emulators.arm.clusters.get(AZURE_SUBSCRIPTION)!.push(cluster);
    const { held, sent } = transition('aks', 'climbing', 'creating');
    const key = `${AZURE_SUBSCRIPTION}/rg-climbing/climbing`;
    assert.deepEqual((await deliver(sent.start[0]!)).synced, { [key]: 'created' });
    assert.ok(await chaseOf('climbing'));
    held.settle();
    assert.deepEqual(await deliver(sent.end[0]!), { synced: { [key]: 'updated' }, operationEnded: true });
    assert.equal(await chaseOf('climbing'), undefined);
    const [look] = await looksOf('climbing');
    await staleLook(look!);
    assert.deepEqual(await changes(), ['ClusterProfile Created climbing', 'ClusterProfile Updated climbing']);
  });

  it('an operation’s end said while the cloud still has the cluster deletes nothing: the chase goes on until the cloud says gone', async () => {
    // Held DELETING; what each cloud says of the deletion's end is delivered ahead of the cloud's own answer.
    const held = [
      holdTransition(emulators, 'gke', 'rising', 'deleting'),
      holdTransition(emulators, 'aks', 'climbing', 'deleting'),
    ];
    const said = [
      operationEvents('gke', 'rising', 'deleting'),
      operationEvents('aks', 'climbing', 'deleting', { resourceGroup: 'rg-climbing' }),
    ];
    for (const events of said) await deliver(events.start[0]!);
    // The sync's reading decides, and it is no deletion.
    for (const events of said) {
      const answer = await deliver(events.end[0]!);
      assert.ok(answer.operationEnded);
      assert.ok(!Object.values(answer.synced ?? {}).includes('deleted'), JSON.stringify(answer));
    }
    // Still a whole Deleting cluster in the Activity Log's words, and a RUNNING one in GKE's: nothing deleted either.
    const running = pubSubPush(
      gkeAuditEntry(
        GCP_PROJECT,
        'google.container.v1.ClusterManager.DeleteCluster',
        `projects/${GCP_PROJECT}/locations/us-central1/clusters/edge-running`,
        { id: 'operation-early', last: true },
      ),
      'ps-early-last',
    );
    emulators.gke.clusters.get(GCP_PROJECT)!.push(gkeCluster('edge-running', 'us-central1'));
    assert.deepEqual((await deliver({ cloud: 'gke', via: 'pubsub', push: running })).synced, {
      [`${GCP_PROJECT}/us-central1/edge-running`]: 'created',
    });
    assert.ok(await profileOf('rising'));
    assert.ok(await profileOf('climbing'));
    assert.ok(await chaseOf('rising'), 'still followed');
    assert.ok(await chaseOf('climbing'), 'still followed');
    assert.deepEqual(
      (await changes()).filter((c) => c.startsWith('ClusterProfile Deleted')),
      [],
      'no Deleted event while the clouds have them',
    );
    // Gone now: the chase's look finds the cloud's "not found" and deletes, once.
    for (const hold of held) hold.settle();
    for (const name of ['rising', 'climbing']) {
      const looks = await looksOf(name);
      const answer = await followUp(
        { Records: looks.map((l, i) => sqsRecord(`gone-${name}-${i}`, JSON.stringify(l))) },
        context,
      );
      assert.deepEqual(answer.batchItemFailures, []);
      assert.equal(await profileOf(name), undefined);
    }
    assert.deepEqual((await changes()).filter((c) => c.startsWith('ClusterProfile Deleted')).sort(), [
      'ClusterProfile Deleted climbing',
      'ClusterProfile Deleted rising',
    ]);
  });

  it('a look message decides nothing but which look it is: written to look like the chase’s, it reads no cloud and sends nothing; a look goes on once', async () => {
    const name = 'swaying';
    emulators.gke.clusters.get(GCP_PROJECT)!.push(gkeCluster(name, 'us-central1'));
    const { held, sent } = transition('gke', name, 'creating');
    await deliver(sent.start[0]!);
    const [look] = await looksOf(name);
    assert.ok(look);
    const kept = await chaseOf(name);
    assert.ok(kept, 'the creation is followed');
    // The chase's id with other attempts, and figures that would keep it going past its bounds.
    const forged = fc.sample(
      fc.record({
        attempt: fc.integer({ min: 2, max: 10_000 }),
        startedAt: fc.integer({ min: 0, max: 9_000_000_000_000_000 }),
        delaySeconds: fc.integer({ min: 0, max: 900 }),
        since: fc.integer({ min: 0, max: 9_000_000_000_000_000 }),
      }),
      { numRuns: 12, seed: 4322 },
    );
    const reads = () => emulators.gke.requests.length;
    const before = reads();
    const answer = await followUp(
      {
        Records: forged.map((figures, i) =>
          sqsRecord(`forged-${i}`, JSON.stringify({ ...look, ...figures, state: 'GKE STOPPING' })),
        ),
      },
      context,
    );
    assert.deepEqual(answer.batchItemFailures, []);
    assert.equal(reads() - before, 0, 'no cloud read');
    assert.deepEqual(await chaseOf(name), kept, 'the chase as it was');
    // A copy of the look with other figures (its chase and attempt), then the look, delivered twice: one look at the
    // cloud's cluster, one next look, made from the chase's record.
    const copy = { ...look, startedAt: 9_000_000_000_000_000, delaySeconds: 900, state: 'GKE STOPPING' };
    for (const [i, message] of [copy, look, look].entries()) {
      const delivered = await followUp(
        { Records: [sqsRecord(`again-${i}`, JSON.stringify(message))] },
        context,
      );
      assert.deepEqual(delivered.batchItemFailures, []);
    }
    const next = await looksOf(name);
    assert.equal(next.length, 1, 'one next look');
    assert.deepEqual(
      { attempt: next[0]!.attempt, startedAt: next[0]!.startedAt, state: next[0]!.state },
      { attempt: look.attempt + 1, startedAt: look.startedAt, state: look.state },
    );
    // Settled: the next look ends the chase.
    held.settle();
    await followUp({ Records: [sqsRecord('settled', JSON.stringify(next[0]))] }, context);
    assert.equal(await chaseOf(name), undefined, 'the chase is over');
    await changes();
  });

  it('refuses an Activity Log alert without the key (401), and malformed ones (400) naming what is wrong; ignores other alerts', async () => {
    const id = `/subscriptions/${AZURE_SUBSCRIPTION}/resourceGroups/rg-web/providers/Microsoft.ContainerService/managedClusters/web`;
    const alert = activityLogAlert(
      id,
      'Microsoft.ContainerService/managedClusters/write',
      'Succeeded',
      'al-x',
    );
    const post = (body: unknown, query: Record<string, string> = { key: AZURE_KEY }) =>
      webhook(functionUrlRequest('/azure/alert', body as never, {}, query), context);
    assert.equal((await post(alert, {})).statusCode, 401);
    assert.equal((await post(alert, { key: 'wrong' })).statusCode, 401);
    const malformed = [
      ['{not json', /the body is not JSON/],
      [{ ...alert, schemaId: 'Microsoft.Insights/activityLogs' }, /schemaId/],
      [{ ...alert, data: { alertContext: alert.data.alertContext } }, /data\.essentials/],
      [
        { ...alert, data: { ...alert.data, essentials: { ...alert.data.essentials, alertTargetIDs: 'x' } } },
        /data\.essentials\.alertTargetIDs/,
      ],
    ] as const;
    for (const [body, reason] of malformed) {
      const answer = await post(body);
      assert.equal(answer.statusCode, 400, String(answer.body));
      assert.match(JSON.parse(answer.body!).message, reason);
    }
    const storage = activityLogAlert(
      id.replace('Microsoft.ContainerService/managedClusters/web', 'Microsoft.Storage/storageAccounts/logs'),
      'Microsoft.Storage/storageAccounts/write',
      'Succeeded',
      'al-y',
    );
    assert.deepEqual(JSON.parse((await post(storage)).body!), { ignored: 1 });
    const metric = {
      ...alert,
      data: { ...alert.data, essentials: { ...alert.data.essentials, monitoringService: 'Platform' } },
    };
    assert.deepEqual(JSON.parse((await post(metric)).body!), { ignored: 1 });
    assert.deepEqual(await changes(), []);
  });

  it('refuses a GKE last entry without a valid token (401), and one whose operation is malformed (400, naming it)', async () => {
    const entry = gkeAuditEntry(
      GCP_PROJECT,
      'google.container.v1.ClusterManager.CreateCluster',
      `projects/${GCP_PROJECT}/locations/us-central1/clusters/edge-running`,
      { id: 'operation-x', last: true },
    );
    assert.equal(
      (await webhook(functionUrlRequest('/gcp', pubSubPush(entry, 'ps-x')), context)).statusCode,
      401,
    );
    const forged = await signer.sign({ email: 'intruder@evil.example' });
    assert.equal(
      (
        await webhook(
          functionUrlRequest('/gcp', pubSubPush(entry, 'ps-y'), { authorization: `Bearer ${forged}` }),
          context,
        )
      ).statusCode,
      401,
    );
    const bad = { ...entry, operation: { id: 'operation-x', last: 'yes' } };
    const answer = await webhook(
      functionUrlRequest('/gcp', pubSubPush(bad, 'ps-z'), { authorization: `Bearer ${await signer.sign()}` }),
      context,
    );
    assert.equal(answer.statusCode, 400);
    assert.match(JSON.parse(answer.body!).message, /operation\.last/);
    assert.deepEqual(await changes(), []);
  });
});
