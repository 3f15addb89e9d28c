import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import JSON5 from 'json5';
import { cut, printable, printableJson, withoutUserinfo } from '../../../../core/domain/text.ts';

const RUNS = 1000;

/** What acts instead of showing: controls, format characters, separators, lone surrogates. */
const ACTING = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/u;
/** A surrogate that is not half of a pair (read as code points, a pair is one character). */
const LONE_SURROGATE = /\p{Cs}/u;
/** What JSON may not leave raw: the same, but for the structure's own newlines. */
const RAW_IN_JSON = /(?!\n)[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/u;

/** Strings of any code units, and strings made mostly of the characters that act. */
const text = fc.oneof(
  fc.string({ unit: 'binary' }),
  fc.string({ unit: 'binary-ascii' }),
  fc.string({
    unit: fc.oneof(
      fc.constantFrom(
        '\u001b',
        '\r',
        '\n',
        '\u007f',
        '\u0085',
        '\u009b',
        '\u00ad',
        '\u061c',
        '\u200b',
        '\u200e',
        '\u202e',
        '\u2066',
        '\u2028',
        '\u2029',
        '\ufeff',
        '\u{e0001}',
        '\u{e0041}',
        '\ud800',
        '\udfff',
        '😀',
        'é',
        '"',
        '\\',
      ),
      fc.string({ unit: 'grapheme', maxLength: 1 }),
    ),
  }),
);

describe('printable', () => {
  it('escapes every control, format character, separator and lone surrogate as \\u{…}', () => {
    const cases: Array<[string, string]> = [
      ['a\u001b[2Jb', 'a\\u{1b}[2Jb'],
      ['line\r\nforged', 'line\\u{d}\\u{a}forged'],
      ['\u009b31m', '\\u{9b}31m'],
      ['\u007f', '\\u{7f}'],
      ['abc\u202egnp.exe', 'abc\\u{202e}gnp.exe'],
      ['\u2066x\u2069', '\\u{2066}x\\u{2069}'],
      ['\u061cx', '\\u{61c}x'],
      ['soft\u00adhyphen', 'soft\\u{ad}hyphen'],
      ['zero\u200bwidth\u200d', 'zero\\u{200b}width\\u{200d}'],
      ['\ufeffbom', '\\u{feff}bom'],
      ['a\u2028b\u2029c', 'a\\u{2028}b\\u{2029}c'],
      ['tag\u{e0001}\u{e0041}', 'tag\\u{e0001}\\u{e0041}'],
      ['lone \ud800 and \udc00', 'lone \\u{d800} and \\u{dc00}'],
      ['😀 é 集群 a b', '😀 é 集群 a b'],
    ];
    for (const [given, shown] of cases) assert.equal(printable(given), shown, JSON.stringify(given));
  });

  it('leaves nothing that acts, and changes nothing else', () => {
    fc.assert(
      fc.property(text, (given) => {
        const shown = printable(given);
        assert.doesNotMatch(shown, ACTING);
        // Undoing the escapes gives the text back (it held no `\u{` of its own).
        if (!given.includes('\\u{'))
          assert.equal(
            shown.replace(/\\u\{([0-9a-f]+)\}/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16))),
            given.replace(/[\u{10000}-\u{10ffff}]/gu, (c) =>
              ACTING.test(c) ? String.fromCharCode(c.codePointAt(0)!) : c,
            ),
          );
      }),
      { numRuns: RUNS },
    );
  });
});

