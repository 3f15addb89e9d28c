/**
 * The two example subscribers, deployable next to a `Cpsync` construct: the chat notifier (Slack or
 * Microsoft Teams incoming webhooks) and the Argo CD cluster-Secret sync. Each subscribes with
 * `cpsync.onEvent`, so it gets the retry policy, the dead-letter queue and the alarm every subscription has.
 */
import { CfnOutput, Duration, Stack } from 'aws-cdk-lib';
import type { Table } from 'aws-cdk-lib/aws-dynamodb';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import type { Function as LambdaFunction } from 'aws-cdk-lib/aws-lambda';
import { Schedule, ScheduleExpression, ScheduleTargetInput } from 'aws-cdk-lib/aws-scheduler';
import { LambdaInvoke } from 'aws-cdk-lib/aws-scheduler-targets';
import type { ISecret } from 'aws-cdk-lib/aws-secretsmanager';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { patterns } from '../events/patterns.ts';
import type { Cpsync } from './Cpsync.ts';
import type { CpsyncSubscription } from './CpsyncSubscription.ts';
import { acknowledgeManagedLogsPolicy, acknowledgeSchedulerInvoke } from './nagAcknowledgements.ts';
import {
  deadLetterQueue,
  deadLettersAlarm,
  expiringTable,
  grantSecretArn,
  grantSecretValue,
} from './parts.ts';

export interface ChatNotifierProps {
  readonly cpsync: Cpsync;
  /**
   * The secret holding the incoming-webhook URL (its text, or JSON `{"url": "..."}`). Exclusive with
   * `webhookSecretArn`; one of them is required.
   */
  readonly webhookSecret?: ISecret;
  /**
   * That secret by its ARN, complete or partial (as the configuration's `subscribers.chat` gives it: an ARN
   * whose name ends in `-` and six letters or digits may be either, and is granted both ways).
   */
  readonly webhookSecretArn?: string;
  /** @default 'slack' */
  readonly format?: 'slack' | 'teams';
  /**
   * How long the queue gathers events before the function runs: the events of one sync in that window
   * become one message.
   * @default Duration.seconds(30)
   */
  readonly batchingWindow?: Duration;
  /**
   * The least time between two posts (Slack allows about one message a second per webhook).
   * @default Duration.seconds(1)
   */
  readonly minInterval?: Duration;
  /**
   * How long a sync must be quiet before its message goes: its events are gathered across batches
   * (a sync of thousands of clusters spans several) into one digest, posted once no event of it came
   * for this long. `Duration.seconds(0)`: a message per batch. At most 15 minutes (SQS's longest delay).
   * @default Duration.seconds(60)
   */
  readonly quiet?: Duration;
}

/**
 * Posts a message per sync about created and deleted clusters, version upgrades, health changes and
 * failed scopes: EventBridge rules (from the kit's patterns) → an SQS queue with a batching window →
 * the function → the chat's incoming webhook.
 */
export class ChatNotifier extends Construct {
  public readonly function: LambdaFunction;
  public readonly queue: Queue;
  public readonly subscription: CpsyncSubscription;
  public readonly deliveredTable: Table;

