/**
 * A function asset run as AWS Lambda runs it: the AWS Lambda Runtime Interface Emulator (built from its Go
 * module) starts the Node runtime interface client (`aws-lambda-ric` from npm, under the project's Node 24)
 * in a mount namespace of its own that gives Lambda's file system — the asset read-only as `/var/task`, the
 * runtime client as `/var/runtime`, Node as `/var/lang`, an optional layer read-only as `/opt`, and a tmpfs
 * `/tmp` as the only place to write. The function is invoked over the emulator's HTTP API.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, realpathSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { cacheDirectory, ensureLambdaRie } from './binaries.ts';
import { freePort } from './net.ts';

/** The Node runtime interface client's version. */
const LAMBDA_RIC_VERSION = '4.0.2';

/**
 * The Node that runs the tests (the project's Node 24): a directory with its `bin/node` and `include/node`.
 * npm's `node` package runs the official build it installs as `node-<platform>-<arch>` beside it; where
 * `npm ci` left only the binary, that same official build is installed once into the cache, for its headers.
 */
function nodeDirectory(log: (line: string) => void): string {
  const home = dirname(dirname(realpathSync(process.execPath)));
  const official = `node-${process.platform}-${process.arch}`;
  const cached = join(cacheDirectory(), `node-${process.versions.node}`, 'node_modules', official);
  const candidates = [home, join(home, 'node_modules', official), cached];
  const found = () =>
    candidates.find((c) => existsSync(join(c, 'include', 'node')) && existsSync(join(c, 'bin', 'node')));
  if (found()) return found()!;
  log(
    `installing ${official}@${process.versions.node} once, for the headers aws-lambda-ric compiles against`,
  );
  npmInstall(dirname(dirname(cached)), `${official}@${process.versions.node}`, process.env);
  if (!found())
    throw new Error(
      `the Node at ${process.execPath} has no headers (include/node) to build aws-lambda-ric with`,
    );
  return found()!;
}

/** `npm install <spec>` into `directory` (made whole or not at all: installed beside it, then renamed). */
function npmInstall(directory: string, spec: string, env: NodeJS.ProcessEnv): void {
  const partial = `${directory}.${process.pid}.partial`;
  rmSync(partial, { recursive: true, force: true });
  mkdirSync(partial, { recursive: true });
  writeFileSync(join(partial, 'package.json'), JSON.stringify({ name: 'cpsync-cache', private: true }));
  const result = spawnSync('npm', ['install', '--no-audit', '--no-fund', '--foreground-scripts', spec], {
    cwd: partial,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    encoding: 'utf8',
  });
  const name = spec.slice(0, spec.lastIndexOf('@'));
  if (result.status !== 0 || !existsSync(join(partial, 'node_modules', name))) {
    rmSync(partial, { recursive: true, force: true });
    if (existsSync(directory)) return; // another run installed it meanwhile
    throw new Error(
      `npm install ${spec} failed (exit ${result.status}): ${(result.stderr || result.stdout).slice(-2000)}`,
    );
  }
  rmSync(directory, { recursive: true, force: true });
  renameSync(partial, directory);
}

/**
 * The `aws-lambda-ric` package, installed once per Node version into the cache (its native part is compiled
 * with cmake and gcc on install, against the running Node's headers); returns the package's directory.
 */
function ensureLambdaRic(log: (line: string) => void = () => {}): string {
  const directory = join(cacheDirectory(), `lambda-ric-${LAMBDA_RIC_VERSION}-node${process.versions.node}`);
  const pkg = join(directory, 'node_modules', 'aws-lambda-ric');
  if (existsSync(join(pkg, 'rapid-client.node'))) return pkg;
  log(`installing aws-lambda-ric ${LAMBDA_RIC_VERSION} (once; its native part compiles in about a minute)`);
  const node = nodeDirectory(log);
  npmInstall(directory, `aws-lambda-ric@${LAMBDA_RIC_VERSION}`, {
    ...process.env,
    PATH: `${join(node, 'bin')}:${process.env.PATH ?? ''}`,
    npm_config_nodedir: node,
  });
  if (!existsSync(join(pkg, 'rapid-client.node')))
    throw new Error(
      `aws-lambda-ric ${LAMBDA_RIC_VERSION} installed without its native part (rapid-client.node)`,
    );
  return pkg;
}

export interface FunctionSpec {
  /** The function's name (AWS_LAMBDA_FUNCTION_NAME). */
  name: string;
  /** The asset directory (what `cdk synth` wrote to cdk.out), mounted read-only as /var/task. */
  asset: string;
  /** The template's handler string, e.g. `index.handler`. */
  handler: string;
  /** The template's environment, resolved. */
  environment: Record<string, string>;
  memorySize: number;
  /** Seconds. */
  timeout: number;
  /** A directory mounted read-only as /opt (a layer: certificates and the like). */
  layer?: string;
}

export interface InvokeAnswer {
  status: number;
  /** The handler's result, or the runtime's `{ errorType, errorMessage }`. */
  body: unknown;
}

export interface RunningFunction {
  name: string;
  /** The emulator's address: Lambda's Invoke API for the function named `function` (an SDK endpoint). */
  endpoint: string;
  invoke(event: unknown): Promise<InvokeAnswer>;
  /** Every line the emulator and the function printed. */
  lines: string[];
  /** The `INIT REPORT` durations (ms) the emulator printed, one per cold start. */
  initDurations(): number[];
  stop(): Promise<void>;
}

