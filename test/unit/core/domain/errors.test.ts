import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { firstLineOf, messageOf } from '../../../../core/domain/errors.ts';

/** A loopback port nothing listens on: one a server had, closed again. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as { port: number };
  await new Promise<void>((done) => server.close(() => done()));
  return port;
}

/** What a socket's failure says: the system's code and the address it tried. */
const socketFailure = fc
  .record({
    code: fc.constantFrom('ECONNREFUSED', 'ECONNRESET', 'EHOSTUNREACH', 'ETIMEDOUT'),
    address: fc.ipV4(),
    port: fc.integer({ min: 1, max: 65_535 }),
  })
  .map(({ code, address, port }) => {
    const error = new Error(`connect ${code} ${address}:${port}`) as NodeJS.ErrnoException;
    error.code = code;
    return error;
  });

type Wrap = (inner: unknown) => unknown;

/** The ways libraries wrap a failure: a generic message with a cause, an AggregateError without one, a code alone. */
const wrapper: fc.Arbitrary<Wrap> = fc.oneof(
  fc.constantFrom<Wrap>(
    (inner) => new TypeError('fetch failed', { cause: inner }),
    (inner) => new Error('', { cause: inner }),
    (inner) => new AggregateError([inner], ''),
    (inner) => new AggregateError([new Error('connect ECONNREFUSED ::1:443'), inner], ''),
  ),
  fc
    .string({ minLength: 1, maxLength: 20 })
    .map<Wrap>((text) => (inner) => new Error(text, { cause: inner })),
);

describe('messageOf: what went wrong, causes included', () => {
  it("says why and where Node's fetch failed to connect, not only `fetch failed`", async () => {
    const port = await closedPort();
    const error = await fetch(`http://127.0.0.1:${port}/`).then(
      () => assert.fail('nothing listens there'),
      (thrown: unknown) => thrown,
    );
    assert.equal((error as Error).message, 'fetch failed', 'what fetch itself says');
    assert.match(messageOf(error), new RegExp(`^fetch failed: .*ECONNREFUSED 127\\.0\\.0\\.1:${port}$`));
    assert.match(firstLineOf(error, 300), new RegExp(`ECONNREFUSED 127\\.0\\.0\\.1:${port}`));
  });

  it('keeps the failure at the bottom of any wrapping, up to three wrappers deep', () => {
    fc.assert(
      fc.property(socketFailure, fc.array(wrapper, { maxLength: 3 }), (failure, wraps) => {
        const error = wraps.reduce<unknown>((inner, wrap) => wrap(inner), failure);
        const text = messageOf(error);
        assert.ok(text.includes(failure.message), `${JSON.stringify(text)} hides ${failure.message}`);
        // Nothing said twice: a cause whose text the message holds adds nothing.
        assert.equal(text.split(failure.message).length, 2, `${JSON.stringify(text)} repeats the failure`);
      }),
      { numRuns: 500 },
    );
  });

  it('is the message itself when nothing is below it, and whatever was thrown otherwise', () => {
    fc.assert(
      fc.property(fc.string(), (text) => {
        assert.equal(messageOf(new Error(text)), text);
        assert.equal(messageOf(text), text);
      }),
    );
    assert.equal(messageOf(undefined), '');
    const coded = Object.assign(new Error(''), { code: 'EPIPE' });
    assert.equal(messageOf(coded), 'EPIPE', 'an error with only a code says its code');
  });

  it('reads the same for the same failures in any order (a name whose addresses were tried in another order)', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(socketFailure, { minLength: 2, maxLength: 4, selector: (e) => e.message }),
        (failures) => {
          const tried = (order: Error[]) =>
            new TypeError('fetch failed', { cause: new AggregateError(order, '') });
          assert.equal(messageOf(tried(failures)), messageOf(tried([...failures].reverse())));
          for (const failure of failures) assert.ok(messageOf(tried(failures)).includes(failure.message));
        },
      ),
    );
  });

  it('ends on an error that is its own cause', () => {
    const loop = new Error('fetch failed');
    const inner = new Error('connect ECONNREFUSED 10.0.0.7:443', { cause: loop });
    loop.cause = inner;
    assert.equal(messageOf(loop), 'fetch failed: connect ECONNREFUSED 10.0.0.7:443');
  });
});
