/**
 * The roles cpsync asks each AWS member account to create, as a construct: deploy it in every member
 * account (a stack per account, or the synthesized template as a CloudFormation StackSet).
 *
 *   new CpsyncMemberRoles(stack, 'Cpsync', { cpsyncAccount: '111111111111', config })
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
import { IAM_PRINCIPAL_ARN, parseConfig } from '../adapters/compose/config.ts';
import { GRANT_CONSUMER_KEY, GRANT_MANAGER_KEY, GRANT_SOURCE_IDENTITY } from '../adapters/grants/marks.ts';
import { ACCESS_LEVELS, eksAccessPolicyArn, type AccessLevel } from '../core/domain/grants.ts';

export interface CpsyncMemberRolesProps {
  /** The account cpsync runs in: its function roles assume these roles. */
  readonly cpsyncAccount: string;
  /**
   * The cpsync configuration, as the `Cpsync` construct is given it: the reader's name, external id and operators
   * (`providers.eks.roleName`, `externalId`, `operators`), the member probe's role (`memberProbe.eksRoleName`, while the
   * feature is on) and the accessGrants terms — the manager, the consumers' EKS roles and names, while the
   * feature is on or consumers are configured (only taking grants back while it is off) — are taken from it.
   * Exclusive with `readerRoleName`, `externalId`, `operators`, `probeRoleName` and `accessGrants`.
   * @default none: those props say it
   */
  readonly config?: unknown;
  /** `providers.eks.roleName`. @default 'cpsync-reader' */
  readonly readerRoleName?: string;
  /** `providers.eks.externalId`, when cpsync is configured with one: the reader's trust requires it. */
  readonly externalId?: string;
  /**
   * `providers.eks.operators`: the IAM roles or users of the cpsync account, each by its exact ARN, that may assume
   * these roles besides cpsync's function roles (those of the IAM path `FUNCTION_ROLE_PATH`): whoever runs cpsync from
   * the CLI. @default none: cpsync's functions alone
   */
  readonly operators?: readonly string[];
  /**
   * `memberProbe.eksRoleName`: a role the member probe signs its EKS tokens as (made only when named). It
   * needs no IAM permission (an EKS token is a presigned STS GetCallerIdentity); each cluster lets it in
   * through an access entry bound to the ClusterRole `cpsync:member-probe`.
   */
  readonly probeRoleName?: string;
  /**
   * The `accessGrants` feature: the reader may also make, change and delete the EKS access entries of these
   * consumers' roles (`consumers[].identities.eks.roleArn`), only `STANDARD` entries without Kubernetes
   * groups or username, only with the level policies cpsync grants, and only entries tagged as the manager's
   * (see `accessGrantStatements`). @default none (the reader only reads)
   */
  readonly accessGrants?: {
    /**
     * The configuration's `manager`: the `app.kubernetes.io/managed-by` value cpsync tags its entries with,
     * and the only one IAM lets it write and act on. No default: a manager other than the configuration's
     * would refuse every grant cpsync makes.
     */
    readonly manager: string;
    /** The consumers' roles: the only principals whose access entries the reader may make, tag or change. */
    readonly consumerRoleArns: readonly string[];
    /**
     * The consumers' names (`consumers[].name`): the `cpsync.io/consumer` tag of an entry the reader makes
     * must be one of them. @default any value (the key is still one of the only two allowed)
     */
    readonly consumerNames?: readonly string[];
    /**
     * Each consumer's terms (`consumers[]`: its name, EKS role, level and member namespaces): IAM then lets the
     * reader give each consumer's role's entries only that consumer's level, at its scope (the cluster, or only
     * its namespaces), tagged with only its name. @default each role may get any of the three levels, at any scope
     */
    readonly consumers?: readonly GrantedConsumer[];
    /**
     * The regions cpsync reads (`providers.eks.regions`): every grant only on clusters and entries there.
     * @default any region
     */
    readonly regions?: readonly string[];
  };
}

/** A consumer as IAM bounds what the reader may grant it (`consumers[]` of the configuration). */
export interface GrantedConsumer {
  readonly name: string;
  /** `identities.eks.roleArn`. */
  readonly roleArn: string;
  readonly level: AccessLevel;
  /** `memberNamespaces`: its grants are of these namespaces only. @default the whole cluster */
  readonly memberNamespaces?: readonly string[];
}

