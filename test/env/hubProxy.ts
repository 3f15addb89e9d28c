/**
 * A TLS proxy in front of the local hub that can answer in its place: 503s, 409 conflicts, dropped
 * connections; lose the hub's answer to a request it forwarded; or stop taking connections once it has
 * answered one (a refused connection from then on, until `reopen`). Its certificate is issued by the hub's CA, so a kubeconfig for it is an ordinary one;
 * it forwards everything else to the kube-apiserver as the hub's admin.
 */
import { readFileSync } from 'node:fs';
import { createServer, request as httpsRequest } from 'node:https';
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { clientCertificate, kubeconfigYaml, type HubState } from './hub.ts';
import { freePort, serveOnLoopback } from './net.ts';

type HubFault =
  | { status: keyof typeof REASONS }
  | { drop: true }
  | { hang: true }
  /** Forwarded, done by the hub, and its answer lost: the connection is dropped. */
  | { lose: true }
  /** Forwarded and answered; then no connection is taken until `reopen()`. */
  | { refuseAfter: true }
  /** Forwarded and done by the hub; its answer goes back once `until` settles. */
  | { holdAnswer: true; until: Promise<unknown> }
  /** Held before it reaches the hub: forwarded once `until` settles (so the hub does it then). */
  | { holdRequest: true; until: Promise<unknown> };

/** The Status reason the kube-apiserver gives with each status the proxy can answer with. */
const REASONS = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  409: 'Conflict',
  410: 'Expired',
  422: 'Invalid',
  429: 'TooManyRequests',
  500: 'InternalError',
  503: 'ServiceUnavailable',
} as const;

/** Decides, per request, whether to answer with a fault (undefined: forward). */
type HubFaultRule = (request: { method: string; path: string; index: number }) => HubFault | undefined;

export interface HubProxy {
  server: string;
  /** A kubeconfig (YAML text) for the proxy. */
  kubeconfig: string;
  rule: HubFaultRule | undefined;
  /** Called once the hub has answered a forwarded request, before the answer goes back. */
  onAnswered: ((request: { method: string; path: string }) => void) | undefined;
  requests: Array<{ method: string; path: string; fault?: string }>;
  /** False: every answer closes its connection, so each request is a connection of its own. */
  keepAlive: boolean;
  /** Takes connections again after a `refuseAfter`. */
  reopen(): Promise<void>;
  stop(): Promise<void>;
}

export async function startHubProxy(state: HubState): Promise<HubProxy> {
  const serving = clientCertificate(state, 'hub-proxy', undefined, 'IP:127.0.0.1,DNS:localhost');
  const admin = JSON.parse(readFileSync(state.kubeconfig, 'utf8')) as {
    users: Array<{ user: Record<string, string> }>;
  };
  const adminCert = Buffer.from(admin.users[0]!.user['client-certificate-data']!, 'base64');
  const adminKey = Buffer.from(admin.users[0]!.user['client-key-data']!, 'base64');
  const ca = readFileSync(state.caCert);
  const upstream = new URL(state.server);
  const port = await freePort();
  const proxy: HubProxy = {
    server: `https://127.0.0.1:${port}`,
    kubeconfig: '',
    rule: undefined,
    onAnswered: undefined,
    requests: [],
    keepAlive: true,
    reopen: async () => {},
    stop: async () => {},
  };
  /** Answer headers, closing the connection when the proxy keeps none alive. */
  const closing = (headers: OutgoingHttpHeaders): OutgoingHttpHeaders => {
    const { connection: _connection, 'keep-alive': _keepAlive, ...rest } = headers;
    return proxy.keepAlive ? headers : { ...rest, connection: 'close' };
  };

  const server = createServer(
    { cert: serving.cert, key: serving.key },
    (request: IncomingMessage, response) => {
      const entry = { method: request.method ?? 'GET', path: request.url ?? '/' };
      const fault = proxy.rule?.({ ...entry, index: proxy.requests.length });
      proxy.requests.push({ ...entry, ...(fault ? { fault: JSON.stringify(fault) } : {}) });
      if (fault && 'hang' in fault) return; // never answers
      if (fault && 'drop' in fault) {
        request.socket.destroy();
        return;
      }
      if (fault && 'status' in fault) {
        const reason = REASONS[fault.status];
        response.writeHead(fault.status, closing({ 'content-type': 'application/json' }));
        response.end(
          JSON.stringify({
            kind: 'Status',
            apiVersion: 'v1',
            status: 'Failure',
            message: `injected ${reason}`,
            reason,
            code: fault.status,
          }),
        );
        return;
      }
      if (fault && 'holdRequest' in fault) {
        request.pause();
        const go = () => forward(request, response, entry, undefined);
        void fault.until.then(go, go);
        return;
      }
      forward(request, response, entry, fault);
    },
  );
  /** Sends `request` on to the hub as its admin, and its answer back (as `fault` says). */
  function forward(
    request: IncomingMessage,
    response: ServerResponse,
    entry: { method: string; path: string },
    fault: HubFault | undefined,
  ): void {
    const forwarded = httpsRequest(
      {
        host: upstream.hostname,
        port: upstream.port,
        method: request.method,
        path: request.url,
        headers: { ...request.headers, host: upstream.host },
        cert: adminCert,
        key: adminKey,
        ca,
      },
      (answer) => {
        proxy.onAnswered?.(entry);
        if (fault && 'lose' in fault) {
          answer.resume();
          answer.on('end', () => request.socket.destroy());
          return;
        }
        // Closed before the answer goes back: the next request's connection is refused.
        if (fault && 'refuseAfter' in fault) server.close();
        const send = () => {
          response.writeHead(answer.statusCode ?? 502, closing(answer.headers));
          answer.pipe(response);
        };
        if (fault && 'holdAnswer' in fault) void fault.until.then(send, send);
        else send();
      },
    );
    forwarded.on('error', () => response.destroy());
    request.pipe(forwarded);
  }
  proxy.stop = await serveOnLoopback(server, port);
  proxy.reopen = () =>
    server.listening
      ? Promise.resolve()
      : new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const client = clientCertificate(state, 'hub-proxy-client');
  proxy.kubeconfig = kubeconfigYaml(proxy.server, state.caCert, 'via-proxy', client.cert, client.key);
  return proxy;
}
