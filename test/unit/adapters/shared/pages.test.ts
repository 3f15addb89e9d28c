import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { EndlessListingError, PageTokens } from '../../../../adapters/shared/pages.ts';

describe('PageTokens', () => {
  it('lets each token through once and refuses any token given again, however the tokens are spelt', () => {
    fc.assert(
      fc.property(
        fc.array(fc.string({ minLength: 1, maxLength: 12 }), { minLength: 1, maxLength: 40 }),
        (given) => {
          const tokens = new PageTokens('a listing');
          const seen = new Set<string>();
          for (const token of given) {
            if (seen.has(token)) {
              assert.throws(() => tokens.next(token), EndlessListingError);
              return;
            }
            assert.equal(tokens.next(token), token);
            seen.add(token);
          }
        },
      ),
    );
  });

  it('ends the listing at a page without a token, however the service says so', () => {
    const tokens = new PageTokens('a listing');
    for (const none of [undefined, null, '']) assert.equal(tokens.next(none), undefined);
  });

  it('refuses a listing longer than the most pages it follows, naming the listing', () => {
    const tokens = new PageTokens('EKS ListClusters in 111122223333/eu-west-1', { most: 5 });
    for (let page = 1; page < 5; page += 1) assert.equal(tokens.next(`t${page}`), `t${page}`);
    assert.throws(() => tokens.next('t5'), {
      name: 'EndlessListingError',
      message: /^EKS ListClusters in 111122223333\/eu-west-1: more than 5 pages/,
    });
  });

  it('stops at the next page once its signal is aborted, with the signal’s reason', () => {
    const controller = new AbortController();
    const tokens = new PageTokens('a listing', { signal: controller.signal });
    assert.equal(tokens.next('t1'), 't1');
    const reason = new Error('the scope ran out of time');
    controller.abort(reason);
    assert.throws(
      () => tokens.next('t2'),
      (error) => error === reason,
    );
    assert.throws(
      () => tokens.next(undefined),
      (error) => error === reason,
    );
  });
});
