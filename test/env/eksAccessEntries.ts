/**
 * EKS access entries for the local estate, which moto does not have: an interceptor on the AWS proxy
 * answering the EKS API's documented REST shapes (CreateAccessEntry, DescribeAccessEntry,
 * DeleteAccessEntry, ListAccessEntries, AssociateAccessPolicy, DisassociateAccessPolicy,
 * ListAssociatedAccessPolicies), keyed by region and cluster. Errors are EKS's own: ResourceNotFoundException
 * (404), ResourceInUseException (409), and AccessDeniedException (403) for a caller `refuse` names.
 * What it holds is what a member's authorizer reads (test/env/member.ts: EKS access policies).
 */
import { documentedPartitionOf } from '../support/awsPartitions.ts';
import { restJsonError, type AwsCall, type AwsProxy, type CannedResponse } from './awsProxy.ts';

export interface AssociatedPolicy {
  policyArn: string;
  accessScope: { type: string; namespaces?: string[] };
  associatedAt: number;
  modifiedAt: number;
}

export interface AccessEntry {
  clusterName: string;
  principalArn: string;
  kubernetesGroups: string[];
  accessEntryArn: string;
  createdAt: number;
  modifiedAt: number;
  tags: Record<string, string>;
  username: string;
  type: string;
  policies: AssociatedPolicy[];
}

export interface EksAccessEntries {
  /** Entries by `<region>/<cluster>`, then by principal ARN. */
  entries: Map<string, Map<string, AccessEntry>>;
  /** Clusters (`<region>/<cluster>`) whose access entries the caller may not change: AccessDeniedException. */
  refuse: Set<string>;
  /** Associated access policies per page of ListAssociatedAccessPolicies: unset, every one on the first. */
  policiesPageSize?: number;
  /** The entries of one cluster (an empty map when it has none). */
  of(region: string, cluster: string): Map<string, AccessEntry>;
  /** Puts an entry as someone other than cpsync would (the console, Terraform): no cpsync tags. */
  put(region: string, cluster: string, principalArn: string, policyArn?: string): void;
  stop(): void;
}

const ACCOUNT = /^arn:aws[a-z-]*:iam::(\d{12}):/;
/** An access policy AWS manages, by its partition and name. */
const ACCESS_POLICY = /^arn:(aws[a-z-]*):eks::aws:cluster-access-policy\/[A-Za-z0-9]+$/;

const ok = (body: unknown): CannedResponse => ({
  status: 200,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
});

/** The username EKS gives an entry by default: an IAM role's sessions, a user as itself. */
function defaultUsername(principalArn: string): string {
  const role = /^arn:(aws[a-z-]*):iam::(\d{12}):role\/(?:.*\/)?([^/]+)$/.exec(principalArn);
  return role ? `arn:${role[1]}:sts::${role[2]}:assumed-role/${role[3]}/{{SessionName}}` : principalArn;
}

function entryBody(entry: AccessEntry) {
  const { policies: _policies, ...shown } = entry;
  return shown;
}

