/**
 * An oracle written apart from cpsync's own code: what the clouds really hold (read from the local
 * servers' state and from moto through the plain SDK), what the file hub really holds (its YAML files,
 * read with a YAML parser), and what the bus really delivered (the JSON lines a run printed).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DescribeClusterCommand, EKSClient, paginateListClusters } from '@aws-sdk/client-eks';
import { parse } from 'yaml';
import type { Emulators } from '../env/emulators.ts';
import { armCase } from '../env/fakes/armServer.ts';
import { accountCredentials } from './aws.ts';

/** A cluster as its cloud reports it: the id a profile must carry, and the facts the oracle compares. */
export interface LiveCluster {
  providerId: string;
  name: string;
  version: string;
  /** Region, or zone for a zonal GKE cluster. */
  location: string;
  /** The API server's host, when the cloud reports one. */
  endpointHost?: string;
}

/** The host of an endpoint as a cloud reports it (a URL, a host name or an address), if it has one. */
function hostOf(endpoint: unknown): string | undefined {
  if (typeof endpoint !== 'string' || endpoint === '') return undefined;
  try {
    return new URL(endpoint.includes('://') ? endpoint : `https://${endpoint}`).hostname.toLowerCase();
  } catch {
    return undefined;
  }
}

async function eksClusters(endpoint: string, account: string, regions: readonly string[]) {
  const credentials = await accountCredentials(endpoint, account);
  const found: LiveCluster[] = [];
  for (const region of regions) {
    const client = new EKSClient({ endpoint, region, credentials });
    for await (const page of paginateListClusters({ client }, {}))
      for (const name of page.clusters ?? []) {
        const { cluster } = await client.send(new DescribeClusterCommand({ name }));
        const endpointHost = hostOf(cluster!.endpoint);
        found.push({
          providerId: cluster!.arn!,
          name,
          version: cluster!.version!,
          location: region,
          ...(endpointHost ? { endpointHost } : {}),
        });
      }
    client.destroy();
  }
  return found;
}

/**
 * The key one cluster's provider id is known by, as its cloud compares ids: an Azure id by ARM's rule (ASCII
 * case aside, and only what .NET's ordinal ignore-case folds), EKS ARNs and GKE self links in lower case.
 */
export function cloudKey(providerId: string): string {
  return /^\/subscriptions\//i.test(providerId) ? armCase(providerId) : providerId.toLowerCase();
}

/** Every cluster the local clouds hold, in the accounts and regions given, keyed by provider id. */
export async function liveClusters(
  emulators: Emulators,
  eks: { account: string; regions: readonly string[] },
): Promise<Map<string, LiveCluster>> {
  const all: LiveCluster[] = await eksClusters(emulators.moto.endpoint, eks.account, eks.regions);
  for (const clusters of emulators.gke.clusters.values())
    for (const c of clusters) {
      const endpointHost = hostOf(c.endpoint);
      all.push({
        providerId: String(c.selfLink),
        name: c.name,
        version: String(c.currentMasterVersion),
        location: c.location,
        ...(endpointHost ? { endpointHost } : {}),
      });
    }
  for (const clusters of emulators.arm.clusters.values())
    for (const c of clusters) {
      const endpointHost = hostOf(c.properties.fqdn);
      all.push({
        providerId: c.id,
        name: c.name,
        version: String(c.properties.currentKubernetesVersion ?? c.properties.kubernetesVersion),
        location: c.location,
        ...(endpointHost ? { endpointHost } : {}),
      });
    }
  return new Map(all.map((c) => [cloudKey(c.providerId), c]));
}

/** A profile as its file says, with the fields the oracle compares. */
export interface StoredProfile {
  namespace: string;
  name: string;
  uid: string;
  resourceVersion: string;
  providerId: string;
  version?: string;
  joined?: string;
  displayName?: string;
}

