/**
 * The resolver for cpsync's own connections to a member's server: a server written as a name is judged without
 * a lookup (`canonicalServer`), so what the name resolves to is judged here, at every connection, by the same
 * rules. An answer's refused addresses are dropped; a name with none left is not connected to at all.
 */
import { lookup as systemLookup, type LookupAddress } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import { refusedAddress } from '../../core/domain/endpoints.ts';

/** A member's server name resolved to addresses no server is at: nothing was connected. */
export class RefusedAddressError extends Error {
  readonly code = 'ERR_CPSYNC_REFUSED_ADDRESS';
  readonly hostname: string;
  constructor(hostname: string, addresses: readonly string[]) {
    // Sorted: a resolver may rotate its answers, and the text is shown where a changed text is a write.
    const distinct = [...new Set(addresses)].sort();
    super(
      `${JSON.stringify(hostname)} resolves to ${distinct.join(', ')}, ` +
        `${distinct.length === 1 ? 'an address' : 'addresses'} no member's server is at (loopback, link-local, ` +
        `metadata, unspecified or reserved): not connected, no token sent`,
    );
    this.name = 'RefusedAddressError';
    this.hostname = hostname;
  }
}

/**
 * A name as the resolver is asked it: fully qualified (a trailing dot), so that a resolver's search list never
 * makes it another name. In a pod, `kubernetes.default` or `api.example` would be tried under the pod's cluster
 * domain first (`<name>.<namespace>.svc.cluster.local`, …), reaching that cluster's own services; a server's name
 * is the cloud's, always absolute. An address stays as it is.
 */
export function absoluteName(hostname: string): string {
  return isIP(hostname) !== 0 || hostname.endsWith('.') ? hostname : `${hostname}.`;
}

/**
 * `resolve` (the system's resolver unless given), asked the name fully qualified (`absoluteName`), with the
 * addresses `refusedAddress` refuses taken out of every answer. `loopback`: the member's cloud is one the
 * configuration reaches on this machine.
 */
export function guardedLookup(
  loopback: boolean,
  resolve: LookupFunction = systemLookup as unknown as LookupFunction,
): LookupFunction {
  return (hostname, options, callback) => {
    resolve(absoluteName(hostname), { ...options, all: true }, (error, answer) => {
      if (error) return callback(error, '');
      const addresses = Array.isArray(answer)
        ? answer
        : [{ address: answer, family: answer.includes(':') ? 6 : 4 } satisfies LookupAddress];
      const kept = addresses.filter((a) => !refusedAddress(a.address, { loopback }));
      if (kept.length === 0)
        return callback(
          new RefusedAddressError(
            hostname,
            addresses.map((a) => a.address),
          ),
          '',
        );
      if (options.all) return callback(null, kept);
      callback(null, kept[0]!.address, kept[0]!.family);
    });
  };
}
