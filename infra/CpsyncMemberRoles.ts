/**
 * The roles cpsync asks each AWS member account to create, as a construct: deploy it in every member
 * account (a stack per account, or the synthesized template as a CloudFormation StackSet).
 *
 *   new CpsyncMemberRoles(stack, 'Cpsync', { cpsyncAccount: '111111111111' })
 */
import { ArnFormat, Stack, Token, Validations } from 'aws-cdk-lib';
import {
  AccountPrincipal,
  PolicyDocument,
  PolicyStatement,
  Role,
  type IPrincipal,
} from 'aws-cdk-lib/aws-iam';
import { Construct } from 'constructs';

export interface CpsyncMemberRolesProps {
  /** The account cpsync runs in: its function roles assume these roles. */
  readonly cpsyncAccount: string;
  /** `providers.eks.roleName`. @default 'cpsync-reader' */
  readonly readerRoleName?: string;
  /** `providers.eks.externalId`, when cpsync is configured with one: the reader's trust requires it. */
  readonly externalId?: string;
  /**
   * `memberProbe.eksRoleName`: a role the member probe signs its EKS tokens as (made only when named). It
   * needs no IAM permission (an EKS token is a presigned STS GetCallerIdentity); each cluster lets it in
   * through an access entry bound to the ClusterRole `cpsync:member-probe`.
   */
  readonly probeRoleName?: string;
  /**
   * The `accessGrants` feature: the reader may also make, change and delete the EKS access entries of these
   * consumers' roles (`consumers[].identities.eks.roleArn`), only with the level policies cpsync grants and
   * only entries tagged as the manager's. @default none (the reader only reads)
   */
  readonly accessGrants?: { readonly manager?: string; readonly consumerRoleArns: readonly string[] };
}

/** An EKS resource of the stack's account, in any region. */
function eksArn(stack: Stack, resource: string, resourceName: string): string {
  return stack.formatArn({
    service: 'eks',
    region: '*',
    resource,
    resourceName,
    arnFormat: ArnFormat.SLASH_RESOURCE_NAME,
  });
}

/** The EKS access policies cpsync grants (view, edit, admin): nothing else can be associated. */
const GRANTED_POLICIES = ['AmazonEKSViewPolicy', 'AmazonEKSEditPolicy', 'AmazonEKSAdminPolicy'];

/**
 * What the `accessGrants` feature does in an account: access entries for exactly the consumers' roles, made
 * with the manager's tag, given only the three level policies, and deleted or changed only when they carry
 * that tag (IAM itself keeps cpsync off entries it did not make).
 */
export function accessGrantStatements(
  stack: Stack,
  {
    manager = 'cpsync',
    consumerRoleArns,
    revokeOnly = false,
  }: { manager?: string; consumerRoleArns: readonly string[]; revokeOnly?: boolean },
): PolicyStatement[] {
  const arn = (resource: string, resourceName: string) => eksArn(stack, resource, resourceName);
  const entries = arn('access-entry', '*');
  const tagged = { 'aws:ResourceTag/app.kubernetes.io/managed-by': manager };
  const read = new PolicyStatement({
    actions: ['eks:DescribeAccessEntry', 'eks:ListAssociatedAccessPolicies'],
    resources: [entries],
  });
  const remove = new PolicyStatement({
    actions: ['eks:DeleteAccessEntry'],
    resources: [entries],
    conditions: { StringEquals: tagged },
  });
  // Turned off (the consumers still configured): only what taking cpsync's grants back needs.
  if (revokeOnly) return [read, remove];
  return [
    read,
    remove,
    ...(consumerRoleArns.length === 0
      ? []
      : [
          new PolicyStatement({
            actions: ['eks:CreateAccessEntry'],
            resources: [arn('cluster', '*')],
            conditions: {
              StringEquals: { 'aws:RequestTag/app.kubernetes.io/managed-by': manager },
              ArnEquals: { 'eks:principalArn': [...consumerRoleArns] },
            },
          }),
        ]),
    new PolicyStatement({
      actions: ['eks:TagResource'],
      resources: [arn('cluster', '*'), entries],
      conditions: { StringEquals: { 'aws:RequestTag/app.kubernetes.io/managed-by': manager } },
    }),
    new PolicyStatement({
      actions: ['eks:AssociateAccessPolicy', 'eks:DisassociateAccessPolicy'],
      resources: [entries],
      conditions: {
        StringEquals: tagged,
        ArnEquals: {
          'eks:policyArn': GRANTED_POLICIES.map(
            (name) => `arn:${stack.partition}:eks::aws:cluster-access-policy/${name}`,
          ),
        },
      },
    }),
  ];
}

