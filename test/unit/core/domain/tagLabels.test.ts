/**
 * Labels from cloud tags (core/domain/tagLabels.ts): which tags become labels, under which keys, with which values;
 * what is left out and counted; which allow-lists and prefixes the configuration refuses. The label syntax is
 * checked with the API server's rules as test/support/crdSchema.ts transcribes them, not with cpsync's own.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { OWNED_LABELS } from '../../../../core/domain/constants.ts';
import {
  refusedAllowListEntry,
  refusedTagLabelPrefix,
  tagLabels,
  type TagLabelOptions,
} from '../../../../core/domain/tagLabels.ts';
import { labelKeyProblem, labelValueProblem } from '../../../support/crdSchema.ts';

const DEFAULT = 'cpsync.io/tag-';
const PROTOTYPE_NAMES = ['__proto__', 'constructor', 'toString', 'hasOwnProperty'];

describe('labels from tags: the mapping', () => {
  const cases: Array<[string, Record<string, string>, TagLabelOptions, Record<string, string>, number]> = [
    [
      'an allow-listed tag, under the default prefix',
      { env: 'prod' },
      { fromTags: ['env'], prefix: DEFAULT },
      { 'cpsync.io/tag-env': 'prod' },
      0,
    ],
    [
      'a tag the allow-list does not name: nothing, and not counted',
      { owner: 'Jane Doe' },
      { fromTags: ['env'], prefix: DEFAULT },
      {},
      0,
    ],
    [
      'an empty value (a valid label value)',
      { env: '' },
      { fromTags: ['env'], prefix: DEFAULT },
      { 'cpsync.io/tag-env': '' },
      0,
    ],
    [
      'a value already a label value, kept as it is (case, dots, dashes, underscores)',
      { env: 'Prod.v1-a_B' },
      { fromTags: ['env'], prefix: DEFAULT },
      { 'cpsync.io/tag-env': 'Prod.v1-a_B' },
      0,
    ],
    [
      'a value with a space: left out, counted',
      { env: 'prod line' },
      { fromTags: ['env'], prefix: DEFAULT },
      {},
      1,
    ],
    [
      'a value of 64 characters: left out, counted (never cut)',
      { env: 'a'.repeat(64) },
      { fromTags: ['env'], prefix: DEFAULT },
      {},
      1,
    ],
    [
      'a value of 63 characters: kept',
      { env: 'a'.repeat(63) },
      { fromTags: ['env'], prefix: DEFAULT },
      { 'cpsync.io/tag-env': 'a'.repeat(63) },
      0,
    ],
    [
      'a value not alphanumeric at its ends: left out (never trimmed)',
      { env: '-prod', team: 'pay_' },
      { fromTags: ['env', 'team'], prefix: DEFAULT },
      {},
      2,
    ],
    [
      'a value outside ASCII: left out (never transliterated)',
      { env: 'prodüction' },
      { fromTags: ['env'], prefix: DEFAULT },
      {},
      1,
    ],
    [
      'a value with a slash or colon: left out',
      { env: 'a/b', team: 'a:b' },
      { fromTags: ['env', 'team'], prefix: DEFAULT },
      {},
      2,
    ],
    [
      'tags a pattern matches, each',
      { 'team-a': 'x', 'team-b': 'y', env: 'prod' },
      { fromTags: ['team-*'], prefix: DEFAULT },
      { 'cpsync.io/tag-team-a': 'x', 'cpsync.io/tag-team-b': 'y' },
      0,
    ],
    [
      'a matched key that is no label key with the prefix (a colon): left out',
      { 'aws:cloudformation:stack-name': 'web' },
      { fromTags: ['aws*'], prefix: DEFAULT },
      {},
      1,
    ],
    [
      'a key of 59 characters fits the default prefix; one of 60 does not',
      { ['k'.repeat(59)]: 'a', ['k'.repeat(60)]: 'b' },
      { fromTags: ['k*'], prefix: DEFAULT },
      { [`cpsync.io/tag-${'k'.repeat(59)}`]: 'a' },
      1,
    ],
    [
      'prefix "": a tag key that is a label key already',
      { 'example.com/tier': 'gold', env: 'prod' },
      { fromTags: ['example.com/tier', 'env'], prefix: '' },
      { env: 'prod', 'example.com/tier': 'gold' },
      0,
    ],
    [
      'prefix "": a key whose domain is not lower case: left out',
      { 'Example.com/tier': 'gold' },
      { fromTags: ['Example.com/tier'], prefix: '' },
      {},
      1,
    ],
    [
      'prefix "": Kubernetes’ domains are left out',
      { 'app.kubernetes.io/name': 'web', 'k8s.io/x': 'y', 'kubernetes.io/arch': 'arm64' },
      { fromTags: ['app.*', 'k*'], prefix: '' },
      {},
      3,
    ],
    [
      'prefix "": cpsync’s own labels and domain are left out, but for cpsync.io/tag-',
      {
        'cpsync.io/provider': 'gke',
        'x.cpsync.io/a': 'b',
        'cpsync.io/tag-env': 'prod',
        'topology.kubernetes.io/region': 'mars',
      },
      {
        fromTags: [
          'cpsync.io/provider',
          'x.cpsync.io/a',
          'cpsync.io/tag-env',
          'topology.kubernetes.io/region',
        ],
        prefix: '',
      },
      { 'cpsync.io/tag-env': 'prod' },
      3,
    ],
    [
      'another domain as the prefix',
      { 'cost-center': '4711' },
      { fromTags: ['cost-center'], prefix: 'tags.example.com/' },
      { 'tags.example.com/cost-center': '4711' },
      0,
    ],
    [
      'prototype names are tags like any other (__proto__ ends in _: no label name)',
      JSON.parse('{"__proto__":"a","constructor":"b"}') as Record<string, string>,
      { fromTags: ['__proto__', 'constructor'], prefix: DEFAULT },
      { 'cpsync.io/tag-constructor': 'b' },
      1,
    ],
  ];
  for (const [name, tags, options, labels, omitted] of cases)
    it(name, () => {
      const made = tagLabels(tags, options);
      assert.deepEqual(made, { labels, omitted });
      assert.deepEqual(Object.keys(made.labels), Object.keys(labels).sort(), 'sorted by key');
    });

  it('copies a prototype-named tag under prefix "" only where its key is a label key', () => {
    const tags = JSON.parse('{"__proto__":"a","constructor":"b","toString":"c"}') as Record<string, string>;
    const made = tagLabels(tags, { fromTags: PROTOTYPE_NAMES, prefix: '' });
    assert.deepEqual(made.labels, { constructor: 'b', toString: 'c' });
    assert.equal(Object.getPrototypeOf(made.labels), Object.prototype);
    assert.equal(made.omitted, 1);
  });
});

/** Keys a cloud may give: label-like and not, with domains (Kubernetes’ and cpsync’s among them), long and odd. */
const tagKey = fc.oneof(
  fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._-]{0,70}$/),
  fc
    .tuple(
      fc.oneof(
        fc.domain(),
        fc.constantFrom(
          'kubernetes.io',
          'app.kubernetes.io',
          'k8s.io',
          'cpsync.io',
          'x-k8s.io',
          'Example.com',
        ),
      ),
      fc.stringMatching(/^[A-Za-z0-9._-]{0,66}$/),
    )
    .map(([domain, name]) => `${domain}/${name}`),
  fc.constantFrom(...OWNED_LABELS, ...PROTOTYPE_NAMES, 'cpsync.io/tag-env', 'aws:eks:cluster-name', 'a/b/c'),
  fc.string({ unit: 'grapheme', minLength: 1, maxLength: 80 }),
);
/** Values a cloud may give: label values and everything around them. */
const tagValue = fc.oneof(
  fc.stringMatching(/^[A-Za-z0-9._-]{0,70}$/),
  fc.string({ unit: 'grapheme', maxLength: 300 }),
  fc.constant(''),
);
const prefix = fc.constantFrom(DEFAULT, '', 'tags.example.com/', 'team-', 'Bad Prefix/');

