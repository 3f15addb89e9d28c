import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { findOrphans } from '../../../../core/domain/orphans.ts';
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
});