/** An EKS resource of the stack's account, in `region` (any, by default). */
function eksArn(stack: Stack, resource: string, resourceName: string, region = '*'): string {
  return stack.formatArn({
    service: 'eks',
    region,
    resource,
    resourceName,
    arnFormat: ArnFormat.SLASH_RESOURCE_NAME,
  });
}

/** The regions grants are held to: those the configuration lists, else any (`*`). */
const grantRegions = (regions?: readonly string[]) =>
  regions?.length ? [...new Set(regions)].sort() : ['*'];

/** The tags cpsync marks its access entries with: no other key is ever allowed. */
const MANAGER_TAG = GRANT_MANAGER_KEY;
const CONSUMER_TAG = GRANT_CONSUMER_KEY;

/**
 * The name part of the ARN of every access entry of `roleArn`, on any cluster: EKS names an entry
 * `access-entry/<cluster>/role/<role's account>/<role name>/<uuid>` (the Service Authorization Reference's
 * `access-entry` resource type), so an IAM resource of this form is no other principal's entry.
 */
function accessEntriesOf(roleArn: string): string {
  if (Token.isUnresolved(roleArn))
    throw new Error(`accessGrants: consumer role ARNs must be written out, not tokens (${roleArn})`);
  const role = /^arn:aws[a-z-]*:iam::(\d{12}):role\/(?:[\w+=,.@-]+\/)*([\w+=,.@-]+)$/.exec(roleArn);
  if (!role) throw new Error(`accessGrants: ${roleArn} is not an IAM role ARN`);
  return `*/role/${role[1]}/${role[2]}/*`;
}

/**
 * What the `accessGrants` feature does in an account, each write bounded by IAM to what cpsync makes:
 * - `eks:CreateAccessEntry` of a `STANDARD` entry for exactly the consumers' roles, with no Kubernetes groups
 *   and no username, tagged as the manager's (and, when `consumerNames` are given, as one of them);
 * - `eks:TagResource` only on those roles' access entries (never a cluster), only cpsync's two tag keys, the
 *   manager's value: the tags given at `CreateAccessEntry` are authorized as TagResource on the new entry;
 * - `eks:AssociateAccessPolicy` / `DisassociateAccessPolicy` only of the three level policies, only on those
 *   roles' entries and only when they carry the manager's tag; with `consumers`, each consumer's role's entries
 *   only its own level's policy at its own scope (and made tagged with its own name only);
 * - `eks:DeleteAccessEntry` only of entries carrying both of cpsync's marks, whoever their principal: an entry
 *   cpsync made for a consumer since removed from the configuration is still taken back, while IAM lets cpsync
 *   put its marks on nothing but the configured roles' entries;
 * - reads: the access entries of each cluster (`eks:ListAccessEntries`, for the turn-off scan of cpsync's
 *   marks), an entry and its policies.
 * With `revokeOnly` (the feature turned off, the consumers still configured), the reads and the delete alone.
 */
