/** Subscriptions to cpsync's events: Cpsync.onProfileChange / onScopeSynced / onEvent and CpsyncSubscription on an imported bus. */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { App, Duration, Stack, Validations } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { EventBus } from 'aws-cdk-lib/aws-events';
import { SnsTopic } from 'aws-cdk-lib/aws-events-targets';
import { Key } from 'aws-cdk-lib/aws-kms';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { AwsSolutionsChecks } from 'cdk-nag';
import { CpsyncStack } from '../../infra/CpsyncStack.ts';
import { CpsyncSubscription } from '../../infra/CpsyncSubscription.ts';
import { ArgoCdClusterSync, ChatNotifier } from '../../infra/subscribers.ts';
import { patterns } from '../../events/patterns.ts';
import { CONFIG, ENV, NO_BUNDLING } from '../support/infra.ts';
import { temporaryDirectory } from '../support/tmp.ts';

/** An encrypted queue with its own DLQ: a target cdk-nag has nothing to say about. */
function cleanQueue(stack: Stack, id: string) {
  const dlq = new Queue(stack, `${id}Dlq`, { encryption: QueueEncryption.SQS_MANAGED, enforceSSL: true });
  Validations.of(dlq).acknowledge({ id: 'AwsSolutions-SQS3', reason: 'the test queue’s own DLQ' });
  return new Queue(stack, id, {
    encryption: QueueEncryption.SQS_MANAGED,
    enforceSSL: true,
    deadLetterQueue: { queue: dlq, maxReceiveCount: 3 },
  });
}

/** The cdk-nag findings of a synthesized app (empty when clean). */
function findings(app: App, outdir: string): unknown[] {
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  try {
    app.synth();
  } catch {
    // the report says what failed
  }
  return (
    JSON.parse(readFileSync(join(outdir, 'validation-report.json'), 'utf8')) as { pluginReports: unknown[] }
  ).pluginReports;
}

