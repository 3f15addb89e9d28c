/**
 * The full sync at scale: a synthetic estate (by default 10,000 clusters: 4,000 EKS in 100 accounts ×
 * 4 regions, 3,000 GKE in 100 projects, 3,000 AKS in 50 subscriptions) served by local servers that add
 * a fixed latency to every call, synced by the real `cpsync sync` CLI into the real hub (or the file
 * hub), then re-synced unchanged. Reports wall time against the lower bound the provider round trips
 * set at the configured concurrency, hub reads and writes, events published and peak RSS.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join, resolve } from 'node:path';
import { stringify } from 'yaml';
import { aksCluster, gkeCluster, localCloudAccess } from '../env/emulators.ts';
import { startArmServer } from '../env/fakes/armServer.ts';
import { startFakeAws, type EksClusterJson, type EksNodegroupJson } from '../env/fakes/awsServer.ts';
import { startGkeServer } from '../env/fakes/gkeServer.ts';
import { startHub, stopHub } from '../env/hub.ts';
import { HUB_ACCOUNT } from '../support/aws.ts';
import { temporaryDirectory } from '../support/tmp.ts';
import {
  apiserverProfileRequests,
  fileHubInodes,
  fileHubWrites,
  requestsBetween,
} from '../support/hubCounts.ts';
import { parseConfig } from '../../adapters/compose/config.ts';

const ROOT = resolve(import.meta.dirname, '../..');
const CLI = join(ROOT, 'cli/cpsync.mjs');
const EKS_REGIONS = ['ap-southeast-1', 'eu-west-1', 'us-east-1', 'us-west-2'];
const GKE_LOCATIONS = ['europe-west1', 'us-central1-a', 'us-east4', 'asia-east1-b'];

export interface ScaleOptions {
  directory: string;
  /** Multiplies the number of accounts, projects and subscriptions. @default 1 */
  scale?: number;
  latencyMillis?: number;
  /** Sync into the file hub instead of the real kube-apiserver. */
  fileHub?: boolean;
  /** `sync.concurrency`: scopes in flight at once. */
  scopeConcurrency?: number;
  /** Also sync once after a tenth of the EKS clusters changed (their Kubernetes version). */
  changed?: boolean;
  /** Print the section (otherwise only return the figures). @default true */
  report?: boolean;
  /** Said after the section's heading. */
  title?: string;
  /** `providers.aks.listing`. @default the configuration's */
  aksListing?: 'arm' | 'resourceGraph';
  /**
   * After the steady-state re-sync, more of them, `rounds` times, each round with each set of Node flags in turn
   * (`''`: none) for the measured process: the same estate and inventory, so that variants are compared within
   * one run and one hour of this machine's speed.
   */
  steadyVariants?: { flags: readonly string[]; rounds: number };
  /**
   * Where the file hub's inventory and the outbox (the state directory) go, to compare file systems (a tmpfs
   * against the disk). @default `directory`
   */
  stateDirectory?: string;
  /** `providers.eks.clusterMaxAgeMinutes`. @default the configuration's */
  eksClusterMaxAgeMinutes?: number;
  /**
   * After the steady-state re-sync, one more as if it ran this many minutes later (the default schedule's 15): every
   * remembered answer in the state directory made that much older first, so the answers whose time came round in
   * between are asked again, as at a scheduled sync.
   */
  laterMinutes?: number;
  say: (line?: string) => void;
}

/**
 * Makes every answer remembered in the outbox's `answers/` folder `millis` older (when it was asked, and when a
 * DescribeCluster answer was given): as if the next sync ran that much later. One step only: each cluster's time in
 * the period follows the clock, which this does not move, so ageing the answers again would ask the same clusters
 * again. How many it aged.
 */
function ageRememberedAnswers(outbox: string, millis: number): number {
  const root = join(outbox, 'answers');
  let aged = 0;
  for (const folder of readdirSync(root))
    for (const file of readdirSync(join(root, folder))) {
      const path = join(root, folder, file);
      const document = JSON.parse(readFileSync(path, 'utf8')) as {
        records: Array<{ askedAt: number; answer: { describedAt?: number } }>;
      };
      for (const record of document.records) {
        record.askedAt -= millis;
        if (typeof record.answer.describedAt === 'number') record.answer.describedAt -= millis;
        aged++;
      }
      writeFileSync(path, `${JSON.stringify(document)}\n`);
    }
  return aged;
}

/** The estate's shape: what the lower bound is computed from. */
interface Shape {
  accounts: number;
  clustersPerEksScope: number;
  nodegroupsPerCluster: number;
  projects: number;
  clustersPerProject: number;
  subscriptions: number;
  clustersPerSubscription: number;
  armPageSize: number;
}

interface Limits {
  latencyMillis: number;
  scopeConcurrency: number;
  eksPerAccount: number;
  eksOverall: number;
}

