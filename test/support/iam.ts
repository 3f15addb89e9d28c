/**
 * IAM as AWS would judge it, for the tests that run the deployed functions: the AWS calls the proxy in
 * front of moto saw, turned into the (principal, action, resource) requests IAM authorizes, and
 * evaluated against the synthesized template's policies by an IAM policy simulator
 * (`@cloud-copilot/iam-simulate`, a test-only dependency: nothing of it is bundled or shipped).
 */
import { runSimulation } from '@cloud-copilot/iam-simulate';
import type { AwsCall } from '../env/awsProxy.ts';
import { REGION, type CfnResource } from './template.ts';

interface Statement {
  Effect: 'Allow' | 'Deny';
  Action?: string | string[];
  Resource?: string | string[];
  Principal?: unknown;
  Condition?: unknown;
  Sid?: string;
}
export interface PolicyDocument {
  Version?: string;
  Statement: Statement[];
}

/** One request IAM authorizes. */
export interface IamRequest {
  principal: string;
  action: string;
  resource: string;
  /** The account that owns the resource. */
  account: string;
  /** Condition keys of the request (request tags, the resource's tags, service keys). */
  context?: Record<string, string | string[]>;
}

/** The identity policies of the role `roleId`: its inline policies from the template (resolved). */
export function rolePolicies(
  resources: Record<string, CfnResource>,
  roleId: string,
  resolve: (value: unknown) => unknown,
): Array<{ name: string; policy: PolicyDocument }> {
  const role = resources[roleId];
  const inline = (
    (role?.Properties.Policies as Array<{ PolicyName: string; PolicyDocument: unknown }>) ?? []
  ).map((p) => ({ name: p.PolicyName, policy: resolve(p.PolicyDocument) as PolicyDocument }));
  const attached = Object.entries(resources)
    .filter(
      ([, r]) =>
        r.Type === 'AWS::IAM::Policy' &&
        (r.Properties.Roles as Array<{ Ref: string }>).some((ref) => ref.Ref === roleId),
    )
    .map(([id, r]) => ({ name: id, policy: resolve(r.Properties.PolicyDocument) as PolicyDocument }));
  return [...inline, ...attached];
}

/** The resource policy the template gives `arn` (a queue policy), if any. */
export function resourcePolicyOf(
  resources: Record<string, CfnResource>,
  arn: string,
  resolve: (value: unknown) => unknown,
): PolicyDocument | undefined {
  const statements = Object.values(resources)
    .filter((r) => r.Type === 'AWS::SQS::QueuePolicy')
    .map((r) => resolve(r.Properties.PolicyDocument) as PolicyDocument)
    .flatMap((policy) => policy.Statement)
    .filter((statement) => [statement.Resource].flat().includes(arn));
  return statements.length > 0 ? { Version: '2012-10-17', Statement: statements } : undefined;
}

const json = (body: string): Record<string, unknown> => {
  try {
    return JSON.parse(body) as Record<string, unknown>;
  } catch {
    return {};
  }
};
const query = (body: string) => new URLSearchParams(body);

/**
 * The requests IAM authorizes for one call `principal` made with credentials of `account`. Calls that
 * need no permission (STS GetCallerIdentity) give none.
 */
