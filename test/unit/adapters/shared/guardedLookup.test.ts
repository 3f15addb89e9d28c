/**
 * The resolver of cpsync's member connections: whatever a server's name resolves to, only the addresses a server
 * may be at are handed to the socket. The resolver is a stand-in answering generated lists; the judge of each
 * address is `refusedAddress`, whose own properties are in the endpoints tests.
 */
import assert from 'node:assert/strict';
import type { LookupAddress } from 'node:dns';
import type { LookupFunction } from 'node:net';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  absoluteName,
  guardedLookup,
  RefusedAddressError,
} from '../../../../adapters/shared/guardedLookup.ts';
import { refusedAddress } from '../../../../core/domain/endpoints.ts';

const address = fc.oneof(
  fc.constantFrom(
    '127.0.0.1',
    '127.9.8.7',
    '::1',
    '::ffff:127.0.0.1',
    '0.0.0.0',
    '::',
    '169.254.169.254',
    'fd00:ec2::254',
    'fd00:ec2::23',
    'fd20:ce::254',
    'fe80::1%eth0',
    '168.63.129.16',
    '224.0.0.1',
    '2002:a9fe:a9fe::1',
    '64:ff9b::a9fe:a9fe',
  ),
  fc.ipV4(),
  fc.ipV6(),
);
const answer = fc.array(
  address.map((a): LookupAddress => ({ address: a, family: a.includes(':') ? 6 : 4 })),
  { minLength: 1, maxLength: 4 },
);

/** What the guarded lookup hands a socket asking for `all` (or one address) when the resolver answers `given`. */
function resolved(
  given: LookupAddress[] | NodeJS.ErrnoException,
  loopback: boolean,
  all: boolean,
): { error: unknown; result: unknown; asked: { hostname: string; options: object }[] } {
  const asked: { hostname: string; options: object }[] = [];
  const resolver = ((hostname: string, options: object, callback: (...args: unknown[]) => void) => {
    asked.push({ hostname, options });
    if (given instanceof Error) callback(given, '');
    else callback(null, given);
  }) as unknown as LookupFunction;
  let outcome: { error: unknown; result: unknown } | undefined;
  guardedLookup(loopback, resolver)('member.example.com', { family: 0, all }, (error, result, family) => {
    outcome = { error, result: all || error ? result : { address: result, family } };
  });
  assert.ok(outcome, 'the lookup answers at once when its resolver does');
  return { ...outcome, asked };
}

describe('the member connections’ resolver', () => {
  it('hands the socket exactly the kept addresses, in the resolver’s order, and refuses a name with none', () => {
    fc.assert(
      fc.property(answer, fc.boolean(), fc.boolean(), (given, loopback, all) => {
        const { error, result, asked } = resolved(given, loopback, all);
        assert.deepEqual(asked, [{ hostname: 'member.example.com.', options: { family: 0, all: true } }]);
        const kept = given.filter((a) => !refusedAddress(a.address, { loopback }));
        if (kept.length === 0) {
          assert.ok(error instanceof RefusedAddressError);
          assert.equal(error.code, 'ERR_CPSYNC_REFUSED_ADDRESS');
          for (const a of given) assert.ok(error.message.includes(a.address), error.message);
          assert.ok(error.message.includes('"member.example.com"'));
          return;
        }
        assert.equal(error, null);
        assert.deepEqual(result, all ? kept : kept[0]);
      }),
      { numRuns: 500 },
    );
  });

  it('asks every name fully qualified, so that no search list (a pod’s cluster domain) makes it a name of that cluster’s', () => {
    // A resolver as a pod's sees names: one without a trailing dot is tried under the cluster's search list first.
    const inPod = ((hostname: string, _options: object, callback: (...args: unknown[]) => void) => {
      if (!hostname.endsWith('.')) callback(null, [{ address: '10.96.0.1', family: 4 }]);
      else callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), '');
    }) as unknown as LookupFunction;
    const label = fc.stringMatching(/^[a-z][a-z0-9-]{0,10}$/);
    fc.assert(
      fc.property(fc.array(label, { minLength: 1, maxLength: 4 }), fc.boolean(), (labels, dotted) => {
        const name = `${labels.join('.')}${dotted ? '.' : ''}`;
        let answer: { error: unknown; result: unknown } | undefined;
        guardedLookup(false, inPod)(name, { family: 0, all: true }, (error, result) => {
          answer = { error, result };
        });
        assert.equal((answer?.error as NodeJS.ErrnoException | null)?.code, 'ENOTFOUND', name);
        assert.equal(absoluteName(name), `${labels.join('.')}.`);
      }),
      { numRuns: 200 },
    );
    for (const address of ['34.76.10.20', '::1', 'fd00::1'])
      assert.equal(absoluteName(address), address, 'an address is asked as it is');
  });

  it('passes the resolver’s own failure on, and connects nowhere a metadata name points', () => {
    const failure = Object.assign(new Error('getaddrinfo ENOTFOUND member.example.com'), {
      code: 'ENOTFOUND',
    });
    assert.equal(resolved(failure, false, true).error, failure);
    const metadata = resolved([{ address: '169.254.169.254', family: 4 }], true, false);
    assert.ok(metadata.error instanceof RefusedAddressError);
    assert.match(metadata.error.message, /169\.254\.169\.254/);
    const mixed = resolved(
      [
        { address: '127.0.0.1', family: 4 },
        { address: '34.76.10.20', family: 4 },
      ],
      false,
      true,
    );
    assert.deepEqual(mixed.result, [{ address: '34.76.10.20', family: 4 }]);
  });
});
