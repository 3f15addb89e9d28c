/**
 * The local clouds in change: a cluster of the emulators held in a state the cloud shows while it
 * works (being created: no endpoint, no CA yet; being updated; being deleted) for a chosen time, then
 * settled as the cloud would settle it (running as before, or gone). EKS through the AWS proxy: moto's
 * answers for the cluster are rewritten while it is held, and a deleted one is deleted in moto.
 *
 * `announcedTransition` also says what each cloud sends about the operation, in the documented shapes and
 * order: EKS a CloudTrail record of the call as it starts and nothing at its end; GKE the audit entry
 * written as the long-running operation starts (`operation.first`) and the one written as it ends
 * (`operation.last`, the same operation id); AKS Event Grid's resource event as the request is taken, and
 * the Activity Log's event of the operation's end (status `Succeeded`) through an alert's action group.
 */
import { DeleteClusterCommand, EKSClient } from '@aws-sdk/client-eks';
import { accountCredentials } from '../support/aws.ts';
import {
  activityLogAlert,
  cloudTrailEvent,
  eventGridEvent,
  gkeAuditEntry,
  pubSubPush,
} from '../support/lambda.ts';
import { AZURE_SUBSCRIPTION, EKS_ACCOUNT, GCP_PROJECT, type Emulators } from './emulators.ts';

export type Transition = 'creating' | 'updating' | 'deleting';

/** GKE `status` numbers as its REST API answers them. */
const GKE_STATUS = { creating: 1, updating: 3, deleting: 4, running: 2 } as const;
const AKS_STATE = { creating: 'Creating', updating: 'Upgrading', deleting: 'Deleting' } as const;
const EKS_STATUS = { creating: 'CREATING', updating: 'UPDATING', deleting: 'DELETING' } as const;

/**
 * Holds the local cluster `name` of `provider` in `transition` for `millis` (forever when undefined),
 * then settles it: running (creating, updating) or gone (deleting). Returns `settle()`, which ends the
 * hold now (a held cluster never settles by itself once `settle` was called) and resolves once the cloud
 * answers as settled (an EKS cluster deleted in moto, which takes a call).
 */
export function holdTransition(
  emulators: Emulators,
  provider: 'eks' | 'gke' | 'aks',
  name: string,
  transition: Transition,
  millis?: number,
  /** EKS: the cluster's region (of the estate's account). */
  region = 'us-east-1',
): { settle: () => Promise<void> } {
  let settle: () => Promise<void>;
  if (provider === 'eks') {
    const path = `/clusters/${name}`;
    const stop = emulators.proxy.rewrite((call, status, body) => {
      if (status !== 200 || call.method !== 'GET' || call.path !== path || call.region !== region)
        return undefined;
      const answer = JSON.parse(body) as { cluster: Record<string, unknown> };
      answer.cluster.status = EKS_STATUS[transition];
      if (transition === 'creating') {
        delete answer.cluster.endpoint;
        delete answer.cluster.certificateAuthority;
      }
      return JSON.stringify(answer);
    });
    // A deleted cluster answers DELETING until moto has deleted it, then "not found".
    settle = async () => {
      if (transition === 'deleting') await deleteEksCluster(emulators, name, region);
      stop();
    };
  } else if (provider === 'gke') {
    const clusters = emulators.gke.clusters.get(GCP_PROJECT) ?? [];
    const cluster = clusters.find((c) => c.name === name);
    if (!cluster) throw new Error(`no local GKE cluster ${name}`);
    const { endpoint, masterAuth } = cluster;
    cluster.status = GKE_STATUS[transition];
    if (transition === 'creating') {
      delete cluster.endpoint;
      delete cluster.masterAuth;
    }
    settle = async () => {
      if (transition === 'deleting')
        emulators.gke.clusters.set(
          GCP_PROJECT,
          (emulators.gke.clusters.get(GCP_PROJECT) ?? []).filter((c) => c !== cluster),
        );
      else Object.assign(cluster, { status: GKE_STATUS.running, endpoint, masterAuth });
    };
  } else {
    const clusters = emulators.arm.clusters.get(AZURE_SUBSCRIPTION) ?? [];
    const cluster = clusters.find((c) => c.name === name);
    if (!cluster) throw new Error(`no local AKS cluster ${name}`);
    const properties = cluster.properties as Record<string, unknown>;
    const { fqdn } = properties;
    properties.provisioningState = AKS_STATE[transition];
    if (transition === 'creating') delete properties.fqdn;
    settle = async () => {
      if (transition === 'deleting')
        emulators.arm.clusters.set(
          AZURE_SUBSCRIPTION,
          (emulators.arm.clusters.get(AZURE_SUBSCRIPTION) ?? []).filter((c) => c !== cluster),
        );
      else Object.assign(properties, { provisioningState: 'Succeeded', fqdn });
    };
  }
  let settled: Promise<void> | undefined;
  const once = () => {
    clearTimeout(timer);
    return (settled ??= settle());
  };
  const timer = millis === undefined ? undefined : setTimeout(() => void once(), millis);
  timer?.unref();
  return { settle: once };
}

async function deleteEksCluster(emulators: Emulators, name: string, region: string): Promise<void> {
  const eks = new EKSClient({
    endpoint: emulators.moto.endpoint,
    region,
    credentials: await accountCredentials(emulators.moto.endpoint, EKS_ACCOUNT),
  });
  try {
    await eks.send(new DeleteClusterCommand({ name }));
  } finally {
    eks.destroy();
  }
}

