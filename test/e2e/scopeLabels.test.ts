/**
 * Two GKE projects whose scope labels are one: domain-scoped ids that differ past the 63rd character,
 * found by the configuration's project search, so `cpsync.io/account` (a label value, cut to 63) is the same on both projects' profiles, and each project's
 * scope selects the other's profiles too. While one project cannot be listed, the other's complete listings must
 * neither mark its profiles missing nor delete them — through every entry point that lists a scope: `cpsync
 * sync`, `cpsync sync --scope`, and the scope worker's queue message; nor one cluster's sync (the cloud events' and
 * follow-up's path) naming their cluster in the listed project. The real CLI and function against the local
 * GKE server and the real hub; the oracle reads the hub and the events delivered.
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parse, stringify } from 'yaml';
import { KubernetesHub } from '../../adapters/hub/KubernetesHub.ts';
import { parseConfig } from '../../adapters/compose/config.ts';
import { compose } from '../../adapters/compose/compose.ts';
import { ALL_PROVIDERS } from '../../adapters/compose/providers/index.ts';
import { labelValue } from '../../core/domain/labels.ts';
import { syncCluster } from '../../core/sync/engine.ts';
import type { ClusterProfile } from '../../core/domain/model/clusterProfile.ts';
import { makeScopeWorker } from '../../functions/scopeWorker.ts';
import { gkeCluster, startEmulators, type Emulators } from '../env/emulators.ts';
import type { GoogleError } from '../env/fakes/gkeServer.ts';
import { hasStackTrace, jsonLines, runCli, type CliRun } from '../support/cli.ts';
import { adminKubeConfig, localHub, uniqueNamespace } from '../support/hub.ts';
import { lambdaContext, sqsRecord } from '../support/lambda.ts';
import { temporaryDirectory } from '../support/tmp.ts';

const DOMAIN = 'engineering.platform.example-corporation.com';
const MINE = `${DOMAIN}:payments-production-west-1`;
const THEIRS = `${DOMAIN}:payments-production-west-2`;
const MANAGER = { 'x-k8s.io/cluster-manager': 'cpsync' };
const DENIED: GoogleError = {
  status: 403,
  code: 'PERMISSION_DENIED',
  message: 'The caller does not have permission (container.clusters.list)',
};

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- configuration documents are edited freely here
type Doc = Record<string, any>;

const selfLink = (project: string, kind: 'locations' | 'zones', location: string, name: string) =>
  `https://container.googleapis.com/v1/projects/${project}/${kind}/${location}/clusters/${name}`;

describe('two projects whose scope labels are one', () => {
  let emulators: Emulators;
  let hub: KubernetesHub;
  let namespace: string;
  let config: string;
  let document: Doc;

  before(async () => {
    const state = await localHub();
    namespace = uniqueNamespace('labels');
    emulators = await startEmulators({ directory: temporaryDirectory('cpsync-labels-'), namespace });
    hub = new KubernetesHub({ kubeConfig: adminKubeConfig(state) });
    const base = parse(readFileSync(emulators.configPath, 'utf8')) as Doc;
    document = {
      ...base,
      // Domain-scoped ids come from Resource Manager's project search (the configuration's own list takes plain ids).
      providers: { gke: { ...base.providers.gke, projects: { search: { query: '' } } } },
      hub: { kubeconfig: state.kubeconfig },
      outbox: { directory: join(emulators.directory, 'outbox') },
      // The least forgiving grace: one complete listing without a cluster deletes its profile.
      inventory: { ...base.inventory, deletionGraceListings: 1 },
    };
    delete document.bus; // events as JSON lines on stdout
    config = join(emulators.directory, 'cpsync.yaml');
    writeFileSync(config, stringify(document));
    emulators.gke.projects.splice(
      0,
      Infinity,
      ...[MINE, THEIRS].map((projectId) => ({ projectId, state: 'ACTIVE', parent: 'organizations/1' })),
    );
    emulators.gke.clusters.clear();
    emulators.gke.clusters.set(MINE, [
      gkeCluster('alpha', 'europe-west1', { selfLink: selfLink(MINE, 'locations', 'europe-west1', 'alpha') }),
    ]);
    emulators.gke.clusters.set(THEIRS, [
      gkeCluster('beta', 'europe-west1-b', { selfLink: selfLink(THEIRS, 'zones', 'europe-west1-b', 'beta') }),
    ]);
  });
  after(async () => emulators?.stop());

  const cli = async (...args: string[]): Promise<CliRun> => {
    const run = await runCli([...args, '--config', config], { cwd: emulators.directory, env: emulators.env });
    assert.ok(!hasStackTrace(run.stderr), run.stderr);
    return run;
  };
  const profiles = () => hub.list(namespace, MANAGER);
  const of = (all: ClusterProfile[], project: string) =>
    all.filter((p) => p.metadata.annotations?.['cpsync.io/provider-id']?.includes(`/projects/${project}/`));
  const deleted = (run: CliRun) =>
    jsonLines<{ 'detail-type': string; detail: Doc }>(run.stdout)
      .filter((e) => e['detail-type'] === 'ClusterProfile Deleted')
      .map((e) => e.detail.cluster.providerId as string);
  /** Their profile as the hub holds it: untouched since `before` (the same resourceVersion), never marked missing. */
  const assertTheirsUntouched = async (before: ClusterProfile, how: string) => {
    const [now, ...more] = of(await profiles(), THEIRS);
    assert.equal(more.length, 0);
    assert.ok(now, `${how}: their profile is still on the hub`);
    assert.equal(now.metadata.resourceVersion, before.metadata.resourceVersion, `${how}: not written to`);
    assert.ok(
      !now.status?.conditions?.some((c) => c.reason === 'NotFoundInProvider'),
      `${how}: not marked missing`,
    );
  };

  it('one project failing, the other listed completely through each entry point: nothing of the failing one is marked or deleted; the listed one still loses what its cloud lost', async () => {
    const first = await cli('sync');
    assert.equal(first.code, 0, first.stderr);
    const all = await profiles();
    const [mine] = of(all, MINE);
    const [theirs] = of(all, THEIRS);
    assert.ok(mine && theirs, 'both projects have a profile');
    // The precondition: each scope's labels select the other's profile.
    assert.equal(labelValue(MINE), labelValue(THEIRS));
    assert.equal(mine.metadata.labels?.['cpsync.io/account'], theirs.metadata.labels?.['cpsync.io/account']);

    emulators.gke.failures.set(
      THEIRS,
      Array.from({ length: 200 }, () => DENIED),
    );
    for (const run of [await cli('sync'), await cli('sync'), await cli('sync', '--scope', `gke/${MINE}`)]) {
      assert.notEqual(run.code, 2, run.stderr);
      assert.deepEqual(deleted(run), [], run.stderr);
      await assertTheirsUntouched(theirs, 'a CLI sync');
    }

    // The scope worker, as the scope enumerator's message reaches it.
    const composition = await compose(parseConfig(document), ALL_PROVIDERS, { onDemand: true });
    try {
      const worker = makeScopeWorker(async () => composition);
      for (let i = 0; i < 2; i++) {
        const result = await worker(
          {
            Records: [
              sqsRecord(
                `mine-${i}`,
                JSON.stringify({ syncId: `w-${i}`, scope: { provider: 'gke', account: MINE, region: '*' } }),
              ),
            ],
          },
          lambdaContext(),
        );
        assert.deepEqual(result, { batchItemFailures: [] });
        await assertTheirsUntouched(theirs, 'a queue message');
      }
      // A cloud event (CloudTrail, an audit entry, Event Grid, a follow-up look: one cluster's sync) naming their
      // cluster's name and location in this project: this project's cloud answers not found, and nothing of theirs goes.
      const ref = {
        scope: { provider: 'gke' as const, account: MINE, region: '*' },
        name: 'beta',
        location: 'europe-west1-b',
      };
      const event = await syncCluster(composition.ports, {
        syncId: 'evt-beta',
        ref,
        ...composition.settings,
      });
      assert.equal(event.result, 'absent');
      await assertTheirsUntouched(theirs, 'a cloud event');
    } finally {
      await composition.close();
    }

    // Control: a cluster of the listed project that is gone loses its profile at once (grace 1), announced.
    emulators.gke.clusters.set(MINE, []);
    const gone = await cli('sync', '--scope', `gke/${MINE}`);
    assert.equal(gone.code, 0, gone.stderr);
    assert.deepEqual(deleted(gone), [selfLink(MINE, 'locations', 'europe-west1', 'alpha')]);
    assert.deepEqual(of(await profiles(), MINE), []);
    await assertTheirsUntouched(theirs, 'after its neighbour lost a cluster');
  });
});
