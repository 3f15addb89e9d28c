/**
 * `npm run bench`: cpsync's speed figures, printed and written to BENCHMARKS.md. Benchmarks report;
 * they do not pass or fail. Parts: cold start (bundle size and module initialisation of each function),
 * event latency (CloudTrail CreateCluster → profile applied and event published), steady state of a
 * small estate, and the full sync of a 10,000-cluster estate into the real hub and into the file hub,
 * each re-run unchanged (`scale.ts`). With options (`--file-hub`, `--scale`, `--only`, …) the figures
 * go to `.cache/bench/BENCHMARKS.partial.md` instead, so BENCHMARKS.md always holds a whole default run.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { ALL_PROVIDERS } from '../../adapters/compose/providers/index.ts';
import { parseConfig } from '../../adapters/compose/config.ts';
import { runSync } from '../../core/sync/engine.ts';
import type { ClusterSource } from '../../core/sync/ports.ts';
import { makeEksEventHandler } from '../../functions/eksEvents.ts';
import { compose } from '../../adapters/compose/compose.ts';
import { startEmulators, EKS_ACCOUNT } from '../env/emulators.ts';
import { startHub, stopHub } from '../env/hub.ts';
import { createEksClusters, HUB_CREDENTIALS } from '../support/aws.ts';
import { drainQueue } from '../support/events.ts';
import { cloudTrailEvent, lambdaContext } from '../support/lambda.ts';
import { esbuildArgs } from '../../infra/bundling.ts';
import { parseArgs } from 'node:util';
import { fullSyncAtScale } from './scale.ts';

const ROOT = resolve(import.meta.dirname, '../..');
const FUNCTIONS = ['scopeEnumerator', 'scopeWorker', 'eksEvents', 'webhook'];
const EVENTS = Number(process.env.CPSYNC_BENCH_EVENTS ?? 200);
const lines: string[] = [];
const say = (line = '') => {
  console.log(line);
  lines.push(line);
};
const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
};
const ms = (value: number) => `${value.toFixed(1)} ms`;

function coldStart(): void {
  say('## Cold start');
  say('');
  say('| function | bundle (minified) | module initialisation (median of 5) |');
  say('| --- | --- | --- |');
  const directory = join(ROOT, '.cache', 'bench');
  mkdirSync(directory, { recursive: true });
  for (const name of FUNCTIONS) {
    const out = join(directory, `${name}.mjs`);
    execFileSync(
      join(ROOT, 'node_modules/.bin/esbuild'),
      esbuildArgs(join(ROOT, 'functions', `${name}.ts`), out),
      { cwd: ROOT },
    );
    const times: number[] = [];
    for (let i = 0; i < 5; i++) {
      const result = spawnSync(
        process.execPath,
        [
          '--input-type=module',
          '-e',
          `const t = performance.now(); await import(${JSON.stringify(out)}); console.log(performance.now() - t);`,
        ],
        { encoding: 'utf8', cwd: ROOT, env: { ...process.env, POWERTOOLS_METRICS_DISABLED: 'true' } },
      );
      const value = Number(result.stdout.trim().split('\n').at(-1));
      if (result.status !== 0 || !Number.isFinite(value) || result.stdout.trim() === '')
        throw new Error(`${name} did not load: ${result.stderr.slice(-500)}`);
      times.push(value);
    }
    say(`| ${name} | ${(statSync(out).size / 1024 / 1024).toFixed(2)} MB | ${ms(percentile(times, 50))} |`);
  }
  say('');
  libraryFloors(directory);
}

/**
 * What the libraries the functions must use weigh on their own: the least program that uses each, bundled
 * exactly as the functions are. A function that writes to the hub carries at least the first; one that
 * syncs GKE clusters carries the second as well.
 */
const FLOORS: Record<string, string> = {
  '`@kubernetes/client-node`: a KubeConfig and the CustomObjectsApi (every hub writer)': `
    import { CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromDefault();
    export const api = kubeConfig.makeApiClient(CustomObjectsApi);`,
  '`@google-cloud/container`: a ClusterManagerClient over REST (GKE)': `
    import { ClusterManagerClient } from '@google-cloud/container';
    export const client = new ClusterManagerClient({ fallback: true });`,
  '`@azure/arm-containerservice` with an `@azure/identity` credential (AKS)': `
    import { ContainerServiceClient } from '@azure/arm-containerservice';
    import { DefaultAzureCredential } from '@azure/identity';
    export const client = new ContainerServiceClient(new DefaultAzureCredential(), 'subscription');`,
  '`zod`: one object schema (configuration and event parsing)': `
    import { z } from 'zod';
    export const parse = (value) => z.object({ name: z.string() }).parse(value);`,
};

function libraryFloors(directory: string): void {
  say('The required libraries alone, each in the least program that uses it, bundled the same way:');
  say('');
  say('| library | bundle (minified) |');
  say('| --- | --- |');
  Object.entries(FLOORS).forEach(([library, source], index) => {
    const entry = join(directory, `floor-${index}.mjs`);
    const out = join(directory, `floor-${index}.out.mjs`);
    writeFileSync(entry, source);
    execFileSync(join(ROOT, 'node_modules/.bin/esbuild'), esbuildArgs(entry, out), { cwd: ROOT });
    say(`| ${library} | ${(statSync(out).size / 1024 / 1024).toFixed(2)} MB |`);
  });
  say('');
}

