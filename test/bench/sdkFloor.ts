/**
 * What one AWS SDK call costs the calling process, alone: DescribeCluster through cpsync's own client
 * factory (adaptive retry, its HTTP handler and connection pool) against the local AWS server, measured in a
 * child process so the server's CPU is not counted. It is the floor under the EKS part of CPU per cluster:
 * three such calls per EKS cluster (DescribeCluster, ListNodegroups, DescribeNodegroup).
 *
 * Beside it, what the same request costs beneath the SDK: signed with the SDK's own SigV4 signer and hash, sent
 * over a kept-alive node:http agent, its JSON parsed, nothing else (no middleware, retries, endpoint rules or
 * schema). cpsync does not send requests that way; the figure says what the SDK's request path costs on top.
 *
 * Between the two (`parts`): the SDK's own parts called in turn without its middleware stack — the client's
 * protocol (serialisation, the answer's schema and error shapes), its SigV4 signer, HTTP handler and retry
 * strategy's bookkeeping: what a leaner path that still leaves those to the SDK could take off.
 *
 * node test/bench/sdkFloor.ts child <endpoint> <concurrency> <calls> [sdk|signed|parts]   (the measured process)
 */
import { fork } from 'node:child_process';
import { Agent, request } from 'node:http';
import { DescribeCluster$, DescribeClusterCommand, EKSClient } from '@aws-sdk/client-eks';
import { operation } from '@smithy/core/schema';
import { HttpRequest } from '@smithy/protocol-http';
import { SignatureV4 } from '@smithy/signature-v4';
import pLimit from 'p-limit';
import { awsClientFactory } from '../../adapters/eks/awsClients.ts';
import { startFakeAws, type FakeAws } from '../env/fakes/awsServer.ts';

const ACCOUNT = '111111111111';

const CREDENTIALS = async () => ({ accessKeyId: 'AKIAIOSFODNN7EXAMPLE', secretAccessKey: 'bench' });

/** One DescribeCluster of `c0`, through the SDK's client as cpsync makes it. */
function throughSdk(endpoint: string): () => Promise<unknown> {
  const client = awsClientFactory({ endpoint, credentials: CREDENTIALS }).eks('us-east-1');
  return () => client.send(new DescribeClusterCommand({ name: 'c0' })).then((r) => r.cluster);
}

/** A SigV4 signer for EKS in us-east-1 with the bench's credentials and `sha256`, the hash the SDK signs with. */
function eksSigner(sha256: ConstructorParameters<typeof SignatureV4>[0]['sha256']): SignatureV4 {
  return new SignatureV4({ service: 'eks', region: 'us-east-1', sha256, credentials: CREDENTIALS });
}

/** The same request beneath the SDK: signed by its SigV4 signer, sent on a kept-alive agent, parsed. */
function signedOnly(endpoint: string): () => Promise<unknown> {
  const url = new URL(endpoint);
  // The hash the SDK's EKS client signs with.
  const signer = eksSigner(new EKSClient({ region: 'us-east-1' }).config.sha256);
  const agent = new Agent({ keepAlive: true });
  return async () => {
    const signed = await signer.sign(
      new HttpRequest({
        method: 'GET',
        protocol: url.protocol,
        hostname: url.hostname,
        port: Number(url.port),
        path: '/clusters/c0',
        headers: { host: url.host },
      }),
    );
    const text = await new Promise<string>((done, fail) => {
      const sent = request(
        {
          agent,
          host: url.hostname,
          port: url.port,
          path: signed.path,
          method: 'GET',
          headers: signed.headers,
        },
        (response) => {
          let body = '';
          response.setEncoding('utf8');
          response.on('data', (chunk: string) => (body += chunk));
          response.on('end', () => done(body));
          response.on('error', fail);
        },
      );
      sent.on('error', fail);
      sent.end();
    });
    return (JSON.parse(text) as { cluster: unknown }).cluster;
  };
}

