/** Argo CD cluster Secrets as tests need them. */
import { LABEL_CLUSTER_MANAGER } from '../../core/domain/constants.ts';
import type { ClusterSecret } from '../../functions/subscribers/argocd/clusterSecret.ts';

/** `secret` as a version before Secrets named their manager wrote it: the same, without the manager label. */
export function asEarlierVersionWrote(secret: ClusterSecret): ClusterSecret {
  const { [LABEL_CLUSTER_MANAGER]: _manager, ...labels } = secret.metadata.labels;
  return { ...secret, metadata: { ...secret.metadata, labels } };
}
