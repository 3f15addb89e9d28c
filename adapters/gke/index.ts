/** GKE source: clusters of GCP projects (explicit or found with Resource Manager). */
export { classifyGoogleError } from './classify.ts';
export { enumerateGkeScopes, GkeSource, type GkeSourceOptions, type ProjectSelection } from './GkeSource.ts';
export { mapGkeCluster } from './mapCluster.ts';
