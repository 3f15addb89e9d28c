import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PROFILE_NAMES, isDns1123Label, profileName, slugify } from '../../../../core/domain/naming.ts';
import { aksCluster, eksCluster, gkeCluster } from '../../../support/fixtures.ts';

describe('profile names', () => {
  const cases: Array<{ title: string; name: string; expectSlug: RegExp }> = [
    { title: 'plain names', name: 'payments', expectSlug: /^cpsync-eks-payments-[0-9a-f]{16}$/ },
    { title: 'upper-case names', name: 'PROD-Cluster', expectSlug: /^cpsync-eks-prod-cluster-[0-9a-f]{16}$/ },
    {
      title: 'underscores and dots',
      name: 'team_a.prod__v2',
      expectSlug: /^cpsync-eks-team-a-prod-v2-[0-9a-f]{16}$/,
    },
    {
      title: 'accented letters',
      name: 'Équipe-Zürich',
      expectSlug: /^cpsync-eks-equipe-zurich-[0-9a-f]{16}$/,
    },
    { title: 'names with no latin letters', name: '生产集群', expectSlug: /^cpsync-eks-[0-9a-f]{16}$/ },
    { title: 'emoji and symbols', name: '🚀 launch!!', expectSlug: /^cpsync-eks-launch-[0-9a-f]{16}$/ },
    {
      title: 'leading and trailing separators',
      name: '--edge--',
      expectSlug: /^cpsync-eks-edge-[0-9a-f]{16}$/,
    },
  ];
  for (const { title, name, expectSlug } of cases) {
    it(`makes a DNS-1123 label prefixed by the manager for ${title}`, () => {
      const result = profileName('cpsync', eksCluster({ name }));
      assert.match(result, expectSlug);
      assert.ok(isDns1123Label(result), result);
    });
  }

  it('cuts long names to 63 characters and keeps the hash whole', () => {
    const cluster = eksCluster({
      name: 'a-very-long-cluster-name-that-goes-on-and-on-and-on-well-past-any-limit-at-all',
    });
    const result = profileName('cpsync', cluster);
    assert.ok(result.length <= 63, `${result.length}`);
    assert.ok(isDns1123Label(result));
    assert.match(result, /-[0-9a-f]{16}$/);
    assert.doesNotMatch(result, /--/);
  });

  it('cuts long names with a long manager name too', () => {
    const result = profileName('a-manager-name-of-thirty-chars', eksCluster({ name: 'x'.repeat(80) }));
    assert.ok(result.length <= 63 && isDns1123Label(result), result);
    assert.ok(result.startsWith('a-manager-name-of-thirty-chars-eks-'));
  });

  it('gives the same display name in two regions two names', () => {
    const east = profileName('cpsync', eksCluster({ name: 'prod', region: 'us-east-1' }));
    const west = profileName('cpsync', eksCluster({ name: 'prod', region: 'us-west-2' }));
    assert.notEqual(east, west);
  });

  it('gives the same display name in two accounts two names', () => {
    const a = profileName('cpsync', eksCluster({ name: 'prod', account: '111111111111' }));
    const b = profileName('cpsync', eksCluster({ name: 'prod', account: '222222222222' }));
    assert.notEqual(a, b);
  });

  it('never renames: the same cluster gives the same name every time', () => {
    assert.equal(profileName('cpsync', gkeCluster()), profileName('cpsync', gkeCluster()));
  });

  it('ignores the case of Azure resource ids, which Azure does not keep stable', () => {
    const cluster = aksCluster();
    const shouted = { ...cluster, providerId: cluster.providerId.toUpperCase() };
    assert.equal(profileName('cpsync', cluster), profileName('cpsync', shouted));
  });

  it('gives new names 64 bits of the id hash, and keeps the 40-bit names earlier versions gave among the names a profile may have', () => {
    const cluster = eksCluster({ name: 'payments' });
    const [first] = PROFILE_NAMES.candidates('cpsync', cluster);
    const [legacy] = PROFILE_NAMES.legacy('cpsync', cluster);
    assert.match(first!, /^cpsync-eks-payments-[0-9a-f]{16}$/);
    assert.match(legacy!, /^cpsync-eks-payments-[0-9a-f]{10}$/);
    assert.equal(legacy!.slice(-10), first!.slice(-16, -6), 'the same hash, cut shorter');
    assert.ok(
      !PROFILE_NAMES.candidates('cpsync', cluster).includes(legacy!),
      'a legacy name is never given anew',
    );
  });

  it('offers a newcomer whose name is taken longer hashes, last the longest a name can carry, each a DNS-1123 label', () => {
    for (const manager of ['cpsync', 'a-manager-name-of-thirty-chars'])
      for (const name of ['payments', 'x'.repeat(80), '生产集群']) {
        const candidates = PROFILE_NAMES.candidates(manager, eksCluster({ name }));
        assert.equal(new Set(candidates).size, candidates.length, 'no name twice');
        for (const candidate of candidates) assert.ok(isDns1123Label(candidate), candidate);
        const hashes = candidates.map((c) => /-([0-9a-f]+)$/.exec(c)![1]!.length);
        assert.deepEqual(
          hashes,
          [...hashes].sort((a, b) => a - b),
          'hashes only grow',
        );
        const last = candidates.at(-1)!;
        assert.equal(last.length, 63, `${last}: all the room goes to the hash`);
        assert.ok(last.slice(`${manager}-eks-`.length).length >= 28, 'at least 112 bits');
      }
  });

  it('slugs keep only lower-case letters, digits and single dashes', () => {
    assert.equal(slugify('  Hello__World..2 '), 'hello-world-2');
    assert.equal(slugify('***'), '');
  });
});
