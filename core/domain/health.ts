import { CONDITION_MESSAGE_MAX_LENGTH, HealthReason } from './constants.ts';
import { fitText } from './properties.ts';
import { own } from './own.ts';
import type { ConditionStatus } from './model/clusterProfile.ts';
import type { ObservedCluster, Provider } from './model/observedCluster.ts';

export interface HealthVerdict {
  status: ConditionStatus;
  reason: HealthReason;
  message: string;
}

type Rule = readonly [status: ConditionStatus, reason: HealthReason];

/** EKS `status` → verdict (health issues are weighed separately). */
const EKS: Readonly<Record<string, Rule>> = {
  ACTIVE: ['True', HealthReason.Running],
  UPDATING: ['True', HealthReason.Updating],
  CREATING: ['Unknown', HealthReason.Provisioning],
  PENDING: ['Unknown', HealthReason.Provisioning],
  DELETING: ['False', HealthReason.Deleting],
  FAILED: ['False', HealthReason.Failed],
};

/** GKE `status` → verdict. The REST API may answer enums as numbers; both spellings are known. */
const GKE: Readonly<Record<string, Rule>> = {
  RUNNING: ['True', HealthReason.Running],
  RECONCILING: ['True', HealthReason.Updating],
  PROVISIONING: ['Unknown', HealthReason.Provisioning],
  STOPPING: ['False', HealthReason.Deleting],
  ERROR: ['False', HealthReason.Failed],
  DEGRADED: ['False', HealthReason.Degraded],
  STATUS_UNSPECIFIED: ['Unknown', HealthReason.StatusUnknown],
};
/** `google.container.v1.Cluster.Status` numbers. */
const GKE_STATUS_BY_NUMBER = [
  'STATUS_UNSPECIFIED',
  'PROVISIONING',
  'RUNNING',
  'RECONCILING',
  'STOPPING',
  'ERROR',
  'DEGRADED',
];

/** AKS `provisioningState` → verdict (power state is weighed first). */
const AKS: Readonly<Record<string, Rule>> = {
  SUCCEEDED: ['True', HealthReason.Running],
  UPDATING: ['True', HealthReason.Updating],
  UPGRADING: ['True', HealthReason.Updating],
  SCALING: ['True', HealthReason.Updating],
  MIGRATING: ['True', HealthReason.Updating],
  STARTING: ['Unknown', HealthReason.Provisioning],
  STOPPING: ['False', HealthReason.Stopped],
  CREATING: ['Unknown', HealthReason.Provisioning],
  DELETING: ['False', HealthReason.Deleting],
  FAILED: ['False', HealthReason.Failed],
  CANCELED: ['Unknown', HealthReason.StatusUnknown],
};

const RULES: Readonly<Record<Provider, Readonly<Record<string, Rule>>>> = { eks: EKS, gke: GKE, aks: AKS };

function canonicalStatus(provider: Provider, status: string): string {
  const trimmed = status.trim();
  if (provider === 'gke' && /^\d+$/.test(trimmed)) return GKE_STATUS_BY_NUMBER[Number(trimmed)] ?? trimmed;
  return trimmed.toUpperCase();
}

function describeIssues(cluster: ObservedCluster): string {
  return cluster.health.issues.map((issue) => `${issue.code}: ${issue.message}`).join('; ');
}

/**
 * One ordered decision for `ControlPlaneHealthy`:
 * 1. an AKS cluster whose power state is not Running is False/Stopped;
 * 2. an EKS cluster that is ACTIVE but reports health issues is False/HealthIssues;
 * 3. otherwise the provider's status decides through its table;
 * 4. a status no table knows is Unknown/StatusUnknown.
 * The message carries the provider's status and any issues or conditions it reported.
 */
export function controlPlaneHealth(cluster: ObservedCluster): HealthVerdict {
  const status = canonicalStatus(cluster.provider, cluster.health.status);
  const issues = describeIssues(cluster);
  const detail = [`${cluster.provider.toUpperCase()} status ${status || 'unreported'}`];
  if (cluster.health.powerState) detail.push(`power state ${cluster.health.powerState}`);
  if (issues) detail.push(issues);
  // Within the CRD's limit, whatever the cloud reported (the hub refuses a longer message).
  const message = fitText(detail.join('; '), CONDITION_MESSAGE_MAX_LENGTH);

  const power = cluster.health.powerState?.trim().toUpperCase();
  if (cluster.provider === 'aks' && power && power !== 'RUNNING') {
    return { status: 'False', reason: HealthReason.Stopped, message };
  }
  if (cluster.provider === 'eks' && status === 'ACTIVE' && cluster.health.issues.length > 0) {
    return { status: 'False', reason: HealthReason.HealthIssues, message };
  }
  const rule = own(RULES[cluster.provider], status);
  if (!rule) return { status: 'Unknown', reason: HealthReason.StatusUnknown, message };
  return { status: rule[0], reason: rule[1], message };
}
