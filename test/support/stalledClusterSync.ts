/**
 * A one-cluster sync (what a cloud's event or a follow-up look runs) in a process of its own, over the file
 * hub, leases, outbox and intents under `<directory>`, that stalls once its profile is written to the hub: it
 * tells its parent (an IPC message `written`) and waits there for ever, still holding its share of the
 * account's lease, for the parent to kill it. What it leaves behind is what a function stopped between its hub
 * write and its events leaves: a written profile, its write-ahead intent, and a share lease until it runs out.
 *
 * Its leases are files beside the hub, or, given a kubeconfig, the Lease objects of that hub's `namespace`.
 *
 *   fork(this file, [directory, namespace, account, region, cluster name, kubeconfig?])
 */
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { JsonLinesFileBus } from '../../adapters/bus/JsonLinesBus.ts';
import { FileHub } from '../../adapters/hub/FileHub.ts';
import { FileLeaseStore } from '../../adapters/hub/FileLeases.ts';
import { KubernetesLeaseStore } from '../../adapters/hub/KubernetesLeases.ts';
import { FileIntentLog } from '../../adapters/outbox/FileIntentLog.ts';
import { FileAbsenceStore } from '../../adapters/outbox/FileAbsenceStore.ts';
import { FileOutbox } from '../../adapters/outbox/FileOutbox.ts';
import type { ClusterProfile } from '../../core/domain/model/clusterProfile.ts';
import { syncCluster } from '../../core/sync/engine.ts';
import type { LeaseStore } from '../../core/sync/ports.ts';
import { eksCluster } from './fixtures.ts';
import { inventoryOptions, runSettings } from './settings.ts';

const [directory, namespace, account, region, name, kubeconfig] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
  string,
  string | undefined,
];

function leaseStore(): LeaseStore {
  if (!kubeconfig) return new FileLeaseStore(join(directory, 'hub'));
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(kubeconfig);
  return new KubernetesLeaseStore({ kubeConfig, namespace });
}

/** The file hub, stalling for ever once a write of a whole profile reached its file. */
class StallingHub extends FileHub {
  async #stall(stored: ClusterProfile): Promise<ClusterProfile> {
    process.send!({ written: stored.metadata.name });
    await new Promise(() => setInterval(() => {}, 60_000));
    return stored;
  }
  override async applyWhole(profile: ClusterProfile) {
    return this.#stall(await super.applyWhole(profile));
  }
}

const scope = { provider: 'eks' as const, account, region };
await syncCluster(
  {
    sources: {
      eks: {
        listScope: () => Promise.reject(new Error('a one-cluster sync lists nothing')),
        getCluster: async (ref) => eksCluster({ name: ref.name, account, region }),
        isProviderIdOf: () => false,
      },
    },
    hub: new StallingHub({ directory: join(directory, 'hub') }),
    leases: leaseStore(),
    bus: new JsonLinesFileBus(join(directory, 'events.jsonl')),
    outbox: new FileOutbox(join(directory, 'outbox')),
    intents: new FileIntentLog(join(directory, 'outbox')),
    absences: new FileAbsenceStore(join(directory, 'outbox')),
  },
  { ...runSettings(inventoryOptions({ namespace })), syncId: `event-${name}`, ref: { scope, name } },
);
