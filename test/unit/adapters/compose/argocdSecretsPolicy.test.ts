import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { celString, HTTPS_BASE64 } from '../../../../adapters/compose/argocdSecretsPolicy.ts';

const base64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');

describe("the Argo CD subscriber's Secrets policy", () => {
  it('tells a server beginning https:// by its base64 alone, as admission sees it (property)', () => {
    const near = fc.constantFrom(
      'https://',
      'https:/',
      'https:',
      'http://',
      'HTTPS://',
      'https:\\\\',
      'https//',
      '',
    );
    fc.assert(
      fc.property(near, fc.string({ unit: 'binary', maxLength: 12 }), (start, rest) => {
        const server = start + rest;
        assert.equal(new RegExp(HTTPS_BASE64).test(base64(server)), server.startsWith('https://'), server);
      }),
      { numRuns: 2000 },
    );
  });

  it('writes any text as one CEL string literal: quotes, backslashes and what is not printable ASCII escaped', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (text) => {
        const literal = celString(text);
        assert.ok(literal.startsWith("'") && literal.endsWith("'"));
        const body = literal.slice(1, -1);
        // No quote ends it early, and no character outside printable ASCII is left as it is.
        assert.ok(
          /^(?:[\x20-\x26\x28-\x5b\x5d-\x7e]|\\['\\]|\\u[0-9a-f]{4}|\\U[0-9a-f]{8})*$/.test(body),
          literal,
        );
        // Read back as CEL reads those escapes, it is the text.
        const read = body.replace(
          /\\(['\\])|\\u([0-9a-f]{4})|\\U([0-9a-f]{8})/g,
          (_, c, u, U) => c ?? String.fromCodePoint(parseInt(u ?? U, 16)),
        );
        assert.equal(read, text);
      }),
    );
  });
});
