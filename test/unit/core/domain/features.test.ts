import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  DEFAULT_FEATURE_GATES,
  FEATURE_SUMMARY_KEY,
  featureCounts,
  featureReport,
  nextFeatureData,
  noCounts,
} from '../../../../core/domain/features.ts';
import { normalize } from '../../../../core/domain/normalize.ts';
import { eksCluster, NOW } from '../../../support/fixtures.ts';
import { inventoryOptions } from '../../../support/settings.ts';

const off = { ...DEFAULT_FEATURE_GATES, tagProperties: false };
const left = (tagProperties: number) => ({ ...noCounts(), tagProperties });

describe('feature states', () => {
  it('reads turning-off while profiles carry what an off feature wrote, off once none do', () => {
    assert.deepEqual(featureReport(off, left(3)).tagProperties, {
      desired: 'off',
      actual: 'turning-off',
      profiles: 3,
    });
    assert.deepEqual(featureReport(off, left(0)).tagProperties, {
      desired: 'off',
      actual: 'off',
      profiles: 0,
    });
    assert.deepEqual(featureReport(DEFAULT_FEATURE_GATES, left(3)).tagProperties, {
      desired: 'on',
      actual: 'on',
      profiles: 3,
    });
  });

  it('keeps each scope’s leftovers under its own key and sums them in the summary; the same input gives the same data', () => {
    const first = nextFeatureData({}, 'scope.eks.1.us-east-1', left(2), off);
    const both = nextFeatureData(first, 'scope.aks.2.all', left(1), off);
    assert.equal(both['scope.eks.1.us-east-1'], '{"tagProperties":2}');
    assert.equal(JSON.parse(both[FEATURE_SUMMARY_KEY]!).tagProperties.profilesLeft, 3);
    assert.deepEqual(nextFeatureData(both, 'scope.aks.2.all', left(1), off), both);
    const cleaned = nextFeatureData(
      nextFeatureData(both, 'scope.aks.2.all', left(0), off),
      'scope.eks.1.us-east-1',
      left(0),
      off,
    );
    assert.deepEqual(Object.keys(cleaned), [FEATURE_SUMMARY_KEY]);
    assert.equal(JSON.parse(cleaned[FEATURE_SUMMARY_KEY]!).tagProperties.actual, 'off');
  });

  it('drops what it cannot read, and leftovers of a feature turned on again', () => {
    const data = nextFeatureData(
      { 'scope.gke.p.all': 'not json', other: 'x' },
      'scope.eks.1.us-east-1',
      left(0),
      DEFAULT_FEATURE_GATES,
    );
    assert.deepEqual(Object.keys(data), [FEATURE_SUMMARY_KEY]);
    const again = nextFeatureData(
      { 'scope.gke.p.all': '{"tagProperties":4}' },
      'scope.eks.1.us-east-1',
      left(0),
      DEFAULT_FEATURE_GATES,
    );
    assert.equal(JSON.parse(again[FEATURE_SUMMARY_KEY]!).tagProperties.actual, 'on');
  });

  it('counts a profile as carrying tag labels while it holds their record or the count of those left out', () => {
    const labels = { fromTags: ['env', 'team'], prefix: 'cpsync.io/tag-' };
    const carrying = (tags: Record<string, string>, tagLabels = true) =>
      featureCounts(
        [normalize(eksCluster({ tags }), inventoryOptions({ labels, features: { tagLabels } }), NOW)],
        ['eks'],
      ).tagLabels;
    assert.equal(carrying({ env: 'prod' }), 1, 'a label and its record');
    assert.equal(carrying({ team: 'Payments Platform' }), 1, 'only the count of one left out');
    assert.equal(carrying({ owner: 'jane' }), 0, 'no tag named');
    assert.equal(carrying({ env: 'prod' }, false), 0, 'the feature off');
  });
});
