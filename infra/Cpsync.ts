/**
 * The cpsync L3 construct: event bus, schedule, fan-out queue with DLQ, the five functions, the follow-up
 * queue (delayed looks at clusters in change) with its DLQ and chase table, the EKS
 * CloudTrail rule, the webhook Function URL, the outbox table, least-privilege IAM, alarms, the event
 * schemas in an EventBridge schema registry and an optional archive.
 *
 * One file because it is one construct whose parts are wired to one another (the queues, tables and roles
 * each function is granted); the parts other constructs share are in infra/parts.ts.
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  ArnFormat,
  Aws,
  CfnCondition,
  Duration,
  Fn,
  RemovalPolicy,
  Stack,
  Token,
  type ICfnConditionExpression,
} from 'aws-cdk-lib';
import { Alarm, ComparisonOperator, Metric, TreatMissingData } from 'aws-cdk-lib/aws-cloudwatch';
import type { Table } from 'aws-cdk-lib/aws-dynamodb';
import { EventBus, Rule, type IEventBus } from 'aws-cdk-lib/aws-events';
import { LambdaFunction as LambdaTarget } from 'aws-cdk-lib/aws-events-targets';
import { type CfnPolicy, type CfnRole, Effect, Policy, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { type ISecurityGroup, type IVpc, type SubnetSelection, SubnetType } from 'aws-cdk-lib/aws-ec2';
import {
  Architecture,
  Function as LambdaFunction,
  FunctionUrlAuthType,
  Runtime,
  Tracing,
  type FunctionUrl,
} from 'aws-cdk-lib/aws-lambda';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Schedule, ScheduleExpression, ScheduleTargetInput } from 'aws-cdk-lib/aws-scheduler';
import { LambdaInvoke } from 'aws-cdk-lib/aws-scheduler-targets';
import { CfnRegistry, CfnSchema } from 'aws-cdk-lib/aws-eventschemas';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import {
  configDocument,
  DEFAULT_IDEMPOTENCY_SECONDS,
  parseConfig,
  type CpsyncConfig,
} from '../adapters/compose/config.ts';
import { eventSourceOf } from '../adapters/compose/settings.ts';
import { GRANT_SOURCE_IDENTITY } from '../adapters/grants/marks.ts';
import { DetailType } from '../events/detailTypes.ts';
import { DETAIL_SCHEMAS } from '../events/schemas.ts';
import { patterns } from '../events/patterns.ts';
import { CpsyncSubscription, type SubscriptionOptions } from './CpsyncSubscription.ts';
import {
  accessGrantStatements,
  FUNCTION_ROLE_PATH,
  grantedConsumers,
  memberReadStatements,
} from './CpsyncMemberRoles.ts';
import {
  deadLetterQueue,
  deadLettersAlarm,
  expiringTable,
  ledgerTable,
  clusterRecordsTable,
  grantSecretArn,
  grantSecretValue,
} from './parts.ts';
import { functionCode } from './functionCode.ts';
import type { Provider } from '../core/domain/model/observedCluster.ts';
import { ONCE_WORK, onceKeyPrefix, type OnceWork } from '../functions/onceWork.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

/** CloudTrail event names of EKS calls that change what a profile shows. */
export const EKS_EVENT_NAMES = [
  'CreateCluster',
  'DeleteCluster',
  'UpdateClusterVersion',
  'UpdateClusterConfig',
  'CreateNodegroup',
  'DeleteNodegroup',
  'UpdateNodegroupConfig',
  'UpdateNodegroupVersion',
  'TagResource',
  'UntagResource',
] as const;

export interface CpsyncProps {
  /**
   * The cpsync configuration document (as in cpsync.example.yaml). Checked when the construct is
   * made; `bus` and `outbox` are filled in by the construct.
   */
  readonly config: unknown;
  /**
   * An existing event bus to publish to. Exclusive with `eventBusName`.
   * @default a new bus
   */
  readonly eventBus?: IEventBus;
  /**
   * Name of the new event bus. Exclusive with `eventBus`.
   * @default 'cpsync'
   */
  readonly eventBusName?: string;
  /**
   * How often the full sync runs.
   * @default Duration.minutes(15)
   */
  readonly syncInterval?: Duration;
  /**
   * Keep an archive of every event published, for this long.
   * @default no archive
   */
  readonly archiveRetention?: Duration;
  /**
   * Make the Event Grid key secret (the webhook's `azure.key`), when the configuration has none.
   * @default true when `providers.aks` is configured
   */
  readonly azureWebhook?: boolean;
  /**
   * How long function logs are kept.
   * @default RetentionDays.ONE_MONTH
   */
  readonly logRetention?: RetentionDays;
  /**
   * Runs the functions in this VPC, so that the member probe (`features.memberProbe`) can reach clusters
   * whose endpoints are private. The subnets need a way out to AWS APIs, the clouds and the hub (a NAT
   * gateway or VPC endpoints).
   * @default the functions run outside any VPC
   */
  readonly vpc?: IVpc;
  /**
   * The subnets of `vpc` the functions use.
   * @default the VPC's private subnets with egress
   */
  readonly vpcSubnets?: SubnetSelection;
  /**
   * Security groups of the functions (allowing HTTPS out to the members' endpoints).
   * @default one new security group allowing all outbound traffic
   */
  readonly securityGroups?: ISecurityGroup[];
  /**
   * X-Ray active tracing of every function (Powertools' tracer, loaded only when this is on).
   * @default false
   */
  readonly tracing?: boolean;
  /**
   * Stack traces in the logs point at cpsync's sources (Node's `--enable-source-maps`, reading the maps
   * each bundle carries) rather than at the minified bundle. It costs each cold start the parsing of the
   * maps of what it loads (about 150 ms for the EKS event handler, see BENCHMARKS.md).
   * @default false
   */
  readonly stackTraceSourceMaps?: boolean;
  /**
   * Following a cluster in change (creating, updating, deleting…) until it settles: the first look after
   * `firstDelay`, the wait doubling up to `maxDelay` (at most 15 minutes, SQS's longest delay), the whole
   * chase bounded by `maxDuration` (then the schedule takes over). Each overrides the configuration's
   * `follow` section.
   * @default the configuration's `follow` (10 s, 20 s, 3 h)
   */
  readonly follow?: {
    readonly firstDelay?: Duration;
    readonly maxDelay?: Duration;
    readonly maxDuration?: Duration;
  };
}

