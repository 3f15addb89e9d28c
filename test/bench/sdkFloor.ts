/**
 * What one AWS SDK call costs the calling process, alone: DescribeCluster through cpsync's own client
 * factory (adaptive retry, its HTTP handler and connection pool) against the local AWS server, measured in a
 * child process so the server's CPU is not counted. It is the floor under the EKS part of CPU per cluster:
 * three such calls per EKS cluster (DescribeCluster, ListNodegroups, DescribeNodegroup).
 *
 * node test/bench/sdkFloor.ts child <endpoint> <concurrency> <calls>   (the measured process)
 */
import { fork } from 'node:child_process';
import { DescribeClusterCommand } from '@aws-sdk/client-eks';
import pLimit from 'p-limit';
import { awsClientFactory } from '../../adapters/eks/awsClients.ts';
import { startFakeAws } from '../env/fakes/awsServer.ts';

const ACCOUNT = '111111111111';

async function child(endpoint: string, concurrency: number, calls: number): Promise<void> {
  const client = awsClientFactory({
    endpoint,
    credentials: async () => ({ accessKeyId: 'AKIAIOSFODNN7EXAMPLE', secretAccessKey: 'bench' }),
  }).eks('us-east-1');
  const limit = pLimit(concurrency);
  const run = (n: number) =>
    Promise.all(
      Array.from({ length: n }, () => limit(() => client.send(new DescribeClusterCommand({ name: 'c0' })))),
    );
  await run(200); // warm: connections, the signing key, V8's optimised code
  const before = process.cpuUsage();
  await run(calls);
  const used = process.cpuUsage(before);
  process.send!({ cpuMillisPerCall: (used.user + used.system) / 1000 / calls }, () => process.exit(0));
}

/** CPU of the calling process per DescribeCluster, at each concurrency (calls in flight). */
export async function sdkCallFloor(
  concurrencies: readonly number[],
  calls = 3000,
): Promise<Map<number, number>> {
  const aws = await startFakeAws({ latencyMillis: 5, hubAccount: ACCOUNT });
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
  const results = new Map<number, number>();
  try {
    for (const concurrency of concurrencies) {
      const measured = await new Promise<number>((done, fail) => {
        const worker = fork(import.meta.filename, [
          'child',
          aws.endpoint,
          String(concurrency),
          String(calls),
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

if (process.argv[2] === 'child')
  await child(process.argv[3]!, Number(process.argv[4]), Number(process.argv[5]));
