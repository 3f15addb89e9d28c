/**
 * What cpsync writes holds `v1alpha2`'s rules (test/support/v1alpha2.ts, transcribed from the upstream
 * API's markers): the oracle refuses each rule's violation, and accepts every profile the normalizer makes
 * — for every cloud, projected copies included, and for generated hostile clusters (badInput.test.ts).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ClusterProfile } from '../../core/domain/model/clusterProfile.ts';
import { normalize, normalizeAll } from '../../core/domain/normalize.ts';
import { ConfigError, parseConfig } from '../../adapters/compose/config.ts';
import { inventoryOptions } from '../support/settings.ts';
import { aksCluster, eksCluster, gkeCluster, NOW } from '../support/fixtures.ts';
import { v1alpha2Violations } from '../support/v1alpha2.ts';
import { crdViolations } from '../support/crdSchema.ts';

const good = normalize(eksCluster(), inventoryOptions(), NOW);
const changed = (change: (profile: ClusterProfile) => void): ClusterProfile => {
  const copy = structuredClone(good);
  change(copy);
  return copy;
};
const provider = (p: ClusterProfile) => p.status!.accessProviders![0]!;

describe("v1alpha2's rules", () => {
  it('accept every profile cpsync writes, in every cloud, projected copies and labels from tags included', () => {
    const projecting = inventoryOptions({
      projections: [{ provider: 'eks', namespaces: ['argocd', 'kueue-system'] }],
      clusterSets: { argocd: 'argo' },
      labels: { fromTags: ['env', 'team'], prefix: 'cpsync.io/tag-' },
    });
    const tags = { env: 'prod', team: 'Payments Platform' };
    const profiles = [
      ...normalizeAll(
        [eksCluster({ tags }), gkeCluster({ tags, zone: 'europe-west1-b' }), aksCluster({ tags })],
        projecting,
        NOW,
      ).profiles,
      normalize(eksCluster({ endpoints: [] }), inventoryOptions(), NOW),
    ];
    assert.equal(profiles.length, 6);
    assert.ok(profiles.slice(0, 5).every((p) => p.metadata.labels?.['cpsync.io/tag-env'] === 'prod'));
    assert.ok(profiles.some((p) => p.metadata.labels?.['topology.kubernetes.io/zone'] === 'europe-west1-b'));
    for (const profile of profiles) {
      assert.deepEqual(v1alpha2Violations(profile), [], profile.metadata.name);
      assert.deepEqual(crdViolations(profile), [], profile.metadata.name);
    }
  });

  const violations: Array<[string, ClusterProfile, RegExp]> = [
    [
      'a manager that is not a label value',
      changed((p) => (p.spec.clusterManager.name = 'fleet manager')),
      /clusterManager/,
    ],
    [
      'a manager of 64 characters',
      changed((p) => (p.spec.clusterManager.name = 'm'.repeat(64))),
      /clusterManager/,
    ],
    ['an empty manager', changed((p) => (p.spec.clusterManager.name = '')), /clusterManager/],
    ['a server without a host', changed((p) => (provider(p).cluster!.server = 'https://')), /server/],
    ['a relative server', changed((p) => (provider(p).cluster!.server = '/api')), /server/],
    [
      'a server longer than 2048',
      changed((p) => (provider(p).cluster!.server = `https://a.example/${'x'.repeat(2048)}`)),
      /server/,
    ],
    [
      'a proxy of another scheme',
      changed((p) => Object.assign(provider(p).cluster!, { 'proxy-url': 'ftp://proxy.example' })),
      /proxy-url/,
    ],
    [
      'the same extension twice',
      changed((p) => provider(p).cluster!.extensions!.push({ ...provider(p).cluster!.extensions![0]! })),
      /extensions: .* twice/,
    ],
    [
      '65 access providers',
      changed((p) => {
        p.status!.accessProviders = Array.from({ length: 65 }, (_, i) => ({ ...provider(p), name: `p${i}` }));
      }),
      /65 > 64/,
    ],
    ['an empty property value', changed((p) => (p.status!.properties![0]!.value = '')), /value: 1-1024/],
    [
      'a property value of 1025',
      changed((p) => (p.status!.properties![0]!.value = 'v'.repeat(1025))),
      /value/,
    ],
    [
      'the same property twice',
      changed((p) => p.status!.properties!.push({ ...p.status!.properties![0]! })),
      /properties: .* twice/,
    ],
    [
      'credentialProviders',
      changed((p) => Object.assign(p.status!, { credentialProviders: [] })),
      /credentialProviders/,
    ],
  ];
  for (const [name, profile, expected] of violations)
    it(`refuse ${name}`, () => {
      const found = v1alpha2Violations(profile);
      assert.ok(
        found.some((problem) => expected.test(problem)),
        `${name}: ${JSON.stringify(found)}`,
      );
    });

  it('a configuration that would make a profile v1alpha2 refuses is refused at start, naming the field', () => {
    const refused = (document: unknown, field: RegExp) => {
      assert.throws(
        () => parseConfig(document, 'test'),
        (error: unknown) => error instanceof ConfigError && error.issues.some((i) => field.test(i)),
      );
    };
    refused({ manager: 'Fleet Manager' }, /^manager: /);
    refused({ manager: 'm'.repeat(64) }, /^manager: /);
    refused(
      { inventory: { accessProviderNames: { eks: 'e'.repeat(254) } } },
      /^inventory\.accessProviderNames\.eks: /,
    );
    refused({ inventory: { accessProviderNames: { gke: '' } } }, /^inventory\.accessProviderNames\.gke: /);
  });
});
