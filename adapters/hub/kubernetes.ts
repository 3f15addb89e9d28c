/**
 * What a Kubernetes hub needs, in one module the composition root imports on demand: the CLI loads the
 * (large) Kubernetes client only when the hub is a cluster, and bundlers still see which names are used.
 */
export { KubeConfig } from '@kubernetes/client-node';
export { KubernetesHub } from './KubernetesHub.ts';
export { KubernetesLeaseStore } from './KubernetesLeases.ts';
