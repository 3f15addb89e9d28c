import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { profileProblem } from '../../../../../core/domain/model/validate.ts';
import { normalize } from '../../../../../core/domain/normalize.ts';
import { inventoryOptions } from '../../../../support/settings.ts';
import { aksCluster, eksCluster, gkeCluster, NOW } from '../../../../support/fixtures.ts';
import type { ClusterProfile } from '../../../../../core/domain/model/clusterProfile.ts';
import { untrustedReason } from '../../../../../core/domain/untrustedReason.ts';
import {
  clusterRow,
  formatInventorySummary,
  reportHtml,
  summarize,
} from '../../../../../cli/inventoryReport.ts';
import { clusterSecretOf } from '../../../../../functions/subscribers/argocd/clusterSecret.ts';

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

describe('a profile that passes the check is read without failing, whatever else a hand or another writer changed in it', () => {
  const profiles = [
    good,
    normalize(gkeCluster(), inventoryOptions(), NOW),
    normalize(aksCluster(), inventoryOptions(), NOW),
  ];
  /** Every path into `value` (object keys and list indices), the value itself first. */
  function paths(value: unknown, at: Array<string | number> = []): Array<Array<string | number>> {
    const inner =
      typeof value === 'object' && value !== null
        ? Object.entries(value).flatMap(([key, v]) =>
            paths(v, [...at, Array.isArray(value) ? Number(key) : key]),
          )
        : [];
    return [at, ...inner];
  }
  function replaced(value: unknown, path: ReadonlyArray<string | number>, by: unknown): unknown {
    if (path.length === 0) return by;
    const [head, ...rest] = path;
    const copy = (Array.isArray(value) ? [...value] : { ...(value as object) }) as Record<
      string | number,
      unknown
    >;
    copy[head!] = replaced(copy[head!], rest, by);
    return copy;
  }
  const mutated = fc.constantFrom(...profiles).chain((profile) =>
    fc
      .array(fc.tuple(fc.constantFrom(...paths(profile).slice(1)), fc.jsonValue()), {
        minLength: 1,
        maxLength: 3,
      })
      .map((changes) => changes.reduce<unknown>((p, [path, by]) => replaced(p, path, by), profile)),
  );

  it('the report, the summary, the Argo CD Secret and the trust check take it (property)', () => {
    fc.assert(
      fc.property(mutated, (value) => {
        if (profileProblem(value) !== undefined) return;
        const profile = value as ClusterProfile;
        const summary = summarize([profile]);
        formatInventorySummary(summary);
        reportHtml(summary, { generatedAt: NOW, source: 'test' });
        clusterRow(profile);
        untrustedReason(profile, 'cpsync');
        clusterSecretOf(profile, { namespace: 'argocd' });
      }),
      { numRuns: 1500 },
    );
  });
});