/** Mounts Lambda's file system in the new mount namespace, then runs the emulator with the runtime client. */
const NAMESPACE_SCRIPT = `
set -e
mount -t tmpfs -o size=16m,mode=755 tmpfs /var
mkdir -p /var/task /var/runtime /var/lang
mount --bind "$CPSYNC_RIE_ASSET" /var/task && mount -o remount,bind,ro /var/task
mount --bind "$CPSYNC_RIE_RIC" /var/runtime && mount -o remount,bind,ro /var/runtime
mount --bind "$CPSYNC_RIE_NODE" /var/lang && mount -o remount,bind,ro /var/lang
if [ -n "$CPSYNC_RIE_LAYER" ]; then mount --bind "$CPSYNC_RIE_LAYER" /opt && mount -o remount,bind,ro /opt; fi
mount -t tmpfs -o size=512m tmpfs /tmp
cd /var/task
rie="$CPSYNC_RIE_BINARY"; api="$CPSYNC_RIE_API"; address="$CPSYNC_RIE_ADDRESS"
unset CPSYNC_RIE_ASSET CPSYNC_RIE_RIC CPSYNC_RIE_NODE CPSYNC_RIE_LAYER CPSYNC_RIE_BINARY CPSYNC_RIE_API CPSYNC_RIE_ADDRESS
exec "$rie" --runtime-interface-emulator-address "$address" --runtime-api-address "$api" /var/lang/bin/node /var/runtime/index.mjs
`;

/** Starts one function under the emulator; the first invocation is its cold start. */
export async function startFunction(
  spec: FunctionSpec,
  log: (line: string) => void = () => {},
): Promise<RunningFunction> {
  const rie = ensureLambdaRie(log);
  const ric = ensureLambdaRic(log);
  const [port, apiPort] = [await freePort(), await freePort()];
  const lines: string[] = [];
  const child: ChildProcess = spawn(
    'unshare',
    ['-m', '--propagation', 'private', 'sh', '-c', NAMESPACE_SCRIPT],
    {
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        // What Lambda's Node runtime sets, then the function's own environment.
        PATH: '/var/lang/bin:/usr/local/bin:/usr/bin:/bin',
        LANG: 'en_US.UTF-8',
        TZ: ':UTC',
        LAMBDA_TASK_ROOT: '/var/task',
        LAMBDA_RUNTIME_DIR: '/var/runtime',
        AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs24.x',
        AWS_LAMBDA_FUNCTION_NAME: spec.name,
        AWS_LAMBDA_FUNCTION_VERSION: '$LATEST',
        AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(spec.memorySize),
        AWS_LAMBDA_FUNCTION_TIMEOUT: String(spec.timeout),
        AWS_LAMBDA_LOG_GROUP_NAME: `/aws/lambda/${spec.name}`,
        AWS_LAMBDA_LOG_STREAM_NAME: '2026/11/24/[$LATEST]local',
        _HANDLER: spec.handler,
        ...spec.environment,
        CPSYNC_RIE_ASSET: spec.asset,
        CPSYNC_RIE_RIC: ric,
        CPSYNC_RIE_NODE: nodeDirectory(log),
        CPSYNC_RIE_LAYER: spec.layer ?? '',
        CPSYNC_RIE_BINARY: rie,
        CPSYNC_RIE_API: `127.0.0.1:${apiPort}`,
        CPSYNC_RIE_ADDRESS: `127.0.0.1:${port}`,
      },
    },
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  for (const stream of [child.stdout!, child.stderr!]) {
    let rest = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      const parts = (rest + chunk).split('\n');
      rest = parts.pop() ?? '';
      lines.push(...parts);
    });
  }
  const url = `http://127.0.0.1:${port}/2015-03-31/functions/function/invocations`;
  // The emulator answers once it listens; the runtime starts with the first invocation.
  const deadline = Date.now() + 15_000;
  for (;;) {
    try {
      await fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(1000) });
      break;
    } catch {
      if (child.exitCode !== null || Date.now() > deadline)
        throw new Error(`the emulator for ${spec.name} did not start:\n${lines.join('\n')}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  return {
    name: spec.name,
    endpoint: `http://127.0.0.1:${port}`,
    lines,
    async invoke(event) {
      const answer = await fetch(url, {
        method: 'POST',
        body: JSON.stringify(event),
        signal: AbortSignal.timeout((spec.timeout + 10) * 1000),
      });
      const text = await answer.text();
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {
        // not JSON: kept as text
      }
      return { status: answer.status, body };
    },
    initDurations() {
      return lines.flatMap((line) => {
        const match = /INIT REPORT\(durationMs: ([\d.]+)\)/.exec(line);
        return match ? [Number(match[1])] : [];
      });
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        try {
          process.kill(-child.pid!, 'SIGTERM');
        } catch {
          // gone already
        }
        const timer = setTimeout(() => {
          try {
            process.kill(-child.pid!, 'SIGKILL');
          } catch {
            // gone already
          }
        }, 3000);
        await exited;
        clearTimeout(timer);
      }
    },
  };
}

/**
 * Init Durations of `runs` cold starts of `spec`, as the emulator reports them (`INIT REPORT`): each a new
 * emulator and runtime, invoked with `event` and stopped once its initialisation is reported (what the
 * invocation then does is not waited for).
 */
export async function coldStarts(
  spec: FunctionSpec,
  runs: number,
  event: unknown = {},
  log: (line: string) => void = () => {},
): Promise<number[]> {
  const durations: number[] = [];
  for (let run = 0; run < runs; run++) {
    const fn = await startFunction(spec, log);
    try {
      void fn.invoke(event).catch(() => undefined);
      const deadline = Date.now() + 30_000;
      while (fn.initDurations().length === 0) {
        if (Date.now() > deadline)
          throw new Error(`${spec.name} reported no INIT REPORT in 30 s:\n${fn.lines.join('\n')}`);
        await new Promise((r) => setTimeout(r, 10));
      }
      durations.push(fn.initDurations()[0]!);
    } finally {
      await fn.stop();
    }
  }
  return durations;
}
