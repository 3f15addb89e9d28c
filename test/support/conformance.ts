/**
 * The upstream ClusterProfile conformance suite's specs (kubernetes-sigs/cluster-inventory-api,
 * `conformance/clusterprofile.go`), held as checks of ours: its Ginkgo module is not served by the Go
 * module proxy (nor any release with `v1alpha2`, whose serving its first spec checks), so it cannot be built
 * here. Each check keeps the spec's own text and label (Required: a KEP MUST; Optional: a SHOULD) and does
 * what the spec does, over the ClusterProfile objects of one inventory namespace.
 */
import type { ClusterProfile } from '../../core/domain/model/clusterProfile.ts';

const MANAGER_LABEL = 'x-k8s.io/cluster-manager';
const MEMBER_ID_LABEL = 'multicluster.x-k8s.io/inventory-member-id';

export interface SpecResult {
  spec: string;
  label: 'Required' | 'Optional';
  /** Why the spec failed; undefined when it passed. */
  failure?: string;
}

/**
 * Every spec over `inventory` (all the namespace's profiles, whichever manager wrote them), the profiles
 * under test being those of `manager` (the suite's `--cluster-manager`).
 */
export function conformance(inventory: readonly ClusterProfile[], manager: string): SpecResult[] {
  const underTest = inventory.filter((p) => p.spec?.clusterManager?.name === manager);
  /** `requireProfilesUnderTest`: an empty inventory fails a per-object spec as undetermined. */
  const each = (check: (profile: ClusterProfile) => string | undefined): string | undefined => {
    if (underTest.length === 0) return `no ClusterProfile objects to verify for cluster manager "${manager}"`;
    for (const profile of underTest) {
      const failure = check(profile);
      if (failure) return failure;
    }
    return undefined;
  };
  const condition = (profile: ClusterProfile, type: string) =>
    profile.status?.conditions?.find((c) => c.type === type);
  const byMemberId = new Map<string, string[]>();
  for (const profile of inventory) {
    const id = profile.metadata.labels?.[MEMBER_ID_LABEL];
    if (id) byMemberId.set(id, [...(byMemberId.get(id) ?? []), profile.metadata.name]);
  }
  const specs: Array<[string, SpecResult['label'], () => string | undefined]> = [
    [
      'The cluster manager must represent each of its registered member clusters as a ClusterProfile object in the inventory namespace',
      'Required',
      () =>
        underTest.length === 0 ? 'no ClusterProfile objects found in the inventory namespace' : undefined,
    ],
    [
      `The cluster manager must add the ${MANAGER_LABEL} label to each ClusterProfile it creates, with the name of the cluster manager as its value`,
      'Required',
      () =>
        each((p) => {
          const value = p.metadata.labels?.[MANAGER_LABEL];
          if (value === undefined)
            return `ClusterProfile "${p.metadata.name}" does not carry the ${MANAGER_LABEL} label`;
          return value === p.spec.clusterManager.name
            ? undefined
            : `the ${MANAGER_LABEL} label of "${p.metadata.name}" is "${value}", not spec.clusterManager.name "${p.spec.clusterManager.name}"`;
        }),
    ],
    [
      `A ClusterProfile carrying the ${MEMBER_ID_LABEL} label must have a non-empty value for it`,
      'Required',
      () =>
        each((p) =>
          p.metadata.labels?.[MEMBER_ID_LABEL] === ''
            ? `ClusterProfile "${p.metadata.name}" carries the ${MEMBER_ID_LABEL} label with an empty value`
            : undefined,
        ),
    ],
    [
      `The cluster manager should add the ${MEMBER_ID_LABEL} label to each ClusterProfile it creates`,
      'Optional',
      () =>
        each((p) =>
          p.metadata.labels?.[MEMBER_ID_LABEL]
            ? undefined
            : `ClusterProfile "${p.metadata.name}" does not carry the ${MEMBER_ID_LABEL} label with a non-empty value`,
        ),
    ],
    [
      'Each member cluster should be represented by at most one ClusterProfile object within the inventory',
      'Optional',
      () => {
        const twice = [...byMemberId].find(([, names]) => names.length > 1);
        return twice ? `member cluster "${twice[0]}" is represented by ${twice[1].join(', ')}` : undefined;
      },
    ],
    [
      'The cluster manager should maintain the ControlPlaneHealthy condition on each ClusterProfile it manages',
      'Optional',
      () =>
        each((p) =>
          condition(p, 'ControlPlaneHealthy')
            ? undefined
            : `ClusterProfile "${p.metadata.name}" does not report the ControlPlaneHealthy condition`,
        ),
    ],
    [
      'The cluster manager should report the Joined condition on ClusterProfiles of clusters under its management',
      'Optional',
      () =>
        each((p) =>
          condition(p, 'Joined')
            ? undefined
            : `ClusterProfile "${p.metadata.name}" does not report the Joined condition`,
        ),
    ],
    [
      'The cluster manager should report the Kubernetes version of the member cluster in status.version.kubernetes',
      'Optional',
      () =>
        each((p) =>
          p.status?.version?.kubernetes
            ? undefined
            : `ClusterProfile "${p.metadata.name}" does not report the member cluster's Kubernetes version`,
        ),
    ],
  ];
  return specs.map(([spec, label, check]) => {
    const failure = check();
    return { spec, label, ...(failure ? { failure } : {}) };
  });
}
