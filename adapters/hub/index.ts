/** Hub adapters: a Kubernetes API server with the ClusterProfile CRD, or a directory of YAML files. */
export { FileHub, type FileHubOptions } from './FileHub.ts';
export { KubernetesHub, type KubernetesHubOptions } from './KubernetesHub.ts';
export * from './errors.ts';
export { eksToken, TOKEN_LIFETIME_SECONDS, TOKEN_REFRESH_MILLIS, type EksTokenOptions } from './eksToken.ts';
export { RefreshingHub } from './RefreshingHub.ts';
