/**
 * A synthesized CloudFormation template, read as the tests need it: its intrinsics resolved to the local
 * estate (or to placeholders where nothing local stands behind them).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface CfnResource {
  Type: string;
  Properties: Record<string, unknown>;
  Metadata?: Record<string, unknown>;
}

export const REGION = 'us-east-1';
/** The account the stack is synthesized for (moto's default account). */
export const ACCOUNT = '123456789012';

/**
 * Resolves the template's intrinsics to the local estate: `Ref`s of what the test made (queue URLs,
 * secret ARNs, table and bus names) from `refs`, `Fn::GetAtt … Arn` to the ARN the resource would have.
 */
export function templateResolver(
  resources: Record<string, CfnResource>,
  refs: Record<string, string>,
  account = ACCOUNT,
) {
  const pseudo: Record<string, string> = {
    'AWS::Partition': 'aws',
    'AWS::Region': REGION,
    'AWS::AccountId': account,
    'AWS::URLSuffix': 'amazonaws.com',
  };
  const arnOf = (id: string): string => {
    const resource = resources[id];
    if (!resource) throw new Error(`no resource ${id} in the template`);
    switch (resource.Type) {
      case 'AWS::DynamoDB::Table':
        return `arn:aws:dynamodb:${REGION}:${account}:table/${refs[id] ?? id}`;
      case 'AWS::SQS::Queue':
        return `arn:aws:sqs:${REGION}:${account}:${id}`;
      case 'AWS::Events::EventBus':
        return `arn:aws:events:${REGION}:${account}:event-bus/${resource.Properties.Name as string}`;
      case 'AWS::Events::Rule':
        return `arn:aws:events:${REGION}:${account}:rule/${id}`;
      case 'AWS::Lambda::Function':
        return `arn:aws:lambda:${REGION}:${account}:function:${id}`;
      case 'AWS::IAM::Role':
        return `arn:aws:iam::${account}:role/${(resource.Properties.RoleName as string | undefined) ?? id}`;
      default:
        throw new Error(`no ARN for ${resource.Type} ${id}`);
    }
  };
  const resolve = (value: unknown): unknown => {
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') return value;
    if (Array.isArray(value)) return value.map(resolve);
    if (value === null || typeof value !== 'object') return value;
    const node = value as Record<string, unknown>;
    if ('Ref' in node) {
      const ref = node.Ref as string;
      const resolved = pseudo[ref] ?? refs[ref];
      if (resolved === undefined) throw new Error(`no local resource for Ref ${ref}`);
      return resolved;
    }
    if ('Fn::GetAtt' in node) {
      const [id, attribute] = node['Fn::GetAtt'] as [string, string];
      if (attribute !== 'Arn') throw new Error(`cannot resolve Fn::GetAtt ${id}.${attribute}`);
      return arnOf(id);
    }
    if ('Fn::Join' in node) {
      const [separator, parts] = node['Fn::Join'] as [string, unknown[]];
      return parts.map((part) => String(resolve(part))).join(separator);
    }
    return Object.fromEntries(Object.entries(node).map(([key, inner]) => [key, resolve(inner)]));
  };
  return { resolve, arnOf };
}

/**
 * What each resource's `Ref` resolves to where nothing local was made for it: table and bus names, a queue
 * URL on a closed loopback port, a complete secret ARN.
 */
export function placeholderRefs(resources: Record<string, CfnResource>): Record<string, string> {
  const refs: Record<string, string> = {};
  for (const [id, resource] of Object.entries(resources)) {
    if (resource.Type === 'AWS::DynamoDB::Table') refs[id] = id;
    else if (resource.Type === 'AWS::SQS::Queue') refs[id] = `http://127.0.0.1:9/${ACCOUNT}/${id}`;
    else if (resource.Type === 'AWS::SecretsManager::Secret')
      refs[id] = `arn:aws:secretsmanager:${REGION}:${ACCOUNT}:secret:${id}-AbCdEf`;
    else if (resource.Type === 'AWS::Events::EventBus') refs[id] = resource.Properties.Name as string;
  }
  return refs;
}

/** The template in `assembly` (cdk.out) of `stack`: its resources. */
export function templateResources(assembly: string, stack: string): Record<string, CfnResource> {
  return (
    JSON.parse(readFileSync(join(assembly, `${stack}.template.json`), 'utf8')) as {
      Resources: Record<string, CfnResource>;
    }
  ).Resources;
}

/** The logical id of the template's IAM role whose id begins with `prefix` (a function's, as CDK names it). */
export function roleIdOf(resources: Record<string, CfnResource>, prefix: string): string {
  const id = Object.keys(resources).find(
    (key) => resources[key]!.Type === 'AWS::IAM::Role' && key.startsWith(prefix),
  );
  if (!id) throw new Error(`no IAM role whose logical id begins with ${prefix}`);
  return id;
}
