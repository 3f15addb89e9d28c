/**
 * A forward proxy on loopback, as a corporate network puts in front of the clouds: it tunnels CONNECT
 * requests (what HTTPS_PROXY clients send, for https and http targets alike) and forwards absolute-URI
 * requests (what an HTTP_PROXY client sends for an http target), and records every target it was asked for.
 */
import { createServer, request as httpRequest } from 'node:http';
import type { Socket } from 'node:net';
import { freePort, relaySocket, serveOnLoopback } from './net.ts';

export interface ConnectProxy {
  endpoint: string;
  /** Each `host:port` a client asked the proxy to reach, in order. */
  targets: string[];
  stop(): Promise<void>;
}

export async function startConnectProxy(): Promise<ConnectProxy> {
  const targets: string[] = [];
  const tunnels = new Set<Socket>();
  const server = createServer((request, response) => {
    const url = new URL(request.url ?? '/');
    targets.push(url.host);
    const upstream = httpRequest(url, { method: request.method, headers: request.headers }, (answer) => {
      response.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(response);
    });
    upstream.on('error', () => response.writeHead(502).end());
    request.pipe(upstream);
  });
  server.on('connect', (request, client: Socket, head: Buffer) => {
    const target = request.url ?? '';
    targets.push(target);
    const [host, port] = [
      target.slice(0, target.lastIndexOf(':')),
      Number(target.slice(target.lastIndexOf(':') + 1)),
    ];
    relaySocket(client, host, port, tunnels, (upstream) => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0) upstream.write(head);
    });
  });
  const port = await freePort();
  const stop = await serveOnLoopback(server, port);
  return {
    endpoint: `http://127.0.0.1:${port}`,
    targets,
    async stop() {
      for (const socket of tunnels) socket.destroy();
      await stop();
    },
  };
}