/**
 * What cpsync reads in an account: its clusters, their node groups and (with `regions`) the account's
 * enabled regions. The member role is given all of it; cpsync's own functions, for their own account, what each does.
 */
export function memberReadStatements(stack: Stack, { regions = true } = {}): PolicyStatement[] {
  const arn = (resource: string, resourceName: string) => eksArn(stack, resource, resourceName);
  return [
    new PolicyStatement({
      actions: ['eks:DescribeCluster', 'eks:ListNodegroups'],
      resources: [arn('cluster', '*')],
    }),
    new PolicyStatement({ actions: ['eks:DescribeNodegroup'], resources: [arn('nodegroup', '*/*/*')] }),
    // Neither supports resource-level permissions.
    new PolicyStatement({
      actions: ['eks:ListClusters', ...(regions ? ['ec2:DescribeRegions'] : [])],
      resources: ['*'],
    }),
  ];
}

/** The member account's roles for cpsync: the reader (and the member probe's role, when named). */
export class CpsyncMemberRoles extends Construct {
  public readonly reader: Role;
  public readonly probe?: Role;

  constructor(scope: Construct, id: string, props: CpsyncMemberRolesProps) {
    super(scope, id);
    const stack = Stack.of(this);
    // The cpsync account decides which of its roles may assume these (its function roles alone are granted).
    const trusted = (externalId?: string): IPrincipal => {
      const principal = new AccountPrincipal(props.cpsyncAccount);
      return externalId
        ? principal.withConditions({ StringEquals: { 'sts:ExternalId': externalId } })
        : principal;
    };
    this.reader = new Role(this, 'Reader', {
      roleName: props.readerRoleName ?? 'cpsync-reader',
      description: 'cpsync reads EKS clusters, node groups and regions of this account',
      assumedBy: trusted(props.externalId),
      inlinePolicies: {
        read: new PolicyDocument({ statements: memberReadStatements(stack) }),
        ...(props.accessGrants
          ? { grant: new PolicyDocument({ statements: accessGrantStatements(stack, props.accessGrants) }) }
          : {}),
      },
    });
    if (props.accessGrants) {
      const account = Token.isUnresolved(stack.account) ? '<AWS::AccountId>' : stack.account;
      for (const resource of ['cluster/*', 'access-entry/*'])
        Validations.of(this.reader).acknowledge({
          id: `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:eks:*:${account}:${resource}]`,
          reason:
            "cpsync grants the configured consumers on any cluster of the account; IAM conditions bound it to their roles, the three level policies and the entries tagged as cpsync's.",
        });
    }
    Validations.of(this.reader).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason: 'eks:ListClusters and ec2:DescribeRegions support no resource-level permissions.',
    });
    const account = Token.isUnresolved(stack.account) ? '<AWS::AccountId>' : stack.account;
    for (const resource of ['cluster/*', 'nodegroup/*/*/*'])
      Validations.of(this.reader).acknowledge({
        id: `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:eks:*:${account}:${resource}]`,
        reason: 'cpsync discovers the clusters of the account: any of them, read only.',
      });
    if (props.probeRoleName)
      this.probe = new Role(this, 'Probe', {
        roleName: props.probeRoleName,
        description: 'cpsync member probe: EKS tokens; access to each cluster through its access entries',
        // The probe's tokens are signed as this role without an external id (as `cpsync credentials` does).
        assumedBy: trusted(),
      });
  }
}
