import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { findOrphans, scopeCoversProfile } from '../../../../core/domain/orphans.ts';
import { normalize } from '../../../../core/domain/normalize.ts';
import { aksCluster, eksCluster, gkeCluster, NOW } from '../../../support/fixtures.ts';
import { inventoryOptions } from '../../../support/settings.ts';

const options = inventoryOptions();
const eks = normalize(eksCluster({ name: 'a', region: 'eu-west-1' }), options, NOW);
const gke = normalize(gkeCluster(), options, NOW);
const aks = normalize(aksCluster(), options, NOW);
const all = new Set(['eks', 'gke', 'aks'] as const);
const scopeOf = (p: typeof eks, region?: string) => ({
  provider: p.metadata.labels!['cpsync.io/provider'] as 'eks' | 'gke' | 'aks',
  account: p.metadata.labels!['cpsync.io/account']!,
  region: region ?? p.metadata.labels!['cpsync.io/region']!,
});

describe('orphans', () => {
  it('are the profiles no configured scope covers, by their scope; a whole-account scope covers every region', () => {
    const configured = [scopeOf(eks, '*'), scopeOf(gke, '*')];
    const orphans = findOrphans([eks, gke, aks], configured, all);
    assert.deepEqual(
      orphans.map((o) => [o.scope, o.profiles.map((p) => p.metadata.name)]),
      [[scopeOf(aks), [aks.metadata.name]]],
    );
    assert.deepEqual(
      findOrphans([eks], [{ ...scopeOf(eks), region: 'us-east-1' }], all)[0]?.scope,
      scopeOf(eks),
    );
  });

  it('leave out a provider whose scopes cannot be told', () => {
    assert.deepEqual(
      findOrphans([eks, gke, aks], [], new Set(['eks'] as const)).map((o) => o.scope.provider),
      ['eks'],
    );
  });

  it('are, for any labels and scopes, exactly the profiles of a told provider that no configured scope covers', () => {
    // Values as a hand-made file may carry them too: unsanitised, empty, `*`, or with characters a label refuses.
    const value = fc.constantFrom('111122223333', 'eu-west-1', 'us-east-1', '*', '', 'a b', 'a\nb', 'Proj_1');
    const provider = fc.constantFrom('eks', 'gke', 'aks', 'other');
    const labelled = fc.record({
      metadata: fc.record({
        labels: fc.record(
          {
            'cpsync.io/provider': provider,
            'cpsync.io/account': value,
            'cpsync.io/region': value,
          },
          { requiredKeys: [] },
        ),
      }),
    });
    const scope = fc.record({
      provider: fc.constantFrom('eks' as const, 'gke' as const, 'aks' as const),
      account: value,
      region: value,
    });
    fc.assert(
      fc.property(
        fc.array(labelled, { maxLength: 20 }),
        fc.array(scope, { maxLength: 6 }),
        fc.subarray(['eks', 'gke', 'aks'] as const),
        (profiles, configured, told) => {
          const determined = new Set(told);
          const found = findOrphans(profiles, configured, determined).flatMap((o) => o.profiles);
          // The definition, one scope at a time.
          const expected = profiles.filter((p) => {
            const labels = p.metadata.labels;
            const named = labels['cpsync.io/provider'];
            return (
              (['eks', 'gke', 'aks'] as string[]).includes(named ?? '') &&
              determined.has(named as 'eks') &&
              Boolean(labels['cpsync.io/account']) &&
              Boolean(labels['cpsync.io/region']) &&
              !configured.some((s) => scopeCoversProfile(s, p))
            );
          });
          assert.deepEqual(new Set(found), new Set(expected));
          assert.equal(found.length, expected.length);
        },
      ),
      { seed: 20261129, numRuns: 500 },
    );
  });
});
