/**
 * Two settings of the AWS SDK's clients that take CPU off every call and change nothing they send or return.
 *
 * - `sha256: SigV4Sha256`: the hash the SigV4 signer computes with. The SDK's own (`Sha256Node`) hands Node every
 *   HMAC key as a Buffer, and Node 24 makes a key object of a Buffer key at every HMAC, which costs several times
 *   the HMAC itself (about 20 µs against 4 µs on the bench machine). Every request's signature is an HMAC keyed by
 *   the day's signing key, which the signer keeps (the same bytes, the same object, all day): here the key object
 *   of a binary key is made once and kept as long as the key is. A text key (the secret access key, the first step
 *   of the key's derivation) goes to Node as text, as the SDK's hash sends it. The digests are Node's.
 * - `withoutSdkLogger(client)`: the SDK's logger middleware walks each call's input and output through their
 *   schemas, copying them to hide sensitive members, for a logger that writes nothing (cpsync gives its clients
 *   none; it logs its calls itself). Taken out of the client's stack.
 *
 * Measured in `npm run bench -- --only sdk-hash` (BENCHMARKS.md): the CPU of one DescribeCluster through cpsync's
 * client, each way taking turns in one process.
 */
import { createHash, createHmac, createSecretKey, type Hash, type Hmac, type KeyObject } from 'node:crypto';
import type { Checksum, SourceData } from '@smithy/types';

/**
 * The key object of each binary HMAC key seen, for as long as the key itself is kept, beside a copy of the bytes it
 * was made of: a key whose bytes were changed since (a buffer used again) gets a key object of its new bytes.
 */
const keyObjects = new WeakMap<object, { bytes: Uint8Array; key: KeyObject }>();

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function bytesOf(data: SourceData): Uint8Array | string {
  if (typeof data === 'string') return data;
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  return new Uint8Array(data);
}

function keyOf(secret: SourceData): KeyObject | string {
  if (typeof secret === 'string') return secret;
  const bytes = bytesOf(secret) as Uint8Array;
  const known = keyObjects.get(secret);
  if (known && sameBytes(known.bytes, bytes)) return known.key;
  const made = { bytes: Uint8Array.from(bytes), key: createSecretKey(bytes) };
  keyObjects.set(secret, made);
  return made.key;
}

/** SHA-256 and HMAC-SHA-256 as the SDK's `Checksum`: given a secret, an HMAC keyed by it; else a hash. */
export class SigV4Sha256 implements Checksum {
  readonly digestLength = 32;
  readonly #secret: SourceData | undefined;
  #hash: Hash | Hmac;
  #finished = false;

  constructor(secret?: SourceData) {
    this.#secret = secret;
    this.#hash = this.#make();
  }

  #make(): Hash | Hmac {
    return this.#secret ? createHmac('sha256', keyOf(this.#secret)) : createHash('sha256');
  }

  update(data: Uint8Array | string): void {
    if (this.#finished) throw new Error('Attempted to update an already finished hash.');
    this.#hash.update(bytesOf(data));
  }

  /** An HMAC is finished by its digest; a hash is digested from a copy and can go on, as the SDK's hash does. */
  digest(): Promise<Uint8Array> {
    let digest: Buffer;
    if (this.#secret) {
      this.#finished = true;
      digest = this.#hash.digest();
    } else digest = (this.#hash as Hash).copy().digest();
    return Promise.resolve(new Uint8Array(digest.buffer, digest.byteOffset, digest.byteLength));
  }

  reset(): void {
    this.#hash = this.#make();
    this.#finished = false;
  }
}

/** The client with the SDK's logger middleware taken out of its stack (see the module's comment). */
export function withoutSdkLogger<C extends { middlewareStack: { remove(name: string): boolean } }>(
  client: C,
): C {
  client.middlewareStack.remove('loggerMiddleware');
  return client;
}
