/**
 * The members' Kubernetes clients speak HTTP/1.1, even to a server that offers HTTP/2 (as every kube-apiserver
 * does): a stopped run cuts member requests short, and Node's HTTP/2 session then aborted the whole process under
 * load (std::bad_alloc). The oracle is the server: the HTTP version of each request it received. A member whose
 * profile names no CA (the system's trust) is read by a process that trusts the server's certificate as a system
 * one (NODE_EXTRA_CA_CERTS).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createSecureServer, type Http2SecureServer } from 'node:http2';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { CoreV1Api } from '@kubernetes/client-node';
import { memberConnection } from '../../../../adapters/member/connection.ts';
import { makeLocalCertificate } from '../../../env/tlsCert.ts';
import { gkeMemberProfile } from '../../../support/memberProfile.ts';
import { temporaryDirectory } from '../../../support/tmp.ts';

/** Reads the member's kube-system namespace twice, through its connection. */
async function readTwice(server: string, caData: string | undefined): Promise<void> {
  const { config, options } = await memberConnection(
    gkeMemberProfile(server, caData),
    {
      accessProviderNames: { eks: 'eks', gke: 'gke', aks: 'aks' },
      tokens: { gke: async () => ({ token: 'member-token', expiresAt: new Date(Date.now() + 60_000) }) },
      // The member is a local server: a cloud the configuration would reach on this machine.
      localClouds: ['gke'],
    },
    new AbortController().signal,
  );
  const api = config.makeApiClient(CoreV1Api);
  for (let i = 0; i < 2; i++) await api.readNamespace({ name: 'kube-system' }, options);
}

// The process that reads a member with no CA of its own (see the last test).
if (process.env.CPSYNC_HTTP1_READ) {
  await readTwice(process.env.CPSYNC_HTTP1_READ, undefined);
  process.exit(0);
}

describe('Kubernetes clients over HTTP/1.1', () => {
  let server: Http2SecureServer;
  let url: string;
  let caData: string;
  const versions: string[] = [];

  before(async () => {
    const { cert, key } = makeLocalCertificate();
    caData = Buffer.from(cert).toString('base64');
    // Offers h2 first in ALPN, and HTTP/1.1 to clients that ask for nothing else.
    server = createSecureServer({ cert, key, allowHTTP1: true }, (request, response) => {
      versions.push(request.httpVersion);
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(
        JSON.stringify({ kind: 'Namespace', apiVersion: 'v1', metadata: { name: 'kube-system' } }),
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    // As cpsync writes a local member's server: its address (the certificate names it too).
    url = `https://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  after(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('a member’s requests, through its connection', async () => {
    versions.length = 0;
    await readTwice(url, caData);
    assert.deepEqual(versions, ['1.1', '1.1']);
  });

  it('a member’s requests when its profile names no CA (the system’s trust)', async () => {
    const trusted = join(temporaryDirectory('cpsync-http1-'), 'ca.pem');
    writeFileSync(trusted, Buffer.from(caData, 'base64'));
    versions.length = 0;
    await promisify(execFile)(process.execPath, [import.meta.filename], {
      env: { ...process.env, CPSYNC_HTTP1_READ: url, NODE_EXTRA_CA_CERTS: trusted },
    });
    assert.deepEqual(versions, ['1.1', '1.1']);
  });
});
