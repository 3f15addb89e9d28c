/** A member's profile as cpsync's own member connections read it, for tests of those connections. */
import type { ClusterProfile } from '../../core/domain/model/clusterProfile.ts';

/** A GKE profile whose access provider reaches `server`, with `caData` or (undefined) the system's trust. */
export function gkeMemberProfile(server: string, caData: string | undefined): ClusterProfile {
  return {
    metadata: { namespace: 'inventory', name: 'member', labels: { 'cpsync.io/provider': 'gke' } },
    status: {
      accessProviders: [
        {
          name: 'gke',
          cluster: {
            server,
            ...(caData ? { 'certificate-authority-data': caData } : {}),
            extensions: [
              {
                name: 'client.authentication.k8s.io/exec',
                extension: {
                  provider: 'gke',
                  projectId: 'acme',
                  location: 'europe-west1',
                  clusterName: 'member',
                },
              },
            ],
          },
        },
      ],
    },
  } as unknown as ClusterProfile;
}
