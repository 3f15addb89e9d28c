/**
 * The golden events: one of each kind cpsync publishes, as a subscriber receives it from EventBridge,
 * made by the real event builders from the real normalizer. The files under `releases/<version>/golden`
 * are frozen; `node test/contract/golden.ts` writes those of the current version (after a deliberate
 * contract change, reviewed in the diff).
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { normalize } from '../../core/domain/normalize.ts';
import {
  buildAccessEvent,
  buildAnnounceEvent,
  buildChangeEvent,
  buildOrphanEvent,
  buildScopeEvent,
} from '../../core/sync/events.ts';
import { SCHEMA_VERSION } from '../../events/detailTypes.ts';
import type { CpsyncEvent } from '../../events/types.ts';
import { aksCluster, eksCluster, gkeCluster } from '../support/fixtures.ts';
import { inventoryOptions } from '../support/settings.ts';

const RELEASES = join(dirname(fileURLToPath(import.meta.url)), 'releases');

const NOW = '2026-11-01T12:00:00Z';
/** The scheduled run whose scope the synced events are of (each scope with a sync id of its own, since 1.6). */
const RUN = 'b3c1d2e4-5f60-4a7b-8c9d-0e1f2a3b4c5d';

/** An event as EventBridge delivers it to a rule's target. */
function delivered(event: CpsyncEvent, index: number) {
  return {
    version: '0',
    id: `0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f${index}`,
    'detail-type': event.detailType,
    source: event.source,
    account: '123456789012',
    time: event.time,
    region: 'us-east-1',
    resources: event.resources,
    detail: event.detail,
  };
}