  constructor(scope: Construct, id: string, props: ChatNotifierProps) {
    super(scope, id);
    const { cpsync } = props;
    if (!props.webhookSecret === !props.webhookSecretArn)
      throw new Error('ChatNotifier: give either webhookSecret or webhookSecretArn (one of them)');
    const webhookSecret = props.webhookSecret?.secretArn ?? props.webhookSecretArn!;
    const timeout = Duration.minutes(2);
    const quiet = (props.quiet ?? Duration.seconds(60)).toSeconds();
    if (quiet > 900) throw new Error(`quiet is ${quiet} s; SQS delays a message 900 s at most`);
    const failed = deadLetterQueue(this, 'FailedMessages');
    this.queue = new Queue(this, 'Events', {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      visibilityTimeout: Duration.seconds(timeout.toSeconds() * 6),
      deadLetterQueue: { queue: failed, maxReceiveCount: 5 },
    });
    // Messages the function gave up on five times: kept, and someone is told.
    cpsync.alarms.push(
      deadLettersAlarm(this, 'FailedMessagesAlarm', failed, 'Chat notifier events that failed five times'),
    );
    this.deliveredTable = expiringTable(this, 'Delivered', 'id', 'expiration');
    this.function = cpsync.addFunction(this, 'Function', {
      entry: 'subscribers/chat/handler.ts',
      timeout,
      memorySize: 256,
      // The notifier reads no configuration of cpsync's: its settings are these.
      configuration: 'none',
      environment: {
        CHAT_WEBHOOK_SECRET: webhookSecret,
        CHAT_FORMAT: props.format ?? 'slack',
        CHAT_IDEMPOTENCY_TABLE: this.deliveredTable.tableName,
        CHAT_MIN_INTERVAL_MS: String((props.minInterval ?? Duration.seconds(1)).toMilliseconds()),
        CHAT_QUIET_SECONDS: String(quiet),
        ...(quiet > 0 ? { CHAT_FLUSH_QUEUE_URL: this.queue.queueUrl } : {}),
        POWERTOOLS_SERVICE_NAME: 'cpsync-chat',
        // With tracing on, X-Ray would record each post's URL, host and path: a chat webhook's token is in its path
        // (Slack, Discord, Teams' incoming webhooks) or its query (Teams' workflows).
        POWERTOOLS_TRACER_CAPTURE_HTTPS_REQUESTS: 'false',
      },
    });
    acknowledgeManagedLogsPolicy(this.function);
    if (props.webhookSecret) grantSecretValue(props.webhookSecret, this.function);
    else grantSecretArn(webhookSecret, this.function, 'webhookSecretArn');
    this.deliveredTable.grant(this.function, 'dynamodb:BatchGetItem', 'dynamodb:BatchWriteItem');
    if (quiet > 0) {
      // The digests (one item per sync) and their flushes, sent to the notifier's own queue.
      this.deliveredTable.grant(this.function, 'dynamodb:GetItem', 'dynamodb:UpdateItem');
      this.queue.grantSendMessages(this.function);
    }
    this.function.addEventSource(
      new SqsEventSource(this.queue, {
        batchSize: 1000,
        maxBatchingWindow: props.batchingWindow ?? Duration.seconds(30),
        reportBatchItemFailures: true,
        // The least concurrency SQS allows: posts to one webhook stay nearly sequential (429s are waited out).
        maxConcurrency: 2,
      }),
    );
    const source = cpsync.eventSource;
    this.subscription = cpsync.onEvent('ChatEvents', {
      target: this.queue,
      pattern: [
        patterns.created({ source }),
        patterns.deleted({ source }),
        patterns.changed({
          source,
          fields: ['status.version.kubernetes'],
          fieldPrefixes: ['status.conditions'],
        }),
        patterns.scopeSynced({ source, outcome: ['failed', 'partial'] }),
      ],
      description: 'cpsync chat notifier',
    });
  }
}

export interface ArgoCdClusterSyncProps {
  readonly cpsync: Cpsync;
  /**
   * The kubeconfig of the cluster Argo CD runs on, kept in Secrets Manager. Exclusive with
   * `argoCdKubeconfigArn`.
   * @default the hub (Argo CD runs on the hub)
   */
  readonly argoCdKubeconfig?: ISecret;
  /**
   * That secret by its ARN, complete or partial (as the configuration's `subscribers.argocd` gives it).
   * @default the hub
   */
  readonly argoCdKubeconfigArn?: string;
  /**
   * On a hub reached with a kubeconfig (the configuration's `hub.kubeconfigSecretArn`): a kubeconfig of the
   * subscriber's own identity on the hub (`cpsync consumers argocd-subscriber` binds its RBAC), in Secrets Manager,
   * by its ARN. The subscriber never reaches the hub as cpsync. On an EKS hub its role is mapped instead (the stack's
   * `ArgoCdHubRole` output). Required on a kubeconfig hub; not used on another.
   */
  readonly hubKubeconfigSecretArn?: string;
  /** @default 'argocd' */
  readonly namespace?: string;
  /** The credential plugin Argo CD runs. @default 'cpsync' */
  readonly credentialsCommand?: string;
  /** Arguments added to every cluster's `cpsync credentials` call (e.g. `['--role-name', 'argocd']`). */
  readonly credentialsArgs?: readonly string[];
  /**
   * How often every Secret is rebuilt from the hub (a missed event is mended by the next one).
   * @default Duration.hours(1)
   */
  readonly reconcileEvery?: Duration;
  /**
   * Profiles in a namespace where the hub's admission policy does not keep others from writing them: `refuse`d (no
   * Secret made or changed from them; one written from the same profile while the namespace was guarded stays as it
   * was, any other is removed), or `trust`ed (a hub whose ClusterProfile writers are all trusted).
   * @default 'refuse'
   */
  readonly unguardedHub?: 'refuse' | 'trust';
  /**
   * How long the reconcile keeps the Secret of a profile missing from the hub (cpsync writes it again at its next
   * sync; a Deleted event of cpsync's removes the Secret at once). Longer than the sync's schedule.
   * @default Duration.hours(1)
   */
  readonly missingProfileGrace?: Duration;
}

