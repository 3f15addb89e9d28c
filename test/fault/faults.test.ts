/**
 * Fault matrix: each fault is injected into one sync, then one clean sync runs. After each pair:
 * (a) no profile of a cluster that still exists was deleted, (b) every change that reached the hub was
 * published (compared with the hub's before/after), (c) the hub matches an oracle: a fresh complete
 * listing of every scope plans nothing. Deletion grace is 1 listing here, the least forgiving setting.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, beforeEach, describe, it } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import { parse } from 'yaml';
import { DeleteClusterCommand, EKSClient } from '@aws-sdk/client-eks';
import { AssumeRoleCommand, STSClient } from '@aws-sdk/client-sts';
import { compose, type Composition } from '../../adapters/compose/compose.ts';
import { KubernetesHub } from '../../adapters/hub/KubernetesHub.ts';
import { KubernetesLeaseStore } from '../../adapters/hub/KubernetesLeases.ts';
import { FileOutbox } from '../../adapters/outbox/FileOutbox.ts';
import { FileIntentLog } from '../../adapters/outbox/FileIntentLog.ts';
import { ALL_PROVIDERS } from '../../adapters/compose/providers/index.ts';
import { parseConfig, type CpsyncConfig } from '../../adapters/compose/config.ts';
import { runSync, syncCluster, type EnginePorts } from '../../core/sync/engine.ts';
import type { ClusterProfile } from '../../core/domain/model/clusterProfile.ts';
import type { Scope } from '../../core/domain/model/scope.ts';
import { restJsonError, stsAccessDenied } from '../env/awsProxy.ts';
import {
  aksCluster,
  AZURE_SUBSCRIPTION,
  EKS_ACCOUNT,
  GCP_PROJECT,
  gkeCluster,
  type Emulators,
} from '../env/emulators.ts';
import { startHubProxy, type HubProxy } from '../env/hubProxy.ts';
import { createEksClusters, HUB_CREDENTIALS } from '../support/aws.ts';
import { cloudTrailEvent, lambdaContext } from '../support/lambda.ts';
import { assertNoCredentials } from '../support/secrets.ts';
import { makeEksEventHandler } from '../../functions/eksEvents.ts';
import {
  drainQueue as drainSubscriberQueue,
  failSomeEntries,
  type ReceivedEvent,
} from '../support/events.ts';
import { cloudSnapshot, estateOnHub } from '../support/estate.ts';
import { convergenceProblems, liveClusters } from '../support/oracle.ts';
import { countedByApiserver } from '../support/hubCounts.ts';
import type { HubState } from '../env/hub.ts';

const SELECTOR = { 'x-k8s.io/cluster-manager': 'cpsync' };

/** Everything the fault runs showed the world (events, CLI output, profiles): scanned for credentials at the end. */
const captured: string[] = [];
async function drainQueue(queueUrl: string): Promise<ReceivedEvent[]> {
  const events = await drainSubscriberQueue(queueUrl);
  captured.push(JSON.stringify(events));
  return events;
}

