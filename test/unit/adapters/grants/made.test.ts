/**
 * What a look at a grant may have made (adapters/grants/made.ts): a write that failed counts as not done only
 * when its failure proves it (a refusal or rejection; a connection never made, for a client that sends once),
 * however the error is wrapped and whichever SDK spells it.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { MadeByLook, unreached } from '../../../../adapters/grants/made.ts';

/** A failure's cause as each SDK spells it, with whether it proves the write was not done. */
const PROVES = [400, 401, 403, 404, 422];
const leaf = fc.oneof(
  fc.record({
    kind: fc.constant('status' as const),
    status: fc.integer({ min: 400, max: 599 }),
    sdk: fc.constantFrom('kubernetes', 'azure', 'aws'),
  }),
  fc.record({
    kind: fc.constant('connection' as const),
    code: fc.constantFrom('ECONNREFUSED', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN'),
  }),
  fc.record({
    kind: fc.constant('lost' as const),
    code: fc.constantFrom(
      'ECONNRESET',
      'EPIPE',
      'ETIMEDOUT',
      'UND_ERR_SOCKET',
      'ABORT_ERR',
      'UND_ERR_HEADERS_TIMEOUT',
    ),
  }),
);
type Leaf = typeof leaf extends fc.Arbitrary<infer T> ? T : never;

function errorOf(cause: Leaf): Error {
  if (cause.kind === 'status') {
    const error = new Error(`status ${cause.status}`);
    if (cause.sdk === 'kubernetes') return Object.assign(error, { code: cause.status });
    if (cause.sdk === 'azure')
      return Object.assign(error, { statusCode: cause.status, code: 'SomeAzureCode' });
    return Object.assign(error, { $metadata: { httpStatusCode: cause.status, attempts: 1 } });
  }
  return Object.assign(new Error(cause.code), { code: cause.code });
}

/** `error` wrapped `depth` times, as fetch and the SDKs wrap their causes. */
const wrapped = (error: Error, depth: number): Error =>
  depth === 0 ? error : wrapped(new TypeError('fetch failed', { cause: error }), depth - 1);

describe('what a look at a grant may have made', () => {
  it('counts a failed write as not done only when its failure proves it (property)', async () => {
    await fc.assert(
      fc.asyncProperty(leaf, fc.nat({ max: 3 }), fc.boolean(), async (cause, depth, resent) => {
        const made = new MadeByLook();
        const error = errorOf(cause);
        // A status counts where the SDK puts it (on the error it throws); a connection error wherever it is.
        const thrown = cause.kind === 'status' ? error : wrapped(error, depth);
        await assert.rejects(made.adding(() => Promise.reject(thrown), { resent }));
        const proven =
          (cause.kind === 'status' && PROVES.includes(cause.status)) ||
          (cause.kind === 'connection' && !resent);
        assert.equal(made.made, !proven, JSON.stringify({ cause, depth, resent }));
      }),
    );
  });

  it('a write done, or cpsync’s grant found, stays made until it is taken back; one refused after it does not undo it', async () => {
    const made = new MadeByLook();
    assert.equal(made.made, false);
    await made.adding(async () => 'created');
    await assert.rejects(
      made.adding(() => Promise.reject(Object.assign(new Error('forbidden'), { code: 403 }))),
    );
    assert.equal(made.made, true);
    made.takenBack();
    assert.equal(made.made, false);
    made.found();
    assert.equal(made.made, true);
  });

  it('knows a real refused connection through fetch: never reached, so not done when sent once', async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    await new Promise<void>((resolve) => server.close(() => resolve()));
    const send = () => fetch(`http://127.0.0.1:${port}/`, { method: 'POST' });
    const error = await send().catch((e: unknown) => e);
    assert.ok(unreached(error), String((error as Error).cause));
    const once = new MadeByLook();
    await assert.rejects(once.adding(send));
    assert.equal(once.made, false);
    const again = new MadeByLook();
    await assert.rejects(again.adding(send, { resent: true }));
    assert.equal(again.made, true, 'an SDK that sends again may have been done by an earlier try');
  });
});