/** The golden events of the current contract, by file name. */
export function currentGolden(): Record<string, ReturnType<typeof delivered>> {
  const options = inventoryOptions({ features: { clusterSets: true } });
  const eks = { ...normalize(eksCluster(), options, NOW) };
  eks.metadata = { ...eks.metadata, uid: '6f1c7c2a-0d7e-4a4f-8a55-2a0d7a1f3b10', resourceVersion: '4711' };
  const gke = normalize(gkeCluster(), options, NOW);
  gke.metadata = { ...gke.metadata, uid: '9b2d8e41-5c6f-4e3a-b0d7-1e2f3a4b5c6d', resourceVersion: '4712' };
  const aks = normalize(aksCluster(), options, NOW);
  aks.metadata = { ...aks.metadata, uid: 'c3d4e5f6-a7b8-4c9d-8e0f-1a2b3c4d5e6f', resourceVersion: '4713' };
  const context = (provider: 'eks' | 'gke' | 'aks', account: string, region: string) => ({
    syncId: `${RUN}/${provider}/${account}/${region}`,
    runId: RUN,
    occurredAt: NOW,
    scope: { provider, account, region },
  });
  const events: Record<string, CpsyncEvent> = {
    'clusterprofile-created': buildChangeEvent(
      {
        kind: 'created',
        profile: eks,
        changes: [{ field: 'spec', after: eks.spec }],
      },
      context('eks', '111122223333', 'us-east-1'),
    ),
    'clusterprofile-updated': buildChangeEvent(
      {
        kind: 'updated',
        profile: gke,
        previousResourceVersion: '4700',
        changes: [
          { field: 'status.version.kubernetes', before: '1.30.5-gke.1014001', after: '1.31.1-gke.1146000' },
          { field: 'status.conditions[ControlPlaneHealthy]', before: 'False', after: 'True' },
        ],
      },
      context('gke', 'acme-prod', 'europe-west1'),
    ),
    'clusterprofile-deleted': buildChangeEvent(
      {
        kind: 'deleted',
        profile: aks,
        changes: [{ field: 'metadata', before: { name: aks.metadata.name } }],
      },
      context('aks', '00000000-0000-0000-0000-000000000001', 'westeurope'),
    ),
    'clusterprofile-announced': buildAnnounceEvent(eks, {
      syncId: '7d3e1f20-8b4c-4a6d-9e2f-3c5b7a9d1e04',
      occurredAt: NOW,
      scope: { provider: 'eks', account: '111122223333', region: 'us-east-1' },
    }),
    'inventory-scope-synced-complete': buildScopeEvent(
      {
        outcome: {
          scope: { provider: 'eks', account: '111122223333', region: 'us-east-1' },
          kind: 'complete',
        },
        counts: { listed: 3, created: 1, updated: 1, deleted: 0, unchanged: 1, failed: 0, invalid: 0 },
        durationMs: 812,
        features: { clusterSets: { desired: 'on', actual: 'on', profiles: 3 } },
      },
      context('eks', '111122223333', 'us-east-1'),
    ),
    'inventory-scope-synced-failed': buildScopeEvent(
      {
        outcome: {
          scope: { provider: 'gke', account: 'acme-prod', region: '*' },
          kind: 'failed',
          failure: {
            reason: 'AccessDenied',
            message: 'Permission container.clusters.list denied on acme-prod',
          },
        },
        counts: { listed: 0, created: 0, updated: 0, deleted: 0, unchanged: 0, failed: 0, invalid: 0 },
        durationMs: 140,
      },
      context('gke', 'acme-prod', '*'),
    ),
    // Of the run itself (the scope enumerator's), not of one of its scopes: its sync id is the run's.
    'inventory-scope-orphaned': buildOrphanEvent(
      ['clusters/aks-legacy-westeurope', 'clusters/aks-old-westeurope'],
      {
        syncId: RUN,
        occurredAt: NOW,
        scope: { provider: 'aks', account: '00000000-0000-0000-0000-000000000002', region: '*' },
      },
    ),
    'consumer-access-granted': buildAccessEvent(
      {
        action: 'grant',
        providerId: eks.metadata.annotations!['cpsync.io/provider-id']!,
        consumer: 'argocd',
        identity: 'arn:aws:iam::111122223333:role/argocd',
        level: 'edit',
        message:
          'access entry for arn:aws:iam::111122223333:role/argocd with AmazonEKSEditPolicy (cluster scope)',
        profile: eks,
      },
      context('eks', '111122223333', 'us-east-1'),
    ),
    'consumer-access-revoked': buildAccessEvent(
      {
        action: 'revoke',
        providerId: gke.metadata.annotations!['cpsync.io/provider-id']!,
        consumer: 'argocd',
        identity: 'argocd@platform-prod.iam.gserviceaccount.com',
        message: 'argocd@platform-prod.iam.gserviceaccount.com taken out of cpsync:consumer:argocd',
        profile: gke,
      },
      context('gke', 'acme-prod', 'europe-west1'),
    ),
  };
  return Object.fromEntries(Object.entries(events).map(([name, event], i) => [name, delivered(event, i)]));
}

/** The released versions kept under `releases/`, oldest first. */
export function releases(): string[] {
  return readdirSync(RELEASES).sort((a, b) => Number(a.split('.')[1]) - Number(b.split('.')[1]));
}

/** A release's frozen files in `kind` (`schemas` or `golden`), by file name without `.json`. */
export function releaseFiles(version: string, kind: 'schemas' | 'golden'): Record<string, unknown> {
  const directory = join(RELEASES, version, kind);
  if (!existsSync(directory)) return {};
  const names = readdirSync(directory).filter((n) => n.endsWith('.json'));
  return Object.fromEntries(
    names.map((n) => [n.slice(0, -5), JSON.parse(readFileSync(join(directory, n), 'utf8')) as unknown]),
  );
}

if (import.meta.main) {
  const directory = join(RELEASES, SCHEMA_VERSION, 'golden');
  mkdirSync(directory, { recursive: true });
  for (const [name, event] of Object.entries(currentGolden()))
    writeFileSync(join(directory, `${name}.json`), `${JSON.stringify(event, null, 2)}\n`);
  console.log(`wrote the golden events of ${SCHEMA_VERSION} to ${directory}`);
}