export function serveEksAccessEntries(proxy: AwsProxy): EksAccessEntries {
  const entries = new Map<string, Map<string, AccessEntry>>();
  const refuse = new Set<string>();
  const of = (region: string, cluster: string) => {
    const key = `${region}/${cluster}`;
    let map = entries.get(key);
    if (!map) entries.set(key, (map = new Map()));
    return map;
  };
  const make = (region: string, clusterName: string, principalArn: string, tags: Record<string, string>) => {
    const now = Date.now() / 1000;
    const account = ACCOUNT.exec(principalArn)?.[1] ?? '000000000000';
    const entry: AccessEntry = {
      clusterName,
      principalArn,
      kubernetesGroups: [],
      accessEntryArn: `arn:${documentedPartitionOf(region).name}:eks:${region}:${account}:access-entry/${clusterName}/${encodeURIComponent(principalArn)}`,
      createdAt: now,
      modifiedAt: now,
      tags,
      username: defaultUsername(principalArn),
      type: 'STANDARD',
      policies: [],
    };
    of(region, clusterName).set(principalArn, entry);
    return entry;
  };

  const answer = (call: AwsCall): CannedResponse | undefined => {
    if (call.service !== 'eks') return undefined;
    const path = call.path.split('?')[0]!;
    const match =
      /^\/clusters\/([^/]+)\/access-entries(?:\/([^/]+)(?:\/access-policies(?:\/([^/]+))?)?)?$/.exec(path);
    if (!match) return undefined;
    const cluster = decodeURIComponent(match[1]!);
    const principal = match[2] === undefined ? undefined : decodeURIComponent(match[2]);
    const policy = match[3] === undefined ? undefined : decodeURIComponent(match[3]);
    const policies = path.includes('/access-policies');
    const map = of(call.region, cluster);
    const changes = call.method !== 'GET';
    if (changes && refuse.has(`${call.region}/${cluster}`))
      return restJsonError(
        403,
        'AccessDeniedException',
        `User is not authorized to perform: eks:${call.method === 'DELETE' ? 'Delete' : 'Create'}AccessEntry on resource: ${cluster}`,
      );
    if (principal === undefined) {
      if (call.method === 'GET') return ok({ accessEntries: [...map.keys()].sort() });
      const request = JSON.parse(call.body || '{}') as {
        principalArn?: string;
        tags?: Record<string, string>;
      };
      if (!request.principalArn)
        return restJsonError(400, 'InvalidParameterException', 'principalArn is required');
      if (map.has(request.principalArn))
        return restJsonError(
          409,
          'ResourceInUseException',
          `The specified access entry resource is already in use on this cluster.`,
        );
      return ok({
        accessEntry: entryBody(make(call.region, cluster, request.principalArn, request.tags ?? {})),
      });
    }
    const entry = map.get(principal);
    if (!entry)
      return restJsonError(
        404,
        'ResourceNotFoundException',
        `The specified principalArn could not be found.`,
      );
    if (!policies) {
      if (call.method === 'GET') return ok({ accessEntry: entryBody(entry) });
      if (call.method === 'DELETE') {
        map.delete(principal);
        return ok({});
      }
      return undefined;
    }
    if (policy === undefined && call.method === 'GET') {
      // Paged as EKS pages it (`maxResults`, `nextToken`) when the test asks for pages smaller than the list.
      const from = Number(new URLSearchParams(call.path.split('?')[1] ?? '').get('nextToken') ?? '0');
      const size = state.policiesPageSize ?? entry.policies.length;
      const next = from + size < entry.policies.length ? String(from + size) : undefined;
      return ok({
        clusterName: cluster,
        principalArn: principal,
        associatedAccessPolicies: entry.policies.slice(from, from + size),
        ...(next ? { nextToken: next } : {}),
      });
    }
    if (policy === undefined && call.method === 'POST') {
      const request = JSON.parse(call.body || '{}') as {
        policyArn?: string;
        accessScope?: { type: string; namespaces?: string[] };
      };
      if (!request.policyArn || !request.accessScope)
        return restJsonError(400, 'InvalidParameterException', 'policyArn and accessScope are required');
      // EKS knows the access policies of the cluster's own partition only (arn:aws-cn:… in cn-north-1).
      if (ACCESS_POLICY.exec(request.policyArn)?.[1] !== documentedPartitionOf(call.region).name)
        return restJsonError(
          400,
          'InvalidParameterException',
          `The specified policyArn ${request.policyArn} is not a valid access policy in ${call.region}.`,
        );
      const now = Date.now() / 1000;
      const existing = entry.policies.find((p) => p.policyArn === request.policyArn);
      const associated = existing ?? {
        policyArn: request.policyArn,
        accessScope: request.accessScope,
        associatedAt: now,
        modifiedAt: now,
      };
      associated.accessScope = request.accessScope;
      associated.modifiedAt = now;
      if (!existing) entry.policies.push(associated);
      return ok({
        clusterName: cluster,
        principalArn: principal,
        associatedAccessPolicy: associated,
      });
    }
    if (policy !== undefined && call.method === 'DELETE') {
      entry.policies = entry.policies.filter((p) => p.policyArn !== policy);
      return ok({});
    }
    return undefined;
  };
  const stop = proxy.intercept((call) => answer(call));
  const state: EksAccessEntries = {
    entries,
    refuse,
    of,
    put(region, cluster, principalArn, policyArn) {
      const entry = make(region, cluster, principalArn, {});
      if (policyArn)
        entry.policies.push({
          policyArn,
          accessScope: { type: 'cluster' },
          associatedAt: Date.now() / 1000,
          modifiedAt: Date.now() / 1000,
        });
    },
    stop,
  };
  return state;
}
