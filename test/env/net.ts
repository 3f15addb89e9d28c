import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Server as TlsServer } from 'node:https';
import { connect, createServer, type Socket } from 'node:net';

/** Binds `port` (0: any) of `address` and lets it go again: the port bound; rejects when it cannot be bound. */
function bindOnce(port: number, address: string): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(port, address, () => {
      const bound = server.address();
      server.close(() =>
        typeof bound === 'object' && bound ? resolvePort(bound.port) : reject(new Error('no port')),
      );
    });
  });
}

/** A TCP port free on loopback right now. */
export function freePort(): Promise<number> {
  return bindOnce(0, '127.0.0.1');
}

/**
 * A loopback address of 127.0.0.0/8 other than 127.0.0.1 whose `port` is free right now, chosen at random, so
 * that two test runs on one machine, each with a server on a fixed port (a member cluster on 443), do not meet.
 */
export async function freeLoopbackAddress(port: number): Promise<string> {
  const between = (low: number, high: number) => low + Math.floor(Math.random() * (high - low + 1));
  for (let tries = 0; tries < 20; tries++) {
    const address = `127.${between(0, 255)}.${between(0, 255)}.${between(2, 254)}`;
    if (
      await bindOnce(port, address).then(
        () => true,
        () => false,
      )
    )
      return address;
  }
  throw new Error(`no loopback address has port ${port} free (tried 20 at random)`);
}

/** Resolves once `url` answers 2xx; rejects after `timeoutMs` or once `alive()` turns false. */
export async function waitForHttp(
  url: string,
  timeoutMs: number,
  alive: () => boolean = () => true,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!alive()) throw new Error(`the process serving ${url} exited`);
    try {
      const response = await fetch(url);
      if (response.ok) return;
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${url} did not answer within ${timeoutMs / 1000} s`);
}

/** Listens on loopback; resolves to a stop function that also drops kept-alive connections. */
export async function serveOnLoopback(
  server: Server | TlsServer,
  port: number,
): Promise<() => Promise<void>> {
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
}

/** A request's whole body as text. */
export async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** Answers with `body` as JSON. */
export function sendJson(
  response: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  response.writeHead(status, { 'content-type': 'application/json', ...headers });
  response.end(JSON.stringify(body));
}

/**
 * Joins `client` to a new TCP connection to `host:port`, both ways, once that is open (`opened` runs first);
 * both sockets stay in `sockets` until they close, and an error on either closes both.
 */
export function relaySocket(
  client: Socket,
  host: string,
  port: number,
  sockets: Set<Socket>,
  opened?: (upstream: Socket) => void,
): void {
  const upstream = connect(port, host, () => {
    opened?.(upstream);
    upstream.pipe(client);
    client.pipe(upstream);
  });
  for (const socket of [client, upstream]) {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {
      client.destroy();
      upstream.destroy();
    });
  }
}

/** A TCP relay on loopback to `host:port`: what passes through (TLS, HTTP/2) is untouched; it counts connections. */
export async function startTcpRelay(
  host: string,
  port: number,
): Promise<{ port: number; connections: () => number; stop(): Promise<void> }> {
  let connections = 0;
  const sockets = new Set<Socket>();
  const relay = createServer((client) => {
    connections += 1;
    relaySocket(client, host, port, sockets);
  });
  const listening = await freePort();
  await new Promise<void>((resolve) => relay.listen(listening, '127.0.0.1', resolve));
  return {
    port: listening,
    connections: () => connections,
    stop: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => relay.close(resolve));
    },
  };
}

/**
 * A loopback TCP listener that takes every connection, reads what the client sends first, and cuts the connection
 * without a byte of answer: the client cannot tell whether what it sent arrived (as with a server whose answers
 * are lost on the way), and learns it at once, with no timeout to wait for.
 */
export async function startDroppingListener(): Promise<{ address: string; stop(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    socket.once('data', () => socket.resetAndDestroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    address: `127.0.0.1:${port}`,
    stop: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** A fault a fake cloud server answers a request of `method` with, once `after` more of them have been answered. */
export interface QueuedFault<M extends string, E> {
  method: M;
  after?: number;
  /** An error answered instead (nothing changed), or (`lose`) the request done as usual and its answer lost. */
  fault: E | 'lose';
}

/**
 * The fault due for a request of `method`, taken out of `faults`. A `lose` fault is applied here: the request
 * goes on as usual, and the connection is cut where its answer would be sent (held until then).
 */
export function takeFault<M extends string, E>(
  faults: Array<QueuedFault<M, E>>,
  method: string,
  response: ServerResponse,
): E | undefined {
  const at = faults.findIndex((f) => f.method === method);
  const due = faults[at];
  if (!due) return undefined;
  if (due.after) {
    due.after -= 1;
    return undefined;
  }
  const { fault } = faults.splice(at, 1)[0]!;
  if (fault !== 'lose') return fault;
  response.end = (() => {
    response.socket?.destroy();
    return response;
  }) as typeof response.end;
  return undefined;
}
