/**
 * Asking the clouds only what changed, along the entry points that reach the per-cluster reads: the `cpsync sync`
 * command (a full sync, then `--scope`) into the file hub with its answers in the state directory, and the EKS
 * event handler (a CloudTrail node-group call: the one-cluster sync events and the follow-up use) built from the
 * same configuration; and AKS listed through Azure Resource Graph (`providers.aks.listing: resourceGraph`). The
 * local ARM and the proxy in front of moto count the reads; the hub's files show what the profiles say.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DeleteNodegroupCommand, EKSClient } from '@aws-sdk/client-eks';
import { parse, stringify } from 'yaml';
import { compose } from '../../adapters/compose/compose.ts';
import { parseConfig } from '../../adapters/compose/config.ts';
import { ALL_PROVIDERS } from '../../adapters/compose/providers/index.ts';
import { makeEksEventHandler } from '../../functions/eksEvents.ts';
import { AZURE_SUBSCRIPTION, EKS_ACCOUNT, startEmulators, type Emulators } from '../env/emulators.ts';
import { accountCredentials } from '../support/aws.ts';
import { describedClusters } from '../env/awsProxy.ts';
import { clusterReadsSince } from '../env/fakes/armServer.ts';
import { hasStackTrace, runCli } from '../support/cli.ts';
import { cloudTrailEvent, lambdaContext } from '../support/lambda.ts';
import { TEST_CA_PEM } from '../support/certificates.ts';
import { temporaryDirectory } from '../support/tmp.ts';

const ROTATED = Buffer.from(`${TEST_CA_PEM}${TEST_CA_PEM}`).toString('base64');

interface ProfileFile {
  metadata: { annotations?: Record<string, string> };
  status?: {
    version?: { kubernetes?: string };
    accessProviders?: Array<{ cluster?: Record<string, unknown> }>;
    properties?: Array<{ name: string; value: string }>;
  };
}

describe('the clouds asked only what changed, from the command and from a cloud event', () => {
  let emulators: Emulators;
  let directory: string;

  const sync = async (...args: string[]) => {
    const config = args.includes('--config') ? [] : ['--config', emulators.configPath];
    const run = await runCli(['sync', ...args, ...config], {
      cwd: directory,
      env: emulators.env,
    });
    assert.equal(run.code, 0, run.stderr);
    assert.ok(!hasStackTrace(run.stderr), run.stderr);
    return run;
  };
  /** Clusters whose CA ARM was asked for, and EKS clusters whose node groups moto was asked for, since `mark`. */
  const mark = () => ({ arm: emulators.arm.requests.length, aws: emulators.proxy.calls.length });
  const readsSince = (from: ReturnType<typeof mark>) => ({
    cas: emulators.arm.requests
      .slice(from.arm)
      .filter((r) => r.path.endsWith('/listClusterUserCredential'))
      .map((r) => r.path.split('/').at(-2)!)
      .sort(),
    nodegroups: [
      ...new Set(
        emulators.proxy.calls
          .slice(from.aws)
          .map((c) => /^\/clusters\/([^/?]+)\/node-groups/.exec(c.path)?.[1])
          .filter((name): name is string => name !== undefined),
      ),
    ].sort(),
  });
  /** The profile file of the cluster whose provider id ends with `suffix`. */
  const profile = (suffix: string): ProfileFile => {
    const root = join(emulators.directory, 'inventory');
    for (const namespace of readdirSync(root))
      for (const file of readdirSync(join(root, namespace)).filter(
        (f) => f.endsWith('.yaml') && !f.startsWith('_'),
      )) {
        const document = parse(readFileSync(join(root, namespace, file), 'utf8')) as ProfileFile;
        if (
          document.metadata.annotations?.['cpsync.io/provider-id']
            ?.toLowerCase()
            .endsWith(suffix.toLowerCase())
        )
          return document;
      }
    throw new Error(`no profile of …${suffix}`);
  };
  const caOf = (suffix: string) =>
    profile(suffix).status?.accessProviders?.[0]?.cluster?.['certificate-authority-data'];
  const nodesOf = (suffix: string) =>
    profile(suffix).status?.properties?.find((p) => p.name === 'count.node.k8s.io')?.value;
  const aksId = (name: string) =>
    `/subscriptions/${AZURE_SUBSCRIPTION}/resourcegroups/rg-${name}/providers/microsoft.containerservice/managedclusters/${name}`;

  const PAYMENTS = `:us-east-1:${EKS_ACCOUNT}:cluster/payments`;
  /**
   * A CloudTrail call of `name` in us-east-1 through the EKS event handler the stack deploys, built from
   * `document` (the configuration): its result.
   */
  const eksEvent = async (document: unknown, name: string, parameters: Record<string, string>) => {
    const deps = await compose(parseConfig(document, 'e2e'), ALL_PROVIDERS, { onDemand: true });
    try {
      return await makeEksEventHandler(async () => deps)(
        cloudTrailEvent(name, EKS_ACCOUNT, 'us-east-1', parameters) as never,
        lambdaContext(),
      );
    } finally {
      await deps.close();
    }
  };
  const ANSWERS = () => join(emulators.directory, 'outbox', 'answers');
  /**
   * Each case starts from ground of its own (the cases run in a random order): the hub in step with the clouds
   * and every answer remembered, by a full sync after the remembered answers are dropped.
   */
  const ground = async () => {
    rmSync(ANSWERS(), { recursive: true, force: true });
    await sync();
  };

  before(async () => {
    directory = temporaryDirectory('cpsync-answers-e2e-');
    emulators = await startEmulators({ directory });
    // The event handler runs in this process, with the estate's credentials.
    Object.assign(process.env, emulators.env, {
      POWERTOOLS_METRICS_DISABLED: 'true',
      POWERTOOLS_LOG_LEVEL: 'WARN',
    });
  });
  after(async () => emulators?.stop());

  it('a second full sync of an unchanged estate reads no CA and no node group, and changes nothing', async () => {
    rmSync(ANSWERS(), { recursive: true, force: true });
    let from = mark();
    await sync();
    assert.deepEqual(readsSince(from), { cas: ['batch', 'web'], nodegroups: ['checkout', 'payments'] });
    const nodes = nodesOf(PAYMENTS);
    from = mark();
    const second = await sync();
    assert.deepEqual(readsSince(from), { cas: [], nodegroups: [] });
    assert.match(second.stderr, /0 created, 0 updated, 0 deleted/);
    assert.equal(nodesOf(PAYMENTS), nodes);
  });

  it('--scope reads the CA of a cluster under rotation at each run and once more when it has settled, and the profile carries it', async () => {
    const web = emulators.arm.clusters.get(AZURE_SUBSCRIPTION)!.find((c) => c.name === 'web')!;
    await ground();
    web.properties.provisioningState = 'Updating';
    emulators.arm.caData.set(aksId('web'), ROTATED);
    try {
      let from = mark();
      await sync('--scope', `aks/${AZURE_SUBSCRIPTION}`);
      assert.deepEqual(readsSince(from).cas, ['web']);
      assert.equal(caOf('/managedclusters/web'), ROTATED);
      web.properties.provisioningState = 'Succeeded';
      from = mark();
      await sync('--scope', `aks/${AZURE_SUBSCRIPTION}`);
      assert.deepEqual(readsSince(from).cas, ['web']);
      from = mark();
      await sync('--scope', `aks/${AZURE_SUBSCRIPTION}`);
      assert.deepEqual(readsSince(from), { cas: [], nodegroups: [] });
      assert.equal(caOf('/managedclusters/web'), ROTATED);
    } finally {
      web.properties.provisioningState = 'Succeeded';
    }
  });

  it('a CloudTrail node-group call reads the one cluster afresh, and the next full sync keeps what it said without asking', async () => {
    await ground();
    const eks = new EKSClient({
      endpoint: emulators.moto.endpoint,
      region: 'us-east-1',
      credentials: await accountCredentials(emulators.moto.endpoint, EKS_ACCOUNT),
    });
    await eks.send(new DeleteNodegroupCommand({ clusterName: 'payments', nodegroupName: 'compute' }));
    eks.destroy();
    const document = parse(readFileSync(emulators.configPath, 'utf8')) as Record<string, unknown>;
    let from = mark();
    const result = await eksEvent(document, 'DeleteNodegroup', {
      clusterName: 'payments',
      nodegroupName: 'compute',
    });
    assert.equal(result.result, 'updated');
    assert.deepEqual(readsSince(from).nodegroups, ['payments']);
    assert.equal(nodesOf(PAYMENTS), '3');
    from = mark();
    await sync();
    assert.deepEqual(readsSince(from), { cas: [], nodegroups: [] });
    assert.equal(nodesOf(PAYMENTS), '3');
  });

  it('at the defaults DescribeCluster is remembered: the command describes no unchanged cluster, --fresh asks every answer again, an UpdateClusterVersion event reads the one cluster, and --scope keeps what it said', async () => {
    const document = parse(readFileSync(emulators.configPath, 'utf8')) as {
      providers: { eks: Record<string, unknown> };
    };
    assert.equal(document.providers.eks.clusterMaxAgeMinutes, undefined, 'the default is what is walked');
    /** The EKS clusters DescribeCluster was called for since `from` (`region/name`), as moto received them. */
    const describedSince = (from: number) => describedClusters(emulators.proxy.calls.slice(from));
    const EVERY_EKS_CLUSTER = ['eu-west-1/payments', 'us-east-1/checkout', 'us-east-1/payments'];
    const versionOf = (suffix: string) => profile(suffix).status?.version?.kubernetes;
    /** What moto answers for us-east-1/payments from now on: its DescribeCluster answer at `version`. */
    const upgraded = (version: string) =>
      emulators.proxy.rewrite((call, status, body) => {
        if (status !== 200 || call.path !== '/clusters/payments' || call.region !== 'us-east-1')
          return undefined;
        const answer = JSON.parse(body) as { cluster: Record<string, unknown> };
        answer.cluster.version = version;
        return JSON.stringify(answer);
      });
    let undo = () => {};
    rmSync(ANSWERS(), { recursive: true, force: true });
    try {
      let from = emulators.proxy.calls.length;
      await sync();
      assert.deepEqual(describedSince(from), EVERY_EKS_CLUSTER);
      const before = versionOf(PAYMENTS);
      from = emulators.proxy.calls.length;
      const second = await sync();
      assert.deepEqual(describedSince(from), []);
      assert.match(second.stderr, /0 created, 0 updated, 0 deleted/);

      // Upgraded with no CloudTrail event reaching cpsync: the answer stands until it is an hour old (the
      // documented price), and `--fresh` asks every answer (clusters, node groups, CAs) at once.
      undo = upgraded('1.32');
      from = emulators.proxy.calls.length;
      await sync();
      assert.deepEqual(describedSince(from), []);
      assert.equal(versionOf(PAYMENTS), before);
      let reads = mark();
      from = emulators.proxy.calls.length;
      const fresh = await sync('--fresh');
      assert.deepEqual(describedSince(from), EVERY_EKS_CLUSTER);
      assert.deepEqual(readsSince(reads), { cas: ['batch', 'web'], nodegroups: ['checkout', 'payments'] });
      assert.match(fresh.stderr, /0 created, 1 updated, 0 deleted/);
      assert.equal(versionOf(PAYMENTS), '1.32');
      // What --fresh was told is remembered over the older answer: the next sync asks nothing and keeps it.
      reads = mark();
      from = emulators.proxy.calls.length;
      const after = await sync();
      assert.deepEqual(describedSince(from), []);
      assert.deepEqual(readsSince(reads), { cas: [], nodegroups: [] });
      assert.match(after.stderr, /0 created, 0 updated, 0 deleted/);
      assert.equal(versionOf(PAYMENTS), '1.32');

      // Upgraded again: its CloudTrail event reads it afresh through the handler the stack deploys.
      undo();
      undo = upgraded('1.33');
      from = emulators.proxy.calls.length;
      const result = await eksEvent(document, 'UpdateClusterVersion', { name: 'payments', version: '1.33' });
      assert.equal(result.result, 'updated');
      assert.deepEqual(describedSince(from), ['us-east-1/payments']);
      assert.equal(versionOf(PAYMENTS), '1.33');
      from = emulators.proxy.calls.length;
      const scoped = await sync('--scope', `eks/${EKS_ACCOUNT}`);
      assert.deepEqual(describedSince(from), []);
      assert.match(scoped.stderr, /0 created, 0 updated, 0 deleted/);
      assert.equal(versionOf(PAYMENTS), '1.33');
    } finally {
      undo();
      // The next case's ground: the hub as the clouds are, every answer asked again.
      await ground();
    }
  });

  it('asks every CA and node group again when the state directory lost its answers, and deletes nothing', async () => {
    await ground();
    rmSync(ANSWERS(), { recursive: true, force: true });
    const from = mark();
    const run = await sync();
    assert.deepEqual(readsSince(from), { cas: ['batch', 'web'], nodegroups: ['checkout', 'payments'] });
    assert.match(run.stderr, /0 created, 0 updated, 0 deleted/);
  });

  it('through Resource Graph: one query for the subscription, no cluster read while nothing changed, and a deletion only on ARM’s word', async () => {
    const document = parse(readFileSync(emulators.configPath, 'utf8')) as {
      providers: { aks: Record<string, unknown> };
    };
    document.providers.aks.listing = 'resourceGraph';
    const graphConfig = join(directory, 'graph.yaml');
    writeFileSync(graphConfig, stringify(document));
    const arm = emulators.arm;
    const clusters = arm.clusters.get(AZURE_SUBSCRIPTION)!;
    const batch = clusters.find((c) => c.name === 'batch')!;
    const viaGraph = (...args: string[]) => sync(...args, '--config', graphConfig);
    const calls = (from: number) => clusterReadsSince(arm, from);
    rmSync(ANSWERS(), { recursive: true, force: true });
    try {
      let from = arm.requests.length;
      await viaGraph();
      assert.deepEqual(calls(from), { graph: 1, lists: 0, reads: ['batch', 'web'] });
      from = arm.requests.length;
      const steady = await viaGraph('--scope', `aks/${AZURE_SUBSCRIPTION}`);
      assert.deepEqual(calls(from), { graph: 1, lists: 0, reads: [] });
      assert.deepEqual(readsSince({ arm: from, aws: emulators.proxy.calls.length }).cas, []);
      assert.match(steady.stderr, /0 created, 0 updated, 0 deleted/);

      // The graph lags: batch is gone from ARM, the graph still shows it as it was.
      arm.indexGraph();
      arm.clusters.set(
        AZURE_SUBSCRIPTION,
        clusters.filter((c) => c !== batch),
      );
      await viaGraph();
      assert.ok(profile('/managedclusters/batch'), 'kept while the graph shows it unchanged');
      // The graph catches up: the profile the graph no longer shows goes on ARM's own "not found".
      arm.graph = undefined;
      from = arm.requests.length;
      const caught = await viaGraph();
      assert.deepEqual(calls(from), { graph: 1, lists: 0, reads: ['batch'] });
      assert.match(caught.stderr, /0 created, 0 updated, 1 deleted/);
      assert.throws(() => profile('/managedclusters/batch'), /no profile/);
    } finally {
      arm.graph = undefined;
      arm.clusters.set(AZURE_SUBSCRIPTION, clusters);
      if (existsSync(graphConfig)) rmSync(graphConfig);
    }
  });
});
