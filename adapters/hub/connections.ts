import {
  Observable,
  type ConfigurationOptions,
  type ObservableMiddleware,
  type RequestContext,
} from '@kubernetes/client-node';

/**
 * Request options under which every request of one client of one hub shares one connection pool, each
 * within `timeoutMillis`. client-node makes a new undici Agent (its own TLS connections) for every
 * request, so nothing is ever reused: a TLS handshake per request on both sides, and idle connections
 * piling up at the kube-apiserver. Every request made with these options goes through the first one's
 * Agent instead; TLS settings come from the kubeconfig, which one client does not change (credentials
 * travel in headers, set per request). Make one per KubeConfig.
 */
export function sharedConnections(timeoutMillis: number): ConfigurationOptions {
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
  return { middleware: [middleware], middlewareMergeStrategy: 'append' };
}
