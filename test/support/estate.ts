import {
  AZURE_SUBSCRIPTION,
  EKS_ACCOUNT,
  GCP_PROJECT,
  startEmulators,
  type Emulators,
} from '../env/emulators.ts';
import { sqsRecord } from './lambda.ts';
import { localHub, uniqueNamespace } from './hub.ts';
import { temporaryDirectory } from './tmp.ts';

/**
 * What the end-to-end, fault and function tests start from: the shared local hub, a namespace of their
 * own on it (`<name>-…`), and the local clouds with their files in a new temporary directory.
 */
export async function estateOnHub(name: string, log?: (line: string) => void) {
  const state = await localHub();
  const namespace = uniqueNamespace(name);
  const emulators = await startEmulators({
    directory: temporaryDirectory(`cpsync-${name}-`),
    namespace,
    ...(log ? { log } : {}),
  });
  return { state, namespace, emulators };
}

/**
 * The GKE and AKS clusters of the local clouds as they are now; the function returned puts them back
 * (tests that change those clouds start each case from the same ground). EKS clusters live in moto.
 */
export function cloudSnapshot(emulators: Emulators): () => void {
  const gke = JSON.stringify([...emulators.gke.clusters]);
  const arm = JSON.stringify([...emulators.arm.clusters]);
  return () => {
    emulators.gke.clusters.clear();
    for (const [key, value] of JSON.parse(gke) as Array<[string, never]>)
      emulators.gke.clusters.set(key, value);
    emulators.arm.clusters.clear();
    for (const [key, value] of JSON.parse(arm) as Array<[string, never]>)
      emulators.arm.clusters.set(key, value);
  };
}

/** One SQS record per scope of the local estate, as the scope enumerator sends them (ids `<prefix>-<i>`). */
export function estateScopeRecords(syncId: string, prefix: string) {
  const scopes = [
    { provider: 'eks', account: EKS_ACCOUNT, region: 'us-east-1' },
    { provider: 'eks', account: EKS_ACCOUNT, region: 'eu-west-1' },
    { provider: 'gke', account: GCP_PROJECT, region: '*' },
    { provider: 'aks', account: AZURE_SUBSCRIPTION, region: '*' },
  ];
  return scopes.map((scope, i) => sqsRecord(`${prefix}-${i}`, JSON.stringify({ syncId, scope })));
}
