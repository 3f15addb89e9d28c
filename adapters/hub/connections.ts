import {
  Observable,
  ResponseContext,
  wrapHttpLibrary,
  type ConfigurationOptions,
  type HttpLibrary,
  type ObservableMiddleware,
  type RequestContext,
} from '@kubernetes/client-node';
import { request } from 'undici';

/**
 * How the hub's requests are sent. `'request'`: undici's `request()`, the dispatcher API under undici's `fetch()`
 * that client-node uses, without the WHATWG layer over it (Headers, Request and Response objects, a web stream
 * per body): under half the client's CPU per request, the same connections, TLS and HTTP version.
 * `'fetch'`: client-node's own path, kept to compare against (test/bench/hubRequests.ts).
 */
export type HubHttpLibrary = 'request' | 'fetch';

/** The response's headers as client-node reads them: lower-case names, one string each. */
function headersOf(raw: Record<string, string | string[] | undefined>): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const name in raw) {
    const value = raw[name];
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return headers;
}

/**
 * client-node's HTTP library over undici's `request()`: the request as client-node made it (URL, method, headers,
 * body, deadline, dispatcher), the response read whole, as every generated API reads it. Compression is not
 * asked for (client-node's fetch asks for gzip, which the kube-apiserver uses on large lists only).
 */
const undiciRequests: HttpLibrary = wrapHttpLibrary({
  async send(context: RequestContext): Promise<ResponseContext> {
    const body = context.getBody();
    const response = await request(context.getUrl(), {
      method: context.getHttpMethod(),
      headers: context.getHeaders(),
      body: body === undefined || typeof body === 'string' ? body : body.toString(),
      signal: context.getSignal(),
      dispatcher: context.getDispatcher(),
    });
    const text = response.body.text();
    // A status the generated code answers without reading the body (401) leaves it unread, not unhandled.
    text.catch(() => {});
    return new ResponseContext(response.statusCode, headersOf(response.headers), {
      text: () => text,
      binary: async () => Buffer.from(await text),
      stream: () => null,
    });
  },
});

/**
 * Request options under which every request of one client of one hub shares one connection pool, each
 * within `timeoutMillis`, sent by `library`. client-node makes a new undici Agent (its own TLS connections)
 * for every request, so nothing is ever reused: a TLS handshake per request on both sides, and idle
 * connections piling up at the kube-apiserver. Every request made with these options goes through the first
 * one's Agent instead; TLS settings come from the kubeconfig, which one client does not change (credentials
 * travel in headers, set per request). Make one per KubeConfig.
 */
export function sharedConnections(
  timeoutMillis: number,
  library: HubHttpLibrary = 'request',
): ConfigurationOptions {
  let dispatcher: ReturnType<RequestContext['getDispatcher']>;
  const middleware: ObservableMiddleware = {
    pre: (context: RequestContext) => {
      dispatcher ??= context.getDispatcher();
      if (dispatcher) context.setDispatcher(dispatcher);
      context.setSignal(AbortSignal.timeout(timeoutMillis));
      return new Observable(Promise.resolve(context));
    },
    post: (response) => new Observable(Promise.resolve(response)),
  };
  return {
    middleware: [middleware],
    middlewareMergeStrategy: 'append',
    ...(library === 'request' ? { httpApi: undiciRequests } : {}),
  };
}
