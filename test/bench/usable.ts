/**
 * Time to usable: clusters created in each cloud's emulator, held in their creating state for a random
 * time and then ready, later deleted (held DELETING, then gone), the clouds saying what real clouds say
 * about each operation, in the documented shapes and order, each delivered after a delay drawn from a
 * range (test/env/transitions.ts): EKS only the CloudTrail record of the call as it starts (put on moto's
 * default EventBridge bus and routed by the stack's rule pattern to a queue the EKS handler is invoked
 * from); GKE the audit entry written as the operation starts (`operation.first`) and the one written as it
 * ends (`operation.last`), pushed by Pub/Sub to the webhook; AKS Event Grid's `ResourceWriteSuccess` /
 * `ResourceDeleteSuccess` as the request is taken, and the Activity Log alert of the operation's end
 * (`Succeeded`, common alert schema) from an action group. The functions run as they are bundled
 * (`index.mjs` of each, imported in this process), the follow-up function invoked with the batches its
 * delayed SQS queue hands over, as Lambda's event source mapping does. Ready and gone are the moments the
 * emulators settle a cluster; usable and Deleted are what the hub and the bus show, seen from a process of
 * its own (test/bench/observer.ts: watches on the hub and the member, the bus's queue read as events
 * arrive). Figures per cloud; the cost per created cluster counts
 * the invocations, the looks, the cloud reads the emulators answered, and the AWS requests the proxy in
 * front of moto saw, priced at list prices.
 */
import { fileURLToPath, pathToFileURL } from 'node:url';
import { join } from 'node:path';
import { openSync, readFileSync, writeFileSync } from 'node:fs';
import { CreateTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  EventBridgeClient,
  PutEventsCommand,
  PutRuleCommand,
  PutTargetsCommand,
} from '@aws-sdk/client-eventbridge';
import {
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SQSClient,
  type Message,
} from '@aws-sdk/client-sqs';
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import type { SQSEvent } from 'aws-lambda';
import { parse } from 'yaml';
import { EKS_EVENT_NAMES } from '../../infra/Cpsync.ts';
import {
  aksCluster,
  AZURE_SUBSCRIPTION,
  EKS_ACCOUNT,
  GCP_PROJECT,
  gkeCluster,
  localGoogleFederation,
  startEmulators,
  withEksClusters,
} from '../env/emulators.ts';
import { ensureConsumerBinaries } from '../env/binaries.ts';
import { serveEksAccessEntries } from '../env/eksAccessEntries.ts';
import { startAwsProxy, type AwsProxy } from '../env/awsProxy.ts';
import { createLedgerTable } from '../env/ledgerTable.ts';
import { letCpsyncGrant, startEstateMember, type Member } from '../env/member.ts';
import { letCpsyncGrantInProject, letCpsyncSeeProject } from '../env/fakes/gkeServer.ts';
import { consumerIdentity, consumerKit } from '../support/consumerKit.ts';
import { startHub, stopHub } from '../env/hub.ts';
import { announcedTransition, type CloudEvent } from '../env/transitions.ts';
import { createClusterRecordsTable, createEksClusters, HUB_CREDENTIALS } from '../support/aws.ts';
import { functionUrlRequest, lambdaContext, startGoogleSigner, sqsRecord } from '../support/lambda.ts';
import { temporaryDirectory } from '../support/tmp.ts';
import { PRICES } from './cost.ts';
import { requestTrace } from './requestTrace.ts';
import type { Observation, ObserverSetup } from './observer.ts';

type Cloud = 'eks' | 'gke' | 'aks';
type Handler = (event: unknown, context: unknown) => Promise<unknown>;

interface Timeline {
  cloud: Cloud;
  name: string;
  readyAfterMillis: number;
  deletingMillis: number;
  createdAt?: number;
  readyAt?: number;
  usableAt?: number;
  /** The profile's name in the hub. */
  profile?: string;
  /** The consumer's object appeared in the member. */
  objectAt?: number;
  /** cpsync's grant of the consumer on this cluster reached the bus (Consumer Access Granted). */
  grantedAt?: number;
  deleteAt?: number;
  goneAt?: number;
  deletedEventAt?: number;
  profileGoneAt?: number;
}

export interface UsableOptions {
  say: (line?: string) => void;
  /** The bundle folder of a function (infra/functionCode.ts's output). */
  bundled: (name: string) => string;
  /** Clusters created in each cloud. */
  perCloud: number;
  /** Ready after a time drawn from this range (seconds). */
  readySeconds: [number, number];
  /** Held DELETING for a time drawn from this range (seconds). */
  deletingSeconds: [number, number];
  /** The creations begin over this many seconds. */
  spreadSeconds: number;
  /** How long each way of delivering takes, from the cloud's event to the function (seconds, a range). */
  deliverySeconds: Record<CloudEvent['via'], [number, number]>;
  /**
   * What answers DynamoDB: dynalite in a process of its own, or moto with the other AWS services (whose DynamoDB
   * answers take 150–200 ms at the median under this bench's load, where DynamoDB's take milliseconds).
   */
  dynamodb: 'moto' | 'dynalite';
}