/** Deterministic filler of a given length, standing in for a certificate authority bundle. */
function blob(seed: string, length: number): string {
  const bytes: Buffer[] = [];
  for (let i = 0; i * 32 < length; i++) bytes.push(createHash('sha256').update(`${seed}/${i}`).digest());
  return Buffer.concat(bytes).subarray(0, length).toString('base64');
}

const pad = (n: number, width: number) => String(n).padStart(width, '0');

function eksCluster(account: string, region: string, name: string, index: number) {
  const createdAt = 1_700_000_000 + index * 3600;
  const cluster: EksClusterJson = {
    name,
    arn: `arn:aws:eks:${region}:${account}:cluster/${name}`,
    createdAt,
    version: index % 3 === 0 ? '1.30' : '1.31',
    endpoint: `https://${createHash('md5').update(`${account}/${region}/${name}`).digest('hex').toUpperCase()}.gr7.${region}.eks.amazonaws.com`,
    roleArn: `arn:aws:iam::${account}:role/eks-cluster`,
    resourcesVpcConfig: {
      subnetIds: ['subnet-0a1b2c3d4e5f60001', 'subnet-0a1b2c3d4e5f60002'],
      securityGroupIds: [],
      clusterSecurityGroupId: 'sg-0a1b2c3d4e5f60003',
      vpcId: 'vpc-0a1b2c3d4e5f60004',
      endpointPublicAccess: index % 4 !== 0,
      endpointPrivateAccess: true,
      publicAccessCidrs: ['0.0.0.0/0'],
    },
    kubernetesNetworkConfig: { serviceIpv4Cidr: '10.100.0.0/16', ipFamily: 'ipv4' },
    identity: { oidc: { issuer: `https://oidc.eks.${region}.amazonaws.com/id/${pad(index, 32)}` } },
    status: 'ACTIVE',
    certificateAuthority: { data: blob(`${account}/${region}/${name}`, 1100) },
    platformVersion: 'eks.12',
    tags: { team: ['payments', 'search', 'data', 'web'][index % 4]!, env: index % 2 ? 'prod' : 'staging' },
    health: { issues: [] },
    accessConfig: { authenticationMode: 'API_AND_CONFIG_MAP' },
  };
  const nodegroups: EksNodegroupJson[] = [
    {
      nodegroupName: 'general',
      nodegroupArn: `arn:aws:eks:${region}:${account}:nodegroup/${name}/general/${pad(index, 8)}`,
      clusterName: name,
      version: cluster.version,
      releaseVersion: '1.31.0-20241024',
      createdAt,
      status: 'ACTIVE',
      capacityType: 'ON_DEMAND',
      scalingConfig: { minSize: 2, maxSize: 6, desiredSize: 3 },
      instanceTypes: ['m6i.large'],
      subnets: ['subnet-0a1b2c3d4e5f60001'],
      amiType: 'AL2023_x86_64_STANDARD',
      nodeRole: `arn:aws:iam::${account}:role/eks-node`,
      health: { issues: [] },
    },
  ];
  return { cluster, nodegroups };
}

/** The EKS API's operations, as the local AWS server counts them (the rest are STS, and the bus). */
const EKS_OPERATIONS = new Set(['ListClusters', 'DescribeCluster', 'ListNodegroups', 'DescribeNodegroup']);
const AWS_TOKEN_OPERATIONS = new Set(['AssumeRole', 'GetCallerIdentity']);

/**
 * One run's provider requests, by cloud: cloud API calls apart from token and credential requests (STS,
 * Google's token endpoints, Entra's), the bus (PutEvents) left out.
 */
function countProviderCalls(
  awsCalls: ReadonlyArray<readonly [string, number]>,
  gkeRequests: ReadonlyArray<{ method: string; path: string }>,
  armRequests: ReadonlyArray<{ method: string; path: string }>,
) {
  const sum = (calls: ReadonlyArray<readonly [string, number]>) => calls.reduce((a, [, n]) => a + n, 0);
  const gkeToken = (path: string) => path === '/token' || path === '/v1/token' || path === '/tokeninfo';
  // Entra's paths start with the tenant (`/<tenant>/oauth2/v2.0/token`, its OpenID configuration); ARM's do not.
  const armToken = (path: string) => !/^\/(subscriptions|providers)(\/|$)/i.test(path);
  const armCalls = armRequests.filter((r) => !armToken(r.path));
  const eks = sum(awsCalls.filter(([op]) => EKS_OPERATIONS.has(op)));
  const gke = gkeRequests.filter((r) => !gkeToken(r.path)).length;
  const arm = {
    pages: armCalls.filter((r) => r.method === 'GET' && /\/managedClusters$/i.test(r.path)).length,
    graph: armCalls.filter((r) => /^\/providers\/Microsoft\.ResourceGraph\/resources$/i.test(r.path)).length,
    gets: armCalls.filter((r) => r.method === 'GET' && /\/managedClusters\/[^/]+$/i.test(r.path)).length,
    credentials: armCalls.filter((r) => /\/listClusterUserCredential$/i.test(r.path)).length,
  };
  const tokens = {
    aws: sum(awsCalls.filter(([op]) => AWS_TOKEN_OPERATIONS.has(op))),
    gke: gkeRequests.length - gke,
    arm: armRequests.length - armCalls.length,
  };
  return {
    aws: Object.fromEntries(awsCalls),
    eks,
    gke,
    aks: armCalls.length,
    arm,
    tokens,
    total: eks + gke + armCalls.length + tokens.aws + tokens.gke + tokens.arm,
  };
}

