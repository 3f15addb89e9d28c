/**
 * A grant's record is filed under the cluster's account and region as its cloud gives them, never as its profile's
 * labels spell them (a GKE project `example.com:data` is `example.com-data` there): a record filed under a label
 * spelling is never read again, so every run would grant anew, and a consumer taken out of the configuration would
 * be revoked only while the hub still showed the grant. Every account and region the clouds may give, through a
 * scope's sync (a listing, a whole project or one region) and a one-cluster sync (a cloud event), into the file
 * ledger as the CLI keeps it.
 */
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { JsonLinesFileBus } from '../../../../adapters/bus/JsonLinesBus.ts';
import { FileHub } from '../../../../adapters/hub/FileHub.ts';
import { FileLeaseStore } from '../../../../adapters/hub/FileLeases.ts';
import { FileGrantLedger } from '../../../../adapters/outbox/FileGrantLedger.ts';
import { FileIntentLog } from '../../../../adapters/outbox/FileIntentLog.ts';
import { FileAbsenceStore } from '../../../../adapters/outbox/FileAbsenceStore.ts';
import { FileOutbox } from '../../../../adapters/outbox/FileOutbox.ts';
import type { Consumer, HeldGrant } from '../../../../core/domain/grants.ts';
import { ALL_REGIONS, type Scope } from '../../../../core/domain/model/scope.ts';
import type { ObservedCluster, Provider } from '../../../../core/domain/model/observedCluster.ts';
import { syncCluster } from '../../../../core/sync/engine.ts';
import type { AccessGrants, ClusterSource } from '../../../../core/sync/ports.ts';
import type { ClusterSyncReport } from '../../../../core/sync/types.ts';
import { syncScope } from '../../../support/absences.ts';
import { aksCluster, eksCluster, gkeCluster, NOW } from '../../../support/fixtures.ts';
import { inventoryOptions, runSettings } from '../../../support/settings.ts';
import { temporaryDirectory } from '../../../support/tmp.ts';

const IDENTITY: Record<Provider, string> = {
  eks: 'arn:aws:iam::111122223333:role/argocd',
  gke: 'argocd@consumers.iam.gserviceaccount.com',
  aks: '7f3e2c1a-0000-4000-8000-00000000de01',
};
const consumer: Consumer = {
  name: 'argocd',
  namespaces: ['cluster-inventory'],
  level: 'view',
  identities: { eks: IDENTITY.eks, gke: IDENTITY.gke, aks: IDENTITY.aks },
};
const on = inventoryOptions({ features: { accessGrants: true }, consumers: [consumer] });
/** The consumer taken out of the configuration: what cpsync granted it must be taken back. */
const without = inventoryOptions({ features: { accessGrants: true }, consumers: [] });

/** Every grant holds; what is taken back is counted. */
function counting(provider: Provider) {
  const port = {
    revoked: [] as HeldGrant[],
    async ensure() {
      return { held: IDENTITY[provider], status: 'True' as const, reason: 'Granted', message: 'granted' };
    },
    async revoke(_plan: unknown, grant: HeldGrant) {
      port.revoked.push(grant);
      return { revoked: true, message: 'gone' };
    },
    async settleProjectRoles() {
      return [];
    },
  };
  return port satisfies AccessGrants;
}

/** A cluster of each cloud, in an account and region of the shapes that cloud gives. */
const clusterOf = fc.oneof(
  fc
    .record({
      // A project id, with the domain of a Google Workspace organisation before it or not.
      domain: fc.option(fc.stringMatching(/^[a-z][a-z0-9-]{0,8}\.(com|io|co\.uk)$/), { nil: undefined }),
      project: fc.stringMatching(/^[a-z][a-z0-9-]{4,20}[a-z0-9]$/),
      region: fc.constantFrom('europe-west1', 'us-central1', 'asia-northeast1'),
      zone: fc.option(fc.constantFrom('a', 'b', 'c'), { nil: undefined }),
    })
    .map(({ domain, project, region, zone }) =>
      gkeCluster({
        account: domain ? `${domain}:${project}` : project,
        region,
        ...(zone ? { zone: `${region}-${zone}` } : {}),
      }),
    ),
  fc
    .record({
      account: fc.stringMatching(/^[0-9]{12}$/),
      region: fc.constantFrom('us-east-1', 'eu-central-2', 'us-gov-west-1', 'cn-north-1'),
    })
    .map(({ account, region }) => eksCluster({ account, region })),
  fc
    .record({ account: fc.uuid(), region: fc.constantFrom('westeurope', 'eastus2', 'brazilsouth') })
    .map(({ account, region }) => aksCluster({ account, region })),
);

