/**
 * The proxy the environment names, for the agents cpsync gives the AWS clients: requests go through it
 * (a scheme-less value read as curl reads it), NO_PROXY exempts a host, no variable means a direct
 * connection, and a value that is not an http(s) proxy URL is refused by name. Judged by a real proxy
 * on loopback and the server behind it.
 */
import assert from 'node:assert/strict';
import { Agent, createServer, get } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { proxyAgentOptions } from '../../../../adapters/shared/proxy.ts';
import { startConnectProxy, type ConnectProxy } from '../../../env/connectProxy.ts';
import { freePort, serveOnLoopback } from '../../../env/net.ts';

describe('the proxy the environment names', () => {
  let proxy: ConnectProxy;
  let target: string;
  let stopTarget: () => Promise<void>;

  before(async () => {
    proxy = await startConnectProxy();
    const port = await freePort();
    stopTarget = await serveOnLoopback(
      createServer((_request, response) => response.end('answered')),
      port,
    );
    target = `127.0.0.1:${port}`;
  });
  after(async () => {
    await proxy.stop();
    await stopTarget();
  });

  const fetchThrough = (env: NodeJS.ProcessEnv) =>
    new Promise<string>((resolve, reject) => {
      const agent = new Agent(proxyAgentOptions(env));
      get(`http://${target}/`, { agent }, (response) => {
        let body = '';
        response.on('data', (chunk: Buffer) => (body += chunk.toString()));
        response.on('end', () => resolve(body));
      }).on('error', reject);
    });

  it('sends requests through HTTP_PROXY, a value without a scheme read as http://', async () => {
    proxy.targets.length = 0;
    assert.equal(await fetchThrough({ HTTP_PROXY: proxy.endpoint.replace('http://', '') }), 'answered');
    assert.deepEqual(proxy.targets, [target]);
  });

  it('connects directly to a host NO_PROXY names, and when no proxy is named', async () => {
    proxy.targets.length = 0;
    assert.equal(await fetchThrough({ HTTP_PROXY: proxy.endpoint, NO_PROXY: target }), 'answered');
    assert.equal(await fetchThrough({}), 'answered');
    assert.deepEqual(proxy.targets, []);
    assert.deepEqual(proxyAgentOptions({ HTTPS_PROXY: ' ' }), {});
  });

  it('refuses a value that is not an http(s) proxy URL, naming the variable', () => {
    assert.throws(
      () => proxyAgentOptions({ HTTPS_PROXY: 'http://proxy corp:80' }),
      /environment variable HTTPS_PROXY is not a proxy URL: "http:\/\/proxy corp:80"/,
    );
    assert.throws(
      () => proxyAgentOptions({ HTTP_PROXY: 'http://cpsync:s3cret@proxy corp:80' }),
      (error: Error) =>
        error.message === 'environment variable HTTP_PROXY is not a proxy URL: "http://***@proxy corp:80"',
      'the user and password are not repeated',
    );
    assert.throws(
      () => proxyAgentOptions({ https_proxy: 'socks5://127.0.0.1:1080' }),
      /environment variable https_proxy names a socks5 proxy; only http:\/\/ and https:\/\/ proxies are supported/,
    );
  });
});