/** What the configuration (or a later release) may allow-list for these tags: some keys, some patterns. */
const input = fc
  .tuple(fc.dictionary(tagKey, tagValue, { maxKeys: 30 }), prefix)
  .chain(([tags, chosenPrefix]) => {
    const keys = Object.keys(tags);
    const entry = fc.oneof(
      keys.length > 0 ? fc.constantFrom(...keys) : fc.constant('env'),
      keys.length > 0
        ? fc.tuple(fc.constantFrom(...keys), fc.nat(10)).map(([key, length]) => `${key.slice(0, length)}*`)
        : fc.constant('*'),
      tagKey,
    );
    return fc.record({
      tags: fc.constant(tags),
      options: fc.record({ fromTags: fc.array(entry, { maxLength: 8 }), prefix: fc.constant(chosenPrefix) }),
    });
  });

const allowListed = (fromTags: readonly string[], key: string) =>
  fromTags.some((e) => (e.endsWith('*') ? key.startsWith(e.slice(0, -1)) : e === key));
/** Domains a tag label may not use (Kubernetes’, and cpsync’s outside cpsync.io/tag-), written from the docs. */
const reserved = (key: string) => {
  const domain = key.includes('/') ? key.slice(0, key.indexOf('/')) : '';
  const under = (parent: string) => domain === parent || domain.endsWith(`.${parent}`);
  return (
    (OWNED_LABELS as readonly string[]).includes(key) ||
    under('kubernetes.io') ||
    under('k8s.io') ||
    (under('cpsync.io') && !key.startsWith('cpsync.io/tag-'))
  );
};