/**
 * Holds the managed node group `nodegroup` of the local EKS cluster `cluster` in `transition` (its
 * DescribeNodegroup answers CREATING, UPDATING or DELETING through the AWS proxy) for `millis` (forever when
 * undefined); `settle()` ends the hold, the group ACTIVE again.
 */
export function holdNodeGroup(
  emulators: Emulators,
  cluster: string,
  nodegroup: string,
  transition: Transition,
  millis?: number,
  region = 'us-east-1',
): { settle: () => void } {
  const path = `/clusters/${cluster}/node-groups/${nodegroup}`;
  const stop = emulators.proxy.rewrite((call, status, body) => {
    if (status !== 200 || call.method !== 'GET' || call.path !== path || call.region !== region)
      return undefined;
    const answer = JSON.parse(body) as { nodegroup: Record<string, unknown> };
    answer.nodegroup.status = EKS_STATUS[transition];
    return JSON.stringify(answer);
  });
  const timer = millis === undefined ? undefined : setTimeout(stop, millis);
  timer?.unref();
  return {
    settle: () => {
      clearTimeout(timer);
      stop();
    },
  };
}

/** What a cloud sends about an operation on a cluster, as it reaches cpsync. */
export type CloudEvent =
  | { cloud: 'eks'; via: 'cloudtrail'; event: ReturnType<typeof cloudTrailEvent> }
  | { cloud: 'gke'; via: 'pubsub'; push: ReturnType<typeof pubSubPush> }
  | { cloud: 'aks'; via: 'eventgrid'; events: Array<ReturnType<typeof eventGridEvent>> }
  | { cloud: 'aks'; via: 'alert'; alert: ReturnType<typeof activityLogAlert> };

const EKS_CALL = {
  creating: 'CreateCluster',
  updating: 'UpdateClusterVersion',
  deleting: 'DeleteCluster',
} as const;
const GKE_METHOD = {
  creating: 'CreateCluster',
  updating: 'UpdateCluster',
  deleting: 'DeleteCluster',
} as const;
let sent = 0;

/**
 * What `provider` sends about `transition` of the cluster `name`: the events as the operation starts, and
 * those as it ends (none for EKS). `where`: the GKE location (default us-central1), the AKS resource group.
 */
export function operationEvents(
  provider: 'eks' | 'gke' | 'aks',
  name: string,
  transition: Transition,
  where: { region?: string; location?: string; resourceGroup?: string } = {},
): { start: CloudEvent[]; end: CloudEvent[] } {
  const id = `${name}-${transition}-${++sent}`;
  if (provider === 'eks') {
    const event = cloudTrailEvent(
      EKS_CALL[transition],
      EKS_ACCOUNT,
      where.region ?? 'us-east-1',
      { name },
      `ct-${id}`,
    );
    return { start: [{ cloud: 'eks', via: 'cloudtrail', event }], end: [] };
  }
  if (provider === 'gke') {
    const entry = (last: boolean) =>
      gkeAuditEntry(
        GCP_PROJECT,
        `google.container.v1.ClusterManager.${GKE_METHOD[transition]}`,
        `projects/${GCP_PROJECT}/locations/${where.location ?? 'us-central1'}/clusters/${name}`,
        { id: `operation-${id}`, last },
      );
    return {
      start: [{ cloud: 'gke', via: 'pubsub', push: pubSubPush(entry(false), `ps-${id}-first`) }],
      end: [{ cloud: 'gke', via: 'pubsub', push: pubSubPush(entry(true), `ps-${id}-last`) }],
    };
  }
  const resourceId = `/subscriptions/${AZURE_SUBSCRIPTION}/resourceGroups/${where.resourceGroup ?? `rg-${name}`}/providers/Microsoft.ContainerService/managedClusters/${name}`;
  const deleting = transition === 'deleting';
  const operation = `Microsoft.ContainerService/managedClusters/${deleting ? 'delete' : 'write'}`;
  const grid = eventGridEvent(
    `Microsoft.Resources.${deleting ? 'ResourceDeleteSuccess' : 'ResourceWriteSuccess'}`,
    resourceId,
    `eg-${id}`,
  );
  grid.data.operationName = operation;
  return {
    start: [{ cloud: 'aks', via: 'eventgrid', events: [grid] }],
    end: [
      { cloud: 'aks', via: 'alert', alert: activityLogAlert(resourceId, operation, 'Succeeded', `al-${id}`) },
    ],
  };
}

/**
 * `holdTransition`, with what the cloud sends: the start events handed to `send` now, the end events as the
 * cloud settles the cluster (after it has).
 */
export function announcedTransition(
  emulators: Emulators,
  provider: 'eks' | 'gke' | 'aks',
  name: string,
  transition: Transition,
  send: (event: CloudEvent, phase: 'start' | 'end') => void,
  where: { region?: string; location?: string; resourceGroup?: string } = {},
): { settle: () => Promise<void> } {
  const held = holdTransition(emulators, provider, name, transition, undefined, where.region);
  const events = operationEvents(provider, name, transition, where);
  for (const event of events.start) send(event, 'start');
  let settled: Promise<void> | undefined;
  return {
    // The end events are sent as the cluster settles (GKE's and AKS's at once; EKS sends none).
    settle: () => {
      if (settled) return settled;
      settled = held.settle();
      for (const event of events.end) send(event, 'end');
      return settled;
    },
  };
}
