/** Kubernetes clients (client-node) over HTTP/1.1. */
import type { RequestContext } from '@kubernetes/client-node';
import { Agent } from 'undici';

/**
 * client-node's Agent (its TLS settings from the kubeconfig) as one that speaks HTTP/1.1 only, for the member
 * clusters' requests, which a stopped run cuts short. undici offers HTTP/2 by default, and Node's HTTP/2 session
 * aborted the whole process under load (std::bad_alloc in Http2Session::CopyDataIntoOutgoing) when those streams
 * were cut short. An Agent whose options cannot be read is kept as it is.
 */
export function http1Only(dispatcher: ReturnType<RequestContext['getDispatcher']>) {
  if (!(dispatcher instanceof Agent)) return dispatcher;
  const key = Object.getOwnPropertySymbols(dispatcher).find((symbol) => symbol.description === 'options');
  const options = key ? (dispatcher as unknown as Record<symbol, unknown>)[key] : undefined;
  if (!options || typeof options !== 'object') return dispatcher;
  void dispatcher.close();
  return new Agent({ ...(options as Agent.Options), allowH2: false });
}
