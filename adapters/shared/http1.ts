/** Kubernetes clients (client-node) over HTTP/1.1. */
import { bufferFromFileOrString, type KubeConfig } from '@kubernetes/client-node';
import type { LookupFunction } from 'node:net';
import { Agent, type Dispatcher } from 'undici';

/**
 * A connection pool for a kubeconfig's current cluster that speaks HTTP/1.1 only, with the TLS settings
 * client-node would give its own (its public `createDispatcherOptions`): for the member clusters' requests, which
 * a stopped run cuts short. undici offers HTTP/2 by default, and Node's HTTP/2 session aborted the whole process
 * under load (std::bad_alloc in Http2Session::CopyDataIntoOutgoing) when those streams were cut short. A cluster
 * without TLS settings of its own (no CA: the system's trust) gets one too, where client-node would use undici's
 * global pool (HTTP/2 offered). Undefined only through a proxy, whose own pool client-node keeps (member
 * connections refuse that). `lookup` resolves the server's name for each connection.
 */
export function http1Dispatcher(config: KubeConfig, lookup?: LookupFunction): Dispatcher | undefined {
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
  const resolve = lookup ? { lookup } : {};
  if (options.type === 'agent')
    return new Agent({ connect: { ...options.connect, ...resolve }, allowH2: false });
  // As client-node keeps its own pools' connections (30 s, as client-go does).
  if (options.type === 'none')
    return new Agent({
      connect: { keepAlive: true, keepAliveInitialDelay: 30_000, ...resolve },
      allowH2: false,
    });
  return undefined;
}
