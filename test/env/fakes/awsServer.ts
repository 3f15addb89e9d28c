/**
 * A small, fast local server speaking the wire shapes the AWS SDK v3 clients cpsync uses at scale:
 * EKS (REST-JSON: ListClusters, DescribeCluster, ListNodegroups, DescribeNodegroup), STS (query
 * protocol: AssumeRole, GetCallerIdentity) and EventBridge (JSON 1.1: PutEvents). moto covers these
 * too, but answers a few hundred calls a second; the scale benchmark makes tens of thousands.
 *
 * The region of a call is read from its SigV4 credential scope and the account from the access key,
 * as AWS does: AssumeRole hands out keys that remember the account of the role.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort, readBody, sendJson, serveOnLoopback } from '../net.ts';
import type { PageScript } from './pageScript.ts';

/** An EKS cluster as DescribeCluster returns it (REST-JSON; times in epoch seconds). */
export type EksClusterJson = Record<string, unknown> & { name: string; arn: string };
export type EksNodegroupJson = Record<string, unknown> & { nodegroupName: string };

export interface FakeAwsOptions {
  /** Added before every answer. @default 0 */
  latencyMillis?: number;
  /** The account the base credentials belong to (GetCallerIdentity). */
  hubAccount: string;
  /** ListClusters page size. @default 100 */
  pageSize?: number;
}

export interface FakeAws {
  endpoint: string;
  /** Clusters by `account/region`, each with its node groups. */
  clusters: Map<string, Array<{ cluster: EksClusterJson; nodegroups: EksNodegroupJson[] }>>;
  /** Calls answered, by operation. */
  calls: Map<string, number>;
  /** Entries PutEvents accepted. */
  events: number;
  /** Bytes of the `Detail` of every entry received. */
  detailBytes: number;
  /** The detail of each `Inventory Scope Synced` entry received (the scope's outcome, counts and duration). */
  scopeSummaries: Array<{ durationMs: number; scope: { provider: string } }>;
  /** Most calls in flight at once. */
  peakInFlight: number;
  /** TCP connections clients opened. */
  connections: number;
  /** When each EKS call arrived and was answered (performance.now()), for concurrency timelines. */
  eksSpans: Array<[number, number]>;
  /** ListClusters' and ListNodegroups' pages as a test scripts them (see PageScript). */
  pages?: PageScript;
  stop(): Promise<void>;
}

const STS_NS = 'https://sts.amazonaws.com/doc/2011-06-15/';

function xml(response: ServerResponse, body: string) {
  response.writeHead(200, { 'content-type': 'text/xml' });
  response.end(body);
}

/** `Credential=<key>/<date>/<region>/<service>/aws4_request` of a SigV4 Authorization header. */
function credentialScope(header: string | undefined): { key: string; region: string } | undefined {
  const match = /Credential=([^/]+)\/\d{8}\/([^/]+)\/[^/]+\/aws4_request/.exec(header ?? '');
  return match ? { key: match[1]!, region: match[2]! } : undefined;
}