/** The SDK's parts without its middleware stack: protocol, signer, handler and retry bookkeeping, in turn. */
function sdkParts(endpoint: string): () => Promise<unknown> {
  const client = awsClientFactory({ endpoint, credentials: CREDENTIALS }).eks('us-east-1');
  const config = client.config as unknown as {
    protocol: {
      serializeRequest(op: unknown, input: object, context: object): Promise<HttpRequest>;
      deserializeResponse(op: unknown, context: object, response: unknown): Promise<{ cluster?: unknown }>;
    };
    requestHandler: { handle(request: HttpRequest): Promise<{ response: unknown }> };
    retryStrategy(): Promise<{
      acquireInitialRetryToken(scope: string): Promise<unknown>;
      recordSuccess(token: unknown): void;
    }>;
    sha256: ConstructorParameters<typeof SignatureV4>[0]['sha256'];
  };
  const [, namespace, name, traits, input, output] = DescribeCluster$;
  const describe = operation(namespace, name, traits, input, output);
  const signer = eksSigner(config.sha256);
  return async () => {
    const retry = await config.retryStrategy();
    const token = await retry.acquireInitialRetryToken('');
    const request = await config.protocol.serializeRequest(describe, { name: 'c0' }, config);
    const { response } = await config.requestHandler.handle((await signer.sign(request)) as HttpRequest);
    const answer = await config.protocol.deserializeResponse(describe, config, response);
    retry.recordSuccess(token);
    return answer.cluster;
  };
}

async function child(endpoint: string, concurrency: number, calls: number, path: string): Promise<void> {
  const call =
    path === 'signed' ? signedOnly(endpoint) : path === 'parts' ? sdkParts(endpoint) : throughSdk(endpoint);
  const limit = pLimit(concurrency);
  const run = (n: number) => Promise.all(Array.from({ length: n }, () => limit(call)));
  const [first] = await run(1);
  if ((first as { name?: string } | undefined)?.name !== 'c0')
    throw new Error('the call did not describe c0');
  await run(200); // warm: connections, the signing key, V8's optimised code
  const before = process.cpuUsage();
  await run(calls);
  const used = process.cpuUsage(before);
  process.send!({ cpuMillisPerCall: (used.user + used.system) / 1000 / calls }, () => process.exit(0));
}

/** The local AWS server answering `latencyMillis` late, with one EKS cluster, `c0`, in us-east-1. */
export async function oneClusterAws(latencyMillis: number): Promise<FakeAws> {
  const aws = await startFakeAws({ latencyMillis, hubAccount: ACCOUNT });
  aws.clusters.set(`${ACCOUNT}/us-east-1`, [
    {
      cluster: {
        name: 'c0',
        arn: `arn:aws:eks:us-east-1:${ACCOUNT}:cluster/c0`,
        status: 'ACTIVE',
        version: '1.31',
        endpoint: 'https://c0.example',
        certificateAuthority: { data: 'A'.repeat(1468) },
      },
      nodegroups: [],
    },
  ] as never);
  return aws;
}

/**
 * CPU of the calling process per DescribeCluster, at each concurrency (calls in flight): through the SDK,
 * (`signed`) signed and sent beneath it, or (`parts`) through the SDK's parts without its middleware stack.
 */
export async function sdkCallFloor(
  concurrencies: readonly number[],
  calls = 3000,
  path: 'sdk' | 'signed' | 'parts' = 'sdk',
): Promise<Map<number, number>> {
  const aws = await oneClusterAws(5);
  const results = new Map<number, number>();
  try {
    for (const concurrency of concurrencies) {
      const measured = await new Promise<number>((done, fail) => {
        const worker = fork(import.meta.filename, [
          'child',
          aws.endpoint,
          String(concurrency),
          String(calls),
          path,
        ]);
        worker.on('message', (message) => done((message as { cpuMillisPerCall: number }).cpuMillisPerCall));
        worker.on('exit', (code) =>
          code === 0 ? undefined : fail(new Error(`the measured process exited ${code}`)),
        );
      });
      results.set(concurrency, measured);
    }
  } finally {
    await aws.stop();
  }
  return results;
}

if (import.meta.main && process.argv[2] === 'child')
  await child(process.argv[3]!, Number(process.argv[4]), Number(process.argv[5]), process.argv[6] ?? 'sdk');
