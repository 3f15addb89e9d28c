import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { strings } from '../../../../adapters/shared/read.ts';

describe('reading cloud answers', () => {
  it('keeps a tag spelled like a prototype property as an own entry, and drops what is not text', () => {
    const tags = strings(
      JSON.parse('{"__proto__": "a", "constructor": "b", "team": "c", "owner": {"name": "x"}}'),
    );
    assert.deepEqual(Object.entries(tags), [
      ['__proto__', 'a'],
      ['constructor', 'b'],
      ['team', 'c'],
    ]);
    assert.equal(Object.getPrototypeOf(tags), Object.prototype);
  });
});
