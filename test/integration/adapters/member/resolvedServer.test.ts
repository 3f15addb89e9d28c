/**
 * cpsync's own connections to a member reach only addresses a server may be at, whatever its server's name
 * resolves to: a name is judged without a lookup when a profile is written, so what it resolves to is judged at
 * every connection. The names here resolve through a stand-in resolver to loopback spellings; the oracle is the
 * member's listener, which counts the connections it accepted.
 */
import assert from 'node:assert/strict';
import { createServer as createHttpServer } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { LookupFunction } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { CoreV1Api } from '@kubernetes/client-node';
import fc from 'fast-check';
import { memberConnection } from '../../../../adapters/member/connection.ts';
import { RefusedAddressError } from '../../../../adapters/shared/guardedLookup.ts';
import { messageOf } from '../../../../core/domain/errors.ts';
import { makeLocalCertificate, trustCertificate } from '../../../env/tlsCert.ts';
import { gkeMemberProfile } from '../../../support/memberProfile.ts';

const NAME = 'member.cpsync.test';

/** A resolver that answers `NAME` (asked fully qualified, as the connections ask) with `addresses`, and nothing else. */
function resolverOf(addresses: readonly string[]): LookupFunction {
  return ((hostname: string, _options: object, callback: (...args: unknown[]) => void) => {
    if (hostname !== `${NAME}.`)
      callback(Object.assign(new Error(`ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), '');
    else
      callback(
        null,
        addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })),
      );
  }) as unknown as LookupFunction;
}

/** An error and every error it was caused by. */
function causes(error: unknown): unknown[] {
  const chain: unknown[] = [];
  const walk = (e: unknown) => {
    if (!(e instanceof Error) || chain.includes(e)) return;
    chain.push(e);
    walk(e.cause);
    if (e instanceof AggregateError) e.errors.forEach(walk);
  };
  walk(error);
  return chain;
}

describe('member connections: what a server’s name resolves to', () => {
  let server: Server;
  let port: number;
  let caData: string;
  let accepted = 0;
  /** Where the member sends its clients instead of answering (a redirect), when set. */
  let redirectTo: string | undefined;
  let redirectStatus = 302;
  /** Another local server, somewhere a member might send cpsync: the requests it received. */
  const elsewhere = createHttpServer((request, response) => {
    reachedElsewhere.push(request.url ?? '');
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(JSON.stringify({ kind: 'Namespace', apiVersion: 'v1', metadata: { name: 'elsewhere' } }));
  });
  const reachedElsewhere: string[] = [];
  let connectedElsewhere = 0;
  elsewhere.on('connection', () => connectedElsewhere++);

  before(async () => {
    const { cert, key } = makeLocalCertificate(NAME, [NAME]);
    caData = Buffer.from(cert).toString('base64');
    // For the member whose profile names no CA: the system's trust holds its certificate.
    trustCertificate(cert);
    await new Promise<void>((resolve) => elsewhere.listen(0, '127.0.0.1', resolve));
    server = createServer({ cert, key }, (_request, response) => {
      if (redirectTo) {
        response.writeHead(redirectStatus, { location: redirectTo });
        response.end();
        return;
      }
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(
        JSON.stringify({ kind: 'Namespace', apiVersion: 'v1', metadata: { name: 'kube-system' } }),
      );
    });
    server.on('connection', () => accepted++);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as { port: number }).port;
  });
  after(async () => {
    for (const each of [server, elsewhere]) {
      each.closeAllConnections();
      await new Promise<void>((resolve) => each.close(() => resolve()));
    }
  });

  /** Reads the member's kube-system namespace through a connection whose server's name resolves to `addresses`. */
  async function read(
    addresses: readonly string[],
    local: boolean,
    ca: 'the profile’s' | 'the system’s' = 'the profile’s',
  ): Promise<string | undefined> {
    const { config, options } = await memberConnection(
      gkeMemberProfile(`https://${NAME}:${port}`, ca === 'the profile’s' ? caData : undefined),
      {
        accessProviderNames: { eks: 'eks', gke: 'gke', aks: 'aks' },
        tokens: { gke: async () => ({ token: 'member-token', expiresAt: new Date(Date.now() + 60_000) }) },
        localClouds: local ? ['gke'] : [],
        resolve: resolverOf(addresses),
      },
      new AbortController().signal,
    );
    const namespace = await config.makeApiClient(CoreV1Api).readNamespace({ name: 'kube-system' }, options);
    return namespace.metadata?.name;
  }

  it('reaches a member whose name resolves to a loopback address only when its cloud is on this machine', async () => {
    accepted = 0;
    assert.equal(await read(['127.0.0.1'], true), 'kube-system');
    assert.ok(accepted >= 1, 'the member accepted the connection');
    accepted = 0;
    const error = await read(['127.0.0.1'], false).then(
      () => assert.fail('a cloud elsewhere reached a loopback address'),
      (e: unknown) => e,
    );
    const refused = causes(error).find((e) => e instanceof RefusedAddressError);
    assert.ok(refused, `refused for its address: ${String(error)}`);
    assert.match(refused.message, /"member\.cpsync\.test" resolves to 127\.0\.0\.1/);
    assert.equal(accepted, 0, 'nothing connected');
    // What the member probe, the grants and the doctor say of the failure.
    assert.match(
      messageOf(error),
      /"member\.cpsync\.test" resolves to 127\.0\.0\.1, an address no member's server is at/,
    );
  });

  it('judges the answer as well when the profile names no CA (the system’s trust)', async () => {
    accepted = 0;
    assert.equal(await read(['127.0.0.1'], true, 'the system’s'), 'kube-system');
    assert.ok(accepted >= 1, 'the member accepted the connection');
    accepted = 0;
    const error = await read(['127.0.0.1'], false, 'the system’s').then(
      () => assert.fail('a cloud elsewhere reached a loopback address'),
      (e: unknown) => e,
    );
    assert.ok(
      causes(error).some((e) => e instanceof RefusedAddressError),
      String(error),
    );
    assert.equal(accepted, 0, 'nothing connected');
  });

  it('follows no redirect away from the member’s server, to an address written as such (never looked up)', async () => {
    const target = `http://127.0.0.1:${(elsewhere.address() as { port: number }).port}/latest/meta-data/`;
    const other = (elsewhere.address() as { port: number }).port;
    // Its address over HTTP and HTTPS, and its port under the member's own name (which resolves here).
    for (const location of [target, target.replace('http:', 'https:'), `https://${NAME}:${other}/api`]) {
      redirectTo = location;
      reachedElsewhere.length = 0;
      connectedElsewhere = 0;
      try {
        const error = await read(['127.0.0.1'], true).then(
          (name) => assert.fail(`followed the member's redirect to ${location}: read ${name}`),
          (e: unknown) => e,
        );
        assert.deepEqual(reachedElsewhere, [], `nothing reached ${location}`);
        assert.equal(connectedElsewhere, 0, `nothing connected to ${location}`);
        assert.match(messageOf(error), /sent cpsync to .*: not followed, only the server is asked/);
      } finally {
        redirectTo = undefined;
      }
    }
  });

  it('follows no redirect away from the member’s server, whatever its status and however its target is spelled', async () => {
    const other = (elsewhere.address() as { port: number }).port;
    const locations = [
      `//127.0.0.1:${other}/x`,
      `https://${NAME}@127.0.0.1:${other}/`,
      `http://[::ffff:127.0.0.1]:${other}/`,
      `http://2130706433:${other}/`,
      `http://0x7f000001:${other}/`,
      `http://localhost:${other}/`,
      `https://${NAME.toUpperCase()}:${other}/`,
      `http://${NAME}:${other}/`,
      `https://${NAME}.:${other}/`,
    ];
    for (const status of [301, 303, 307, 308])
      for (const location of locations) {
        redirectStatus = status;
        redirectTo = location;
        reachedElsewhere.length = 0;
        connectedElsewhere = 0;
        try {
          await read(['127.0.0.1'], true).then(
            (name) => assert.fail(`followed the member's ${status} to ${location}: read ${name}`),
            () => undefined,
          );
          assert.deepEqual(reachedElsewhere, [], `${status} ${location}: nothing reached`);
          assert.equal(connectedElsewhere, 0, `${status} ${location}: nothing connected`);
        } finally {
          redirectTo = undefined;
          redirectStatus = 302;
        }
      }
  });

  it('connects nowhere, in any spelling of a loopback answer, for a cloud elsewhere (property)', async () => {
    const loopbackSpelling = fc.constantFrom(
      '127.0.0.1',
      '::ffff:127.0.0.1',
      '0:0:0:0:0:ffff:7f00:1',
      '::ffff:7f00:1',
      '::1',
      '127.1.2.3',
    );
    await fc.assert(
      fc.asyncProperty(fc.array(loopbackSpelling, { minLength: 1, maxLength: 3 }), async (addresses) => {
        accepted = 0;
        const error = await read(addresses, false).then(
          () => undefined,
          (e: unknown) => e,
        );
        assert.ok(
          causes(error).some((e) => e instanceof RefusedAddressError),
          String(error),
        );
        assert.equal(accepted, 0, 'nothing connected');
      }),
      { numRuns: 25 },
    );
  });
});