describe('subscriptions to cpsync events', () => {
  it('onProfileChange, onScopeSynced and onEvent make rules on the bus with retries, a DLQ and an alarm, cdk-nag clean', () => {
    const outdir = temporaryDirectory('cpsync-sub-');
    const app = new App({ outdir, context: NO_BUNDLING });
    const stack = new CpsyncStack(app, 'Cpsync', { env: ENV, cpsync: { config: CONFIG } });
    const cpsync = stack.cpsync;
    const mirror = cleanQueue(stack, 'Mirror');
    const failures = cleanQueue(stack, 'Failures');
    const key = new Key(stack, 'TopicKey', { enableKeyRotation: true });
    const topic = new Topic(stack, 'Upgrades', { masterKey: key, enforceSSL: true });
    const before = cpsync.alarms.length;
    const all = cpsync.onProfileChange('Mirror', { target: mirror });
    cpsync.onScopeSynced('Failures', {
      target: failures,
      pattern: patterns.scopeSynced({ outcome: 'failed' }),
      retryAttempts: 3,
      maxEventAge: Duration.hours(2),
    });
    const upgrades = cpsync.onEvent('Upgrades', {
      target: new SnsTopic(topic),
      pattern: [
        patterns.changed({ fields: ['status.version.kubernetes'] }),
        patterns.created({ provider: 'eks' }),
      ],
    });
    assert.equal(cpsync.alarms.length, before + 3, 'each subscription adds its alarm to the construct’s');
    assert.equal(upgrades.rules.length, 2);
    assert.deepEqual(findings(app, outdir), []);

    const template = Template.fromStack(stack);
    const busName = { Ref: Match.stringLikeRegexp('Bus') };
    template.hasResourceProperties('AWS::Events::Rule', {
      EventBusName: busName,
      EventPattern: {
        source: ['cpsync'],
        'detail-type': ['ClusterProfile Created', 'ClusterProfile Updated', 'ClusterProfile Deleted'],
      },
      Targets: [
        Match.objectLike({
          DeadLetterConfig: { Arn: { 'Fn::GetAtt': [Match.stringLikeRegexp('MirrorDeadLetters'), 'Arn'] } },
          RetryPolicy: { MaximumRetryAttempts: 8, MaximumEventAgeInSeconds: 86400 },
        }),
      ],
    });
    template.hasResourceProperties('AWS::Events::Rule', {
      EventPattern: { 'detail-type': ['Inventory Scope Synced'], detail: { outcome: ['failed'] } },
      Targets: [
        Match.objectLike({ RetryPolicy: { MaximumRetryAttempts: 3, MaximumEventAgeInSeconds: 7200 } }),
      ],
    });
    // A target of any kind gets the policy too, and EventBridge may write to its DLQ.
    template.hasResourceProperties('AWS::Events::Rule', {
      EventPattern: { detail: { changedFields: ['status.version.kubernetes'] } },
      Targets: [
        Match.objectLike({
          Arn: { Ref: Match.stringLikeRegexp('Upgrades') },
          DeadLetterConfig: { Arn: { 'Fn::GetAtt': [Match.stringLikeRegexp('UpgradesDeadLetters'), 'Arn'] } },
          RetryPolicy: { MaximumRetryAttempts: 8, MaximumEventAgeInSeconds: 86400 },
        }),
      ],
    });
    template.hasResourceProperties('AWS::SQS::QueuePolicy', {
      Queues: [{ Ref: Match.stringLikeRegexp('UpgradesDeadLetters') }],
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Action: 'sqs:SendMessage', Principal: { Service: 'events.amazonaws.com' } }),
        ]),
      },
    });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'ApproximateNumberOfMessagesVisible',
      Dimensions: [
        {
          Name: 'QueueName',
          Value: { 'Fn::GetAtt': [Match.stringLikeRegexp('MirrorDeadLetters'), 'QueueName'] },
        },
      ],
      Threshold: 0,
    });
    assert.ok(all.alarm);
  });

  it('works the same on a bus imported from another account, with the events’ configured source', () => {
    const outdir = temporaryDirectory('cpsync-sub-');
    const app = new App({ outdir });
    const stack = new Stack(app, 'Subscriber', { env: ENV });
    const bus = EventBus.fromEventBusArn(
      stack,
      'Bus',
      'arn:aws:events:us-east-1:111122223333:event-bus/cpsync',
    );
    const target = cleanQueue(stack, 'Target');
    const subscription = new CpsyncSubscription(stack, 'Deletions', {
      eventBus: bus,
      source: 'acme.cpsync',
      pattern: patterns.deleted({ source: 'acme.cpsync', provider: ['gke', 'aks'] }),
      target,
    });
    assert.deepEqual(findings(app, outdir), []);
    const template = Template.fromStack(stack);
    template.hasResourceProperties('AWS::Events::Rule', {
      EventBusName: 'cpsync',
      EventPattern: {
        source: ['acme.cpsync'],
        'detail-type': ['ClusterProfile Deleted'],
        detail: { cluster: { provider: ['gke', 'aks'] } },
      },
      Targets: [Match.objectLike({ DeadLetterConfig: Match.anyValue(), RetryPolicy: Match.anyValue() })],
    });
    template.resourceCountIs('AWS::CloudWatch::Alarm', 1);
    assert.ok(subscription.deadLetterQueue);
  });

  it('refuses a pattern of another source, an empty list and a bad retry count, naming them', () => {
    const stack = new Stack(new App(), 'S', { env: ENV });
    const bus = EventBus.fromEventBusName(stack, 'Bus', 'cpsync');
    const target = new Queue(stack, 'Q');
    assert.throws(
      () =>
        new CpsyncSubscription(stack, 'A', {
          eventBus: bus,
          source: 'acme',
          pattern: patterns.created(),
          target,
        }),
      /S\/A: a pattern selects source \["cpsync"\], but cpsync publishes with source "acme"/,
    );
    assert.throws(
      () => new CpsyncSubscription(stack, 'B', { eventBus: bus, pattern: [], target }),
      /S\/B: pattern: give at least one/,
    );
    assert.throws(
      () =>
        new CpsyncSubscription(stack, 'C', {
          eventBus: bus,
          pattern: patterns.created(),
          target,
          retryAttempts: 200,
        }),
      /retryAttempts must be a whole number from 0 to 185, got 200/,
    );
  });
});