/**
 * Keeps Argo CD's cluster Secrets in step with the inventory: every Created, Updated, Deleted and
 * Announced event, once per event id, and a full reconcile from the hub on a schedule (or on demand:
 * invoke the function with `{"reconcile": true}`). Its role must be allowed to read ClusterProfiles in
 * the hub and to manage Secrets in Argo CD's namespace (see docs/events.md).
 */
export class ArgoCdClusterSync extends Construct {
  public readonly function: LambdaFunction;
  public readonly subscription: CpsyncSubscription;
  public readonly schedule: Schedule;
  public readonly idempotencyTable: Table;

  constructor(scope: Construct, id: string, props: ArgoCdClusterSyncProps) {
    super(scope, id);
    const { cpsync } = props;
    if (props.argoCdKubeconfig && props.argoCdKubeconfigArn)
      throw new Error('ArgoCdClusterSync: give either argoCdKubeconfig or argoCdKubeconfigArn, not both');
    // A profile someone else deleted is written again at the next full sync: a shorter grace removes its Secret first.
    const grace = (props.missingProfileGrace ?? Duration.hours(1)).toMinutes();
    const every = cpsync.syncInterval.toMinutes({ integral: false });
    if (grace > 0 && grace <= every)
      throw new Error(
        `ArgoCdClusterSync: missingProfileGrace (${grace} minutes) must be longer than the full sync's interval (${every} minutes), or 0 to remove a missing profile's Secret at once: cpsync writes a profile someone deleted again at its next sync`,
      );
    const kubeconfig = props.argoCdKubeconfig?.secretArn ?? props.argoCdKubeconfigArn;
    if (cpsync.hubKubeconfigSecretArn && !props.hubKubeconfigSecretArn)
      throw new Error(
        "ArgoCdClusterSync: the hub is reached with a kubeconfig (hub.kubeconfigSecretArn), which is cpsync's own identity: give the subscriber a kubeconfig of its own identity on the hub (the configuration's subscribers.argocd.hubKubeconfigSecretArn, the construct's hubKubeconfigSecretArn; cpsync consumers argocd-subscriber prints the RBAC that identity needs)",
      );
    this.idempotencyTable = expiringTable(this, 'Idempotency', 'id', 'expiration');
    this.function = cpsync.addFunction(this, 'Function', {
      entry: 'subscribers/argocd/handler.ts',
      timeout: Duration.minutes(5),
      memorySize: 512,
      // The hub and the inventory; not the clouds, their credentials or the consumers.
      configuration: 'hub',
      ...(props.hubKubeconfigSecretArn ? { hubKubeconfigSecretArn: props.hubKubeconfigSecretArn } : {}),
      environment: {
        ARGOCD_NAMESPACE: props.namespace ?? 'argocd',
        ARGOCD_CREDENTIALS_COMMAND: props.credentialsCommand ?? 'cpsync',
        ARGOCD_CREDENTIALS_ARGS: JSON.stringify(props.credentialsArgs ?? []),
        ARGOCD_IDEMPOTENCY_TABLE: this.idempotencyTable.tableName,
        ARGOCD_UNGUARDED_HUB: props.unguardedHub ?? 'refuse',
        ARGOCD_MISSING_PROFILE_GRACE_MINUTES: String(grace),
        ...(kubeconfig ? { ARGOCD_KUBECONFIG_SECRET_ARN: kubeconfig } : {}),
        POWERTOOLS_SERVICE_NAME: 'cpsync-argocd',
      },
    });
    acknowledgeManagedLogsPolicy(this.function);
    // An identity of its own on the hub: cpsync's writes profiles, the subscriber's reads them and writes Secrets.
    cpsync.grantHubRead(this.function, {
      ownIdentity: props.hubKubeconfigSecretArn ? { kubeconfigSecretArn: props.hubKubeconfigSecretArn } : {},
    });
    // In the stack itself, named after this construct (`ArgoCdHubRole` for the id `ArgoCd`).
    new CfnOutput(Stack.of(this), `${id}HubRole`, {
      value: this.function.role!.roleArn,
      description:
        "The Argo CD subscriber's role: on an EKS hub, map it to the subscriber's own hub user (cpsync consumers argocd-subscriber prints the access entry), never to cpsync's",
    });
    if (props.argoCdKubeconfig) grantSecretValue(props.argoCdKubeconfig, this.function);
    else if (props.argoCdKubeconfigArn)
      grantSecretArn(props.argoCdKubeconfigArn, this.function, 'argoCdKubeconfigArn');
    this.idempotencyTable.grant(
      this.function,
      'dynamodb:GetItem',
      'dynamodb:PutItem',
      'dynamodb:UpdateItem',
      'dynamodb:DeleteItem',
    );
    this.subscription = cpsync.onEvent('ArgoCdEvents', {
      target: this.function,
      pattern: patterns.inventory({ source: cpsync.eventSource }),
      description: 'cpsync Argo CD cluster Secrets',
    });
    this.schedule = new Schedule(this, 'Reconcile', {
      schedule: ScheduleExpression.rate(props.reconcileEvery ?? Duration.hours(1)),
      description: 'cpsync: rebuild the Argo CD cluster Secrets from the hub',
      target: new LambdaInvoke(this.function, {
        input: ScheduleTargetInput.fromObject({ reconcile: true }),
        retryAttempts: 2,
      }),
    });
    acknowledgeSchedulerInvoke(this.function);
  }
}

