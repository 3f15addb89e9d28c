/**
 * A loopback proxy in front of moto that lets a test shape what moto cannot: answers moto never gives
 * (AccessDenied on AssumeRole, throttling, a cluster still CREATING) and a fixed latency per call.
 * It forwards everything else to moto unchanged; the SDKs under test talk to it as to any endpoint.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { freePort, serveOnLoopback } from './net.ts';

export interface AwsCall {
  method: string;
  path: string;
  /** From the SigV4 credential scope. */
  service: string;
  region: string;
  accessKeyId: string;
  /** `X-Amz-Target` (JSON protocols) or the query protocol's `Action`. */
  operation: string;
  body: string;
  /** How long the call took, from its arrival to the end of its answer (set once answered). */
  millis?: number;
}

export interface CannedResponse {
  status: number;
  headers?: Record<string, string>;
  body: string;
}

/** Returns a response to answer instead of moto, or undefined to forward. */
type Interceptor = (
  call: AwsCall,
  forward: (body: string) => Promise<{ status: number; body: string }>,
) => CannedResponse | undefined | Promise<CannedResponse | undefined>;
/** Returns a replacement body for moto's answer, or undefined to keep it. */
type Rewriter = (call: AwsCall, status: number, body: string) => string | undefined;

export interface AwsProxy {
  endpoint: string;
  calls: AwsCall[];
  /** Most calls that were in flight at once since the last clear(). */
  maxInFlight(): number;
  /** Adds an interceptor (`first`: asked before those added earlier); returns a function that removes it. */
  intercept(interceptor: Interceptor, options?: { first?: boolean }): () => void;
  /** Adds a rewriter; returns a function that removes it. */
  rewrite(rewriter: Rewriter): () => void;
  /**
   * Rewrites moto's successful answers to GETs of `path` (the whole path, query included, or a pattern of it):
   * `change` edits the parsed JSON in place (what it returns is ignored). Returns a function that removes it.
   */
  rewriteAnswer<Answer = Record<string, Record<string, unknown>>>(
    path: string | RegExp,
    change: (answer: Answer, call: AwsCall) => unknown,
  ): () => void;
  /** Empties the call log and the in-flight peak. */
  clear(): void;
  stop(): Promise<void>;
}

function parseCall(request: IncomingMessage, body: string): AwsCall {
  const auth = request.headers.authorization ?? '';
  const scope = /Credential=([^/]+)\/\d{8}\/([^/]+)\/([^/]+)\/aws4_request/.exec(auth);
  const target = request.headers['x-amz-target'];
  const action = /(?:^|&)Action=([^&]+)/.exec(body)?.[1];
  return {
    method: request.method ?? 'GET',
    path: request.url ?? '/',
    accessKeyId: scope?.[1] ?? '',
    region: scope?.[2] ?? '',
    service: scope?.[3] ?? '',
    operation: (Array.isArray(target) ? target[0] : target) ?? action ?? '',
    body,
  };
}