const DEFAULTS = {
  eventBusName: 'cpsync',
  syncInterval: Duration.minutes(15),
  logRetention: RetentionDays.ONE_MONTH,
} as const;

/**
 * The member probe's slots follow the schedule: a scheduled run reads the members of its slot, so the
 * slot is the sync interval (at most a day), whatever the configuration says.
 */
function memberProbeSlots(config: CpsyncConfig, props: CpsyncProps): CpsyncConfig['memberProbe'] {
  // Always the schedule's period: a shorter slot would leave some slots without a run, their members unread.
  const slotMinutes = Math.min(
    1440,
    Math.max(1, Math.round((props.syncInterval ?? DEFAULTS.syncInterval).toMinutes({ integral: false }))),
  );
  return {
    ...config.memberProbe,
    slotMinutes,
    everyMinutes: Math.max(config.memberProbe.everyMinutes, slotMinutes),
  };
}

/** A CloudFormation condition that holds when any of `conditions` does (Fn::Or takes 2 to 10 of them). */
function anyOf(conditions: ICfnConditionExpression[]): ICfnConditionExpression {
  if (conditions.length === 1) return conditions[0]!;
  if (conditions.length <= 10) return Fn.conditionOr(...conditions);
  const groups: ICfnConditionExpression[] = [];
  for (let i = 0; i < conditions.length; i += 10) groups.push(anyOf(conditions.slice(i, i + 10)));
  return anyOf(groups);
}

/**
 * Conditions holding an item-level DynamoDB call to items whose partition keys all match (`StringLike`), or all do
 * not match (`StringNotLike`), `patterns`: every key a call names (a batch names several) is judged.
 */
function leadingKeys(operator: 'StringLike' | 'StringNotLike', patterns: string[]) {
  return {
    [`ForAllValues:${operator}`]: { 'dynamodb:LeadingKeys': patterns },
    Null: { 'dynamodb:LeadingKeys': 'false' },
  };
}

/** `actions` on the items of `table` (the table, not its indexes), held by `conditions` when given. */
function grantItems(
  fn: LambdaFunction,
  table: Table,
  actions: string[],
  conditions?: Record<string, Record<string, unknown>>,
): void {
  fn.addToRolePolicy(
    new PolicyStatement({ actions, resources: [table.tableArn], ...(conditions ? { conditions } : {}) }),
  );
}

/** Query on `table`'s index `index` (its items' keys are judged where each is then read or written). */
function queryIndex(fn: LambdaFunction, table: Table, index: string): void {
  fn.addToRolePolicy(
    new PolicyStatement({ actions: ['dynamodb:Query'], resources: [`${table.tableArn}/index/${index}`] }),
  );
}

/**
 * The chases (`<provider>/<account>/…`), the remembered answers and the missed-listing counts (`<provider>/<provider
 * id>`) are keyed after the cluster's cloud: a function touches only those of the clouds it reads.
 */
function cloudKeysOf(clouds?: readonly Provider[]) {
  return (
    clouds &&
    leadingKeys(
      'StringLike',
      clouds.map((cloud) => `${cloud}/*`),
    )
  );
}

/**
 * The grants ledger is keyed by the cluster's provider id: an EKS cluster's ARN
 * (`arn:…`), an AKS resource id (`/subscriptions/…`), a GKE self link (`https://…`). A function that reads EKS
 * alone touches ARNs alone; one that reads no EKS cluster, no ARN.
 */
function providerIdKeysOf(clouds?: readonly Provider[]) {
  if (!clouds) return undefined;
  if (clouds.every((cloud) => cloud === 'eks')) return leadingKeys('StringLike', ['arn:*']);
  return clouds.includes('eks') ? undefined : leadingKeys('StringNotLike', ['arn:*']);
}

/** The configuration's `follow` knobs, with the props' overrides (checked as the configuration is). */
function followKnobs(config: CpsyncConfig, props: CpsyncProps): CpsyncConfig['follow'] {
  const follow = props.follow ?? {};
  const knobs = {
    ...config.follow,
    firstDelaySeconds: follow.firstDelay?.toSeconds() ?? config.follow.firstDelaySeconds,
    maxDelaySeconds: follow.maxDelay?.toSeconds() ?? config.follow.maxDelaySeconds,
    maxMinutes: follow.maxDuration?.toMinutes() ?? config.follow.maxMinutes,
  };
  return parseConfig({ ...configDocument(config), follow: knobs }, 'Cpsync props.follow').follow;
}

