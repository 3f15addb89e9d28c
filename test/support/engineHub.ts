/** The engine's hub ports on the local kube-apiserver, as its admin, in a namespace made for them. */
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { KubernetesHub } from '../../adapters/hub/KubernetesHub.ts';
import { KubernetesLeaseStore } from '../../adapters/hub/KubernetesLeases.ts';
import { adminKubeConfig, localHub } from './hub.ts';

export async function adminHubIn(namespace: string): Promise<{
  core: CoreV1Api;
  objects: CustomObjectsApi;
  hub: KubernetesHub;
  leases: KubernetesLeaseStore;
}> {
  const admin = adminKubeConfig(await localHub());
  const core = admin.makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: namespace } } });
  return {
    core,
    objects: admin.makeApiClient(CustomObjectsApi),
    hub: new KubernetesHub({ kubeConfig: admin }),
    leases: new KubernetesLeaseStore({ kubeConfig: async () => admin, namespace }),
  };
}