export function iamRequestsOf(
  call: AwsCall,
  principal: string,
  account: string,
  /** EKS access entries: the tags of the entry a call is about (IAM's `aws:ResourceTag/*`). */
  accessEntryTags: (cluster: string, principalArn: string) => Record<string, string> = () => ({}),
  /**
   * DynamoDB: the partition key attribute of a table, by its name; an item-level call's keys are then its
   * `dynamodb:LeadingKeys`. @default none given
   */
  partitionKeyOf: (table: string) => string | undefined = () => undefined,
): IamRequest[] {
  const region = call.region || REGION;
  const operation = call.operation.includes('.') ? call.operation.split('.').pop()! : call.operation;
  const request = (action: string, resource: string, owner = account): IamRequest => ({
    principal,
    action,
    resource,
    account: owner,
  });
  switch (call.service) {
    case 'dynamodb': {
      const body = json(call.body);
      const tables = body.RequestItems
        ? Object.keys(body.RequestItems as object)
        : [body.TableName as string];
      // A read through an index is authorized on the index (`table/<table>/index/<index>`).
      const index = typeof body.IndexName === 'string' ? `/index/${body.IndexName}` : '';
      return tables.map((table) => {
        const keys = index ? undefined : leadingKeysOf(operation, table, body, partitionKeyOf(table));
        return {
          ...request(`dynamodb:${operation}`, `arn:aws:dynamodb:${region}:${account}:table/${table}${index}`),
          ...(keys ? { context: { 'dynamodb:LeadingKeys': keys } } : {}),
        };
      });
    }
    case 'sqs': {
      const url = (json(call.body).QueueUrl as string | undefined) ?? query(call.body).get('QueueUrl') ?? '';
      const [owner, name] = new URL(url).pathname.split('/').filter(Boolean);
      const action = operation.replace(/Batch$/, '');
      return [request(`sqs:${action}`, `arn:aws:sqs:${region}:${owner}:${name}`, owner)];
    }
    case 'events': {
      const body = json(call.body);
      // PutEvents names a bus per entry, and its entries' sources and detail-types are the multi-valued keys
      // `events:source` and `events:detail-type`; DescribeEventBus names its bus by Name.
      type Entry = { EventBusName?: string; Source?: string; DetailType?: string };
      const put = body.Entries as Entry[] | undefined;
      const entries = put ?? [{ EventBusName: (body.Name as string | undefined) ?? 'default' }];
      const buses = new Set(entries.map((e) => e.EventBusName ?? 'default'));
      return [...buses].map((bus) => {
        const onBus = entries.filter((e) => (e.EventBusName ?? 'default') === bus);
        return {
          ...request(
            `events:${operation}`,
            bus.startsWith('arn:') ? bus : `arn:aws:events:${region}:${account}:event-bus/${bus}`,
          ),
          ...(put
            ? {
                context: {
                  'events:source': [...new Set(onBus.map((e) => e.Source ?? ''))],
                  'events:detail-type': [...new Set(onBus.map((e) => e.DetailType ?? ''))],
                },
              }
            : {}),
        };
      });
    }
    case 'secretsmanager': {
      const id = json(call.body).SecretId as string;
      return [request(`secretsmanager:${operation}`, id, id.split(':')[4] ?? account)];
    }
    case 'sts': {
      if (operation === 'GetCallerIdentity') return [];
      const params = query(call.body);
      const roleArn = params.get('RoleArn') ?? (json(call.body).RoleArn as string);
      const owner = roleArn.split(':')[4]!;
      // A session with a source identity is also a SetSourceIdentity, judged on the same role; the external id is a
      // key of AssumeRole's alone.
      const source = params.get('SourceIdentity');
      const externalId = params.get('ExternalId');
      const assume: IamRequest = {
        ...request(`sts:${operation}`, roleArn, owner),
        context: {
          ...(externalId ? { 'sts:ExternalId': externalId } : {}),
          ...(source ? { 'sts:SourceIdentity': source } : {}),
        },
      };
      return source
        ? [
            assume,
            {
              ...request('sts:SetSourceIdentity', roleArn, owner),
              context: { 'sts:SourceIdentity': source },
            },
          ]
        : [assume];
    }
    case 'ec2':
      return [request(`ec2:${operation}`, '*')];
    case 'organizations':
      return [request(`organizations:${operation}`, '*')];
    case 'eks': {
      const path = new URL(call.path, 'http://local').pathname
        .split('/')
        .filter(Boolean)
        .map(decodeURIComponent);
      const cluster = `arn:aws:eks:${region}:${account}:cluster/${path[1]}`;
      if (path[2] === 'access-entries')
        return accessEntryRequests(
          call,
          path,
          cluster,
          (action, resource, context) => ({
            ...request(action, resource),
            context,
          }),
          accessEntryTags,
        );
      if (call.method !== 'GET')
        throw new Error(`an EKS call the functions never make: ${call.method} ${call.path}`);
      if (path.length === 1) return [request('eks:ListClusters', '*')];
      if (path.length === 2) return [request('eks:DescribeCluster', cluster)];
      if (path[2] === 'node-groups' && path.length === 3) return [request('eks:ListNodegroups', cluster)];
      if (path[2] === 'node-groups' && path.length === 4)
        return [
          request(
            'eks:DescribeNodegroup',
            `arn:aws:eks:${region}:${account}:nodegroup/${path[1]}/${path[3]}/00000000-0000-0000-0000-000000000000`,
          ),
        ];
      throw new Error(`an EKS call with no IAM mapping here: ${call.path}`);
    }
    default:
      throw new Error(`an AWS call with no IAM mapping here: ${call.service} ${call.operation || call.path}`);
  }
}

