/** Hub adapters: a Kubernetes API server with the ClusterProfile CRD, or a directory of YAML files. */
export { FileHub, type FileHubOptions } from './FileHub.ts';
export { KubernetesHub, type KubernetesHubOptions } from './KubernetesHub.ts';
export * from './errors.ts';
