import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, beforeEach, describe, it } from 'node:test';
import { parse, stringify } from 'yaml';
import { KubernetesHub } from '../../adapters/hub/KubernetesHub.ts';
import { FileOutbox } from '../../adapters/outbox/FileOutbox.ts';
import type { ClusterProfile } from '../../core/domain/model/clusterProfile.ts';
import { DetailValidator } from '../../events/validate.ts';
import { stsAccessDenied, restJsonError } from '../env/awsProxy.ts';
import {
  aksCluster,
  AZURE_SUBSCRIPTION,
  EKS_ACCOUNT,
  GCP_PROJECT,
  gkeCluster,
  type Emulators,
} from '../env/emulators.ts';
import { assertNoCredentials } from '../support/secrets.ts';
import { drainQueue, failSomeEntries, type ReceivedEvent } from '../support/events.ts';
import { adminKubeConfig, localHub, profileOfAnother } from '../support/hub.ts';
import { EVERYWHERE_FOR_ADMIN, installAdmissionPolicy } from '../support/hubManifests.ts';
import { cloudSnapshot, estateOnHub } from '../support/estate.ts';
import { CLI } from '../support/cli.ts';

const validator = new DetailValidator();

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Every test starts from a scene of its own — the local clouds as the estate made them, an inventory
 * namespace and an outbox nobody else used, no events waiting — so that no test depends on another
 * having run before it (the suite runs them in a random order).
 */