export async function startFakeAws(options: FakeAwsOptions): Promise<FakeAws> {
  const port = await freePort();
  const endpoint = `http://127.0.0.1:${port}`;
  const pageSize = options.pageSize ?? 100;
  /** Access key → account, for keys AssumeRole issued. */
  const keys = new Map<string, string>();
  let inFlight = 0;
  const state: Omit<FakeAws, 'stop'> = {
    endpoint,
    clusters: new Map(),
    calls: new Map(),
    events: 0,
    scopeSummaries: [],
    detailBytes: 0,
    peakInFlight: 0,
    connections: 0,
    eksSpans: [],
  };
  const count = (operation: string) => state.calls.set(operation, (state.calls.get(operation) ?? 0) + 1);
  const notFound = (response: ServerResponse, message: string) =>
    sendJson(response, 404, { message }, { 'x-amzn-errortype': 'ResourceNotFoundException' });

  const server = createServer(async (request, response) => {
    const arrived = performance.now();
    if (request.url?.startsWith('/clusters'))
      response.on('finish', () => state.eksSpans.push([arrived, performance.now()]));
    inFlight++;
    state.peakInFlight = Math.max(state.peakInFlight, inFlight);
    try {
      const body = await readBody(request);
      if (options.latencyMillis) await sleep(options.latencyMillis);
      const url = new URL(request.url ?? '/', endpoint);
      const scope = credentialScope(request.headers.authorization);
      if (!scope)
        return sendJson(
          response,
          403,
          { message: 'missing SigV4 authorization' },
          { 'x-amzn-errortype': 'MissingAuthenticationTokenException' },
        );
      const account = keys.get(scope.key) ?? options.hubAccount;

      const target = request.headers['x-amz-target'];
      if (request.method === 'POST' && target === 'AWSEvents.PutEvents') {
        count('PutEvents');
        const entries =
          (JSON.parse(body) as { Entries?: Array<{ DetailType?: string; Detail?: string }> }).Entries ?? [];
        state.events += entries.length;
        for (const entry of entries) state.detailBytes += Buffer.byteLength(entry.Detail ?? '');
        for (const entry of entries)
          if (entry.DetailType === 'Inventory Scope Synced' && entry.Detail)
            state.scopeSummaries.push(JSON.parse(entry.Detail) as FakeAws['scopeSummaries'][number]);
        return sendJson(
          response,
          200,
          {
            FailedEntryCount: 0,
            Entries: entries.map(() => ({ EventId: randomUUID() })),
          },
          { 'content-type': 'application/x-amz-json-1.1' },
        );
      }
      if (request.method === 'POST' && url.pathname === '/') {
        const form = new URLSearchParams(body);
        const action = form.get('Action');
        count(action ?? 'unknown');
        if (action === 'AssumeRole') {
          const roleArn = form.get('RoleArn') ?? '';
          const roleAccount = /^arn:aws:iam::(\d{12}):role\//.exec(roleArn)?.[1];
          if (!roleAccount) return sendJson(response, 400, { message: `bad RoleArn ${roleArn}` });
          const key = `ASIA${roleAccount}${String(keys.size % 10_000).padStart(4, '0')}`;
          keys.set(key, roleAccount);
          const expiration = new Date(Date.now() + 3600_000).toISOString();
          return xml(
            response,
            `<AssumeRoleResponse xmlns="${STS_NS}"><AssumeRoleResult><Credentials><AccessKeyId>${key}</AccessKeyId><SecretAccessKey>local-secret</SecretAccessKey><SessionToken>local-session</SessionToken><Expiration>${expiration}</Expiration></Credentials><AssumedRoleUser><AssumedRoleId>AROALOCAL:${form.get('RoleSessionName') ?? ''}</AssumedRoleId><Arn>${roleArn.replace(':iam::', ':sts::').replace(':role/', ':assumed-role/')}/${form.get('RoleSessionName') ?? ''}</Arn></AssumedRoleUser></AssumeRoleResult><ResponseMetadata><RequestId>${randomUUID()}</RequestId></ResponseMetadata></AssumeRoleResponse>`,
          );
        }
        if (action === 'GetCallerIdentity') {
          return xml(
            response,
            `<GetCallerIdentityResponse xmlns="${STS_NS}"><GetCallerIdentityResult><Arn>arn:aws:iam::${account}:user/cpsync</Arn><UserId>AIDALOCAL</UserId><Account>${account}</Account></GetCallerIdentityResult><ResponseMetadata><RequestId>${randomUUID()}</RequestId></ResponseMetadata></GetCallerIdentityResponse>`,
          );
        }
        return sendJson(response, 400, { message: `unsupported action ${action}` });
      }

      const clusters = state.clusters.get(`${account}/${scope.region}`) ?? [];
      const path = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
      if (request.method !== 'GET' || path[0] !== 'clusters')
        return sendJson(response, 404, { message: `no route ${request.method} ${url.pathname}` });
      if (path.length === 1) {
        count('ListClusters');
        const scripted = state.pages?.('ListClusters', url.searchParams.get('nextToken') ?? undefined);
        if (scripted)
          return sendJson(response, 200, {
            clusters: clusters
              .slice(scripted.from, scripted.from + scripted.count)
              .map((c) => c.cluster.name),
            ...(scripted.next ? { nextToken: scripted.next } : {}),
          });
        const offset = Number(url.searchParams.get('nextToken') ?? '0');
        const size = Number(url.searchParams.get('maxResults') ?? pageSize);
        const page = clusters.slice(offset, offset + Math.min(size, pageSize));
        const next = offset + page.length < clusters.length ? String(offset + page.length) : undefined;
        return sendJson(response, 200, {
          clusters: page.map((c) => c.cluster.name),
          ...(next ? { nextToken: next } : {}),
        });
      }
      const entry = clusters.find((c) => c.cluster.name === path[1]);
      if (path.length === 2) {
        count('DescribeCluster');
        if (!entry) return notFound(response, `No cluster found for name: ${path[1]}.`);
        return sendJson(response, 200, { cluster: entry.cluster });
      }
      if (path[2] === 'node-groups' && path.length === 3) {
        count('ListNodegroups');
        if (!entry) return notFound(response, `No cluster found for name: ${path[1]}.`);
        const scripted = state.pages?.('ListNodegroups', url.searchParams.get('nextToken') ?? undefined);
        if (scripted)
          return sendJson(response, 200, {
            nodegroups: entry.nodegroups
              .slice(scripted.from, scripted.from + scripted.count)
              .map((g) => g.nodegroupName),
            ...(scripted.next ? { nextToken: scripted.next } : {}),
          });
        return sendJson(response, 200, { nodegroups: entry.nodegroups.map((g) => g.nodegroupName) });
      }
      if (path[2] === 'node-groups' && path.length === 4) {
        count('DescribeNodegroup');
        const group = entry?.nodegroups.find((g) => g.nodegroupName === path[3]);
        if (!group) return notFound(response, `No node group found for name: ${path[3]}.`);
        return sendJson(response, 200, { nodegroup: group });
      }
      return sendJson(response, 404, { message: `no route ${request.method} ${url.pathname}` });
    } finally {
      inFlight--;
    }
  });
  server.keepAliveTimeout = 60_000;
  server.on('connection', () => (state.connections += 1));
  const stop = await serveOnLoopback(server, port);
  return Object.assign(state, { stop });
}