/** The scopes a listing of the cluster comes from: its whole account or project, and its region. */
const scopesOf = (cluster: ObservedCluster): Scope[] => [
  { provider: cluster.provider, account: cluster.account, region: cluster.region },
  ...(cluster.provider === 'gke'
    ? [{ provider: 'gke' as const, account: cluster.account, region: ALL_REGIONS }]
    : []),
];

describe("a grant's record is filed where the cluster's scope reads it", () => {
  it('through a scope’s sync: granted once, read back, and taken back by the record alone (any account, any region)', async () => {
    await fc.assert(
      fc.asyncProperty(clusterOf, fc.nat(), async (cluster, pick) => {
        const scopes = scopesOf(cluster);
        const scope = scopes[pick % scopes.length]!;
        const directory = temporaryDirectory('cpsync-place-');
        try {
          const ledger = new FileGrantLedger(join(directory, 'state'));
          const port = counting(cluster.provider);
          const sync = (hub: FileHub, options = on) =>
            syncScope({
              hub,
              listing: { outcome: { scope, kind: 'complete' }, clusters: [cluster] },
              options,
              now: NOW,
              grants: port,
              ledger,
            });
          const hub = new FileHub({ directory: join(directory, 'hub') });
          assert.equal((await sync(hub)).grants?.granted, 1);
          const [record] = await ledger.read(scope);
          assert.deepEqual(
            { account: record?.account, region: record?.region },
            { account: cluster.account, region: cluster.region },
          );
          // Looked at again, and found held as the record says: nothing granted anew.
          assert.equal((await sync(hub)).grants?.granted, 0, 'the record is read back');
          // A hub that shows nothing (another one, or its annotations gone): the record alone takes it back.
          await sync(new FileHub({ directory: join(directory, 'other-hub') }), without);
          assert.deepEqual(
            port.revoked.map((g) => g.identity),
            [IDENTITY[cluster.provider]],
          );
          assert.deepEqual(await ledger.read(scope), []);
        } finally {
          rmSync(directory, { recursive: true, force: true });
        }
      }),
      { numRuns: 40 },
    );
  });

  it('through a one-cluster sync of a project with a domain: granted once, read back, taken back by the record alone', async () => {
    const cluster = gkeCluster({ account: 'example.com:acme-data', name: 'edge' });
    const project: Scope = { provider: 'gke', account: cluster.account, region: ALL_REGIONS };
    const directory = temporaryDirectory('cpsync-place-one-');
    try {
      const port = counting('gke');
      const ledger = new FileGrantLedger(join(directory, 'state'));
      const source: ClusterSource = {
        listScope: async (scope) => ({ outcome: { scope, kind: 'complete' }, clusters: [cluster] }),
        getCluster: async () => cluster,
        isProviderIdOf: (id) => id === cluster.providerId,
      };
      // The grants a one-cluster sync made anew, as it announces them.
      const granted = (report: ClusterSyncReport) =>
        report.events.filter((e) => e.detailType === 'Consumer Access Granted').length;
      const sync = (syncId: string, hubDirectory: string, options = on) => {
        const hub = new FileHub({ directory: join(directory, hubDirectory) });
        return syncCluster(
          {
            sources: { gke: source },
            hub,
            leases: new FileLeaseStore(join(directory, hubDirectory)),
            bus: new JsonLinesFileBus(join(directory, 'events.jsonl')),
            outbox: new FileOutbox(join(directory, 'state')),
            intents: new FileIntentLog(join(directory, 'state')),
            absences: new FileAbsenceStore(join(directory, 'state')),
            grants: port,
            ledger,
          },
          {
            ...runSettings(options),
            syncId,
            ref: { scope: project, name: 'edge', location: cluster.region },
          },
        );
      };
      const first = await sync('first', 'hub');
      assert.equal(first.result, 'created');
      assert.equal(granted(first), 1);
      assert.equal(granted(await sync('again', 'hub')), 0, 'the record is read back: nothing granted anew');
      await sync('taken-out', 'other-hub', without);
      assert.deepEqual(
        port.revoked.map((g) => g.identity),
        [IDENTITY.gke],
      );
      assert.deepEqual(await ledger.read(project), []);
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });
});