async function withEstate(): Promise<void> {
  Object.assign(process.env, {
    AWS_ACCESS_KEY_ID: HUB_CREDENTIALS.accessKeyId,
    AWS_SECRET_ACCESS_KEY: HUB_CREDENTIALS.secretAccessKey,
    AWS_REGION: 'us-east-1',
    POWERTOOLS_METRICS_DISABLED: 'true',
    POWERTOOLS_TRACE_ENABLED: 'false',
    POWERTOOLS_LOG_LEVEL: 'ERROR',
  });
  const directory = mkdtempSync(join(tmpdir(), 'cpsync-bench-'));
  const hub = await startHub(join(directory, 'hub'));
  const emulators = await startEmulators({ directory: join(directory, 'estate') });
  try {
    const document = parse(readFileSync(emulators.configPath, 'utf8')) as Record<string, unknown>;
    const config = parseConfig(
      { ...document, hub: { kubeconfig: hub.kubeconfig }, outbox: { directory: join(directory, 'outbox') } },
      'bench',
    );
    const deps = await compose(config, ALL_PROVIDERS);
    const scopes = 4;

    say('## Steady state');
    say('');
    await runSync(deps.ports, {
      syncId: 'bench-1',
      scopes: (await deps.resolveScopes()).scopes,
      ...deps.settings,
    });
    await drainQueue(emulators.queueUrl);
    const started = performance.now();
    const steady = await runSync(deps.ports, {
      syncId: 'bench-2',
      scopes: (await deps.resolveScopes()).scopes,
      ...deps.settings,
    });
    const events = await drainQueue(emulators.queueUrl);
    say(
      `Re-sync of the unchanged ${emulators.clusters}-cluster estate (${scopes} scopes): ${ms(performance.now() - started)}, hub reads ${steady.hub.reads} (one paginated list per scope), hub writes ${steady.hub.writes}, change events ${events.filter((e) => e['detail-type'] !== 'Inventory Scope Synced').length}, scope summaries ${events.length}.`,
    );
    say('');

    say('## Event latency');
    say('');
    await createEksClusters(
      emulators.moto.endpoint,
      EKS_ACCOUNT,
      'us-east-1',
      Array.from({ length: EVENTS }, (_, i) => ({ name: `evt-${i}` })),
    );
    const source = deps.ports.sources.eks!;
    let providerMillis = 0;
    const timed: ClusterSource = {
      listScope: (scope, signal) => source.listScope(scope, signal),
      isProviderIdOf: (providerId, ref) => source.isProviderIdOf(providerId, ref),
      getCluster: async (ref) => {
        const t = performance.now();
        try {
          return await source.getCluster(ref);
        } finally {
          providerMillis = performance.now() - t;
        }
      },
    };
    const handler = makeEksEventHandler(async () => ({
      ...deps,
      ports: { ...deps.ports, sources: { ...deps.ports.sources, eks: timed } },
    }));
    const context = lambdaContext();
    const total: number[] = [];
    const excluding: number[] = [];
    for (let i = 0; i < EVENTS; i++) {
      const t = performance.now();
      const result = await handler(
        cloudTrailEvent('CreateCluster', EKS_ACCOUNT, 'us-east-1', { name: `evt-${i}` }) as never,
        context,
      );
      const elapsed = performance.now() - t;
      if (result.result !== 'created' || result.published !== 1)
        throw new Error(`event ${i}: ${JSON.stringify(result)}`);
      total.push(elapsed);
      excluding.push(elapsed - providerMillis);
    }
    const received = (await drainQueue(emulators.queueUrl)).length;
    say(
      `${EVENTS} CloudTrail CreateCluster events, one after another, each → DescribeCluster/ListNodegroups (moto) → server-side apply to the real hub → PutEvents (moto EventBridge); ${received} events reached the subscriber queue.`,
    );
    say('');
    say('| | p50 | p99 |');
    say('| --- | --- | --- |');
    say(`| total | ${ms(percentile(total, 50))} | ${ms(percentile(total, 99))} |`);
    say(
      `| provider latency excluded (targets: p50 ≤ 250 ms, p99 ≤ 1 s) | ${ms(percentile(excluding, 50))} | ${ms(percentile(excluding, 99))} |`,
    );
    say('');
    await deps.close();
  } finally {
    await emulators.stop();
    await stopHub(hub.directory);
  }
}

const { values: flags } = parseArgs({
  options: {
    'file-hub': { type: 'boolean', default: false },
    scale: { type: 'string', default: '1' },
    'latency-ms': { type: 'string', default: '50' },
    // Unset: the configuration's default `sync.concurrency`; set: the bench's choice, said as such.
    'scope-concurrency': { type: 'string' },
    only: { type: 'string' },
  },
});
const parts = new Set((flags.only ?? 'cold-start,estate,scale').split(','));

say('# cpsync benchmarks');
say('');
say(
  `Produced by \`npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}\` on ${new Date().toISOString().slice(0, 10)} (${process.platform}/${process.arch}, Node ${process.versions.node}, ${(await import('node:os')).cpus().length} cores).`,
);
say('');
if (parts.has('cold-start')) coldStart();
if (parts.has('estate')) await withEstate();
if (parts.has('scale'))
  for (const fileHub of flags['file-hub'] ? [true] : [false, true])
    await fullSyncAtScale({
      directory: mkdtempSync(join(tmpdir(), 'cpsync-scale-')),
      scale: Number(flags.scale),
      latencyMillis: Number(flags['latency-ms']),
      ...(flags['scope-concurrency'] ? { scopeConcurrency: Number(flags['scope-concurrency']) } : {}),
      fileHub,
      say,
    });
const whole = process.argv.length <= 2;
mkdirSync(join(ROOT, '.cache', 'bench'), { recursive: true });
writeFileSync(
  join(ROOT, whole ? 'BENCHMARKS.md' : join('.cache', 'bench', 'BENCHMARKS.partial.md')),
  `${lines.join('\n')}\n`,
);