/** Every profile file of a file hub directory, read with a plain YAML parser; unreadable files are skipped. */
export function readInventory(directory: string): Map<string, StoredProfile> {
  const profiles = new Map<string, StoredProfile>();
  let namespaces: string[];
  try {
    namespaces = readdirSync(directory).filter((n) => !n.startsWith('.'));
  } catch {
    return profiles;
  }
  for (const namespace of namespaces) {
    let files: string[];
    try {
      files = readdirSync(join(directory, namespace)).filter(
        (f) => f.endsWith('.yaml') && !f.startsWith('_'), // _namespace.yaml, _configmap.*.yaml
      );
    } catch {
      continue;
    }
    for (const file of files) {
      let document: {
        metadata?: {
          name?: string;
          uid?: string;
          resourceVersion?: string;
          annotations?: Record<string, string>;
        };
        spec?: { displayName?: string };
        status?: {
          version?: { kubernetes?: string };
          conditions?: Array<{ type?: string; status?: string }>;
        };
      };
      try {
        document = parse(readFileSync(join(directory, namespace, file), 'utf8'));
      } catch {
        continue;
      }
      const providerId = document?.metadata?.annotations?.['cpsync.io/provider-id'];
      if (!providerId || !document.metadata?.uid) continue;
      const joined = Array.isArray(document.status?.conditions)
        ? document.status.conditions.find((c) => c?.type === 'Joined')?.status
        : undefined;
      profiles.set(`${namespace}/${file.slice(0, -5)}`, {
        namespace,
        name: file.slice(0, -5),
        uid: document.metadata.uid,
        resourceVersion: String(document.metadata.resourceVersion),
        providerId,
        ...(document.status?.version?.kubernetes ? { version: document.status.version.kubernetes } : {}),
        ...(joined ? { joined } : {}),
        ...(document.spec?.displayName ? { displayName: document.spec.displayName } : {}),
      });
    }
  }
  return profiles;
}

/** An event as the stdout bus delivers it. */
export interface DeliveredEvent {
  'detail-type': string;
  detail: {
    eventId: string;
    namespace?: string;
    name?: string;
    changedFields?: string[];
    cluster?: { providerId?: string };
    uid?: string;
    resourceVersion?: string;
    profile?: { metadata?: { uid?: string; resourceVersion?: string } };
    outcome?: string;
    scope?: { provider: string; account: string; region: string };
    error?: { reason: string; message: string };
  };
}

/** A profile as the hub returns it: the fields the convergence oracle reads. */
interface HubProfile {
  metadata: { namespace?: string; name?: string; annotations?: Record<string, string> };
  status?: {
    version?: { kubernetes?: string };
    accessProviders?: Array<{ cluster?: { server?: string } }>;
  };
}

/**
 * What keeps the hub from matching the clouds, judged from the clouds' own state: every live cluster
 * has exactly one profile carrying its provider id, its Kubernetes version and (when the cloud reports
 * one) its API server's host; no profile stands for a cluster that is gone. Empty when converged.
 */
export function convergenceProblems(
  live: ReadonlyMap<string, LiveCluster>,
  profiles: readonly HubProfile[],
): string[] {
  const problems: string[] = [];
  const byId = new Map<string, HubProfile[]>();
  for (const profile of profiles) {
    const id = cloudKey(profile.metadata.annotations?.['cpsync.io/provider-id'] ?? '');
    byId.set(id, [...(byId.get(id) ?? []), profile]);
  }
  for (const [id, cluster] of live) {
    const found = byId.get(id) ?? [];
    if (found.length !== 1) {
      problems.push(`${cluster.name} (${cluster.providerId}): ${found.length} profiles`);
      continue;
    }
    const [profile] = found;
    const version = profile!.status?.version?.kubernetes;
    if (version !== cluster.version)
      problems.push(`${cluster.name}: version ${version}, the cloud says ${cluster.version}`);
    if (cluster.endpointHost) {
      const servers = (profile!.status?.accessProviders ?? []).map((a) => hostOf(a.cluster?.server));
      if (!servers.includes(cluster.endpointHost))
        problems.push(
          `${cluster.name}: servers ${servers.join(', ') || 'none'}, the cloud says ${cluster.endpointHost}`,
        );
    }
  }
  for (const [id, found] of byId)
    if (!live.has(id))
      for (const profile of found)
        problems.push(
          `${profile.metadata.namespace}/${profile.metadata.name}: a profile of ${id || 'no provider id'}, which no cloud holds`,
        );
  return problems;
}
