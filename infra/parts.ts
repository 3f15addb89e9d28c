/** Parts every cpsync construct makes the same way: expiring tables, dead-letter queues and their alarms, secret reads. */
import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import { Alarm, ComparisonOperator, TreatMissingData } from 'aws-cdk-lib/aws-cloudwatch';
import { AttributeType, BillingMode, Table, TableEncryption } from 'aws-cdk-lib/aws-dynamodb';
import { Grant, type IGrantable } from 'aws-cdk-lib/aws-iam';
import { Secret, type ISecret } from 'aws-cdk-lib/aws-secretsmanager';
import { Queue, QueueEncryption, type IQueue } from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';

/** An on-demand, encrypted table of records that expire (DynamoDB TTL), keyed by `key`. */
export function expiringTable(scope: Construct, id: string, key: string, timeToLiveAttribute: string): Table {
  return new Table(scope, id, {
    partitionKey: { name: key, type: AttributeType.STRING },
    billingMode: BillingMode.PAY_PER_REQUEST,
    encryption: TableEncryption.AWS_MANAGED,
    pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
    timeToLiveAttribute,
    removalPolicy: RemovalPolicy.DESTROY,
  });
}

/**
 * The grants ledger (adapters/outbox/DynamoGrantLedger.ts): one item per cluster keyed by `cluster`, read per
 * account through the `byAccount` index; no TTL, and kept when the stack goes (a record lost is a grant
 * cpsync no longer knows to take back).
 */
export function ledgerTable(scope: Construct, id: string): Table {
  const table = new Table(scope, id, {
    partitionKey: { name: 'cluster', type: AttributeType.STRING },
    billingMode: BillingMode.PAY_PER_REQUEST,
    encryption: TableEncryption.AWS_MANAGED,
    pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
    removalPolicy: RemovalPolicy.RETAIN,
  });
  table.addGlobalSecondaryIndex({
    indexName: 'byAccount',
    partitionKey: { name: 'account', type: AttributeType.STRING },
  });
  return table;
}

/** An encrypted queue that keeps what could not be delivered for 14 days. */
export function deadLetterQueue(scope: Construct, id: string): Queue {
  return new Queue(scope, id, {
    encryption: QueueEncryption.SQS_MANAGED,
    enforceSSL: true,
    retentionPeriod: Duration.days(14),
  });
}

/** An alarm raised as soon as anything is in `queue`. */
export function deadLettersAlarm(scope: Construct, id: string, queue: IQueue, description: string): Alarm {
  return new Alarm(scope, id, {
    alarmDescription: description,
    metric: queue.metricApproximateNumberOfMessagesVisible({ period: Duration.minutes(5) }),
    threshold: 0,
    comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
    evaluationPeriods: 1,
    treatMissingData: TreatMissingData.NOT_BREACHING,
  });
}

/** secretsmanager:GetSecretValue on `secret` (and decryption with its key, if it has one): what reading it takes. */
export function grantSecretValue(secret: ISecret, fn: IGrantable): void {
  Grant.addToPrincipal({
    grantee: fn,
    actions: ['secretsmanager:GetSecretValue'],
    // A partial ARN (no random suffix) matches the secret's full ARN with any suffix, as grantRead does.
    resourceArns: [secret.secretFullArn ?? `${secret.secretArn}-??????`],
  });
  secret.encryptionKey?.grantDecrypt(fn);
}

/**
 * The secret `arn` names, imported as complete (it ends in Secrets Manager's six-character suffix) or partial
 * (it does not): a complete ARN imported as partial is granted as `<arn>-??????`, which matches nothing.
 */
export function importedSecret(scope: Construct, id: string, arn: string): ISecret {
  return /-[A-Za-z0-9]{6}$/.test(arn)
    ? Secret.fromSecretCompleteArn(scope, id, arn)
    : Secret.fromSecretPartialArn(scope, id, arn);
}