export function accessGrantStatements(
  stack: Stack,
  {
    manager,
    consumerRoleArns,
    consumerNames,
    consumers,
    revokeOnly = false,
    regions,
  }: {
    manager: string;
    consumerRoleArns: readonly string[];
    consumerNames?: readonly string[];
    consumers?: readonly GrantedConsumer[];
    revokeOnly?: boolean;
    /** The configuration's `providers.eks.regions`: grants only on clusters there. @default any region */
    regions?: readonly string[];
  },
): PolicyStatement[] {
  const arn = (resource: string, resourceName: string) =>
    grantRegions(regions).map((region) => eksArn(stack, resource, resourceName, region));
  const clusters = arn('cluster', '*');
  const entries = arn('access-entry', '*');
  const consumerEntries = [...new Set(consumerRoleArns.map(accessEntriesOf))].flatMap((name) =>
    arn('access-entry', name),
  );
  const tagged = { [`aws:ResourceTag/${MANAGER_TAG}`]: manager };
  const requestTags = requestTagConditions(manager, consumerNames && [...consumerNames]);
  const read = [
    new PolicyStatement({ actions: ['eks:ListAccessEntries'], resources: clusters }),
    new PolicyStatement({
      actions: ['eks:DescribeAccessEntry', 'eks:ListAssociatedAccessPolicies'],
      resources: entries,
    }),
  ];
  const remove = new PolicyStatement({
    actions: ['eks:DeleteAccessEntry'],
    resources: entries,
    conditions: {
      StringEquals: tagged,
      Null: { [`aws:ResourceTag/${CONSUMER_TAG}`]: 'false' },
    },
  });
  // Turned off (the consumers still configured), or no consumer has a role: only taking grants back.
  if (revokeOnly || consumerEntries.length === 0) return [...read, remove];
  // The EKS access policies cpsync grants (view, edit, admin): nothing else can be associated.
  const levelPolicy = (level: AccessLevel) => eksAccessPolicyArn(stack.partition, level);
  // Another level's policy is taken off a consumer's entry when its level changes: any of the three.
  const disassociate = new PolicyStatement({
    actions: ['eks:DisassociateAccessPolicy'],
    resources: consumerEntries,
    conditions: {
      StringEquals: tagged,
      ArnEquals: { 'eks:policyArn': ACCESS_LEVELS.map(levelPolicy) },
    },
  });
  if (consumers)
    return [
      ...read,
      remove,
      disassociate,
      ...consumers.flatMap((consumer) => consumerGrantStatements(arn, manager, consumer, levelPolicy)),
    ];
  return [
    ...read,
    remove,
    createEntryStatement(clusters, [...consumerRoleArns], requestTags),
    new PolicyStatement({
      actions: ['eks:TagResource'],
      resources: consumerEntries,
      conditions: requestTags,
    }),
    new PolicyStatement({
      actions: ['eks:AssociateAccessPolicy', 'eks:DisassociateAccessPolicy'],
      resources: consumerEntries,
      conditions: {
        StringEquals: tagged,
        ArnEquals: {
          'eks:policyArn': ACCESS_LEVELS.map(levelPolicy),
        },
      },
    }),
  ];
}

/**
 * The tags a request may carry: cpsync's two keys and no other, the manager's value, and a consumer's name among
 * `consumerNames` (any, unset).
 */
function requestTagConditions(manager: string, consumerNames?: string | string[]) {
  return {
    'ForAllValues:StringEquals': { 'aws:TagKeys': [MANAGER_TAG, CONSUMER_TAG] },
    StringEquals: {
      [`aws:RequestTag/${MANAGER_TAG}`]: manager,
      ...(consumerNames ? { [`aws:RequestTag/${CONSUMER_TAG}`]: consumerNames } : {}),
    },
  };
}

/** `eks:CreateAccessEntry` of a `STANDARD` entry of `principals` only, with no groups or username, tagged as `tags` say. */
function createEntryStatement(
  clusters: string[],
  principals: string | string[],
  tags: ReturnType<typeof requestTagConditions>,
): PolicyStatement {
  return new PolicyStatement({
    actions: ['eks:CreateAccessEntry'],
    resources: clusters,
    conditions: {
      ...tags,
      StringEquals: { ...tags.StringEquals, 'eks:accessEntryType': 'STANDARD' },
      ArnEquals: { 'eks:principalArn': principals },
      // Present only when the request names them: an entry with groups or a username is refused.
      Null: { 'eks:kubernetesGroups': 'true', 'eks:username': 'true' },
    },
  });
}

/**
 * What the reader may write for one consumer: a `STANDARD` entry of its role only, with no groups or username,
 * tagged as the manager's and with its own name; on its role's entries, its own level's policy only, at its own
 * scope: the cluster, or (with member namespaces) a namespace scope of those namespaces only.
 */
function consumerGrantStatements(
  arn: (resource: string, resourceName: string) => string[],
  manager: string,
  consumer: GrantedConsumer,
  levelPolicy: (level: AccessLevel) => string,
): PolicyStatement[] {
  const entries = arn('access-entry', accessEntriesOf(consumer.roleArn));
  const tags = requestTagConditions(manager, consumer.name);
  const namespaces = consumer.memberNamespaces ? [...new Set(consumer.memberNamespaces)].sort() : undefined;
  return [
    createEntryStatement(arn('cluster', '*'), consumer.roleArn, tags),
    new PolicyStatement({ actions: ['eks:TagResource'], resources: entries, conditions: tags }),
    new PolicyStatement({
      actions: ['eks:AssociateAccessPolicy'],
      resources: entries,
      conditions: {
        StringEquals: {
          [`aws:ResourceTag/${MANAGER_TAG}`]: manager,
          'eks:accessScope': namespaces ? 'namespace' : 'cluster',
        },
        ArnEquals: { 'eks:policyArn': levelPolicy(consumer.level) },
        // Every namespace named one of its own, and some named (a key absent would pass ForAllValues).
        ...(namespaces
          ? {
              'ForAllValues:StringEquals': { 'eks:namespaces': namespaces },
              Null: { 'eks:namespaces': 'false' },
            }
          : {}),
      },
    }),
  ];
}

