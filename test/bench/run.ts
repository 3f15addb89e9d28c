/**
 * `npm run bench`: cpsync's speed figures, printed and written to `.cache/bench/`. Benchmarks report;
 * they do not pass or fail. Parts: cold start (bundle size and module initialisation of each function),
 * event latency (CloudTrail CreateCluster → profile applied and event published), steady state of a
 * small estate, and the full sync of a 10,000-cluster estate into the real hub and into the file hub,
 * each re-run unchanged (`scale.ts`). A whole run writes `.cache/bench/BENCHMARKS.md`, one with options
 * (`--file-hub`, `--scale`, `--only`, …) `.cache/bench/BENCHMARKS.partial.md`. Neither touches BENCHMARKS.md
 * at the repository's root: that is the record of the runs (each section dated, with the command that produced
 * it, the earlier figures kept beside the new), into which a run's sections are copied.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { ALL_PROVIDERS } from '../../adapters/compose/providers/index.ts';
import { parseConfig } from '../../adapters/compose/config.ts';
import { runSync } from '../../core/sync/engine.ts';
import { makeEksEventHandler } from '../../functions/eksEvents.ts';
import { compose } from '../../adapters/compose/compose.ts';
import { startEmulators, EKS_ACCOUNT } from '../env/emulators.ts';
import { startHub, stopHub } from '../env/hub.ts';
import { createEksClusters, createIdempotencyTable, HUB_CREDENTIALS } from '../support/aws.ts';
import { drainQueue } from '../support/events.ts';
import { cloudTrailEvent, lambdaContext } from '../support/lambda.ts';
import { bundleFunction } from '../../infra/functionCode.ts';
import { parseArgs } from 'node:util';
import { compareStateFileSystems, fullSyncAtScale } from './scale.ts';
import { compareWithCommit } from './against.ts';
import { timeToUsable } from './usable.ts';
import { coldRun } from '../support/cold.ts';
import { reportCost } from './cost.ts';
import { sdkCallFloor } from './sdkFloor.ts';
import { reportSdkSettings } from './sdkSettings.ts';
import { reportHubRequestPaths } from './hubRequests.ts';
import { reportFileHubWrites } from './fileHubWrites.ts';
import { reportOrphanLook } from './orphanLook.ts';
import { scalingChart, type CurvePoint } from './chart.ts';
import { App } from 'aws-cdk-lib';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { CpsyncStack } from '../../infra/CpsyncStack.ts';
import { ArgoCdClusterSync, ChatNotifier } from '../../infra/subscribers.ts';
import { coldStarts, type FunctionSpec } from '../env/lambdaRuntime.ts';
import { EXAMPLE } from '../support/infra.ts';
import { ACCOUNT, placeholderRefs, templateResolver, templateResources } from '../support/template.ts';
import { temporaryDirectory } from '../support/tmp.ts';

const ROOT = resolve(import.meta.dirname, '../..');
const FUNCTIONS = ['scopeEnumerator', 'scopeWorker', 'eksEvents', 'webhook'];
const EVENTS = Number(process.env.CPSYNC_BENCH_EVENTS ?? 200);
const COLD_EVENTS = Number(process.env.CPSYNC_BENCH_COLD_EVENTS ?? 30);
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

/** Each function bundled as the stack bundles it (infra/functionCode.ts), once per bench run. */
const bundles = new Map<string, string>();
function bundled(name: string): string {
  if (!bundles.has(name)) {
    const out = join(ROOT, '.cache', 'bench', 'functions', name);
    rmSync(out, { recursive: true, force: true });
    bundleFunction(ROOT, join(ROOT, 'functions', `${name}.ts`), out);
    bundles.set(name, out);
  }
  return bundles.get(name)!;
}

/** The functions' NODE_OPTIONS as the stack sets them by default (none; `stackTraceSourceMaps` adds `--enable-source-maps`). */
const FUNCTION_NODE_OPTIONS = '';

/** A cold start of `name`'s bundle (test/support/cold.ts), with the functions' NODE_OPTIONS unless `env` sets them. */
const coldInvoke = (name: string, event: unknown, env: NodeJS.ProcessEnv = process.env) =>
  coldRun(bundled(name), event, {
    env: { NODE_OPTIONS: FUNCTION_NODE_OPTIONS, ...env },
    // CPSYNC_BENCH_COLD_FLAGS=--cpu-prof profiles the cold processes.
    nodeArgs: process.env.CPSYNC_BENCH_COLD_FLAGS?.split(' ').filter(Boolean) ?? [],
  });

const COLD_TARGETS: Record<string, number> = { eksEvents: 150 };
const sizeOf = (directory: string, files: readonly string[]) =>
  files.reduce((sum, file) => sum + statSync(join(directory, file)).size, 0);
