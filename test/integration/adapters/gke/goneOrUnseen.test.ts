/**
 * A GKE cluster is taken for deleted only when GKE says that cluster is not there: a not-found whose message names
 * it. Any other answer to the read of the cluster — a not-found of a route a proxy does not know, of a project,
 * of another cluster named alike; a refusal; a bad request — is a read that failed, and deletes nothing. Walked
 * where a deletion is confirmed by that read: a cloud's event or a follow-up look (the one-cluster sync). The real
 * GKE client against the local GKE server; the oracle is the hub's files and the bus's lines.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { GkeSource } from '../../../../adapters/gke/GkeSource.ts';
import type { Scope } from '../../../../core/domain/model/scope.ts';
import { syncCluster } from '../../../../core/sync/engine.ts';
import { GCP_PROJECT, gkeCluster } from '../../../env/emulators.ts';
import { startGkeServer, type GkeServer, type GoogleError } from '../../../env/fakes/gkeServer.ts';
import { filePorts } from '../../../support/filePorts.ts';
import { inventoryOptions, runSettings } from '../../../support/settings.ts';

const SEED = Number(process.env.CPSYNC_PROPERTY_SEED ?? 20261129);
const LOCATION = 'europe-west1';
const scope: Scope = { provider: 'gke', account: GCP_PROJECT, region: '*' };

/** What GKE answers the read of the cluster `name`: the generated answer's kind, filled in for it. */
type Answer = {
  kind: 'gone' | 'no cluster named' | 'another cluster' | 'route' | 'project' | 'other';
  status: number;
  code: string;
};

const answers: fc.Arbitrary<Answer> = fc.record({
  kind: fc.constantFrom<Answer['kind']>(
    'gone',
    'no cluster named',
    'another cluster',
    'route',
    'project',
    'other',
  ),
  status: fc.constantFrom(404, 404, 404, 403, 400),
  code: fc.constantFrom('NOT_FOUND', 'NOT_FOUND', 'PERMISSION_DENIED', 'INVALID_ARGUMENT'),
});

function errorOf(answer: Answer, name: string): GoogleError {
  const message = {
    gone: `Not found: projects/${GCP_PROJECT}/locations/${LOCATION}/clusters/${name}.`,
    'no cluster named': `No cluster named '${name}' in ${GCP_PROJECT}.`,
    'another cluster': `Not found: projects/${GCP_PROJECT}/locations/${LOCATION}/clusters/${name}-2.`,
    route: `no route GET /v1/projects/${GCP_PROJECT}/locations/${LOCATION}/clusters/`,
    project: `Project '${GCP_PROJECT}' not found or deleted.`,
    other: 'The request was not answered.',
  }[answer.kind];
  return { status: answer.status, code: answer.code, message };
}

const gone = (answer: Answer) =>
  answer.status === 404 &&
  answer.code === 'NOT_FOUND' &&
  (answer.kind === 'gone' || answer.kind === 'no cluster named');

describe('a GKE cluster is deleted only when GKE says that cluster is not there', () => {
  let server: GkeServer;
  let made = 0;
  before(async () => {
    server = await startGkeServer();
  });
  after(async () => server?.stop());

  it('a cloud’s event or a follow-up look: deletes on a not-found naming the cluster alone (generated answers)', async () => {
    const settings = runSettings(inventoryOptions({ namespace: 'gke-gone' }));
    await fc.assert(
      fc.asyncProperty(answers, async (answer) => {
        const name = `orders-${++made}`;
        server.clusters.set(GCP_PROJECT, [gkeCluster(name, LOCATION)]);
        const { ports, events } = filePorts(
          {
            gke: new GkeSource({
              credentials: server.serviceAccountKey,
              endpoint: server.endpoint,
              maxRetries: 0,
            }),
          },
          'cpsync-gke-gone-',
        );
        const profiles = async () => (await ports.hub.list('gke-gone', {})).map((p) => p.spec.displayName);
        const ref = { scope, name, location: LOCATION };
        const look = (n: number) => syncCluster(ports, { ...settings, syncId: `look-${name}-${n}`, ref });
        try {
          assert.equal((await look(1)).result, 'created');
          if (gone(answer)) server.clusters.set(GCP_PROJECT, []);
          server.failures.set(GCP_PROJECT, [errorOf(answer, name)]);
          const second = await look(2).then(
            (report) => report.result,
            (error: Error) => `failed: ${error.message}`,
          );
          if (gone(answer)) {
            assert.equal(second, 'deleted', JSON.stringify(answer));
            assert.deepEqual(await profiles(), []);
            assert.deepEqual(events(), ['ClusterProfile Created', 'ClusterProfile Deleted']);
          } else {
            assert.notEqual(second, 'deleted', JSON.stringify(answer));
            assert.deepEqual(await profiles(), [name], `${JSON.stringify(answer)}: kept`);
            assert.deepEqual(events(), ['ClusterProfile Created'], 'no Deleted announced');
          }
        } finally {
          server.failures.delete(GCP_PROJECT);
          server.clusters.set(GCP_PROJECT, []);
        }
      }),
      {
        seed: SEED,
        numRuns: 30,
        endOnFailure: true,
        // Each kind of not-found once, beside the generated answers.
        examples: (['gone', 'no cluster named', 'another cluster', 'route', 'project'] as const).map(
          (kind): [Answer] => [{ kind, status: 404, code: 'NOT_FOUND' }],
        ),
      },
    );
  });
});
