/**
 * The real local hub for integration tests. `test/run.ts` starts one for the whole run and names its
 * directory in CPSYNC_TEST_HUB_DIR; a test file run on its own starts (and stops) its own.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiException, KubeConfig, type CustomObjectsApi } from '@kubernetes/client-node';
import type { ClusterProfile } from '../../core/domain/model/clusterProfile.ts';
import {
  clientCertificate,
  kubeconfigYaml,
  readState,
  startHub,
  stopHubNow,
  type HubState,
} from '../env/hub.ts';

let shared: Promise<HubState> | undefined;

export async function localHub(): Promise<HubState> {
  const directory = process.env.CPSYNC_TEST_HUB_DIR;
  if (directory) {
    const state = readState(directory);
    if (!state) throw new Error(`CPSYNC_TEST_HUB_DIR=${directory} names no running hub`);
    return state;
  }
  if (!shared) {
    const own = mkdtempSync(join(tmpdir(), 'cpsync-hub-'));
    shared = startHub(own, (line) => console.error(line));
    process.once('exit', () => {
      stopHubNow(own);
      rmSync(own, { recursive: true, force: true });
    });
  }
  return shared;
}

export function adminKubeConfig(state: HubState): KubeConfig {
  const config = new KubeConfig();
  config.loadFromFile(state.kubeconfig);
  return config;
}

/** A KubeConfig that authenticates as `user` (in `group`, else no groups) with a fresh client certificate. */
export function userKubeConfig(state: HubState, user: string, group?: string): KubeConfig {
  const { cert, key } = clientCertificate(state, user, group);
  const config = new KubeConfig();
  config.loadFromString(kubeconfigYaml(state.server, state.caCert, user, cert, key));
  return config;
}

/** What the API server answered a request: 200 when it was done, else the refusal's status and message. */
export async function answer(call: Promise<unknown>): Promise<{ code: number; message: string }> {
  try {
    await call;
    return { code: 200, message: '' };
  } catch (error) {
    if (!(error instanceof ApiException)) throw error;
    const body: unknown = typeof error.body === 'string' ? JSON.parse(error.body) : error.body;
    return { code: error.code, message: String((body as { message?: unknown })?.message ?? '') };
  }
}

/** The ClusterProfiles of one namespace as the hub lists them, read freely (as plain documents). */
export async function listedProfiles(
  objects: CustomObjectsApi,
  namespace: string,
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- hub documents are read freely in tests
): Promise<Array<Record<string, any>>> {
  return (
    (await objects.listNamespacedCustomObject({
      group: 'multicluster.x-k8s.io',
      version: 'v1alpha1',
      namespace,
      plural: 'clusterprofiles',
      // eslint-disable-next-line @typescript-eslint/no-explicit-any -- as above
    })) as { items: Array<Record<string, any>> }
  ).items;
}

/** A namespace name no other test uses. */
export function uniqueNamespace(prefix: string): string {
  return `${prefix}-${Math.random().toString(36).slice(2, 8)}`;
}

/**
 * `profile` made the profile of another cluster (`account`, `providerId`) under the same name: the
 * victim of a name collision (the same slug and 40-bit id hash), as a test plants it in the hub.
 */
export function profileOfAnother(
  profile: ClusterProfile,
  account: string,
  providerId: string,
): ClusterProfile {
  return {
    ...profile,
    metadata: {
      ...profile.metadata,
      labels: { ...profile.metadata.labels, 'cpsync.io/account': account },
      annotations: { ...profile.metadata.annotations, 'cpsync.io/provider-id': providerId },
    },
  };
}
