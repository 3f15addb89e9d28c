/**
 * The members' Kubernetes clients speak HTTP/1.1, even to a server that offers HTTP/2 (as every kube-apiserver
 * does): a stopped run cuts member requests short, and Node's HTTP/2 session then aborted the whole process under
 * load (std::bad_alloc). The oracle is the server: the HTTP version of each request it received.
 */
import assert from 'node:assert/strict';
import { createSecureServer, type Http2SecureServer } from 'node:http2';
import { after, before, describe, it } from 'node:test';
import { CoreV1Api } from '@kubernetes/client-node';
import { memberConnection } from '../../../../adapters/member/connection.ts';
import type { ClusterProfile } from '../../../../core/domain/model/clusterProfile.ts';
import { makeLocalCertificate } from '../../../env/tlsCert.ts';

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
    url = `https://localhost:${(server.address() as { port: number }).port}`;
  });
  after(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('a member’s requests, through its connection', async () => {
    const profile = {
      metadata: { namespace: 'inventory', name: 'member', labels: { 'cpsync.io/provider': 'gke' } },
      status: {
        accessProviders: [
          {
            name: 'gke',
            cluster: {
              server: url,
              'certificate-authority-data': caData,
              extensions: [
                {
                  name: 'client.authentication.k8s.io/exec',
                  extension: {
                    provider: 'gke',
                    projectId: 'acme',
                    location: 'europe-west1',
                    clusterName: 'member',
                  },
                },
              ],
            },
          },
        ],
      },
    } as unknown as ClusterProfile;
    const { config, options } = await memberConnection(
      profile,
      {
        accessProviderNames: { eks: 'eks', gke: 'gke', aks: 'aks' },
        tokens: { gke: async () => ({ token: 'member-token', expiresAt: new Date(Date.now() + 60_000) }) },
      },
      new AbortController().signal,
    );
    versions.length = 0;
    const api = config.makeApiClient(CoreV1Api);
    for (let i = 0; i < 2; i++) await api.readNamespace({ name: 'kube-system' }, options);
    assert.deepEqual(versions, ['1.1', '1.1']);
  });
});
