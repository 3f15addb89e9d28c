/** Parts every cpsync construct makes the same way: expiring tables, dead-letter queues and their alarms, secret reads. */
import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import { Alarm, ComparisonOperator, TreatMissingData } from 'aws-cdk-lib/aws-cloudwatch';
import { AttributeType, BillingMode, Table, TableEncryption } from 'aws-cdk-lib/aws-dynamodb';
import { Grant, type IGrantable } from 'aws-cdk-lib/aws-iam';
import type { ISecret } from 'aws-cdk-lib/aws-secretsmanager';
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

/** A table of one item per cluster, keyed by `cluster`: on demand, encrypted, with point-in-time recovery. */
function clusterTable(scope: Construct, id: string, removalPolicy: RemovalPolicy): Table {
  return new Table(scope, id, {
    partitionKey: { name: 'cluster', type: AttributeType.STRING },
    billingMode: BillingMode.PAY_PER_REQUEST,
    encryption: TableEncryption.AWS_MANAGED,
    pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
    removalPolicy,
  });
}

/**
 * The grants ledger (adapters/outbox/DynamoGrantLedger.ts): one item per cluster keyed by `cluster`, read per
 * account through the `byAccount` index; no TTL, and kept when the stack goes (a record lost is a grant
 * cpsync no longer knows to take back).
 */
export function ledgerTable(scope: Construct, id: string): Table {
  const table = clusterTable(scope, id, RemovalPolicy.RETAIN);
  table.addGlobalSecondaryIndex({
    indexName: 'byAccount',
    partitionKey: { name: 'account', type: AttributeType.STRING },
  });
  return table;
}

/**
 * Per-cluster records (adapters/outbox/DynamoClusterRecords.ts: the sources' remembered answers, the deletion
 * grace's counts): one item per cluster keyed by `cluster`, read per account (and region) through the `byScope`
 * index. Removed with the stack: an answer lost is asked of the cloud again, a count lost is begun again (a
 * deletion put off, never hastened).
 */
export function clusterRecordsTable(scope: Construct, id: string): Table {
  const table = clusterTable(scope, id, RemovalPolicy.DESTROY);
  table.addGlobalSecondaryIndex({
    indexName: 'byScope',
    partitionKey: { name: 'scope', type: AttributeType.STRING },
    sortKey: { name: 'region', type: AttributeType.STRING },
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
 * What IAM must match for the secret `arn` names. Secrets Manager makes a secret's ARN of its name, a `-` and six
 * random alphanumeric characters; a partial ARN leaves those out, and a secret name may itself end in `-` and six
 * of them. So an ARN whose name does not end that way is partial (`<arn>-??????`, the full ARN with any suffix, as
 * AWS documents), and one whose name does may be either: complete, or partial for a name that ends so. Then
 * both are matched, `<arn>` and `<arn>-??????` — never `*`, which would match longer names too.
 */
export function secretResourceArns(arn: string, field = 'secret'): string[] {
  const name = /^arn:[^:]+:secretsmanager:[^:]*:[^:]*:secret:(.+)$/.exec(arn)?.[1];
  if (!name)
    throw new Error(
      `${field}: ${arn} is not a Secrets Manager secret ARN (arn:<partition>:secretsmanager:<region>:<account>:secret:<name>)`,
    );
  return /-[A-Za-z0-9]{6}$/.test(name) ? [arn, `${arn}-??????`] : [`${arn}-??????`];
}

/**
 * secretsmanager:GetSecretValue on the secret `arn` names, complete or partial (see `secretResourceArns`);
 * `field` names where the ARN was given.
 */
export function grantSecretArn(arn: string, fn: IGrantable, field?: string): void {
  Grant.addToPrincipal({
    grantee: fn,
    actions: ['secretsmanager:GetSecretValue'],
    resourceArns: secretResourceArns(arn, field),
  });
}
