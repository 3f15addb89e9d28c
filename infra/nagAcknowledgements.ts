import { Stack, Token, Validations } from 'aws-cdk-lib';
import type { CfnElement } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';
import type { Cpsync } from './Cpsync.ts';
import { ACCESS_GRANTS_REASON, accessGrantResources } from './CpsyncMemberRoles.ts';

const REASONS = {
  managedLogsPolicy:
    'AWSLambdaBasicExecutionRole only lets a function write its own CloudWatch logs; it is the policy AWS maintains for exactly that.',
  assumeMemberRole:
    'cpsync reads clusters in member accounts through one named role; the account cannot be known in advance, the role name is fixed.',
  ownEksReads:
    "DescribeCluster, ListNodegroups and DescribeNodegroup in cpsync's own account, on any of its clusters (which cpsync discovers).",
  listCalls:
    'eks:ListClusters, ec2:DescribeRegions, sts:GetCallerIdentity and the Organizations List* calls support no resource-level permissions.',
  schedulerInvoke:
    'The scheduler role may invoke the scheduled function and its versions/aliases (the CDK scheduler target grant).',
  webhookKeyRotation:
    'The Event Grid key is rotated by updating the event subscription with a new key; automatic rotation would break deliveries in flight.',
} as const;

/** A function's role uses AWS's managed logs policy (every Lambda function the CDK makes does). */
export function acknowledgeManagedLogsPolicy(fn: IConstruct): void {
  Validations.of(fn).acknowledge({
    id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]',
    reason: REASONS.managedLogsPolicy,
  });
}

/** The stack's scheduler role may invoke `fn` and its versions (the CDK scheduler target grant). */
export function acknowledgeSchedulerInvoke(fn: IConstruct): void {
  const stack = Stack.of(fn);
  Validations.of(stack).acknowledge({
    id: `AwsSolutions-IAM5[Resource::<${stack.getLogicalId(fn.node.defaultChild as CfnElement)}.Arn>:*]`,
    reason: REASONS.schedulerInvoke,
  });
}

/** The cdk-nag (AwsSolutions) findings cpsync accepts, each with its reason, acknowledged one by one. */
export function acknowledgeFindings(
  cpsync: Cpsync,
  memberRoleName: string | undefined,
  accessGrants = false,
): void {
  const stack = Stack.of(cpsync);
  const account = Token.isUnresolved(stack.account) ? '<AWS::AccountId>' : stack.account;
  const functions = [
    cpsync.scopeEnumerator,
    cpsync.scopeWorker,
    cpsync.eksEventHandler,
    cpsync.webhook,
    cpsync.followUp,
  ];
  for (const fn of functions) {
    const scope = Validations.of(fn);
    acknowledgeManagedLogsPolicy(fn);
    if (memberRoleName) {
      scope.acknowledge({
        id: `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:iam::*:role/${memberRoleName}]`,
        reason: REASONS.assumeMemberRole,
      });
      scope.acknowledge({
        id: `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:eks:*:${account}:cluster/*]`,
        reason: REASONS.ownEksReads,
      });
      scope.acknowledge({
        id: `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:eks:*:${account}:nodegroup/*/*/*]`,
        reason: REASONS.ownEksReads,
      });
      scope.acknowledge({ id: 'AwsSolutions-IAM5[Resource::*]', reason: REASONS.listCalls });
      if (accessGrants)
        for (const [region, resource] of accessGrantResources(cpsync.accessGrantRoleArns, cpsync.eksRegions))
          // Any region's clusters are acknowledged above, for the reads.
          if (region !== '*' || resource.startsWith('access-entry/'))
            scope.acknowledge({
              id: `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:eks:${region}:${account}:${resource}]`,
              reason: ACCESS_GRANTS_REASON,
            });
    }
  }
  acknowledgeSchedulerInvoke(cpsync.scopeEnumerator);
  if (cpsync.azureWebhookKey)
    Validations.of(cpsync.azureWebhookKey).acknowledge({
      id: 'AwsSolutions-SMG4',
      reason: REASONS.webhookKeyRotation,
    });
}
