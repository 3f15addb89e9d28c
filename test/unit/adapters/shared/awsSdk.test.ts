/**
 * The settings cpsync gives its AWS clients change nothing they send: the signer's hash gives the digests the SDK's
 * own hash gives (any key, as text or bytes, a key's bytes changed between uses, data in any chunks), so a request
 * signed with it carries the signature the SDK signs by default; and the clients cpsync makes carry the whole stack
 * but the logger middleware, which only ever fed a logger cpsync does not give them.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EKSClient } from '@aws-sdk/client-eks';
import { HttpRequest } from '@smithy/protocol-http';
import { SignatureV4 } from '@smithy/signature-v4';
import type { ChecksumConstructor, SourceData } from '@smithy/types';
import fc from 'fast-check';
import { awsClientFactory } from '../../../../adapters/eks/awsClients.ts';
import { SigV4Sha256 } from '../../../../adapters/shared/awsSdk.ts';

/** The hash the SDK's clients sign with by default (its `Sha256Node`). */
const sdkSha256 = new EKSClient({ region: 'us-east-1' }).config.sha256 as ChecksumConstructor;

const bytes = fc.uint8Array({ maxLength: 96 });
/** A secret as the signer hands it: text, bytes, a view into a larger buffer, or an ArrayBuffer. */
const secret = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 64 }),
  bytes,
  fc.tuple(bytes, fc.nat(8), fc.nat(8)).map(([b, head, tail]) => {
    const whole = new Uint8Array(head + b.length + tail).fill(0xa5);
    whole.set(b, head);
    return new Uint8Array(whole.buffer, head, b.length);
  }),
  bytes.map((b) => Uint8Array.from(b).buffer),
);
const chunks = fc.array(fc.oneof(bytes, fc.string({ unit: 'binary', maxLength: 40 })), { maxLength: 5 });

async function digestOf(
  ctor: ChecksumConstructor,
  key: SourceData | undefined,
  data: Array<Uint8Array | string>,
) {
  const hash = new ctor(key);
  for (const chunk of data) hash.update(chunk as Uint8Array);
  return Buffer.from(await hash.digest()).toString('hex');
}

describe("the AWS clients' signing hash", () => {
  it("gives the SDK's digests: hashes and HMACs of any key and data, a key used again, its bytes changed", async () => {
    await fc.assert(
      fc.asyncProperty(fc.option(secret, { nil: undefined }), chunks, chunks, async (key, first, second) => {
        assert.equal(await digestOf(SigV4Sha256, key, first), await digestOf(sdkSha256, key, first));
        // The same key object again (the signer's kept signing key), then with its bytes changed in place.
        assert.equal(await digestOf(SigV4Sha256, key, second), await digestOf(sdkSha256, key, second));
        if (key instanceof Uint8Array && key.length > 0) {
          key[0] = key[0]! ^ 0xff;
          assert.equal(await digestOf(SigV4Sha256, key, second), await digestOf(sdkSha256, key, second));
        }
      }),
      { numRuns: 300 },
    );
  });

  it('goes on after a digest as a hash, refuses more data after it as an HMAC, and starts again on reset', async () => {
    const hash = new SigV4Sha256();
    hash.update(Buffer.from('part one'));
    const partial = Buffer.from(await hash.digest()).toString('hex');
    hash.update(Buffer.from(' and two'));
    assert.equal(partial, await digestOf(sdkSha256, undefined, ['part one']));
    assert.equal(
      Buffer.from(await hash.digest()).toString('hex'),
      await digestOf(sdkSha256, undefined, ['part one and two']),
    );
    const hmac = new SigV4Sha256('key');
    hmac.update(Buffer.from('data'));
    await hmac.digest();
    assert.throws(() => hmac.update(Buffer.from('more')), /already finished/);
    hmac.reset();
    hmac.update(Buffer.from('data'));
    assert.equal(
      Buffer.from(await hmac.digest()).toString('hex'),
      await digestOf(sdkSha256, 'key', ['data']),
    );
  });

  it("signs every request as the SDK's own hash signs it", async () => {
    const word = fc.stringMatching(/^[A-Za-z0-9._~-]{1,12}$/);
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          accessKeyId: fc.stringMatching(/^[A-Z0-9]{16,20}$/),
          secretAccessKey: fc.string({ minLength: 1, maxLength: 40 }),
          sessionToken: fc.option(word, { nil: undefined }),
        }),
        fc.constantFrom('us-east-1', 'eu-west-2', 'cn-north-1', 'us-gov-west-1'),
        fc.constantFrom('eks', 'sts', 'events', 'dynamodb'),
        fc.constantFrom('GET', 'POST', 'DELETE'),
        fc.array(word, { maxLength: 4 }),
        fc.dictionary(word, word, { maxKeys: 3 }),
        fc.option(fc.string({ maxLength: 200 }), { nil: undefined }),
        fc.date({
          min: new Date('2020-01-01T00:00:00Z'),
          max: new Date('2035-01-01T00:00:00Z'),
          noInvalidDate: true,
        }),
        async (credentials, region, service, method, path, query, body, signingDate) => {
          const request = () =>
            new HttpRequest({
              method,
              protocol: 'https:',
              hostname: `${service}.${region}.amazonaws.com`,
              path: `/${path.join('/')}`,
              query,
              headers: { host: `${service}.${region}.amazonaws.com`, 'content-type': 'application/json' },
              ...(body === undefined ? {} : { body }),
            });
          const signed = async (sha256: ChecksumConstructor) =>
            (await new SignatureV4({ service, region, sha256, credentials }).sign(request(), { signingDate }))
              .headers;
          // Twice each: the second signature is made with the signing key the signer kept from the first.
          for (let i = 0; i < 2; i++) assert.deepEqual(await signed(SigV4Sha256), await signed(sdkSha256));
        },
      ),
      { numRuns: 150 },
    );
  });

  it("is the hash of the clients cpsync makes, which carry the SDK's stack without its logger middleware", () => {
    const clients = awsClientFactory({
      credentials: async () => ({ accessKeyId: 'A', secretAccessKey: 'B' }),
    });
    for (const client of [clients.eks('us-east-1'), clients.sts('us-east-1')]) {
      assert.equal(client.config.sha256, SigV4Sha256);
      const stack = client.middlewareStack.identify().join('\n');
      assert.doesNotMatch(stack, /loggerMiddleware/);
      for (const kept of [
        'serializerMiddleware',
        'retryMiddleware',
        'httpSigningMiddleware',
        'deserializerMiddleware',
      ])
        assert.match(stack, new RegExp(kept));
    }
  });
});
