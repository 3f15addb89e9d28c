import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { own } from '../../../../core/domain/own.ts';

describe('own', () => {
  it("gives a record's own entries, and never what the object prototype holds", () => {
    const record: Record<string, string> = { team: 'payments' };
    assert.equal(own(record, 'team'), 'payments');
    assert.equal(own(record, 'env'), undefined);
    assert.equal(own(undefined, 'team'), undefined);
    fc.assert(
      fc.property(
        fc.constantFrom(...Object.getOwnPropertyNames(Object.prototype)),
        fc.string(),
        (key, value) => {
          assert.equal(own(record, key), undefined);
          assert.equal(own(Object.fromEntries([[key, value]]), key), value);
        },
      ),
    );
  });
});