describe('labels from tags: over generated tag keys and values', () => {
  it('emits only valid label keys and values, never rewritten, never one of cpsync’s or Kubernetes’ keys, and counts every tag it leaves out', () => {
    fc.assert(
      fc.property(input, ({ tags, options }) => {
        const { labels, omitted } = tagLabels(tags, options);
        const named = Object.entries(tags).filter(([key]) => allowListed(options.fromTags, key));
        assert.equal(Object.keys(labels).length + omitted, named.length);
        for (const [key, value] of Object.entries(labels)) {
          assert.equal(labelKeyProblem(key), undefined, key);
          assert.equal(labelValueProblem(value), undefined, `${key}=${value}`);
          assert.ok(!reserved(key), key);
          assert.ok(key.startsWith(options.prefix), key);
          assert.equal(tags[key.slice(options.prefix.length)], value, 'the value as the cloud gave it');
        }
        // What is left out is exactly what could not be a label without a guess.
        for (const [tag, value] of named) {
          const key = `${options.prefix}${tag}`;
          const valid =
            labelKeyProblem(key) === undefined && labelValueProblem(value) === undefined && !reserved(key);
          assert.equal(Object.hasOwn(labels, key), valid, key);
        }
      }),
      { numRuns: 1000 },
    );
  });

  it('is deterministic: the same tags in any order give the same labels, in the same order', () => {
    fc.assert(
      fc.property(input, ({ tags, options }) => {
        const reversed = Object.fromEntries(Object.entries(tags).reverse());
        const once = tagLabels(tags, options);
        assert.deepEqual(tagLabels(tags, options), once);
        assert.deepEqual(tagLabels(reversed, options), once);
        assert.deepEqual(Object.keys(tagLabels(reversed, options).labels), Object.keys(once.labels));
      }),
      { numRuns: 500 },
    );
  });

  it('never emits a label one of cpsync’s own could be, whatever the allow-list the configuration accepts', () => {
    fc.assert(
      fc.property(input, ({ tags, options }) => {
        const accepted =
          refusedTagLabelPrefix(options.prefix) === undefined &&
          options.fromTags.every((e) => refusedAllowListEntry(e, options.prefix) === undefined);
        fc.pre(accepted);
        for (const key of Object.keys(tagLabels(tags, options).labels))
          assert.ok(!(OWNED_LABELS as readonly string[]).includes(key), key);
      }),
      { numRuns: 300 },
    );
  });
});

describe('labels from tags: what the configuration refuses, naming it', () => {
  const prefixes: Array<[string, RegExp | undefined]> = [
    [DEFAULT, undefined],
    ['', undefined],
    ['tags.example.com/', undefined],
    ['team-', undefined],
    ['cpsync.io/', /a label cpsync\.io\/<tag key> is in cpsync's own domain/],
    ['kubernetes.io/', /is in a domain Kubernetes keeps/],
    ['topology.kubernetes.io/', /is in a domain Kubernetes keeps/],
    ['Tags.example.com/', /is not a valid label key/],
    ['a/b/', /is not a valid label key/],
    ['-', /is not a valid label key/],
  ];
  for (const [given, refusal] of prefixes)
    it(`${refusal ? 'refuses' : 'takes'} the prefix ${JSON.stringify(given)}`, () => {
      const why = refusedTagLabelPrefix(given);
      if (refusal) assert.match(why ?? '', refusal);
      else assert.equal(why, undefined);
    });

  const entries: Array<[string, string, RegExp | undefined]> = [
    ['env', DEFAULT, undefined],
    ['region', DEFAULT, undefined],
    ['*', DEFAULT, undefined],
    ['example.com/*', '', undefined],
    ['team-*', '', undefined],
    ['cpsync.io/tag-env', '', undefined],
    ...OWNED_LABELS.map((label): [string, string, RegExp] => [
      label,
      '',
      new RegExp(
        `^the tag ${label.replace(/\./g, '\\.')} would be the label .*, which is one of cpsync's own labels$`,
      ),
    ]),
    [
      '*',
      '',
      /^\* could match a tag whose label would be x-k8s\.io\/cluster-manager, one of cpsync's own labels$/,
    ],
    ['cpsync*', '', /could match a tag whose label would be cpsync\.io\/provider/],
    ['topology.*', '', /could match a tag whose label would be topology\.kubernetes\.io\/region/],
    [
      'Cost Center',
      DEFAULT,
      /^the tag Cost Center would be the label cpsync\.io\/tag-Cost Center, which is not a valid label key/,
    ],
    ['aws:*', DEFAULT, /^no tag aws:\* matches can be a label/],
    ['app.kubernetes.io/name', '', /is in a domain Kubernetes keeps/],
    ['cpsync.io/profile', '', /is in cpsync's own domain/],
    ['k'.repeat(60), DEFAULT, /is not a valid label key/],
  ];
  for (const [entry, given, refusal] of entries)
    it(`${refusal ? 'refuses' : 'takes'} ${JSON.stringify(entry)} with the prefix ${JSON.stringify(given)}`, () => {
      const why = refusedAllowListEntry(entry, given);
      if (refusal) assert.match(why ?? '', refusal);
      else assert.equal(why, undefined);
    });
});
