import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { parse } from 'yaml';
import { formatTable, formatYaml, listRow } from '../../../cli/format.ts';
import { normalize } from '../../../core/domain/normalize.ts';
import { eksCluster, NOW } from '../../support/fixtures.ts';
import { inventoryOptions } from '../../support/settings.ts';

const RUNS = 500;

/** What may not be raw in what the CLI prints: what acts, but for the newlines that end lines. */
const RAW = /(?!\n)[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/u;

/** Strings of any code units, and strings made mostly of the characters that act. */
const text = fc.oneof(
  fc.string({ unit: 'binary' }),
  fc.string({
    unit: fc.oneof(
      fc.constantFrom('\u001b', '\r', '\n', '\t', '\u0085', '\u009b', '\u00ad', '\u061c', '\u200b', '\u202e'),
      fc.constantFrom(
        '\u2028',
        '\u2029',
        '\ufeff',
        '\u{e0041}',
        '\ud800',
        '\udc00',
        '😀',
        ' ',
        ':',
        '-',
        '#',
      ),
      fc.constantFrom("'", '"', '\\', '---', '...', 'true', '1e3', '&a', '*a', '!tag', '? ', '- ', '|', '>'),
      fc.string({ unit: 'grapheme', maxLength: 1 }),
    ),
  }),
);

describe('list -o yaml', () => {
  it('writes strings holding what acts double-quoted with escapes, and the rest as before', () => {
    assert.equal(
      formatYaml([{ name: 'a\u202eb\u2028c\u009b\u{e0041}' }]),
      '- name: "a\\u202eb\\u2028c\\u009b\\U000e0041"\n',
    );
    assert.equal(
      formatYaml([{ name: 'cpsync-eks-payments', nodes: '6' }]),
      '- name: cpsync-eks-payments\n  nodes: "6"\n',
    );
  });

  it('reads back to the same strings, with none of what acts raw', () => {
    fc.assert(
      fc.property(
        fc.array(fc.dictionary(text, text, { noNullPrototype: true }), { maxLength: 3 }),
        (rows) => {
          const yaml = formatYaml(rows);
          assert.deepEqual(parse(yaml), rows);
          assert.doesNotMatch(yaml, RAW);
        },
      ),
      { numRuns: RUNS },
    );
  });
});

describe('list (table)', () => {
  it('shows every cell as text: nothing acts, and nothing forges a row', () => {
    fc.assert(
      fc.property(text, text, (name, version) => {
        const profile = normalize(
          eksCluster({ name: `c${name}`, kubernetesVersion: version }),
          inventoryOptions(),
          NOW,
        );
        const table = formatTable(
          [listRow(profile)],
          [
            ['name', 'NAME'],
            ['displayName', 'CLUSTER'],
            ['version', 'VERSION'],
          ],
        );
        assert.doesNotMatch(table, RAW);
        assert.equal(table.split('\n').length, 3, 'a header, one row and the end');
      }),
      { numRuns: RUNS },
    );
  });
});