const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(2)} MB`;

/** `cpsync report` of a 30,000-cluster inventory: its size, and how long Chromium takes to make it usable. */
async function reportAtScale(): Promise<void> {
  const { summarize, reportHtml } = await import('../../cli/inventoryReport.ts');
  const { syntheticProfiles } = await import('../support/fixtures.ts');
  const { openPage } = await import('../support/chromium.ts');
  const { pathToFileURL } = await import('node:url');
  say('## The report at scale');
  say('');
  const directory = temporaryDirectory('cpsync-bench-report-');
  try {
    const clusters = 30_000;
    const profiles = await syntheticProfiles(clusters);
    const started = performance.now();
    const html = reportHtml(summarize(profiles), {
      generatedAt: new Date().toISOString(),
      source: 'synthetic',
    });
    const built = performance.now() - started;
    const page = join(directory, 'report.html');
    writeFileSync(page, html);
    say('| page | size | written in (summary and HTML) | data-ready in Chromium (median of 3) |');
    say('|---|---|---|---|');
    for (const [title, hash] of [
      ['as it opens', ''],
      ['sorted on load (`#sort=version:desc`)', '#sort=version:desc'],
    ] as const) {
      const times: number[] = [];
      for (let i = 0; i < 3; i++) {
        const opened = await openPage(`${pathToFileURL(page).href}${hash}`);
        times.push(opened.readyMillis);
        await opened.close();
      }
      say(
        `| ${clusters.toLocaleString('en')} clusters, ${title} | ${(Buffer.byteLength(html) / 1048576).toFixed(1)} MiB | ${ms(built)} | ${(percentile(times, 50) / 1000).toFixed(1)} s |`,
      );
    }
    say('');
    say(
      'data-ready is read over the DevTools protocol, whose evaluation waits for the page’s main thread: the figure includes parsing, the script and the layout of the table.',
    );
    say('');
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}

async function coldStart(): Promise<void> {
  say('## Cold start');
  say('');
  say(
    'Each function bundled as the stack bundles it (`infra/functionCode.ts`: esbuild, minified ESM, split into an entry and chunks loaded on demand, the AWS SDK included). Module initialisation: a fresh Node process imports the entry with the functions\' default `NODE_OPTIONS` (none), median of 9; "loaded at initialisation" is what that import reads (the entry and the chunks it imports statically); the rest of the bundle is loaded by the first invocation that needs it (the hub client, the bus, the outbox, one cloud\'s SDK).',
  );
  say('');
  say(
    '| function | loaded at initialisation | whole bundle | module initialisation (median of 9) | target |',
  );
  say('| --- | --- | --- | --- | --- |');
  for (const name of FUNCTIONS) {
    const directory = bundled(name);
    const all = readdirSync(directory, { recursive: true, encoding: 'utf8' }).filter((f) =>
      f.endsWith('.mjs'),
    );
    const times: number[] = [];
    let loaded: string[] = [];
    for (let i = 0; i < 9; i++) {
      const run = await coldInvoke(name, undefined, { ...process.env, POWERTOOLS_METRICS_DISABLED: 'true' });
      times.push(run.initMillis);
      loaded = run.loaded;
    }
    say(
      `| ${name} | ${mb(sizeOf(directory, loaded))} (${loaded.length} files) | ${mb(sizeOf(directory, all))} (${all.length} files) | ${ms(percentile(times, 50))} | ≤ ${COLD_TARGETS[name] ?? 250} ms |`,
    );
  }
  say('');
  libraryFloors(join(ROOT, '.cache', 'bench'));
  await lambdaColdStarts();
}

/** Cold starts under the Lambda runtime: RIE runs. */
const LAMBDA_RUNS = 7;

/**
 * Every function of the synthesized stack (and both example subscribers), run from cdk.out under the AWS
 * Lambda Runtime Interface Emulator with the Node runtime interface client (test/env/lambdaRuntime.ts), as
 * the Lambda runtime test runs them; each a fresh emulator per run, its Init Duration from `INIT REPORT`.
 */
