import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { profileProblem } from '../../../../../core/domain/model/validate.ts';
import { normalize } from '../../../../../core/domain/normalize.ts';
import { inventoryOptions } from '../../../../support/settings.ts';
import { eksCluster, NOW } from '../../../../support/fixtures.ts';

const good = normalize(eksCluster(), inventoryOptions(), NOW);

describe('telling a malformed profile from a well-formed one', () => {
  it('accepts every profile the normalizer makes', () => {
    assert.equal(profileProblem(good), undefined);
    assert.equal(profileProblem({ ...good, status: undefined }), undefined);
  });

  const broken: Array<[string, unknown, RegExp]> = [
    ['a scalar document', 7, /is a number, not an object/],
    ['a list document', ['a'], /is a list, not an object/],
    ['an empty document', null, /is empty, not an object/],
    [
      'another kind',
      { ...good, kind: 'ConfigMap' },
      /is not a multicluster\.x-k8s\.io\/v1alpha1 ClusterProfile/,
    ],
    ['a profile without spec', { ...good, spec: undefined }, /has no spec/],
    [
      'a profile without a manager',
      { ...good, spec: { displayName: 'x' } },
      /has no spec\.clusterManager\.name/,
    ],
    [
      'labels that are not strings',
      { ...good, metadata: { ...good.metadata, labels: { a: 1 } } },
      /metadata\.labels is not a map of strings/,
    ],
    [
      'conditions that are a number',
      { ...good, status: { ...good.status, conditions: 7 } },
      /status\.conditions is not a list/,
    ],
    [
      'properties without values',
      { ...good, status: { ...good.status, properties: [{ name: 'x' }] } },
      /status\.properties is not a list/,
    ],
    [
      'access providers that are strings',
      { ...good, status: { ...good.status, accessProviders: ['eks'] } },
      /status\.accessProviders is not a list/,
    ],
  ];
  for (const [title, value, expected] of broken)
    it(`names ${title}`, () => assert.match(profileProblem(value) ?? '(accepted)', expected));

  it('never throws, whatever a file holds (property)', () => {
    fc.assert(
      fc.property(fc.anything(), (value) => {
        const problem = profileProblem(value);
        assert.ok(problem === undefined || typeof problem === 'string');
      }),
      { numRuns: 500 },
    );
  });
});
