/**
 * Where an invocation's time goes: every HTTP request a function's invocation sends (node:http and undici alike,
 * through their diagnostics channels), tied to the invocation by an AsyncLocalStorage, with when it was sent and
 * when its answer's headers came. Off unless the bench is given a file to write them to (`CPSYNC_BENCH_TRACE`).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import diagnostics from 'node:diagnostics_channel';
import type { ClientRequest, IncomingMessage } from 'node:http';
import { writeFileSync } from 'node:fs';

interface TracedRequest {
  method: string;
  /** host:port */
  target: string;
  path: string;
  /** An AWS request's operation (its X-Amz-Target). */
  op?: string;
  start: number;
  end?: number;
  status?: number;
}

export interface TracedInvocation {
  what: string;
  cluster?: string;
  start: number;
  end?: number;
  requests: TracedRequest[];
}

/** What an undici request carries in its diagnostics messages. */
interface UndiciRequest {
  origin?: string | URL;
  method?: string;
  path?: string;
}

export interface RequestTrace {
  /** Runs `work` as one invocation: the requests it sends are its own. */
  invocation<T>(what: string, cluster: string | undefined, work: () => Promise<T>): Promise<T>;
  /** Writes what was traced, with the names of the targets. */
  write(names: Record<string, string>): void;
}

export function requestTrace(file: string | undefined): RequestTrace {
  if (!file) return { invocation: (_what, _cluster, work) => work(), write: () => {} };
  const current = new AsyncLocalStorage<TracedInvocation>();
  const invocations: TracedInvocation[] = [];
  const open = new WeakMap<object, TracedRequest>();
  const started = (key: object, request: Omit<TracedRequest, 'start'>) => {
    const invocation = current.getStore();
    if (!invocation) return;
    const traced = { ...request, start: performance.timeOrigin + performance.now() };
    invocation.requests.push(traced);
    open.set(key, traced);
  };
  const answered = (key: object, status: number | undefined) => {
    const traced = open.get(key);
    if (!traced || traced.end !== undefined) return;
    traced.end = performance.timeOrigin + performance.now();
    if (status !== undefined) traced.status = status;
  };
  diagnostics.subscribe('http.client.request.start', (message) => {
    const { request } = message as { request: ClientRequest };
    const host = String(request.getHeader('host') ?? request.host);
    const port = host.includes(':') ? '' : request.protocol === 'https:' ? ':443' : ':80';
    const op = request.getHeader('x-amz-target');
    started(request, {
      method: request.method,
      target: `${host}${port}`,
      path: request.path.slice(0, 120),
      ...(typeof op === 'string' ? { op } : {}),
    });
  });
  diagnostics.subscribe('http.client.response.finish', (message) => {
    const { request, response } = message as { request: ClientRequest; response: IncomingMessage };
    answered(request, response.statusCode);
  });
  diagnostics.subscribe('http.client.request.error', (message) =>
    answered((message as { request: ClientRequest }).request, -1),
  );
  diagnostics.subscribe('undici:request:create', (message) => {
    const { request } = message as { request: UndiciRequest };
    const origin = new URL(String(request.origin ?? 'http://unknown'));
    started(request, {
      method: request.method ?? 'GET',
      target: `${origin.hostname}:${origin.port || (origin.protocol === 'https:' ? 443 : 80)}`,
      path: (request.path ?? '').slice(0, 120),
    });
  });
  diagnostics.subscribe('undici:request:headers', (message) => {
    const { request, response } = message as { request: object; response: { statusCode: number } };
    answered(request, response.statusCode);
  });
  diagnostics.subscribe('undici:request:error', (message) =>
    answered((message as { request: object }).request, -1),
  );
  return {
    async invocation(what, cluster, work) {
      const invocation: TracedInvocation = {
        what,
        ...(cluster ? { cluster } : {}),
        start: performance.timeOrigin + performance.now(),
        requests: [],
      };
      invocations.push(invocation);
      try {
        return await current.run(invocation, work);
      } finally {
        invocation.end = performance.timeOrigin + performance.now();
      }
    },
    write(names) {
      writeFileSync(file, JSON.stringify({ names, invocations }));
    },
  };
}