/**
 * The wildcard resources of `accessGrantStatements`, as cdk-nag names them after the account: each
 * `[region, resource]` (the region `*` when the configuration lists none).
 */
export function accessGrantResources(
  consumerRoleArns: readonly string[],
  regions?: readonly string[],
): Array<[string, string]> {
  const resources = [
    'cluster/*',
    'access-entry/*',
    ...new Set(consumerRoleArns.map((role) => `access-entry/${accessEntriesOf(role)}`)),
  ];
  return grantRegions(regions).flatMap((region) => resources.map((r): [string, string] => [region, r]));
}

/** Why the accessGrants feature's wildcard resources are accepted (cdk-nag AwsSolutions-IAM5). */
export const ACCESS_GRANTS_REASON =
  "cpsync grants the configured consumers on any cluster of the account; IAM bounds each write to the consumers' roles' entries, STANDARD entries without groups or username, cpsync's two tags, each consumer's own level at its own scope and the entries tagged as cpsync's.";

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

/** The configuration's consumers with an EKS role, as IAM bounds their grants. */
export function grantedConsumers(
  consumers: ReadonlyArray<{
    name: string;
    level: AccessLevel;
    memberNamespaces?: readonly string[] | undefined;
    identities: { eks?: { roleArn: string } | undefined };
  }>,
): GrantedConsumer[] {
  return consumers.flatMap((c) =>
    c.identities.eks
      ? [
          {
            name: c.name,
            roleArn: c.identities.eks.roleArn,
            level: c.level,
            ...(c.memberNamespaces ? { memberNamespaces: c.memberNamespaces } : {}),
          },
        ]
      : [],
  );
}

/** What the member roles are made of: the props as given, or as the configuration says (`config`). */
function memberRolesProps(props: CpsyncMemberRolesProps): Omit<
  CpsyncMemberRolesProps,
  'config' | 'accessGrants'
> & {
  accessGrants?: Parameters<typeof accessGrantStatements>[1];
} {
  const explicit = (
    ['readerRoleName', 'externalId', 'operators', 'probeRoleName', 'accessGrants'] as const
  ).filter((key) => props[key] !== undefined);
  if (props.config === undefined) {
    if (props.accessGrants && !props.accessGrants.manager)
      throw new Error(
        "CpsyncMemberRoles: accessGrants.manager is required (the configuration's manager, which cpsync tags its access entries with), or give config",
      );
    return props;
  }
  if (explicit.length > 0)
    throw new Error(
      `CpsyncMemberRoles: give either config or ${explicit.join(', ')}, not both (config says them)`,
    );
  const config = parseConfig(props.config, 'CpsyncMemberRoles props.config');
  const eks = config.providers.eks;
  if (!eks) throw new Error('CpsyncMemberRoles: props.config reads no EKS account (providers.eks)');
  const consumers = config.consumers.filter((c) => c.identities.eks);
  const granting = config.features.accessGrants || config.consumers.length > 0;
  return {
    cpsyncAccount: props.cpsyncAccount,
    readerRoleName: eks.roleName,
    ...(eks.externalId ? { externalId: eks.externalId } : {}),
    ...(eks.operators ? { operators: eks.operators } : {}),
    ...(config.features.memberProbe && config.memberProbe.eksRoleName
      ? { probeRoleName: config.memberProbe.eksRoleName }
      : {}),
    ...(granting
      ? {
          accessGrants: {
            manager: config.manager,
            consumerRoleArns: consumers.map((c) => c.identities.eks!.roleArn),
            consumerNames: consumers.map((c) => c.name),
            consumers: grantedConsumers(consumers),
            revokeOnly: !config.features.accessGrants,
            ...(eks.regions ? { regions: eks.regions } : {}),
          },
        }
      : {}),
  };
}

