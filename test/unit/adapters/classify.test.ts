/**
 * The clouds' error names and codes are looked up as their own: an error named like a property of the object
 * prototype is an error no table knows.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { classifyAzureError } from '../../../adapters/aks/classify.ts';
import { classifyAwsError } from '../../../adapters/eks/classify.ts';
import {
  classifyGoogleError,
  googleClusterGone,
  GoogleApiError,
  readableGoogleError,
} from '../../../adapters/gke/classify.ts';
import { messageOf } from '../../../core/domain/errors.ts';

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

describe("Resource Manager's errors in Google's own words", () => {
  const STATUSES = {
    PERMISSION_DENIED: 403,
    UNAUTHENTICATED: 401,
    NOT_FOUND: 404,
    ABORTED: 409,
    RESOURCE_EXHAUSTED: 429,
    INTERNAL: 500,
    UNAVAILABLE: 503,
  } as const;
  /** What Resource Manager's client rejects with: its transport's error, the answer's body as its message. */
  const transportError = (body: string, status: number) =>
    Object.assign(new Error(body), { code: status, response: { status, data: undefined } });
  const answer = fc.record(
    {
      status: fc.constantFrom(...(Object.keys(STATUSES) as Array<keyof typeof STATUSES>)),
      message: fc.string({ minLength: 1 }).filter((m) => m.trim() !== ''),
      reason: fc.constantFrom('SERVICE_DISABLED', 'IAM_PERMISSION_DENIED', 'RATE_LIMIT_EXCEEDED'),
      otherDetails: fc.array(fc.record({ '@type': fc.string(), reason: fc.string() }), { maxLength: 2 }),
    },
    { requiredKeys: ['status', 'message'] },
  );

  it("says the error document's message, keeps its code, status and reason, and the transport's error as its cause", () => {
    fc.assert(
      fc.property(answer, ({ status, message, reason, otherDetails }) => {
        const code = STATUSES[status];
        const details = [
          ...(otherDetails ?? []),
          ...(reason ? [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason }] : []),
        ];
        const thrown = transportError(JSON.stringify({ error: { code, message, status, details } }), code);
        const readable = readableGoogleError(thrown) as GoogleApiError;
        assert.ok(readable instanceof GoogleApiError);
        assert.equal(messageOf(readable), message);
        assert.deepEqual(
          [readable.code, readable.httpStatusCode, readable.status, readable.reason, readable.cause],
          [code, code, status, reason, thrown],
        );
        // Classified as the transport's error was, and a disabled API by its reason now.
        assert.equal(
          classifyGoogleError(readable),
          reason === 'SERVICE_DISABLED' ? 'ApiNotEnabled' : classifyGoogleError(thrown),
        );
      }),
    );
  });

  it("says the last answer's message when the client's retries ran out, however the message is spelled", () => {
    /** google-gax's error when its retries ran out: the last error, then the earlier ones, quoted. */
    const ranOut = fc.constantFrom(
      (last: string, earlier: string) =>
        `Exceeded maximum number of retries retrying error Error: ${last} before any response was received : Previous errors : [{message: ${earlier}, code: 503, details: , note: }]`,
      (last: string) =>
        `Total timeout of API google.cloud.resourcemanager.v3.Projects exceeded 60000 milliseconds retrying error Error: ${last} before any response was received.`,
    );
    fc.assert(
      fc.property(answer, answer, ranOut, (last, earlier, spell) => {
        const body = (a: typeof last) =>
          JSON.stringify({ error: { code: STATUSES[a.status], message: a.message, status: a.status } });
        const thrown = Object.assign(new Error(spell(body(last), body(earlier))), { code: 4 });
        const readable = readableGoogleError(thrown) as GoogleApiError;
        assert.ok(readable instanceof GoogleApiError);
        assert.equal(messageOf(readable), `${last.message} (still so when the retries ran out)`);
        assert.deepEqual(
          [readable.code, readable.status, readable.cause],
          [STATUSES[last.status], last.status, thrown],
        );
      }),
    );
  });

  const documentWithMessage = (body: string) => {
    try {
      const message = (JSON.parse(body) as { error?: { message?: unknown } } | null)?.error?.message;
      return typeof message === 'string' && message.trim() !== '';
    } catch {
      return false;
    }
  };

  it('leaves every other error as it is: any text, any JSON that is not an error document with a message', () => {
    const notADocument = fc.oneof(
      fc.string(),
      fc.jsonValue().map((value) => JSON.stringify(value)),
      fc
        .record({ code: fc.integer(), message: fc.oneof(fc.integer(), fc.constant(''), fc.constant(' ')) })
        .map((error) => JSON.stringify({ error })),
    );
    fc.assert(
      fc.property(notADocument, fc.integer({ min: 100, max: 599 }), (body, status) => {
        fc.pre(!documentWithMessage(body));
        const thrown = transportError(body, status);
        assert.equal(readableGoogleError(thrown), thrown);
      }),
    );
    for (const other of [undefined, 'refused', { message: '{"error":{"message":"x"}}' }])
      assert.equal(readableGoogleError(other), other);
  });
});

describe("a GKE cluster's read answered not found: gone only when GKE says so of that very cluster", () => {
  const cluster = { project: 'acme-data', location: 'us-central1-a', name: 'orders' };
  const notFound = (message: string, http?: number) =>
    Object.assign(new Error(message), { code: 5, ...(http ? { httpStatusCode: http } : {}) });

  it("takes GKE's own words, over REST or gRPC, with its locations or zones path", () => {
    for (const message of [
      'Not found: projects/acme-data/locations/us-central1-a/clusters/orders.',
      'Not found: projects/acme-data/zones/us-central1-a/clusters/orders.\nCould not find [orders] in [us-central1-a].',
      '5 NOT_FOUND: Not found: projects/acme-data/locations/us-central1-a/clusters/orders.',
      "No cluster named 'orders' in acme-data.",
    ])
      assert.equal(googleClusterGone(notFound(message, 404), cluster), true, message);
    assert.equal(
      googleClusterGone(
        notFound('Not found: projects/acme-data/zones/us-central1-a/clusters/orders.'),
        cluster,
      ),
      true,
      'gRPC: no HTTP status',
    );
  });

  it('takes nothing else: another cluster, location or project, a part of it, a route, a page, another status', () => {
    for (const [message, http] of [
      ['Not found: projects/acme-data/locations/us-central1-a/clusters/orders-2.', 404],
      ['Not found: projects/acme-data/locations/us-east1/clusters/orders.', 404],
      ['Not found: projects/acme-data-old/locations/us-central1-a/clusters/orders.', 404],
      ['Not found: projects/acme-data/locations/us-central1-a/clusters/orders/nodePools/default-pool.', 404],
      ['no route GET /v1/projects/acme-data/locations/us-central1-a/clusters/orders', 404],
      [
        'Error response from RPC GetCluster with status 404 could not be decoded: the response body is not JSON: <pre>Cannot GET /v1/projects/acme-data/locations/us-central1-a/clusters/orders</pre>',
        404,
      ],
      ['Not found: projects/acme-data/locations/us-central1-a/clusters/orders.', 403],
    ] as const)
      assert.equal(googleClusterGone(notFound(message, http), cluster), false, message);
    assert.equal(
      googleClusterGone(
        Object.assign(new Error('Not found: projects/acme-data/locations/us-central1-a/clusters/orders.'), {
          code: 7,
        }),
        cluster,
      ),
      false,
      'PERMISSION_DENIED',
    );
  });
});
