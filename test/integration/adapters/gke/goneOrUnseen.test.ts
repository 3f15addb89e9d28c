/**
 * A GKE cluster is taken for deleted only when GKE says that cluster is not there: a not-found in its own error
 * document whose message names it. Any other answer to the read of the cluster — a not-found of a route a proxy or
 * gateway does not know (even one repeating the cluster's path), a proxy's or a web server's page, a not-found of a
 * project, of another cluster named alike, in another location or project, or of a part of the cluster; a refusal;
 * a bad request — is a read that failed, and deletes nothing. Walked
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

const KINDS = [
  'gone',
  'no cluster named',
  'another cluster',
  'another location',
  'another project',
  'a part of it',
  'route',
  'route naming it',
  'proxy page',
  'server page',
  'project',
  'other',
] as const;

/** What GKE answers the read of the cluster `name`: the generated answer's kind, filled in for it. */
type Answer = {
  kind:
    | 'gone'
    | 'no cluster named'
    | 'another cluster'
    | 'another location'
    | 'another project'
    | 'a part of it'
    | 'route'
    | 'route naming it'
    | 'proxy page'
    | 'server page'
    | 'project'
    | 'other';
  status: number;
  code: string;
};

const answers: fc.Arbitrary<Answer> = fc.record({
  kind: fc.constantFrom<Answer['kind']>(...KINDS),
  status: fc.constantFrom(404, 404, 404, 403, 400),
  code: fc.constantFrom('NOT_FOUND', 'NOT_FOUND', 'PERMISSION_DENIED', 'INVALID_ARGUMENT'),
});

function errorOf(answer: Answer, name: string): GoogleError {
  const path = `/v1/projects/${GCP_PROJECT}/locations/${LOCATION}/clusters/${name}`;
  const message = {
    gone: `Not found: projects/${GCP_PROJECT}/locations/${LOCATION}/clusters/${name}.`,
    'no cluster named': `No cluster named '${name}' in ${GCP_PROJECT}.`,
    'another cluster': `Not found: projects/${GCP_PROJECT}/locations/${LOCATION}/clusters/${name}-2.`,
    'another location': `Not found: projects/${GCP_PROJECT}/locations/us-east1/clusters/${name}.`,
    'another project': `Not found: projects/${GCP_PROJECT}-old/locations/${LOCATION}/clusters/${name}.`,
    'a part of it': `Not found: projects/${GCP_PROJECT}/locations/${LOCATION}/clusters/${name}/nodePools/default-pool.`,
    route: `no route GET /v1/projects/${GCP_PROJECT}/locations/${LOCATION}/clusters/`,
    'route naming it': `no route GET ${path}`,
    'proxy page': '',
    'server page': '',
    project: `Project '${GCP_PROJECT}' not found or deleted.`,
    other: 'The request was not answered.',
  }[answer.kind];
  // What a proxy or a web server in the way answers, the cluster's path in it: a page, not Google's error document.
  const raw = {
    'proxy page': `<!DOCTYPE html><html><body><pre>Cannot GET ${path}</pre></body></html>`,
    'server page': `<html><head><title>404 Not Found</title></head><body><h1>Not Found</h1><p>The requested URL ${path}?$alt=json was not found on this server.</p></body></html>`,
  }[answer.kind as string];
  return { status: answer.status, code: answer.code, message, ...(raw ? { raw } : {}) };
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
        examples: KINDS.map((kind): [Answer] => [{ kind, status: 404, code: 'NOT_FOUND' }]),
      },
    );
  });
});
