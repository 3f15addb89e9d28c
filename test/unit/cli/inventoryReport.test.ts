import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { formatInventorySummary, reportHtml, summarize } from '../../../cli/inventoryReport.ts';
import { normalize } from '../../../core/domain/normalize.ts';
import { eksCluster, NOW } from '../../support/fixtures.ts';
import { inventoryOptions } from '../../support/settings.ts';

/** What may not be raw in the summary or the page: what acts, but for the newlines that end lines. */
const RAW = /(?!\n)[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/u;

const text = fc.oneof(
  fc.string({ unit: 'binary' }),
  fc.string({
    unit: fc.constantFrom(
      '\u001b',
      '\r',
      '\n',
      '\u009b',
      '\u00ad',
      '\u061c',
      '\u202e',
      '\u2028',
      '\u{e0041}',
      '\ud800',
      '<',
      '&',
      '"',
      'a',
    ),
  }),
);

describe('list --summary and report', () => {
  it('show cloud strings as text: nothing acts, no markup is made', () => {
    fc.assert(
      fc.property(text, text, text, (name, version, issue) => {
        const profile = normalize(
          eksCluster({
            name: `c${name}`,
            kubernetesVersion: version,
            health: { status: 'ACTIVE', issues: [{ code: 'X', message: issue }] },
          }),
          inventoryOptions(),
          NOW,
        );
        const summary = summarize([profile]);
        const shown = formatInventorySummary(summary);
        assert.doesNotMatch(shown, RAW);
        assert.match(shown, /need a look: 1\n/);
        const page = reportHtml(summary, { generatedAt: NOW, source: 'cpsync.yaml' });
        assert.doesNotMatch(page.replace(/<script>[^]*<\/script>|<style>[^]*<\/style>/g, ''), RAW);
        assert.equal(page.match(/<tr data-profile=/g)?.length, 1, 'one row, none forged');
      }),
      { numRuns: 300 },
    );
  });

  it('colours only the clouds it knows, never by a prototype property', () => {
    const profile = normalize(eksCluster(), inventoryOptions(), NOW);
    profile.metadata.labels!['cpsync.io/provider'] = 'constructor';
    const page = reportHtml(summarize([profile]), { generatedAt: NOW, source: 'cpsync.yaml' });
    assert.match(page, /<div class="card other" data-cloud-count="constructor">/);
    assert.match(page, /fill="#666"/);
  });
});
