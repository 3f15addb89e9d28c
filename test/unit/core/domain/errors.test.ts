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

/** The layers a transport failure comes up through: an error of several attempts, a socket's error over the system's. */
const transportLayer: fc.Arbitrary<Wrap> = fc.constantFrom<Wrap>(
  (inner) => Object.assign(new AggregateError([inner], ''), { code: 'ECONNREFUSED' }),
  (inner) => new AggregateError([new Error('connect ECONNREFUSED ::1:443'), inner], ''),
  (inner) => Object.assign(new Error('', { cause: inner }), { code: 'UND_ERR_SOCKET' }),
  (inner) => Object.assign(new Error('other side closed', { cause: inner }), { code: 'UND_ERR_SOCKET' }),
);

/** What is thrown on top of it: fetch's generic error, an error of cpsync's or a library's with a cause. */
const topLayer: fc.Arbitrary<Wrap> = fc.oneof(
  fc.constantFrom<Wrap>(
    (inner) => new TypeError('fetch failed', { cause: inner }),
    (inner) => new Error('', { cause: inner }),
  ),
  fc
    .string({ minLength: 1, maxLength: 20 })
    .map<Wrap>((text) => (inner) => new Error(text, { cause: inner })),
);

/** Causes that are answers, not transport failures: what they hold (raw bodies, headers, ids) is never appended. */
const answerCause = fc.constantFrom<() => unknown>(
  // client-node's ApiException: a numeric code, the body and headers.
  () =>
    Object.assign(
      new Error('HTTP-Code: 403\nMessage: Unknown API Status Code!\nBody: "{}"\nHeaders: {"audit-id":"1"}'),
      {
        code: 403,
        body: '{}',
        headers: { 'audit-id': '1' },
      },
    ),
  // gaxios: a plain object as the cause of an HTTP error.
  () => ({ message: 'invalid_grant', code: 400 }),
  // An HTTP error with its response, even when its code reads like a system's.
  () =>
    Object.assign(new Error('{"error":{"code":403}}'), {
      code: 'ERR_BAD_RESPONSE',
      response: { status: 403 },
    }),
  () => 'a string cause',
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

  it('keeps the failure at the bottom of any transport layers, with what is thrown on top of them', () => {
    fc.assert(
      fc.property(
        socketFailure,
        fc.array(transportLayer, { maxLength: 2 }),
        topLayer,
        (failure, layers, top) => {
          const error = top(layers.reduce<unknown>((inner, wrap) => wrap(inner), failure));
          const text = messageOf(error);
          assert.ok(text.includes(failure.message), `${JSON.stringify(text)} hides ${failure.message}`);
          // Nothing said twice: a cause whose text the message holds adds nothing.
          assert.equal(text.split(failure.message).length, 2, `${JSON.stringify(text)} repeats the failure`);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('appends nothing of a cause that is an answer (a body, headers, a response) rather than a transport failure', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 30 }), answerCause, (message, cause) => {
        assert.equal(messageOf(new Error(message, { cause: cause() })), message);
      }),
    );
  });

  it('is the message itself when nothing is below it, and whatever was thrown otherwise', () => {
    fc.assert(
      fc.property(fc.string(), (text) => {
        assert.equal(messageOf(new Error(text)), text);
        assert.equal(messageOf(text), text);
      }),
    );
    assert.equal(messageOf(undefined), 'undefined');
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

  it("reads undici's connect timeout the same whatever order its addresses were tried in", () => {
    const timeout = (addresses: string[]) =>
      new TypeError('fetch failed', {
        cause: Object.assign(
          new Error(`Connect Timeout Error (attempted addresses: ${addresses.join(', ')}, timeout: 10000ms)`),
          { code: 'UND_ERR_CONNECT_TIMEOUT' },
        ),
      });
    const text = messageOf(timeout(['10.0.0.9:443', '10.0.0.7:443']));
    assert.equal(text, messageOf(timeout(['10.0.0.7:443', '10.0.0.9:443'])));
    assert.equal(
      text,
      'fetch failed: Connect Timeout Error (attempted addresses: 10.0.0.7:443, 10.0.0.9:443, timeout: 10000ms)',
    );
  });

  it('ends on a cycle through an AggregateError', () => {
    const attempts = new AggregateError([], '');
    const top = new Error('', { cause: attempts });
    attempts.errors.push(top, new Error('connect ECONNREFUSED 10.0.0.7:443'));
    assert.equal(messageOf(top), 'connect ECONNREFUSED 10.0.0.7:443');
  });

  it('ends on an error that is its own cause', () => {
    const loop = new Error('fetch failed');
    const inner = Object.assign(new Error('connect ECONNREFUSED 10.0.0.7:443', { cause: loop }), {
      code: 'ECONNREFUSED',
    });
    loop.cause = inner;
    assert.equal(messageOf(loop), 'fetch failed: connect ECONNREFUSED 10.0.0.7:443');
  });
});