/**
 * The access-entry calls (the accessGrants feature) as IAM authorizes them, with the condition keys they
 * carry (the Service Authorization Reference's for each action): ListAccessEntries on the cluster;
 * CreateAccessEntry on the cluster with what its body names — `eks:principalArn`, `eks:accessEntryType`,
 * `eks:kubernetesGroups`, `eks:username` (each only when the request gives it), the request tags
 * (`aws:RequestTag/*`, `aws:TagKeys`) — and, for those tags, TagResource on the new entry; the other calls
 * on the entry with its tags as `aws:ResourceTag/*` and, for the policy calls, `eks:policyArn`.
 */
function accessEntryRequests(
  call: AwsCall,
  path: string[],
  /** The cluster's ARN. */
  cluster: string,
  request: (action: string, resource: string, context: Record<string, string | string[]>) => IamRequest,
  tagsOf: (cluster: string, principalArn: string) => Record<string, string>,
): IamRequest[] {
  const clusterName = path[1]!;
  const [, , , region, account] = cluster.split(':');
  // An entry's ARN: access-entry/<cluster>/<role|user>/<the principal's account>/<its name>/<uuid>.
  const entryOf = (principalArn: string) => {
    const identity = /^arn:aws[a-z-]*:iam::(\d{12}):(role|user)\/(?:.*\/)?([^/]+)$/.exec(principalArn);
    return `arn:aws:eks:${region}:${account}:access-entry/${clusterName}/${identity?.[2] ?? 'role'}/${identity?.[1] ?? account}/${identity?.[3] ?? 'unknown'}/00000000-0000-0000-0000-000000000000`;
  };
  if (path.length === 3 && call.method === 'GET') return [request('eks:ListAccessEntries', cluster, {})];
  if (path.length === 3 && call.method === 'POST') {
    const body = json(call.body) as {
      principalArn?: string;
      tags?: Record<string, string>;
      type?: string;
      kubernetesGroups?: string[];
      username?: string;
    };
    const tags = body.tags ?? {};
    const tagging: Record<string, string | string[]> =
      Object.keys(tags).length > 0
        ? {
            ...Object.fromEntries(Object.entries(tags).map(([k, v]) => [`aws:RequestTag/${k}`, v])),
            'aws:TagKeys': Object.keys(tags),
          }
        : {};
    const context = {
      'eks:principalArn': body.principalArn ?? '',
      ...(body.type !== undefined ? { 'eks:accessEntryType': body.type } : {}),
      ...(body.kubernetesGroups !== undefined ? { 'eks:kubernetesGroups': body.kubernetesGroups } : {}),
      ...(body.username !== undefined ? { 'eks:username': body.username } : {}),
      ...tagging,
    };
    return [
      request('eks:CreateAccessEntry', cluster, context),
      // Tags given at creation: TagResource on the entry being made.
      ...(Object.keys(tags).length > 0
        ? [request('eks:TagResource', entryOf(body.principalArn ?? ''), tagging)]
        : []),
    ];
  }
  const principalArn = path[3]!;
  const entry = entryOf(principalArn);
  const tags = Object.fromEntries(
    Object.entries(tagsOf(clusterName, principalArn)).map(([k, v]) => [`aws:ResourceTag/${k}`, v]),
  );
  if (path.length === 4 && call.method === 'GET') return [request('eks:DescribeAccessEntry', entry, tags)];
  if (path.length === 4 && call.method === 'DELETE') return [request('eks:DeleteAccessEntry', entry, tags)];
  if (path[4] === 'access-policies' && path.length === 5 && call.method === 'GET')
    return [request('eks:ListAssociatedAccessPolicies', entry, tags)];
  if (path[4] === 'access-policies' && path.length === 5 && call.method === 'POST') {
    const body = json(call.body) as {
      policyArn?: string;
      accessScope?: { type?: string; namespaces?: string[] };
    };
    return [
      request('eks:AssociateAccessPolicy', entry, {
        ...tags,
        'eks:policyArn': body.policyArn ?? '',
        ...(body.accessScope?.type ? { 'eks:accessScope': body.accessScope.type } : {}),
        ...(body.accessScope?.namespaces ? { 'eks:namespaces': body.accessScope.namespaces } : {}),
      }),
    ];
  }
  if (path[4] === 'access-policies' && path.length === 6 && call.method === 'DELETE')
    return [request('eks:DisassociateAccessPolicy', entry, { ...tags, 'eks:policyArn': path[5]! })];
  throw new Error(`an EKS access-entry call with no IAM mapping here: ${call.method} ${call.path}`);
}

/**
 * The partition keys an item-level DynamoDB call names on `table` (IAM's `dynamodb:LeadingKeys`), its key attribute
 * being `key`; undefined for a call that names no item (a query, a scan) or a table whose key is not given.
 */