describe('the example subscribers’ constructs', () => {
  it('ChatNotifier and ArgoCdClusterSync subscribe through the construct, cdk-nag clean', () => {
    const outdir = temporaryDirectory('cpsync-sub-');
    const app = new App({ outdir, context: NO_BUNDLING });
    const stack = new CpsyncStack(app, 'Cpsync', { env: ENV, cpsync: { config: CONFIG } });
    const webhook = new Secret(stack, 'Webhook', { description: 'chat webhook URL' });
    Validations.of(webhook).acknowledge({
      id: 'AwsSolutions-SMG4',
      reason: 'a webhook URL is rotated by hand',
    });
    const chat = new ChatNotifier(stack, 'Chat', {
      cpsync: stack.cpsync,
      webhookSecret: webhook,
      format: 'teams',
    });
    const argo = new ArgoCdClusterSync(stack, 'ArgoCd', {
      cpsync: stack.cpsync,
      credentialsArgs: ['--role-name', 'argocd'],
    });
    assert.deepEqual(findings(app, outdir), []);
    assert.equal(chat.subscription.rules.length, 4);
    const failedAlarm = stack.cpsync.alarms.find((alarm) =>
      alarm.node.path.endsWith('Chat/FailedMessagesAlarm'),
    );
    assert.ok(failedAlarm, 'an alarm on the chat queue’s dead-letter queue');
    const template = Template.fromStack(stack);
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      BatchSize: 1000,
      MaximumBatchingWindowInSeconds: 30,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      ScalingConfig: { MaximumConcurrency: 2 },
    });
    template.hasResourceProperties('AWS::Events::Rule', {
      EventPattern: { 'detail-type': ['Inventory Scope Synced'], detail: { outcome: ['failed', 'partial'] } },
      Targets: [Match.objectLike({ Arn: { 'Fn::GetAtt': [Match.stringLikeRegexp('ChatEvents'), 'Arn'] } })],
    });
    template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: {
        Variables: Match.objectLike({
          CHAT_FORMAT: 'teams',
          CHAT_WEBHOOK_SECRET: { Ref: Match.stringLikeRegexp('Webhook') },
          CHAT_MIN_INTERVAL_MS: '1000',
          // Traced, its posts are not: X-Ray would keep the webhook's path, its token.
          POWERTOOLS_TRACER_CAPTURE_HTTPS_REQUESTS: 'false',
        }),
      },
    });
    template.hasResourceProperties('AWS::Events::Rule', {
      EventPattern: {
        'detail-type': [
          'ClusterProfile Created',
          'ClusterProfile Updated',
          'ClusterProfile Deleted',
          'ClusterProfile Announced',
        ],
      },
      Targets: [
        Match.objectLike({
          Arn: { 'Fn::GetAtt': [Match.stringLikeRegexp('ArgoCdFunction'), 'Arn'] },
          DeadLetterConfig: Match.anyValue(),
          RetryPolicy: { MaximumRetryAttempts: 8, MaximumEventAgeInSeconds: 86400 },
        }),
      ],
    });
    template.hasResourceProperties('AWS::Scheduler::Schedule', {
      ScheduleExpression: 'rate(1 hour)',
      Target: Match.objectLike({ Input: JSON.stringify({ reconcile: true }) }),
    });
    template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: {
        Variables: Match.objectLike({
          ARGOCD_NAMESPACE: 'argocd',
          ARGOCD_CREDENTIALS_ARGS: '["--role-name","argocd"]',
          CPSYNC_CONFIG: Match.anyValue(),
        }),
      },
    });
    assert.ok(argo.schedule);
  });
});
