/**
 * A TLS proxy in front of the local hub that can answer in its place: 503s, 409 conflicts, dropped
 * connections. Its certificate is issued by the hub's CA, so a kubeconfig for it is an ordinary one;
 * it forwards everything else to the kube-apiserver as the hub's admin.
 */
import { readFileSync } from 'node:fs';
import { createServer, request as httpsRequest } from 'node:https';
import type { IncomingMessage } from 'node:http';
import { clientCertificate, kubeconfigYaml, type HubState } from './hub.ts';
import { freePort, serveOnLoopback } from './net.ts';

type HubFault = { status: keyof typeof REASONS } | { drop: true } | { hang: true };

/** The Status reason the kube-apiserver gives with each status the proxy can answer with. */
const REASONS = {
  401: 'Unauthorized',
  403: 'Forbidden',
  409: 'Conflict',
  410: 'Expired',
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
    stop: async () => {},
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
      if (fault) {
        const reason = REASONS[fault.status];
        response.writeHead(fault.status, { 'content-type': 'application/json' });
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
          response.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(response);
        },
      );
      forwarded.on('error', () => response.destroy());
      request.pipe(forwarded);
    },
  );
  proxy.stop = await serveOnLoopback(server, port);
  const client = clientCertificate(state, 'hub-proxy-client');
  proxy.kubeconfig = kubeconfigYaml(proxy.server, state.caCert, 'via-proxy', client.cert, client.key);
  return proxy;
}