export async function startAwsProxy(
  upstream: string,
  options: { latencyMs?: number } = {},
): Promise<AwsProxy> {
  const interceptors: Interceptor[] = [];
  const rewriters: Rewriter[] = [];
  const calls: AwsCall[] = [];
  let inFlight = 0;
  let peak = 0;
  const server: Server = createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks);
    const call = parseCall(request, raw.toString('utf8'));
    calls.push(call);
    inFlight += 1;
    peak = Math.max(peak, inFlight);
    const arrived = performance.now();
    response.once('close', () => {
      inFlight -= 1;
      call.millis = performance.now() - arrived;
    });
    if (options.latencyMs) await new Promise((r) => setTimeout(r, options.latencyMs));
    const headers: Record<string, string> = {};
    for (const [key, value] of Object.entries(request.headers)) {
      if (value !== undefined && key !== 'host' && key !== 'connection' && key !== 'content-length')
        headers[key] = Array.isArray(value) ? value.join(', ') : value;
    }
    // A presigned request (an EKS token's GetCallerIdentity) carries its credential scope in the query;
    // moto finds the service only in an Authorization header, so the proxy passes the scope on as one.
    const presigned = new URL(call.path, 'http://local').searchParams;
    if (!headers.authorization && presigned.get('X-Amz-Credential'))
      headers.authorization = `AWS4-HMAC-SHA256 Credential=${presigned.get('X-Amz-Credential')}, SignedHeaders=${presigned.get('X-Amz-SignedHeaders') ?? 'host'}, Signature=${presigned.get('X-Amz-Signature') ?? ''}`;
    /** Sends `body` (instead of the original) to moto; for interceptors that answer in part themselves. */
    const forward = async (body: string) => {
      const answer = await fetch(`${upstream}${call.path}`, { method: call.method, headers, body });
      return { status: answer.status, body: await answer.text() };
    };
    for (const interceptor of [...interceptors]) {
      const canned = await interceptor(call, forward);
      if (canned) {
        response.writeHead(canned.status, { 'content-type': 'application/json', ...canned.headers });
        response.end(canned.body);
        return;
      }
    }
    try {
      const answer = await fetch(`${upstream}${call.path}`, {
        method: call.method,
        headers,
        ...(raw.length > 0 && call.method !== 'GET' && call.method !== 'HEAD' ? { body: raw } : {}),
      });
      let text = await answer.text();
      for (const rewriter of rewriters) text = rewriter(call, answer.status, text) ?? text;
      const out: Record<string, string> = {};
      answer.headers.forEach((value, key) => {
        if (!['content-length', 'content-encoding', 'transfer-encoding', 'connection'].includes(key))
          out[key] = value;
      });
      response.writeHead(answer.status, out);
      response.end(text);
    } catch (error) {
      response.writeHead(502, { 'content-type': 'text/plain' });
      response.end(String(error));
    }
  });
  const port = await freePort();
  const stop = await serveOnLoopback(server, port);
  const rewrite = (rewriter: Rewriter) => {
    rewriters.push(rewriter);
    // Once: a second call must not take out another rewriter (splice(-1) would remove the last one).
    return () => {
      const at = rewriters.indexOf(rewriter);
      if (at >= 0) rewriters.splice(at, 1);
    };
  };
  const proxy: AwsProxy = {
    endpoint: `http://127.0.0.1:${port}`,
    calls,
    maxInFlight: () => peak,
    intercept(interceptor, options) {
      if (options?.first) interceptors.unshift(interceptor);
      else interceptors.push(interceptor);
      return () => {
        const at = interceptors.indexOf(interceptor);
        if (at >= 0) interceptors.splice(at, 1);
      };
    },
    rewrite,
    rewriteAnswer(path, change) {
      const matches = (callPath: string) =>
        typeof path === 'string' ? callPath === path : path.test(callPath);
      return rewrite((call, status, body) => {
        if (status !== 200 || call.method !== 'GET' || !matches(call.path)) return undefined;
        const answer = JSON.parse(body) as Parameters<typeof change>[0];
        change(answer, call);
        return JSON.stringify(answer);
      });
    },
    clear() {
      calls.length = 0;
      peak = inFlight;
    },
    stop,
  };
  return proxy;
}

/** STS's answer when the caller may not assume `roleArn`. */
/** The EKS clusters DescribeCluster was called for in `calls` (`region/name`), sorted. */
export function describedClusters(calls: readonly AwsCall[]): string[] {
  return calls
    .flatMap((c) =>
      c.method === 'GET' && /^\/clusters\/[^/?]+$/.test(c.path)
        ? [`${c.region}${c.path.slice('/clusters'.length)}`]
        : [],
    )
    .sort();
}

export function stsAccessDenied(roleArn: string): CannedResponse {
  return {
    status: 403,
    headers: { 'content-type': 'text/xml' },
    body:
      '<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><Error><Type>Sender</Type><Code>AccessDenied</Code>' +
      `<Message>User: arn:aws:iam::123456789012:role/cpsync is not authorized to perform: sts:AssumeRole on resource: ${roleArn}</Message>` +
      '</Error><RequestId>4f6e6b2a-0000-4000-8000-000000000000</RequestId></ErrorResponse>',
  };
}

/** A REST-JSON service's error (EKS and the like): the type travels in `x-amzn-ErrorType`. */
export function restJsonError(status: number, type: string, message: string): CannedResponse {
  return {
    status,
    headers: { 'x-amzn-errortype': type, 'content-type': 'application/json' },
    body: JSON.stringify({ message }),
  };
}
