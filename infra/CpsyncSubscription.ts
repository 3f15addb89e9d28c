/**
 * A subscription to cpsync's events: one EventBridge rule per pattern (the subscriber kit's `patterns`),
 * all delivering to one target with a retry policy and a dead-letter queue, and an alarm on that queue.
 * `Cpsync.onProfileChange` / `onScopeSynced` / `onEvent` make one on the construct's bus; made directly,
 * it subscribes to any bus — one the stack owns or one imported by ARN from another stack or account.
 */
import { Duration, Validations } from 'aws-cdk-lib';
import type { Alarm } from 'aws-cdk-lib/aws-cloudwatch';
import {
  Rule,
  type IEventBus,
  type IRule,
  type IRuleTarget,
  type RuleTargetConfig,
} from 'aws-cdk-lib/aws-events';
import { LambdaFunction, SqsQueue, addToDeadLetterQueueResourcePolicy } from 'aws-cdk-lib/aws-events-targets';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { DEFAULT_SOURCE } from '../events/detailTypes.ts';
import type { EventPattern } from '../events/patterns.ts';
import { deadLetterQueue, deadLettersAlarm } from './parts.ts';

export interface SubscriptionOptions {
  /**
   * What to receive: a pattern from the subscriber kit (`patterns.created()`, `patterns.changed({ fields })`, …),
   * or several — each becomes a rule delivering to the same target.
   */
  readonly pattern: EventPattern | readonly EventPattern[];
  /** Where events go: a Lambda function, an SQS queue, or any EventBridge rule target. */
  readonly target: IFunction | IQueue | IRuleTarget;
  readonly description?: string;
  /**
   * How often EventBridge retries a delivery the target refused.
   * @default 8
   */
  readonly retryAttempts?: number;
  /**
   * How long EventBridge keeps retrying an event.
   * @default Duration.hours(24)
   */
  readonly maxEventAge?: Duration;
  /**
   * Where events go that could not be delivered.
   * @default a new encrypted queue keeping them 14 days
   */
  readonly deadLetterQueue?: IQueue;
  /**
   * Alarm when an event reaches the dead-letter queue.
   * @default true
   */
  readonly alarm?: boolean;
}

export interface CpsyncSubscriptionProps extends SubscriptionOptions {
  /** The bus cpsync publishes to (its own, or one imported with `EventBus.fromEventBusArn`). */
  readonly eventBus: IEventBus;
  /**
   * The `source` the events carry: every pattern must select it.
   * @default 'cpsync'
   */
  readonly source?: string;
}

const DEFAULTS = { retryAttempts: 8, maxEventAge: Duration.hours(24) } as const;

const isFunction = (target: SubscriptionOptions['target']): target is IFunction =>
  'functionArn' in target && 'addPermission' in target;
const isQueue = (target: SubscriptionOptions['target']): target is IQueue =>
  'queueArn' in target && 'queueUrl' in target;

/** The CDK form of a pattern as EventBridge takes it (`detail-type` → `detailType`). */
function cdkPattern(pattern: EventPattern) {
  return {
    source: pattern.source,
    detailType: pattern['detail-type'],
    ...(pattern.detail ? { detail: pattern.detail } : {}),
  };
}

export class CpsyncSubscription extends Construct {
  /** One rule per pattern. */
  public readonly rules: Rule[];
  public readonly deadLetterQueue: IQueue;
  /** Raised when an event reaches the dead-letter queue (absent when `alarm: false`). */
  public readonly alarm?: Alarm;

  constructor(scope: Construct, id: string, props: CpsyncSubscriptionProps) {
    super(scope, id);
    const source = props.source ?? DEFAULT_SOURCE;
    const patterns = Array.isArray(props.pattern) ? [...props.pattern] : [props.pattern as EventPattern];
    if (patterns.length === 0) throw new Error(`${this.node.path}: pattern: give at least one pattern`);
    for (const pattern of patterns)
      if (!pattern.source?.includes(source))
        throw new Error(
          `${this.node.path}: a pattern selects source ${JSON.stringify(pattern.source)}, but cpsync publishes with source ` +
            `${JSON.stringify(source)}: build it with patterns.*({ source: ${JSON.stringify(source)} })`,
        );
    const retryAttempts = props.retryAttempts ?? DEFAULTS.retryAttempts;
    if (!Number.isInteger(retryAttempts) || retryAttempts < 0 || retryAttempts > 185)
      throw new Error(
        `${this.node.path}: retryAttempts must be a whole number from 0 to 185, got ${retryAttempts}`,
      );
    const maxEventAge = props.maxEventAge ?? DEFAULTS.maxEventAge;

    if (props.deadLetterQueue) this.deadLetterQueue = props.deadLetterQueue;
    else {
      const queue = deadLetterQueue(this, 'DeadLetters');
      // It is the rule target's dead-letter queue (EventBridge's DeadLetterConfig), which cdk-nag cannot see.
      Validations.of(queue).acknowledge({
        id: 'AwsSolutions-SQS3',
        reason:
          "This queue is the EventBridge rule target's dead-letter queue; a DLQ of its own would only move the same messages.",
      });
      this.deadLetterQueue = queue;
    }
    const delivery = { deadLetterQueue: this.deadLetterQueue, retryAttempts, maxEventAge };
    const target = props.target;
    const ruleTarget: IRuleTarget = isFunction(target)
      ? new LambdaFunction(target, delivery)
      : isQueue(target)
        ? new SqsQueue(target, delivery)
        : withDelivery(target, delivery);

    this.rules = patterns.map(
      (pattern, index) =>
        new Rule(this, patterns.length === 1 ? 'Rule' : `Rule${index + 1}`, {
          eventBus: props.eventBus,
          eventPattern: cdkPattern(pattern),
          description: props.description ?? `cpsync events: ${pattern['detail-type'].join(', ')}`,
          targets: [ruleTarget],
        }),
    );

    if (props.alarm ?? true)
      this.alarm = deadLettersAlarm(
        this,
        'DeadLettersAlarm',
        this.deadLetterQueue,
        `cpsync events that could not be delivered to ${this.node.path}`,
      );
  }
}

/**
 * A rule target of any kind given the subscription's retry policy and dead-letter queue (unless it
 * sets its own), and the queue's permission for EventBridge to send to it.
 */
function withDelivery(
  target: IRuleTarget,
  delivery: { deadLetterQueue: IQueue; retryAttempts: number; maxEventAge: Duration },
): IRuleTarget {
  return {
    bind(rule: IRule, id?: string): RuleTargetConfig {
      const config = target.bind(rule, id);
      if (config.deadLetterConfig) return config;
      addToDeadLetterQueueResourcePolicy(rule, delivery.deadLetterQueue);
      return {
        ...config,
        deadLetterConfig: { arn: delivery.deadLetterQueue.queueArn },
        retryPolicy: config.retryPolicy ?? {
          maximumRetryAttempts: delivery.retryAttempts,
          maximumEventAgeInSeconds: delivery.maxEventAge.toSeconds(),
        },
      };
    },
  };
}