/**
 * `statements`, held to sessions that carry cpsync's granting source identity (`GRANT_SOURCE_IDENTITY`): the reader's
 * grant statements are the granting functions' alone, though every function that enters members assumes the reader.
 */
function grantingSessionsOnly(statements: PolicyStatement[]): PolicyStatement[] {
  for (const statement of statements)
    statement.addCondition('StringEquals', { 'aws:SourceIdentity': GRANT_SOURCE_IDENTITY });
  return statements;
}

/**
 * The IAM path of cpsync's function roles (the `Cpsync` construct makes them there): the member roles trust the
 * cpsync account's roles of this path, and no other of its roles but the operators named.
 */
export const FUNCTION_ROLE_PATH = '/cpsync/';

/**
 * The principals of the cpsync account the member roles trust (`aws:PrincipalArn`): its roles of
 * `FUNCTION_ROLE_PATH` and each operator, which must be a principal of that account.
 */
function trustedPrincipals(stack: Stack, cpsyncAccount: string, operators: readonly string[] = []): string[] {
  operators.forEach((arn, index) => {
    const where = `CpsyncMemberRoles: operators[${index}] (providers.eks.operators)`;
    if (Token.isUnresolved(arn)) throw new Error(`${where} must be written out, not a token`);
    const principal = IAM_PRINCIPAL_ARN.exec(arn);
    if (!principal)
      throw new Error(
        `${where} must be the ARN of one IAM role or user, with no wildcard, got ${JSON.stringify(arn)}`,
      );
    if (!Token.isUnresolved(cpsyncAccount) && principal[1] !== cpsyncAccount)
      throw new Error(
        `${where} is of account ${principal[1]}, not the cpsync account ${cpsyncAccount}: the member roles trust that account's principals only`,
      );
  });
  return [`arn:${stack.partition}:iam::${cpsyncAccount}:role${FUNCTION_ROLE_PATH}*`, ...new Set(operators)];
}

/** The member account's roles for cpsync: the reader (and the member probe's role, when named). */
export class CpsyncMemberRoles extends Construct {
  public readonly reader: Role;
  public readonly probe?: Role;

  constructor(scope: Construct, id: string, given: CpsyncMemberRolesProps) {
    super(scope, id);
    const props = memberRolesProps(given);
    const stack = Stack.of(this);
    // Of the cpsync account, only cpsync's function roles (their path) and the operators named: not every principal
    // the account's own policies would let assume a role elsewhere.
    const fromCpsync = {
      ArnLike: { 'aws:PrincipalArn': trustedPrincipals(stack, props.cpsyncAccount, props.operators) },
    };
    const trusted = (externalId?: string): IPrincipal =>
      new AccountPrincipal(props.cpsyncAccount).withConditions({
        ...fromCpsync,
        ...(externalId ? { StringEquals: { 'sts:ExternalId': externalId } } : {}),
      });
    this.reader = new Role(this, 'Reader', {
      roleName: props.readerRoleName ?? 'cpsync-reader',
      description: 'cpsync reads EKS clusters, node groups and regions of this account',
      assumedBy: trusted(props.externalId),
      inlinePolicies: {
        read: new PolicyDocument({ statements: memberReadStatements(stack) }),
        ...(props.accessGrants
          ? {
              grant: new PolicyDocument({
                statements: grantingSessionsOnly(accessGrantStatements(stack, props.accessGrants)),
              }),
            }
          : {}),
      },
    });
    if (props.accessGrants) {
      // Only the functions that grant may set the granting source identity (their roles' sts:SetSourceIdentity): a
      // session of the reader without it (the scope enumerator's, reading regions) is refused every grant statement.
      this.reader.assumeRolePolicy!.addStatements(
        new PolicyStatement({
          actions: ['sts:SetSourceIdentity'],
          principals: [new AccountPrincipal(props.cpsyncAccount)],
          conditions: { ...fromCpsync, StringEquals: { 'sts:SourceIdentity': GRANT_SOURCE_IDENTITY } },
        }),
      );
      const account = Token.isUnresolved(stack.account) ? '<AWS::AccountId>' : stack.account;
      const { consumerRoleArns, regions } = props.accessGrants;
      for (const [region, resource] of accessGrantResources(consumerRoleArns, regions))
        Validations.of(this.reader).acknowledge({
          id: `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:eks:${region}:${account}:${resource}]`,
          reason: ACCESS_GRANTS_REASON,
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