/**
 * The least wall time the provider round trips alone allow, each taking `latency` and nothing else
 * taking any time, under the configured limits. The largest of four necessary bounds:
 * - EKS calls under the overall limit: ⌈calls / overall⌉ rounds;
 * - one account's calls under its own limit, after AssumeRole and a ListClusters: 2 + ⌈calls / perAccount⌉ rounds;
 * - scope slots: every scope holds one of `scopeConcurrency` slots for at least its own chain of calls
 *   (EKS: ListClusters → DescribeCluster → ListNodegroups → DescribeNodegroup; GKE: one listing;
 *   AKS: its pages one after another), so Σ chains / slots;
 * - the longest single chain.
 * Token and credential fetches are left out (they only lengthen the real run), so this is a true lower bound.
 */
function lowerBound(shape: Shape, limits: Limits) {
  const L = limits.latencyMillis;
  const eksScopes = shape.accounts * EKS_REGIONS.length;
  const limitedPerCluster = 2 + shape.nodegroupsPerCluster;
  const limitedPerAccount = EKS_REGIONS.length * shape.clustersPerEksScope * limitedPerCluster;
  const eksChain = (1 + 2 + (shape.nodegroupsPerCluster > 0 ? 1 : 0)) * L;
  const aksChain = Math.max(1, Math.ceil(shape.clustersPerSubscription / shape.armPageSize)) * L;
  const gkeChain = L;
  const overall = Math.ceil((shape.accounts * limitedPerAccount) / limits.eksOverall) * L;
  const perAccount = (2 + Math.ceil(limitedPerAccount / limits.eksPerAccount)) * L;
  const slots =
    (eksScopes * eksChain + shape.projects * gkeChain + shape.subscriptions * aksChain) /
    limits.scopeConcurrency;
  const chain = Math.max(eksChain, aksChain, gkeChain);
  const bounds = { overall, perAccount, slots, chain };
  const [binding, value] = Object.entries(bounds).sort((a, b) => b[1] - a[1])[0]!;
  return { millis: value, binding, bounds };
}

interface RunResult {
  wallMillis: number;
  engineMillis: number;
  reads: number;
  writes: number;
  published: number;
  created: number;
  updated: number;
  unchanged: number;
  complete: number;
  scopes: number;
  peakRssBytes: number;
  cpuMillis: number;
  /** The part of `cpuMillis` spent in the kernel on the process's behalf (system time: files, sockets). */
  systemCpuMillis: number;
  /** The process's CPU time by kind of thread (main, v8, libuv, other), where /proc tells. */
  threadCpuMillis: Record<string, number>;
  /** CPU time the hub's processes (kube-apiserver, etcd) used meanwhile. */
  hubCpuMillis: number;
  stderr: string;
}

/** CPU time (user + system) a process has used so far, from /proc. */
function processCpuMillis(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return 0;
  }
}

