/**
 * The clouds' error names and codes are looked up as their own: an error named like a property of the object
 * prototype is an error no table knows.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { classifyAzureError } from '../../../adapters/aks/classify.ts';
import { classifyAwsError } from '../../../adapters/eks/classify.ts';

const PROTOTYPE_NAMES = Object.getOwnPropertyNames(Object.prototype);

describe('classifying cloud errors', () => {
  it('still knows the names and codes of its tables', () => {
    assert.equal(
      classifyAwsError(Object.assign(new Error('x'), { name: 'AccessDeniedException' })),
      'AccessDenied',
    );
    assert.equal(classifyAzureError({ code: 'SubscriptionNotFound', message: 'x' }), 'NotFound');
  });

  it('takes an error named like a prototype property for an unknown one', () => {
    fc.assert(
      fc.property(fc.constantFrom(...PROTOTYPE_NAMES), (name) => {
        assert.equal(classifyAwsError(Object.assign(new Error('x'), { name })), 'Unknown');
        assert.equal(classifyAzureError({ code: name, message: 'x' }), 'Unknown');
      }),
    );
  });
});
