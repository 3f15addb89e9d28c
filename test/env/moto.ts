/** moto server on loopback: the AWS APIs (EKS, STS, Organizations, EC2, EventBridge, SQS) for the tests. */
import { spawn, type ChildProcess } from 'node:child_process';
import { freePort, waitForHttp } from './net.ts';
import { venvBin } from './python.ts';

export interface MotoServer {
  endpoint: string;
  /** Forgets every resource (moto's reset API): each test file starts from an empty AWS. */
  reset(): Promise<void>;
  stop(): Promise<void>;
}

export async function startMoto(log: (line: string) => void = () => {}): Promise<MotoServer> {
  const bin = venvBin('moto_server', log);
  const port = await freePort();
  const child: ChildProcess = spawn(bin, ['-H', '127.0.0.1', '-p', String(port)], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000)));
  const endpoint = `http://127.0.0.1:${port}`;
  try {
    await waitForHttp(`${endpoint}/moto-api/`, 60_000, () => child.exitCode === null);
  } catch (error) {
    child.kill('SIGKILL');
    throw new Error(`moto server did not start: ${(error as Error).message}\n${stderr}`, { cause: error });
  }
  return {
    endpoint,
    async reset() {
      const response = await fetch(`${endpoint}/moto-api/reset`, { method: 'POST' });
      if (!response.ok) throw new Error(`moto reset failed: ${response.status}`);
    },
    async stop() {
      if (child.exitCode !== null) return;
      child.kill('SIGTERM');
      await new Promise((resolve) => {
        const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
        child.once('exit', () => resolve(clearTimeout(timer)));
      });
    },
  };
}
