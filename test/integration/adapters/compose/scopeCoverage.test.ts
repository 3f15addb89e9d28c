import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { compose, type Composition } from '../../../../adapters/compose/compose.ts';
import { gkeProvider } from '../../../../adapters/compose/providers/gke.ts';
import { parseConfig } from '../../../../adapters/compose/config.ts';
import { startGkeServer, type GkeServer } from '../../../env/fakes/gkeServer.ts';
import { temporaryDirectory } from '../../../support/tmp.ts';

describe('what the configuration covers, when it is discovered', () => {
  let server: GkeServer;
  let composition: Composition;
  let config: ReturnType<typeof parseConfig>;

  before(async () => {
    server = await startGkeServer();
    server.projects.push({ projectId: 'acme-data', state: 1 }, { projectId: 'acme-web', state: 1 });
    const { writeFileSync } = await import('node:fs');
    const { join } = await import('node:path');
    const key = join(temporaryDirectory('cpsync-coverage-'), 'key.json');
    writeFileSync(key, JSON.stringify(server.serviceAccountKey));
    config = parseConfig({
      providers: {
        gke: { projects: { search: { query: '' } }, credentials: { file: key }, endpoint: server.endpoint },
      },
    });
    composition = await compose(config, [gkeProvider]);
  });
  after(async () => {
    await composition?.close();
    await server?.stop();
  });

  it('says it cannot tell (and may be asked again) when discovery fails, rather than no', async () => {
    server.searchFailures.push(
      ...Array.from({ length: 10 }, () => ({
        status: 403,
        code: 'PERMISSION_DENIED',
        message: 'search denied',
      })),
    );
    const failed = await composition.resolveScopes({
      scopes: [{ provider: 'gke', account: 'acme-data' }],
    });
    server.searchFailures.length = 0;
    assert.deepEqual(failed.scopes, []);
    assert.equal(failed.refused.length, 1);
    assert.equal(failed.refused[0]!.undetermined, true);
    assert.match(
      failed.refused[0]!.reason,
      /cannot tell whether the configuration covers it: .*search denied/,
    );
    // A failed discovery is not remembered: asked again, the answer comes.
    const covered = await composition.resolveScopes({
      scopes: [{ provider: 'gke', account: 'ACME-DATA' }],
    });
    assert.deepEqual(covered.scopes, [{ provider: 'gke', account: 'acme-data', region: '*' }]);
    const other = await composition.resolveScopes({
      scopes: [{ provider: 'gke', account: 'acme-other' }],
    });
    assert.deepEqual(
      other.refused.map((r) => [r.reason, r.undetermined]),
      [['acme-other is not covered by providers.gke.projects', undefined]],
    );
  });
});
