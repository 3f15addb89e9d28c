import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CreateTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { DeleteClusterCommand, EKSClient } from '@aws-sdk/client-eks';
import { CreateQueueCommand, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { SQSEvent } from 'aws-lambda';
import fc from 'fast-check';
import { CoreV1Api } from '@kubernetes/client-node';
import { parse } from 'yaml';
import { KubernetesHub } from '../../../adapters/hub/KubernetesHub.ts';
import { ALL_PROVIDERS } from '../../../adapters/compose/providers/index.ts';
import { parseConfig } from '../../../adapters/compose/config.ts';
import type { ClusterProfile } from '../../../core/domain/model/clusterProfile.ts';
import { makeEksEventHandler } from '../../../functions/eksEvents.ts';
import type { FunctionDeps } from '../../../functions/runtime.ts';
import { compose } from '../../../adapters/compose/compose.ts';
import { makeScopeEnumerator } from '../../../functions/scopeEnumerator.ts';
import { makeScopeWorker } from '../../../functions/scopeWorker.ts';
import { makeWebhook, SYNC_RESERVE_MILLIS } from '../../../functions/webhook.ts';
import { DetailValidator } from '../../../events/validate.ts';
import { describedClusters, restJsonError } from '../../env/awsProxy.ts';
import {
  aksCluster,
  AZURE_SUBSCRIPTION,
  EKS_ACCOUNT,
  GCP_PROJECT,
  gkeCluster,
  type Emulators,
} from '../../env/emulators.ts';
import {
  accountCredentials,
  createClusterRecordsTable,
  createEksClusters,
  HUB_CREDENTIALS,
} from '../../support/aws.ts';
import { clusterReadsSince } from '../../env/fakes/armServer.ts';
import { letCpsyncGrantInProject } from '../../env/fakes/gkeServer.ts';
import { drainQueue, type ReceivedEvent } from '../../support/events.ts';
import { adminKubeConfig, profileOfAnother } from '../../support/hub.ts';
import {
  activityLogAlert,
  cloudTrailEvent,
  eventGridEvent,
  functionUrlRequest,
  gkeAuditEntry,
  lambdaContext,
  pubSubPush,
  sqsRecord,
  startGoogleSigner,
  type GoogleSigner,
} from '../../support/lambda.ts';
import { estateOnHub, estateScopeRecords } from '../../support/estate.ts';

const AUDIENCE = 'https://cpsync-webhook.example.com/gcp';
const PUSHER = 'pubsub-push@acme-data.iam.gserviceaccount.com';
const validator = new DetailValidator();

describe('Lambda handlers against the real hub, moto and the local cloud servers', () => {
  let emulators: Emulators;
  let deps: FunctionDeps;
  let hub: KubernetesHub;
  let core: CoreV1Api;
  let namespace: string;
  let scopeQueueUrl: string;
  let signer: GoogleSigner;
  let signToken: (claims: Record<string, unknown>, audience?: string) => Promise<string>;
  const azureKey = 'event-grid-key-0123456789';
  const getDeps = async () => deps;
  const context = lambdaContext();

  const profiles = async (): Promise<ClusterProfile[]> =>
    hub.list(namespace, { 'x-k8s.io/cluster-manager': 'cpsync' });
  const idempotencyRecords = async () => {
    const documents = DynamoDBDocumentClient.from(
      new DynamoDBClient({
        endpoint: emulators.moto.endpoint,
        region: 'us-east-1',
        credentials: HUB_CREDENTIALS,
      }),
    );
    const { Items = [] } = await documents.send(new ScanCommand({ TableName: 'cpsync-idempotency' }));
    return Items as Array<{ id?: string; status?: string; expiration?: number }>;
  };
  const versions = async () =>
    Object.fromEntries((await profiles()).map((p) => [p.metadata.name, p.metadata.resourceVersion]));
  const changeEvents = async (): Promise<ReceivedEvent[]> => {
    const events = (await drainQueue(emulators.queueUrl)).filter(
      (e) => e['detail-type'] !== 'Inventory Scope Synced',
    );
    for (const e of events) assert.deepEqual(validator.errors(e['detail-type'], e.detail), []);
    return events;
  };

  before(async () => {
    process.env.AWS_ACCESS_KEY_ID = HUB_CREDENTIALS.accessKeyId;
    process.env.AWS_SECRET_ACCESS_KEY = HUB_CREDENTIALS.secretAccessKey;
    process.env.AWS_REGION = 'us-east-1';
    process.env.POWERTOOLS_METRICS_DISABLED = 'true';
    process.env.POWERTOOLS_TRACE_ENABLED = 'false';
    process.env.POWERTOOLS_LOG_LEVEL = 'WARN';
    const { state, ...estate } = await estateOnHub('fn');
    ({ namespace, emulators } = estate);
    const aws = { endpoint: emulators.moto.endpoint, region: 'us-east-1', credentials: HUB_CREDENTIALS };
    // The outbox table (key eventId) and the idempotency table (key id), as the stack creates them.
    for (const [TableName, key] of [
      ['cpsync-outbox', 'eventId'],
      ['cpsync-idempotency', 'id'],
    ] as const)
      await new DynamoDBClient(aws).send(
        new CreateTableCommand({
          TableName,
          BillingMode: 'PAY_PER_REQUEST',
          AttributeDefinitions: [{ AttributeName: key, AttributeType: 'S' }],
          KeySchema: [{ AttributeName: key, KeyType: 'HASH' }],
        }),
      );
    scopeQueueUrl = (await new SQSClient(aws).send(new CreateQueueCommand({ QueueName: 'cpsync-scopes' })))
      .QueueUrl!;

    signer = await startGoogleSigner(AUDIENCE, PUSHER);
    signToken = (claims, audience) => signer.sign(claims, audience);

    const keyFile = join(emulators.directory, 'event-grid-key');
    writeFileSync(keyFile, azureKey);
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
      },
      'functions test',
    );
    // As the functions build them (functions/runtime.ts lazyDeps): each cloud on its first use.
    deps = await compose(config, ALL_PROVIDERS, { onDemand: true });
    hub = new KubernetesHub({ kubeConfig: adminKubeConfig(state) });
    core = adminKubeConfig(state).makeApiClient(CoreV1Api);
  });

  after(async () => {
    await emulators?.stop();
    await signer?.stop();
  });

  it("gives each cloud's own way of granting consumers as the functions build them, with that cloud's credentials", async () => {
    // GKE's project role: written through the on-demand GKE provider, as the project's IAM policy then holds it.
    letCpsyncGrantInProject(emulators.gke, GCP_PROJECT);
    const identity = 'deployer@consumers.iam.gserviceaccount.com';
    const roles = await deps.providers.gke!.projectRoles!();
    assert.equal(
      (await roles.settle(GCP_PROJECT, async () => new Map([['deployer', new Set([identity])]]))).length,
      1,
    );
    const held = () =>
      (emulators.gke.iamPolicies.get(GCP_PROJECT)?.bindings ?? []).filter(
        (b) => b.role === 'roles/container.clusterViewer',
      );
    assert.deepEqual(
      held().map((b) => b.members),
      [[`serviceAccount:${identity}`]],
    );
    await roles.settle(GCP_PROJECT, async () => new Map());
    assert.deepEqual(held(), []);
    // EKS's access entries and AKS's role assignments are given the same way.
    assert.equal(typeof (await deps.providers.eks!.accessEntries!()).ensure, 'function');
    assert.equal(typeof (await deps.providers.aks!.roleAssignments!()).assign, 'function');
  });

  it('enumerates the scopes and sends one SQS message per scope', async () => {
    const result = await makeScopeEnumerator(getDeps, {
      queueUrl: scopeQueueUrl,
      sqs: new SQSClient({ endpoint: emulators.moto.endpoint, region: 'us-east-1' }),
    })({ executionId: 'exec-1' }, context);
    assert.deepEqual(result, { syncId: 'exec-1', scopes: 4, orphans: 0 });
  });

  it('syncs each scope from its message, reports malformed messages as batch item failures, and shrugs off redelivery', async () => {
    const sqs = new SQSClient({ endpoint: emulators.moto.endpoint, region: 'us-east-1' });
    const received = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: scopeQueueUrl, MaxNumberOfMessages: 10 }),
    );
    const records = (received.Messages ?? []).map((m) => ({
      ...sqsRecord(m.MessageId!, m.Body!),
      receiptHandle: m.ReceiptHandle!,
    }));
    assert.equal(records.length, 4);
    const malformed = {
      ...records[0]!,
      messageId: 'broken-1',
      body: JSON.stringify({ scope: { provider: 'oci' } }),
    };
    const event: SQSEvent = { Records: [...records, malformed] };
    const worker = makeScopeWorker(getDeps);
    const first = await worker(event, context);
    assert.deepEqual(first, { batchItemFailures: [{ itemIdentifier: 'broken-1' }] });
    assert.equal((await profiles()).length, emulators.clusters);
    assert.equal((await changeEvents()).length, emulators.clusters);

    const before = await versions();
    const cloudCalls =
      emulators.proxy.calls.length + emulators.gke.requests.length + emulators.arm.requests.length;
    const again = await worker({ Records: records }, context);
    assert.deepEqual(again, { batchItemFailures: [] });
    assert.deepEqual(await versions(), before);
    assert.deepEqual(await changeEvents(), []);
    // Answered from the idempotency records: no cloud was asked again.
    assert.equal(
      emulators.proxy.calls.length + emulators.gke.requests.length + emulators.arm.requests.length,
      cloudCalls,
    );
    const recordsKept = await idempotencyRecords();
    assert.equal(recordsKept.filter((r) => r.id!.startsWith('cpsync.scope#')).length, 4);
    assert.ok(recordsKept.every((r) => r.status === 'COMPLETED' && Number(r.expiration) > Date.now() / 1000));
  });

  it('builds each cloud on first use: a cloud whose credentials cannot be read fails its own scope only, and deletes nothing', async () => {
    const config = {
      ...deps.config,
      providers: {
        ...deps.config.providers,
        gke: {
          ...deps.config.providers.gke!,
          credentials: { file: join(emulators.directory, 'missing.json') },
        },
      },
    };
    // Built at once (the CLI), the bad setting stops everything, named.
    await assert.rejects(
      compose(config, ALL_PROVIDERS),
      /providers\.gke\.credentials \(file .*missing\.json\)/,
    );
    const onDemand = await compose(config, ALL_PROVIDERS, { onDemand: true });
    const before = await versions();
    const records = estateScopeRecords('on-demand-1', 'on-demand');
    await drainQueue(emulators.queueUrl);
    const result = await makeScopeWorker(async () => onDemand)({ Records: records }, context);
    // The project is listed in the configuration, so it is covered without GKE: its listing is what fails, as a
    // cloud's refusal would, the scope's outcome and not a retry.
    assert.deepEqual(result, { batchItemFailures: [] }, "a failed listing is the scope's outcome");
    const synced = (await drainQueue(emulators.queueUrl))
      .filter((e) => e['detail-type'] === 'Inventory Scope Synced')
      .map(
        (e) =>
          e.detail as unknown as {
            scope: { provider: string };
            outcome: string;
            error?: { message: string };
          },
      );
    assert.deepEqual(
      synced.map((d) => [d.scope.provider, d.outcome]).sort(),
      [
        ['aks', 'complete'],
        ['eks', 'complete'],
        ['eks', 'complete'],
        ['gke', 'failed'],
      ],
      'the GKE scope alone fails',
    );
    assert.match(
      synced.find((d) => d.scope.provider === 'gke')!.error!.message,
      /^providers\.gke\.credentials \(file .*missing\.json\): no such file$/,
      'naming the setting',
    );
    assert.deepEqual(await versions(), before, 'no profile written or deleted, the GKE ones included');
    assert.equal((await profiles()).length, emulators.clusters);
    await onDemand.close();
  });

  it('fails every entry point on a proxy variable that is no proxy URL, naming it without its password; nothing written or acknowledged', async () => {
    const saved = process.env.HTTPS_PROXY;
    process.env.HTTPS_PROXY = 'http://cpsync:s3cret@proxy corp:8080';
    // As lazyDeps builds them: on an invocation, and again on the next one after a failure.
    const lazy = () => compose(deps.config, ALL_PROVIDERS, { onDemand: true });
    const refused = (error: Error) =>
      error.message === 'environment variable HTTPS_PROXY is not a proxy URL: "http://***@proxy corp:8080"';
    const before = await versions();
    try {
      await assert.rejects(
        makeScopeEnumerator(lazy, { queueUrl: scopeQueueUrl })(
          { executionId: 'bad-proxy' } as never,
          context,
        ),
        refused,
      );
      // The whole batch fails: SQS delivers every message again, none is taken as done.
      await assert.rejects(
        makeScopeWorker(lazy)({ Records: estateScopeRecords('bad-proxy', 'bad-proxy') }, context),
        refused,
      );
      await assert.rejects(
        makeEksEventHandler(lazy)(
          cloudTrailEvent('CreateCluster', EKS_ACCOUNT, 'us-east-1', { name: 'fresh' }) as never,
          context,
        ),
        refused,
      );
      // The webhook answers 500: Event Grid and Pub/Sub deliver again.
      const response = await makeWebhook(lazy)(
        functionUrlRequest('/azure', [], {}, { key: azureKey }),
        context,
      );
      assert.equal(response.statusCode, 500);
      assert.doesNotMatch(JSON.stringify(response), /s3cret/);
    } finally {
      if (saved === undefined) delete process.env.HTTPS_PROXY;
      else process.env.HTTPS_PROXY = saved;
    }
    assert.deepEqual(await versions(), before, 'no profile written or deleted');
  });

  it('reports and announces the profiles of a provider dropped from the configuration, and deletes none of them', async () => {
    const { aks: _dropped, ...others } = deps.config.providers;
    const narrowed = await compose({ ...deps.config, providers: others }, ALL_PROVIDERS);
    const sqs = new SQSClient({ endpoint: emulators.moto.endpoint, region: 'us-east-1' });
    const queueUrl = (await sqs.send(new CreateQueueCommand({ QueueName: 'cpsync-scopes-narrowed' })))
      .QueueUrl!;
    const before = await versions();
    const result = await makeScopeEnumerator(async () => narrowed, { queueUrl, sqs })(
      { executionId: 'exec-orphans' },
      context,
    );
    assert.deepEqual(result, { syncId: 'exec-orphans', scopes: 3, orphans: 2 });
    assert.deepEqual(await versions(), before, 'nothing is written, nothing deleted');
    const announced = (await drainQueue(emulators.queueUrl)).filter(
      (e) => e['detail-type'] === 'Inventory Scope Orphaned',
    );
    assert.equal(announced.length, 1);
    assert.deepEqual(validator.errors(announced[0]!['detail-type'], announced[0]!.detail), []);
    assert.equal((announced[0]!.detail as { profiles?: number }).profiles, 2);
  });

  it('takes the ClusterSet labels off a namespace taken out of inventory.clusterSets, from the scope enumerator', async () => {
    const sqs = new SQSClient({ endpoint: emulators.moto.endpoint, region: 'us-east-1' });
    const queueUrl = (await sqs.send(new CreateQueueCommand({ QueueName: 'cpsync-scopes-sets' }))).QueueUrl!;
    // A namespace a rule routes GKE's clusters to (the inventory's own is labelled at every sync's start).
    const routed = `${namespace}-gke`;
    const labels = async () => {
      const all = (await core.readNamespace({ name: routed })).metadata?.labels ?? {};
      return [all['multicluster.x-k8s.io/clusterset'], all['clusterset.multicluster.x-k8s.io']];
    };
    const enumerate = async (clusterSets: Record<string, string>, executionId: string) => {
      const inventory = {
        ...deps.config.inventory,
        namespaceRules: [{ provider: 'gke' as const, namespace: routed }],
        clusterSets,
      };
      const composed = await compose({ ...deps.config, inventory }, ALL_PROVIDERS);
      await makeScopeEnumerator(async () => composed, { queueUrl, sqs })({ executionId }, context);
      await drainQueue(emulators.queueUrl);
    };
    await enumerate({ [routed]: 'prod' }, 'exec-sets-1');
    assert.deepEqual(await labels(), ['prod', 'prod']);
    await enumerate({}, 'exec-sets-2');
    assert.deepEqual(await labels(), [undefined, undefined]);
  });

  it('refuses scope messages the configuration does not cover (failed items, nothing synced), and takes any spelling of one it does', async () => {
    const message = (messageId: string, scope: Record<string, string>) =>
      sqsRecord(messageId, JSON.stringify({ syncId: 'exec-uncovered', scope }));
    const before = await versions();
    const result = await makeScopeWorker(getDeps)(
      {
        Records: [
          message('other-account', { provider: 'eks', account: '123456789012', region: 'us-east-1' }),
          message('other-region', { provider: 'eks', account: EKS_ACCOUNT, region: 'ap-south-1' }),
          message('other-project', { provider: 'gke', account: 'other-project', region: '*' }),
          message('a-zone', { provider: 'gke', account: GCP_PROJECT, region: 'europe-west1-c' }),
          message('upper-case', { provider: 'aks', account: AZURE_SUBSCRIPTION.toUpperCase(), region: '*' }),
        ],
      },
      context,
    );
    assert.deepEqual(
      result.batchItemFailures.map((f) => f.itemIdentifier).sort(),
      ['a-zone', 'other-account', 'other-region', 'other-project'].sort(),
    );
    assert.deepEqual(await versions(), before, 'nothing written');
    assert.deepEqual(await changeEvents(), [], 'the covered scope, spelled otherwise, is the same scope');
  });

  it('syncs the one cluster a CloudTrail CreateCluster event names', async () => {
    await createEksClusters(emulators.moto.endpoint, EKS_ACCOUNT, 'us-east-1', [
      { name: 'fresh', tags: { team: 'new' } },
    ]);
    const handler = makeEksEventHandler(getDeps);
    const result = await handler(
      cloudTrailEvent('CreateCluster', EKS_ACCOUNT, 'us-east-1', { name: 'fresh', version: '1.31' }) as never,
      context,
    );
    assert.equal(result.result, 'created');
    const events = await changeEvents();
    assert.deepEqual(
      events.map((e) => [e['detail-type'], (e.detail.cluster as { displayName: string }).displayName]),
      [['ClusterProfile Created', 'fresh']],
    );
  });

  it('never writes over the profile of another cluster at the name a CloudTrail event’s cluster is made for, nor moves the cluster to another name, and says so; nor does a scope message of its account', async () => {
    await createEksClusters(emulators.moto.endpoint, EKS_ACCOUNT, 'us-east-1', [{ name: 'twin' }]);
    const handler = makeEksEventHandler(getDeps);
    const created = cloudTrailEvent('CreateCluster', EKS_ACCOUNT, 'us-east-1', { name: 'twin' });
    assert.equal((await handler(created as never, context)).result, 'created');
    await changeEvents();
    // Someone deletes the cluster's profile and puts one of another cluster under its name.
    const twin = (await profiles()).find((p) => p.spec.displayName === 'twin')!;
    const victimId = 'arn:aws:eks:us-east-1:999999999999:cluster/twin';
    await hub.delete({ namespace: twin.metadata.namespace, name: twin.metadata.name });
    await hub.applyObject(profileOfAnother(twin, '999999999999', victimId));
    const before = (await hub.get(twin.metadata))!.metadata.resourceVersion;
    const again = await handler({ ...created, id: `${created.id}-again` } as never, context);
    // The listed cluster is written under no other name: the function says why, and writes nothing.
    assert.equal(again.result, 'unchanged');
    assert.match(
      ((again as { problems?: string[] }).problems ?? []).join('\n'),
      new RegExp(
        `name collision: .*${twin.metadata.name} is the profile of ${victimId}, which that name was not made for: .*is not written under another name`,
      ),
    );
    const after = (await hub.get(twin.metadata))!;
    assert.equal(after.metadata.resourceVersion, before, 'the profile under its name is not written');
    assert.equal(after.metadata.annotations?.['cpsync.io/provider-id'], victimId);
    assert.deepEqual(
      (await profiles()).filter((p) => p.spec.displayName === 'twin').map((p) => p.metadata.name),
      [twin.metadata.name],
      'no profile of the cluster under another name',
    );
    assert.deepEqual(await changeEvents(), [], 'no event');
    // A scope message of the cluster's account and region: the same, and the other clusters there as they were.
    const scoped = await makeScopeWorker(getDeps)(
      {
        Records: [
          sqsRecord(
            'squatted-scope',
            JSON.stringify({
              syncId: 'squatted-scope',
              scope: { provider: 'eks', account: EKS_ACCOUNT, region: 'us-east-1' },
            }),
          ),
        ],
      },
      context,
    );
    assert.deepEqual(scoped, { batchItemFailures: [] }, 'a name collision is no failure of the message');
    assert.equal((await hub.get(twin.metadata))!.metadata.resourceVersion, before, 'still not written');
    assert.deepEqual(
      (await profiles()).filter((p) => p.spec.displayName === 'twin').map((p) => p.metadata.name),
      [twin.metadata.name],
      'no profile of the cluster under another name from the scope message either',
    );
    assert.deepEqual(
      (await changeEvents()).filter((e) => JSON.stringify(e.detail).includes('twin')),
      [],
      'no event of the cluster',
    );
    // The name free again: the next event writes the cluster under it.
    await hub.delete({ namespace: twin.metadata.namespace, name: twin.metadata.name });
    const back = await handler({ ...created, id: `${created.id}-back` } as never, context);
    assert.equal(back.result, 'created');
    const own = (await hub.get(twin.metadata))!;
    assert.equal(
      own.metadata.annotations?.['cpsync.io/provider-id'],
      twin.metadata.annotations?.['cpsync.io/provider-id'],
    );
    assert.deepEqual(
      (await changeEvents()).map((e) => [e['detail-type'], e.detail.name]),
      [['ClusterProfile Created', twin.metadata.name]],
    );
    // Gone again, for the cases after this one.
    await hub.delete({ namespace: twin.metadata.namespace, name: twin.metadata.name });
    const eks = new EKSClient({
      endpoint: emulators.moto.endpoint,
      region: 'us-east-1',
      credentials: await accountCredentials(emulators.moto.endpoint, EKS_ACCOUNT),
    });
    await eks.send(new DeleteClusterCommand({ name: 'twin' }));
  });

  it('applies an UpdateClusterVersion event, once even when delivered twice', async () => {
    const remove = emulators.proxy.rewrite((call, status, body) => {
      if (status !== 200 || call.path !== '/clusters/payments' || call.region !== 'us-east-1')
        return undefined;
      const answer = JSON.parse(body);
      answer.cluster.version = '1.32';
      return JSON.stringify(answer);
    });
    const handler = makeEksEventHandler(getDeps);
    const event = cloudTrailEvent('UpdateClusterVersion', EKS_ACCOUNT, 'us-east-1', {
      name: 'payments',
      version: '1.32',
    });
    assert.deepEqual(await handler(event as never, context), { result: 'updated', published: 1, pending: 0 });
    const before = await versions();
    const calls = emulators.proxy.calls.length;
    // The redelivery is answered from the idempotency record: the first result, no EKS call.
    assert.deepEqual(await handler(event as never, context), {
      result: 'updated',
      published: 1,
      pending: 0,
      duplicate: true,
    });
    assert.equal(emulators.proxy.calls.length, calls);
    // Without the record (a new event id for the same change) the sync itself finds nothing to do.
    assert.equal(
      (await handler({ ...event, id: `${event.id}-other` } as never, context)).result,
      'unchanged',
    );
    remove();
    assert.deepEqual(await versions(), before);
    const events = await changeEvents();
    assert.equal(events.length, 1);
    assert.deepEqual(events[0]!.detail.changedFields, ['status.version.kubernetes']);
  });

  it('deletes at once when DeleteCluster is confirmed by DescribeCluster answering not found', async () => {
    const member = new EKSClient({
      endpoint: emulators.moto.endpoint,
      region: 'us-east-1',
      credentials: await memberCredentials(emulators.moto.endpoint),
    });
    await member.send(new DeleteClusterCommand({ name: 'fresh' }));
    member.destroy();
    const result = await makeEksEventHandler(getDeps)(
      cloudTrailEvent('DeleteCluster', EKS_ACCOUNT, 'us-east-1', { name: 'fresh' }) as never,
      context,
    );
    assert.equal(result.result, 'deleted');
    assert.ok(!(await profiles()).some((p) => p.spec.displayName === 'fresh'));
    assert.deepEqual(
      (await changeEvents()).map((e) => e['detail-type']),
      ['ClusterProfile Deleted'],
    );
  });

  it('ignores events for accounts outside the configuration and calls that failed, and refuses malformed ones', async () => {
    const handler = makeEksEventHandler(getDeps);
    const before = await versions();
    assert.equal(
      (
        await handler(
          cloudTrailEvent('CreateCluster', '999988887777', 'us-east-1', { name: 'foreign' }) as never,
          context,
        )
      ).result,
      'ignored',
    );
    const failedCall = cloudTrailEvent('CreateCluster', EKS_ACCOUNT, 'us-east-1', { name: 'nope' });
    (failedCall.detail as Record<string, unknown>).errorCode = 'InvalidParameterException';
    assert.equal((await handler(failedCall as never, context)).result, 'ignored');
    await assert.rejects(
      handler(
        {
          'detail-type': 'AWS API Call via CloudTrail',
          detail: { eventSource: 'eks.amazonaws.com' },
        } as never,
        context,
      ),
    );
    assert.deepEqual(await versions(), before);
  });

  it('answers the Event Grid subscription validation handshake', async () => {
    const webhook = makeWebhook(getDeps);
    const response = await webhook(
      functionUrlRequest(
        '/azure',
        [
          {
            id: 'v1',
            eventType: 'Microsoft.EventGrid.SubscriptionValidationEvent',
            subject: '',
            data: { validationCode: '512d38b6-c7b8-40c8-89fe-f46f9e9622b6' },
            eventTime: '2026-01-01T00:00:00Z',
            dataVersion: '2',
          },
        ],
        {},
        { key: azureKey },
      ),
      context,
    );
    assert.equal(response.statusCode, 200);
    assert.deepEqual(JSON.parse(response.body as string), {
      validationResponse: '512d38b6-c7b8-40c8-89fe-f46f9e9622b6',
    });
  });

  it('reads the Event Grid key again after a read that failed: no failure is kept for the life of a container', async () => {
    const keyFile = join(emulators.directory, 'late-event-grid-key');
    const late: FunctionDeps = {
      ...deps,
      config: { ...deps.config, webhook: { ...deps.config.webhook, azure: { key: { file: keyFile } } } },
    };
    const webhook = makeWebhook(async () => late);
    const handshake = () =>
      webhook(
        functionUrlRequest(
          '/azure',
          [
            {
              id: 'v-late',
              eventType: 'Microsoft.EventGrid.SubscriptionValidationEvent',
              subject: '',
              data: { validationCode: 'late-code' },
              eventTime: '2026-01-01T00:00:00Z',
              dataVersion: '2',
            },
          ],
          {},
          { key: 'late-key-value' },
        ),
        context,
      );
    assert.equal((await handshake()).statusCode, 500, 'the key cannot be read yet');
    writeFileSync(keyFile, 'late-key-value');
    const answered = await handshake();
    assert.equal(answered.statusCode, 200, String(answered.body));
    assert.deepEqual(JSON.parse(answered.body as string), { validationResponse: 'late-code' });
  });

  it('refuses Event Grid deliveries without the key (401) and malformed ones (400)', async () => {
    const webhook = makeWebhook(getDeps);
    assert.equal(
      (
        await webhook(
          functionUrlRequest('/azure', [{ id: 'x', eventType: 'Microsoft.Resources.ResourceWriteSuccess' }]),
          context,
        )
      ).statusCode,
      401,
    );
    assert.equal(
      (await webhook(functionUrlRequest('/azure', [], {}, { key: 'wrong' }), context)).statusCode,
      401,
    );
    assert.equal(
      (await webhook(functionUrlRequest('/azure', '{not json', {}, { key: azureKey }), context)).statusCode,
      400,
    );
    assert.equal(
      (await webhook(functionUrlRequest('/azure', { not: 'an array' }, {}, { key: azureKey }), context))
        .statusCode,
      400,
    );
  });

  it('syncs an AKS cluster on ResourceWriteSuccess and deletes it on ResourceDeleteSuccess, ignoring other resources', async () => {
    const webhook = makeWebhook(getDeps);
    const id = `/subscriptions/${AZURE_SUBSCRIPTION}/resourceGroups/rg-web/providers/Microsoft.ContainerService/managedClusters/web`;
    emulators.arm.clusters.set(AZURE_SUBSCRIPTION, [
      aksCluster('web', 'rg-web', { currentKubernetesVersion: '1.31.2' }),
      aksCluster('batch', 'rg-batch'),
    ]);
    const write = eventGridEvent;
    const storage = `/subscriptions/${AZURE_SUBSCRIPTION}/resourceGroups/rg-web/providers/Microsoft.Storage/storageAccounts/logs`;
    const response = await webhook(
      functionUrlRequest(
        '/azure',
        [
          write('Microsoft.Resources.ResourceWriteSuccess', id, 'eg-1'),
          write('Microsoft.Resources.ResourceWriteSuccess', storage, 'eg-2'),
        ],
        {},
        { key: azureKey },
      ),
      context,
    );
    assert.equal(response.statusCode, 200);
    assert.deepEqual(JSON.parse(response.body as string), {
      synced: { [`${AZURE_SUBSCRIPTION}/rg-web/web`]: 'updated' },
      ignored: 1,
    });
    assert.deepEqual(
      (await changeEvents()).map((e) => e.detail.changedFields),
      [['status.version.kubernetes']],
    );
    // The same cluster named in another case (Azure ids are not case-sensitive) is the same profile.
    const shouted = await webhook(
      functionUrlRequest(
        '/azure',
        [
          write(
            'Microsoft.Resources.ResourceWriteSuccess',
            id.replace(AZURE_SUBSCRIPTION, AZURE_SUBSCRIPTION.toUpperCase()),
            'eg-1b',
          ),
        ],
        {},
        { key: azureKey },
      ),
      context,
    );
    assert.deepEqual(Object.values(JSON.parse(shouted.body as string).synced), ['unchanged']);
    assert.deepEqual(await changeEvents(), []);

    emulators.arm.clusters.set(AZURE_SUBSCRIPTION, [aksCluster('batch', 'rg-batch')]);
    const deleted = await webhook(
      functionUrlRequest('/azure', [write('Microsoft.Resources.ResourceDeleteSuccess', id, 'eg-3')], {
        'x-cpsync-key': azureKey,
      }),
      context,
    );
    assert.deepEqual(JSON.parse(deleted.body as string).synced, {
      [`${AZURE_SUBSCRIPTION}/rg-web/web`]: 'deleted',
    });
    assert.ok(!(await profiles()).some((p) => p.spec.displayName === 'web'));
    assert.deepEqual(
      (await changeEvents()).map((e) => e['detail-type']),
      ['ClusterProfile Deleted'],
    );
  });

  it("answers 503 naming the clusters of an Event Grid delivery its function's time did not allow, and syncs them when the delivery comes again", async () => {
    const webhook = makeWebhook(getDeps);
    const names = ['tide-a', 'tide-b', 'tide-c'];
    const idOf = (name: string) =>
      `/subscriptions/${AZURE_SUBSCRIPTION}/resourceGroups/rg-${name}/providers/Microsoft.ContainerService/managedClusters/${name}`;
    const before = emulators.arm.clusters.get(AZURE_SUBSCRIPTION) ?? [];
    emulators.arm.clusters.set(AZURE_SUBSCRIPTION, [
      ...before,
      ...names.map((name) => aksCluster(name, `rg-${name}`)),
    ]);
    const delivery = functionUrlRequest(
      '/azure',
      names.map((name, i) =>
        eventGridEvent('Microsoft.Resources.ResourceWriteSuccess', idOf(name), `eg-tide-${i}`),
      ),
      {},
      { key: azureKey },
    );
    const keyOf = (name: string) => `${AZURE_SUBSCRIPTION}/rg-${name}/${name}`;
    // The function's time runs short once the first cluster has been read from ARM: told by ARM's own requests, not a clock.
    const from = emulators.arm.requests.length;
    const firstRead = () =>
      emulators.arm.requests
        .slice(from)
        .some((r) => r.path.toLowerCase().endsWith('/managedclusters/tide-a'));
    const short = {
      ...context,
      getRemainingTimeInMillis: () => (firstRead() ? SYNC_RESERVE_MILLIS - 1 : 60_000),
    };
    const first = await webhook(delivery, short);
    assert.equal(first.statusCode, 503, first.body as string);
    assert.match(
      JSON.parse(first.body as string).message,
      new RegExp(
        `before 2 cluster\\(s\\) of this delivery were synced \\(${keyOf('tide-b')}, ${keyOf('tide-c')}\\)`,
      ),
    );
    const displayNameOf = (e: ReceivedEvent) => (e.detail.cluster as { displayName: string }).displayName;
    const displayNames = async () =>
      (await profiles())
        .map((p) => p.spec.displayName ?? '')
        .filter((n) => names.includes(n))
        .sort();
    assert.deepEqual(await displayNames(), ['tide-a']);
    assert.deepEqual(
      (await changeEvents()).map((e) => [e['detail-type'], displayNameOf(e)]),
      [['ClusterProfile Created', 'tide-a']],
    );

    // Delivered again with time enough: the first cluster answered from its record, the others synced.
    const again = await webhook(delivery, context);
    assert.equal(again.statusCode, 200, again.body as string);
    assert.deepEqual(JSON.parse(again.body as string), {
      synced: { [keyOf('tide-a')]: 'created', [keyOf('tide-b')]: 'created', [keyOf('tide-c')]: 'created' },
      ignored: 0,
      duplicates: [keyOf('tide-a')],
    });
    assert.deepEqual(await displayNames(), names);
    assert.deepEqual((await changeEvents()).map(displayNameOf).sort(), ['tide-b', 'tide-c']);
    emulators.arm.clusters.set(AZURE_SUBSCRIPTION, before);
  });

  const auditEntry = (methodName: string, resourceName: string) =>
    gkeAuditEntry(GCP_PROJECT, methodName, resourceName);
  const push = pubSubPush;
  /** A new GKE cluster in the local project, and the signed Pub/Sub push that announces its creation. */
  const createdClusterPush = async (name: string, messageId: string) => {
    emulators.gke.clusters.set(GCP_PROJECT, [
      ...emulators.gke.clusters.get(GCP_PROJECT)!,
      gkeCluster(name, 'us-central1'),
    ]);
    const body = push(
      auditEntry(
        'google.container.v1.ClusterManager.CreateCluster',
        `projects/${GCP_PROJECT}/locations/us-central1/clusters/${name}`,
      ),
      messageId,
    );
    return functionUrlRequest('/gcp', body, { authorization: `Bearer ${await signToken({})}` });
  };

  it('syncs a GKE cluster from a Pub/Sub push with a Google-signed token, once even when replayed', async () => {
    const webhook = makeWebhook(getDeps);
    const request = await createdClusterPush('ml', 'ps-1');
    const first = await webhook(request, context);
    assert.equal(first.statusCode, 200, first.body as string);
    assert.deepEqual(JSON.parse(first.body as string).synced, {
      [`${GCP_PROJECT}/us-central1/ml`]: 'created',
    });
    const before = await versions();
    const requests = emulators.gke.requests.length;
    const replay = await webhook(request, context);
    assert.deepEqual(JSON.parse(replay.body as string), {
      synced: { [`${GCP_PROJECT}/us-central1/ml`]: 'created' },
      duplicates: [`${GCP_PROJECT}/us-central1/ml`],
    });
    assert.equal(emulators.gke.requests.length, requests);
    assert.deepEqual(await versions(), before);
    assert.deepEqual(
      (await changeEvents()).map((e) => e['detail-type']),
      ['ClusterProfile Created'],
    );
  });

  it("a Pub/Sub push of a GKE cluster whose name another cluster's profile holds writes it under no other name", async () => {
    const webhook = makeWebhook(getDeps);
    const first = await webhook(await createdClusterPush('squatted', 'ps-squat-1'), context);
    assert.equal(first.statusCode, 200, first.body as string);
    await changeEvents();
    // Someone deletes the cluster's profile and puts one of another cluster under its name.
    const own = (await profiles()).find((p) => p.spec.displayName === 'squatted')!;
    try {
      const victimId =
        'https://container.googleapis.com/v1/projects/victim-project/locations/us-central1/clusters/x';
      await hub.delete({ namespace: own.metadata.namespace, name: own.metadata.name });
      await hub.applyObject(profileOfAnother(own, 'victim-project', victimId));
      const before = (await hub.get(own.metadata))!.metadata.resourceVersion;
      const pushed = push(
        auditEntry(
          'google.container.v1.ClusterManager.UpdateCluster',
          `projects/${GCP_PROJECT}/locations/us-central1/clusters/squatted`,
        ),
        'ps-squat-3',
      );
      const answer = await webhook(
        functionUrlRequest('/gcp', pushed, { authorization: `Bearer ${await signToken({})}` }),
        context,
      );
      assert.equal(answer.statusCode, 200, answer.body as string);
      assert.deepEqual(JSON.parse(answer.body as string).synced, {
        [`${GCP_PROJECT}/us-central1/squatted`]: 'unchanged',
      });
      assert.equal(
        (await hub.get(own.metadata))!.metadata.resourceVersion,
        before,
        'the profile under its name is not written',
      );
      assert.ok(
        !(await profiles()).some(
          (p) =>
            p.metadata.annotations?.['cpsync.io/provider-id'] ===
            own.metadata.annotations?.['cpsync.io/provider-id'],
        ),
        'no profile of the cluster under another name',
      );
      assert.deepEqual(
        (await changeEvents()).filter((e) => JSON.stringify(e.detail).includes('"squatted"')),
        [],
        'no event of the cluster',
      );
    } finally {
      // As it was, for the cases after this one, whatever happened.
      const left = (await profiles()).find((p) => p.spec.displayName === 'squatted');
      if (left) await hub.delete({ namespace: left.metadata.namespace, name: left.metadata.name });
      emulators.gke.clusters.set(
        GCP_PROJECT,
        emulators.gke.clusters.get(GCP_PROJECT)!.filter((c) => c.name !== 'squatted'),
      );
      await changeEvents();
    }
  });

  it('syncs the cluster a push names when another push used its message id for another cluster', async () => {
    const webhook = makeWebhook(getDeps);
    const first = await webhook(await createdClusterPush('reused-a', 'ps-reused'), context);
    assert.deepEqual(JSON.parse(first.body as string).synced, {
      [`${GCP_PROJECT}/us-central1/reused-a`]: 'created',
    });
    const other = await webhook(await createdClusterPush('reused-b', 'ps-reused'), context);
    assert.deepEqual(JSON.parse(other.body as string), {
      synced: { [`${GCP_PROJECT}/us-central1/reused-b`]: 'created' },
    });
    assert.ok(
      (await profiles()).some((p) => p.spec.displayName === 'reused-b'),
      'its profile written',
    );
    assert.deepEqual(
      (await changeEvents()).map((e) => e['detail-type']),
      ['ClusterProfile Created', 'ClusterProfile Created'],
    );
  });

  it('answers 429 to a duplicate push that arrives while the first is still being applied', async () => {
    const webhook = makeWebhook(getDeps);
    const request = await createdClusterPush('batch', 'ps-concurrent');
    const answers = await Promise.all([webhook(request, context), webhook(request, context)]);
    assert.deepEqual(answers.map((a) => a.statusCode).sort(), [200, 429], JSON.stringify(answers));
    const retried = await webhook(request, context);
    assert.equal(retried.statusCode, 200);
    assert.deepEqual(JSON.parse(retried.body as string).duplicates, [`${GCP_PROJECT}/us-central1/batch`]);
    assert.deepEqual(
      (await changeEvents()).map((e) => e['detail-type']),
      ['ClusterProfile Created'],
    );
  });

  it('answers 503 (deliver again) when it cannot tell whether the configuration covers the project, and syncs once it can', async () => {
    // Projects found by search: a search that fails leaves coverage undecided — not a "no".
    const gke = deps.config.providers.gke!;
    const searching = await compose(
      { ...deps.config, providers: { gke: { ...gke, projects: { search: { query: '' } } }, off: [] } },
      ALL_PROVIDERS,
    );
    const projects = [...emulators.gke.projects];
    const clusters = [...emulators.gke.clusters.get(GCP_PROJECT)!];
    try {
      emulators.gke.projects.splice(0, emulators.gke.projects.length, { projectId: GCP_PROJECT, state: 1 });
      emulators.gke.searchFailures.push(
        ...Array.from({ length: 20 }, () => ({
          status: 403,
          code: 'PERMISSION_DENIED',
          message: 'search denied',
        })),
      );
      const webhook = makeWebhook(async () => searching);
      const request = await createdClusterPush('searched', 'ps-undecided');
      const undecided = await webhook(request, context);
      assert.equal(undecided.statusCode, 503, undecided.body as string);
      assert.match(
        JSON.parse(undecided.body as string).message,
        /cannot tell whether the configuration covers it/,
      );
      assert.deepEqual(await changeEvents(), [], 'nothing synced, nothing announced');
      emulators.gke.searchFailures.splice(0);
      const redelivered = await webhook(request, context);
      assert.equal(redelivered.statusCode, 200, redelivered.body as string);
      assert.deepEqual(JSON.parse(redelivered.body as string).synced, {
        [`${GCP_PROJECT}/us-central1/searched`]: 'created',
      });
      assert.deepEqual(
        (await changeEvents()).map((e) => e['detail-type']),
        ['ClusterProfile Created'],
      );
    } finally {
      // Left as the other tests found it: the projects, the clusters, and no profile of this one.
      emulators.gke.searchFailures.splice(0);
      emulators.gke.projects.splice(0, emulators.gke.projects.length, ...projects);
      emulators.gke.clusters.set(GCP_PROJECT, clusters);
      for (const profile of await profiles())
        if (profile.spec.displayName === 'searched')
          await hub.delete({ namespace: profile.metadata.namespace, name: profile.metadata.name });
      await searching.close();
    }
  });

  it('refuses Pub/Sub pushes without a valid token for the audience and service account', async () => {
    const webhook = makeWebhook(getDeps);
    const body = push(
      auditEntry(
        'google.container.v1.ClusterManager.DeleteCluster',
        `projects/${GCP_PROJECT}/locations/us-central1/clusters/ml`,
      ),
      'ps-2',
    );
    assert.equal((await webhook(functionUrlRequest('/gcp', body), context)).statusCode, 401);
    assert.equal(
      (
        await webhook(
          functionUrlRequest('/gcp', body, {
            authorization: `Bearer ${await signToken({}, 'https://elsewhere')}`,
          }),
          context,
        )
      ).statusCode,
      401,
    );
    assert.equal(
      (
        await webhook(
          functionUrlRequest('/gcp', body, {
            authorization: `Bearer ${await signToken({ email: 'intruder@evil.example' })}`,
          }),
          context,
        )
      ).statusCode,
      401,
    );
    assert.equal(
      (await webhook(functionUrlRequest('/gcp', body, { authorization: 'Bearer not.a.jwt' }), context))
        .statusCode,
      401,
    );
    // Expired, without an expiry, from another issuer, with the email not verified (or not said to be).
    const hourAgo = Math.floor(Date.now() / 1000) - 3600;
    for (const claims of [
      { exp: hourAgo, iat: hourAgo - 300 },
      { exp: undefined },
      { iss: 'https://issuer.evil.example' },
      { email_verified: false },
      { email_verified: undefined },
      { email_verified: 'true' },
    ])
      assert.equal(
        (
          await webhook(
            functionUrlRequest('/gcp', body, { authorization: `Bearer ${await signToken(claims)}` }),
            context,
          )
        ).statusCode,
        401,
        JSON.stringify(claims),
      );
    // Signed by another key under the same key id.
    const other = await startGoogleSigner(AUDIENCE, PUSHER);
    const forged = await other.sign();
    await other.stop();
    assert.equal(
      (await webhook(functionUrlRequest('/gcp', body, { authorization: `Bearer ${forged}` }), context))
        .statusCode,
      401,
    );
    assert.ok(
      (await profiles()).some((p) => p.spec.displayName === 'ml'),
      'nothing was deleted',
    );
  });

  it('answers 400 to a malformed push, ignores unrelated audit entries, deletes nothing on a web server’s 404 page repeating the cluster’s path, and deletes on a confirmed DeleteCluster', async () => {
    const webhook = makeWebhook(getDeps);
    const auth = { authorization: `Bearer ${await signToken({})}` };
    assert.equal(
      (
        await webhook(
          functionUrlRequest('/gcp', { message: { data: 'bm90IGpzb24=', messageId: 'ps-3' } }, auth),
          context,
        )
      ).statusCode,
      400,
    );
    assert.equal(
      (await webhook(functionUrlRequest('/gcp', { nothing: true }, auth), context)).statusCode,
      400,
    );
    const unrelated = push(
      {
        protoPayload: {
          serviceName: 'storage.googleapis.com',
          methodName: 'storage.buckets.create',
          resourceName: 'projects/_/buckets/b',
        },
      },
      'ps-4',
    );
    assert.deepEqual(
      JSON.parse((await webhook(functionUrlRequest('/gcp', unrelated, auth), context)).body as string),
      { ignored: 1 },
    );

    // A web server in front of GKE answers the cluster's read with its 404 page, repeating the path: no deletion.
    const path = `/v1/projects/${GCP_PROJECT}/locations/us-central1/clusters/ml`;
    const page = { status: 404, code: 'NOT_FOUND', message: '', raw: `<pre>Cannot GET ${path}</pre>` };
    emulators.gke.failures.set(
      GCP_PROJECT,
      Array.from({ length: 20 }, () => ({ ...page })),
    );
    const before = await versions();
    try {
      const proxied = push(
        auditEntry(
          'google.container.v1.ClusterManager.DeleteCluster',
          `projects/${GCP_PROJECT}/locations/us-central1/clusters/ml`,
        ),
        'ps-5-page',
      );
      const answer = await webhook(functionUrlRequest('/gcp', proxied, auth), context);
      assert.notEqual(answer.statusCode, 200, `delivered again: ${answer.body as string}`);
      assert.ok(
        emulators.gke.requests.some((r) => r.path.includes('/clusters/ml')),
        'the cluster was asked for',
      );
    } finally {
      emulators.gke.failures.delete(GCP_PROJECT);
    }
    assert.deepEqual(await versions(), before, 'nothing deleted or written');
    assert.deepEqual(await changeEvents(), [], 'no Deleted announced');

    emulators.gke.clusters.set(
      GCP_PROJECT,
      emulators.gke.clusters.get(GCP_PROJECT)!.filter((c) => c.name !== 'ml'),
    );
    const gone = push(
      auditEntry(
        'google.container.v1.ClusterManager.DeleteCluster',
        `projects/${GCP_PROJECT}/locations/us-central1/clusters/ml`,
      ),
      'ps-5',
    );
    const response = await webhook(functionUrlRequest('/gcp', gone, auth), context);
    assert.deepEqual(JSON.parse(response.body as string).synced, {
      [`${GCP_PROJECT}/us-central1/ml`]: 'deleted',
    });
    assert.deepEqual(
      (await changeEvents()).map((e) => e['detail-type']),
      ['ClusterProfile Deleted'],
    );
  });

  it('answers 200 generated webhook deliveries with 200 or 400, never an error or a crash', async () => {
    const webhook = makeWebhook(getDeps);
    const token = await signToken({});
    const before = await versions();
    const clusterEvent = fc.record({
      id: fc.string({ minLength: 1, maxLength: 20 }),
      eventType: fc.constantFrom(
        'Microsoft.Resources.ResourceWriteSuccess',
        'Microsoft.Resources.ResourceDeleteSuccess',
        'Microsoft.Resources.ResourceActionSuccess',
        'x',
      ),
      subject: fc
        .tuple(fc.string({ maxLength: 40 }), fc.string({ maxLength: 70 }))
        .map(
          ([group, name]) =>
            `/subscriptions/${AZURE_SUBSCRIPTION}/resourceGroups/${group}/providers/Microsoft.ContainerService/managedClusters/${name}`,
        ),
      data: fc.anything(),
    });
    const auditPush = fc
      .tuple(
        fc.string({ maxLength: 30 }),
        fc.string({ maxLength: 30 }),
        fc.string({ maxLength: 50 }),
        // A long-running operation's first or last entry, or a malformed operation record.
        fc.option(
          fc.oneof(
            fc.record({ id: fc.string({ minLength: 1 }), first: fc.boolean(), last: fc.boolean() }),
            fc.anything(),
          ),
          { nil: undefined },
        ),
      )
      .map(([method, location, name, operation]) =>
        push(
          {
            ...(operation === undefined ? {} : { operation }),
            protoPayload: {
              serviceName: 'container.googleapis.com',
              methodName: `google.container.v1.ClusterManager.${method}`,
              resourceName: `projects/${GCP_PROJECT}/locations/${location}/clusters/${name}`,
            },
          },
          'gen',
        ),
      );
    // Activity Log alerts (common alert schema) of AKS operations, their fields generated or replaced by anything.
    const alert = fc
      .record({
        group: fc.string({ maxLength: 40 }),
        name: fc.string({ maxLength: 70 }),
        operation: fc.constantFrom(
          'Microsoft.ContainerService/managedClusters/write',
          'Microsoft.ContainerService/managedClusters/delete',
          'Microsoft.ContainerService/managedClusters/agentPools/write',
          'Microsoft.Storage/storageAccounts/write',
        ),
        status: fc.constantFrom('Started', 'Accepted', 'Succeeded', 'Failed', 'Canceled', ''),
        id: fc.string({ minLength: 1, maxLength: 20 }),
        replace: fc.option(
          fc.tuple(
            fc.constantFrom('schemaId', 'data', 'essentials', 'alertContext', 'alertTargetIDs'),
            fc.anything(),
          ),
          { nil: undefined },
        ),
      })
      .map(({ group, name, operation, status, id, replace }) => {
        const body = activityLogAlert(
          `/subscriptions/${AZURE_SUBSCRIPTION}/resourceGroups/${group}/providers/Microsoft.ContainerService/managedClusters/${name}`,
          operation,
          status as 'Succeeded',
          id,
        ) as unknown as Record<string, Record<string, Record<string, unknown>>>;
        if (!replace) return body;
        const [field, value] = replace;
        if (field === 'schemaId' || field === 'data') return { ...body, [field]: value };
        if (field === 'alertTargetIDs') body.data!.essentials![field] = value;
        else body.data![field] = value as never;
        return body;
      });
    const delivery = fc.oneof(
      fc.record({ path: fc.constant('/azure'), body: fc.jsonValue() }),
      fc.record({
        path: fc.constant('/azure'),
        body: fc.array(clusterEvent, { minLength: 1, maxLength: 3 }),
      }),
      fc.record({ path: fc.constant('/gcp'), body: fc.jsonValue() }),
      fc.record({ path: fc.constant('/gcp'), body: auditPush }),
      fc.record({ path: fc.constant('/azure/alert'), body: fc.jsonValue() }),
      fc.record({ path: fc.constant('/azure/alert'), body: alert }),
    );
    await fc.assert(
      fc.asyncProperty(delivery, async ({ path, body }) => {
        const request =
          path !== '/gcp'
            ? functionUrlRequest(path, body as never, {}, { key: azureKey })
            : functionUrlRequest(path, body as never, { authorization: `Bearer ${token}` });
        const response = await webhook(request, context);
        assert.ok(
          [200, 400].includes(response.statusCode!),
          `${response.statusCode} ${response.body} for ${JSON.stringify(body).slice(0, 300)}`,
        );
      }),
      { numRuns: 200 },
    );
    assert.deepEqual(await versions(), before, 'no generated delivery changed the hub');
  });

  it('ends 200 generated CloudTrail events in "ignored" or a parse error, never anything else', async () => {
    const handler = makeEksEventHandler(getDeps);
    const before = await versions();
    const detail = fc.record(
      {
        eventSource: fc.constantFrom('eks.amazonaws.com', 'ec2.amazonaws.com'),
        eventName: fc.string({ maxLength: 30 }),
        awsRegion: fc.constantFrom('us-east-1', 'eu-west-1', ''),
        recipientAccountId: fc.constantFrom(EKS_ACCOUNT, '999988887777', 'x'),
        errorCode: fc.option(fc.string(), { nil: undefined }),
        requestParameters: fc.option(
          fc.record(
            {
              name: fc.string({ maxLength: 120 }),
              clusterName: fc.option(fc.string({ maxLength: 40 }), { nil: undefined }),
              resourceArn: fc.option(fc.string(), { nil: undefined }),
            },
            { requiredKeys: [] },
          ),
          { nil: null },
        ),
      },
      { requiredKeys: ['eventSource'] },
    );
    await fc.assert(
      fc.asyncProperty(detail, async (d) => {
        const event = { ...cloudTrailEvent('Generated', EKS_ACCOUNT, 'us-east-1', {}), detail: d };
        try {
          const result = await handler(event as never, context);
          assert.ok(['ignored', 'absent'].includes(result.result), JSON.stringify(result));
        } catch (error) {
          assert.equal((error as Error).name, 'ParseError', String(error));
        }
      }),
      { numRuns: 200 },
    );
    assert.deepEqual(await versions(), before);
    assert.deepEqual(await changeEvents(), []);
  });

  /** One scope message, as the scope enumerator sends it. */
  const scopeMessage = (messageId: string, syncId: string, region: string) =>
    sqsRecord(
      messageId,
      JSON.stringify({ syncId, scope: { provider: 'eks', account: EKS_ACCOUNT, region } }),
    );
  /** Each call a scope message of eu-west-1 (its sync id `<prefix>-<n>`) the scope worker takes whole. */
  const scopeListings = (prefix: string) => {
    const worker = makeScopeWorker(getDeps);
    let message = 0;
    return async () =>
      assert.deepEqual(
        await worker(
          { Records: [scopeMessage(`${prefix}-${++message}`, `${prefix}-${message}`, 'eu-west-1')] },
          context,
        ),
        { batchItemFailures: [] },
      );
  };
  const createdOf = (events: ReceivedEvent[], display: string) =>
    events.filter(
      (e) =>
        e['detail-type'] === 'ClusterProfile Created' &&
        (e.detail.cluster as { displayName: string }).displayName === display,
    );

  it("counts a missed cluster's listings in DynamoDB from scope messages, whatever a hub writer sets its shown count to: marked after one, deleted after the grace's two", async () => {
    await createEksClusters(emulators.moto.endpoint, EKS_ACCOUNT, 'eu-west-1', [{ name: 'graced' }]);
    const listed = scopeListings('graced');
    const graced = async () => (await profiles()).find((p) => p.spec.displayName === 'graced');
    /** A hub writer past the admission policy: the profile's shown count set to `value`. */
    const claim = async (value: string) => {
      const profile = (await graced())!;
      const others = (profile.status?.properties ?? []).filter((p) => p.name !== 'cpsync.io/missed-listings');
      await hub.applyStatus({
        ...profile,
        status: { ...profile.status, properties: [...others, { name: 'cpsync.io/missed-listings', value }] },
      });
    };
    const counts = async () =>
      (
        await DynamoDBDocumentClient.from(
          new DynamoDBClient({
            endpoint: emulators.moto.endpoint,
            region: 'us-east-1',
            credentials: HUB_CREDENTIALS,
          }),
        ).send(new ScanCommand({ TableName: 'cpsync-absences' }))
      ).Items?.map((item) => JSON.parse(item.record as string) as { providerId: string; missed: number }) ??
      [];
    await listed();
    assert.ok(await graced(), 'listed: its profile');
    const id = (await graced())!.metadata.annotations!['cpsync.io/provider-id']!;
    await new EKSClient({
      endpoint: emulators.moto.endpoint,
      region: 'eu-west-1',
      credentials: await accountCredentials(emulators.moto.endpoint, EKS_ACCOUNT),
    }).send(new DeleteClusterCommand({ name: 'graced' }));
    await changeEvents();
    // One listing short of the grace, said on the hub: a first miss all the same.
    await claim('1');
    await listed();
    const marked = await graced();
    assert.ok(marked, 'one missed listing of two: kept');
    assert.equal(
      marked.status?.properties?.find((p) => p.name === 'cpsync.io/missed-listings')?.value,
      '1',
      'it shows the count kept in DynamoDB, not the hub writer’s',
    );
    assert.deepEqual(
      (await counts()).filter((c) => c.providerId === id).map((c) => c.missed),
      [1],
    );
    // Never missed, said on the hub: the second miss deletes it.
    await claim('0');
    await listed();
    assert.equal(await graced(), undefined, 'two missed listings: deleted');
    assert.deepEqual(
      (await changeEvents()).filter((e) => e['detail-type'] === 'ClusterProfile Deleted').length,
      1,
    );
    // Kept until its profile is gone (a deletion that did not land is tried again), then gone with it.
    assert.deepEqual(
      (await counts()).filter((c) => c.providerId === id).map((c) => c.missed),
      [2],
    );
    await listed();
    assert.deepEqual(
      (await counts()).filter((c) => c.providerId === id),
      [],
      'its count goes once its profile has',
    );
  });

  it("begins a cluster's count again when a CloudTrail event's sync finds it, between two listings that missed it: not deleted at the grace's two", async () => {
    await createEksClusters(emulators.moto.endpoint, EKS_ACCOUNT, 'eu-west-1', [{ name: 'flaky' }]);
    const listed = scopeListings('flaky');
    const flaky = async () => (await profiles()).find((p) => p.spec.displayName === 'flaky');
    const shown = async () =>
      (await flaky())?.status?.properties?.find((p) => p.name === 'cpsync.io/missed-listings')?.value;
    const counts = async () =>
      (
        await DynamoDBDocumentClient.from(
          new DynamoDBClient({
            endpoint: emulators.moto.endpoint,
            region: 'us-east-1',
            credentials: HUB_CREDENTIALS,
          }),
        ).send(new ScanCommand({ TableName: 'cpsync-absences' }))
      ).Items?.map((item) => JSON.parse(item.record as string) as { providerId: string; missed: number }) ??
      [];
    /** EKS's listing of the region leaves the cluster out, as a listing that lags the cloud may. */
    const missing = () =>
      emulators.proxy.rewriteAnswer<{ clusters?: string[] }>(/^\/clusters(\?|$)/, (answer, call) => {
        if (call.region === 'eu-west-1')
          answer.clusters = (answer.clusters ?? []).filter((n) => n !== 'flaky');
      });
    await listed();
    const id = (await flaky())!.metadata.annotations!['cpsync.io/provider-id']!;
    let restore = missing();
    try {
      await listed();
    } finally {
      restore();
    }
    assert.equal(await shown(), '1', 'missed once: marked');
    assert.deepEqual(
      (await counts()).filter((c) => c.providerId === id).map((c) => c.missed),
      [1],
    );
    // The cloud's own event: its sync finds the cluster, and its count begins again.
    const evented = await makeEksEventHandler(getDeps)(
      cloudTrailEvent('UpdateClusterConfig', EKS_ACCOUNT, 'eu-west-1', { name: 'flaky' }) as never,
      context,
    );
    assert.equal(evented.result, 'updated', JSON.stringify(evented));
    assert.equal(await shown(), undefined);
    assert.deepEqual(
      (await counts()).filter((c) => c.providerId === id),
      [],
    );
    restore = missing();
    try {
      await listed();
    } finally {
      restore();
    }
    assert.equal(await shown(), '1', 'missed once since it was seen: marked, not deleted');
    await listed();
    assert.equal(await shown(), undefined, 'listed again');
    assert.deepEqual(
      (await counts()).filter((c) => c.providerId === id),
      [],
    );
  });

  it('applies a CloudTrail event and a scope message for the same account one after the other: one Created, one event id', async () => {
    // The event handler and the worker of the scheduled sync reach the same cluster at once.
    await createEksClusters(emulators.moto.endpoint, EKS_ACCOUNT, 'eu-west-1', [{ name: 'racing' }]);
    await changeEvents();
    const [worked, evented] = await Promise.all([
      makeScopeWorker(getDeps)({ Records: [scopeMessage('race-scope', 'race', 'eu-west-1')] }, context),
      makeEksEventHandler(getDeps)(
        cloudTrailEvent('CreateCluster', EKS_ACCOUNT, 'eu-west-1', { name: 'racing' }) as never,
        context,
      ),
    ]);
    assert.deepEqual(worked, { batchItemFailures: [] });
    assert.ok(['created', 'unchanged'].includes(evented.result), JSON.stringify(evented));
    const created = createdOf(await changeEvents(), 'racing');
    assert.equal(created.length, 1, 'announced once, by whichever applied it');
    assert.equal((await profiles()).filter((p) => p.spec.displayName === 'racing').length, 1);
  });

  it('keeps the Created of a CloudTrail event EventBridge would not take, and the next scope run publishes it', async () => {
    await createEksClusters(emulators.moto.endpoint, EKS_ACCOUNT, 'eu-west-1', [{ name: 'outage' }]);
    await changeEvents();
    const down = emulators.proxy.intercept((call) =>
      call.operation === 'AWSEvents.PutEvents'
        ? restJsonError(500, 'InternalException', 'injected outage')
        : undefined,
    );
    let result;
    try {
      result = await makeEksEventHandler(getDeps)(
        cloudTrailEvent('CreateCluster', EKS_ACCOUNT, 'eu-west-1', { name: 'outage' }) as never,
        context,
      );
    } finally {
      down();
    }
    assert.deepEqual(result, { result: 'created', published: 0, pending: 1 });
    assert.deepEqual(createdOf(await changeEvents(), 'outage'), [], 'not delivered while the bus was down');
    const worked = await makeScopeWorker(getDeps)(
      { Records: [scopeMessage('after-outage', 'after-outage', 'eu-west-1')] },
      context,
    );
    assert.deepEqual(worked, { batchItemFailures: [] });
    assert.equal(createdOf(await changeEvents(), 'outage').length, 1, 'published by the next run, once');
  });

  it("ends a scope the function's timeout would cut off first as timed out, and says so, in the function's time", async () => {
    // The region's listing held until the worker has answered: only the scope's deadline can end it.
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let held = 0;
    const stop = emulators.proxy.intercept(async (call) => {
      if (call.service === 'eks' && call.region === 'eu-west-1' && call.path.split('?')[0] === '/clusters') {
        held += 1;
        await released;
      }
      return undefined;
    });
    // 31.5 s left of the function: it keeps 30 s to finish, so the scope has 1.5 s (its configuration says 300 s).
    const short = { ...context, getRemainingTimeInMillis: () => 31_500 };
    let worked;
    // As Lambda does, the invocation ends when its time is spent, answered or not.
    const ended = new AbortController();
    try {
      worked = await Promise.race([
        makeScopeWorker(getDeps)({ Records: [scopeMessage('short', 'short-time', 'eu-west-1')] }, short),
        sleep(short.getRemainingTimeInMillis(), undefined, { signal: ended.signal }).then(() => {
          throw new Error("the function's time ran out before the worker answered");
        }),
      ]);
    } finally {
      ended.abort();
      release();
      stop();
    }
    assert.deepEqual(
      worked,
      { batchItemFailures: [] },
      "a failed listing is the scope's outcome, not a retry",
    );
    assert.ok(held > 0, 'the listing was asked for, and held');
    const synced = (await drainQueue(emulators.queueUrl)).filter(
      (e) =>
        e['detail-type'] === 'Inventory Scope Synced' &&
        (e.detail as { syncId?: string }).syncId?.startsWith('short-time'),
    );
    assert.equal(synced.length, 1, 'the scope says what became of it');
    const detail = synced[0]!.detail as unknown as { outcome: string; error?: { reason: string } };
    assert.deepEqual([detail.outcome, detail.error?.reason], ['failed', 'Timeout']);
    assert.deepEqual(validator.errors(synced[0]!['detail-type'], synced[0]!.detail), []);
  });

  it('writes and deletes projected copies like the profile itself, from a scope message and from CloudTrail events', async () => {
    const copies = `${namespace}-copies`;
    const projected = await compose(
      {
        ...deps.config,
        inventory: {
          ...deps.config.inventory,
          projections: [{ provider: 'eks', region: 'us-east-1', namespaces: [copies] }],
        },
      },
      ALL_PROVIDERS,
    );
    const withCopies = async () => projected;
    const inCopies = async () => (await hub.list(copies, {})).map((p) => p.spec.displayName).sort();
    await drainQueue(emulators.queueUrl);

    // The scope worker, from the enumerator's message.
    const scope = { provider: 'eks', account: EKS_ACCOUNT, region: 'us-east-1' };
    const worker = makeScopeWorker(withCopies);
    const body = JSON.stringify({ syncId: 'projections-1', scope });
    assert.deepEqual(await worker({ Records: [sqsRecord('projections-1', body)] }, context), {
      batchItemFailures: [],
    });
    const listed = await inCopies();
    assert.ok(listed.length > 0 && listed.includes('payments'), listed.join(', '));
    const announced = await changeEvents();
    assert.deepEqual(
      announced.filter((e) => e['detail-type'] === 'ClusterProfile Created').map((e) => e.detail.namespace),
      listed.map(() => copies),
    );
    // The clusters' own profiles gain the cross-inventory label and the list of their copies.
    for (const e of announced.filter((e) => e['detail-type'] === 'ClusterProfile Updated')) {
      assert.equal(e.detail.namespace, namespace);
      for (const field of [
        'metadata.labels[cpsync.io/cluster]',
        'metadata.annotations[cpsync.io/projected-to]',
      ])
        assert.ok((e.detail.changedFields as string[]).includes(field), field);
    }
    assert.equal(announced.length, 2 * listed.length);

    // A CloudTrail CreateCluster: the cluster and its copy; DeleteCluster confirmed: both go, each announced.
    await createEksClusters(emulators.moto.endpoint, EKS_ACCOUNT, 'us-east-1', [{ name: 'projected-one' }]);
    const events = makeEksEventHandler(withCopies);
    await events(
      cloudTrailEvent('CreateCluster', EKS_ACCOUNT, 'us-east-1', { name: 'projected-one' }) as never,
      context,
    );
    assert.ok((await inCopies()).includes('projected-one'));
    assert.ok((await profiles()).some((p) => p.spec.displayName === 'projected-one'));
    await changeEvents();
    const member = new EKSClient({
      endpoint: emulators.moto.endpoint,
      region: 'us-east-1',
      credentials: await memberCredentials(emulators.moto.endpoint),
    });
    await member.send(new DeleteClusterCommand({ name: 'projected-one' }));
    member.destroy();
    await events(
      cloudTrailEvent('DeleteCluster', EKS_ACCOUNT, 'us-east-1', { name: 'projected-one' }) as never,
      context,
    );
    assert.ok(!(await inCopies()).includes('projected-one'));
    assert.ok(!(await profiles()).some((p) => p.spec.displayName === 'projected-one'));
    assert.deepEqual((await changeEvents()).map((e) => [e['detail-type'], e.detail.namespace]).sort(), [
      ['ClusterProfile Deleted', namespace],
      ['ClusterProfile Deleted', copies],
    ]);
    // The other copies are the listed clusters' and stay.
    assert.deepEqual(await inCopies(), listed);
    await projected.close();
  });

  it('at the defaults, a scope message describes an unchanged EKS cluster only once: its answer in DynamoDB stands for the next message', async () => {
    const TableName = 'cpsync-answers-eks';
    await createClusterRecordsTable(emulators.moto.endpoint, TableName);
    const remembering = await compose(
      { ...deps.config, answers: { table: TableName, endpoint: emulators.moto.endpoint } },
      ALL_PROVIDERS,
      { onDemand: true },
    );
    assert.equal(remembering.config.providers.eks!.clusterMaxAgeMinutes, 60, 'the default is what is walked');
    /** The EKS clusters DescribeCluster was called for since `from`, as moto received the calls. */
    const describedSince = (from: number) => describedClusters(emulators.proxy.calls.slice(from));
    const scopeRecord = (id: string) =>
      sqsRecord(
        id,
        JSON.stringify({ syncId: id, scope: { provider: 'eks', account: EKS_ACCOUNT, region: 'us-east-1' } }),
      );
    try {
      const worker = makeScopeWorker(async () => remembering);
      let from = emulators.proxy.calls.length;
      assert.deepEqual(await worker({ Records: [scopeRecord('remembered-1')] }, context), {
        batchItemFailures: [],
      });
      const first = describedSince(from);
      assert.ok(first.length > 0, 'the first message describes the region’s clusters');
      from = emulators.proxy.calls.length;
      assert.deepEqual(await worker({ Records: [scopeRecord('remembered-2')] }, context), {
        batchItemFailures: [],
      });
      assert.deepEqual(describedSince(from), [], 'the answers in DynamoDB stand for DescribeCluster’s');
    } finally {
      await remembering.close();
    }
  });

  it('lists AKS through Resource Graph from a scope message, and a graph behind ARM brings back no cluster its event deleted', async () => {
    const TableName = 'cpsync-answers-graph';
    await createClusterRecordsTable(emulators.moto.endpoint, TableName);
    const graphDeps = await compose(
      {
        ...deps.config,
        answers: { table: TableName, endpoint: emulators.moto.endpoint },
        providers: {
          ...deps.config.providers,
          aks: { ...deps.config.providers.aks!, listing: 'resourceGraph' },
        },
      },
      ALL_PROVIDERS,
      { onDemand: true },
    );
    const arm = emulators.arm;
    const calls = (from: number) => clusterReadsSince(arm, from);
    const aksNames = async () =>
      (await profiles())
        .filter((p) => /\/managedclusters\//i.test(p.metadata.annotations?.['cpsync.io/provider-id'] ?? ''))
        .map((p) => p.spec.displayName)
        .sort();
    const scopeRecord = (id: string) =>
      sqsRecord(
        id,
        JSON.stringify({ syncId: id, scope: { provider: 'aks', account: AZURE_SUBSCRIPTION, region: '*' } }),
      );
    const batchId = `/subscriptions/${AZURE_SUBSCRIPTION}/resourceGroups/rg-batch/providers/Microsoft.ContainerService/managedClusters/batch`;
    const held = arm.clusters.get(AZURE_SUBSCRIPTION);
    arm.clusters.set(AZURE_SUBSCRIPTION, [aksCluster('web', 'rg-web'), aksCluster('batch', 'rg-batch')]);
    try {
      const worker = makeScopeWorker(async () => graphDeps);
      let from = arm.requests.length;
      assert.deepEqual(await worker({ Records: [scopeRecord('graph-1')] }, context), {
        batchItemFailures: [],
      });
      assert.deepEqual(await aksNames(), ['batch', 'web']);
      assert.deepEqual(calls(from).lists, 0, 'no subscription listed by ARM');
      assert.equal(calls(from).graph, 1);

      from = arm.requests.length;
      assert.deepEqual(await worker({ Records: [scopeRecord('graph-2')] }, context), {
        batchItemFailures: [],
      });
      const again = calls(from);
      // One graph answer serves a container's scopes for a while (graphShareMillis): asked again, or not.
      assert.ok(again.graph <= 1, `graph queries: ${again.graph}`);
      assert.deepEqual(
        { lists: again.lists, reads: again.reads },
        { lists: 0, reads: [] },
        'the answers in DynamoDB stand for ARM’s',
      );

      // The graph lags the deletion its event announced.
      arm.indexGraph();
      arm.clusters.set(AZURE_SUBSCRIPTION, [aksCluster('web', 'rg-web')]);
      const deleted = await makeWebhook(async () => graphDeps)(
        functionUrlRequest(
          '/azure',
          [eventGridEvent('Microsoft.Resources.ResourceDeleteSuccess', batchId, 'eg-graph-1')],
          {},
          { key: azureKey },
        ),
        context,
      );
      assert.deepEqual(JSON.parse(deleted.body as string).synced, {
        [`${AZURE_SUBSCRIPTION}/rg-batch/batch`]: 'deleted',
      });
      from = arm.requests.length;
      assert.deepEqual(await worker({ Records: [scopeRecord('graph-3')] }, context), {
        batchItemFailures: [],
      });
      assert.deepEqual(await aksNames(), ['web'], 'the graph’s row of batch brought nothing back');
      assert.deepEqual(calls(from).reads, ['batch'], 'it was asked of ARM, which answered not found');
    } finally {
      arm.graph = undefined;
      if (held) arm.clusters.set(AZURE_SUBSCRIPTION, held);
      await graphDeps.close();
      await changeEvents();
    }
  });

  it('answers 404 to unknown routes and 405 to other methods, never crashing', async () => {
    const webhook = makeWebhook(getDeps);
    assert.equal((await webhook(functionUrlRequest('/elsewhere', {}), context)).statusCode, 404);
    const get = functionUrlRequest('/azure', {});
    get.requestContext.http.method = 'GET';
    assert.equal((await webhook(get, context)).statusCode, 405);
  });
});

async function memberCredentials(endpoint: string) {
  const { STSClient, AssumeRoleCommand } = await import('@aws-sdk/client-sts');
  const sts = new STSClient({ endpoint, region: 'us-east-1', credentials: HUB_CREDENTIALS });
  const c = (
    await sts.send(
      new AssumeRoleCommand({
        RoleArn: `arn:aws:iam::${EKS_ACCOUNT}:role/estate-builder`,
        RoleSessionName: 'test',
      }),
    )
  ).Credentials!;
  return { accessKeyId: c.AccessKeyId!, secretAccessKey: c.SecretAccessKey!, sessionToken: c.SessionToken! };
}
