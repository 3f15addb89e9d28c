/**
 * What `cdk deploy` ships, run as Lambda runs it: the stack is synthesized with a configuration of the
 * local estate, and each function's asset folder, handler, environment, memory and timeout are taken from
 * the template and cdk.out and run under the AWS Lambda Runtime Interface Emulator with the Node runtime
 * interface client (test/env/lambdaRuntime.ts: the code read-only, only /tmp writable). The template's
 * tokens resolve to resources made in moto under their logical ids (tables, queues, secrets, the bus), so
 * the functions reach AWS, the hub (a kubeconfig in Secrets Manager) and the clouds as they would deployed.
 */
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { App } from 'aws-cdk-lib';
import { CreateTableCommand, DynamoDBClient, type KeySchemaElement } from '@aws-sdk/client-dynamodb';
import {
  CreateEventBusCommand,
  EventBridgeClient,
  PutRuleCommand,
  PutTargetsCommand,
} from '@aws-sdk/client-eventbridge';
import { CreateSecretCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';
import { EKSClient, TagResourceCommand } from '@aws-sdk/client-eks';
import { CreateQueueCommand, GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { parse } from 'yaml';
import { Stack } from 'aws-cdk-lib';
import { createServer } from 'node:http';
import { CpsyncMemberRoles } from '../../../infra/CpsyncMemberRoles.ts';
import { CpsyncStack } from '../../../infra/CpsyncStack.ts';
import type { AwsCall } from '../../env/awsProxy.ts';
import {
  AZURE_SUBSCRIPTION,
  EKS_ACCOUNT,
  GCP_PROJECT,
  gkeCluster,
  type Emulators,
} from '../../env/emulators.ts';
import { startFunction, type RunningFunction } from '../../env/lambdaRuntime.ts';
import { holdTransition } from '../../env/transitions.ts';
import { serveEksAccessEntries, type EksAccessEntries } from '../../env/eksAccessEntries.ts';
import { accountCredentials, createEksClusters, HUB_CREDENTIALS } from '../../support/aws.ts';
import {
  drainMessages,
  drainQueue,
  messagesHandedOver,
  wholeEventTarget,
  type ReceivedEvent,
} from '../../support/events.ts';
import { adminKubeConfig } from '../../support/hub.ts';
import {
  applyPrinted,
  ensureShippedRbac,
  EVERYWHERE_FOR_ADMIN,
  installAdmissionPolicy,
} from '../../support/hubManifests.ts';
import { clientCertificate, kubeconfigYaml } from '../../env/hub.ts';
import { consumerSetup, subscriberUser } from '../../../adapters/compose/consumers.ts';
import { parseConfig, type CpsyncConfig } from '../../../adapters/compose/config.ts';
import {
  decide,
  exercises,
  grantsOf,
  iamRequestsOf,
  resourcePolicyOf,
  rolePolicies,
  sessionOf,
  type IamRequest,
  type PolicyDocument,
} from '../../support/iam.ts';
import { ACCOUNT, templateResolver, templateResources, type CfnResource } from '../../support/template.ts';
import {
  cloudTrailEvent,
  functionUrlRequest,
  gkeAuditEntry,
  pubSubPush,
  sqsRecord,
  startGoogleSigner,
  type GoogleSigner,
} from '../../support/lambda.ts';
import { estateOnHub } from '../../support/estate.ts';
import { runCli, type CliRun } from '../../support/cli.ts';
import { temporaryDirectory } from '../../support/tmp.ts';

type Resource = CfnResource;

/** The webhook's Pub/Sub push subscription: its audience and the service account it signs as. */
const AUDIENCE = 'https://cpsync-webhook.example.com/gcp';
/** Who the Argo CD subscriber is on the hub: a user of its own (the default for the manager `cpsync`). */
const ARGOCD_USER = 'cpsync-argocd';
const PUSHER = 'pubsub-push@acme-data.iam.gserviceaccount.com';

/**
 * Grants a run of these cases does not exercise, each with the reason it is still needed. Every other
 * grant of a function's role must be used by a call the function made here.
 */
const JUSTIFIED: Array<{ action: RegExp; resource: RegExp; fn?: RegExp; why: string }> = [
  {
    fn: /^CpsyncScopeEnumerator/,
    action: /^(events:PutEvents|dynamodb:(PutItem|BatchWriteItem))$/,
    resource: /event-bus\/|Outbox/,
    why: 'the enumerator announces profiles of scopes the configuration dropped (none here), through the outbox',
  },
  {
    action: /^sqs:(ReceiveMessage|ChangeMessageVisibility|GetQueueUrl|DeleteMessage|GetQueueAttributes)$/,
    resource: /./,
    why: 'the SQS event source mapping polls and deletes with the function role, not the function code',
  },
  {
    action: /^dynamodb:(GetItem|DeleteItem)$/,
    resource: /Idempotency/,
    why: 'Powertools idempotency reads a record on a repeated delivery and deletes it when the work fails',
  },
  {
    action: /^dynamodb:PutItem$/,
    resource: /Idempotency/,
    why: 'Powertools idempotency puts its record first, conditionally (an UpdateItem marks it complete)',
  },
  {
    fn: /^CpsyncScopeWorker/,
    action: /^(sqs:SendMessage|dynamodb:(PutItem|DeleteItem))$/,
    resource: /Follow|Chases/,
    why: 'the scope worker starts a chase for each cluster its listing finds in change (the EKS handler and the webhook walk the same code here)',
  },
  {
    fn: /^CpsyncScopeWorker/,
    action: /^dynamodb:(BatchGetItem|PutItem|DeleteItem)$/,
    resource: /Absences/,
    why: "the scope worker counts a cluster a complete listing missed, reads the counts the index shows again from the table, and begins a count again once its cluster is listed (no cluster goes missing between this test's listings; handlers.test.ts does it on the scope message's path)",
  },
  {
    action: /^dynamodb:UpdateItem$/,
    resource: /Chases/,
    fn: /^Cpsync(ScopeWorker|EksEventHandler|Webhook)/,
    why: 'a sync that finds a cluster in change while it is already followed marks the chase it joins, so that an older completion does not end it (each cluster here is found in change once)',
  },
  {
    action: /^dynamodb:DeleteItem$/,
    resource: /Chases/,
    fn: /^Cpsync(EksEventHandler|Webhook)/,
    why: 'a chase whose first look could not be sent is removed, so that it does not hold the cluster',
  },
  {
    action: /^dynamodb:DeleteItem$/,
    resource: /Answers/,
    why: "a remembered answer is removed only when a listing no longer shows its cluster or the cloud's read of it failed",
  },
  {
    action: /^dynamodb:(PutItem|Query)$/,
    resource: /Answers/,
    why: 'the remembered answers are written by whichever function reads an EKS or AKS cluster, and read by a listing of an EKS or AKS scope',
  },
  {
    action: /^ec2:DescribeRegions$/,
    resource: /^\*$/,
    why: 'the enabled regions are read only when the configuration names none (it names them here)',
  },
  {
    action: /^eks:(DisassociateAccessPolicy|DeleteAccessEntry)$/,
    resource: /access-entry/,
    why: 'the accessGrants feature takes grants back and changes levels (none here)',
  },
  {
    action: /^dynamodb:(Query|BatchGetItem|PutItem|DeleteItem)$/,
    resource: /Grants/,
    fn: /^CpsyncWebhook/,
    why: "the webhook's cloud events keep the grants ledger as every sync does (its events here grant nothing, so no record is read back)",
  },
  {
    action: /^dynamodb:DeleteItem$/,
    resource: /Grants/,
    why: "a cluster's record leaves the grants ledger once nothing is held there or the cluster is gone (not here)",
  },
  {
    action: /^dynamodb:PutItem$/,
    resource: /Grants/,
    fn: /^CpsyncScopeWorker/,
    why: 'the scope worker records the grants a scheduled sync makes (here the EKS handler and the follow-up grant)',
  },
  {
    action: /^secretsmanager:GetSecretValue$/,
    resource: /:secret:.+-[A-Za-z0-9]{6}-\?{6}$/,
    why: 'a secret ARN whose name ends in - and six letters or digits may be partial: it is also granted as <arn>-?????? (here the configuration names each secret by its complete ARN)',
  },
  {
    action: /^eks:ListAccessEntries$/,
    resource: /:cluster\/\*$/,
    why: "at turn-off the accessGrants feature scans each cluster's access entries for cpsync's marks (not turned off here)",
  },
];
/** The consumer the accessGrants feature grants (its role is in the member account, as its clusters). */
const DEPLOYER = `arn:aws:iam::${EKS_ACCOUNT}:role/deployer`;
const log = (line: string) => console.log(`[lambda] ${line}`);

describe('the deployed assets under the Lambda runtime', () => {
  let emulators: Emulators;
  let namespace: string;
  let directory: string;
  let kubeconfigText: string;
  /** The configuration the stack was made from (the Argo CD subscriber's RBAC is printed from it). */
  let deployed: CpsyncConfig;
  /** Logical id → what its `Ref` resolves to in the local estate. */
  const refs: Record<string, string> = {};
  /** The queue the test's rule on cpsync's bus delivers every event to. */
  let eventsQueue: string;
  const functions: Record<string, RunningFunction> = {};
  /** The AWS calls each function made, as the proxy in front of moto saw them. */
  const awsCalls: Record<string, AwsCall[]> = {};
  /** The roles whose credentials an AssumeRole answered, by access key id. */
  const assumedRoles = new Map<string, string>();
  /** The source identity a session's credentials were opened with (the access grants' sessions of member roles). */
  const sourceIdentities = new Map<string, string>();
  /** Invokes `fn`, recording the AWS calls made meanwhile. */
  const invoke = async (fn: RunningFunction, event: unknown) => {
    emulators.proxy.clear();
    const answer = await fn.invoke(event);
    (awsCalls[fn.name] ??= []).push(...emulators.proxy.calls);
    return answer;
  };
  const described = (call: AwsCall) =>
    `${call.service} ${call.operation.split('.').pop() || `${call.method} ${call.path.split('?')[0]}`}`;
  let resources: Record<string, Resource>;
  /** The member account's roles for cpsync, as CpsyncMemberRoles synthesizes them. */
  let memberResources: Record<string, Resource>;
  let assembly: string;
  let signer: GoogleSigner;
  const aws = () => ({
    endpoint: emulators.proxy.endpoint,
    region: 'us-east-1',
    credentials: HUB_CREDENTIALS,
  });

  /** A Pub/Sub push of the audit entry of GKE's `method` on `cluster` (us-central1), signed as Pub/Sub signs it. */
  const gkePush = async (method: string, cluster: string, messageId: string) =>
    functionUrlRequest(
      '/gcp',
      pubSubPush(
        gkeAuditEntry(
          GCP_PROJECT,
          `google.container.v1.ClusterManager.${method}`,
          `projects/${GCP_PROJECT}/locations/us-central1/clusters/${cluster}`,
        ),
        messageId,
      ),
      { authorization: `Bearer ${await signer.sign()}` },
    );

  /** The template's value with its intrinsics resolved to the local estate. */
  const resolve = (value: unknown): string => String(templateResolver(resources, refs).resolve(value));

  /** Starts the function whose logical id begins with `prefix`, as the template describes it. */
  const start = async (prefix: string): Promise<RunningFunction> => {
    // A function started again replaces the running one: that one is stopped, not left behind.
    await functions[prefix]?.stop();
    const [id, fn] = Object.entries(resources).find(
      ([key, r]) => r.Type === 'AWS::Lambda::Function' && key.startsWith(prefix),
    )!;
    const variables = (fn.Properties.Environment as { Variables: Record<string, unknown> }).Variables;
    const environment = Object.fromEntries(Object.entries(variables).map(([k, v]) => [k, resolve(v)]));
    const running = await startFunction(
      {
        name: id,
        asset: join(assembly, fn.Metadata!['aws:asset:path'] as string),
        handler: fn.Properties.Handler as string,
        memorySize: fn.Properties.MemorySize as number,
        timeout: fn.Properties.Timeout as number,
        layer: join(directory, 'layer'),
        environment: {
          ...environment,
          // What the function's role and the Lambda service give it, pointed at the local estate.
          AWS_REGION: 'us-east-1',
          AWS_DEFAULT_REGION: 'us-east-1',
          AWS_ACCESS_KEY_ID: HUB_CREDENTIALS.accessKeyId,
          AWS_SECRET_ACCESS_KEY: HUB_CREDENTIALS.secretAccessKey,
          AWS_ENDPOINT_URL: emulators.proxy.endpoint,
          NODE_EXTRA_CA_CERTS: '/opt/certificates/arm.pem',
          POWERTOOLS_METRICS_DISABLED: 'true',
        },
      },
      log,
    );
    functions[prefix] = running;
    return running;
  };

  /** The profiles in the test's inventory namespace, by display name. */
  const profileNames = async (): Promise<string[]> => {
    const { state } = await estate;
    const api = adminKubeConfig(state).makeApiClient(CustomObjectsApi);
    const list = (await api.listNamespacedCustomObject({
      group: 'multicluster.x-k8s.io',
      version: 'v1alpha1',
      namespace,
      plural: 'clusterprofiles',
    })) as { items: Array<{ spec: { displayName: string } }> };
    return list.items.map((p) => p.spec.displayName).sort();
  };
  let estate: ReturnType<typeof estateOnHub>;
  /** The namespace Argo CD's cluster Secrets go to, and the Created event of the EKS handler's cluster. */
  const argoNamespace = `argocd-${Math.random().toString(36).slice(2, 8)}`;
  let accessEntries: EksAccessEntries;
  let deployNamespace: string;
  let ordersCreated: ReceivedEvent | undefined;
  /** The enumerator's messages, one per scope of its run. */
  type ScopeMessage = { syncId: string; scope: { provider: string; account: string; region: string } };
  let scopeMessages: ScopeMessage[] = [];
  /** The events of the scheduled run the chat notifier's subscription delivered, and what the chat receiver was sent. */
  let runForChat: ReceivedEvent[] = [];
  /** The chat notifier's queue (the subscription delivers to it; its flushes go to it too). */
  const chatQueue = () =>
    Object.entries(resources).find(
      ([id, r]) => r.Type === 'AWS::SQS::Queue' && id.startsWith('ChatEvents'),
    )![0];
  const chatPosts: string[] = [];
  let stopReceiver: (() => Promise<void>) | undefined;

  before(async () => {
    estate = estateOnHub('lambda');
    const { state, ...rest } = await estate;
    ({ namespace, emulators } = rest);
    directory = temporaryDirectory('cpsync-lambda-');
    kubeconfigText = readFileSync(state.kubeconfig, 'utf8');
    signer = await startGoogleSigner(AUDIENCE, PUSHER);
    // EKS access entries (the accessGrants feature), at the local EKS API.
    accessEntries = serveEksAccessEntries(emulators.proxy);
    deployNamespace = `${namespace}-deploy`;
    // Credentials STS hands out, and the role they are for: the calls made with them are that role's.
    emulators.proxy.rewrite((call, status, body) => {
      if (call.service === 'sts' && call.operation === 'AssumeRole' && status === 200) {
        const key = /<AccessKeyId>([^<]+)<\/AccessKeyId>/.exec(body)?.[1];
        const params = new URLSearchParams(call.body);
        const role = params.get('RoleArn');
        if (key && role) assumedRoles.set(key, role);
        const source = params.get('SourceIdentity');
        if (key && source) sourceIdentities.set(key, source);
      }
      return undefined;
    });

    // Secrets the configuration names, in Secrets Manager as a deployment keeps them.
    const secrets = new SecretsManagerClient(aws());
    const secret = async (name: string, value: string) =>
      (await secrets.send(new CreateSecretCommand({ Name: name, SecretString: value }))).ARN!;
    const local = parse(readFileSync(emulators.configPath, 'utf8')) as {
      inventory: unknown;
      providers: {
        eks: Record<string, unknown>;
        gke: Record<string, unknown> & { credentials: { file: string } };
        aks: Record<string, unknown> & { credential: { clientSecret: { file: string } } };
      };
    };
    // The chat notifier's incoming webhook: a local receiver, its URL in Secrets Manager.
    const receiver = createServer((request, response) => {
      let body = '';
      request.setEncoding('utf8');
      request.on('data', (chunk: string) => (body += chunk));
      request.on('end', () => {
        chatPosts.push(body);
        response.writeHead(200).end('ok');
      });
    });
    await new Promise<void>((ready) => receiver.listen(0, '127.0.0.1', ready));
    stopReceiver = () => new Promise<void>((done) => receiver.close(() => done()));
    const chatSecret = await secret(
      'chat-webhook',
      `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hooks`,
    );

    const { gke, aks, eks } = local.providers;
    const config = {
      manager: 'cpsync',
      // Clusters tagged access=deploy are also profiled where the consumer `deployer` reads, and the
      // accessGrants feature grants it on them.
      inventory: {
        ...(local.inventory as object),
        projections: [{ tag: { key: 'access', value: 'deploy' }, namespaces: [deployNamespace] }],
      },
      features: { accessGrants: 'on' },
      consumers: [
        {
          name: 'deployer',
          namespaces: [deployNamespace],
          level: 'edit',
          identities: { eks: { roleArn: DEPLOYER } },
        },
      ],
      providers: {
        eks,
        gke: {
          ...gke,
          credentials: { secretArn: await secret('gke-key', readFileSync(gke.credentials.file, 'utf8')) },
        },
        aks: {
          ...aks,
          credential: {
            ...aks.credential,
            clientSecret: {
              secretArn: await secret('aks-secret', readFileSync(aks.credential.clientSecret.file, 'utf8')),
            },
          },
        },
      },
      hub: { kubeconfigSecretArn: await secret('hub-kubeconfig', kubeconfigText) },
      webhook: { gcp: { audience: AUDIENCE, serviceAccountEmail: PUSHER, jwksUri: signer.jwksUri } },
      // Clusters in change are looked at again after a second, then every two (10 s and 20 s by default).
      follow: {
        firstDelaySeconds: 1,
        maxDelaySeconds: 2,
        maxMinutes: 10,
        eks: { minDelaySeconds: 1, maxDelaySeconds: 2 },
      },
      // Both example subscribers, as the configuration asks the stack for them. A sync's message goes once
      // it has been quiet a second (the default is a minute).
      subscribers: {
        chat: { webhookSecretArn: chatSecret, quietSeconds: 1 },
        // On a hub reached with a kubeconfig, the subscriber's own: its user, never cpsync's.
        argocd: {
          namespace: argoNamespace,
          hubKubeconfigSecretArn: await secret(
            'argocd-hub-kubeconfig',
            (() => {
              const { cert, key } = clientCertificate(state, ARGOCD_USER);
              return kubeconfigYaml(state.server, state.caCert, ARGOCD_USER, cert, key);
            })(),
          ),
        },
      },
    };
    deployed = parseConfig(config, 'the deployed configuration');

    // The layer: the ARM server's certificate, as a deployment would ship a private CA.
    mkdirSync(join(directory, 'layer', 'certificates'), { recursive: true });
    writeFileSync(
      join(directory, 'layer', 'certificates', 'arm.pem'),
      readFileSync(emulators.env.NODE_EXTRA_CA_CERTS!),
    );

    assembly = join(directory, 'cdk.out');
    // Asset metadata names each function's folder in cdk.out, as the CDK CLI asks for it.
    const app = new App({ outdir: assembly, context: { 'aws:cdk:enable-asset-metadata': true } });
    const stack = new CpsyncStack(app, 'Cpsync', {
      env: { account: '123456789012', region: 'us-east-1' },
      cpsync: { config },
    });
    assert.ok(stack.chatNotifier && stack.argoCdClusterSync, 'the subscribers the configuration asks for');
    // The member account's roles, trusting cpsync's account, made from the same configuration.
    const member = new Stack(app, 'Member', { env: { account: EKS_ACCOUNT, region: 'us-east-1' } });
    new CpsyncMemberRoles(member, 'Cpsync', { cpsyncAccount: ACCOUNT, config });
    app.synth();
    memberResources = templateResources(assembly, 'Member');
    resources = templateResources(assembly, 'Cpsync');

    // The stack's resources, made in moto under their logical ids.
    const dynamo = new DynamoDBClient(aws());
    const sqs = new SQSClient(aws());
    const events = new EventBridgeClient(aws());
    for (const [id, resource] of Object.entries(resources)) {
      if (resource.Type === 'AWS::DynamoDB::Table') {
        const keys = resource.Properties.KeySchema as KeySchemaElement[];
        const indexes = (resource.Properties.GlobalSecondaryIndexes ?? []) as Array<{
          IndexName: string;
          KeySchema: KeySchemaElement[];
          Projection: { ProjectionType: 'ALL' };
        }>;
        const attributes = [...keys, ...indexes.flatMap((i) => i.KeySchema)].map((k) => k.AttributeName!);
        await dynamo.send(
          new CreateTableCommand({
            TableName: id,
            BillingMode: 'PAY_PER_REQUEST',
            KeySchema: keys,
            AttributeDefinitions: [...new Set(attributes)].map((name) => ({
              AttributeName: name,
              AttributeType: 'S',
            })),
            ...(indexes.length > 0
              ? {
                  GlobalSecondaryIndexes: indexes.map((i) => ({
                    IndexName: i.IndexName,
                    KeySchema: i.KeySchema,
                    Projection: i.Projection,
                  })),
                }
              : {}),
          }),
        );
        refs[id] = id;
      } else if (resource.Type === 'AWS::SQS::Queue') {
        // Through the proxy, as every other call: the SDK sends SQS calls to the queue URL's host.
        const url = new URL((await sqs.send(new CreateQueueCommand({ QueueName: id }))).QueueUrl!);
        refs[id] = `${emulators.proxy.endpoint}${url.pathname}`;
      } else if (resource.Type === 'AWS::SecretsManager::Secret') {
        refs[id] = await secret(id, `generated-${id}`);
      } else if (resource.Type === 'AWS::Events::EventBus') {
        const name = resource.Properties.Name as string;
        await events.send(new CreateEventBusCommand({ Name: name }));
        refs[id] = name;
        // A subscriber's rule: every event on cpsync's bus into a queue the test reads.
        eventsQueue = (await sqs.send(new CreateQueueCommand({ QueueName: 'lambda-events' }))).QueueUrl!;
        const arn = (
          await sqs.send(
            new GetQueueAttributesCommand({ QueueUrl: eventsQueue, AttributeNames: ['QueueArn'] }),
          )
        ).Attributes!.QueueArn!;
        await events.send(
          new PutRuleCommand({
            Name: 'everything',
            EventBusName: name,
            EventPattern: JSON.stringify({ source: ['cpsync'] }),
          }),
        );
        await events.send(
          new PutTargetsCommand({ Rule: 'everything', EventBusName: name, Targets: [wholeEventTarget(arn)] }),
        );
      }
    }
    // The subscriptions of the stack that deliver to its queues (the chat notifier's), as the template makes
    // them: their patterns on cpsync's bus, delivering to those queues in moto.
    const resolver = templateResolver(resources, refs);
    for (const [id, rule] of Object.entries(resources).filter(([, r]) => r.Type === 'AWS::Events::Rule')) {
      if (!rule.Properties.EventBusName) continue;
      const targets = (rule.Properties.Targets as Array<{ Arn: { 'Fn::GetAtt'?: [string, string] } }>)
        .map((target) => target.Arn['Fn::GetAtt']?.[0])
        .filter((target) => target && resources[target]!.Type === 'AWS::SQS::Queue');
      if (targets.length === 0) continue;
      const EventBusName = resolver.resolve(rule.Properties.EventBusName) as string;
      await events.send(
        new PutRuleCommand({
          Name: id,
          EventBusName,
          EventPattern: JSON.stringify(rule.Properties.EventPattern),
        }),
      );
      await events.send(
        new PutTargetsCommand({
          Rule: id,
          EventBusName,
          Targets: targets.map((target, i) => wholeEventTarget(resolver.arnOf(target!), `t${i}`)),
        }),
      );
    }
  });

  after(async () => {
    await Promise.allSettled(Object.values(functions).map((fn) => fn.stop()));
    const figures = Object.values(functions).map((fn) => `${fn.name}: ${fn.initDurations().join(', ')} ms`);
    if (figures.length > 0) log(`Init Duration (INIT REPORT) — ${figures.join('; ')}`);
    for (const [name, calls] of Object.entries(awsCalls))
      log(`${name} AWS calls: ${[...new Set(calls.map(described))].sort().join(', ')}`);
    await emulators?.stop();
    await stopReceiver?.();
    await signer?.stop();
    for (const path of [directory, emulators?.directory])
      if (path) rmSync(path, { recursive: true, force: true });
  });

  it('a trivial handler runs there too (the floor under every cold start), with only /tmp writable', async () => {
    const asset = join(directory, 'trivial');
    mkdirSync(asset);
    writeFileSync(
      join(asset, 'index.mjs'),
      [
        "import { writeFileSync } from 'node:fs';",
        'const writable = (path) => { try { writeFileSync(path, "x"); return true; } catch { return false; } };',
        "export const handler = async () => ({ task: writable('/var/task/x'), tmp: writable('/tmp/x') });",
      ].join('\n'),
    );
    const trivial = await startFunction(
      { name: 'Trivial', asset, handler: 'index.handler', environment: {}, memorySize: 128, timeout: 10 },
      log,
    );
    functions.Trivial = trivial;
    const answer = await trivial.invoke({});
    assert.deepEqual(answer.body, { task: false, tmp: true }, trivial.lines.join('\n'));
    assert.equal(trivial.initDurations().length, 1, 'one cold start, reported by the emulator');
  });

  it('the scope enumerator, invoked by the schedule, fans out one message per configured scope', async () => {
    const enumerator = await start('CpsyncScopeEnumerator');
    const answer = await invoke(enumerator, {
      executionId: 'exec-lambda-1',
      scheduledTime: '2026-11-24T00:00:00Z',
    });
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    assert.deepEqual(
      answer.body,
      { syncId: 'exec-lambda-1', scopes: 4, orphans: 0 },
      enumerator.lines.join('\n'),
    );
    const queue = Object.entries(resources).find(
      ([id, r]) => r.Type === 'AWS::SQS::Queue' && id.startsWith('CpsyncScopes'),
    )![0];
    scopeMessages = await drainMessages<ScopeMessage>(refs[queue]!);
    assert.deepEqual(scopeMessages.map((m) => m.scope.provider).sort(), ['aks', 'eks', 'eks', 'gke']);
    assert.ok(scopeMessages.every((m) => m.syncId === 'exec-lambda-1'));
    assert.equal(enumerator.initDurations().length, 1, 'one cold start');
  });

  it('the scope worker syncs each scope the enumerator sent, a message per invocation as SQS hands them over, and logs a poison message at INFO with its reason', async () => {
    assert.equal(scopeMessages.length, 4, 'the enumerator case ran first');
    // Two clusters, one per EKS scope, tagged to be projected where the consumer `deployer` reads.
    const credentials = await accountCredentials(emulators.moto.endpoint, EKS_ACCOUNT);
    for (const [region, name] of [
      ['us-east-1', 'checkout'],
      ['eu-west-1', 'payments'],
    ] as const) {
      const eks = new EKSClient({ endpoint: emulators.moto.endpoint, credentials, region });
      await eks.send(
        new TagResourceCommand({
          resourceArn: `arn:aws:eks:${region}:${EKS_ACCOUNT}:cluster/${name}`,
          tags: { access: 'deploy' },
        }),
      );
      eks.destroy();
    }
    const worker = await start('CpsyncScopeWorker');
    for (const [i, message] of scopeMessages.entries()) {
      const answer = await invoke(worker, { Records: [sqsRecord(`w-${i}`, JSON.stringify(message))] });
      assert.equal(answer.status, 200, JSON.stringify(answer.body));
      assert.deepEqual(answer.body, { batchItemFailures: [] }, worker.lines.join('\n'));
    }
    assert.deepEqual(await profileNames(), [
      'analytics',
      'batch',
      'checkout',
      'edge',
      'payments',
      'payments',
      'web',
    ]);
    // A message no enumerator sent: the invocation fails (its only message failed), logged at INFO.
    const poison = await invoke(worker, {
      Records: [sqsRecord('w-poison', '{"syncId": "s1", "scope": {"provider": "openstack"}}')],
    });
    assert.equal((poison.body as { errorType?: string }).errorType, 'FullBatchFailureError');
    const refused = worker.lines
      .filter((line) => line.includes('"messageId":"w-poison"'))
      .map((line) => JSON.parse(line.slice(line.indexOf('{'))) as Record<string, string>);
    assert.deepEqual(
      refused.map((line) => [line.level, line.message]),
      [['INFO', 'message refused: malformed']],
      worker.lines.join('\n'),
    );
    assert.match(refused[0]!.reason!, /body\.scope\.provider: Invalid option/);

    // Every scope is a sync of its own, and each carries the run's id.
    const events = await drainQueue(eventsQueue);
    assert.deepEqual(
      [...new Set(events.map((e) => e.detail.syncId as string))].sort(),
      scopeMessages
        .map((m) => `exec-lambda-1/${m.scope.provider}/${m.scope.account}/${m.scope.region}`)
        .sort(),
    );
    assert.ok(events.every((e) => e.detail.runId === 'exec-lambda-1'));
    const created = events.filter((e) => e['detail-type'] === 'ClusterProfile Created');
    assert.equal(created.length, 9, 'one Created event per profile, the two projected copies included');
    assert.equal(events.filter((e) => e['detail-type'] === 'Consumer Access Granted').length, 2);
    // What the chat notifier's subscription delivered to its queue: the run's creations.
    runForChat = await drainMessages<ReceivedEvent>(refs[chatQueue()]!);
    assert.equal(runForChat.length, 9);
  });

  it('the EKS event handler syncs the cluster a CloudTrail CreateCluster event names', async () => {
    const handler = await start('CpsyncEksEventHandler');
    await createEksClusters(emulators.moto.endpoint, EKS_ACCOUNT, 'us-east-1', [{ name: 'orders' }]);
    const answer = await invoke(
      handler,
      cloudTrailEvent('CreateCluster', EKS_ACCOUNT, 'us-east-1', { name: 'orders' }),
    );
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    assert.equal((answer.body as { result: string }).result, 'created', handler.lines.join('\n'));
    assert.ok((await profileNames()).includes('orders'));
    const events = await drainQueue(eventsQueue);
    assert.deepEqual(
      events.map((e) => [e['detail-type'], (e.detail.cluster as { displayName: string }).displayName]),
      [['ClusterProfile Created', 'orders']],
    );
    ordersCreated = events[0];
  });

  it('the webhook answers an Event Grid delivery through the Function URL and syncs the AKS cluster it names', async () => {
    const webhook = await start('CpsyncWebhook');
    const key = Object.entries(refs).find(([id]) => id.startsWith('CpsyncAzureWebhookKey'))!;
    const subject = `/subscriptions/${AZURE_SUBSCRIPTION}/resourceGroups/rg-web/providers/Microsoft.ContainerService/managedClusters/web`;
    const aks = emulators.arm.clusters.get(AZURE_SUBSCRIPTION)!;
    const web = aks.find((c) => c.name === 'web')!;
    (web.properties as Record<string, unknown>).currentKubernetesVersion = '1.31.2';
    const answer = await invoke(
      webhook,
      functionUrlRequest(
        '/azure',
        [
          {
            id: 'eg-lambda-1',
            eventType: 'Microsoft.Resources.ResourceWriteSuccess',
            subject,
            eventTime: '2026-11-24T00:00:00Z',
            dataVersion: '2',
            data: {
              resourceUri: subject,
              operationName: 'Microsoft.ContainerService/managedClusters/write',
              status: 'Succeeded',
              subscriptionId: AZURE_SUBSCRIPTION,
            },
          },
        ],
        {},
        { key: `generated-${key[0]}` },
      ),
    );
    assert.equal(answer.status, 200, webhook.lines.join('\n'));
    const response = answer.body as { statusCode: number; body: string };
    assert.equal(response.statusCode, 200, JSON.stringify(response));
    assert.deepEqual(JSON.parse(response.body), {
      synced: { [`${AZURE_SUBSCRIPTION}/rg-web/web`]: 'updated' },
      ignored: 0,
    });
    const events = await drainQueue(eventsQueue);
    assert.deepEqual(
      events.map((e) => [e['detail-type'], e.detail.changedFields]),
      [['ClusterProfile Updated', ['status.version.kubernetes']]],
    );
  });

  it('the webhook answers a Pub/Sub push through the Function URL and syncs the GKE cluster its audit entry names', async () => {
    const webhook = functions.CpsyncWebhook ?? (await start('CpsyncWebhook'));
    emulators.gke.clusters.set(GCP_PROJECT, [
      ...emulators.gke.clusters.get(GCP_PROJECT)!,
      gkeCluster('ml', 'us-central1'),
    ]);
    const name = `projects/${GCP_PROJECT}/locations/us-central1/clusters/ml`;
    const body = pubSubPush(
      gkeAuditEntry(GCP_PROJECT, 'google.container.v1.ClusterManager.CreateCluster', name),
      'ps-lambda-1',
    );
    const answer = await invoke(
      webhook,
      functionUrlRequest('/gcp', body, { authorization: `Bearer ${await signer.sign()}` }),
    );
    assert.equal(answer.status, 200, webhook.lines.join('\n'));
    const response = answer.body as { statusCode: number; body: string };
    assert.equal(response.statusCode, 200, JSON.stringify(response));
    assert.deepEqual(JSON.parse(response.body).synced, { [`${GCP_PROJECT}/us-central1/ml`]: 'created' });
    const events = await drainQueue(eventsQueue);
    assert.deepEqual(
      events.map((e) => [e['detail-type'], (e.detail.cluster as { displayName: string }).displayName]),
      [['ClusterProfile Created', 'ml']],
    );
    // A push without Google's signature is refused, and syncs nothing.
    const unsigned = await invoke(webhook, functionUrlRequest('/gcp', body));
    assert.equal((unsigned.body as { statusCode: number }).statusCode, 401);
  });

  it('clusters found in change are followed until they settle: delayed looks by the follow-up function, one chase per cluster, a redelivered look harmless, the consumer granted by the look that finds its cluster ready', async () => {
    const { state } = await estate;
    const hub = adminKubeConfig(state).makeApiClient(CustomObjectsApi);
    const profile = async (display: string) => {
      const list = (await hub.listNamespacedCustomObject({
        group: 'multicluster.x-k8s.io',
        version: 'v1alpha1',
        namespace,
        plural: 'clusterprofiles',
      })) as {
        items: Array<{
          spec: { displayName: string };
          status?: { conditions?: Array<{ type: string; status: string }>; accessProviders?: unknown[] };
        }>;
      };
      return list.items.find((p) => p.spec.displayName === display);
    };
    const healthy = async (display: string) =>
      (await profile(display))?.status?.conditions?.find((c) => c.type === 'ControlPlaneHealthy')?.status;
    const queue = Object.entries(resources).find(
      ([id, r]) => r.Type === 'AWS::SQS::Queue' && id.startsWith('CpsyncFollow') && !id.includes('Dead'),
    )![0];
    type Look = { chaseId: string; attempt: number; ref: { name: string }; delaySeconds: number };
    /**
     * Waits, as long as it takes, until SQS has handed over `count` looks (each once its delay has passed; that a look
     * is sent with its delay is shown in chases.test.ts), with any others then in the queue.
     */
    const looksHandedOver = (count: number) => messagesHandedOver<Look>(refs[queue]!, count);
    /** The looks SQS hands over once the longest delay a look is sent with here (2 s) has passed. */
    const looksPastLongestDelay = async () => {
      await new Promise((r) => setTimeout(r, 2500));
      return drainMessages<Look>(refs[queue]!);
    };

    // An EKS cluster being created (no endpoint, no CA yet), and a GKE one. The EKS one is projected where the
    // consumer `deployer` reads (tagged access=deploy): the accessGrants feature grants it once it is ready.
    await createEksClusters(emulators.moto.endpoint, EKS_ACCOUNT, 'us-east-1', [
      { name: 'queued', tags: { access: 'deploy' } },
    ]);
    const eks = holdTransition(emulators, 'eks', 'queued', 'creating');
    emulators.gke.clusters.set(GCP_PROJECT, [
      ...emulators.gke.clusters.get(GCP_PROJECT)!,
      gkeCluster('warming', 'us-central1'),
    ]);
    const gke = holdTransition(emulators, 'gke', 'warming', 'creating');
    // And an AKS cluster being upgraded.
    const aks = holdTransition(emulators, 'aks', 'web', 'updating');
    const handler = functions.CpsyncEksEventHandler ?? (await start('CpsyncEksEventHandler'));
    const webhook = functions.CpsyncWebhook ?? (await start('CpsyncWebhook'));
    const created = await invoke(
      handler,
      cloudTrailEvent('CreateCluster', EKS_ACCOUNT, 'us-east-1', { name: 'queued' }),
    );
    assert.deepEqual(
      [(created.body as { result: string }).result, (created.body as { followed: string }).followed],
      ['created', 'started'],
      handler.lines.join('\n'),
    );
    // A second event for the same cluster during the chase joins it: no second chase.
    const tagged = await invoke(
      handler,
      cloudTrailEvent('TagResource', EKS_ACCOUNT, 'us-east-1', {
        resourceArn: `arn:aws:eks:us-east-1:${EKS_ACCOUNT}:cluster/queued`,
      }),
    );
    assert.equal((tagged.body as { followed: string }).followed, 'joined', handler.lines.join('\n'));
    const pushed = await invoke(webhook, await gkePush('CreateCluster', 'warming', 'ps-lambda-warming'));
    assert.equal((pushed.body as { statusCode: number }).statusCode, 200, webhook.lines.join('\n'));
    const webSubject = `/subscriptions/${AZURE_SUBSCRIPTION}/resourceGroups/rg-web/providers/Microsoft.ContainerService/managedClusters/web`;
    const key = Object.entries(refs).find(([id]) => id.startsWith('CpsyncAzureWebhookKey'))!;
    const upgrading = await invoke(
      webhook,
      functionUrlRequest(
        '/azure',
        [
          {
            id: 'eg-lambda-upgrade',
            eventType: 'Microsoft.Resources.ResourceWriteSuccess',
            subject: webSubject,
            data: {
              resourceUri: webSubject,
              operationName: 'Microsoft.ContainerService/managedClusters/write',
            },
          },
        ],
        {},
        { key: `generated-${key[0]}` },
      ),
    );
    assert.equal((upgrading.body as { statusCode: number }).statusCode, 200, webhook.lines.join('\n'));
    assert.equal(await healthy('queued'), 'Unknown', 'written at once, not yet usable');
    assert.equal(await healthy('warming'), 'Unknown');

    const first = await looksHandedOver(3);
    assert.deepEqual(
      first.map((look) => [look.ref.name, look.attempt, look.delaySeconds]).sort(),
      [
        // EKS's from its look schedule: far from the typical creation, the cap.
        ['queued', 1, 2],
        ['warming', 1, 1],
        ['web', 1, 1],
      ],
      'one first look per cluster, the joined event sending none',
    );
    const followUp = await start('CpsyncFollowUp');
    const records = (looks: Look[], tag: string) =>
      looks.map((look, i) => sqsRecord(`${tag}-${i}`, JSON.stringify(look)));
    const stillCreating = await invoke(followUp, { Records: records(first, 'look1') });
    assert.deepEqual(stillCreating.body, { batchItemFailures: [] }, followUp.lines.join('\n'));
    // SQS hands a message over again (at-least-once): the look is answered from its record, nothing sent twice.
    const again = await invoke(followUp, { Records: records(first, 'look1-again') });
    assert.deepEqual(again.body, { batchItemFailures: [] }, followUp.lines.join('\n'));
    const second = await looksHandedOver(3);
    assert.deepEqual(
      second.map((look) => [look.ref.name, look.attempt, look.delaySeconds]).sort(),
      [
        ['queued', 2, 2],
        ['warming', 2, 2],
        ['web', 2, 2],
      ],
      'the next look of each, its delay doubled to the cap, once',
    );
    assert.deepEqual(
      (await drainQueue(eventsQueue))
        .filter((e) => e['detail-type'] !== 'ClusterProfile Created')
        .map((e) => [e['detail-type'], (e.detail.cluster as { displayName: string }).displayName]),
      [['ClusterProfile Updated', 'web']],
      'nothing to announce about the clusters in change but their creation, and the upgrade seen',
    );

    // Ready: the next look makes the profiles usable and ends the chases.
    eks.settle();
    gke.settle();
    aks.settle();
    assert.equal(
      accessEntries.of('us-east-1', 'queued').size,
      0,
      'no grant on a cluster still being created',
    );
    const ready = await invoke(followUp, { Records: records(second, 'look2') });
    assert.deepEqual(ready.body, { batchItemFailures: [] }, followUp.lines.join('\n'));
    assert.equal(await healthy('queued'), 'True');
    assert.equal(await healthy('warming'), 'True');
    const updated = await drainQueue(eventsQueue);
    // The look that found it ready granted the consumer (its profile and the consumer's copy updated).
    assert.deepEqual(
      updated
        .map((e) => [e['detail-type'], (e.detail.cluster as { displayName: string }).displayName])
        .filter(([, name]) => name !== 'web')
        .sort(),
      [
        ['ClusterProfile Updated', 'queued'],
        ['ClusterProfile Updated', 'queued'],
        ['ClusterProfile Updated', 'warming'],
        ['Consumer Access Granted', 'queued'],
      ],
    );
    assert.deepEqual(
      accessEntries.of('us-east-1', 'queued').get(DEPLOYER)?.tags,
      { 'app.kubernetes.io/managed-by': 'cpsync', 'cpsync.io/consumer': 'deployer' },
      "an access entry tagged as cpsync's",
    );
    assert.equal(await healthy('web'), 'True');
    assert.deepEqual(await looksPastLongestDelay(), [], 'no look after the chase ended');

    // Deleted: DELETING is no reason to delete; gone, the follow-up deletes the profile at once, with one event.
    const deleting = holdTransition(emulators, 'eks', 'queued', 'deleting');
    const deleteCall = await invoke(
      handler,
      cloudTrailEvent('DeleteCluster', EKS_ACCOUNT, 'us-east-1', { name: 'queued' }),
    );
    assert.equal((deleteCall.body as { followed: string }).followed, 'started', handler.lines.join('\n'));
    assert.ok(await profile('queued'), 'kept while DELETING');
    // EKS's look schedule: far from the typical deletion, the cap (2 s here).
    const deleteLook = await looksHandedOver(1);
    // EKS throttles that look: it is tried again on the chase's schedule, and nothing is deleted.
    const throttle = emulators.proxy.intercept((call) =>
      call.service === 'eks' && call.path.startsWith('/clusters/queued')
        ? {
            status: 429,
            headers: { 'x-amzn-errortype': 'ThrottlingException' },
            body: JSON.stringify({ message: 'Rate exceeded' }),
          }
        : undefined,
    );
    try {
      const throttled = await invoke(followUp, { Records: records(deleteLook, 'look-throttled') });
      assert.deepEqual(throttled.body, { batchItemFailures: [] }, followUp.lines.join('\n'));
    } finally {
      throttle();
    }
    assert.ok(await profile('queued'), 'kept when the look was throttled');
    const look = await looksHandedOver(1);
    assert.deepEqual(
      look.map((l) => [l.ref.name, l.attempt]),
      [['queued', 2]],
      'looked at again',
    );
    await deleting.settle();
    const gone = await invoke(followUp, { Records: records(look, 'look-gone') });
    assert.deepEqual(gone.body, { batchItemFailures: [] }, followUp.lines.join('\n'));
    assert.equal(await profile('queued'), undefined);
    // A late copy of the last look finds the chase over: nothing is done.
    await invoke(followUp, { Records: records(look, 'look-gone-late') });
    const deleted = (await drainQueue(eventsQueue)).filter(
      (e) => e['detail-type'] === 'ClusterProfile Deleted',
    );
    assert.equal(deleted.length, 2, 'exactly one Deleted event per profile (its own, the consumer’s copy)');
    assert.deepEqual(await looksPastLongestDelay(), []);
    // The estate as it was, for the cases after this one.
    emulators.gke.clusters.set(
      GCP_PROJECT,
      emulators.gke.clusters.get(GCP_PROJECT)!.filter((c) => c.name !== 'warming'),
    );
    await invoke(webhook, await gkePush('DeleteCluster', 'warming', 'ps-lambda-warming-gone'));
    await drainQueue(eventsQueue);
  });

  it('the Argo CD subscriber turns the event the bus delivered into a cluster Secret, and reconciles the rest from the hub', async () => {
    assert.ok(ordersCreated, 'the EKS handler case ran first');
    const { state } = await estate;
    const core = adminKubeConfig(state).makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: argoNamespace } } });
    // The hub's admission policy in force, cpsync's identity the one the functions write the hub as here (the
    // admin): the subscriber acts only on profiles no one else can have written.
    const policy = await installAdmissionPolicy(adminKubeConfig(state), EVERYWHERE_FOR_ADMIN);
    // The subscriber reaches the hub as its own user, bound by the RBAC and Secrets policy `cpsync consumers
    // argocd-subscriber` prints for this configuration, and nothing more.
    const setup = consumerSetup(deployed, { kind: 'argocd-subscriber', argocdNamespace: argoNamespace });
    assert.equal(subscriberUser(deployed), ARGOCD_USER);
    const removeRbac = await ensureShippedRbac(adminKubeConfig(state), [
      'ClusterRole/cpsync:admission-policy',
    ]);
    const removePrinted = await applyPrinted(
      adminKubeConfig(state),
      setup.rbac!.map((m) => JSON.stringify(m)).join('\n---\n'),
    );
    try {
      const subscriber = await start('ArgoCd');
      const answer = await invoke(subscriber, ordersCreated);
      assert.equal(answer.status, 200, subscriber.lines.join('\n'));
      assert.deepEqual(answer.body, { outcome: 'created' }, subscriber.lines.join('\n'));
      const secrets = async () =>
        (
          await core.listNamespacedSecret({
            namespace: argoNamespace,
            labelSelector: 'argocd.argoproj.io/secret-type=cluster',
          })
        ).items.map((secret) => Buffer.from(secret.data!.name!, 'base64').toString('utf8'));
      assert.equal((await secrets()).length, 1);
      const reconciled = await invoke(subscriber, { reconcile: true });
      assert.equal(reconciled.status, 200, subscriber.lines.join('\n'));
      assert.equal((await secrets()).length, (await profileNames()).length, 'a Secret per profile');
    } finally {
      await removePrinted();
      await removeRbac();
      await policy.remove();
    }
  });

  it('the chat notifier posts one message for the scheduled run (every scope of it, each cluster once whatever its projections) and one for another sync, from what its subscription delivered, a hostile cluster’s strings shown as text', async () => {
    assert.equal(runForChat.length, 9, 'the scope worker case ran first');
    // What the subscription delivered since, of other cases' syncs, is let go.
    await drainMessages(refs[chatQueue()]!);
    // A cluster whose cloud says hostile things, created in the local estate and synced by the webhook.
    const hostile =
      '1.31 <!channel> <https://evil.example|x> [y](https://evil.example) **b**\n• forged\u202e';
    emulators.gke.clusters.set(GCP_PROJECT, [
      ...emulators.gke.clusters.get(GCP_PROJECT)!,
      gkeCluster('odd', 'us-central1', { currentMasterVersion: hostile }),
    ]);
    const webhook = functions.CpsyncWebhook ?? (await start('CpsyncWebhook'));
    const push = pubSubPush(
      gkeAuditEntry(
        GCP_PROJECT,
        'google.container.v1.ClusterManager.CreateCluster',
        `projects/${GCP_PROJECT}/locations/us-central1/clusters/odd`,
      ),
      'ps-lambda-odd',
    );
    const synced = await invoke(
      webhook,
      functionUrlRequest('/gcp', push, { authorization: `Bearer ${await signer.sign()}` }),
    );
    assert.equal((synced.body as { statusCode: number }).statusCode, 200, webhook.lines.join('\n'));
    const odd = await drainMessages<ReceivedEvent>(refs[chatQueue()]!);
    // The same event, as every subscriber of the bus got it (the test's own rule): taken too.
    assert.equal((await drainQueue(eventsQueue)).length, 1);
    assert.deepEqual(
      odd.map((e) => [e['detail-type'], (e.detail.cluster as { displayName: string }).displayName]),
      [['ClusterProfile Created', 'odd']],
    );
    const notifier = await start('ChatFunction');
    const answer = await invoke(notifier, {
      Records: [...runForChat, ...odd].map((event, i) => sqsRecord(`chat-${i}`, JSON.stringify(event))),
    });
    assert.equal(answer.status, 200, notifier.lines.join('\n'));
    assert.deepEqual(answer.body, { batchItemFailures: [] }, notifier.lines.join('\n'));
    assert.equal(chatPosts.length, 0, 'each sync is gathered until it has been quiet');
    // Its flushes, sent to its own queue delayed by the quiet time (the SendMessage calls the proxy saw), taken as
    // SQS hands every one over.
    const sent = emulators.proxy.calls.filter((call) => call.operation === 'AmazonSQS.SendMessage').length;
    assert.ok(sent > 0, 'flushes were sent');
    const flushes = await messagesHandedOver<unknown>(refs[chatQueue()]!, sent);
    assert.equal(flushes.length, sent, 'every flush sent, and nothing else');
    const flushed = await invoke(notifier, {
      Records: flushes.map((body, i) => sqsRecord(`flush-${i}`, JSON.stringify(body))),
    });
    assert.deepEqual(flushed.body, { batchItemFailures: [] }, notifier.lines.join('\n'));
    // The run's four scopes are one message; the webhook's sync one more.
    assert.equal(chatPosts.length, 2, 'one message per run');
    const runPost = JSON.parse(chatPosts.find((post) => post.includes('exec-lambda-1'))!) as {
      text: string;
      blocks: Array<{ type: string }>;
    };
    assert.equal(
      runPost.text,
      'cpsync: 7 clusters created',
      'each cluster once, its projected copy not again',
    );
    const listed = JSON.stringify(runPost.blocks.filter((b) => b.type === 'rich_text'));
    for (const [name, times] of [
      ['analytics', 1],
      ['batch', 1],
      ['checkout', 1],
      ['edge', 1],
      ['payments', 2],
      ['web', 1],
    ] as const)
      assert.equal(listed.split(`"text":"${name}"`).length - 1, times, `${name} listed ${times} time(s)`);
    // The hostile version is in a rich-text element, as text: its newline and override shown, not acted on.
    const oddPost = chatPosts.find((post) => post.includes('odd'))!;
    const texts = JSON.stringify(
      JSON.parse(oddPost).blocks.filter((b: { type: string }) => b.type === 'rich_text'),
    );
    assert.ok(
      texts.includes(
        '1.31 <!channel> <https://evil.example|x> [y](https://evil.example) **b**\\\\u{a}• forged\\\\u{202e}',
      ),
      oddPost,
    );
    assert.ok(!/[\u202e]|\\n• forged/.test(oddPost), 'no override or forged line in the message');
    assert.equal(
      JSON.parse(oddPost).blocks.filter(
        (b: { type: string; text?: { type: string } }) => b.text?.type === 'mrkdwn',
      ).length,
      0,
      'no mrkdwn anywhere',
    );
  });

  it('cpsync doctor --function runs the checks in the deployed scope worker, with its role, and names what fails', async () => {
    const worker = functions.CpsyncScopeWorker!;
    assert.ok(worker, 'the scope worker case ran first');
    // As `cpsync doctor --function <DoctorFunction output>` reaches Lambda; here the emulator answers.
    const env = {
      AWS_ACCESS_KEY_ID: HUB_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: HUB_CREDENTIALS.secretAccessKey,
      AWS_REGION: 'us-east-1',
      AWS_ENDPOINT_URL_LAMBDA: worker.endpoint,
      AWS_EC2_METADATA_DISABLED: 'true',
    };
    const record = async (run: Promise<CliRun>) => {
      emulators.proxy.clear();
      const result = await run;
      (awsCalls[worker.name] ??= []).push(...emulators.proxy.calls);
      return result;
    };
    // The hub's admission policy in force in every namespace, for the identity the functions write the hub as here
    // (the admin): the doctor says so of each inventory namespace.
    const policy = await installAdmissionPolicy(adminKubeConfig((await estate).state), EVERYWHERE_FOR_ADMIN);
    try {
      const healthy = await record(runCli(['doctor', '--function', 'function'], { env }));
      assert.equal(healthy.code, 0, healthy.stdout + healthy.stderr);
      const lines = healthy.stdout.trim().split('\n');
      assert.deepEqual(
        lines
          .slice(0, -1)
          .map((line) => line.split(': ')[0])
          .sort(),
        [
          `✔ hub ${namespace}`,
          // The namespace clusters tagged access=deploy are projected into.
          `✔ hub ${deployNamespace}`,
          '✔ admission policy cpsync-clusterprofiles',
          '✔ bus',
          '✔ outbox',
          `✔ scope aks/${AZURE_SUBSCRIPTION}/*`,
          `✔ scope eks/${EKS_ACCOUNT}/eu-west-1`,
          `✔ scope eks/${EKS_ACCOUNT}/us-east-1`,
          `✔ scope gke/${GCP_PROJECT}/*`,
        ].sort(),
        healthy.stdout,
      );
      assert.match(lines[0]!, /every write cpsync makes is allowed/);
      assert.match(lines[1]!, /every write cpsync makes is allowed/);
      assert.match(lines[2]!, /^✔ admission policy cpsync-clusterprofiles: in force/);
      assert.match(lines[3]!, /EventBridge bus cpsync/);
      assert.equal(lines.at(-1), 'cpsync doctor: all 9 checks passed in function');

      // EKS refuses the member role's listing in one region: that scope fails, by name; the rest pass.
      const refuse = emulators.proxy.intercept((call) =>
        call.service === 'eks' && call.region === 'eu-west-1' && call.path.split('?')[0] === '/clusters'
          ? {
              status: 403,
              headers: { 'x-amzn-errortype': 'AccessDeniedException' },
              body: JSON.stringify({ message: 'not authorized to perform: eks:ListClusters' }),
            }
          : undefined,
      );
      try {
        const refused = await record(runCli(['doctor', '--function', 'function'], { env }));
        assert.equal(refused.code, 1, refused.stdout + refused.stderr);
        const failed = refused.stdout.split('\n').filter((line) => line.startsWith('✖'));
        assert.equal(failed.length, 1, refused.stdout);
        assert.match(failed[0]!, new RegExp(`^✖ scope eks/${EKS_ACCOUNT}/eu-west-1: .*eks:ListClusters`));
        assert.match(refused.stdout, /cpsync doctor: 1 of 9 checks failed/);
      } finally {
        refuse();
      }

      // With the Argo CD subscriber writing on the hub in the configuration the command runs with, the worker (told
      // of no subscriber) is sent Argo CD's namespace and asks the hub what its own identity may do to Secrets there:
      // the identity the functions write the hub as here is the admin, which reaches every Secret.
      const withArgoCd = join(directory, 'doctor-argocd.yaml');
      const argoNamespace = 'argo-doctor';
      writeFileSync(
        withArgoCd,
        JSON.stringify({
          ...(parse(readFileSync(emulators.configPath, 'utf8')) as object),
          subscribers: { argocd: { namespace: argoNamespace } },
        }),
      );
      const secrets = await record(runCli(['doctor', '--function', 'function', '-c', withArgoCd], { env }));
      assert.equal(secrets.code, 1, secrets.stdout + secrets.stderr);
      const failedLines = secrets.stdout.split('\n').filter((line) => line.startsWith('✖'));
      assert.deepEqual(
        failedLines.map((line) => line.split(': ')[0]),
        [`✖ hub secrets ${argoNamespace}`],
        secrets.stdout,
      );
      assert.match(
        failedLines[0]!,
        new RegExp(
          `cpsync's identity may get, list, watch, create, update, patch, delete Secrets in ${argoNamespace}, where Argo CD reads its clusters: it needs none`,
        ),
      );
      assert.match(secrets.stdout, /cpsync doctor: 1 of 10 checks failed/);

      // Argo CD on a cluster of its own: nothing is asked of the hub's Secrets.
      writeFileSync(
        withArgoCd,
        JSON.stringify({
          ...(parse(readFileSync(emulators.configPath, 'utf8')) as object),
          subscribers: {
            argocd: {
              namespace: argoNamespace,
              kubeconfigSecretArn:
                'arn:aws:secretsmanager:us-east-1:111122223333:secret:argocd-cluster-AbCdEf',
            },
          },
        }),
      );
      const elsewhere = await record(runCli(['doctor', '--function', 'function', '-c', withArgoCd], { env }));
      assert.equal(elsewhere.code, 0, elsewhere.stdout + elsewhere.stderr);
      assert.equal(
        elsewhere.stdout.trim().split('\n').at(-1),
        'cpsync doctor: all 9 checks passed in function',
      );

      // A request the CLI never sends, made by hand: refused, naming what is wrong, with no report.
      const lambda = new LambdaClient({
        region: 'us-east-1',
        endpoint: worker.endpoint,
        credentials: HUB_CREDENTIALS,
      });
      for (const [payload, wrong] of [
        [{ doctor: true, argocdNamespace: 'Argo_CD' }, /argocdNamespace: must be a DNS-1123 label/],
        [{ doctor: true, namespace: 'argocd' }, /Unrecognized key: "namespace"/],
      ] as const) {
        const answer = await lambda.send(
          new InvokeCommand({ FunctionName: 'function', Payload: JSON.stringify(payload) }),
        );
        // The function's error as the runtime hands it back (the emulator does not set FunctionError, as Lambda does).
        const error = JSON.parse(new TextDecoder().decode(answer.Payload)) as { errorMessage: string };
        assert.match(error.errorMessage, /^not a doctor request: /);
        assert.match(error.errorMessage, wrong);
      }
    } finally {
      await policy.remove();
    }
  });

  it('cpsync doctor runs the same checks on this machine, with its configuration and credentials', async () => {
    const policy = await installAdmissionPolicy(adminKubeConfig((await estate).state), EVERYWHERE_FOR_ADMIN);
    const local = await runCli(['doctor', '-c', emulators.configPath, '-o', 'json'], {
      env: { ...emulators.env, AWS_EC2_METADATA_DISABLED: 'true' },
    }).finally(() => policy.remove());
    assert.equal(local.code, 0, local.stdout + local.stderr);
    const report = JSON.parse(local.stdout) as {
      ok: boolean;
      checks: Array<{ subject: string; ok: boolean }>;
    };
    assert.equal(report.ok, true);
    assert.deepEqual(
      report.checks.map((c) => c.subject).filter((s) => s.startsWith('scope ')).length,
      4,
      'every configured scope listed',
    );
  });

  it("the EKS event handler grants the consumer bound to the namespace a new cluster is projected into: an access entry tagged as cpsync's, its event on the bus", async () => {
    const handler = await start('CpsyncEksEventHandler');
    await createEksClusters(emulators.moto.endpoint, EKS_ACCOUNT, 'us-east-1', [
      { name: 'deploy-target', tags: { access: 'deploy' } },
    ]);
    const answer = await invoke(
      handler,
      cloudTrailEvent('CreateCluster', EKS_ACCOUNT, 'us-east-1', { name: 'deploy-target' }),
    );
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    const events = await drainQueue(eventsQueue);
    assert.deepEqual(
      events
        .map(
          (e) => `${e['detail-type']} ${(e.detail as { namespace?: string }).namespace ?? e.detail.consumer}`,
        )
        .sort(),
      [
        `ClusterProfile Created ${deployNamespace}`,
        `ClusterProfile Created ${namespace}`,
        'Consumer Access Granted deployer',
      ].sort(),
      handler.lines.join('\n'),
    );
    const entry = accessEntries.of('us-east-1', 'deploy-target').get(DEPLOYER)!;
    assert.deepEqual(entry.tags, {
      'app.kubernetes.io/managed-by': 'cpsync',
      'cpsync.io/consumer': 'deployer',
    });
    assert.deepEqual(
      entry.policies.map((p) => p.policyArn),
      ['arn:aws:eks::aws:cluster-access-policy/AmazonEKSEditPolicy'],
    );
  });

  it('IAM allows every AWS call each function made, and every grant is used here or justified', async () => {
    const stack = templateResolver(resources, refs);
    const memberAccount = templateResolver(memberResources, {}, EKS_ACCOUNT);
    /** The member template's role whose ARN is `arn`: its logical id. */
    const memberRole = (arn: string) =>
      Object.keys(memberResources).find(
        (id) => memberResources[id]!.Type === 'AWS::IAM::Role' && memberAccount.arnOf(id) === arn,
      );
    /** The trust policy of the member role `arn` (what an AssumeRole into it is judged by). */
    const trust = (arn: string): PolicyDocument | undefined => {
      const id = memberRole(arn);
      return id
        ? (memberAccount.resolve(memberResources[id]!.Properties.AssumeRolePolicyDocument) as PolicyDocument)
        : undefined;
    };
    const failures: string[] = [];
    // The tables are made in moto under their logical ids: each one's partition key, as the template gives it.
    const partitionKeyOf = (table: string) =>
      (resources[table]?.Properties.KeySchema as KeySchemaElement[] | undefined)?.find(
        (key) => key.KeyType === 'HASH',
      )?.AttributeName;
    /** The requests each role made (a function role by logical id, a member role by ARN). */
    const made = new Map<string, IamRequest[]>();
    const roleOf = (name: string) =>
      (resources[name]!.Properties.Role as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
    for (const [name, calls] of Object.entries(awsCalls)) {
      const roleId = roleOf(name);
      for (const call of calls) {
        const assumed = assumedRoles.get(call.accessKeyId);
        let key: string;
        let requests: IamRequest[];
        let identity: ReturnType<typeof rolePolicies>;
        if (call.accessKeyId === HUB_CREDENTIALS.accessKeyId) {
          key = roleId;
          identity = rolePolicies(resources, roleId, stack.resolve);
          const session = sessionOf(resources, roleId, ACCOUNT, name);
          requests = iamRequestsOf(call, session.principal, ACCOUNT, undefined, partitionKeyOf).map(
            (request) => ({
              ...request,
              context: { ...request.context, ...session.context },
            }),
          );
        } else if (assumed && memberRole(assumed)) {
          key = assumed;
          identity = rolePolicies(memberResources, memberRole(assumed)!, memberAccount.resolve);
          const [, , , , account, resource] = assumed.split(':');
          const source = sourceIdentities.get(call.accessKeyId);
          requests = iamRequestsOf(
            call,
            `arn:aws:sts::${account}:assumed-role/${resource!.split('/').pop()}/cpsync`,
            account!,
            (cluster, principal) => accessEntries.of(call.region, cluster).get(principal)?.tags ?? {},
          ).map((request) =>
            source ? { ...request, context: { ...request.context, 'aws:SourceIdentity': source } } : request,
          );
        } else {
          failures.push(`${name}: ${described(call)} with credentials of ${assumed ?? 'no known role'}`);
          continue;
        }
        for (const request of requests) {
          const resourcePolicy =
            request.action === 'sts:AssumeRole' || request.action === 'sts:SetSourceIdentity'
              ? trust(request.resource)
              : request.action.startsWith('sqs:')
                ? resourcePolicyOf(resources, request.resource, stack.resolve)
                : undefined;
          const decision = await decide(request, identity, resourcePolicy);
          if (decision !== 'Allowed')
            failures.push(`${name}: ${request.action} on ${request.resource} is ${decision}`);
          made.set(key, [...(made.get(key) ?? []), request]);
        }
      }
    }
    assert.deepEqual(failures, [], 'every call the functions made is allowed');

    // Least privilege: every grant of the roles that made calls is used by one of them, or justified.
    const unused: string[] = [];
    const justified: string[] = [];
    const review = (who: string, key: string, policies: ReturnType<typeof rolePolicies>) => {
      for (const grant of grantsOf(policies)) {
        if ((made.get(key) ?? []).some((request) => exercises(grant, request))) continue;
        const reason = JUSTIFIED.find(
          (j) => (!j.fn || j.fn.test(who)) && j.action.test(grant.action) && j.resource.test(grant.resource),
        );
        if (reason) justified.push(`${who}: ${grant.action} on ${grant.resource} (${reason.why})`);
        else unused.push(`${who}: ${grant.action} on ${grant.resource}`);
      }
    };
    for (const name of Object.keys(awsCalls))
      review(name, roleOf(name), rolePolicies(resources, roleOf(name), stack.resolve));
    for (const [id, role] of Object.entries(memberResources).filter(([, r]) => r.Type === 'AWS::IAM::Role'))
      review(
        `member ${role.Properties.RoleName as string}`,
        memberAccount.arnOf(id),
        rolePolicies(memberResources, id, memberAccount.resolve),
      );
    for (const line of justified) log(`not exercised here, needed: ${line}`);
    assert.deepEqual(unused, [], 'no grant that nothing uses');
    assert.ok(
      made.size >= 7,
      `calls of every function and the member role were judged (${[...made.keys()].join(', ')})`,
    );
  });
});
