/**
 * Profile requests and writes as the hub itself counts them, never as cpsync counts them:
 *   - a Kubernetes hub: the kube-apiserver's own `apiserver_request_total` counters for ClusterProfiles
 *     (its /metrics), by verb. They count every request the server took, from anyone, so the suite runs
 *     one test file at a time (test/run.ts) and a test reads them before and after what it measures.
 *   - the file hub: the file system — a profile file written is a new inode (files are replaced whole).
 */
import { readdirSync, statSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import type { HubState } from '../env/hub.ts';
import { adminKubeConfig } from './hub.ts';

export interface ProfileRequests {
  reads: number;
  writes: number;
  byVerb: Record<string, number>;
}

const READ_VERBS = new Set(['GET', 'LIST', 'WATCH']);

/** The kube-apiserver's /metrics, as text. */
async function apiserverMetrics(state: HubState): Promise<string> {
  const kubeConfig = adminKubeConfig(state);
  const options: Parameters<typeof request>[1] & { headers: Record<string, string> } = {
    method: 'GET',
    headers: {},
  };
  await kubeConfig.applyToHTTPSOptions(options);
  return new Promise<string>((resolve, reject) => {
    const call = request(new URL('/metrics', state.server), options, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body += chunk));
      response.on('end', () =>
        response.statusCode === 200
          ? resolve(body)
          : reject(new Error(`/metrics answered ${response.statusCode}: ${body.slice(0, 200)}`)),
      );
    });
    call.on('error', reject);
    call.end();
  });
}

/** The kube-apiserver's samples for ClusterProfiles (status subresource included): metric, verb and value each. */
async function profileSamples(
  state: HubState,
): Promise<Array<{ metric: string; verb: string; value: number }>> {
  const samples: Array<{ metric: string; verb: string; value: number }> = [];
  for (const line of (await apiserverMetrics(state)).split('\n')) {
    if (!line.includes('resource="clusterprofiles"') || !line.includes('group="multicluster.x-k8s.io"'))
      continue;
    samples.push({
      metric: line.slice(0, line.indexOf('{')),
      verb: /verb="([A-Z]+)"/.exec(line)?.[1] ?? '',
      value: Number(line.slice(line.lastIndexOf(' ') + 1)),
    });
  }
  return samples;
}

/** The kube-apiserver's request counters for ClusterProfiles (status subresource included), so far. */
export async function apiserverProfileRequests(state: HubState): Promise<ProfileRequests> {
  const counts: ProfileRequests = { reads: 0, writes: 0, byVerb: {} };
  for (const { metric, verb, value } of await profileSamples(state)) {
    if (metric !== 'apiserver_request_total') continue;
    counts.byVerb[verb] = (counts.byVerb[verb] ?? 0) + value;
    if (READ_VERBS.has(verb)) counts.reads += value;
    else counts.writes += value;
  }
  return counts;
}

/** What was counted between two readings. */
export function requestsBetween(before: ProfileRequests, after: ProfileRequests): ProfileRequests {
  const byVerb: Record<string, number> = {};
  for (const verb of new Set([...Object.keys(before.byVerb), ...Object.keys(after.byVerb)])) {
    const delta = (after.byVerb[verb] ?? 0) - (before.byVerb[verb] ?? 0);
    if (delta !== 0) byVerb[verb] = delta;
  }
  return { reads: after.reads - before.reads, writes: after.writes - before.writes, byVerb };
}

/** Runs `work` and returns what the kube-apiserver counted for ClusterProfiles meanwhile. */
export async function countedByApiserver(
  state: HubState,
  work: () => Promise<unknown>,
): Promise<ProfileRequests> {
  const before = await apiserverProfileRequests(state);
  await work();
  return requestsBetween(before, await apiserverProfileRequests(state));
}

/** LIST requests for ClusterProfiles and the bytes of their answers, as the kube-apiserver counts them. */
export interface ProfileLists {
  lists: number;
  bytes: number;
}

async function apiserverProfileLists(state: HubState): Promise<ProfileLists> {
  const counted: ProfileLists = { lists: 0, bytes: 0 };
  for (const { metric, verb, value } of await profileSamples(state)) {
    if (verb !== 'LIST') continue;
    if (metric === 'apiserver_response_sizes_sum') counted.bytes += value;
    else if (metric === 'apiserver_response_sizes_count') counted.lists += value;
  }
  return counted;
}

/** Runs `work` and returns the ClusterProfile lists the kube-apiserver answered meanwhile, and their bytes. */
export async function listedByApiserver(
  state: HubState,
  work: () => Promise<unknown>,
): Promise<ProfileLists> {
  const before = await apiserverProfileLists(state);
  await work();
  const after = await apiserverProfileLists(state);
  return { lists: after.lists - before.lists, bytes: after.bytes - before.bytes };
}

/** Every profile file of a file hub (`<directory>/<namespace>/<name>.yaml`) and its inode. */
export function fileHubInodes(directory: string): Map<string, number> {
  const inodes = new Map<string, number>();
  let namespaces: string[];
  try {
    namespaces = readdirSync(directory);
  } catch {
    return inodes;
  }
  for (const namespace of namespaces) {
    const path = join(directory, namespace);
    if (namespace.startsWith('.') || !statSync(path).isDirectory()) continue;
    for (const file of readdirSync(path))
      if (file.endsWith('.yaml') && !file.startsWith('.') && !file.startsWith('_'))
        inodes.set(`${namespace}/${file}`, statSync(join(path, file)).ino);
  }
  return inodes;
}

/** Profile files written (created, replaced or removed) between two listings of a file hub. */
export function fileHubWrites(before: Map<string, number>, after: Map<string, number>) {
  let created = 0;
  let replaced = 0;
  let removed = 0;
  for (const [file, inode] of after) {
    const was = before.get(file);
    if (was === undefined) created += 1;
    else if (was !== inode) replaced += 1;
  }
  for (const file of before.keys()) if (!after.has(file)) removed += 1;
  return { created, replaced, removed, total: created + replaced + removed };
}