describe('printableJson', () => {
  it('writes the characters JSON leaves raw as \\u escapes, astral ones as their surrogate pair', () => {
    assert.equal(
      printableJson({ 'k\u200b': 'a\u009b\u202e\u2028\u{e0041}\n' }),
      '{"k\\u200b":"a\\u009b\\u202e\\u2028\\udb40\\udc41\\n"}',
    );
    assert.equal(printableJson(['x'], 2), '[\n  "x"\n]');
  });

  it('parses back to the same strings, with none of them raw', () => {
    fc.assert(
      fc.property(
        fc.dictionary(text, fc.oneof(text, fc.array(text, { maxLength: 3 })), { noNullPrototype: true }),
        fc.constantFrom(undefined, 2),
        (value, indent) => {
          const json = printableJson(value, indent);
          // Read back by a parser that is not V8's: V8's JSON.parse (Node 24) can read an escaped key (`"\u001b"`)
          // as a key with a backslash that an earlier parse in the process met (nodejs/node#63785), and the keys
          // here are any strings. JSON5 reads JSON as JSON does, in JavaScript of its own.
          assert.deepEqual(JSON5.parse(json), value);
          assert.doesNotMatch(json, RAW_IN_JSON);
        },
      ),
      { numRuns: RUNS },
    );
  });
});

describe('cut', () => {
  it('never cuts inside a surrogate pair', () => {
    assert.equal(cut('ab😀', 3), 'ab');
    assert.equal(cut('ab😀', 4), 'ab😀');
    assert.equal(cut('ab😀c', 4), 'ab😀');
    assert.equal(cut('abc', 2), 'ab');
    assert.equal(cut('abc', Infinity), 'abc');
    assert.equal(cut('😀', 1), '');
    assert.equal(cut('😀', 0), '');
  });

  it('is a prefix of at most max code units, as long as it can be, with no half of a character', () => {
    fc.assert(
      fc.property(text, fc.nat({ max: 40 }), (given, max) => {
        const kept = cut(given, max);
        assert.ok(given.startsWith(kept));
        assert.ok(kept.length <= max || kept === given);
        assert.ok(kept.length >= Math.min(given.length, max) - 1, 'at most the half of a pair left out');
        // What it left out is never the second half of a pair whose first half it kept.
        const last = kept.charCodeAt(kept.length - 1);
        const next = given.charCodeAt(kept.length);
        assert.ok(!(last >= 0xd800 && last <= 0xdbff && next >= 0xdc00 && next <= 0xdfff));
        // A string with no lone surrogate is cut into one with none.
        if (!LONE_SURROGATE.test(given)) assert.doesNotMatch(kept, LONE_SURROGATE);
      }),
      { numRuns: RUNS },
    );
  });
});

describe('a URL shown without its user and password (withoutUserinfo)', () => {
  /** A user or password as someone may type it into a URL: any characters, `@`, `/`, `:` and `%` among them. */
  const secretish = fc.string({
    unit: fc.constantFrom(...'ab9@/:%#?.-_ é'.split('')),
    minLength: 1,
    maxLength: 12,
  });

  it('never shows the password or the user, whatever they hold; the host and path stay unless an @ follows (property)', () => {
    fc.assert(
      fc.property(
        fc.constantFrom('https://', 'http://', ''),
        secretish,
        secretish,
        fc.constantFrom('proxy.example.com', 'gke.example.com:8443', '127.0.0.1:99999'),
        fc.constantFrom('', '/', '/v1/path', '?q=1', '/users/@me', '?to=a@b'),
        (scheme, user, password, host, path) => {
          const marked = `PW${password}PW`;
          const shown = withoutUserinfo(`${scheme}${user}:${marked}@${host}${path}`);
          assert.ok(!shown.includes(marked) && !shown.includes(`${user}:`), shown);
          // An `@` after the host hides more than the user and password: never less. Without a scheme, a user
          // holding `://` reads as a URL's scheme and what follows it (`a://a:pw@host`): from there on it is hidden.
          if (!path.includes('@') && !(scheme === '' && user.includes('://')))
            assert.equal(shown, `${scheme}***@${host}${path}`);
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('leaves a URL without an @ as it is', () => {
    assert.equal(withoutUserinfo('https://gke.example.com/v1'), 'https://gke.example.com/v1');
  });
});