function leadingKeysOf(
  operation: string,
  table: string,
  body: Record<string, unknown>,
  key: string | undefined,
): string[] | undefined {
  if (!key) return undefined;
  type Item = Record<string, { S?: string }> | undefined;
  const batch = (body.RequestItems as Record<string, unknown> | undefined)?.[table];
  const items: Item[] =
    operation === 'PutItem'
      ? [body.Item as Item]
      : ['GetItem', 'DeleteItem', 'UpdateItem'].includes(operation)
        ? [body.Key as Item]
        : operation === 'BatchGetItem'
          ? (batch as { Keys: Item[] }).Keys
          : operation === 'BatchWriteItem'
            ? (batch as Array<{ PutRequest?: { Item: Item }; DeleteRequest?: { Key: Item } }>).map(
                (r) => r.PutRequest?.Item ?? r.DeleteRequest?.Key,
              )
            : [];
  if (items.length === 0) return undefined;
  const keys = items.map((item) => item?.[key]?.S);
  if (keys.some((k) => k === undefined))
    throw new Error(`a DynamoDB ${operation} on ${table} names an item without its key ${key}`);
  return [...new Set(keys as string[])];
}

/**
 * A session of the role `roleId` of `resources` (a function's), as IAM sees it: the session's ARN (`principal`) and,
 * as the condition key `aws:PrincipalArn`, the role's own ARN with the IAM path the template gives it, which the
 * session's ARN leaves out. The role's name stands for the name CloudFormation would give it.
 */
export function sessionOf(
  resources: Record<string, CfnResource>,
  roleId: string,
  account: string,
  sessionName = 'fn',
): { principal: string; context: { 'aws:PrincipalArn': string } } {
  const path = (resources[roleId]?.Properties.Path as string | undefined) ?? '/';
  return {
    principal: `arn:aws:sts::${account}:assumed-role/${roleId}/${sessionName}`,
    context: { 'aws:PrincipalArn': `arn:aws:iam::${account}:role${path}${roleId}` },
  };
}

/** IAM's decision for `request`: 'Allowed', 'ImplicitlyDenied' or 'ExplicitlyDenied'. */
export async function decide(
  request: IamRequest,
  identityPolicies: Array<{ name: string; policy: PolicyDocument }>,
  resourcePolicy?: PolicyDocument,
  context: Record<string, string | string[]> = {},
): Promise<string> {
  const answer = await runSimulation(
    {
      request: {
        principal: request.principal,
        action: request.action,
        resource: { resource: request.resource, accountId: request.account },
        // Every SDK call is made over TLS.
        contextVariables: { 'aws:SecureTransport': 'true', ...request.context, ...context },
      },
      identityPolicies: identityPolicies.map((p) => ({ name: p.name, policy: p.policy })),
      serviceControlPolicies: [],
      resourceControlPolicies: [],
      ...(resourcePolicy ? { resourcePolicy } : {}),
    },
    {},
  );
  if (answer.resultType === 'error')
    throw new Error(
      `the simulator refused ${request.action} on ${request.resource}: ${answer.errors.message}`,
    );
  // A key the Service Authorization Reference does not give the action is dropped by the simulator, not
  // judged: a condition on it would be decided as if the request did not carry it.
  const ignored = (answer.resultType === 'single' ? [answer.result] : answer.results).flatMap(
    (result) => result.ignoredContextKeys ?? [],
  );
  if (ignored.length > 0)
    throw new Error(
      `${request.action} on ${request.resource} carries condition keys IAM does not give it: ${[...new Set(ignored)].join(', ')}`,
    );
  return answer.overallResult;
}

/** `*` and `?` as IAM matches them in actions and ARNs. */
function iamMatch(pattern: string, value: string, caseInsensitive = false): boolean {
  const source = pattern
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${source}$`, caseInsensitive ? 'i' : '').test(value);
}

/** Every (action, resource) an identity policy allows, statement by statement. */
export function grantsOf(
  policies: Array<{ policy: PolicyDocument }>,
): Array<{ action: string; resource: string }> {
  return policies.flatMap(({ policy }) =>
    policy.Statement.filter((s) => s.Effect === 'Allow').flatMap((s) =>
      [s.Action ?? []]
        .flat()
        .flatMap((action) => [s.Resource ?? []].flat().map((resource) => ({ action, resource }))),
    ),
  );
}

/** Whether `request` is one a grant (action, resource) covers. */
export function exercises(grant: { action: string; resource: string }, request: IamRequest): boolean {
  return iamMatch(grant.action, request.action, true) && iamMatch(grant.resource, request.resource);
}