describe('cpsync end to end: CLI → moto, local GKE/ARM servers → real hub → EventBridge → SQS', () => {
  let emulators: Emulators;
  let hub: KubernetesHub;
  let namespace: string;
  let baseNamespace: string;
  /** This test's configuration: the estate's, with this test's namespace and outbox. */
  let configPath: string;
  let sceneDirectory: string;
  let scenes = 0;
  let restoreClouds: () => void;

  const cli = (...args: string[]): Promise<Run> =>
    new Promise((resolve) => {
      const child = spawn(
        process.execPath,
        [CLI, ...args, ...(args.includes('--config') ? [] : ['--config', configPath])],
        {
          cwd: emulators.directory,
          env: { ...process.env, ...emulators.env },
        },
      );
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      child.on('close', (code) => {
        captured.push(stdout, stderr);
        resolve({ code: code ?? -1, stdout, stderr });
      });
    });
  const sync = (...extra: string[]) => cli('sync', ...extra);
  /** Everything a run showed the world: CLI output, events received, profiles written. Scanned for secrets at the end. */
  const captured: string[] = [];
  const drain = async (): Promise<ReceivedEvent[]> => {
    const events = await drainQueue(emulators.queueUrl);
    captured.push(JSON.stringify(events));
    return events;
  };
  const profiles = async (): Promise<ClusterProfile[]> =>
    hub.list(namespace, { 'x-k8s.io/cluster-manager': 'cpsync' });
  const versions = async () =>
    Object.fromEntries((await profiles()).map((p) => [p.metadata.name, p.metadata.resourceVersion]));
  const changes = (events: ReceivedEvent[]) =>
    events.filter((e) => e['detail-type'] !== 'Inventory Scope Synced');
  const summaries = (events: ReceivedEvent[]) =>
    events.filter((e) => e['detail-type'] === 'Inventory Scope Synced');
  const assertValid = (events: ReceivedEvent[]) => {
    for (const event of events)
      assert.deepEqual(
        validator.errors(event['detail-type'], event.detail),
        [],
        `${event['detail-type']} ${event.detail.eventId}`,
      );
  };
  /** Events waiting in the CLI's file outbox. */
  const pendingEvents = async () => (await new FileOutbox(join(sceneDirectory, 'outbox')).pending()).length;
  /** A first sync of this test's inventory, its events taken off the queue: the state most tests start from. */
  const baseline = async () => {
    const run = await sync();
    assert.equal(run.code, 0, run.stderr);
    assert.equal((await profiles()).length, emulators.clusters);
    await drain();
  };

  before(async () => {
    const { state, ...estate } = await estateOnHub('e2e', (line) => console.log(line));
    ({ namespace: baseNamespace, emulators } = estate);
    // Point the generated configuration at the shared test hub.
    const { writeFileSync } = await import('node:fs');
    writeFileSync(
      emulators.configPath,
      readFileSync(emulators.configPath, 'utf8').replace(
        /hub:\n\s+directory: .*\n/,
        `hub:\n  kubeconfig: ${state.kubeconfig}\n`,
      ),
    );
    hub = new KubernetesHub({ kubeConfig: adminKubeConfig(state) });
    restoreClouds = cloudSnapshot(emulators);
  });

  beforeEach(async () => {
    // The clouds as the estate made them (tests change GKE and AKS clusters; EKS stays as it is).
    restoreClouds();
    // An inventory and an outbox of this test's own; nothing left on the queue by another.
    namespace = `${baseNamespace}-${++scenes}`;
    sceneDirectory = join(emulators.directory, `scene-${scenes}`);
    const { mkdirSync, writeFileSync } = await import('node:fs');
    mkdirSync(sceneDirectory, { recursive: true });
    const document = parse(readFileSync(emulators.configPath, 'utf8')) as Record<string, unknown>;
    configPath = join(sceneDirectory, 'cpsync.yaml');
    writeFileSync(
      configPath,
      stringify({
        ...document,
        inventory: { ...(document.inventory as Record<string, unknown>), namespace },
        outbox: { directory: join(sceneDirectory, 'outbox') },
      }),
    );
    await drain();
  });

  after(async () => emulators?.stop());

  it('validates the configuration', async () => {
    const run = await cli('validate-config');
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /valid/);
  });

  it('creates every profile on the first sync and publishes one valid Created event each, plus one summary per scope', async () => {
    const run = await sync();
    assert.equal(run.code, 0, run.stderr);
    assert.equal((await profiles()).length, emulators.clusters);
    const events = await drain();
    assertValid(events);
    const created = changes(events);
    assert.equal(created.length, emulators.clusters);
    assert.ok(created.every((e) => e['detail-type'] === 'ClusterProfile Created'));
    assert.deepEqual(
      summaries(events)
        .map((e) => `${(e.detail.scope as { provider: string }).provider}:${e.detail.outcome as string}`)
        .sort(),
      ['aks:complete', 'eks:complete', 'eks:complete', 'gke:complete'],
    );
  });

  it('writes nothing and publishes only scope summaries when nothing changed', async () => {
    await baseline();
    const before = await versions();
    const run = await sync();
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stderr, /hub: \d+ read\(s\), 0 write\(s\)/);
    assert.deepEqual(await versions(), before);
    const events = await drain();
    assertValid(events);
    assert.equal(changes(events).length, 0);
    assert.equal(summaries(events).length, 4);
  });

  it('publishes one Updated event naming the version when a cluster is upgraded', async () => {
    await baseline();
    emulators.gke.clusters.set(GCP_PROJECT, [
      gkeCluster('analytics', 'europe-west1', { currentMasterVersion: '1.31.2-gke.1100000' }),
      gkeCluster('edge', 'europe-west1-c'),
    ]);
    const run = await sync();
    assert.equal(run.code, 0, run.stderr);
    const updated = changes(await drain());
    assertValid(updated);
    assert.equal(updated.length, 1);
    assert.equal(updated[0]!['detail-type'], 'ClusterProfile Updated');
    assert.deepEqual(updated[0]!.detail.changedFields, ['status.version.kubernetes']);
    assert.equal((updated[0]!.detail.cluster as { displayName: string }).displayName, 'analytics');
  });

  it('prints the plan on --dry-run without touching the hub or the bus, and the real run applies that same plan', async () => {
    await baseline();
    emulators.arm.clusters.set(AZURE_SUBSCRIPTION, [
      aksCluster('web', 'rg-web', { currentKubernetesVersion: '1.31.1' }),
    ]);
    const before = await versions();
    const dry = await sync('--dry-run', '--output', 'json');
    assert.equal(dry.code, 0, dry.stderr);
    const planned = (JSON.parse(dry.stdout) as Array<{ kind: string; name: string; changedFields: string[] }>)
      .map((c) => `${c.kind} ${c.name} ${c.changedFields.join(',')}`)
      .sort();
    assert.equal(planned.length, 2, dry.stdout);
    assert.deepEqual(await versions(), before);
    assert.deepEqual(await drain(), []);
    assert.equal(await pendingEvents(), 0);

    const text = await sync('--dry-run');
    assert.match(text.stdout, /~ .*web\n\s+status\.version\.kubernetes: "1\.30\.4" → "1\.31\.1"/);

    const real = await sync();
    assert.equal(real.code, 0, real.stderr);
    const applied = changes(await drain()).map(
      (e) =>
        `${e['detail-type'] === 'ClusterProfile Updated' ? 'update' : e['detail-type'] === 'ClusterProfile Created' ? 'create' : 'delete'} ${e.detail.name as string} ${(e.detail.changedFields as string[]).join(',')}`,
    );
    assert.deepEqual(applied.sort(), planned);
  });

  it('deletes a cluster gone from the cloud only after the grace of complete listings, counted by cpsync whatever a hub writer says of the count (a full sync, then --scope)', async () => {
    await baseline();
    // A hub writer past the admission policy says the cluster has already been missed once.
    const listed = (await profiles()).find((p) => p.spec.displayName === 'batch')!;
    await hub.applyStatus({
      ...listed,
      status: {
        ...listed.status,
        properties: [...(listed.status?.properties ?? []), { name: 'cpsync.io/missed-listings', value: '1' }],
      },
    });
    emulators.arm.clusters.set(AZURE_SUBSCRIPTION, [aksCluster('web', 'rg-web')]);
    // The first complete listing without "batch": it is marked, not deleted.
    const marking = await sync();
    assert.equal(marking.code, 0, marking.stderr);
    assert.deepEqual(
      changes(await drain()).map((e) => e['detail-type']),
      ['ClusterProfile Updated'],
    );
    const batch = (await profiles()).find((p) => p.spec.displayName === 'batch')!;
    assert.equal(batch.status!.conditions!.find((c) => c.type === 'Joined')!.reason, 'NotFoundInProvider');
    assert.equal(
      batch.status!.properties!.find((p) => p.name === 'cpsync.io/missed-listings')?.value,
      '1',
      'the count cpsync kept: its first miss',
    );
    const run = await sync('--scope', `aks/${AZURE_SUBSCRIPTION}`);
    assert.equal(run.code, 0, run.stderr);
    const deleted = changes(await drain());
    assertValid(deleted);
    assert.deepEqual(
      deleted.map((e) => [e['detail-type'], e.detail.name]),
      [['ClusterProfile Deleted', batch.metadata.name]],
    );
    assert.equal(deleted[0]!.detail.profile, undefined);
    assert.ok(!(await profiles()).some((p) => p.spec.displayName === 'batch'));
  });

  it('never takes over the profile of another cluster under the name made for a listed one, nor moves the listed one to another name, and says so; nor does --scope of its project', async () => {
    await baseline();
    // The victim: the profile of a cluster of another project whose name (slug and 40-bit id hash) is the
    // one the listed GKE cluster gets. Made from that cluster's profile, with the other cluster's id and scope.
    const listed = (await profiles()).find((p) => p.metadata.labels?.['cpsync.io/provider'] === 'gke')!;
    const victimId =
      'https://container.googleapis.com/v1/projects/victim-project/locations/us-central1/clusters/x';
    await hub.applyObject(profileOfAnother(listed, 'victim-project', victimId));
    const before = (await hub.get(listed.metadata))!;
    await drain();
    const run = await sync();
    assert.equal(run.code, 1, 'a collision needs a look');
    assert.match(
      run.stderr,
      new RegExp(
        `name collision: ${namespace}/${listed.metadata.name} is the profile of ${victimId.replace(/[/.]/g, '\\$&')}`,
      ),
    );
    const after = (await hub.get(listed.metadata))!;
    assert.equal(
      after.metadata.resourceVersion,
      before.metadata.resourceVersion,
      'the victim is not written',
    );
    assert.equal(after.metadata.annotations?.['cpsync.io/provider-id'], victimId);
    assert.match(run.stderr, /which that name was not made for: .* is not written under another name/);
    assert.deepEqual(
      (await profiles())
        .filter(
          (p) =>
            p.metadata.annotations?.['cpsync.io/provider-id'] ===
            listed.metadata.annotations?.['cpsync.io/provider-id'],
        )
        .map((p) => p.metadata.name),
      [],
      'the listed cluster is written under no other name',
    );
    const events = await drain();
    assert.deepEqual(
      changes(events).filter((e) => e.detail.name === listed.metadata.name),
      [],
      'no event claims the victim',
    );
    // A sync of the listed cluster's project alone (`--scope`) does no other.
    const scoped = await sync('--scope', `gke/${GCP_PROJECT}`);
    assert.equal(scoped.code, 1, 'a collision needs a look');
    assert.match(scoped.stderr, /which that name was not made for: .* is not written under another name/);
    assert.equal((await hub.get(listed.metadata))!.metadata.resourceVersion, before.metadata.resourceVersion);
    assert.ok(
      !(await profiles()).some(
        (p) =>
          p.metadata.annotations?.['cpsync.io/provider-id'] ===
          listed.metadata.annotations?.['cpsync.io/provider-id'],
      ),
      'the listed cluster is written under no other name by the scope',
    );
    assert.deepEqual(
      changes(await drain()).filter((e) => e.detail.name === listed.metadata.name),
      [],
      'no event claims the victim',
    );
  });

  it('writes to the real hub what a hostile cloud reports: endpoints it refuses as servers, a huge health message and a long property value, cut within the CRD’s limits and never inside a character', async () => {
    const emoji = '😀';
    emulators.gke.clusters.set(GCP_PROJECT, [
      gkeCluster('analytics', 'europe-west1', {
        // Stopping, with a cloud message far over the CRD's 32768 characters.
        status: 5,
        conditions: [{ code: 'GCE_QUOTA_EXCEEDED', message: `${emoji.repeat(40_000)} <script>` }],
        resourceLabels: { team: emoji.repeat(1_500) },
      }),
      gkeCluster('edge', 'europe-west1-c', { endpoint: '34.76.10.20@evil.example.com' }),
    ]);
    const run = await sync('--provider', 'gke');
    assert.equal(run.code, 0, run.stderr);
    const gke = (await profiles()).filter((p) => p.metadata.labels?.['cpsync.io/provider'] === 'gke');
    const analytics = gke.find((p) => p.spec.displayName === 'analytics')!;
    const health = analytics.status!.conditions!.find((c) => c.type === 'ControlPlaneHealthy')!;
    const message = Array.from(health.message);
    assert.equal(message.length, 32768);
    assert.deepEqual(message.slice(-2), [emoji, '…'], 'cut between characters, and marked');
    const team = Array.from(
      analytics.status!.properties!.find((p) => p.name === 'cpsync.io/tag.team')!.value,
    );
    assert.equal(team.length, 1024);
    assert.deepEqual(team.slice(-2), [emoji, '…']);
    const edge = gke.find((p) => p.spec.displayName === 'edge')!;
    assert.deepEqual(edge.status!.accessProviders ?? [], [], 'no server with a user part');
    await drain();
  });

  it('shows hostile cloud strings on the terminal as text: no escape sequence, carriage return, forged line or bidi override acts', async () => {
    const hostile = '1.31\u001b]0;pwned\u0007\u001b[2J\r\nforged line\u202egnp.exe\u200b';
    emulators.gke.clusters.set(GCP_PROJECT, [
      gkeCluster('analytics', 'europe-west1', {
        currentMasterVersion: hostile,
        conditions: [{ code: 'X', message: 'fine\u001b[31m red \u001b]8;;https://evil.example\u0007link' }],
        status: 6,
      }),
    ]);
    const runs = [
      await sync('--provider', 'gke', '--dry-run'),
      await sync('--provider', 'gke'),
      await cli('list'),
      await cli('list', '--summary'),
    ];
    for (const run of runs) {
      const shown = run.stdout + run.stderr;
      // eslint-disable-next-line no-control-regex
      assert.doesNotMatch(shown, /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200b\u202e]/, shown);
      assert.ok(!shown.split('\n').some((line) => line.startsWith('forged line')), 'no forged line');
    }
    assert.match(runs[2]!.stdout, /1\.31\\u\{1b\}\]0;pwned\\u\{7\}/, 'shown escaped in the version column');
    await drain();
  });

  it('a stopped AKS cluster shows no running node, with its configured count beside it, and both come back when it starts', async () => {
    await baseline();
    const web = emulators.arm.clusters.get(AZURE_SUBSCRIPTION)!.find((c) => c.name === 'web')!;
    const properties = web.properties as Record<string, unknown>;
    const configured = (properties.agentPoolProfiles as Array<{ count: number }>).reduce(
      (n, pool) => n + pool.count,
      0,
    );
    const counts = async () => {
      const profile = (await profiles()).find((p) => p.spec.displayName === 'web')!;
      const value = (name: string) => profile.status!.properties!.find((p) => p.name === name)?.value;
      return [value('count.node.k8s.io'), value('cpsync.io/node-count-configured')];
    };
    assert.deepEqual(await counts(), [String(configured), undefined]);
    properties.powerState = { code: 'Stopped' };
    assert.equal((await sync('--provider', 'aks')).code, 0);
    assert.deepEqual(await counts(), ['0', String(configured)]);
    properties.powerState = { code: 'Running' };
    assert.equal((await sync('--provider', 'aks')).code, 0);
    assert.deepEqual(await counts(), [String(configured), undefined]);
    await drain();
  });

  it('publishes a change too large for one event cut and marked, through EventBridge, and the hub holds all of it', async () => {
    // Every tag is a property; 300 tags with long keys and values, hostile characters among them.
    const document = parse(readFileSync(configPath, 'utf8')) as { inventory: Record<string, unknown> };
    document.inventory.tagAllowList = ['*'];
    const { writeFileSync } = await import('node:fs');
    writeFileSync(configPath, stringify(document));
    const web = emulators.arm.clusters.get(AZURE_SUBSCRIPTION)!.find((c) => c.name === 'web')!;
    const tags = (round: string) =>
      Object.fromEntries(
        Array.from({ length: 300 }, (_, i) => [
          `k${String(i).padStart(3, '0')}-${'x'.repeat(180)}`,
          `${round}-<!channel> *b* \u202e${'値'.repeat(230)}`,
        ]),
      );
    web.tags = tags('one');
    assert.equal((await sync('--provider', 'aks')).code, 0);
    await drain();
    web.tags = tags('two');
    const run = await sync('--provider', 'aks');
    assert.equal(run.code, 0, run.stderr);
    assert.equal(await pendingEvents(), 0, 'nothing left behind in the outbox');
    const events = await drain();
    assertValid(events);
    const [updated, ...others] = changes(events);
    assert.deepEqual(others, []);
    assert.equal(updated!['detail-type'], 'ClusterProfile Updated');
    const detail = updated!.detail as unknown as {
      changes: Array<{ field: string; before?: unknown }>;
      changedFields: string[];
      changesOmitted?: number;
      profileOmitted?: boolean;
      name: string;
    };
    assert.ok(Buffer.byteLength(JSON.stringify(detail)) <= 64 * 1024, 'within the detail budget');
    assert.equal(detail.profileOmitted, true);
    assert.ok(detail.changesOmitted! > 0, 'marked as cut');
    assert.equal(
      detail.changes.length + detail.changesOmitted!,
      300,
      'the count of what was left out is true',
    );
    assert.ok(
      detail.changes.every((c) => !('before' in c)),
      'values are left out first',
    );
    assert.deepEqual(
      detail.changedFields,
      detail.changes.map((c) => c.field),
    );
    // What the event left out, a subscriber reads from the hub.
    const profile = (await profiles()).find((p) => p.metadata.name === detail.name)!;
    const tagged = profile.status!.properties!.filter((p) => p.name.startsWith('cpsync.io/tag.'));
    assert.equal(tagged.length, 300);
    assert.ok(tagged.every((p) => p.value.startsWith('two-')));
  });

  it('keeps every profile of a scope whose role cannot be assumed, reports it failed and exits 1', async () => {
    await baseline();
    const eksBefore = (await profiles()).filter((p) => p.metadata.labels?.['cpsync.io/provider'] === 'eks');
    const remove = emulators.proxy.intercept((call) =>
      call.operation === 'AssumeRole'
        ? stsAccessDenied(`arn:aws:iam::${EKS_ACCOUNT}:role/cpsync-reader`)
        : undefined,
    );
    const run = await sync();
    remove();
    assert.equal(run.code, 1);
    assert.match(run.stderr, /eks\/210987654321\/us-east-1: failed — AccessDenied/);
    const eksAfter = (await profiles()).filter((p) => p.metadata.labels?.['cpsync.io/provider'] === 'eks');
    assert.deepEqual(
      eksAfter.map((p) => p.metadata.resourceVersion),
      eksBefore.map((p) => p.metadata.resourceVersion),
    );
    const events = await drain();
    assertValid(events);
    const failed = summaries(events).filter((e) => e.detail.outcome === 'failed');
    assert.equal(failed.length, 2);
    assert.ok(failed.every((e) => (e.detail.error as { reason: string }).reason === 'AccessDenied'));
    assert.equal(changes(events).length, 0);
  });

  it('loses no change event when EventBridge fails some entries, or whole calls: the next run publishes them', async () => {
    await baseline();
    const expected: string[] = [];
    // Run 1: every Updated entry keeps failing (retryable) through all retry rounds.
    emulators.gke.clusters.set(GCP_PROJECT, [
      gkeCluster('analytics', 'europe-west1', { currentNodeCount: 7 }),
      gkeCluster('edge', 'europe-west1-c', { currentNodeCount: 5 }),
    ]);
    const partial = emulators.proxy.intercept(
      failSomeEntries((entry) => entry.DetailType === 'ClusterProfile Updated', 'InternalFailure'),
    );
    const first = await sync();
    partial();
    // Events left pending make the run incomplete, and the summary says why.
    assert.equal(first.code, 1, first.stderr);
    assert.match(first.stderr, /2 pending/);
    assert.match(
      first.stderr,
      /the bus refused events .*2 × InternalFailure: InternalFailure injected by the test/,
    );
    const afterFirst = await drain();
    assert.equal(changes(afterFirst).length, 0, 'the failed entries were not delivered');
    assert.equal(summaries(afterFirst).length, 4, 'the entries that did not fail were');

    // Run 2: EventBridge refuses every call; a new change joins the pending ones.
    emulators.arm.clusters.set(AZURE_SUBSCRIPTION, [
      aksCluster('web', 'rg-web', {
        agentPoolProfiles: [{ name: 'system', count: 4, vmSize: 'Standard_D4s_v5', mode: 'System' }],
      }),
      aksCluster('batch', 'rg-batch'),
    ]);
    const down = emulators.proxy.intercept((call) =>
      call.operation === 'AWSEvents.PutEvents'
        ? restJsonError(500, 'InternalException', 'injected outage')
        : undefined,
    );
    const second = await sync();
    down();
    assert.equal(second.code, 1, second.stderr);
    assert.match(second.stderr, /the bus refused events .*InternalException: injected outage/);
    assert.deepEqual(await drain(), []);
    const pending = await pendingEvents();
    assert.ok(pending >= 3 + 4, `pending: ${pending}`);

    // Run 3: the bus is back; nothing changed in the clouds, yet every pending change arrives.
    const third = await sync();
    assert.equal(third.code, 0, third.stderr);
    const delivered = await drain();
    assertValid(delivered);
    for (const e of changes(delivered))
      expected.push(`${e.detail.name as string}:${(e.detail.changedFields as string[]).join(',')}`);
    assert.deepEqual(
      expected.sort(),
      [
        expect('analytics', 'status.properties[count.node.k8s.io]'),
        expect('edge', 'status.properties[count.node.k8s.io]'),
        expect('web', 'status.properties[count.node.k8s.io]'),
      ].sort(),
    );
    assert.equal(new Set(changes(delivered).map((e) => e.detail.eventId)).size, 3);
    assert.equal(await pendingEvents(), 0);

    function expect(display: string, field: string) {
      const name = changes(delivered).find(
        (e) => (e.detail.cluster as { displayName: string }).displayName === display,
      )?.detail.name as string;
      return `${name}:${field}`;
    }
  });

  it('keeps in the outbox an event EventBridge refuses for good, says so every run, and publishes it once it is taken', async () => {
    await baseline();
    emulators.gke.clusters.set(GCP_PROJECT, [
      gkeCluster('analytics', 'europe-west1', { currentNodeCount: 9 }),
      gkeCluster('edge', 'europe-west1-c'),
    ]);
    const refuse = emulators.proxy.intercept(
      failSomeEntries((entry) => entry.DetailType === 'ClusterProfile Updated', 'AccessDeniedException'),
    );
    const runs = [await sync(), await sync()];
    refuse();
    for (const run of runs) {
      assert.equal(run.code, 1, run.stderr);
      assert.match(
        run.stderr,
        /the bus refused events \(they stay in the outbox for the next run\): 1 × AccessDeniedException/,
      );
    }
    assert.equal(changes(await drain()).length, 0);
    assert.equal(await pendingEvents(), 1, 'not dropped for being refused for good');
    const taken = await sync();
    assert.equal(taken.code, 0, taken.stderr);
    const delivered = changes(await drain());
    assert.deepEqual(
      delivered.map((e) => [e['detail-type'], e.detail.changedFields]),
      [['ClusterProfile Updated', ['status.properties[count.node.k8s.io]']]],
    );
    assert.equal(await pendingEvents(), 0);
  });

  it('lists the hub as a table, JSON or YAML', async () => {
    emulators.gke.clusters.set(GCP_PROJECT, [
      gkeCluster('analytics', 'europe-west1', {
        currentMasterVersion: '1.31.2-gke.1100000',
        currentNodeCount: 7,
      }),
      gkeCluster('edge', 'europe-west1-c'),
    ]);
    await baseline();
    const table = await cli('list');
    assert.equal(table.code, 0, table.stderr);
    assert.match(table.stdout, /^NAME\s+PROVIDER\s+LOCATION\s+VERSION\s+HEALTHY\s+NODES/);
    assert.match(
      table.stdout,
      /cpsync-gke-analytics-\w+\s+gke\s+gcp\/europe-west1\s+1\.31\.2-gke\.1100000\s+True \(Running\)\s+7/,
    );
    const json = JSON.parse((await cli('list', '--output', 'json')).stdout) as Array<{ provider: string }>;
    assert.equal(json.length, emulators.clusters);
    assert.match((await cli('list', '-o', 'yaml')).stdout, /- name: cpsync-/);
  });

  it('falls back to the file hub in ./inventory and JSON lines on stdout when neither is configured', async () => {
    const { writeFileSync, mkdirSync } = await import('node:fs');
    const directory = join(sceneDirectory, 'defaults');
    mkdirSync(directory, { recursive: true });
    const document = parse(readFileSync(configPath, 'utf8')) as Record<string, unknown>;
    delete document.hub;
    delete document.bus;
    delete document.outbox;
    const file = join(directory, 'cpsync.yaml');
    writeFileSync(file, stringify(document));
    const run = await new Promise<Run>((resolve) => {
      const child = spawn(process.execPath, [CLI, 'sync', '--provider', 'gke'], {
        cwd: directory,
        env: { ...process.env, ...emulators.env },
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
    });
    captured.push(run.stdout, run.stderr);
    assert.equal(run.code, 0, run.stderr);
    const lines = run.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as ReceivedEvent);
    assert.deepEqual(lines.map((e) => e['detail-type']).sort(), [
      'ClusterProfile Created',
      'ClusterProfile Created',
      'Inventory Scope Synced',
    ]);
    assertValid(lines);
    assert.equal(
      readdirSync(join(directory, 'inventory', namespace)).filter(
        (f) => f.endsWith('.yaml') && !f.startsWith('_'), // _namespace.yaml, _configmap.*.yaml
      ).length,
      2,
    );
  });

  it('leaks no credential into output, events, profiles or the doctor’s report', async () => {
    // What this test's own runs show, with whatever the others showed before it.
    await baseline();
    captured.push((await cli('list', '--output', 'yaml')).stdout);
    captured.push(JSON.stringify(await profiles()));
    // The doctor's checks, passing and with a refusal it reports in the cloud's words (cli() captures both); the
    // hub's admission policy in force, for the identity the CLI writes the hub as here (the admin).
    const policy = await installAdmissionPolicy(adminKubeConfig(await localHub()), EVERYWHERE_FOR_ADMIN);
    let refused: Awaited<ReturnType<typeof cli>>;
    try {
      assert.equal((await cli('doctor', '--output', 'json')).code, 0);
      const refuse = emulators.proxy.intercept((call) =>
        call.operation === 'AssumeRole'
          ? stsAccessDenied(`arn:aws:iam::${EKS_ACCOUNT}:role/cpsync-reader`)
          : undefined,
      );
      refused = await cli('doctor');
      refuse();
    } finally {
      await policy.remove();
    }
    assert.equal(refused.code, 1);
    assert.match(refused.stdout, /✖ scope eks\/210987654321\/us-east-1: AccessDenied/);
    await drain();
    await assertNoCredentials(captured, emulators);
  });

  it('refuses a bad configuration with exit code 2 and names the field', async () => {
    const { writeFileSync } = await import('node:fs');
    const bad = join(emulators.directory, 'bad.yaml');
    writeFileSync(bad, 'providers:\n  eks:\n    accounts: ["12345"]\n');
    const run = await cli('sync', '--config', bad);
    assert.equal(run.code, 2);
    assert.match(run.stderr, /providers\.eks\.accounts\[0\]: must be a 12-digit AWS account id/);
    const usage = await cli('sync', '--scope', 'oci/x');
    assert.equal(usage.code, 2);
  });
});
