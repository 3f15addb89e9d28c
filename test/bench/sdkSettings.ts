/**
 * What cpsync's two settings of its AWS clients take off each call (adapters/shared/awsSdk.ts): the signer's hash
 * keeping each HMAC key as a key object (`sha256: SigV4Sha256`), and the SDK's logger middleware left out. Four EKS
 * clients alike in everything else (cpsync's retry, timeouts, kept-alive pool and credentials) describe one cluster
 * of the local AWS server, in blocks taking turns in one process (the order reversed every round), so that the
 * machine's speed, which moves from minute to minute, is shared by all four; the server runs in another process.
 *
 * node test/bench/sdkSettings.ts                  (prints the table)
 * node test/bench/sdkSettings.ts child <endpoint>   (the measured process)
 */
import { fork } from 'node:child_process';
import { DescribeClusterCommand, EKSClient } from '@aws-sdk/client-eks';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import pLimit from 'p-limit';
import { SigV4Sha256, withoutSdkLogger } from '../../adapters/shared/awsSdk.ts';
import { awsAgents } from '../../adapters/shared/proxy.ts';
import { oneClusterAws } from './sdkFloor.ts';
import { medianAndRange } from './turns.ts';

const CREDENTIALS = async () => ({ accessKeyId: 'AKIAIOSFODNN7EXAMPLE', secretAccessKey: 'bench' });
const IN_FLIGHT = 16;
const BLOCK = 250;
const ROUNDS = 40;

const VARIANTS = [
  { label: "the SDK's own hash and logger middleware", hash: false, logger: true },
  { label: 'the hash keeping key objects', hash: true, logger: true },
  { label: 'the logger middleware left out', hash: false, logger: false },
  { label: 'both (as cpsync makes its clients)', hash: true, logger: false },
] as const;

function clientOf(endpoint: string, variant: (typeof VARIANTS)[number]): EKSClient {
  // cpsync's client configuration (adapters/eks/awsClients.ts) but for the two settings measured.
  const client = new EKSClient({
    region: 'us-east-1',
    endpoint,
    credentials: CREDENTIALS,
    maxAttempts: 8,
    retryMode: 'adaptive',
    requestHandler: new NodeHttpHandler({
      requestTimeout: 30_000,
      throwOnRequestTimeout: true,
      connectionTimeout: 5_000,
      ...awsAgents(),
    }),
    ...(variant.hash ? { sha256: SigV4Sha256 } : {}),
  });
  return variant.logger ? client : withoutSdkLogger(client);
}

async function child(endpoint: string): Promise<void> {
  const clients = VARIANTS.map((variant) => ({ client: clientOf(endpoint, variant), micros: 0, calls: 0 }));
  const limit = pLimit(IN_FLIGHT);
  const block = (client: EKSClient, calls: number) =>
    Promise.all(
      Array.from({ length: calls }, () =>
        limit(async () => {
          const { cluster } = await client.send(new DescribeClusterCommand({ name: 'c0' }));
          if (cluster?.name !== 'c0') throw new Error('the call did not describe c0');
        }),
      ),
    );
  for (const { client } of clients) await block(client, 300); // warm: connections, V8's optimised code
  for (let round = 0; round < ROUNDS; round++)
    for (const measured of round % 2 ? [...clients].reverse() : clients) {
      const before = process.cpuUsage();
      await block(measured.client, BLOCK);
      const used = process.cpuUsage(before);
      measured.micros += used.user + used.system;
      measured.calls += BLOCK;
    }
  process.send!(
    clients.map((c) => c.micros / 1000 / c.calls),
    () => process.exit(0),
  );
}

/** Each variant's CPU per call (ms) in each measured process. */
export async function sdkSettingsTurns(processes = 3): Promise<number[][]> {
  const aws = await oneClusterAws(2);
  const runs: number[][] = [];
  try {
    for (let i = 0; i < processes; i++)
      runs.push(
        await new Promise<number[]>((done, fail) => {
          const worker = fork(import.meta.filename, ['child', aws.endpoint]);
          worker.on('message', (message) => done(message as number[]));
          worker.on('exit', (code) =>
            code === 0 ? undefined : fail(new Error(`the measured process exited ${code}`)),
          );
        }),
      );
  } finally {
    await aws.stop();
  }
  return runs;
}

export async function reportSdkSettings(say: (line?: string) => void, processes = 3): Promise<void> {
  const runs = await sdkSettingsTurns(processes);
  say("## The AWS clients' settings: CPU per call");
  say('');
  say(
    `One DescribeCluster against the local AWS server (2 ms per call), ${IN_FLIGHT} in flight, through four EKS clients alike but for the two settings cpsync gives its AWS clients (\`adapters/shared/awsSdk.ts\`), in blocks of ${BLOCK} calls taking turns in one process, ${ROUNDS} rounds, the order reversed every round; ${processes} processes. CPU of the calling process per call: the median of the processes, the range in parentheses, and its share of the first row's.`,
  );
  say('');
  say("| client | CPU per call | against the SDK's own |");
  say('| --- | --- | --- |');
  const base = runs.map((run) => run[0]!);
  for (const [i, variant] of VARIANTS.entries()) {
    const each = runs.map((run) => run[i]!);
    const ratio = medianAndRange(
      each.map((value, r) => value / base[r]!),
      2,
      '×',
    );
    say(`| ${variant.label} | ${medianAndRange(each, 3, ' ms')} | ${ratio} |`);
  }
  say('');
}

if (import.meta.main && process.argv[2] === 'child') await child(process.argv[3]!);
else if (import.meta.main) await reportSdkSettings((line = '') => console.log(line));