describe('fault matrix', () => {
  let emulators: Emulators;
  let hubProxy: HubProxy;
  let config: CpsyncConfig;
  let hubState: HubState;
  let composition: Composition;
  let restoreClouds: () => void;
  let ports: EnginePorts;
  let direct: KubernetesHub;
  let namespace: string;
  let scopes: Scope[];
  let runs = 0;
  let clock = () => new Date();

  const owned = (p: ClusterProfile) =>
    JSON.stringify({
      labels: p.metadata.labels,
      spec: p.spec,
      version: p.status?.version,
      properties: p.status?.properties?.map((x) => [x.name, x.value]),
      conditions: p.status?.conditions?.map((c) => [c.type, c.status, c.reason]),
    });
  const snapshot = async () =>
    new Map((await direct.list(namespace, SELECTOR)).map((p) => [p.metadata.name, owned(p)]));
  const sync = () =>
    runSync(
      { ...ports, clock: () => clock() },
      { syncId: `fault-${++runs}`, scopes, ...composition.settings },
    );

  /** Runs one sync under `fault`, then one clean sync, and checks (a), (b) and (c). */
  async function faulted(inject: () => () => void, stillExisting: () => Promise<string[]>) {
    const before = await snapshot();
    const remove = inject();
    let faultedReport;
    try {
      faultedReport = await sync();
    } finally {
      remove();
    }
    const duringFault = await snapshot();
    const existing = new Set(await stillExisting());
    for (const name of before.keys())
      if (existing.has(name)) assert.ok(duringFault.has(name), `(a) ${name} was deleted during the fault`);

    await sync();
    const after = await snapshot();
    const events = (await drainQueue(emulators.queueUrl)).filter(
      (e) => e['detail-type'] !== 'Inventory Scope Synced',
    );
    const published = (type: string, name: string) =>
      events.some((e: ReceivedEvent) => e['detail-type'] === type && e.detail.name === name);
    for (const name of after.keys())
      if (!before.has(name))
        assert.ok(published('ClusterProfile Created', name), `(b) no Created event for ${name}`);
    for (const name of before.keys())
      if (!after.has(name))
        assert.ok(published('ClusterProfile Deleted', name), `(b) no Deleted event for ${name}`);
    for (const [name, state] of after)
      if (before.has(name) && before.get(name) !== state)
        assert.ok(published('ClusterProfile Updated', name), `(b) no Updated event for ${name}`);
    await assertConverged();
    return faultedReport;
  }

  /** (c) A fresh complete listing of every scope plans nothing against the hub. */
  /** (c): the hub matches the clouds, as the clouds themselves say (not as cpsync's plan would). */
  async function assertConverged() {
    const eksRegions = [...new Set(scopes.filter((s) => s.provider === 'eks').map((s) => s.region))];
    const live = await liveClusters(emulators, { account: EKS_ACCOUNT, regions: eksRegions });
    assert.deepEqual(
      convergenceProblems(live, await direct.list(namespace, SELECTOR)),
      [],
      '(c) not converged',
    );
  }

  const names = async () => (await direct.list(namespace, SELECTOR)).map((p) => p.metadata.name);
  const nameOf = async (display: string) =>
    (await direct.list(namespace, SELECTOR)).find((p) => p.spec.displayName === display)?.metadata.name;
  const existingExcept =
    (...gone: Array<string | undefined>) =>
    async () =>
      (await names()).filter((n) => !gone.includes(n));

  async function memberEks(region = 'us-east-1') {
    const sts = new STSClient({
      endpoint: emulators.moto.endpoint,
      region: 'us-east-1',
      credentials: HUB_CREDENTIALS,
    });
    const c = (
      await sts.send(
        new AssumeRoleCommand({
          RoleArn: `arn:aws:iam::${EKS_ACCOUNT}:role/builder`,
          RoleSessionName: 'faults',
        }),
      )
    ).Credentials!;
    return new EKSClient({
      endpoint: emulators.moto.endpoint,
      region,
      credentials: {
        accessKeyId: c.AccessKeyId!,
        secretAccessKey: c.SecretAccessKey!,
        sessionToken: c.SessionToken!,
      },
    });
  }

  before(async () => {
    Object.assign(process.env, {
      AWS_ACCESS_KEY_ID: HUB_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: HUB_CREDENTIALS.secretAccessKey,
      AWS_REGION: 'us-east-1',
    });
    const { state, ...estate } = await estateOnHub('faults');
    hubState = state;
    ({ namespace, emulators } = estate);
    hubProxy = await startHubProxy(state);
    const document = parse(readFileSync(emulators.configPath, 'utf8')) as Record<string, unknown>;
    config = parseConfig(
      {
        ...document,
        hub: undefined,
        inventory: { namespace, tagAllowList: ['team'], deletionGraceListings: 1 },
      },
      'faults',
    );
    composition = await compose(config, ALL_PROVIDERS);
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromString(hubProxy.kubeconfig);
    const admin = new KubeConfig();
    admin.loadFromFile(state.kubeconfig);
    direct = new KubernetesHub({ kubeConfig: admin });
    ports = {
      ...composition.ports,
      hub: new KubernetesHub({ kubeConfig }),
      outbox: new FileOutbox(join(emulators.directory, 'fault-outbox')),
      intents: new FileIntentLog(join(emulators.directory, 'fault-outbox')),
      // Leases through the same faulty proxy: a run settles what the one before it left as soon as it starts.
      leases: new KubernetesLeaseStore({ kubeConfig, namespace, requestTimeoutMillis: 2000 }),
    };
    scopes = (await composition.resolveScopes()).scopes;
    restoreClouds = cloudSnapshot(emulators);
    await sync();
    assert.equal((await names()).length, emulators.clusters);
    await drainQueue(emulators.queueUrl);
  });

  // Every case starts from the same ground, whichever ran before it: the GKE and AKS clusters the estate
  // made, no fault in place, the hub converged with the clouds and nothing left on the queue.
  beforeEach(async () => {
    restoreClouds();
    hubProxy.rule = undefined;
    await sync();
    await drainQueue(emulators.queueUrl);
    await assertConverged();
  });

  after(async () => {
    await composition?.close();
    await hubProxy?.stop();
    await emulators?.stop();
  });

  it('1. throttling on a third of the EKS calls', async () => {
    await createEksClusters(emulators.moto.endpoint, EKS_ACCOUNT, 'us-east-1', [{ name: 'extra' }]);
    let calls = 0;
    await faulted(
      () =>
        emulators.proxy.intercept((call) =>
          call.service === 'eks' && ++calls % 3 === 0
            ? restJsonError(429, 'ThrottlingException', 'Rate exceeded')
            : undefined,
        ),
      names,
    );
  });

  it('2. AccessDenied in the EKS account while a cluster is deleted there', async () => {
    await createEksClusters(emulators.moto.endpoint, EKS_ACCOUNT, 'us-east-1', [{ name: 'denied' }]);
    await sync();
    await drainQueue(emulators.queueUrl);
    const extra = await nameOf('denied');
    assert.ok(extra, 'the cluster has its profile before the fault');
    await (await memberEks()).send(new DeleteClusterCommand({ name: 'denied' }));
    const report = await faulted(
      () =>
        // The role's trust and permissions withdrawn: new sessions are refused, and sessions already
        // issued (cpsync reuses one until it nears expiry) are denied at once, as IAM does.
        emulators.proxy.intercept((call) =>
          call.operation === 'AssumeRole'
            ? stsAccessDenied(`arn:aws:iam::${EKS_ACCOUNT}:role/cpsync-reader`)
            : call.service === 'eks'
              ? restJsonError(
                  403,
                  'AccessDeniedException',
                  `User: arn:aws:sts::${EKS_ACCOUNT}:assumed-role/cpsync-reader/cpsync is not authorized to perform: eks:ListClusters`,
                )
              : undefined,
        ),
      existingExcept(extra),
    );
    assert.ok(
      report.scopes.filter((s) => s.scope.provider === 'eks').every((s) => s.outcome.kind === 'failed'),
    );
    assert.ok(!(await names()).includes(extra!), 'deleted by the clean run');
  });

  it('3. GKE missingZones while a cluster in the missing zone disappears', async () => {
    const edge = await nameOf('edge');
    emulators.gke.clusters.set(GCP_PROJECT, [
      gkeCluster('analytics', 'europe-west1', { currentNodeCount: 4 }),
    ]);
    emulators.gke.missingZones.set(GCP_PROJECT, ['europe-west1-c']);
    await faulted(() => () => emulators.gke.missingZones.delete(GCP_PROJECT), existingExcept(edge));
  });

  it('4. ARM answering 500 while an AKS cluster is deleted', async () => {
    const batch = await nameOf('batch');
    emulators.arm.clusters.set(AZURE_SUBSCRIPTION, [
      aksCluster('web', 'rg-web', { currentKubernetesVersion: '1.31.0' }),
    ]);
    await faulted(() => {
      emulators.arm.failures.set(
        AZURE_SUBSCRIPTION,
        Array.from({ length: 20 }, () => ({ status: 500, code: 'InternalServerError', message: 'injected' })),
      );
      return () => emulators.arm.failures.delete(AZURE_SUBSCRIPTION);
    }, existingExcept(batch));
  });

  it('5. the hub answering 503 to a third of the requests', async () => {
    emulators.gke.clusters.set(GCP_PROJECT, [
      gkeCluster('analytics', 'europe-west1', { currentNodeCount: 5 }),
      gkeCluster('edge', 'europe-west1-c'),
    ]);
    await faulted(() => {
      hubProxy.rule = ({ index }) => (index % 3 === 1 ? { status: 503 } : undefined);
      return () => (hubProxy.rule = undefined);
    }, names);
  });

  it('6. 409 conflicts on status writes', async () => {
    emulators.arm.clusters.set(AZURE_SUBSCRIPTION, [
      aksCluster('web', 'rg-web', { currentKubernetesVersion: '1.31.1' }),
      aksCluster('batch', 'rg-batch'),
    ]);
    emulators.gke.clusters.set(GCP_PROJECT, [
      gkeCluster('analytics', 'europe-west1', { currentNodeCount: 6 }),
      gkeCluster('edge', 'europe-west1-c', { currentNodeCount: 2 }),
    ]);
    await faulted(() => {
      let statusWrites = 0;
      hubProxy.rule = ({ method, path }) =>
        method === 'PATCH' && path.includes('/status') && ++statusWrites % 2 === 1
          ? { status: 409 }
          : undefined;
      return () => (hubProxy.rule = undefined);
    }, names);
  });

  it('7. the hub dropping connections', async () => {
    emulators.gke.clusters.set(GCP_PROJECT, [
      gkeCluster('analytics', 'europe-west1', { currentNodeCount: 7 }),
      gkeCluster('edge', 'europe-west1-c', { currentNodeCount: 3 }),
    ]);
    await faulted(() => {
      hubProxy.rule = ({ index }) => (index % 4 === 2 ? { drop: true } : undefined);
      return () => (hubProxy.rule = undefined);
    }, names);
  });

  it('8. the hub not answering at all (requests time out)', async () => {
    emulators.gke.clusters.set(GCP_PROJECT, [
      gkeCluster('analytics', 'europe-west1', { currentNodeCount: 9 }),
      gkeCluster('edge', 'europe-west1-c', { currentNodeCount: 3 }),
    ]);
    const regular = ports.hub;
    const regularLeases = ports.leases;
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromString(hubProxy.kubeconfig);
    ports.hub = new KubernetesHub({ kubeConfig, requestTimeoutMillis: 500 });
    ports.leases = new KubernetesLeaseStore({ kubeConfig, namespace, requestTimeoutMillis: 500 });
    try {
      await faulted(() => {
        hubProxy.rule = ({ index }) => (index % 3 === 0 ? { hang: true } : undefined);
        return () => (hubProxy.rule = undefined);
      }, names);
    } finally {
      ports.hub = regular;
      ports.leases = regularLeases;
    }
  });

  it('9. EventBridge failing a fifth of the entries through every retry', async () => {
    emulators.gke.clusters.set(GCP_PROJECT, [
      gkeCluster('analytics', 'europe-west1', { currentNodeCount: 8 }),
      gkeCluster('edge', 'europe-west1-c', { currentNodeCount: 4 }),
    ]);
    emulators.arm.clusters.set(AZURE_SUBSCRIPTION, [
      aksCluster('web', 'rg-web', { currentKubernetesVersion: '1.31.2' }),
      aksCluster('batch', 'rg-batch'),
    ]);
    let entries = 0;
    await faulted(
      () => emulators.proxy.intercept(failSomeEntries(() => ++entries % 5 === 0, 'InternalFailure')),
      names,
    );
  });

  it('10. duplicate and out-of-order cloud events', async () => {
    await createEksClusters(emulators.moto.endpoint, EKS_ACCOUNT, 'us-east-1', [{ name: 'late' }]);
    const ref = {
      scope: { provider: 'eks' as const, account: EKS_ACCOUNT, region: 'us-east-1' },
      name: 'late',
    };
    const request = { syncId: 'evt-create', ref, ...composition.settings };
    assert.equal((await syncCluster(ports, request)).result, 'created');
    assert.equal((await syncCluster(ports, request)).result, 'unchanged', 'a duplicate writes nothing');
    await (await memberEks()).send(new DeleteClusterCommand({ name: 'late' }));
    // An UpdateClusterVersion that arrives after the cluster is gone: the provider decides, not the event.
    assert.equal((await syncCluster(ports, { ...request, syncId: 'evt-late-update' })).result, 'deleted');
    assert.equal((await syncCluster(ports, { ...request, syncId: 'evt-create-again' })).result, 'absent');
    const events = await drainQueue(emulators.queueUrl);
    assert.deepEqual(
      events.map((e) => e['detail-type']),
      ['ClusterProfile Created', 'ClusterProfile Deleted'],
    );
    await assertConverged();
  });

  it('11. a cluster re-created with the same name keeps its profile, updated', async () => {
    const analytics = await nameOf('analytics');
    emulators.gke.clusters.set(GCP_PROJECT, [
      gkeCluster('analytics', 'europe-west1', {
        currentNodeCount: 8,
        createTime: '2026-06-01T00:00:00+00:00',
        id: 'analytics-new',
      }),
      gkeCluster('edge', 'europe-west1-c', { currentNodeCount: 4 }),
    ]);
    await faulted(() => () => {}, names);
    assert.equal(await nameOf('analytics'), analytics);
  });

  it('12. a cloud answering an invalid, then a missing endpoint', async () => {
    await faulted(
      () =>
        emulators.proxy.rewrite((call, status, body) => {
          if (status !== 200 || !/^\/clusters\/(payments|checkout)$/.test(call.path)) return undefined;
          const answer = JSON.parse(body);
          if (call.path.endsWith('payments')) answer.cluster.endpoint = 'not a url';
          else delete answer.cluster.endpoint;
          return JSON.stringify(answer);
        }),
      names,
    );
  });

  /** A real `cpsync sync` process talking to the hub through the fault proxy, with its own outbox. */
  const cliRun = async (label: string) => {
    const { writeFileSync } = await import('node:fs');
    const { spawn } = await import('node:child_process');
    const { stringify } = await import('yaml');
    const kubeconfig = join(emulators.directory, 'hub-proxy.kubeconfig');
    writeFileSync(kubeconfig, hubProxy.kubeconfig);
    const file = join(emulators.directory, `${label}.yaml`);
    writeFileSync(
      file,
      stringify({
        ...parse(readFileSync(emulators.configPath, 'utf8')),
        hub: { kubeconfig },
        outbox: { directory: join(emulators.directory, label) },
        sync: { intentLeaseSeconds: 1 },
        inventory: { namespace, tagAllowList: ['team'], deletionGraceListings: 1 },
      }),
    );
    const cli = () =>
      spawn(
        process.execPath,
        [new URL('../../cli/cpsync.mjs', import.meta.url).pathname, 'sync', '--config', file],
        { env: { ...process.env, ...emulators.env }, stdio: ['ignore', 'ignore', 'pipe'] },
      );
    const exited = (child: ReturnType<typeof cli>) =>
      new Promise<{ code: number | null; signal: string | null; stderr: string }>((resolve) => {
        let stderr = '';
        child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
        child.on('close', (code, signal) => {
          captured.push(stderr);
          resolve({ code, signal, stderr });
        });
      });
    return { cli, exited };
  };

  it('13. a run killed right after a hub write: the next run announces it, nothing is lost', async () => {
    const { cli, exited } = await cliRun('killed');

    await createEksClusters(emulators.moto.endpoint, EKS_ACCOUNT, 'eu-west-1', [{ name: 'interrupted' }]);
    const before = await snapshot();
    const victim = cli();
    hubProxy.onAnswered = ({ method, path }) => {
      if (method === 'PATCH' && path.includes('/status')) {
        victim.kill('SIGKILL');
        hubProxy.onAnswered = undefined;
      }
    };
    const killed = await exited(victim);
    hubProxy.onAnswered = undefined;
    assert.equal(killed.signal, 'SIGKILL');
    const written = [...(await snapshot()).keys()].filter((name) => !before.has(name));
    assert.equal(written.length, 1, 'the killed run wrote its first new profile');

    await new Promise((resolve) => setTimeout(resolve, 1100)); // the killed run's lease runs out
    const clean = await exited(cli());
    assert.equal(clean.code, 0);
    const events = (await drainQueue(emulators.queueUrl)).filter(
      (e) => e['detail-type'] === 'ClusterProfile Created',
    );
    assert.deepEqual(
      events.map((e) => e.detail.name),
      written,
      'the write the killed run made is announced, once',
    );
    const after = await snapshot();
    for (const name of before.keys()) assert.ok(after.has(name), `(a) ${name}`);
    await assertConverged();
  });

  it('14. clock skew between runs changes nothing', async () => {
    const before = await snapshot();
    const counted = await countedByApiserver(hubState, async () => {
      clock = () => new Date(Date.now() - 86_400_000);
      await sync();
      clock = () => new Date(Date.now() + 86_400_000);
      await sync();
      clock = () => new Date();
    });
    assert.equal(counted.writes, 0, 'the hub took no write');
    assert.deepEqual(await snapshot(), before);
    assert.deepEqual(
      (await drainQueue(emulators.queueUrl)).filter((e) => e['detail-type'] !== 'Inventory Scope Synced'),
      [],
    );
  });

  it("15. a hub refusing one profile's writes: the CLI exits 1 naming it, the next run converges", async () => {
    const { cli, exited } = await cliRun('refused');
    await createEksClusters(emulators.moto.endpoint, EKS_ACCOUNT, 'eu-west-1', [{ name: 'refused' }]);
    const before = await snapshot();
    hubProxy.rule = ({ method, path }) =>
      method === 'PATCH' && path.includes('-refused-') ? { status: 500 } : undefined;
    const refused = await exited(cli());
    hubProxy.rule = undefined;
    assert.equal(refused.code, 1, refused.stderr);
    assert.match(
      refused.stderr,
      /eks\/210987654321\/eu-west-1: complete — HubError: 1 write\(s\) failed; first: \S+-refused-/,
    );
    const after = await snapshot();
    for (const name of before.keys()) assert.ok(after.has(name), `(a) ${name}`);
    const clean = await exited(cli());
    assert.equal(clean.code, 0, clean.stderr);
    const created = (await drainQueue(emulators.queueUrl)).filter(
      (e) => e['detail-type'] === 'ClusterProfile Created',
    );
    assert.equal(created.length, 1, '(b) announced once, by the run that wrote it');
    assert.match(String(created[0]!.detail.name), /-refused-/);
    await assertConverged();
  });

  it('16. a CloudTrail event for a cluster in an account outside the configuration', async () => {
    const outsider = '999988887777';
    await createEksClusters(emulators.moto.endpoint, outsider, 'us-east-1', [{ name: 'foreign' }]);
    const before = await snapshot();
    const handler = makeEksEventHandler(async () => ({ ...composition, ports }));
    const counted = await countedByApiserver(hubState, async () => {
      for (const name of ['CreateCluster', 'UpdateClusterVersion', 'DeleteCluster'])
        assert.deepEqual(
          await handler(
            cloudTrailEvent(name, outsider, 'us-east-1', { name: 'foreign' }) as never,
            lambdaContext(),
          ),
          { result: 'ignored' },
        );
    });
    assert.equal(counted.writes, 0, 'the hub took no write');
    assert.deepEqual(await snapshot(), before, '(a) nothing deleted or changed');
    assert.deepEqual(await drainQueue(emulators.queueUrl), [], '(b) no event for it');
    await assertConverged();
  });

  it('17. leaks no credential into anything the fault runs showed: events, CLI output, profiles', async () => {
    // Runs of its own (a new cluster announced by the CLI, under throttling), whatever ran before it.
    await createEksClusters(emulators.moto.endpoint, EKS_ACCOUNT, 'us-east-1', [{ name: 'leakcheck' }]);
    const remove = emulators.proxy.intercept((call) =>
      call.operation === 'ListClusters' && Math.random() < 0.5
        ? restJsonError(429, 'TooManyRequestsException', 'Rate exceeded')
        : undefined,
    );
    const { cli, exited } = await cliRun('leaks');
    const run = await exited(cli());
    remove();
    assert.equal(run.code, 0, run.stderr);
    await drainQueue(emulators.queueUrl);
    captured.push(JSON.stringify(await ports.hub.list(namespace, { 'x-k8s.io/cluster-manager': 'cpsync' })));
    const all = await assertNoCredentials(captured, emulators);
    assert.ok(
      all.includes('ClusterProfile Created') && all.includes('sync '),
      'events and CLI output were captured',
    );
  });
});
