import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { HTTPS_BASE64 } from '../../../../adapters/compose/argocdSecretsPolicy.ts';
import { celLiteral, celString } from '../../../../adapters/shared/celLiteral.ts';

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

  it('writes any text as one CEL string literal that reads back as the text (property)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (text) => {
        assert.equal(celLiteral(celString(text)), text);
      }),
    );
  });
});
