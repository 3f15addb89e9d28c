/**
 * The deployable artifacts, not the sources: each function bundled exactly as the CDK bundles it, loaded
 * as Lambda would load it, and invoked against the real hub, moto and the local cloud servers.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { CreateQueueCommand, SQSClient } from '@aws-sdk/client-sqs';
import { CoreV1Api } from '@kubernetes/client-node';
import { parse } from 'yaml';
import { KubernetesHub } from '../../../adapters/hub/KubernetesHub.ts';
import { FUNCTION_ENTRY_FILE } from '../../../infra/bundling.ts';
import { bundleFunction } from '../../../infra/functionCode.ts';
import { AZURE_SUBSCRIPTION, EKS_ACCOUNT, GCP_PROJECT, type Emulators } from '../../env/emulators.ts';
import { createEksClusters, createIdempotencyTable, HUB_CREDENTIALS } from '../../support/aws.ts';
import { adminKubeConfig, localHub } from '../../support/hub.ts';
import { installAdmissionPolicy } from '../../support/hubManifests.ts';
import { cloudTrailEvent, functionUrlRequest, lambdaContext, sqsRecord } from '../../support/lambda.ts';
import { estateOnHub, estateScopeRecords } from '../../support/estate.ts';
import { coldRun } from '../../support/cold.ts';
import { drainMessages } from '../../support/events.ts';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
type Handler = (event: unknown, context: unknown) => Promise<unknown>;

describe('the bundled functions', () => {
  let emulators: Emulators;
  let hub: KubernetesHub;
  let namespace: string;
  let queueUrl: string;
  const handlers: Record<string, Handler> = {};
  const directory = join(ROOT, '.cache', 'bundle-test');

  before(async () => {
    const { state, ...estate } = await estateOnHub('bundles');
    ({ namespace, emulators } = estate);
    hub = new KubernetesHub({ kubeConfig: adminKubeConfig(state) });
    queueUrl = (
      await new SQSClient({
        endpoint: emulators.moto.endpoint,
        region: 'us-east-1',
        credentials: HUB_CREDENTIALS,
      }).send(new CreateQueueCommand({ QueueName: 'bundle-scopes' }))
    ).QueueUrl!;
    await createIdempotencyTable(emulators.moto.endpoint, 'bundle-idempotency');
    const document = parse(readFileSync(emulators.configPath, 'utf8')) as Record<string, unknown>;
    Object.assign(process.env, {
      ...emulators.env,
      AWS_ENDPOINT_URL_SQS: emulators.moto.endpoint,
      CPSYNC_SCOPE_QUEUE_URL: queueUrl,
      POWERTOOLS_METRICS_DISABLED: 'true',
      POWERTOOLS_TRACE_ENABLED: 'false',
      POWERTOOLS_LOG_LEVEL: 'ERROR',
      CPSYNC_CONFIG: JSON.stringify({
        ...document,
        hub: { kubeconfig: state.kubeconfig },
        outbox: { directory: join(emulators.directory, 'bundle-outbox') },
        idempotency: { table: 'bundle-idempotency', endpoint: emulators.moto.endpoint },
      }),
    });
    rmSync(directory, { recursive: true, force: true });
    for (const name of [
      'scopeEnumerator',
      'scopeWorker',
      'eksEvents',
      'webhook',
      'subscribers/argocd/handler',
      'subscribers/chat/handler',
    ]) {
      const out = join(directory, name);
      bundleFunction(ROOT, join(ROOT, 'functions', `${name}.ts`), out);
      handlers[name] = ((await import(join(out, FUNCTION_ENTRY_FILE))) as { handler: Handler }).handler;
    }
  });

  after(async () => emulators?.stop());

  /** Which clouds' SDKs these files of a bundle carry. */
  const clouds = (name: string, files: readonly string[]) => {
    const texts = files.map((file) => readFileSync(join(directory, name, file), 'utf8'));
    return {
      google: texts.some((text) => text.includes('google.container.v1.ClusterManager')),
      azure: texts.some((text) => text.includes('azsdk-js-arm-containerservice')),
    };
  };
  const bundleFiles = (name: string) =>
    readdirSync(join(directory, name), { recursive: true, encoding: 'utf8' }).filter((f) =>
      f.endsWith('.mjs'),
    );
  /** One invocation in a fresh process, as a cold Lambda container makes it (test/support/cold.ts). */
  const coldInvoke = (name: string, event: unknown) =>
    coldRun(join(directory, name), event, { timeoutMillis: 60_000 });
  const scopeMessage = (provider: string, account: string, region: string) => ({
    Records: [
      sqsRecord(`cold-${provider}`, JSON.stringify({ syncId: 'cold', scope: { provider, account, region } })),
    ],
  });

  it('load only the SDK of the cloud a message is about, and no cloud SDK before the first message', async () => {
    for (const name of ['scopeWorker', 'webhook', 'scopeEnumerator'])
      assert.deepEqual(
        clouds(name, bundleFiles(name)),
        { google: true, azure: true },
        `${name} carries every cloud`,
      );
    for (const name of ['scopeWorker', 'webhook', 'scopeEnumerator', 'eksEvents'])
      assert.deepEqual(
        clouds(name, ['index.mjs']),
        { google: false, azure: false },
        `${name}: entry without cloud SDKs`,
      );
    assert.deepEqual(clouds('eksEvents', bundleFiles('eksEvents')), { google: false, azure: false });

    const eks = await coldInvoke('scopeWorker', scopeMessage('eks', EKS_ACCOUNT, 'us-east-1'));
    assert.deepEqual(eks.result, { batchItemFailures: [] });
    assert.deepEqual(clouds('scopeWorker', eks.loaded), { google: false, azure: false }, 'an EKS scope');
    const gke = await coldInvoke('scopeWorker', scopeMessage('gke', GCP_PROJECT, '*'));
    assert.deepEqual(gke.result, { batchItemFailures: [] });
    assert.deepEqual(clouds('scopeWorker', gke.loaded), { google: true, azure: false }, 'a GKE scope');
    const aks = await coldInvoke('scopeWorker', scopeMessage('aks', AZURE_SUBSCRIPTION, '*'));
    assert.deepEqual(aks.result, { batchItemFailures: [] });
    assert.deepEqual(clouds('scopeWorker', aks.loaded), { google: false, azure: true }, 'an AKS scope');
  });

  it('load as Lambda loads them', () => {
    assert.deepEqual(Object.keys(handlers).sort(), [
      'eksEvents',
      'scopeEnumerator',
      'scopeWorker',
      'subscribers/argocd/handler',
      'subscribers/chat/handler',
      'webhook',
    ]);
  });

  it('fan out and sync every scope: enumerator, then worker', async () => {
    const enumerated = (await handlers.scopeEnumerator!({ executionId: 'bundle-run' }, lambdaContext())) as {
      scopes: number;
    };
    assert.equal(enumerated.scopes, 4);
    // As SQS delivers them (the worker parses the whole record with the Powertools SQS schema).
    const records = estateScopeRecords('bundle-run', 'm');
    const result = await handlers.scopeWorker!({ Records: records }, lambdaContext());
    assert.deepEqual(result, { batchItemFailures: [] });
    assert.equal(
      (await hub.list(namespace, { 'x-k8s.io/cluster-manager': 'cpsync' })).length,
      emulators.clusters,
    );
  });

  it('handle a CloudTrail event and a webhook delivery', async () => {
    await createEksClusters(emulators.moto.endpoint, EKS_ACCOUNT, 'us-east-1', [{ name: 'bundled' }]);
    const event = cloudTrailEvent('CreateCluster', EKS_ACCOUNT, 'us-east-1', { name: 'bundled' });
    const eks = (await handlers.eksEvents!(event, lambdaContext())) as { result: string };
    assert.equal(eks.result, 'created');
    const again = (await handlers.eksEvents!(event, lambdaContext())) as {
      result: string;
      duplicate?: boolean;
    };
    assert.deepEqual([again.result, again.duplicate], ['created', true], 'the redelivery is recognised');
    const webhook = (await handlers.webhook!(
      functionUrlRequest('/gcp', { message: { data: 'e30=', messageId: 'x' } }),
      lambdaContext(),
    )) as { statusCode: number };
    assert.equal(webhook.statusCode, 404, 'GCP pushes are not configured here: refused, not crashed');
  });

  it('the Argo CD subscriber rebuilds a cluster Secret for every profile of the hub (reconcile)', async () => {
    const argocd = `argocd-${namespace}`.slice(0, 63);
    const core = adminKubeConfig(await localHub()).makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: argocd } } });
    process.env.ARGOCD_NAMESPACE = argocd;
    // The hub's admission policy in force, cpsync's identity the one the profiles are written as here (the admin):
    // the subscriber acts only on profiles no one else can have written.
    const policy = await installAdmissionPolicy(adminKubeConfig(await localHub()), {
      identity: 'cpsync-admin',
      binding: (b) => ({ ...b, spec: { ...b.spec!, matchResources: undefined } }),
    });
    try {
      const report = (await handlers['subscribers/argocd/handler']!(
        { reconcile: true },
        lambdaContext(),
      )) as {
        created: number;
        skipped: unknown[];
      };
      const profiles = await hub.list(namespace, { 'x-k8s.io/cluster-manager': 'cpsync' });
      const secrets = await core.listNamespacedSecret({ namespace: argocd });
      assert.equal(report.created + report.skipped.length, profiles.length);
      assert.equal(secrets.items.length, report.created);
      assert.ok(report.created > 0);
      assert.ok(
        secrets.items.every((s) => s.metadata?.labels?.['argocd.argoproj.io/secret-type'] === 'cluster'),
      );
    } finally {
      await policy.remove();
      delete process.env.ARGOCD_NAMESPACE;
      await core.deleteNamespace({ name: argocd });
    }
  });

  it('the scope enumerator, cold, finds the GKE projects Resource Manager search gives', async () => {
    // Resource Manager's client is a CommonJS module loaded on demand: the bundle must give it by name.
    const found = ['acme-found-a', 'acme-found-b'];
    emulators.gke.projects.push(...found.map((projectId) => ({ projectId, state: 'ACTIVE' })));
    const document = JSON.parse(process.env.CPSYNC_CONFIG!) as {
      providers: { gke: Record<string, unknown> };
    };
    const config = {
      ...document,
      providers: { ...document.providers, gke: { ...document.providers.gke, projects: { search: {} } } },
    };
    try {
      const run = await coldRun(
        join(directory, 'scopeEnumerator'),
        { executionId: 'bundle-search' },
        { env: { ...process.env, CPSYNC_CONFIG: JSON.stringify(config) }, timeoutMillis: 60_000 },
      );
      assert.equal((run.result as { syncId: string }).syncId, 'bundle-search', JSON.stringify(run.result));
      // What the queue received, not what the enumerator says it sent.
      const scopes = (
        await drainMessages<{ syncId: string; scope: { provider: string; account: string } }>(queueUrl)
      )
        .filter((message) => message.syncId === 'bundle-search')
        .map((message) => message.scope);
      assert.deepEqual(
        scopes
          .filter((scope) => scope.provider === 'gke')
          .map((scope) => scope.account)
          .sort(),
        found,
      );
    } finally {
      emulators.gke.projects.splice(0);
    }
  });
});