export class Cpsync extends Construct {
  public readonly eventBus: IEventBus;
  public readonly scopeQueue: Queue;
  public readonly deadLetterQueue: Queue;
  /** Delayed looks at clusters in change, for the follow-up function. */
  public readonly followQueue: Queue;
  public readonly followDeadLetterQueue: Queue;
  /** One item per cluster being followed: at most one chase per cluster. */
  public readonly chaseTable: Table;
  public readonly followUp: LambdaFunction;
  public readonly outboxTable: Table;
  /** Powertools idempotency records: deliveries already processed, remembered for an hour. */
  public readonly idempotencyTable: Table;
  /**
   * What cpsync granted (the `accessGrants` feature, and its turn-off): the one record of what it must take
   * back, which only its functions write. Made while the feature is on or consumers are configured.
   */
  public readonly grantsTable?: Table;
  /**
   * What the sources remember of the clouds' per-cluster answers (AKS CAs, EKS node groups), which only cpsync's
   * functions write. Made while EKS or AKS is configured.
   */
  public readonly answersTable?: Table;
  /**
   * How many listings in a row missed each cluster (the deletion grace's counts), which only cpsync's functions
   * write: a hub writer can neither hasten a profile's deletion nor put it off.
   */
  public readonly absencesTable: Table;
  public readonly scopeEnumerator: LambdaFunction;
  public readonly scopeWorker: LambdaFunction;
  public readonly eksEventHandler: LambdaFunction;
  public readonly webhook: LambdaFunction;
  public readonly webhookUrl: FunctionUrl;
  public readonly schedule: Schedule;
  public readonly eksRule: Rule;
  public readonly azureWebhookKey?: Secret;
  public readonly alarms: Alarm[] = [];
  /** The `source` of the events this construct's functions publish. */
  public readonly eventSource: string;
  /** How often the full sync runs (the schedule's rate). */
  public readonly syncInterval: Duration;
  /**
   * The configuration's `subscribers` section: the example subscribers the CDK app deploys beside this
   * construct (`configuredSubscribers` in infra/subscribers.ts). No function of cpsync is told of them.
   */
  public readonly subscribers?: CpsyncConfig['subscribers'];
  #ownAccountCondition?: CfnCondition;
  /** Every function given what it needs to read the hub (`grantHubRead`): cpsync's own and its subscribers'. */
  readonly #hubReaders: LambdaFunction[] = [];
  readonly #functionSettings: { props: CpsyncProps; document: CpsyncConfig; logRetention: RetentionDays };
  /** The role assumed in member accounts, when EKS is configured. */
  public readonly memberRoleName?: string;
  /** Whether the functions may make or take back EKS access entries (the `accessGrants` feature, or its turn-off). */
  public readonly grantsAccess: boolean;
  /** The consumers' EKS roles: the only principals whose access entries the functions may make, tag or change. */
  public readonly accessGrantRoleArns: readonly string[];
  /** The EKS regions the configuration lists (`providers.eks.regions`): grants are held to them. */
  public readonly eksRegions?: readonly string[];

