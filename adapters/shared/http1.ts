/** Kubernetes clients (client-node) over HTTP/1.1. */
import { bufferFromFileOrString, type KubeConfig } from '@kubernetes/client-node';
import { Agent, type Dispatcher } from 'undici';

/**
 * A connection pool for a kubeconfig's current cluster that speaks HTTP/1.1 only, with the TLS settings
 * client-node would give its own (its public `createDispatcherOptions`): for the member clusters' requests, which
 * a stopped run cuts short. undici offers HTTP/2 by default, and Node's HTTP/2 session aborted the whole process
 * under load (std::bad_alloc in Http2Session::CopyDataIntoOutgoing) when those streams were cut short. Undefined
 * when client-node would not make a pool of its own (a proxy, or no TLS settings): its choice is kept then.
 */
export function http1Dispatcher(config: KubeConfig): Dispatcher | undefined {
  const cluster = config.getCurrentCluster();
  const user = config.getCurrentUser();
  const ca = bufferFromFileOrString(cluster?.caFile, cluster?.caData);
  const cert = bufferFromFileOrString(user?.certFile, user?.certData);
  const key = bufferFromFileOrString(user?.keyFile, user?.keyData);
  const options = config.createDispatcherOptions(cluster, {
    ...(ca ? { ca } : {}),
    ...(cert ? { cert } : {}),
    ...(key ? { key } : {}),
    ...(cluster?.skipTLSVerify ? { rejectUnauthorized: false } : {}),
    ...(cluster?.tlsServerName ? { servername: cluster.tlsServerName } : {}),
  });
  return options.type === 'agent' ? new Agent({ connect: options.connect, allowH2: false }) : undefined;
}