async function lambdaColdStarts(): Promise<void> {
  const directory = temporaryDirectory('cpsync-bench-lambda-');
  try {
    const assembly = join(directory, 'cdk.out');
    const app = new App({ outdir: assembly, context: { 'aws:cdk:enable-asset-metadata': true } });
    const secret = (name: string) => `arn:aws:secretsmanager:us-east-1:${ACCOUNT}:secret:${name}-AbCdEf`;
    const stack = new CpsyncStack(app, 'Cpsync', {
      env: { account: ACCOUNT, region: 'us-east-1' },
      cpsync: { config: { ...EXAMPLE, hub: { kubeconfigSecretArn: secret('hub') } } },
    });
    // On a kubeconfig hub the subscriber reaches it with a kubeconfig of its own identity.
    new ArgoCdClusterSync(stack, 'ArgoCd', {
      cpsync: stack.cpsync,
      hubKubeconfigSecretArn: secret('argocd-hub'),
    });
    new ChatNotifier(stack, 'Chat', {
      cpsync: stack.cpsync,
      webhookSecret: Secret.fromSecretCompleteArn(stack, 'ChatUrl', secret('chat')),
    });
    app.synth();
    const resources = templateResources(assembly, 'Cpsync');
    const { resolve: resolveToken } = templateResolver(resources, placeholderRefs(resources));
    const trivial = join(directory, 'trivial');
    mkdirSync(trivial);
    writeFileSync(join(trivial, 'index.mjs'), 'export const handler = async () => ({});\n');
    const specs: FunctionSpec[] = [
      {
        name: 'a trivial handler (the floor)',
        asset: trivial,
        handler: 'index.handler',
        environment: {},
        memorySize: 128,
        timeout: 10,
      },
    ];
    for (const [id, fn] of Object.entries(resources).filter(([, r]) => r.Type === 'AWS::Lambda::Function')) {
      const variables = (fn.Properties.Environment as { Variables: Record<string, unknown> }).Variables;
      specs.push({
        name: id.replace(/[0-9A-F]{8}$/, ''),
        asset: join(assembly, fn.Metadata!['aws:asset:path'] as string),
        handler: fn.Properties.Handler as string,
        memorySize: fn.Properties.MemorySize as number,
        timeout: fn.Properties.Timeout as number,
        environment: {
          ...Object.fromEntries(Object.entries(variables).map(([k, v]) => [k, String(resolveToken(v))])),
          AWS_REGION: 'us-east-1',
          AWS_ACCESS_KEY_ID: 'bench',
          AWS_SECRET_ACCESS_KEY: 'bench',
          // Nothing listens there: what an invocation would call after initialisation fails at once.
          AWS_ENDPOINT_URL: 'http://127.0.0.1:9',
          POWERTOOLS_METRICS_DISABLED: 'true',
        },
      });
    }
    say('### Under the Lambda runtime');
    say('');
    say(
      `What \`cdk synth\` writes to cdk.out, each function's folder, handler, environment and memory from the template, run by the AWS Lambda Runtime Interface Emulator with the Node runtime interface client (aws-lambda-ric) under Node ${process.versions.node}, the code read-only and only /tmp writable (\`test/env/lambdaRuntime.ts\`); Init Duration as the emulator's \`INIT REPORT\` gives it (its \`REPORT\` figures are not real), ${LAMBDA_RUNS} cold starts each, a fresh emulator for each. It adds to module initialisation the runtime client's own start and the handler's resolution.`,
    );
    say('');
    say('| function | Init Duration median | min – max | target |');
    say('| --- | --- | --- | --- |');
    for (const spec of specs) {
      const durations = await coldStarts(spec, LAMBDA_RUNS);
      say(
        `| ${spec.name} | ${ms(percentile(durations, 50))} | ${ms(Math.min(...durations))} – ${ms(Math.max(...durations))} | ${spec.name.startsWith('a trivial') ? '—' : '≤ 250 ms'} |`,
      );
    }
    say('');
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
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
    const out = join(directory, `floor-${index}`);
    writeFileSync(entry, source);
    rmSync(out, { recursive: true, force: true });
    bundleFunction(ROOT, entry, out, { sourceMaps: false });
    const files = readdirSync(out, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.mjs'));
    say(`| ${library} | ${mb(sizeOf(out, files))} |`);
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
  const directory = temporaryDirectory('cpsync-bench-');
  const hub = await startHub(join(directory, 'hub'));
  const emulators = await startEmulators({ directory: join(directory, 'estate') });
  try {
    const document = parse(readFileSync(emulators.configPath, 'utf8')) as Record<string, unknown>;
    // As deployed: every delivery goes through Powertools idempotency (a DynamoDB table, here moto's).
    await createIdempotencyTable(emulators.moto.endpoint, 'bench-idempotency');
    const functionDocument = {
      ...document,
      hub: { kubeconfig: hub.kubeconfig },
      outbox: { directory: join(directory, 'outbox') },
      // Through the proxy, like the EKS and EventBridge calls, so the time of every AWS call is known.
      idempotency: { table: 'bench-idempotency', endpoint: emulators.proxy.endpoint },
    };
    const config = parseConfig(functionDocument, 'bench');
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
    /** Time the AWS calls since the `from`-th took (EKS, STS, DynamoDB, EventBridge: all answered by moto through the proxy). */
    const awsMillisSince = async (from: number) => {
      await new Promise((done) => setImmediate(done)); // the last answer's 'close'
      return emulators.proxy.calls.slice(from).reduce((sum, call) => sum + (call.millis ?? 0), 0);
    };
    const handler = makeEksEventHandler(async () => deps);
    const context = lambdaContext();
    const total: number[] = [];
    const excluding: number[] = [];
    for (let i = 0; i < EVENTS; i++) {
      const calls = emulators.proxy.calls.length;
      const t = performance.now();
      const result = await handler(
        cloudTrailEvent('CreateCluster', EKS_ACCOUNT, 'us-east-1', { name: `evt-${i}` }) as never,
        context,
      );
      const elapsed = performance.now() - t;
      if (result.result !== 'created' || result.published !== 1)
        throw new Error(`event ${i}: ${JSON.stringify(result)}`);
      total.push(elapsed);
      excluding.push(elapsed - (await awsMillisSince(calls)));
    }
    const received = (await drainQueue(emulators.queueUrl)).length;
    say(
      `${EVENTS} CloudTrail CreateCluster events, one after another, each → DescribeCluster/ListNodegroups (moto) → server-side apply to the real hub → PutEvents (moto EventBridge), each delivery recorded by Powertools idempotency (moto DynamoDB), in this process with everything warm; ${received} events reached the subscriber queue. Provider latency excluded: the time of every AWS call the event made (EKS, DynamoDB, EventBridge, all answered by moto on these two cores), as the proxy in front of moto timed each; what is left is cpsync's own work and the hub's.`,
    );
    say('');
    say('| | p50 | p99 |');
    say('| --- | --- | --- |');
    say(`| total | ${ms(percentile(total, 50))} | ${ms(percentile(total, 99))} |`);
    say(
      `| provider latency excluded (target: p99 ≤ 250 ms warm) | ${ms(percentile(excluding, 50))} | ${ms(percentile(excluding, 99))} |`,
    );
    say('');

    // With a cold start: each event in a fresh process running the bundled handler, as a new Lambda
    // container runs it (module initialisation, then the first invocation loading what it needs); as the
    // stack deploys it, and with `stackTraceSourceMaps` on.
    const env = { ...process.env, CPSYNC_CONFIG: JSON.stringify(functionDocument) };
    const variants = [
      { label: 'as deployed by default', nodeOptions: FUNCTION_NODE_OPTIONS, events: COLD_EVENTS },
      {
        label: 'with `stackTraceSourceMaps`',
        nodeOptions: '--enable-source-maps',
        events: Math.ceil(COLD_EVENTS / 2),
      },
    ];
    say(
      `With a cold start: CreateCluster events, each handled by the bundled EKS handler in a fresh Node process, as a new Lambda container handles it: module initialisation, then the first invocation, which loads the hub client, the EKS and EventBridge clients and Powertools idempotency (a DynamoDB record in moto), finds nothing warm, and applies and publishes as above. Provider latency excluded as above: the time of every AWS call, as the proxy timed it.`,
    );
    say('');
    say(
      '| cold start | events (reached the queue) | module initialisation p50 / p99 | total p50 / p99 | provider latency excluded p50 / p99 (target: p99 ≤ 1 s) |',
    );
    say('| --- | --- | --- | --- | --- |');
    for (const [v, variant] of variants.entries()) {
      const names = Array.from({ length: variant.events }, (_, i) => `cold-${v}-${i}`);
      await createEksClusters(
        emulators.moto.endpoint,
        EKS_ACCOUNT,
        'us-east-1',
        names.map((name) => ({ name })),
      );
      const cold: number[] = [];
      const coldExcluding: number[] = [];
      const initialisation: number[] = [];
      for (const name of names) {
        const calls = emulators.proxy.calls.length;
        const run = await coldInvoke(
          'eksEvents',
          cloudTrailEvent('CreateCluster', EKS_ACCOUNT, 'us-east-1', { name }),
          { ...env, NODE_OPTIONS: variant.nodeOptions },
        );
        const result = run.result as { result?: string; published?: number };
        if (result.result !== 'created' || result.published !== 1)
          throw new Error(`cold event ${name}: ${JSON.stringify(run.result)}`);
        const provider = await awsMillisSince(calls);
        const total = run.initMillis + run.invokeMillis!;
        cold.push(total);
        coldExcluding.push(total - provider);
        initialisation.push(run.initMillis);
      }
      const received = (await drainQueue(emulators.queueUrl)).length;
      const pair = (values: number[]) => `${ms(percentile(values, 50))} / ${ms(percentile(values, 99))}`;
      say(
        `| ${variant.label} | ${variant.events} (${received}) | ${pair(initialisation)} | ${pair(cold)} | ${pair(coldExcluding)} |`,
      );
    }
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
    // What answers DynamoDB in the usable section: dynalite in a process of its own, or moto (with every other
    // AWS service, as before 2026-11-27 midday).
    dynamodb: { type: 'string', default: 'dynalite' },
    // An earlier commit whose full sync into the file hub is measured beside this checkout's, taking turns.
    against: { type: 'string' },
    'against-rounds': { type: 'string', default: '3' },
  },
});
const parts = new Set(
  (
    flags.only ??
    'cold-start,report,estate,usable,scale,state-memory,eks-every-sync,aks-graph,hub-requests,file-hub-writes,orphan-look,sdk-settings,curve'
  ).split(','),
);
// `--against <commit>` adds its section to whatever else runs.
if (flags.against !== undefined) parts.add('against');
else if (parts.has('against'))
  throw new Error('--only against needs --against <commit>: the commit to measure beside this checkout');

say('# cpsync benchmarks');
say('');
say(
  [
    '`npm run bench` writes `.cache/bench/BENCHMARKS.md` (with options, `.cache/bench/BENCHMARKS.partial.md`). Benchmarks report; they do not pass or fail. What each section measures:',
    '',
    "- **Cold start**: each function bundled as the stack bundles it; module initialisation in a fresh Node process; bundle sizes beside the required libraries' own; the Init Duration of each synthesized function under the Lambda Runtime Interface Emulator.",
    '- **Steady state** and **Event latency**: a 7-cluster estate on moto, the local cloud servers and the real hub; CloudTrail events through the EKS handler warm (in process) and cold (a fresh process per event, the bundled handler).',
    "- **Full sync at scale**: a synthetic 10,000-cluster estate (4,000 EKS in 100 accounts × 4 regions, 3,000 GKE in 100 projects, 3,000 AKS in 50 subscriptions) behind local servers that add 50 ms to every call, synced by the `cpsync sync` CLI in its own process — into the real hub (full, a tenth of the EKS clusters changed, unchanged; writes as the kube-apiserver counted them) and into the file hub (the configuration's defaults, then the concurrency the bench chooses). CPU time is the cpsync process's own (user + system, from `process.resourceUsage()`), divided by the clusters.",
    "- **Time to usable**: clusters created in each cloud's emulator and ready after a while, then deleted, the clouds' events entering as the clouds send them, handled by the bundled functions and followed by the follow-up function until they settle: ready → profile usable, gone → Deleted, wrongful deletions, and the follow-up's cost per cluster.",
    '- **What a deployment costs**: the file-hub run at the defaults, priced.',
    "- **Against an earlier commit** (`--against <commit>` only): the file-hub full sync at the defaults by that commit's own bench and bundle and by this checkout's, taking turns in one run: a figure of another day judged against its own code measured today.",
    "- **The state directory on the disk and in memory**: the file-hub run at the defaults with its state directory (inventory and outbox) on this machine's disk and on a tmpfs, taking turns: the kernel's share of the CPU per cluster, which follows the disk (a created profile is a created file).",
    '- **EKS DescribeCluster asked at every sync**: the file-hub run at the defaults with `providers.eks.clusterMaxAgeMinutes: 0` (the default was 60 from 2026-11-29 night; before, 0): every listed cluster described at every sync, as a sync at the defaults would if the answers of every cluster aged at once; with `scale` in the same run, the hour at the default schedule both ways.',
    '- **AKS through Resource Graph**: the file-hub run at the defaults with `providers.aks.listing: resourceGraph`: one graph query for every subscription in place of a listing per subscription.',
    '- **The report at scale**: `cpsync report` of 30,000 clusters, its size, and the time to `data-ready` in headless Chromium (the OS package) driven over the DevTools protocol, as it opens and sorted on load.',
    "- **The Kubernetes hub: CPU per request path**: KubernetesHub's requests sent by undici's `request()` (the default) and by client-node's own `fetch()`, profiles created, changed and listed against the real hub, each path in fresh processes: the calling process's CPU per profile and the writes the kube-apiserver counted.",
    "- **The AWS clients' settings**: one DescribeCluster through four EKS clients alike but for the signer's hash and the SDK's logger middleware, taking turns in one process: the CPU per call each setting takes off.",
    '- **Scaling curve**: the same estate at 1,000 to 30,000 clusters, with the chart `bench/scaling.svg`.',
    '',
    "Options: `--only cold-start,report,estate,usable,scale,state-memory,eks-every-sync,aks-graph,hub-requests,file-hub-writes,orphan-look,sdk-settings,curve`, `--against <commit>` (with `--against-rounds 3`: the file-hub full sync at the defaults, this checkout and that commit taking turns in one run, each with its own bench and bundle), `--file-hub` (no real-hub run), `--scale 0.1`, `--latency-ms 20`, `--scope-concurrency 16` (the bench's choice; the configuration's default is used where a section says so), `--dynamodb moto` (Time to usable with DynamoDB answered by moto, as before 2026-11-27 midday; by default dynalite answers it). `CPSYNC_BENCH_NODE_FLAGS=--cpu-prof` profiles the measured CLI (`node test/bench/cpuProfile.ts <profile>` sums its self time by package and function), `CPSYNC_BENCH_STEADY_VARIANTS='[\"\", \"--heap-growing-percent=100\"]'` (with `CPSYNC_BENCH_STEADY_ROUNDS`, 3 by default) follows the defaults' steady-state re-sync with more, each set of Node flags taking turns, `CPSYNC_BENCH_COLD_FLAGS=--cpu-prof` the cold processes, `CPSYNC_HUB_PROFILING=1` starts the local kube-apiserver with its `/debug/pprof` endpoints on, `CPSYNC_BENCH_TIMELINES=<file>` writes each Time to usable cluster's timeline (epoch milliseconds) as JSON, `CPSYNC_BENCH_DELIVERIES=<file>` each delivery of a cloud's event to the webhook (its cluster, when it was delivered and answered), and `CPSYNC_BENCH_CONSUMER_LOG=<file>` each line the consumer printed.",
  ].join('\n'),
);
say('');
say(
  `Produced by \`npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}\` on ${new Date().toISOString().slice(0, 10)} (${process.platform}/${process.arch}, Node ${process.versions.node}, ${(await import('node:os')).cpus().length} cores).`,
);
say('');
/**
 * CPSYNC_BENCH_STEADY_VARIANTS='["", "--heap-growing-percent=100"]' (and CPSYNC_BENCH_STEADY_ROUNDS, 3 by default):
 * after the defaults' steady-state re-sync, more of them with each set of Node flags taking turns.
 */
function steadyVariantsFrom(env: NodeJS.ProcessEnv): { flags: string[]; rounds: number } | undefined {
  const given = env.CPSYNC_BENCH_STEADY_VARIANTS;
  if (!given) return undefined;
  let flags: unknown;
  try {
    flags = JSON.parse(given);
  } catch {
    flags = undefined;
  }
  if (!Array.isArray(flags) || flags.length === 0 || !flags.every((f) => typeof f === 'string'))
    throw new Error(
      `CPSYNC_BENCH_STEADY_VARIANTS must be a JSON array of strings of Node flags (e.g. ["", "--max-opt=2"]); it is ${given}`,
    );
  const rounds = Number(env.CPSYNC_BENCH_STEADY_ROUNDS ?? 3);
  if (!Number.isInteger(rounds) || rounds < 1)
    throw new Error(
      `CPSYNC_BENCH_STEADY_ROUNDS must be a whole number of at least 1; it is ${env.CPSYNC_BENCH_STEADY_ROUNDS}`,
    );
  return { flags: flags as string[], rounds };
}
const steadyVariants = steadyVariantsFrom(process.env);
// The sync runs measure the `cpsync` command as installed: the bundle, built now from these sources.
if (
  ['scale', 'state-memory', 'against', 'eks-every-sync', 'aks-graph', 'curve'].some((part) => parts.has(part))
)
  execFileSync(process.execPath, [join(ROOT, 'infra', 'build-cli.ts')], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
if (parts.has('cold-start')) await coldStart();
if (parts.has('report')) await reportAtScale();
if (parts.has('estate')) await withEstate();
if (parts.has('usable'))
  await timeToUsable({
    say,
    bundled,
    perCloud: 30,
    readySeconds: [20, 60],
    deletingSeconds: [10, 30],
    spreadSeconds: 30,
    // From the cloud's event to the function: delays the bench assumes (the services document none as a bound).
    deliverySeconds: { cloudtrail: [2, 5], pubsub: [1, 3], eventgrid: [0.5, 2], alert: [1, 3] },
    dynamodb: flags.dynamodb === 'moto' ? 'moto' : 'dynalite',
  });
const whole = process.argv.length <= 2;
const scale = Number(flags.scale);
const latencyMillis = Number(flags['latency-ms']);
/** The scope concurrency the bench chooses for its second 10,000-cluster run and for the curve. */
const BENCH_CONCURRENCY = Number(flags['scope-concurrency'] ?? 16);
/** Runs of each of the curve's two small estates, whose CPU time varies most with this machine's speed. */
const SMALL_REPEATS = 3;
/** The deployed stack's default schedule: a full sync every this many minutes. */
const SCHEDULE_MINUTES = 15;
const scaleRun = (options: Partial<Parameters<typeof fullSyncAtScale>[0]>) =>
  fullSyncAtScale({
    directory: temporaryDirectory('cpsync-scale-'),
    scale,
    latencyMillis,
    say,
    ...options,
  });
/** The file-hub run at the configuration's defaults, when this run made one. */
let atTheDefaults: Awaited<ReturnType<typeof fullSyncAtScale>> | undefined;
if (parts.has('scale')) {
  if (!flags['file-hub'])
    await scaleRun({ fileHub: false, changed: true, title: 'the real hub, what it counted' });
  const defaults = (atTheDefaults = await scaleRun({
    fileHub: true,
    title: "the configuration's defaults",
    laterMinutes: SCHEDULE_MINUTES,
    ...(steadyVariants ? { steadyVariants } : {}),
  }));
  const later = defaults.later!;
  say(
    `The last column is the steady-state sync as the default schedule runs it: every remembered answer made ${SCHEDULE_MINUTES} minutes older first (the state directory's \`answers/\`), as if it ran at the next scheduled time. Each cluster's answers are asked again at a time of its own in their period, so this sync described the EKS clusters whose time fell in those ${SCHEDULE_MINUTES} minutes: ${later.providers.aws.DescribeCluster ?? 0} of ${defaults.eksClusters.toLocaleString('en')} (${(((later.providers.aws.DescribeCluster ?? 0) / defaults.eksClusters) * 100).toFixed(1)} %), and every sync of the hour describes its own such share. **${(later.run.cpuMillis / defaults.clusters).toFixed(2)} ms** of CPU per cluster (target ≤ 1.0 ms), ${(later.providers.eks / defaults.eksClusters).toFixed(2)} EKS calls per EKS cluster.`,
  );
  say('');
  await scaleRun({
    fileHub: true,
    scopeConcurrency: BENCH_CONCURRENCY,
    title: `\`sync.concurrency: ${BENCH_CONCURRENCY}\`, chosen by the bench`,
  });
  const floor = await sdkCallFloor([defaults.scopeConcurrency, BENCH_CONCURRENCY * 2]);
  const beneath = await sdkCallFloor([defaults.scopeConcurrency, BENCH_CONCURRENCY * 2], 3000, 'signed');
  const parts = await sdkCallFloor([defaults.scopeConcurrency, BENCH_CONCURRENCY * 2], 3000, 'parts');
  const eksShare = defaults.eksClusters / defaults.clusters;
  // What the SDK's client costs per call on top of another path, at the default concurrency, and per cluster of
  // this estate in a full sync (three EKS calls per EKS cluster).
  const onTopOf = (other: Map<number, number>) =>
    floor.get(defaults.scopeConcurrency)! - other.get(defaults.scopeConcurrency)!;
  const perCluster = (perCall: number) => (3 * perCall * eksShare).toFixed(2);
  say('### The floor the AWS SDK sets');
  say('');
  say(
    `One DescribeCluster through cpsync's own AWS client factory (adaptive retry, its HTTP handler and pool) against the local AWS server, 3,000 calls measured in a process of their own: ${[...floor].map(([concurrency, millis]) => `${millis.toFixed(2)} ms of CPU per call with ${concurrency} in flight`).join(', ')}. An EKS cluster takes three such calls (DescribeCluster, ListNodegroups, DescribeNodegroup), so in this estate (${(eksShare * 100).toFixed(0)} % EKS) the SDK alone costs ${perCluster(floor.get(defaults.scopeConcurrency)!)} ms per cluster at the default concurrency, before the GKE and ARM clients, the hub and the events — of the CPU per cluster above, this part is the SDK's own request path (serialisation, signing, retry bookkeeping, HTTP), which cpsync keeps rather than re-implements.`,
  );
  say('');
  say(
    `The same request beneath the SDK — signed by the SDK's own SigV4 signer and hash, sent on a kept-alive node:http agent, its JSON parsed, and nothing else (no middleware stack, retry strategy, endpoint rules or schema) — measured the same way: ${[...beneath].map(([concurrency, millis]) => `${millis.toFixed(2)} ms per call with ${concurrency} in flight`).join(', ')}. The SDK's request path costs ${onTopOf(beneath).toFixed(2)} ms per call on top at the default concurrency, ${perCluster(onTopOf(beneath))} ms per cluster of this estate in a full sync: what a request path of cpsync's own for the three EKS reads would take off, with its retries, throttling, errors and endpoints then cpsync's to keep.`,
  );
  say('');
  say(
    `Between the two, the SDK's own parts called in turn without its middleware stack — the client's protocol (serialisation, the answer's schema and error shapes), its SigV4 signer, its HTTP handler and its retry strategy's bookkeeping: ${[...parts].map(([concurrency, millis]) => `${millis.toFixed(2)} ms per call with ${concurrency} in flight`).join(', ')}. That is what a leaner path could take off while leaving the wire and the errors to the SDK: ${onTopOf(parts).toFixed(2)} ms per call, ${perCluster(onTopOf(parts))} ms per cluster of this estate in a full sync.`,
  );
  say('');
  // The mean size of what the bus received in the full sync stands for a change event's (summaries are smaller).
  const meanEventBytes = defaults.full.detailBytes / defaults.full.events;
  const measure = (round: typeof defaults.full) => ({
    scopeDurations: round.scopeDurations,
    changeEvents: round.run.published - defaults.scopes,
    changeEventBytes: meanEventBytes,
  });
  reportCost(
    say,
    { clusters: defaults.clusters, scopesByProvider: `${defaults.scopes} scopes` },
    measure(defaults.full),
    measure(later),
    1440 / SCHEDULE_MINUTES,
  );
}
if (parts.has('state-memory'))
  await compareStateFileSystems({ memory: '/dev/shm', rounds: 2, scale, latencyMillis, say });
if (parts.has('against')) {
  const rounds = Number(flags['against-rounds']);
  if (!Number.isInteger(rounds) || rounds < 1)
    throw new Error(
      `--against-rounds must be a whole number of at least 1; it is ${flags['against-rounds']}`,
    );
  await compareWithCommit({ commit: flags.against!, rounds, scale, latencyMillis, memory: '/dev/shm', say });
}
if (parts.has('eks-every-sync')) {
  const everySync = await scaleRun({
    fileHub: true,
    eksClusterMaxAgeMinutes: 0,
    title:
      'EKS DescribeCluster asked at every sync (`providers.eks.clusterMaxAgeMinutes: 0`), the defaults otherwise',
  });
  if (atTheDefaults?.later) {
    // Each cluster's answer is asked again at its own time in the hour: every sync of the default schedule describes
    // a share of the clusters (the defaults' sync a schedule's interval later). Had the answers aged all at once, three
    // syncs in four would describe none (the defaults' sync right after the full one) and the fourth all of them (this
    // section's steady sync).
    const cpu = (round: typeof everySync.steady) => round.run.cpuMillis / everySync.clusters;
    const eksCalls = (round: typeof everySync.steady) => round.providers.eks / everySync.eksClusters;
    const syncs = 60 / SCHEDULE_MINUTES;
    const atOnce = (of: (round: typeof everySync.steady) => number) =>
      (((syncs - 1) * of(atTheDefaults!.steady) + of(everySync.steady)) / syncs).toFixed(2);
    say(
      `Over an hour at the default schedule, each of its ${syncs} steady syncs is like the defaults' sync ${SCHEDULE_MINUTES} minutes later above: ${cpu(atTheDefaults.later).toFixed(2)} ms of CPU per cluster and ${eksCalls(atTheDefaults.later).toFixed(2)} EKS calls per EKS cluster. Were the answers to age all at once (as until 2026-11-30), the hour would be ${syncs - 1} syncs describing nothing (${cpu(atTheDefaults.steady).toFixed(2)} ms, ${eksCalls(atTheDefaults.steady).toFixed(2)} calls) and one describing every EKS cluster, as this section's steady sync (${cpu(everySync.steady).toFixed(2)} ms, ${eksCalls(everySync.steady).toFixed(2)} calls): ${atOnce(cpu)} ms and ${atOnce(eksCalls)} calls on average, the same work in one burst.`,
    );
    say('');
  }
}
if (parts.has('aks-graph'))
  await scaleRun({
    fileHub: true,
    aksListing: 'resourceGraph',
    title:
      'AKS listed through Resource Graph (`providers.aks.listing: resourceGraph`), the defaults otherwise',
  });
if (parts.has('hub-requests')) await reportHubRequestPaths(say, 1000, 3);
if (parts.has('file-hub-writes')) await reportFileHubWrites(say, 5000, 5);
if (parts.has('orphan-look')) await reportOrphanLook(say, 10_000, 5);
if (parts.has('sdk-settings')) await reportSdkSettings(say, 3);
if (parts.has('curve')) {
  const points: CurvePoint[] = [];
  say('## Scaling curve');
  say('');
  say(
    `The same estate at 0.1×, 0.3×, 1× and 3× (${latencyMillis} ms per provider call, file hub, \`sync.concurrency: ${BENCH_CONCURRENCY}\` chosen by the bench so the 30,000-cluster runs take minutes, not a quarter of an hour), each a full sync and an unchanged re-sync by the \`cpsync sync\` command in its own process; CPU time and peak RSS of that process. This machine's speed varies from run to run, so the two small estates (seconds each) are run ${SMALL_REPEATS} times: their median, and the range in brackets.`,
  );
  say('');
  say(
    '| clusters | scopes | CPU per cluster, full / steady | of which main thread / V8 workers / libuv pool, full | wall time, full / steady | peak RSS, full / steady (target ≤ 512 MB) |',
  );
  say('| --- | --- | --- | --- | --- | --- |');
  /** CPU of V8's worker threads per cluster in each estate's typical full sync. */
  const v8PerCluster: number[] = [];
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  const ms = (value: number) => value.toFixed(2);
  for (const factor of [0.1, 0.3, 1, 3]) {
    const repeats = factor < 1 ? SMALL_REPEATS : 1;
    const measured: Array<Awaited<ReturnType<typeof fullSyncAtScale>>> = [];
    for (let i = 0; i < repeats; i++)
      measured.push(
        await scaleRun({
          scale: scale * factor,
          fileHub: true,
          scopeConcurrency: BENCH_CONCURRENCY,
          report: false,
        }),
      );
    const { clusters, scopes } = measured[0]!;
    const full = measured.map((m) => m.full.run.cpuMillis / clusters);
    const steady = measured.map((m) => m.steady.run.cpuMillis / clusters);
    const typical = measured.find((m) => m.full.run.cpuMillis / clusters === median(full))!;
    v8PerCluster.push((typical.full.run.threadCpuMillis.v8 ?? 0) / clusters);
    const point = {
      clusters,
      fullCpuPerCluster: median(full),
      steadyCpuPerCluster: median(steady),
      peakRssMb:
        Math.max(...measured.flatMap((m) => [m.full.run.peakRssBytes, m.steady.run.peakRssBytes])) / 1048576,
    };
    points.push(point);
    const range = (values: number[]) =>
      values.length > 1 ? ` [${ms(Math.min(...values))}–${ms(Math.max(...values))}]` : '';
    const threads = ['main', 'v8', 'libuv']
      .map((kind) => ms((typical.full.run.threadCpuMillis[kind] ?? 0) / clusters))
      .join(' / ');
    const wall = (key: 'full' | 'steady') =>
      (median(measured.map((m) => m[key].run.wallMillis)) / 1000).toFixed(1);
    const rss = (key: 'full' | 'steady') =>
      (Math.max(...measured.map((m) => m[key].run.peakRssBytes)) / 1048576).toFixed(0);
    say(
      `| ${clusters.toLocaleString('en')} | ${scopes} | ${ms(point.fullCpuPerCluster)}${range(full)} / ${ms(point.steadyCpuPerCluster)}${range(steady)} ms | ${threads} ms | ${wall('full')} / ${wall('steady')} s | ${rss('full')} / ${rss('steady')} MB |`,
    );
  }
  const spread = (values: number[]) => {
    const mean = values.reduce((a, b) => a + b, 0) / values.length;
    return Math.max(...values.map((v) => Math.abs(v - mean) / mean)) * 100;
  };
  /** What each cluster added between one estate and the next cost: the difference of their CPU times over the difference of their sizes. */
  const marginal = (key: 'fullCpuPerCluster' | 'steadyCpuPerCluster') =>
    points
      .slice(1)
      .map((p, i) => [points[i]!, p] as const)
      .filter(([q, p]) => p.clusters > q.clusters)
      .map(([q, p]) => {
        return `${ms((p[key] * p.clusters - q[key] * q.clusters) / (p.clusters - q.clusters))} ms (${q.clusters.toLocaleString('en')} → ${p.clusters.toLocaleString('en')})`;
      })
      .join(', ');
  const v8 = (i: number) => ms(v8PerCluster[i]!);
  say('');
  say(
    `Largest distance from the mean CPU per cluster (target ±20 %): full ${spread(points.map((p) => p.fullCpuPerCluster)).toFixed(0)} %, steady ${spread(points.map((p) => p.steadyCpuPerCluster)).toFixed(0)} %. What each cluster added from one estate to the next cost (the difference of the runs' CPU times over the difference of their sizes): full ${marginal('fullCpuPerCluster')}; steady ${marginal('steadyCpuPerCluster')}. The small estates pay for the run's warm-up on top: the command's start-up, the first use of each SDK and its connections, and V8 compiling the code that runs hot — V8's worker threads (its optimising compilers, and concurrent garbage collection) took ${v8(0)} ms per cluster at ${points[0]!.clusters.toLocaleString('en')} clusters and ${v8(points.length - 1)} ms at ${points.at(-1)!.clusters.toLocaleString('en')}.`,
  );
  // Beside the run's own file; BENCHMARKS.md shows the copy in bench/ that the record's curve section names.
  const chart = 'scaling.svg';
  mkdirSync(join(ROOT, '.cache', 'bench'), { recursive: true });
  writeFileSync(
    join(ROOT, '.cache', 'bench', chart),
    scalingChart(
      points,
      `npm run bench, ${new Date().toISOString().slice(0, 10)}, ${(await import('node:os')).cpus().length} cores; file hub, sync.concurrency ${BENCH_CONCURRENCY}`,
    ),
  );
  say('');
  say(`![CPU per cluster and peak RSS against the estate's size](${chart})`);
  say('');
}
mkdirSync(join(ROOT, '.cache', 'bench'), { recursive: true });
// Never BENCHMARKS.md itself: it keeps every earlier run's figures beside the new ones, which a run does not know.
const written = join('.cache', 'bench', whole ? 'BENCHMARKS.md' : 'BENCHMARKS.partial.md');
writeFileSync(join(ROOT, written), `${lines.join('\n')}\n`);
console.error(`bench: written to ${written}; copy the sections worth keeping into BENCHMARKS.md, dated`);