  constructor(scope: Construct, id: string, props: CpsyncProps) {
    super(scope, id);
    if (props.eventBus && props.eventBusName)
      throw new Error('Cpsync: give either eventBus or eventBusName, not both');
    if (!props.vpc && (props.vpcSubnets || props.securityGroups))
      throw new Error('Cpsync: vpcSubnets and securityGroups need vpc');
    const config = parseConfig(props.config, 'Cpsync props.config');
    if (config.providers.eks) this.memberRoleName = config.providers.eks.roleName;
    this.grantsAccess =
      config.providers.eks !== undefined && (config.features.accessGrants || config.consumers.length > 0);
    this.accessGrantRoleArns = config.consumers.flatMap((c) =>
      c.identities.eks ? [c.identities.eks.roleArn] : [],
    );
    if (config.providers.eks?.regions) this.eksRegions = config.providers.eks.regions;
    if (!config.hub || 'directory' in config.hub || 'kubeconfig' in config.hub) {
      throw new Error(
        'Cpsync: config.hub must be hub.eks (IAM-signed tokens) or hub.kubeconfigSecretArn for the Lambda functions',
      );
    }
    const stack = Stack.of(this);

    this.eventBus =
      props.eventBus ??
      new EventBus(this, 'Bus', { eventBusName: props.eventBusName ?? DEFAULTS.eventBusName });
    // The source the events carry: what the archive keeps, and what the functions are told to use.
    const eventSource = eventSourceOf(config);
    this.eventSource = eventSource;
    this.syncInterval = props.syncInterval ?? DEFAULTS.syncInterval;
    if (props.archiveRetention) {
      this.eventBus.archive('Archive', {
        eventPattern: { source: [eventSource] },
        retention: props.archiveRetention,
        description: 'Every cpsync event',
      });
    }

    this.outboxTable = expiringTable(this, 'Outbox', 'eventId', 'expiresAt');
    this.idempotencyTable = expiringTable(this, 'Idempotency', 'id', 'expiration');
    this.chaseTable = expiringTable(this, 'Chases', 'cluster', 'expiresAt');
    if (config.features.accessGrants || config.consumers.length > 0)
      this.grantsTable = ledgerTable(this, 'Grants');
    if (config.providers.eks || config.providers.aks)
      this.answersTable = clusterRecordsTable(this, 'Answers');
    this.absencesTable = clusterRecordsTable(this, 'Absences');

    const webhookConfig = { ...config.webhook };
    if (!webhookConfig.azure && (props.azureWebhook ?? config.providers.aks !== undefined)) {
      this.azureWebhookKey = new Secret(this, 'AzureWebhookKey', {
        description: 'Key Azure Event Grid deliveries to the cpsync webhook must carry (?key=...)',
        generateSecretString: { passwordLength: 40, excludePunctuation: true },
      });
      webhookConfig.azure = { key: { secretArn: this.azureWebhookKey.secretArn } };
    }
    // The subscribers' settings are the CDK app's (infra/subscribers.ts): no function of cpsync is told of them.
    const { subscribers, ...own } = config;
    this.subscribers = subscribers;
    const document: CpsyncConfig = {
      ...own,
      bus: {
        eventBridge: {
          busName: this.eventBus.eventBusName,
          source: eventSource,
        },
      },
      outbox: { table: this.outboxTable.tableName },
      ...(this.grantsTable ? { ledger: { table: this.grantsTable.tableName } } : {}),
      ...(this.answersTable ? { answers: { table: this.answersTable.tableName } } : {}),
      absences: { table: this.absencesTable.tableName },
      idempotency: {
        table: this.idempotencyTable.tableName,
        expiresAfterSeconds: config.idempotency?.expiresAfterSeconds ?? DEFAULT_IDEMPOTENCY_SECONDS,
      },
      webhook: webhookConfig,
      memberProbe: memberProbeSlots(config, props),
      follow: followKnobs(config, props),
    };

    this.deadLetterQueue = deadLetterQueue(this, 'ScopeDeadLetters');
    this.scopeQueue = new Queue(this, 'Scopes', {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      visibilityTimeout: Duration.minutes(6 * 5),
      deadLetterQueue: { queue: this.deadLetterQueue, maxReceiveCount: 3 },
    });

    this.followDeadLetterQueue = deadLetterQueue(this, 'FollowDeadLetters');
    this.followQueue = new Queue(this, 'Follow', {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      // A look takes at most the function's minute; a failed one is seen again after two.
      visibilityTimeout: Duration.minutes(2),
      deadLetterQueue: { queue: this.followDeadLetterQueue, maxReceiveCount: 3 },
    });

    this.#functionSettings = { props, document, logRetention: props.logRetention ?? DEFAULTS.logRetention };
    const make = (name: string, entry: string, timeout: Duration, memorySize: number) => {
      const fn = this.addFunction(this, name, { entry, timeout, memorySize });
      // The member roles trust cpsync's account only through roles of this path (CpsyncMemberRoles), not every
      // principal of the account: a role's path is set when it is made, by whoever may make roles there. cpsync's
      // own functions alone are made there (a subscriber's, made by addFunction too, is not).
      (fn.role!.node.defaultChild as CfnRole).path = FUNCTION_ROLE_PATH;
      return fn;
    };

    this.scopeEnumerator = make('ScopeEnumerator', 'scopeEnumerator.ts', Duration.minutes(2), 512);
    this.scopeEnumerator.addEnvironment('CPSYNC_SCOPE_QUEUE_URL', this.scopeQueue.queueUrl);
    this.scopeWorker = make('ScopeWorker', 'scopeWorker.ts', Duration.minutes(5), 1024);
    this.eksEventHandler = make('EksEventHandler', 'eksEvents.ts', Duration.minutes(1), 512);
    this.webhook = make('Webhook', 'webhook.ts', Duration.seconds(30), 512);
    this.followUp = make('FollowUp', 'followUp.ts', Duration.minutes(1), 512);
    const all = [this.scopeEnumerator, this.scopeWorker, this.eksEventHandler, this.webhook, this.followUp];
    // The clusters each function that syncs clusters reads, and so the items it may touch in the tables kept per
    // cluster (every cloud's, unless named); and its once-only work, whose idempotency records are its own.
    const syncing = new Map<LambdaFunction, { clouds?: Provider[]; work: OnceWork }>([
      [this.scopeWorker, { work: ONCE_WORK.scopeWorker }],
      [this.eksEventHandler, { clouds: ['eks'], work: ONCE_WORK.eksEventHandler }],
      [this.webhook, { clouds: ['gke', 'aks'], work: ONCE_WORK.webhook }],
      [this.followUp, { work: ONCE_WORK.followUp }],
    ]);
    const clouds = (fn: LambdaFunction) => syncing.get(fn)?.clouds;

    // Every function that syncs clusters follows those it finds in change: it starts (or joins) a chase,
    // and sends its first look; the follow-up function sends the next ones and ends the chase.
    for (const fn of syncing.keys()) {
      fn.addEnvironment('CPSYNC_FOLLOW_QUEUE_URL', this.followQueue.queueUrl);
      fn.addEnvironment('CPSYNC_CHASE_TABLE', this.chaseTable.tableName);
      this.followQueue.grant(fn, 'sqs:SendMessage');
      // A chase is put by the function that starts it (marked by one that joins it), and removed by the one
      // that ends it (or cannot start it).
      const starts = fn !== this.followUp;
      grantItems(
        fn,
        this.chaseTable,
        [...(starts ? ['dynamodb:PutItem', 'dynamodb:UpdateItem'] : []), 'dynamodb:DeleteItem'],
        cloudKeysOf(clouds(fn)),
      );
    }
    grantItems(this.followUp, this.chaseTable, ['dynamodb:GetItem', 'dynamodb:UpdateItem']);
    this.followUp.addEventSource(
      new SqsEventSource(this.followQueue, { batchSize: 10, reportBatchItemFailures: true }),
    );

    // SendMessageBatch is authorized as sqs:SendMessage; the queue URL comes from the environment.
    this.scopeQueue.grant(this.scopeEnumerator, 'sqs:SendMessage');
    this.scopeWorker.addEventSource(
      new SqsEventSource(this.scopeQueue, { batchSize: 1, reportBatchItemFailures: true }),
    );

    this.schedule = new Schedule(this, 'FullSync', {
      schedule: ScheduleExpression.rate(props.syncInterval ?? DEFAULTS.syncInterval),
      description: 'cpsync full sync: enumerate scopes and fan out',
      target: new LambdaInvoke(this.scopeEnumerator, {
        input: ScheduleTargetInput.fromObject({
          executionId: '<aws.scheduler.execution-id>',
          scheduledTime: '<aws.scheduler.scheduled-time>',
        }),
        retryAttempts: 2,
      }),
    });

    this.eksRule = new Rule(this, 'EksApiCalls', {
      description: 'EKS API calls that change a cluster: targeted sync',
      eventPattern: {
        source: ['aws.eks'],
        detailType: ['AWS API Call via CloudTrail'],
        detail: { eventSource: ['eks.amazonaws.com'], eventName: [...EKS_EVENT_NAMES] },
      },
      targets: [new LambdaTarget(this.eksEventHandler, { retryAttempts: 4, maxEventAge: Duration.hours(1) })],
    });

    // The webhook authenticates each caller itself (Event Grid key, Google-signed OIDC token).
    this.webhookUrl = this.webhook.addFunctionUrl({ authType: FunctionUrlAuthType.NONE });

    // Only cpsync's own events, on its bus: a function taken cannot put another source's events (a bus shared
    // with other producers) or a detail-type cpsync never publishes. The keys are multi-valued (one value per entry
    // of a PutEvents call): every entry must be cpsync's, and a call with no source key matches nothing.
    const publishing = new PolicyStatement({
      actions: ['events:PutEvents'],
      resources: [this.eventBus.eventBusArn],
      conditions: {
        'ForAllValues:StringEquals': {
          'events:source': [eventSource],
          'events:detail-type': Object.values(DetailType),
        },
        Null: { 'events:source': 'false', 'events:detail-type': 'false' },
      },
    });
    for (const fn of all) {
      fn.addToRolePolicy(publishing);
      // The outbox and the intent log: items written and removed in batches, read back by a scan.
      this.outboxTable.grant(fn, 'dynamodb:Scan', 'dynamodb:BatchWriteItem');
    }
    // `cpsync doctor --function` runs in the scope worker: it reads the bus's description.
    this.scopeWorker.addToRolePolicy(
      new PolicyStatement({ actions: ['events:DescribeEventBus'], resources: [this.eventBus.eventBusArn] }),
    );
    // The grants ledger: a scope's records found through the account index and read from the table
    // (consistently: the index lags), each cluster's put or removed.
    if (this.grantsTable) {
      const ledger = this.grantsTable;
      for (const fn of syncing.keys()) {
        grantItems(
          fn,
          ledger,
          ['dynamodb:BatchGetItem', 'dynamodb:PutItem', 'dynamodb:DeleteItem'],
          providerIdKeysOf(clouds(fn)),
        );
        queryIndex(fn, ledger, 'byAccount');
      }
    }
    // The remembered answers: each cluster's put or removed by the functions that read clusters; a scope's
    // records read through the scope index by the scope worker alone (one cluster read on its own always asks).
    if (this.answersTable) {
      const answers = this.answersTable;
      for (const fn of syncing.keys())
        grantItems(fn, answers, ['dynamodb:PutItem', 'dynamodb:DeleteItem'], cloudKeysOf(clouds(fn)));
      queryIndex(this.scopeWorker, answers, 'byScope');
    }
    // The deletion grace's counts: a scope's found through the scope index and read again from the table (the index
    // lags), and each cluster's put or removed, by the scope worker, which alone lists scopes; a cluster's removed by
    // every function that reads it on its own (seen, its count begins again).
    const absences = this.absencesTable;
    for (const fn of syncing.keys())
      grantItems(
        fn,
        absences,
        [
          ...(fn === this.scopeWorker ? ['dynamodb:BatchGetItem', 'dynamodb:PutItem'] : []),
          'dynamodb:DeleteItem',
        ],
        cloudKeysOf(clouds(fn)),
      );
    queryIndex(this.scopeWorker, absences, 'byScope');
    // What Powertools idempotency does with its records, and nothing more: each function's with its own work's.
    for (const [fn, { work }] of syncing)
      grantItems(
        fn,
        this.idempotencyTable,
        ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem'],
        leadingKeys('StringLike', [`${onceKeyPrefix(work)}#*`]),
      );
    // The enumerator lists accounts and their regions; the worker and the EKS handler read clusters; the
    // webhook serves only GKE and AKS and reads no AWS cloud.
    this.#grantCloudReads(config, [this.scopeEnumerator], stack, { clusters: false });
    this.#grantCloudReads(config, [this.scopeWorker, this.eksEventHandler, this.followUp], stack, {
      clusters: true,
    });
    // Every function reaches the hub, whichever clouds are configured.
    for (const fn of all) this.grantHubRead(fn);
    this.#grantSecrets(document, {
      clouds: [this.scopeWorker, this.webhook, this.followUp],
      discovers: [this.scopeEnumerator],
      webhook: [this.webhook],
    });

    this.#registerSchemas();
    this.#alarms(all);
  }

  /**
   * Subscribes `target` to the events `pattern` selects (one pattern or several), with a retry policy,
   * a dead-letter queue and an alarm on it (see `SubscriptionOptions`).
   */
  onEvent(id: string, options: SubscriptionOptions): CpsyncSubscription {
    const subscription = new CpsyncSubscription(this, id, {
      ...options,
      eventBus: this.eventBus,
      source: this.eventSource,
    });
    if (subscription.alarm) this.alarms.push(subscription.alarm);
    return subscription;
  }

  /**
   * Subscribes `target` to changes of the inventory: Created, Updated and Deleted, or what `pattern` selects
   * (`patterns.changed({ fields: ['status.version.kubernetes'] })`, …).
   */
  onProfileChange(
    id: string,
    options: Omit<SubscriptionOptions, 'pattern'> & { pattern?: SubscriptionOptions['pattern'] },
  ): CpsyncSubscription {
    return this.onEvent(id, {
      ...options,
      pattern: options.pattern ?? patterns.profileChanges({ source: this.eventSource }),
    });
  }

  /** Subscribes `target` to the scope summaries: every one, or what `pattern` selects (`outcome: 'failed'`). */
  onScopeSynced(
    id: string,
    options: Omit<SubscriptionOptions, 'pattern'> & { pattern?: SubscriptionOptions['pattern'] },
  ): CpsyncSubscription {
    return this.onEvent(id, {
      ...options,
      pattern: options.pattern ?? patterns.scopeSynced({ source: this.eventSource }),
    });
  }

  /**
   * A Node 24 function made as cpsync's own are (bundling, logs, VPC, the configuration in CPSYNC_CONFIG):
   * for subscribers, such as the Argo CD subscriber. `entry` is relative to `functions/`. `configuration`
   * says how much of the configuration the function is given: `cpsync` all that cpsync's own functions
   * have; `hub` (a subscriber that reads the hub) that without the clouds and the consumers (their accounts,
   * identities and credentials' secrets); `none` none (CPSYNC_CONFIG is not set).
   */
  addFunction(
    scope: Construct,
    name: string,
    options: {
      entry: string;
      timeout: Duration;
      memorySize: number;
      environment?: Record<string, string>;
      /** @default 'cpsync' */
      configuration?: 'cpsync' | 'hub' | 'none';
      /**
       * With `configuration: 'hub'`, on a hub reached with a kubeconfig: the function's own kubeconfig of it (a
       * Secrets Manager ARN), in place of cpsync's. @default cpsync's
       */
      hubKubeconfigSecretArn?: string;
    },
  ): LambdaFunction {
    const { props, document, logRetention } = this.#functionSettings;
    const { entry, timeout, memorySize, configuration = 'cpsync' } = options;
    // A function of the hub alone is told nothing of the clouds: their providers, consumers, keys or answers.
    const { answers: _answers, ...hubDocument } = configDocument(document);
    const ownHub =
      options.hubKubeconfigSecretArn && this.hubKubeconfigSecretArn
        ? { hub: { kubeconfigSecretArn: options.hubKubeconfigSecretArn } }
        : {};
    const given =
      configuration === 'hub'
        ? { ...hubDocument, providers: {}, consumers: [], webhook: {}, ...ownHub }
        : configDocument(document);
    return new LambdaFunction(scope, name, {
      code: functionCode(ROOT, join(ROOT, 'functions', entry)),
      handler: 'index.handler',
      runtime: Runtime.NODEJS_24_X,
      architecture: Architecture.ARM_64,
      memorySize,
      timeout,
      ...(props.tracing ? { tracing: Tracing.ACTIVE } : {}),
      ...(props.vpc
        ? {
            vpc: props.vpc,
            vpcSubnets: props.vpcSubnets ?? { subnetType: SubnetType.PRIVATE_WITH_EGRESS },
            ...(props.securityGroups ? { securityGroups: props.securityGroups } : {}),
          }
        : {}),
      logGroup: new LogGroup(scope, `${name}Logs`, {
        retention: logRetention,
        removalPolicy: RemovalPolicy.DESTROY,
      }),
      environment: {
        ...(configuration === 'none' ? {} : { CPSYNC_CONFIG: JSON.stringify(given) }),
        POWERTOOLS_SERVICE_NAME: 'cpsync',
        POWERTOOLS_METRICS_NAMESPACE: 'cpsync',
        ...(props.stackTraceSourceMaps ? { NODE_OPTIONS: '--enable-source-maps' } : {}),
        ...(props.tracing ? { POWERTOOLS_TRACE_ENABLED: 'true' } : {}),
        ...options.environment,
      },
    });
  }

  /** The hub's kubeconfig secret, when the configuration reaches the hub with one (cpsync's own identity). */
  get hubKubeconfigSecretArn(): string | undefined {
    const hub = this.#functionSettings.document.hub;
    return hub && 'kubeconfigSecretArn' in hub ? hub.kubeconfigSecretArn : undefined;
  }

  /**
   * The roles of every function that reaches the hub as cpsync, so far (a subscriber reaching it as cpsync adds
   * its own): on an EKS hub, each must be mapped to the hub's user for cpsync (`cpsync hub install --eks-role <arn>`
   * for each). A function reaching the hub as an identity of its own (`grantHubRead(fn, { ownIdentity })`) is not
   * among them.
   */
  get hubRoleArns(): string[] {
    return this.#hubReaders.map((fn) => fn.role!.roleArn);
  }

  /**
   * What a function needs to read the hub: DescribeCluster on an EKS hub (its role must also be mapped to
   * a hub identity allowed to read ClusterProfiles), or read access to the kubeconfig secret. With `ownIdentity`
   * the function reaches the hub as an identity of its own, never cpsync's: its role is left out of `hubRoleArns`
   * (on an EKS hub, map it to that identity), and on a hub reached with a kubeconfig it is given the kubeconfig
   * `ownIdentity.kubeconfigSecretArn` names instead of cpsync's (the function must be made with the same `hub`, see
   * `addFunction`).
   */
  grantHubRead(fn: LambdaFunction, options: { ownIdentity?: { kubeconfigSecretArn?: string } } = {}): void {
    const { document } = this.#functionSettings;
    const hubSecret = this.hubKubeconfigSecretArn;
    const own = options.ownIdentity;
    if (!own && !this.#hubReaders.includes(fn)) this.#hubReaders.push(fn);
    const describeHub = this.#describeHub(document, Stack.of(this));
    if (describeHub) fn.addToRolePolicy(describeHub);
    if (hubSecret) {
      if (!own) grantSecretArn(hubSecret, fn, 'hub.kubeconfigSecretArn');
      else if (own.kubeconfigSecretArn) grantSecretArn(own.kubeconfigSecretArn, fn, 'its hub kubeconfig');
      else
        throw new Error(
          "the hub is reached with a kubeconfig (hub.kubeconfigSecretArn), which is cpsync's identity: a function reaching it as an identity of its own needs a kubeconfig of that identity",
        );
    }
  }

  /**
   * Read-only AWS cloud access: assume the member role, list accounts and regions, and (with `clusters`)
   * read clusters and node groups in cpsync's own account — and there make and take back the accessGrants
   * feature's access entries. What is granted on cpsync's own account is granted only when the configuration
   * reads it (see `#ownAccountRead`). STS GetCallerIdentity needs no permission.
   */
  #grantCloudReads(
    config: CpsyncConfig,
    functions: LambdaFunction[],
    stack: Stack,
    { clusters }: { clusters: boolean },
  ): void {
    const eks = config.providers.eks;
    if (!eks) return;
    // Without clusters to read, a member account is entered only to read its regions, when none are named.
    const entersMembers = clusters || !eks.regions;
    // The member roles of the accounts the configuration lists, and of no other (an account left out of it, whose
    // role is still there, is not entered); every account's where Organizations discovers them.
    const accounts = Array.isArray(eks.accounts) ? eks.accounts : ['*'];
    const roles = (name: string) =>
      accounts.map((account) => `arn:${stack.partition}:iam::${account}:role/${name}`);
    const memberRoles = [
      ...roles(eks.roleName),
      // The member probe's EKS tokens, when they are signed as a role of the cluster's account.
      ...(clusters && config.features.memberProbe && config.memberProbe.eksRoleName
        ? roles(config.memberProbe.eksRoleName)
        : []),
    ];
    // Discovered through Organizations: IAM holds the roles entered to the organization's accounts, under the OUs the
    // configuration includes and not under those it leaves out (any account's role that trusts cpsync's would do
    // otherwise). An OU or root id is one segment of an account's path (`o-…/r-…/ou-…/…/`).
    const organization = Array.isArray(eks.accounts) ? undefined : eks.accounts.organization;
    const underAny = (ous: readonly string[]) => ous.map((ou) => `*/${ou}/*`);
    const inOrganization = organization
      ? {
          StringEquals: { 'aws:ResourceOrgID': '${aws:PrincipalOrgID}' },
          ...(organization.includeOus
            ? { 'ForAnyValue:StringLike': { 'aws:ResourceOrgPaths': underAny(organization.includeOus) } }
            : {}),
        }
      : undefined;
    const statements = entersMembers
      ? [
          new PolicyStatement({
            actions: ['sts:AssumeRole'],
            resources: memberRoles,
            ...(inOrganization ? { conditions: inOrganization } : {}),
          }),
          // The functions that grant assume the reader for it with cpsync's granting source identity, which the
          // reader's grant statements require; no other function may set it (CpsyncMemberRoles).
          ...(clusters && this.grantsAccess
            ? [
                new PolicyStatement({
                  actions: ['sts:SetSourceIdentity'],
                  resources: roles(eks.roleName),
                  conditions: {
                    ...inOrganization,
                    StringEquals: {
                      ...inOrganization?.StringEquals,
                      'sts:SourceIdentity': GRANT_SOURCE_IDENTITY,
                    },
                  },
                }),
              ]
            : []),
          ...(organization?.excludeOus
            ? [
                new PolicyStatement({
                  effect: Effect.DENY,
                  actions: ['sts:AssumeRole'],
                  resources: memberRoles,
                  conditions: {
                    'ForAnyValue:StringLike': { 'aws:ResourceOrgPaths': underAny(organization.excludeOus) },
                  },
                }),
              ]
            : []),
        ]
      : [];
    if (!Array.isArray(eks.accounts)) {
      statements.push(
        new PolicyStatement({
          actions: [
            'organizations:ListAccounts',
            'organizations:ListAccountsForParent',
            'organizations:ListOrganizationalUnitsForParent',
          ],
          resources: ['*'],
        }),
      );
    }
    for (const fn of functions) for (const statement of statements) fn.addToRolePolicy(statement);

    // In cpsync's own account, read with the function role: its clusters (and regions, when the
    // configuration names none) and, with the accessGrants feature, its access entries.
    const own: PolicyStatement[] = [];
    if (clusters) own.push(...memberReadStatements(stack, { regions: !eks.regions }));
    else if (!eks.regions)
      own.push(new PolicyStatement({ actions: ['ec2:DescribeRegions'], resources: ['*'] }));
    // The accessGrants feature, in cpsync's own account (member accounts: CpsyncMemberRoles' accessGrants);
    // turned off with consumers still configured, what taking its grants back needs.
    if (clusters && this.grantsAccess)
      own.push(
        ...accessGrantStatements(stack, {
          manager: config.manager,
          consumerRoleArns: this.accessGrantRoleArns,
          consumerNames: config.consumers.flatMap((c) => (c.identities.eks ? [c.name] : [])),
          consumers: grantedConsumers(config.consumers),
          revokeOnly: !config.features.accessGrants,
          ...(eks.regions ? { regions: eks.regions } : {}),
        }),
      );
    if (own.length === 0) return;
    const read = this.#ownAccountRead(eks.accounts, stack);
    if (read === false) return;
    for (const fn of functions) {
      if (read === true) for (const statement of own) fn.addToRolePolicy(statement);
      else {
        // The stack's account is known only at deploy: the grants hold only where the condition does.
        const policy = new Policy(fn, 'OwnAccount', { statements: own, roles: [fn.role!] });
        (policy.node.defaultChild as CfnPolicy).cfnOptions.condition = read;
      }
    }
  }

  /**
   * Whether the configuration reads cpsync's own account: always when accounts are discovered (Organizations
   * lists it with the others); for a list of accounts, whether the stack's account is among them — decided
   * at synth when the stack's account is known, else by a CloudFormation condition on `AWS::AccountId`.
   */
  #ownAccountRead(accounts: NonNullable<CpsyncConfig['providers']['eks']>['accounts'], stack: Stack) {
    if (!Array.isArray(accounts)) return true;
    if (!Token.isUnresolved(stack.account)) return accounts.includes(stack.account);
    this.#ownAccountCondition ??= new CfnCondition(this, 'OwnAccountConfigured', {
      expression: anyOf(accounts.map((account) => Fn.conditionEquals(Aws.ACCOUNT_ID, account))),
    });
    return this.#ownAccountCondition;
  }

  /** eks:DescribeCluster on the hub, when it is an EKS cluster (its IAM token needs the endpoint and CA). */
  #describeHub(config: CpsyncConfig, stack: Stack): PolicyStatement | undefined {
    const hub = config.hub;
    if (!hub || !('eks' in hub)) return undefined;
    const arn = stack.formatArn({
      service: 'eks',
      region: hub.eks.region,
      resource: 'cluster',
      resourceName: hub.eks.clusterName,
      arnFormat: ArnFormat.SLASH_RESOURCE_NAME,
    });
    return new PolicyStatement({ actions: ['eks:DescribeCluster'], resources: [arn] });
  }

  /**
   * GetSecretValue on exactly the cloud secrets the configuration names, for the functions that read each:
   * the cloud credentials for those that read GKE and AKS clusters, and for those that only enumerate scopes
   * (`discovers`) only where the projects or subscriptions are discovered, not listed; the Event Grid key for the
   * webhook (the hub's kubeconfig is granted with the hub, `grantHubRead`).
   */
  #grantSecrets(
    config: CpsyncConfig,
    readers: { clouds: LambdaFunction[]; discovers: LambdaFunction[]; webhook: LambdaFunction[] },
  ): void {
    const grants = new Map<string, { field: string; functions: LambdaFunction[] }>();
    const add = (
      field: string,
      ref: { secretArn?: string } | { file: string } | undefined,
      functions: LambdaFunction[],
    ) => {
      if (ref && 'secretArn' in ref && ref.secretArn) {
        const known = grants.get(ref.secretArn);
        grants.set(ref.secretArn, {
          field: known?.field ?? field,
          functions: [...new Set([...(known?.functions ?? []), ...functions])],
        });
      }
    };
    const gke = config.providers.gke;
    const aks = config.providers.aks;
    const readersOf = (listed: boolean) => [...readers.clouds, ...(listed ? [] : readers.discovers)];
    add('providers.gke.credentials.secretArn', gke?.credentials, readersOf(Array.isArray(gke?.projects)));
    if (aks?.credential && 'clientSecret' in aks.credential)
      add(
        'providers.aks.credential.clientSecret.secretArn',
        aks.credential.clientSecret,
        readersOf(Array.isArray(aks.subscriptions)),
      );
    add('webhook.azure.key.secretArn', config.webhook.azure?.key, readers.webhook);
    for (const [arn, { field, functions }] of grants)
      for (const fn of functions)
        if (this.azureWebhookKey && arn === this.azureWebhookKey.secretArn)
          grantSecretValue(this.azureWebhookKey, fn);
        else grantSecretArn(arn, fn, field);
  }

  #registerSchemas(): void {
    const registry = new CfnRegistry(this, 'Schemas', {
      description: 'cpsync event schemas (detail of each detail-type)',
    });
    for (const [detailType, schema] of Object.entries(DETAIL_SCHEMAS)) {
      const name = `cpsync@${detailType.replace(/\s+/g, '')}`;
      new CfnSchema(this, `Schema${detailType.replace(/\s+/g, '')}`, {
        registryName: registry.attrRegistryName,
        schemaName: name,
        type: 'JSONSchemaDraft4',
        content: JSON.stringify(schema),
        description: `Detail of "${detailType}"`,
      });
    }
  }

  #alarms(functions: LambdaFunction[]): void {
    this.alarms.push(
      deadLettersAlarm(this, 'DeadLetters', this.deadLetterQueue, 'Scope messages that failed three times'),
      deadLettersAlarm(
        this,
        'FollowDeadLettersAlarm',
        this.followDeadLetterQueue,
        'Follow-up looks that failed three times (their clusters are left to the schedule)',
      ),
      new Alarm(this, 'FailedScopes', {
        alarmDescription:
          'Scopes whose listing failed (access denied, API disabled, throttled past retries, timeouts)',
        metric: new Metric({
          namespace: 'cpsync',
          metricName: 'FailedScopes',
          dimensionsMap: { service: 'cpsync' },
          statistic: 'Sum',
          period: Duration.minutes(15),
        }),
        threshold: 0,
        comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 2,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      }),
    );
    for (const fn of functions) {
      this.alarms.push(
        new Alarm(this, `${fn.node.id}Errors`, {
          alarmDescription: `${fn.node.id} errors`,
          metric: fn.metricErrors({ period: Duration.minutes(5) }),
          threshold: 0,
          comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
          evaluationPeriods: 1,
          treatMissingData: TreatMissingData.NOT_BREACHING,
        }),
      );
    }
  }
}
