import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { compose, type Composition } from '../../../../adapters/compose/compose.ts';
import { aksProvider } from '../../../../adapters/compose/providers/aks.ts';
import { gkeProvider } from '../../../../adapters/compose/providers/gke.ts';
import { parseConfig } from '../../../../adapters/compose/config.ts';
import { startGkeServer, type GkeServer } from '../../../env/fakes/gkeServer.ts';
import { temporaryDirectory } from '../../../support/tmp.ts';

const SUBSCRIPTION = '00000000-1111-2222-3333-c00000000001';

describe('what the configuration covers, when it is discovered', () => {
  let server: GkeServer;
  let composition: Composition;
  let config: ReturnType<typeof parseConfig>;
  let gke: Record<string, unknown>;

  before(async () => {
    server = await startGkeServer();
    server.projects.push({ projectId: 'acme-data', state: 1 }, { projectId: 'acme-web', state: 1 });
    const { writeFileSync } = await import('node:fs');
    const { join } = await import('node:path');
    const key = join(temporaryDirectory('cpsync-coverage-'), 'key.json');
    writeFileSync(key, JSON.stringify(server.serviceAccountKey));
    gke = { projects: { search: { query: '' } }, credentials: { file: key }, endpoint: server.endpoint };
    config = parseConfig({ providers: { gke } });
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

  it("lists every other provider's scopes while one provider's discovery never answers, and names that one's failure", async () => {
    let release!: () => void;
    server.searchHeld = new Promise<void>((resolve) => (release = resolve));
    const both = await compose(
      parseConfig({
        providers: {
          gke,
          // Listed after GKE, and known without a call: its scopes are there however long GKE's search takes.
          aks: { subscriptions: [SUBSCRIPTION] },
        },
        sync: { scopeTimeoutSeconds: 1 },
      }),
      [gkeProvider, aksProvider],
    );
    try {
      const resolved = await both.resolveScopes();
      assert.deepEqual(resolved.scopes, [{ provider: 'aks', account: SUBSCRIPTION, region: '*' }]);
      assert.deepEqual(
        resolved.failures.map((f) => [f.provider, f.message]),
        [['gke', 'discovering the scopes of providers.gke: no answer within 1 s']],
      );
    } finally {
      release();
      delete server.searchHeld;
      await both.close();
    }
  });
});