/** The example subscribers a configuration asks for (`subscribers`), as `configuredSubscribers` makes them. */
export interface ConfiguredSubscribers {
  readonly chat?: ChatNotifier;
  readonly argoCd?: ArgoCdClusterSync;
}

/**
 * The example subscribers the configuration's `subscribers` section asks for, made in `scope` beside `cpsync`
 * with the constructs above (ids `Chat` and `ArgoCd`): what the CDK app deploys. A section left out makes
 * nothing.
 */
export function configuredSubscribers(scope: Construct, cpsync: Cpsync): ConfiguredSubscribers {
  const { chat, argocd } = cpsync.subscribers ?? {};
  return {
    ...(chat
      ? {
          chat: new ChatNotifier(scope, 'Chat', {
            cpsync,
            webhookSecretArn: chat.webhookSecretArn,
            format: chat.format,
            quiet: Duration.seconds(chat.quietSeconds),
            batchingWindow: Duration.seconds(chat.batchingWindowSeconds),
            minInterval: Duration.millis(chat.minIntervalMillis),
          }),
        }
      : {}),
    ...(argocd
      ? {
          argoCd: new ArgoCdClusterSync(scope, 'ArgoCd', {
            cpsync,
            namespace: argocd.namespace,
            ...(argocd.kubeconfigSecretArn ? { argoCdKubeconfigArn: argocd.kubeconfigSecretArn } : {}),
            ...(argocd.hubKubeconfigSecretArn
              ? { hubKubeconfigSecretArn: argocd.hubKubeconfigSecretArn }
              : {}),
            credentialsCommand: argocd.credentialsCommand,
            credentialsArgs: argocd.credentialsArgs,
            reconcileEvery: Duration.minutes(argocd.reconcileEveryMinutes),
            unguardedHub: argocd.unguardedHub,
            missingProfileGrace: Duration.minutes(argocd.missingProfileGraceMinutes),
          }),
        }
      : {}),
  };
}