async function runCli(
  configPath: string,
  env: Record<string, string>,
  hubPids: number[],
  nodeFlags = process.env.CPSYNC_BENCH_NODE_FLAGS ?? '',
): Promise<RunResult> {
  const hubCpu = () => hubPids.reduce((sum, pid) => sum + processCpuMillis(pid), 0);
  const hubCpuBefore = hubCpu();
  const started = performance.now();
  const child = spawn(
    process.execPath,
    [
      // Extra Node flags for the measured process, e.g. CPSYNC_BENCH_NODE_FLAGS=--max-old-space-size=256.
      ...nodeFlags.split(' ').filter(Boolean),
      '--import',
      join(ROOT, 'test/bench/peakRss.ts'),
      CLI,
      '-c',
      configPath,
      'sync',
    ],
    {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const code = await new Promise<number>((done) => child.on('close', (c) => done(c ?? -1)));
  const wallMillis = performance.now() - started;
  const summary =
    /(\d+) scope\(s\), (\d+) complete; (\d+) created, (\d+) updated, \d+ deleted, (\d+) unchanged; ([\d.]+) s\nhub: (\d+) read\(s\), (\d+) write\(s\); events: (\d+) published/.exec(
      stderr,
    );
  const rss = /peak-rss-bytes (\d+)/.exec(stderr);
  const cpu = /cpu-micros (\d+)/.exec(stderr);
  const system = /cpu-system-micros (\d+)/.exec(stderr);
  const threads = /thread-cpu-millis (\{.*\})/.exec(stderr);
  if (code !== 0 || !summary || !rss) throw new Error(`cpsync sync exited ${code}:\n${stderr.slice(-3000)}`);
  const n = (i: number) => Number(summary[i]);
  return {
    wallMillis,
    engineMillis: n(6) * 1000,
    scopes: n(1),
    complete: n(2),
    created: n(3),
    updated: n(4),
    unchanged: n(5),
    reads: n(7),
    writes: n(8),
    published: n(9),
    peakRssBytes: Number(rss[1]),
    cpuMillis: Number(cpu?.[1] ?? 0) / 1000,
    systemCpuMillis: Number(system?.[1] ?? 0) / 1000,
    threadCpuMillis: threads ? (JSON.parse(threads[1]!) as Record<string, number>) : {},
    hubCpuMillis: hubCpu() - hubCpuBefore,
    stderr,
  };
}

export async function fullSyncAtScale(options: ScaleOptions) {
  const { directory } = options;
  const scale = options.scale ?? 1;
  // The configuration's own defaults (read from its schema, not restated here), unless the bench is told otherwise.
  const defaults = parseConfig({ providers: { eks: { accounts: ['000000000000'] } } }, 'defaults');
  const limits: Limits = {
    latencyMillis: options.latencyMillis ?? 50,
    scopeConcurrency: options.scopeConcurrency ?? defaults.sync.concurrency,
    eksPerAccount: defaults.providers.eks!.perAccountConcurrency,
    eksOverall: defaults.providers.eks!.overallConcurrency,
  };
  const concurrencyLabel =
    options.scopeConcurrency === undefined || options.scopeConcurrency === defaults.sync.concurrency
      ? 'the default'
      : `chosen by the bench; the default is ${defaults.sync.concurrency}`;
  const shape: Shape = {
    accounts: Math.max(1, Math.round(100 * scale)),
    clustersPerEksScope: 10,
    nodegroupsPerCluster: 1,
    projects: Math.max(1, Math.round(100 * scale)),
    clustersPerProject: 30,
    subscriptions: Math.max(1, Math.round(50 * scale)),
    clustersPerSubscription: 60,
    armPageSize: 50,
  };
  mkdirSync(directory, { recursive: true });
  const state = options.stateDirectory ?? directory;
  mkdirSync(state, { recursive: true });
  const aws = await startFakeAws({ latencyMillis: limits.latencyMillis, hubAccount: HUB_ACCOUNT });
  const gke = await startGkeServer({ latencyMillis: limits.latencyMillis });
  const arm = await startArmServer({ latencyMillis: limits.latencyMillis });
  arm.pageSize = shape.armPageSize;
  const hub = options.fileHub ? undefined : await startHub(join(directory, 'hub'));
  try {
    const accounts = Array.from({ length: shape.accounts }, (_, i) => String(300_000_000_000 + i));
    let index = 0;
    for (const account of accounts)
      for (const region of EKS_REGIONS)
        aws.clusters.set(
          `${account}/${region}`,
          Array.from({ length: shape.clustersPerEksScope }, (_, i) =>
            eksCluster(account, region, `eks-${pad(i, 3)}`, index++),
          ),
        );
    const projects = Array.from({ length: shape.projects }, (_, i) => `bench-project-${pad(i, 3)}`);
    for (const project of projects)
      gke.clusters.set(
        project,
        Array.from({ length: shape.clustersPerProject }, (_, i) => {
          const location = GKE_LOCATIONS[i % GKE_LOCATIONS.length]!;
          const kind = /-[a-z]$/.test(location) ? 'zones' : 'locations';
          const name = `gke-${pad(i, 3)}`;
          return gkeCluster(name, location, {
            selfLink: `https://container.googleapis.com/v1/projects/${project}/${kind}/${location}/clusters/${name}`,
            masterAuth: { clusterCaCertificate: blob(`${project}/${name}`, 1100) },
          });
        }),
      );
    const subscriptions = Array.from(
      { length: shape.subscriptions },
      (_, i) => `00000000-0000-4000-8000-${pad(i, 12)}`,
    );
    for (const subscription of subscriptions)
      arm.clusters.set(
        subscription,
        Array.from({ length: shape.clustersPerSubscription }, (_, i) => {
          const name = `aks-${pad(i, 3)}`;
          const group = `rg-${pad(i % 6, 2)}`;
          return {
            ...aksCluster(name, group),
            id: `/subscriptions/${subscription}/resourcegroups/${group}/providers/Microsoft.ContainerService/managedClusters/${name}`,
          };
        }),
      );
    const total =
      shape.accounts * EKS_REGIONS.length * shape.clustersPerEksScope +
      shape.projects * shape.clustersPerProject +
      shape.subscriptions * shape.clustersPerSubscription;

    const access = localCloudAccess(directory, gke, arm);
    const configPath = join(directory, 'cpsync.yaml');
    writeFileSync(
      configPath,
      stringify({
        inventory: { tagAllowList: ['team', 'env'] },
        providers: {
          eks: {
            accounts,
            regions: EKS_REGIONS,
            endpoint: aws.endpoint,
            ...(options.eksClusterMaxAgeMinutes === undefined
              ? {}
              : { clusterMaxAgeMinutes: options.eksClusterMaxAgeMinutes }),
          },
          gke: { projects, ...access.gke },
          aks: {
            subscriptions,
            ...access.aks,
            ...(options.aksListing ? { listing: options.aksListing } : {}),
          },
        },
        hub: hub ? { kubeconfig: hub.kubeconfig } : { directory: join(state, 'inventory') },
        bus: { eventBridge: { busName: 'cpsync-events', region: 'us-east-1', endpoint: aws.endpoint } },
        outbox: { directory: join(state, 'outbox') },
        ...(limits.scopeConcurrency === defaults.sync.concurrency
          ? {}
          : { sync: { concurrency: limits.scopeConcurrency } }),
      }),
    );
    const env = access.env;

    const bound = lowerBound(shape, limits);
    const eksScopes = shape.accounts * EKS_REGIONS.length;
    const scopes = eksScopes + shape.projects + shape.subscriptions;
    const report = options.report ?? true;
    const say = report ? options.say : () => {};
    say(
      `## Full sync at scale${options.fileHub ? ' (file hub)' : ''}${options.title ? `: ${options.title}` : ''}`,
    );
    say('');
    say(
      `Estate: ${total.toLocaleString('en')} clusters — ${(eksScopes * shape.clustersPerEksScope).toLocaleString('en')} EKS in ${shape.accounts} accounts × ${EKS_REGIONS.length} regions (${shape.nodegroupsPerCluster} node group each), ${(shape.projects * shape.clustersPerProject).toLocaleString('en')} GKE in ${shape.projects} projects, ${(shape.subscriptions * shape.clustersPerSubscription).toLocaleString('en')} AKS in ${shape.subscriptions} subscriptions (${shape.armPageSize} per page): ${scopes} scopes.`,
    );
    say(
      `Every call to the local EKS/STS/EventBridge, GKE and ARM servers waits ${limits.latencyMillis} ms. Configuration: \`sync.concurrency: ${limits.scopeConcurrency}\` (${concurrencyLabel}), EKS \`perAccountConcurrency: ${limits.eksPerAccount}\`, \`overallConcurrency: ${limits.eksOverall}\` (the defaults); every other setting its default. Hub: ${hub ? 'the real kube-apiserver + etcd' : 'the file hub'}; outbox: files; run by the \`cpsync sync\` command as installed (the bundle in dist/cpsync/) in its own process.`,
    );
    say('');

    const hubPids = hub ? [hub.apiserverPid, hub.etcdPid] : [];
    const hubCounts = async () =>
      hub
        ? { requests: await apiserverProfileRequests(hub) }
        : { files: fileHubInodes(join(state, 'inventory')) };
    /** What the hub itself counted between two readings: the kube-apiserver's counters, or the files written. */
    const counted = async (before: Awaited<ReturnType<typeof hubCounts>>) => {
      const after = await hubCounts();
      if (before.requests && after.requests) {
        const between = requestsBetween(before.requests, after.requests);
        return { reads: between.reads, writes: between.writes };
      }
      return { reads: undefined, writes: fileHubWrites(before.files!, after.files!).total };
    };
    /** Where the local servers' counts stand: AWS calls by operation, and how many requests GKE and ARM logged. */
    const providerMark = () => ({
      aws: new Map(aws.calls),
      gke: gke.requests.length,
      arm: arm.requests.length,
    });
    /** The calls the local servers counted since `mark`: one run's, by cloud. */
    const providerCallsSince = (mark: ReturnType<typeof providerMark>) =>
      countProviderCalls(
        [...aws.calls].map(([op, n]) => [op, n - (mark.aws.get(op) ?? 0)] as const),
        gke.requests.slice(mark.gke),
        arm.requests.slice(mark.arm),
      );
    /** One `cpsync sync`, with what the hub, the bus and the clouds saw of it and the scope durations its summaries report. */
    const sync = async (nodeFlags?: string) => {
      const eventsBefore = aws.events;
      const bytesBefore = aws.detailBytes;
      aws.scopeSummaries.splice(0);
      const before = await hubCounts();
      const mark = providerMark();
      const run = await runCli(configPath, env, hubPids, nodeFlags);
      return {
        run,
        hub: await counted(before),
        providers: providerCallsSince(mark),
        events: aws.events - eventsBefore,
        detailBytes: aws.detailBytes - bytesBefore,
        scopeDurations: aws.scopeSummaries.splice(0).map((summary) => summary.durationMs),
      };
    };

    const ownCpuBefore = process.cpuUsage();
    const fullStarted = performance.now();
    const full = await sync();
    const first = full.run;
    const ownCpu = process.cpuUsage(ownCpuBefore);
    const calls = full.providers.aws;
    const spans = aws.eksSpans.splice(0);
    const eksStart = Math.min(...spans.map(([a]) => a));
    const eksEnd = Math.max(...spans.map(([, b]) => b));
    const eksBusy = spans.reduce((sum, [a, b]) => sum + (b - a), 0) / (eksEnd - eksStart);
    const providerCalls = full.providers.total;
    if (first.created !== total || first.complete !== scopes)
      throw new Error(
        `first sync created ${first.created}/${total}, ${first.complete}/${scopes} scopes complete`,
      );

    // Changed: a tenth of the EKS clusters move to a new Kubernetes version, as an upgrade wave would.
    let changed: Awaited<ReturnType<typeof sync>> | undefined;
    let changedClusters = 0;
    if (options.changed) {
      for (const [key, clusters] of aws.clusters)
        if (Number(key.split('/')[0]) % 10 === 0)
          for (const { cluster, nodegroups } of clusters) {
            cluster.version = '1.32';
            for (const nodegroup of nodegroups) nodegroup.version = '1.32';
            changedClusters++;
          }
      changed = await sync();
      if (changed.run.updated !== changedClusters)
        throw new Error(
          `the changed sync updated ${changed.run.updated} of ${changedClusters} changed clusters`,
        );
    }

    const steadyRound = await sync();
    let later: Awaited<ReturnType<typeof sync>> | undefined;
    if (options.laterMinutes !== undefined) {
      if (ageRememberedAnswers(join(state, 'outbox'), options.laterMinutes * 60_000) === 0)
        throw new Error('no answers were remembered to age');
      later = await sync();
    }

    const sec = (millis: number) => `${(millis / 1000).toFixed(2)} s`;
    const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MB`;
    const perCluster = (run: RunResult) => `${(run.cpuMillis / total).toFixed(2)} ms`;
    const columns = [full, ...(changed ? [changed] : []), steadyRound, ...(later ? [later] : [])];
    const row = (label: string, cell: (round: (typeof columns)[number]) => string) =>
      say(`| ${label} | ${columns.map(cell).join(' | ')} |`);
    say(
      `| | full sync${changed ? ` | ${changedClusters.toLocaleString('en')} clusters changed` : ''} | steady-state re-sync |${later ? ` steady-state re-sync ${options.laterMinutes} minutes later |` : ''}`,
    );
    say(`|${' --- |'.repeat(columns.length + 1)}`);
    row(
      '**CPU of the cpsync process per cluster** (targets: full ≤ 1.5 ms, steady ≤ 1.0 ms)',
      (r) => `**${perCluster(r.run)}**`,
    );
    row(
      'of which, per cluster: main thread / V8 workers (compilers, concurrent GC) / libuv pool',
      (r) =>
        ['main', 'v8', 'libuv']
          .map((kind) => `${((r.run.threadCpuMillis[kind] ?? 0) / total).toFixed(2)}`)
          .join(' / ') + ' ms',
    );
    row(
      'of which, per cluster: in the kernel on its behalf (system time: files, sockets), as this disk costs it',
      (r) => `${(r.run.systemCpuMillis / total).toFixed(2)} ms`,
    );
    row(
      'CPU time: cpsync process / hub (apiserver + etcd)',
      (r) => `${sec(r.run.cpuMillis)} / ${hub ? sec(r.run.hubCpuMillis) : '–'}`,
    );
    row('wall time of `cpsync sync` (process start to exit)', (r) => sec(r.run.wallMillis));
    row('engine run (listing, hub, events)', (r) => sec(r.run.engineMillis));
    row(`provider round-trip lower bound (${bound.binding})`, () => sec(bound.millis));
    row('ratio, wall time / bound', (r) => (r.run.wallMillis / bound.millis).toFixed(2));
    row(
      "profiles created / updated / unchanged (cpsync's summary)",
      (r) => `${r.run.created} / ${r.run.updated} / ${r.run.unchanged}`,
    );
    row(
      hub
        ? 'hub requests for ClusterProfiles, as the kube-apiserver counted them (reads / writes)'
        : 'profile files written, as the file system shows them (net per file: new inodes, removals)',
      (r) => (hub ? `${r.hub.reads} / ${r.hub.writes}` : `${r.hub.writes}`),
    );
    if (hub) {
      row('**hub writes per created / changed / unchanged profile** (targets 2 / ≤ 2 / 0)', (r) => {
        const n = r.run.created + r.run.updated;
        return `**${n === 0 ? `${r.hub.writes} for ${r.run.unchanged} unchanged` : (r.hub.writes / n).toFixed(2)}**`;
      });
      row('kube-apiserver + etcd CPU during the run per write (its reads and idle time included)', (r) =>
        r.hub.writes === 0 ? '–' : `${(r.run.hubCpuMillis / r.hub.writes).toFixed(2)} ms`,
      );
    }
    row("hub reads / writes, as cpsync's summary counts them", (r) => `${r.run.reads} / ${r.run.writes}`);
    row(
      `events published (change events + ${scopes} scope summaries)`,
      (r) => `${r.run.published} (${r.run.published - scopes} + ${scopes})`,
    );
    row('entries the EventBridge server received', (r) => `${r.events}`);
    row('peak RSS of the cpsync process (target ≤ 512 MB)', (r) => mb(r.run.peakRssBytes));
    const clustersOf = {
      eks: eksScopes * shape.clustersPerEksScope,
      gke: shape.projects * shape.clustersPerProject,
      aks: shape.subscriptions * shape.clustersPerSubscription,
    };
    const per = (calls: number, clusters: number) => (calls / clusters).toFixed(calls === 0 ? 0 : 2);
    row(
      '**cloud API calls per cluster, as the local servers counted them: EKS / GKE / AKS** (steady targets: AKS ≤ 0.5, GKE ≤ 0.05)',
      (r) =>
        `**${per(r.providers.eks, clustersOf.eks)} / ${per(r.providers.gke, clustersOf.gke)} / ${per(r.providers.aks, clustersOf.aks)}**`,
    );
    row(
      'of which: EKS by operation; AKS listing pages / Resource Graph queries / per-cluster reads (GET) / listClusterUserCredential',
      (r) =>
        `${Object.entries(r.providers.aws)
          .filter(([op]) => EKS_OPERATIONS.has(op) && r.providers.aws[op]! > 0)
          .map(([op, n]) => `${op} ${n}`)
          .join(
            ', ',
          )}; ${r.providers.arm.pages} / ${r.providers.arm.graph} / ${r.providers.arm.gets} / ${r.providers.arm.credentials}`,
    );
    row(
      'token and credential requests apart: STS (AssumeRole, GetCallerIdentity) / Google token / Entra token and metadata',
      (r) => `${r.providers.tokens.aws} / ${r.providers.tokens.gke} / ${r.providers.tokens.arm}`,
    );
    say('');
    say(
      `Lower bound terms: EKS overall limit ${sec(bound.bounds.overall)}, one account's limit ${sec(bound.bounds.perAccount)}, scope slots ${sec(bound.bounds.slots)}, longest chain ${sec(bound.bounds.chain)}. Provider requests in the full sync alone, tokens included, the bus left out: ${providerCalls.toLocaleString('en')} (${Object.entries(
        calls,
      )
        .filter(([op, n]) => op !== 'PutEvents' && n > 0)
        .map(([op, n]) => `${op} ${n}`)
        .join(
          ', ',
        )}; GKE ${full.providers.gke + full.providers.tokens.gke}, ARM ${full.providers.aks + full.providers.tokens.arm}); peak calls in flight at the AWS server: ${aws.peakInFlight}; EKS calls went on from ${sec(eksStart - fullStarted)} after the start for ${sec(eksEnd - eksStart)}, ${eksBusy.toFixed(1)} in flight on average (the limit is ${limits.eksOverall}); the local servers used ${sec((ownCpu.user + ownCpu.system) / 1000)} of CPU during the full sync (${cpus().length} cores in all).`,
    );
    say('');
    if (options.steadyVariants) await compareSteadyVariants(options.steadyVariants, sync, total, say);
    return {
      clusters: total,
      eksClusters: eksScopes * shape.clustersPerEksScope,
      scopes,
      scopeConcurrency: limits.scopeConcurrency,
      full,
      ...(changed ? { changed } : {}),
      steady: steadyRound,
      ...(later ? { later } : {}),
      providerCalls,
      calls,
    };
  } finally {
    await Promise.allSettled([aws.stop(), gke.stop(), arm.stop()]);
    if (hub) await stopHub(hub.directory);
  }
}

/** Steady-state re-syncs with each set of Node flags taking turns, a line per set: CPU, V8 workers, peak RSS. */
async function compareSteadyVariants(
  variants: NonNullable<ScaleOptions['steadyVariants']>,
  sync: (nodeFlags?: string) => Promise<{ run: RunResult }>,
  clusters: number,
  say: (line?: string) => void,
): Promise<void> {
  const runs = new Map<string, RunResult[]>(variants.flags.map((flags) => [flags, []]));
  for (let round = 0; round < variants.rounds; round++)
    for (const flags of variants.flags) runs.get(flags)!.push((await sync(flags)).run);
  const each = (results: RunResult[], value: (run: RunResult) => number, digits = 2) =>
    results.map((run) => value(run).toFixed(digits)).join(', ');
  say(
    `Steady-state re-syncs taking turns, ${variants.rounds} round(s) (\`CPSYNC_BENCH_STEADY_VARIANTS\`), each figure one run:`,
  );
  say('');
  say('| Node flags of the cpsync process | CPU per cluster | of which V8 workers | peak RSS |');
  say('| --- | --- | --- | --- |');
  for (const [flags, results] of runs)
    say(
      `| ${flags ? `\`${flags}\`` : 'none (as installed)'} | ${each(results, (run) => run.cpuMillis / clusters)} ms | ${each(results, (run) => (run.threadCpuMillis.v8 ?? 0) / clusters)} ms | ${each(results, (run) => run.peakRssBytes / 2 ** 20, 0)} MB |`,
    );
  say('');
}

/** statfs's magic number of a tmpfs: files held in memory. */
const TMPFS_MAGIC = 0x01021994;

/**
 * The defaults' full sync and steady-state re-sync into the file hub, with the state directory (the inventory
 * and the outbox) on the disk the bench's temporary folder is on, and on a tmpfs (`memory`), taking turns, the
 * order swapped every round: how much of the CPU per cluster is the kernel's work for this disk's file system
 * rather than cpsync's (a profile created is a file created).
 */
export async function compareStateFileSystems(options: {
  memory: string;
  rounds: number;
  scale?: number;
  latencyMillis?: number;
  say: (line?: string) => void;
}): Promise<void> {
  const { say } = options;
  say('## Full sync at scale (file hub), the state directory on the disk and in memory');
  say('');
  let isTmpfs = false;
  try {
    isTmpfs = statfsSync(options.memory).type === TMPFS_MAGIC;
  } catch {
    // No such folder: said below.
  }
  if (!isTmpfs) {
    say(`Not measured: ${options.memory} is not a tmpfs on this machine.`);
    say('');
    return;
  }
  type Way = 'disk' | 'memory';
  const figures = new Map<Way, Array<{ full: RunResult; steady: RunResult; clusters: number }>>([
    ['disk', []],
    ['memory', []],
  ]);
  for (let round = 0; round < options.rounds; round++)
    for (const way of (round % 2 ? ['memory', 'disk'] : ['disk', 'memory']) as Way[]) {
      const directory = temporaryDirectory('cpsync-scale-');
      const state = way === 'memory' ? temporaryDirectory('cpsync-state-', options.memory) : undefined;
      try {
        const measured = await fullSyncAtScale({
          directory,
          ...(state ? { stateDirectory: state } : {}),
          fileHub: true,
          report: false,
          ...(options.scale === undefined ? {} : { scale: options.scale }),
          ...(options.latencyMillis === undefined ? {} : { latencyMillis: options.latencyMillis }),
          say,
        });
        figures
          .get(way)!
          .push({ full: measured.full.run, steady: measured.steady.run, clusters: measured.clusters });
      } finally {
        rmSync(directory, { recursive: true, force: true });
        if (state) rmSync(state, { recursive: true, force: true });
      }
    }
  const each = (runs: Array<{ clusters: number }>, value: (index: number) => number) =>
    runs.map((run, i) => (value(i) / run.clusters).toFixed(2)).join(', ');
  say(
    `The configuration's defaults into the file hub, as in the section above, ${options.rounds} rounds, the two taking turns (the order swapped every round), each a full sync and a steady-state re-sync by the \`cpsync sync\` command in its own process; the state directory (the file hub's inventory and the outbox) in the bench's temporary folder on this machine's disk, or in ${options.memory} (a tmpfs). Each figure is one run's, per cluster.`,
  );
  say('');
  say(
    '| state directory | CPU, full sync | of which system time | CPU, steady | of which system time | peak RSS, full / steady |',
  );
  say('| --- | --- | --- | --- | --- | --- |');
  for (const [way, runs] of figures)
    say(
      `| ${way === 'disk' ? 'on the disk (as the sections above)' : `in memory (${options.memory})`} | ${each(runs, (i) => runs[i]!.full.cpuMillis)} ms | ${each(runs, (i) => runs[i]!.full.systemCpuMillis)} ms | ${each(runs, (i) => runs[i]!.steady.cpuMillis)} ms | ${each(runs, (i) => runs[i]!.steady.systemCpuMillis)} ms | ${runs.map((r) => `${(r.full.peakRssBytes / 2 ** 20).toFixed(0)} / ${(r.steady.peakRssBytes / 2 ** 20).toFixed(0)}`).join(', ')} MB |`,
    );
  say('');
}