const AUDIENCE = 'https://cpsync-webhook.example.com/gcp';
const PUSHER = 'pubsub-push@acme-data.iam.gserviceaccount.com';
const AZURE_KEY = 'bench-event-grid-key-0123456789';
/** The consumer's identities: cpsync grants them (the accessGrants feature). */
const CONSUMER_ROLE = `arn:aws:iam::${EKS_ACCOUNT}:role/consumer`;
const CONSUMER_GOOGLE = 'consumer@consumers.iam.gserviceaccount.com';
const CONSUMER_ENTRA = '8a6f2c1e-3b4d-4e5f-9a0b-1c2d3e4f5a6b';
/** The bench's EKS look schedule around the typical durations: the floor, and the share of the time left. */
const EKS_FLOOR_SECONDS = 3;
const EKS_TIGHTENING = 0.15;
/** The follow-up function's memory as the stack sets it (GB). */
const FOLLOW_UP_GB = 0.5;

/** A seeded random number in [0, 1) (mulberry32): the same times every run. */
function seeded(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
};
const seconds = (millis: number) => `${(millis / 1000).toFixed(1)} s`;

export async function timeToUsable(options: UsableOptions): Promise<void> {
  const { say } = options;
  const directory = temporaryDirectory('cpsync-usable-');
  const hub = await startHub(join(directory, 'hub'));
  const emulators = await startEmulators({ directory: join(directory, 'estate') });
  const signer = await startGoogleSigner(AUDIENCE, PUSHER);
  const stops: Array<() => void> = [];
  /** The EKS clusters the member stands in for (the names its tokens may be signed for). */
  const eksNames: string[] = [];
  let member: Member | undefined;
  let consumer: ReturnType<typeof spawn> | undefined;
  let observer: ChildProcess | undefined;
  let dynalite: ChildProcess | undefined;
  let dynaliteEndpoint: string | undefined;
  let dynamoProxy: AwsProxy | undefined;
  let running = true;
  try {
    // The consumer's own identity in each cloud (an assumed IAM role, a Google service account through
    // workload identity federation, an Entra application): cpsync grants it, nobody by hand.
    const identity = await consumerIdentity(emulators, {
      roleArn: CONSUMER_ROLE,
      email: CONSUMER_GOOGLE,
      objectId: CONSUMER_ENTRA,
    });
    const accessEntries = serveEksAccessEntries(emulators.proxy);
    stops.push(() => accessEntries.stop());
    const estateMember = await startEstateMember(emulators, () => eksNames, undefined, {
      accessEntries,
      secrets: identity.secrets,
      // GKE lets the consumer in only once cpsync granted its project role (container.clusters.get).
      googleProject: GCP_PROJECT,
    });
    // The project's IAM policy: cpsync's own identity sees its clusters, and may grant GKE's cluster viewer
    // role (and no other).
    letCpsyncSeeProject(emulators.gke, GCP_PROJECT);
    letCpsyncGrantInProject(emulators.gke, GCP_PROJECT);
    member = estateMember;
    const proxy = emulators.proxy.endpoint;
    Object.assign(process.env, {
      AWS_ACCESS_KEY_ID: HUB_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: HUB_CREDENTIALS.secretAccessKey,
      AWS_REGION: 'us-east-1',
      // The functions' own AWS clients (the chases' SQS and DynamoDB) reach moto through the proxy, which counts them.
      AWS_ENDPOINT_URL: proxy,
      AWS_EC2_METADATA_DISABLED: 'true',
      POWERTOOLS_METRICS_DISABLED: 'true',
      POWERTOOLS_TRACE_ENABLED: 'false',
      POWERTOOLS_LOG_LEVEL: 'ERROR',
    });
    // DynamoDB in dynalite, when asked: its own process, behind a counting proxy of its own.
    if (options.dynamodb === 'dynalite') {
      const child = fork(fileURLToPath(new URL('./dynaliteServer.ts', import.meta.url)), [], {
        stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
      });
      dynalite = child;
      const port = await new Promise<number>((resolve, reject) => {
        child.once('message', (message) => resolve((message as { port: number }).port));
        child.once('exit', (code) => reject(new Error(`dynalite exited (${code})`)));
      });
      dynaliteEndpoint = `http://127.0.0.1:${port}`;
      dynamoProxy = await startAwsProxy(dynaliteEndpoint);
      process.env.AWS_ENDPOINT_URL_DYNAMODB = dynamoProxy.endpoint;
    }
    const dynamoEndpoint = dynamoProxy?.endpoint ?? proxy;
    // The bench's own AWS calls (the clouds' events, the event source's polling) go straight to moto.
    const direct = { endpoint: emulators.moto.endpoint, region: 'us-east-1', credentials: HUB_CREDENTIALS };
    const dynamo = new DynamoDBClient({ ...direct, endpoint: dynaliteEndpoint ?? direct.endpoint });
    for (const [TableName, key] of [
      ['usable-idempotency', 'id'],
      ['usable-outbox', 'eventId'],
      ['usable-chases', 'cluster'],
    ] as const)
      await dynamo.send(
        new CreateTableCommand({
          TableName,
          BillingMode: 'PAY_PER_REQUEST',
          AttributeDefinitions: [{ AttributeName: key, AttributeType: 'S' }],
          KeySchema: [{ AttributeName: key, KeyType: 'HASH' }],
        }),
      );
    // The grants ledger, as the stack makes it: keyed by cluster, read per account through `byAccount`.
    await createLedgerTable(dynamo, 'usable-grants');
    await createClusterRecordsTable(dynamoEndpoint, 'usable-absences');
    const sqs = new SQSClient(direct);
    const queue = async (name: string) => {
      const url = (await sqs.send(new CreateQueueCommand({ QueueName: name }))).QueueUrl!;
      const arn = (
        await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }))
      ).Attributes!.QueueArn!;
      return { url, arn, viaProxy: `${proxy}${new URL(url).pathname}` };
    };
    const follow = await queue('usable-follow');
    const cloudTrail = await queue('usable-cloudtrail');
    // CloudTrail's events on the default bus, routed by the stack's own rule pattern.
    const events = new EventBridgeClient(direct);
    await events.send(
      new PutRuleCommand({
        Name: 'eks-api-calls',
        EventPattern: JSON.stringify({
          source: ['aws.eks'],
          'detail-type': ['AWS API Call via CloudTrail'],
          detail: { eventSource: ['eks.amazonaws.com'], eventName: [...EKS_EVENT_NAMES] },
        }),
      }),
    );
    await events.send(
      new PutTargetsCommand({ Rule: 'eks-api-calls', Targets: [{ Id: 'eks', Arn: cloudTrail.arn }] }),
    );

    const keyFile = join(directory, 'event-grid-key');
    writeFileSync(keyFile, AZURE_KEY);
    const document = parse(readFileSync(emulators.configPath, 'utf8')) as Record<string, unknown>;
    const providers = document.providers as { gke: Record<string, unknown> };
    const config = {
      ...document,
      // GKE members are reached with the estate's Google identity through the local STS (a service-account
      // key's tokens come from Google itself).
      providers: {
        ...providers,
        gke: {
          ...providers.gke,
          credentials: { file: localGoogleFederation(emulators.directory, emulators.gke) },
        },
      },
      features: { accessGrants: 'on' },
      consumers: [
        {
          name: 'consumer',
          namespaces: [
            (document.inventory as { namespace?: string } | undefined)?.namespace ?? 'cluster-inventory',
          ],
          level: 'edit',
          identities: {
            eks: { roleArn: CONSUMER_ROLE },
            gke: { principal: CONSUMER_GOOGLE },
            aks: { objectId: CONSUMER_ENTRA },
          },
        },
      ],
      hub: { kubeconfig: hub.kubeconfig },
      outbox: { table: 'usable-outbox', endpoint: dynamoEndpoint },
      ledger: { table: 'usable-grants', endpoint: dynamoEndpoint },
      absences: { table: 'usable-absences', endpoint: dynamoEndpoint },
      idempotency: { table: 'usable-idempotency', endpoint: dynamoEndpoint },
      webhook: {
        azure: { key: { file: keyFile } },
        gcp: { audience: AUDIENCE, serviceAccountEmail: PUSHER, jwksUri: signer.jwksUri },
      },
      // follow: the defaults, as deployed, but for EKS: its typical durations the middle of the bench's own ranges,
      // as an operator sets them to what their EKS takes, and its looks closer together around them (the bench's
      // durations spread half their length either way).
      follow: {
        eks: {
          minDelaySeconds: EKS_FLOOR_SECONDS,
          tightening: EKS_TIGHTENING,
          typicalSeconds: {
            create: Math.round((options.readySeconds[0] + options.readySeconds[1]) / 2),
            update: Math.round((options.readySeconds[0] + options.readySeconds[1]) / 2),
            delete: Math.round((options.deletingSeconds[0] + options.deletingSeconds[1]) / 2),
          },
        },
      },
    };
    Object.assign(process.env, {
      CPSYNC_CONFIG: JSON.stringify(config),
      CPSYNC_FOLLOW_QUEUE_URL: follow.viaProxy,
      CPSYNC_CHASE_TABLE: 'usable-chases',
    });
    const load = async (name: string) =>
      ((await import(pathToFileURL(join(options.bundled(name), 'index.mjs')).href)) as { handler: Handler })
        .handler;
    const handlers = {
      eks: await load('eksEvents'),
      webhook: await load('webhook'),
      followUp: await load('followUp'),
    };
    const invocations = { eks: 0, webhook: 0, followUp: 0, looks: 0 };
    /** The looks the follow-up function was handed, per cloud. */
    const looksBy: Record<Cloud, number> = { eks: 0, gke: 0, aks: 0 };
    const followMillis: number[] = [];
    const context = lambdaContext();
    // Each invocation's requests, for a closer look at where its time goes.
    const trace = requestTrace(process.env.CPSYNC_BENCH_TRACE);

    /** Lambda's SQS event source: batches of up to 10, what did not fail deleted, the rest seen again later. */
    const eventSource = (url: string, deliver: (messages: Message[]) => Promise<Set<string>>) => {
      const loop = (async () => {
        while (running) {
          const { Messages = [] } = await sqs.send(
            new ReceiveMessageCommand({
              QueueUrl: url,
              MaxNumberOfMessages: 10,
              WaitTimeSeconds: 1,
              VisibilityTimeout: 30,
            }),
          );
          if (Messages.length === 0) continue;
          const failed = await deliver(Messages).catch(() => new Set(Messages.map((m) => m.MessageId!)));
          const done = Messages.filter((m) => !failed.has(m.MessageId!));
          if (done.length > 0)
            await sqs.send(
              new DeleteMessageBatchCommand({
                QueueUrl: url,
                Entries: done.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle! })),
              }),
            );
        }
      })();
      return loop;
    };
    /** The follow-up function's batch: one invocation. */
    const followBatch = async (messages: Message[]) => {
      invocations.followUp += 1;
      invocations.looks += messages.length;
      for (const message of messages) {
        const provider = (JSON.parse(message.Body!) as { ref?: { scope?: { provider?: Cloud } } }).ref?.scope
          ?.provider;
        if (provider) looksBy[provider] += 1;
      }
      const started = performance.now();
      const event: SQSEvent = { Records: messages.map((m) => ({ ...sqsRecord(m.MessageId!, m.Body!) })) };
      const answer = (await trace.invocation('followUp', undefined, () =>
        handlers.followUp(event, context),
      )) as {
        batchItemFailures: Array<{ itemIdentifier: string }>;
      };
      followMillis.push(performance.now() - started);
      return new Set(answer.batchItemFailures.map((f) => f.itemIdentifier));
    };
    const loops = [
      // EventBridge → the EKS handler: each event its own invocation, as EventBridge invokes a function for each
      // event, at once (here through a queue, read by five pollers).
      ...Array.from({ length: 5 }, () =>
        eventSource(cloudTrail.url, async (messages) => {
          const failed = new Set<string>();
          await Promise.all(
            messages.map(async (message) => {
              invocations.eks += 1;
              try {
                // moto's delivery leaves out the event's \`account\` (the bus's account), which EventBridge always sets.
                const body = JSON.parse(message.Body!) as {
                  detail?: { requestParameters?: { name?: string } };
                };
                await trace.invocation('eks', body.detail?.requestParameters?.name, () =>
                  handlers.eks({ account: '123456789012', ...body }, context),
                );
              } catch (error) {
                failed.add(message.MessageId!);
                if (process.env.CPSYNC_BENCH_DEBUG) console.error('EKS handler failed', error, message.Body);
              }
            }),
          );
          return failed;
        }),
      ),
      // The follow-up queue → the follow-up function, a batch per invocation, five batches at a time: Lambda's SQS
      // event source starts with five concurrent invocations.
      ...Array.from({ length: 5 }, () => eventSource(follow.url, followBatch)),
    ];

    // The clusters and their times, the same every run.
    const random = seeded(20261125);
    const between = ([low, high]: [number, number]) => Math.round((low + random() * (high - low)) * 1000);
    const timelines: Timeline[] = [];
    for (let i = 0; i < options.perCloud; i++)
      for (const cloud of ['eks', 'gke', 'aks'] as const)
        timelines.push({
          cloud,
          name: `usable-${cloud}-${i}`,
          readyAfterMillis: between(options.readySeconds),
          deletingMillis: between(options.deletingSeconds),
        });
    const byName = new Map(timelines.map((t) => [t.name, t]));

    const namespace =
      (document.inventory as { namespace?: string } | undefined)?.namespace ?? 'cluster-inventory';
    const wrongful: Record<Cloud, number> = { eks: 0, gke: 0, aks: 0 };

    // The consumer: multicluster-runtime's cluster-inventory-api provider, built as the consumer test builds
    // it, engaging the inventory's members through \`cpsync credentials\` and creating a ConfigMap in each.
    // Nobody grants it anything by hand: the accessGrants feature does (an access entry per EKS cluster, a
    // binding on the member for GKE and AKS). The member gives cpsync's own identities what the README asks
    // of members (adapters/member/manifests/access-grants-rbac.yaml).
    const memberConfig = new KubeConfig();
    memberConfig.loadFromFile(estateMember.kubeconfig);
    const memberCore = memberConfig.makeApiClient(CoreV1Api);
    const objects = 'consumer-objects';
    await memberCore.createNamespace({ body: { metadata: { name: objects } } });
    await letCpsyncGrant(emulators, estateMember);
    const kit = consumerKit(emulators, identity.as);
    const { consumer: consumerBinary } = ensureConsumerBinaries();
    consumer = spawn(
      consumerBinary,
      [
        'engage',
        '-kubeconfig',
        hub.kubeconfig,
        '-namespace',
        namespace,
        '-provider-file',
        kit.providerFile,
        '-create-in',
        objects,
      ],
      {
        env: kit.env,
        // What the consumer saw of each cluster (engaged, refused and why, created), for a closer look at a tail.
        stdio: process.env.CPSYNC_BENCH_CONSUMER_LOG
          ? ['ignore', openSync(process.env.CPSYNC_BENCH_CONSUMER_LOG, 'w'), 'ignore']
          : ['ignore', 'ignore', 'ignore'],
      },
    );
    const byObject = () =>
      new Map(timelines.filter((t) => t.profile).map((t) => [`engaged.${namespace}.${t.profile}`, t]));
    // What the hub shows, what the member holds and what reached the bus, seen from a process of its own
    // (test/bench/observer.ts), each stamped when it saw it.
    const setup: ObserverSetup = {
      hubKubeconfig: hub.kubeconfig,
      namespace,
      memberKubeconfig: estateMember.kubeconfig,
      objects,
      queueUrl: emulators.queueUrl,
      aws: direct,
    };
    observer = fork(
      fileURLToPath(new URL('./observer.ts', import.meta.url)),
      ['child', JSON.stringify(setup)],
      {
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      },
    );
    const watching = observer;
    const observing = new Promise<void>((resolve, reject) => {
      watching.once('exit', (code) =>
        reject(new Error(`the observer exited ${code} before it was watching`)),
      );
      watching.on('message', (o: Observation) => {
        if (o.kind === 'ready') return resolve();
        if (o.kind === 'object') {
          const timeline = byObject().get(o.name);
          if (timeline && !timeline.objectAt) timeline.objectAt = o.at;
          return;
        }
        const timeline = byName.get(o.displayName);
        if (!timeline) return;
        // Wrongful: a profile gone, or a Deleted event, before its cluster was gone.
        const early = (at: number) => timeline.goneAt === undefined || timeline.goneAt > at;
        if (o.kind === 'profile') timeline.profile ??= o.name;
        else if (o.kind === 'usable') timeline.usableAt ??= o.at;
        else if (o.kind === 'profile-gone') {
          if (timeline.usableAt && !timeline.profileGoneAt) {
            timeline.profileGoneAt = o.at;
            if (early(o.at)) wrongful[timeline.cloud] += 1;
          }
        } else if (o.detailType === 'Consumer Access Granted') timeline.grantedAt ??= o.at;
        else if (o.detailType === 'ClusterProfile Deleted') {
          if (early(o.at)) wrongful[timeline.cloud] += 1;
          timeline.deletedEventAt ??= o.at;
        }
      });
    });
    await observing;

    // Every bench cluster's endpoint is the member, with the member's CA, once its cloud has made it.
    const memberHost = new URL(estateMember.server).hostname;
    stops.push(
      emulators.proxy.rewrite(
        withEksClusters((name) =>
          name.startsWith('usable-eks-')
            ? { ca: estateMember.caData, endpoint: estateMember.server }
            : undefined,
        ),
      ),
    );
    const gcpRequests = emulators.gke.requests.length;
    const armRequests = emulators.arm.requests.length;
    emulators.proxy.clear();
    /** What a cloud sent, delivered as its service delivers it, after that service's delay. */
    const delays = seeded(20261126);
    const pending: Array<Promise<void>> = [];
    /** Each delivery to the webhook: its cluster and what it said, when it was delivered, when it was answered. */
    const deliveries: Array<{
      cluster: string;
      via: CloudEvent['via'];
      what: string;
      at: number;
      answeredAt?: number;
      status?: number;
    }> = [];
    const deliverNow = async (event: CloudEvent, cluster: string, what: string) => {
      if (event.via === 'cloudtrail') {
        await events.send(
          new PutEventsCommand({
            Entries: [
              {
                Source: 'aws.eks',
                DetailType: 'AWS API Call via CloudTrail',
                Detail: JSON.stringify(event.event.detail),
              },
            ],
          }),
        );
        return;
      }
      invocations.webhook += 1;
      const request =
        event.via === 'pubsub'
          ? functionUrlRequest('/gcp', event.push, { authorization: `Bearer ${await signer.sign()}` })
          : event.via === 'eventgrid'
            ? functionUrlRequest('/azure', event.events, {}, { key: AZURE_KEY })
            : functionUrlRequest('/azure/alert', event.alert, {}, { key: AZURE_KEY });
      const delivery: (typeof deliveries)[number] = { cluster, via: event.via, what, at: Date.now() };
      deliveries.push(delivery);
      const answer = (await trace.invocation(`webhook ${event.via} ${what}`, cluster, () =>
        handlers.webhook(request, context),
      )) as { statusCode?: number; body?: string };
      delivery.answeredAt = Date.now();
      if (answer.statusCode !== undefined) delivery.status = answer.statusCode;
      if (answer.statusCode !== 200 && process.env.CPSYNC_BENCH_DEBUG)
        console.error('webhook answered', answer.statusCode, answer.body);
    };
    /** What the cloud sends about `cluster`'s `what` (creating, deleting), each event after its delay. */
    const sender = (cluster: string, what: string) => (event: CloudEvent) => {
      const [low, high] = options.deliverySeconds[event.via];
      const delay = Math.round((low + delays() * (high - low)) * 1000);
      pending.push(
        new Promise<void>((resolve) => setTimeout(resolve, delay))
          .then(() => deliverNow(event, cluster, what))
          .catch((error: unknown) => {
            if (process.env.CPSYNC_BENCH_DEBUG) console.error('delivery failed', error);
          }),
      );
    };

    /** One cluster's life: created (the cloud's events sent), ready after its time, deleted once usable, gone. */
    const life = async (timeline: Timeline, startAfter: number) => {
      await new Promise((r) => setTimeout(r, startAfter));
      const { cloud, name } = timeline;
      const where = { resourceGroup: `rg-${name}`, location: 'us-central1' };
      let hold: { settle: () => void };
      if (cloud === 'eks') {
        eksNames.push(name);
        hold = announcedTransition(emulators, 'eks', name, 'creating', sender(name, 'creating'), where);
        await createEksClusters(emulators.moto.endpoint, EKS_ACCOUNT, 'us-east-1', [{ name }]);
      } else if (cloud === 'gke') {
        const cluster = gkeCluster(name, 'us-central1', {
          endpoint: memberHost,
          masterAuth: { clusterCaCertificate: estateMember.caData },
        });
        emulators.gke.clusters.get(GCP_PROJECT)!.push(cluster);
        hold = announcedTransition(emulators, 'gke', name, 'creating', sender(name, 'creating'), where);
      } else {
        const cluster = aksCluster(name, `rg-${name}`);
        cluster.properties.fqdn = memberHost;
        emulators.arm.caData.set(cluster.id.toLowerCase(), estateMember.caData);
        emulators.arm.clusters.get(AZURE_SUBSCRIPTION)!.push(cluster);
        hold = announcedTransition(emulators, 'aks', name, 'creating', sender(name, 'creating'), where);
      }
      stops.push(() => hold.settle());
      timeline.createdAt = Date.now();
      setTimeout(() => {
        timeline.readyAt = Date.now();
        hold.settle();
      }, timeline.readyAfterMillis).unref();
      // Deleted once the consumer's object is in the member (or, should it never come, a minute after usable).
      while (!timeline.usableAt) await new Promise((r) => setTimeout(r, 200));
      const usableAt = timeline.usableAt;
      while (!timeline.objectAt && Date.now() - usableAt < 60_000)
        await new Promise((r) => setTimeout(r, 200));
      // Deleted a little after it became usable: DELETING for its time, then gone.
      await new Promise((r) => setTimeout(r, 2000));
      const deleting = announcedTransition(
        emulators,
        cloud,
        name,
        'deleting',
        sender(name, 'deleting'),
        where,
      );
      stops.push(() => deleting.settle());
      timeline.deleteAt = Date.now();
      await new Promise((r) => setTimeout(r, timeline.deletingMillis));
      // Gone from here on (EKS: the hold's settle deletes it in moto, a little later; a profile deleted before
      // this moment is a wrongful deletion, and the time to Deleted counts moto's own deletion).
      timeline.goneAt = Date.now();
      deleting.settle();
      while (!(timeline.deletedEventAt && timeline.profileGoneAt))
        await new Promise((r) => setTimeout(r, 200));
    };
    const started = Date.now();
    const deadline = started + 10 * 60_000;
    await Promise.race([
      Promise.all(timelines.map((t, i) => life(t, (i * options.spreadSeconds * 1000) / timelines.length))),
      new Promise((r) => setTimeout(r, deadline - Date.now()).unref()),
    ]);
    const wall = Date.now() - started;
    running = false;
    await Promise.allSettled([...loops, ...pending]);

    // Each cluster's timeline, for a closer look at a tail.
    if (process.env.CPSYNC_BENCH_TIMELINES)
      writeFileSync(process.env.CPSYNC_BENCH_TIMELINES, JSON.stringify(timelines, null, 1));
    if (process.env.CPSYNC_BENCH_DELIVERIES)
      writeFileSync(process.env.CPSYNC_BENCH_DELIVERIES, JSON.stringify(deliveries, null, 1));
    const hostOf = (url: string) => {
      const parsed = new URL(url);
      return `${parsed.hostname}:${parsed.port || (parsed.protocol === 'https:' ? 443 : 80)}`;
    };
    trace.write({
      [hostOf(hub.server)]: 'hub',
      [hostOf(proxy)]: 'aws',
      [hostOf(emulators.moto.endpoint)]: 'moto',
      ...(dynamoProxy && dynaliteEndpoint
        ? { [hostOf(dynamoProxy.endpoint)]: 'aws', [hostOf(dynaliteEndpoint)]: 'dynalite' }
        : {}),
      [hostOf(emulators.gke.endpoint)]: 'gke',
      [hostOf(emulators.arm.endpoint)]: 'arm',
      [hostOf(estateMember.server)]: 'member',
    });
    // Figures, per cloud.
    const done = timelines.filter((t) => t.usableAt && t.deletedEventAt && t.profileGoneAt);
    const CLOUDS = ['eks', 'gke', 'aks'] as const;
    const NAMES: Record<Cloud, string> = { eks: 'EKS', gke: 'GKE', aks: 'AKS' };
    const of = (cloud: Cloud) => done.filter((t) => t.cloud === cloud);
    const usable = (ts: Timeline[]) => ts.map((t) => t.usableAt! - t.readyAt!);
    // Reached: the consumer's object is in the member and cpsync's grant for this very cluster was announced
    // (the member stands for every bench cluster, so a GKE or AKS binding made for one lets the consumer into
    // the others: the later of the two is when this cluster was usable by the consumer through its own grant).
    const reached = (ts: Timeline[]) =>
      ts
        .filter((t) => t.objectAt && t.grantedAt)
        .map((t) => Math.max(t.objectAt!, t.grantedAt!) - t.readyAt!);
    const gone = (ts: Timeline[]) => ts.map((t) => Math.max(t.deletedEventAt!, t.profileGoneAt!) - t.goneAt!);
    const created = timelines.length;
    const aws = [...emulators.proxy.calls, ...(dynamoProxy?.calls ?? [])];
    const count = (test: (call: (typeof aws)[number]) => boolean) => aws.filter(test).length;
    const reads: Record<Cloud, number> = {
      eks: count((c) => c.service === 'eks'),
      gke: emulators.gke.requests.length - gcpRequests,
      aks: emulators.arm.requests.length - armRequests,
    };
    const sqsSends = count((c) => c.service === 'sqs');
    const dynamoWrites = count(
      (c) => c.service === 'dynamodb' && /PutItem|UpdateItem|DeleteItem|BatchWriteItem/.test(c.operation),
    );
    const dynamoReads = count((c) => c.service === 'dynamodb' && /GetItem|Scan|Query/.test(c.operation));
    const putEvents = count((c) => c.service === 'events');
    const followSeconds = followMillis.reduce((a, b) => a + b, 0) / 1000;
    const perCloud = created / CLOUDS.length;
    // The follow-up's cost of one look: its share of the function's time and requests, its message sent,
    // received and deleted, and its chase's read and update (a GetItem and an UpdateItem).
    const lookDollars =
      invocations.looks > 0
        ? (followSeconds * FOLLOW_UP_GB * PRICES.lambdaGbSecond +
            invocations.followUp * PRICES.lambdaRequest) /
            invocations.looks +
          3 * PRICES.sqsRequest +
          PRICES.dynamoWrite +
          PRICES.dynamoRead
        : 0;
    const pair = (values: number[]) =>
      values.length > 0 ? `${seconds(percentile(values, 50))} | ${seconds(percentile(values, 99))}` : '— | —';

    say('## Time to usable');
    say('');
    // GKE's project role for the consumer, as the project's IAM policy holds it (made by the grants alone).
    const projectRole = (emulators.gke.iamPolicies.get(GCP_PROJECT)?.bindings ?? []).some(
      (b) =>
        b.role === 'roles/container.clusterViewer' &&
        b.condition?.description === 'cpsync: access grant for consumer consumer' &&
        b.members.includes(`serviceAccount:${CONSUMER_GOOGLE}`),
    )
      ? "held for the consumer's identity"
      : 'not held';
    const range = ([low, high]: [number, number]) => `${low}–${high} s`;
    const eks = (config.follow as { eks: { typicalSeconds: Record<string, number> } }).eks.typicalSeconds;
    say(
      `${created} clusters (${options.perCloud} in each cloud) created in the emulators over ${options.spreadSeconds} s, each held in its creating state (no endpoint, no CA) for a time drawn from ${range(options.readySeconds)} (seeded), then ready; deleted 2 s after the consumer's object appeared in the member (a minute after the profile was usable, should it never appear), held DELETING for ${range(options.deletingSeconds)}, then gone. The clouds say what real clouds say about each operation, in the documented shapes and order (test/env/transitions.ts), each delivered after a delay drawn from a range: EKS only the CloudTrail record of the call as it starts (\`CreateCluster\`, \`DeleteCluster\`; ${range(options.deliverySeconds.cloudtrail)}) on moto's default EventBridge bus, routed by the stack's rule pattern to the EKS event handler — nothing as the operation ends; GKE the audit entry written as the operation starts (\`operation.first\`) and the one written as it ends (\`operation.last\`, the same operation id), each pushed by Pub/Sub to the webhook (${range(options.deliverySeconds.pubsub)}); AKS Event Grid's \`ResourceWriteSuccess\`/\`ResourceDeleteSuccess\` as the request is taken (${range(options.deliverySeconds.eventgrid)}) and, as the operation ends, the Activity Log's \`Succeeded\` event of \`managedClusters/write\`/\`delete\` through an Activity Log alert's action group, in the common alert schema, to \`/azure/alert\` (${range(options.deliverySeconds.alert)}). The functions run as bundled, in this process; the follow-up function is invoked with the batches its delayed SQS queue hands over, five batches at a time (Lambda's SQS event source starts with five concurrent invocations), and the EKS handler with each event at once. Following: the configuration's defaults (GKE and AKS: a backstop look after 10 s, then every 20 s, until the end event ends the chase), but for EKS's typical durations, set to the middle of the bench's ranges (\`follow.eks.typicalSeconds\` create ${eks.create}, delete ${eks.delete}), its floor ${EKS_FLOOR_SECONDS} s and its share of the time left ${EKS_TIGHTENING} (the defaults 5 s and 0.25), its cap 60 s and 60 looks at most (the defaults). Usable: the profile in the real hub has its server, its CA and \`ControlPlaneHealthy=True\` (seen by a watch on the hub's ClusterProfiles, from a process of its own, apart from the functions' event loop). The consumer: multicluster-runtime's cluster-inventory-api provider (the consumer test's program, \`engage -create-in\`), running all along, engages each profile through \`cpsync credentials\` with identities of its own and creates a ConfigMap in the member (every bench cluster's endpoint is one member kube-apiserver whose token webhook verifies each cloud's tokens, and whose authorizer first denies a Google identity without \`container.clusters.get\` in the project's IAM policy, as GKE does, then is RBAC, then EKS's access entries for the cluster a token was signed for); nobody grants it anything by hand: the \`accessGrants\` feature is on and grants it \`edit\` (an EKS access entry; for GKE, \`roles/container.clusterViewer\` in cpsync's binding of the project's IAM policy — ${projectRole} at the end — and a ClusterRoleBinding on the member; for AKS the binding); its object counts when a watch on the member sees it (from that same observer process) and the \`Consumer Access Granted\` event of that cluster reached the bus. Deleted: the \`Deleted\` event reached the bus's subscriber queue (read by the observer) and the profile is gone from the hub (its watch). ${done.length} of ${created} clusters went the whole way in ${seconds(wall)}.${options.dynamodb === 'dynalite' ? ' DynamoDB (the idempotency records, the outbox, the chases, the grants ledger) was dynalite, in a process of its own behind a counting proxy as moto is; every other AWS service was moto (`--dynamodb moto`: DynamoDB too).' : ' DynamoDB was moto, with every other AWS service (`--dynamodb moto`).'}`,
    );
    say('');
    say('| | cloud | p50 | p99 | target (p99) |');
    say('| --- | --- | --- | --- | --- |');
    for (const cloud of CLOUDS)
      say(
        `| cloud ready → profile usable | ${NAMES[cloud]} (${of(cloud).length}) | ${pair(usable(of(cloud)))} | ≤ ${cloud === 'eks' ? 15 : 5} s |`,
      );
    for (const cloud of CLOUDS)
      say(
        `| cloud ready → the consumer engaged and its object in the member | ${NAMES[cloud]} (${reached(of(cloud)).length}) | ${pair(reached(of(cloud)))} | ≤ ${cloud === 'eks' ? 20 : 10} s |`,
      );
    for (const cloud of CLOUDS)
      say(
        `| cloud gone → Deleted event and profile gone | ${NAMES[cloud]} (${of(cloud).length}) | ${pair(gone(of(cloud)))} | ≤ ${cloud === 'eks' ? 15 : 5} s |`,
      );
    say('');
    say(
      `Wrongful deletions (a \`Deleted\` event, or a profile gone, while its cluster still existed, DELETING included): ${CLOUDS.map((c) => `${NAMES[c]} ${wrongful[c]}`).join(', ')}.`,
    );
    say('');
    say("The follow-up's cost per created cluster (its creation and deletion both followed), per cloud:");
    say('');
    say(
      "| cloud | looks per cluster | cloud reads per cluster (the events' own syncs included) | follow-up cost per cluster |",
    );
    say('| --- | --- | --- | --- |');
    for (const cloud of CLOUDS)
      say(
        `| ${NAMES[cloud]} | ${(looksBy[cloud] / perCloud).toFixed(1)} | ${(reads[cloud] / perCloud).toFixed(1)} | $${((looksBy[cloud] * lookDollars) / perCloud).toFixed(7)} |`,
      );
    say('');
    say(
      `In all: ${invocations.followUp} follow-up invocations carrying ${invocations.looks} looks (${(followSeconds / Math.max(1, invocations.looks)).toFixed(2)} s of the function per look); ${(sqsSends / created).toFixed(1)} SQS sends, ${(dynamoWrites / created).toFixed(1)} DynamoDB writes and ${(dynamoReads / created).toFixed(1)} reads (chases, idempotency records, the outbox), ${(putEvents / created).toFixed(1)} PutEvents per cluster. A look at list prices (Lambda arm64 at 512 MB for its share of the follow-up's measured ${followSeconds.toFixed(1)} s, its SQS message sent, received and deleted, its chase's read and write, DynamoDB on demand): $${lookDollars.toFixed(8)}. Event handler and webhook invocations: ${invocations.eks} and ${invocations.webhook}.`,
    );
    say('');
  } finally {
    running = false;
    observer?.kill('SIGTERM');
    consumer?.kill('SIGTERM');
    dynalite?.kill('SIGTERM');
    await dynamoProxy?.stop();
    delete process.env.AWS_ENDPOINT_URL_DYNAMODB;
    for (const stop of stops) stop();
    await member?.stop();
    await signer.stop();
    await emulators.stop();
    await stopHub(hub.directory);
  }
}
