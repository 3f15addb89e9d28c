/**
 * The two promises at the edges: a profile is deleted only when its cluster is gone, and every change
 * that reached the hub is announced — along every path a user, a pipe, a second run, a signal or a
 * full disk can take. Each test is the regression test of one way they were broken. The CLI runs for
 * real against the local estate with the file hub and the stdout bus; the oracle reads the clouds,
 * the hub's files and the delivered lines itself.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parse, stringify } from 'yaml';
import { FileOutbox } from '../../adapters/outbox/FileOutbox.ts';
import { CreateSecretCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { createEksClusters, HUB_CREDENTIALS } from '../support/aws.ts';
import { CLI, hasStackTrace, jsonLines, runCli, type CliOptions, type CliRun } from '../support/cli.ts';
import { readInventory, type DeliveredEvent } from '../support/oracle.ts';
import {
  aksCluster,
  AZURE_SUBSCRIPTION,
  EKS_ACCOUNT,
  GCP_PROJECT,
  gkeCluster,
  startEmulators,
  type Emulators,
} from '../env/emulators.ts';
import { freePort } from '../env/net.ts';
import { temporaryDirectory } from '../support/tmp.ts';
import { holdNodeGroup, holdTransition } from '../env/transitions.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- configuration and profile documents are edited freely here
type Doc = Record<string, any>;

describe('the promises at the edges (CLI, file hub, stdout bus)', () => {
  let emulators: Emulators;
  let base: Record<string, unknown>;
  let counter = 0;

  /** A fresh inventory (hub, outbox) and a configuration for it; `change` edits the document. */
  const workspace = (change: (document: Doc) => void = () => {}) => {
    const directory = join(emulators.directory, `ws-${++counter}`);
    mkdirSync(directory, { recursive: true });
    const document: Doc = structuredClone(base);
    delete document.bus;
    document.hub = { directory: join(directory, 'inventory') };
    document.outbox = { directory: join(directory, 'outbox') };
    document.inventory = { namespace: 'edges', tagAllowList: ['team'] };
    change(document);
    const config = join(directory, 'cpsync.yaml');
    writeFileSync(config, stringify(document));
    const run = (args: string[], options: CliOptions = {}) =>
      runCli([...args, '--config', config], { cwd: directory, env: emulators.env, ...options });
    return {
      directory,
      config,
      inventory: () => readInventory(join(directory, 'inventory')),
      pending: async () => (await new FileOutbox(join(directory, 'outbox')).pending()).length,
      sync: (...args: string[]) => run(['sync', ...args]),
      /** A sync that `signal`s itself once its first event is out. */
      syncStoppedBy: (signal: NodeJS.Signals) => {
        let sent = false;
        return run(['sync'], {
          onStdout: (_text, child) => {
            if (!sent) child.kill(signal);
            sent = true;
          },
        });
      },
      run,
    };
  };
  const changes = (run: CliRun) =>
    jsonLines<DeliveredEvent>(run.stdout).filter((e) => e['detail-type'] !== 'Inventory Scope Synced');
  /** The next run of `ws`: it ends well and announces the creation of every profile `written` holds. */
  const announcedByNextRun = async (ws: ReturnType<typeof workspace>, written: Map<string, unknown>) => {
    const next = clean(await ws.sync());
    assert.equal(next.code, 0, next.stderr);
    const created = changes(next).filter((e) => e['detail-type'] === 'ClusterProfile Created');
    assert.deepEqual(
      created.map((e) => `${e.detail.namespace}/${e.detail.name}`).sort(),
      [...written.keys()].sort(),
      'every creation is announced, by the next run',
    );
    return next;
  };
  const clean = (run: CliRun) => {
    assert.ok(!hasStackTrace(run.stderr), `a stack trace was printed:\n${run.stderr}`);
    return run;
  };

  /**
   * Two `cpsync sync` runs in a mount namespace of their own (`unshare -rm`) where `directory` is a tmpfs of two
   * pages, full after its first files; between them it is given room (4 MiB). What each run printed and exited
   * with, the temporary files the first left in `directory`, and (given `copyTo`) the directory's files afterwards.
   */
  const fullDiskThenRoom = async (ws: ReturnType<typeof workspace>, directory: string, copyTo?: string) => {
    mkdirSync(directory, { recursive: true });
    const out = (name: string) => join(ws.directory, name);
    const script = [
      `mount -t tmpfs -o size=8k tmpfs "${directory}" || exit 90`,
      `"$@" > "${out('out1')}" 2> "${out('err1')}"; echo $? > "${out('code1')}"`,
      `find "${directory}" -name '*.tmp' > "${out('tmp1')}"`,
      `mount -o remount,size=4m "${directory}"`,
      `"$@" > "${out('out2')}" 2> "${out('err2')}"; echo $? > "${out('code2')}"`,
      ...(copyTo ? [`cp -r "${directory}/." "${copyTo}"`] : []),
    ].join('\n');
    // Not spawnSync: the local clouds answer from this process, whose event loop must keep running.
    const { spawn } = await import('node:child_process');
    const child = spawn(
      'unshare',
      ['-rm', 'sh', '-c', script, 'sh', process.execPath, CLI, 'sync', '--config', ws.config],
      { cwd: ws.directory, env: { ...process.env, ...emulators.env } },
    );
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const status = await new Promise<number | null>((resolve) => child.on('close', resolve));
    assert.equal(status, 0, `unshare: ${stderr}`);
    const read = (name: string) => readFileSync(out(name), 'utf8');
    return {
      code1: read('code1'),
      err1: read('err1'),
      out1: read('out1'),
      tmp1: read('tmp1'),
      code2: read('code2'),
      err2: read('err2'),
      out2: read('out2'),
    };
  };

  before(async () => {
    emulators = await startEmulators({ directory: temporaryDirectory('cpsync-edges-') });
    base = parse(readFileSync(emulators.configPath, 'utf8')) as Record<string, unknown>;
  });
  after(async () => emulators?.stop());

  it('1. keeps the events a closed stdout did not take in the outbox, and the next run announces them', async () => {
    const ws = workspace();
    const closed = clean(await ws.run(['sync'], { started: (child) => child.stdout.destroy() }));
    assert.equal(closed.code, 1, closed.stderr);
    assert.match(closed.stderr, /cannot write to standard output: its reader closed it/);
    const written = ws.inventory();
    assert.ok(written.size >= 7, 'the run reached the hub');
    assert.ok((await ws.pending()) >= written.size, 'every event is still in the outbox');

    await announcedByNextRun(ws, written);
    assert.equal(await ws.pending(), 0);
  });

  it('1b. a reader that takes part of the stream and goes away (| head -c 200): every event goes out again, same ids, next run', async () => {
    const ws = workspace();
    const { spawn } = await import('node:child_process');
    const shell = spawn(
      'sh',
      [
        '-c',
        '"$0" "$1" sync --config "$2" 2>"$3" | head -c 200',
        process.execPath,
        CLI,
        ws.config,
        join(ws.directory, 'err'),
      ],
      { cwd: ws.directory, env: { ...process.env, ...emulators.env } },
    );
    let head = '';
    shell.stdout.on('data', (chunk: Buffer) => (head += chunk.toString()));
    assert.equal(await new Promise((resolve) => shell.on('close', resolve)), 0);
    assert.equal(head.length, 200, 'the reader took 200 bytes, part of the first event');
    const stderr = readFileSync(join(ws.directory, 'err'), 'utf8');
    assert.match(stderr, /went away/, stderr);
    const written = ws.inventory();
    assert.ok(written.size >= 7);
    const kept = (await new FileOutbox(join(ws.directory, 'outbox')).pending()).map((e) => e.detail.eventId);
    assert.ok(kept.length >= written.size, 'every event is still in the outbox');

    const next = await announcedByNextRun(ws, written);
    for (const id of kept) assert.ok(next.stdout.includes(id), `event ${id} goes out again with its id`);
    assert.equal(await ws.pending(), 0);
  });

  /** The local GKE clusters as the estate made them (tests change them). */
  const localGke = () =>
    emulators.gke.clusters.set(GCP_PROJECT, [
      gkeCluster('analytics', 'europe-west1'),
      gkeCluster('edge', 'europe-west1-c'),
    ]);
  /** A workspace whose `sync --follow` looks again after 1 s, then 2 s, for a minute at most. */
  const following = () =>
    workspace(
      (document) =>
        (document.follow = {
          firstDelaySeconds: 1,
          maxDelaySeconds: 2,
          maxMinutes: 1,
          eks: { minDelaySeconds: 1, maxDelaySeconds: 2 },
        }),
    );
  /** A profile of the file hub as written (YAML), by its display name. */
  const profileNamed = (ws: ReturnType<typeof workspace>, displayName: string) => {
    const stored = [...ws.inventory().values()].find((p) => p.displayName === displayName);
    if (!stored) return undefined;
    return parse(
      readFileSync(join(ws.directory, 'inventory', stored.namespace, `${stored.name}.yaml`), 'utf8'),
    ) as {
      status: {
        conditions: Array<{ type: string; status: string; reason: string }>;
        accessProviders?: Array<{ cluster: { server: string; 'certificate-authority-data'?: string } }>;
      };
    };
  };

  it('14. sync --follow looks again at a cluster the cloud is still creating until it is ready, in each cloud: Created without endpoint, then Updated with server, CA and Healthy=True', async () => {
    localGke();
    const clouds = [
      ['eks', 'checkout', 'EKS CREATING', /^https:\/\//],
      ['gke', 'analytics', 'GKE PROVISIONING', /^https:\/\/34\.76\.10\.20/],
      ['aks', 'batch', 'AKS Creating', /^https:\/\/batch-dns\./],
    ] as const;
    for (const [provider, name, state, server] of clouds) {
      const ws = following();
      // Held until the follow has looked once and found it still in change; then the cloud says ready.
      const held = holdTransition(emulators, provider, name, 'creating');
      try {
        const run = clean(
          await ws.run(['sync', '--follow'], {
            onStderr: (text) => {
              if (text.includes(`${name}: still ${state}`)) held.settle();
            },
          }),
        );
        assert.equal(run.code, 0, run.stderr);
        assert.match(
          run.stderr,
          new RegExp(
            `following 1 cluster\\(s\\) the clouds are still changing: ${provider}/\\S+/${name} \\(${state}\\)`,
          ),
        );
        assert.match(run.stderr, new RegExp(`${name}: still ${state} after \\d+ s`));
        assert.match(run.stderr, new RegExp(`${name}: settled \\(updated\\) after \\d+ s`));
        assert.match(run.stderr, /followed: 1 settled in \d+ look\(s\)\n/);
        const mine = changes(run).filter(
          (e) => (e.detail.cluster as { displayName?: string })?.displayName === name,
        );
        assert.deepEqual(
          mine.map((e) => e['detail-type']),
          ['ClusterProfile Created', 'ClusterProfile Updated'],
          provider,
        );
        const profile = profileNamed(ws, name)!;
        const healthy = profile.status.conditions.find((c) => c.type === 'ControlPlaneHealthy')!;
        assert.equal(healthy.status, 'True', provider);
        assert.match(profile.status.accessProviders![0]!.cluster.server, server);
        assert.ok(profile.status.accessProviders![0]!.cluster['certificate-authority-data'], provider);
        assert.equal(await ws.pending(), 0);
      } finally {
        held.settle();
      }
    }
  });

  it('14b. sync --follow follows an active EKS cluster while one of its node groups is being updated, until the group settles', async () => {
    // Node groups read at every sync (an unchanged cluster's are otherwise remembered for hours, and a node-group
    // call's CloudTrail event reads them at once): the sync sees the update as it begins.
    const ws = workspace((document) => {
      document.follow = {
        firstDelaySeconds: 1,
        maxDelaySeconds: 2,
        maxMinutes: 1,
        eks: { minDelaySeconds: 1, maxDelaySeconds: 2 },
      };
      document.providers.eks.nodegroupsMaxAgeMinutes = 0;
    });
    assert.equal(clean(await ws.sync()).code, 0);
    // Held until the follow has looked once and found the group still updating.
    const held = holdNodeGroup(emulators, 'payments', 'general', 'updating');
    try {
      const run = clean(
        await ws.run(['sync', '--follow'], {
          onStderr: (text) => {
            if (text.includes('payments: still')) held.settle();
          },
        }),
      );
      assert.equal(run.code, 0, run.stderr);
      assert.match(run.stderr, /eks\/\S+\/us-east-1\/payments \(EKS node group general UPDATING\)/);
      assert.match(run.stderr, /payments: settled after \d+ s/);
      assert.match(run.stderr, /followed: 1 settled in \d+ look\(s\)\n/);
      assert.deepEqual(changes(run), [], 'a node group in change changes no profile');
    } finally {
      held.settle();
    }
  });

  it('15. sync --follow deletes a cluster the cloud was deleting at once when it is gone, with one Deleted event, and never while it is being deleted', async () => {
    localGke();
    const ws = following();
    assert.equal(clean(await ws.sync()).code, 0);
    // Held until the follow has looked once and found it still being deleted; then it is gone.
    const held = holdTransition(emulators, 'gke', 'edge', 'deleting');
    try {
      const run = clean(
        await ws.run(['sync', '--follow'], {
          onStderr: (text) => {
            if (text.includes('edge: still GKE STOPPING')) held.settle();
          },
        }),
      );
      assert.equal(run.code, 0, run.stderr);
      assert.match(run.stderr, /edge \(GKE STOPPING\)/);
      assert.match(run.stderr, /edge: settled \(deleted\) after \d+ s/);
      const deleted = changes(run).filter((e) => e['detail-type'] === 'ClusterProfile Deleted');
      assert.deepEqual(
        deleted.map((e) => (e.detail.cluster as { displayName?: string }).displayName),
        ['edge'],
        'exactly one Deleted event',
      );
      assert.equal(profileNamed(ws, 'edge'), undefined, 'the profile is gone');
      assert.ok(profileNamed(ws, 'analytics'), 'the others stay');
    } finally {
      held.settle();
      localGke();
    }
  });

  it('15b. a cluster the cloud begins to create, then deletes before it was ever ready: followed through both, deleted once gone, one Deleted event', async () => {
    localGke();
    emulators.gke.clusters.get(GCP_PROJECT)!.push(gkeCluster('brief', 'europe-west1'));
    const ws = following();
    holdTransition(emulators, 'gke', 'brief', 'creating');
    // Never ready: once a look found it still being created the cloud is deleting it, and once a look found
    // it being deleted it is gone.
    let deleting: { settle: () => void } | undefined;
    try {
      const run = clean(
        await ws.run(['sync', '--follow'], {
          onStderr: (text) => {
            if (!deleting && text.includes('brief: still GKE PROVISIONING'))
              deleting = holdTransition(emulators, 'gke', 'brief', 'deleting');
            if (deleting && text.includes('brief: still GKE STOPPING')) deleting.settle();
          },
        }),
      );
      assert.equal(run.code, 0, run.stderr);
      assert.match(run.stderr, /brief \(GKE PROVISIONING\)/);
      assert.match(run.stderr, /brief: settled \(deleted\) after \d+ s/);
      const mine = changes(run).filter(
        (e) => (e.detail.cluster as { displayName?: string })?.displayName === 'brief',
      );
      assert.equal(mine[0]!['detail-type'], 'ClusterProfile Created');
      assert.equal(mine.at(-1)!['detail-type'], 'ClusterProfile Deleted');
      assert.equal(mine.filter((e) => e['detail-type'] === 'ClusterProfile Deleted').length, 1);
      assert.equal(profileNamed(ws, 'brief'), undefined);
      assert.ok(profileNamed(ws, 'analytics') && profileNamed(ws, 'edge'), 'the others stay');
    } finally {
      deleting?.settle();
      localGke();
    }
  });

  it('15c. a look that fails (the cloud refuses for a while) is tried again later; nothing is deleted for it', async () => {
    localGke();
    const ws = following();
    // Held until a look has failed; the looks after it find the cloud ready.
    const held = holdTransition(emulators, 'gke', 'analytics', 'creating');
    let refused = false;
    try {
      const run = clean(
        await ws.run(['sync', '--follow'], {
          onStderr: (text) => {
            if (!refused && text.includes('following 1 cluster')) {
              refused = true;
              emulators.gke.failures.set(
                GCP_PROJECT,
                Array.from({ length: 4 }, () => ({
                  status: 403,
                  code: 'PERMISSION_DENIED',
                  message: 'refused for a while',
                })),
              );
            }
            if (text.includes('analytics: look failed')) held.settle();
          },
        }),
      );
      assert.equal(run.code, 0, run.stderr);
      assert.match(run.stderr, /analytics: look failed \(tried again later\): .*refused for a while/);
      assert.match(run.stderr, /analytics: settled \(updated\) after \d+ s/);
      assert.deepEqual(
        changes(run).filter((e) => e['detail-type'] === 'ClusterProfile Deleted'),
        [],
        'nothing deleted',
      );
      assert.equal(
        profileNamed(ws, 'analytics')!.status.conditions.find((c) => c.type === 'ControlPlaneHealthy')!
          .status,
        'True',
      );
    } finally {
      held.settle();
      emulators.gke.failures.delete(GCP_PROJECT);
    }
  });

  it('16. SIGTERM during sync --follow stops it at once: exit 143, every event out or in the outbox, nothing half done', async () => {
    localGke();
    const ws = workspace(
      (document) => (document.follow = { firstDelaySeconds: 30, maxDelaySeconds: 60, maxMinutes: 10 }),
    );
    const held = holdTransition(emulators, 'aks', 'web', 'updating');
    try {
      const from = emulators.arm.requests.length;
      const run = clean(
        await ws.run(['sync', '--follow'], {
          onStderr: (text, child) => {
            if (text.includes('following 1 cluster') && !child.killed) child.kill('SIGTERM');
          },
        }),
      );
      assert.equal(run.code, 143, run.stderr);
      // The follow's first look at web (ARM's read of the one cluster) was 30 s away, and never came.
      assert.deepEqual(
        emulators.arm.requests
          .slice(from)
          .filter((r) => r.method === 'GET' && /\/managedClusters\/web$/i.test(r.path))
          .map((r) => r.path),
        [],
        'it did not wait out the follow',
      );
      assert.match(run.stderr, /web \(AKS Upgrading\)/);
      assert.equal(await ws.pending(), 0, 'every event of the sync went out');
      assert.equal(
        readdirSync(join(ws.directory, 'outbox', 'intents')).filter((f) => f.endsWith('.json')).length,
        0,
      );
    } finally {
      held.settle();
    }
  });

  it('2. a regional GKE scope sees the zonal clusters of its region and deletes none of them', async () => {
    emulators.gke.clusters.set(GCP_PROJECT, [
      gkeCluster('analytics', 'europe-west1'),
      gkeCluster('edge', 'europe-west1-c'),
      gkeCluster('zonal-b', 'europe-west1-b'),
      gkeCluster('elsewhere', 'us-central1-a'),
    ]);
    const ws = workspace();
    assert.equal(clean(await ws.sync()).code, 0);
    const before = ws.inventory();
    for (let run = 0; run < 3; run++) {
      const scoped = clean(await ws.sync('--scope', `gke/${GCP_PROJECT}/europe-west1`));
      assert.equal(scoped.code, 0, scoped.stderr);
      assert.deepEqual(changes(scoped), [], 'nothing changed, nothing announced');
    }
    assert.deepEqual(ws.inventory(), before, 'every profile kept, same uid, same version');
    const zone = clean(await ws.sync('--scope', `gke/${GCP_PROJECT}/europe-west1-b`));
    assert.equal(zone.code, 2);
    assert.match(
      zone.stderr,
      /europe-west1-b.* is a zone: a GKE scope is a project or a project and a region/,
    );
  });

  it('3. a scope spelled in another case is the same scope: nothing is created again', async () => {
    const ws = workspace();
    assert.equal(clean(await ws.sync()).code, 0);
    const before = ws.inventory();
    for (const scope of [
      `aks/${AZURE_SUBSCRIPTION.toUpperCase()}/WestEurope`,
      `aks/${AZURE_SUBSCRIPTION}/West Europe`,
      `gke/${GCP_PROJECT.toUpperCase()}`,
    ]) {
      const run = clean(await ws.sync('--scope', scope));
      assert.equal(run.code, 0, `${scope}: ${run.stderr}`);
      assert.deepEqual(changes(run), [], `${scope} announced changes`);
    }
    assert.deepEqual(ws.inventory(), before);
  });

  it('4. refuses a scope the configuration does not cover (exit 2, named), and never widens it', async () => {
    await createEksClusters(emulators.moto.endpoint, EKS_ACCOUNT, 'ap-south-1', [{ name: 'unconfigured' }]);
    const ws = workspace();
    for (const [scope, reason] of [
      [
        `eks/${EKS_ACCOUNT}/ap-south-1`,
        /region ap-south-1 is not configured for eks\/210987654321 \(configured: eu-west-1, us-east-1\)/,
      ],
      ['eks/123456789012', /123456789012 is not covered by providers\.eks\.accounts/],
      ['gke/other-project', /other-project is not covered by providers\.gke\.projects/],
      ['aks/11111111-2222-3333-4444-555555555555', /is not covered by providers\.aks\.subscriptions/],
      [`eks/${EKS_ACCOUNT}/nowhere`, /eks region "nowhere" is not an AWS region/],
    ] as const) {
      const run = clean(await ws.sync('--scope', scope));
      assert.equal(run.code, 2, `${scope}: ${run.stderr}`);
      assert.match(run.stderr, reason);
      assert.equal(ws.inventory().size, 0, 'nothing was synced');
    }
    // The account-wide scope stands for the configured regions of the account, and no other.
    const wide = clean(await ws.sync('--scope', `eks/${EKS_ACCOUNT}`));
    assert.equal(wide.code, 0, wide.stderr);
    assert.match(wide.stderr, /2 scope\(s\), 2 complete/);
    const names = [...ws.inventory().values()].map((p) => p.displayName);
    assert.ok(names.length > 0 && !names.includes('unconfigured'), names.join(', '));
  });

  it('5. two runs at once announce each change with one event id, and apply one after the other', async () => {
    const ws = workspace();
    const [a, b] = await Promise.all([ws.sync(), ws.sync()]);
    for (const run of [a, b]) assert.equal(clean(run).code, 0, run.stderr);
    const byProfile = new Map<string, Set<string>>();
    for (const event of [...changes(a), ...changes(b)]) {
      const key = `${event['detail-type']} ${event.detail.namespace}/${event.detail.name}`;
      byProfile.set(key, (byProfile.get(key) ?? new Set()).add(event.detail.eventId));
    }
    for (const [key, ids] of byProfile) assert.equal(ids.size, 1, `${key} announced with ${ids.size} ids`);
    const stored = ws.inventory();
    for (const profile of stored.values())
      assert.ok(byProfile.has(`ClusterProfile Created ${profile.namespace}/${profile.name}`));
    assert.equal(
      [...byProfile.keys()].filter((k) => k.startsWith('ClusterProfile Created')).length,
      stored.size,
    );
  });

  it('6. a cloud endpoint that accepts but never answers ends its scope failed (Timeout); the others finish', async () => {
    // A port that takes connections and never says a word (not even its side of the TLS handshake).
    const silent = createServer(() => {});
    const port = await freePort();
    await new Promise<void>((resolve) => silent.listen(port, '127.0.0.1', resolve));
    try {
      // The scope's deadline ends the listing (the request's is longer): one every other scope's listing stays
      // well inside on a busy machine, so that they finish is told by their answers, not by a clock.
      const ws = workspace((d) => {
        d.providers.aks.endpoint = `https://127.0.0.1:${port}`;
        d.sync = { requestTimeoutSeconds: 60, scopeTimeoutSeconds: 15 };
      });
      const run = clean(await ws.sync());
      assert.equal(run.code, 1, run.stderr);
      assert.match(
        run.stderr,
        /aks\/00000000-1111-2222-3333-444444444444\/\*: failed — Timeout: listing .*no answer within 15 s/,
      );
      assert.match(run.stderr, /4 scope\(s\), 3 complete/);
    } finally {
      silent.close();
    }
  });

  it('7. moves unreadable outbox files aside and names them; they never stop a run', async () => {
    const ws = workspace();
    const outbox = join(ws.directory, 'outbox');
    mkdirSync(join(outbox, 'intents'), { recursive: true });
    writeFileSync(join(outbox, '00000000-empty.json'), '');
    writeFileSync(join(outbox, '00000001-truncated.json'), '[{"source":"cpsync","detailType":"Cluster');
    writeFileSync(join(outbox, 'intents', '00000002-truncated.json'), '[{"id":"');
    // Well-formed JSON with cpsync's ids and nothing else: edited by hand, or another version's.
    writeFileSync(join(outbox, 'intents', '00000003-idonly.json'), JSON.stringify([{ id: 'a'.repeat(32) }]));
    writeFileSync(
      join(outbox, '00000004-idonly.json'),
      JSON.stringify({ detail: { eventId: '00000000-0000-4000-8000-000000000000' } }),
    );
    const run = clean(await ws.sync());
    assert.equal(run.code, 1, run.stderr);
    const files = [
      '00000000-empty.json',
      '00000001-truncated.json',
      '00000002-truncated.json',
      '00000003-idonly.json',
      '00000004-idonly.json',
    ];
    for (const file of files)
      assert.match(run.stderr, new RegExp(`unreadable outbox record moved aside: \\S+${file} \\(`));
    assert.equal(readdirSync(join(outbox, 'quarantine')).length, files.length);
    assert.ok(ws.inventory().size >= 7);
    assert.equal(changes(run).length, ws.inventory().size, 'every change announced');
    const again = clean(await ws.sync());
    assert.equal(again.code, 0, again.stderr);
  });

  it('8. a bus that cannot be written (a full disk) ends in a summary and exit 1, and loses nothing', async () => {
    const ws = workspace((d) => (d.bus = { jsonl: '/dev/full' }));
    const full = clean(await ws.sync());
    assert.equal(full.code, 1, full.stderr);
    assert.match(full.stderr, /events: 0 published/);
    assert.match(full.stderr, /the bus refused events .* ENOSPC: cannot write to \/dev\/full: ENOSPC/);
    const stored = ws.inventory().size;
    assert.ok(stored >= 7);
    assert.ok((await ws.pending()) >= stored);
    // The same inventory, the bus writable again: every change arrives.
    const events = join(ws.directory, 'events.jsonl');
    const document = parse(readFileSync(ws.config, 'utf8'));
    writeFileSync(ws.config, stringify({ ...document, bus: { jsonl: events } }));
    const next = clean(await ws.sync());
    assert.equal(next.code, 0, next.stderr);
    const delivered = jsonLines<DeliveredEvent>(readFileSync(events, 'utf8'));
    assert.equal(delivered.filter((e) => e['detail-type'] === 'ClusterProfile Created').length, stored);
  });

  it('8b. an outbox on a full disk: the run ends in a summary and exit 1, and nothing is lost once there is room', async () => {
    const ws = workspace();
    // An outbox of two pages, full after its first files; then room again.
    const { code1, err1, out1, tmp1, code2, err2, out2 } = await fullDiskThenRoom(
      ws,
      join(ws.directory, 'outbox'),
    );
    assert.equal(code1.trim(), '1', err1);
    assert.ok(!hasStackTrace(err1), err1);
    assert.match(err1, /^sync \S+: /m, 'the summary was printed');
    assert.match(err1, /ENOSPC/);
    assert.equal(tmp1, '', 'no temporary file left behind');
    assert.equal(code2.trim(), '0', err2);
    const announced = new Set(
      jsonLines<DeliveredEvent>(out1 + out2)
        .filter((e) => e['detail-type'] === 'ClusterProfile Created')
        .map((e) => `${e.detail.namespace}/${e.detail.name}`),
    );
    assert.deepEqual([...announced].sort(), [...ws.inventory().keys()].sort());
  });

  it('8c. a file hub on a full disk: the run ends in a summary and exit 1, no half file, and the next run with room converges, every change announced once', async () => {
    const ws = workspace();
    // A hub directory of two pages, full after its first profile; then room again (and its files copied out).
    const { code1, err1, out1, tmp1, code2, err2, out2 } = await fullDiskThenRoom(
      ws,
      join(ws.directory, 'inventory'),
      join(ws.directory, 'inventory-copy'),
    );
    assert.equal(code1.trim(), '1', err1);
    assert.ok(!hasStackTrace(err1), err1);
    assert.match(err1, /^sync \S+: /m, 'the summary was printed');
    assert.match(err1, /ENOSPC/);
    assert.equal(tmp1, '', 'no temporary file left behind');
    assert.equal(code2.trim(), '0', err2);
    // What the hub holds once there was room (copied out of the mount namespace): every cluster, each announced once.
    const held = readInventory(join(ws.directory, 'inventory-copy'));
    assert.ok(held.size >= 7);
    const created = jsonLines<DeliveredEvent>(out1 + out2)
      .filter((e) => e['detail-type'] === 'ClusterProfile Created')
      .map((e) => `${e.detail.namespace}/${e.detail.name}`);
    assert.deepEqual([...created].sort(), [...held.keys()].sort(), 'each profile announced exactly once');
  });

  it('9. SIGTERM and SIGINT stop a run cleanly: exit 143/130, a summary, nothing left waiting or behind', async () => {
    for (const [signal, code] of [
      ['SIGTERM', 143],
      ['SIGINT', 130],
    ] as const) {
      const ws = workspace();
      const stopped = clean(await ws.syncStoppedBy(signal));
      assert.equal(stopped.code, code, stopped.stderr);
      assert.match(stopped.stderr, new RegExp(`stopped by ${signal}`));
      assert.match(stopped.stderr, /^sync \S+: /m, 'the summary was printed');
      assert.doesNotMatch(stopped.stderr, /intent\(s\) of unfinished changes wait/);
      const leftovers = [join(ws.directory, 'outbox'), join(ws.directory, 'inventory', 'edges')]
        .filter(existsSync)
        .flatMap((d) => readdirSync(d))
        .filter((f) => f.endsWith('.tmp'));
      assert.deepEqual(leftovers, []);
      const next = clean(await ws.sync());
      assert.equal(next.code, 0, next.stderr);
      const announced = new Set(
        [...changes(stopped), ...changes(next)]
          .filter((e) => e['detail-type'] === 'ClusterProfile Created')
          .map((e) => `${e.detail.namespace}/${e.detail.name}`),
      );
      assert.deepEqual([...announced].sort(), [...ws.inventory().keys()].sort());
    }
  });

  it('9b. after a run killed outright, the next run settles its intents at once and says what waits', async () => {
    const ws = workspace();
    const killed = await ws.syncStoppedBy('SIGKILL');
    assert.equal(killed.signal, 'SIGKILL');
    const next = clean(await ws.sync());
    assert.equal(next.code, 0, next.stderr);
    assert.doesNotMatch(next.stderr, /intent\(s\) of unfinished changes wait/);
    const announced = new Set(
      [...changes(killed), ...changes(next)]
        .filter((e) => e['detail-type'] === 'ClusterProfile Created')
        .map((e) => `${e.detail.namespace}/${e.detail.name}`),
    );
    assert.deepEqual([...announced].sort(), [...ws.inventory().keys()].sort());

    // An intent of a run that may still be going (its time is not up, it names no lease) waits, and the summary says until when.
    const until = new Date(Date.now() + 10 * 60_000).toISOString();
    mkdirSync(join(ws.directory, 'outbox', 'intents'), { recursive: true });
    writeFileSync(
      join(ws.directory, 'outbox', 'intents', 'waiting.json'),
      JSON.stringify([
        {
          id: 'a'.repeat(32),
          kind: 'created',
          namespace: 'edges',
          name: 'cpsync-eks-elsewhere-0000000000',
          changes: [],
          target: '',
          context: {
            syncId: 'elsewhere',
            occurredAt: new Date().toISOString(),
            scope: { provider: 'eks', account: EKS_ACCOUNT, region: 'us-east-1' },
          },
          notBefore: until,
        },
      ]),
    );
    const waiting = clean(await ws.sync());
    assert.match(
      waiting.stderr,
      new RegExp(
        `1 intent\\(s\\) of unfinished changes wait in the outbox; .*at the latest from ${until.replace(/[.]/g, '\\.')}`,
      ),
    );
  });

  it('11. quotes no credential in any error: every way of reading one fails, and the output is scanned', async () => {
    const canary = `CANARY${randomUUID().replaceAll('-', '')}SECRET`;
    const pem = `-----BEGIN PRIVATE KEY-----\n${canary}\n-----END PRIVATE KEY-----\n`;
    const files = join(emulators.directory, 'leaky');
    mkdirSync(files, { recursive: true });
    const file = (name: string, text: string) => {
      writeFileSync(join(files, name), text, { mode: 0o600 });
      return join(files, name);
    };
    const secrets = new SecretsManagerClient({
      endpoint: emulators.moto.endpoint,
      region: 'us-east-1',
      credentials: HUB_CREDENTIALS,
    });
    const secret = async (name: string, text: string) =>
      (await secrets.send(new CreateSecretCommand({ Name: `${name}-${counter}`, SecretString: text }))).ARN!;
    const kubeconfig = (token: string) =>
      stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'hub', cluster: { server: 'https://127.0.0.1:1' } }],
        users: [{ name: 'u', user: { token } }],
        contexts: [{ name: 'hub', context: { cluster: 'hub', user: 'u' } }],
        'current-context': 'hub',
      });
    const gkeOnly = (d: Doc, credentials: unknown) => {
      d.providers = { gke: { ...d.providers.gke, credentials } };
    };
    const cases: Array<[string, (d: Doc) => void | Promise<void>]> = [
      ['a GCP credential file that is not JSON', (d) => gkeOnly(d, { file: file('gcp-text', pem) })],
      [
        'a GCP credential file that is a JSON list',
        (d) => gkeOnly(d, { file: file('gcp-list', JSON.stringify([canary])) }),
      ],
      [
        'a GCP credential of an unknown type',
        (d) => gkeOnly(d, { file: file('gcp-type', JSON.stringify({ type: canary, private_key: pem })) }),
      ],
      [
        'a GCP service-account key that is not a key',
        (d) =>
          gkeOnly(d, {
            file: file(
              'gcp-key',
              JSON.stringify({
                ...emulators.gke.serviceAccountKey,
                private_key: pem,
                private_key_id: canary,
              }),
            ),
          }),
      ],
      [
        'a GCP external account that cannot be used',
        (d) =>
          gkeOnly(d, {
            file: file(
              'gcp-external',
              JSON.stringify({
                type: 'external_account',
                audience: canary,
                subject_token_type: 'urn:ietf:params:oauth:token-type:jwt',
                token_url: `${emulators.gke.endpoint}/token`,
                credential_source: { file: join(files, 'missing-token') },
              }),
            ),
          }),
      ],
      [
        'a GCP credential in Secrets Manager that is not JSON',
        async (d) => gkeOnly(d, { secretArn: await secret('gcp', pem) }),
      ],
      [
        'an Azure client secret that is wrong',
        (d) => {
          d.providers = {
            aks: {
              ...d.providers.aks,
              credential: { ...d.providers.aks.credential, clientSecret: { file: file('azure', canary) } },
            },
          };
        },
      ],
      [
        'a hub kubeconfig that is not YAML',
        (d) => (d.hub = { kubeconfig: file('kube-text', `${pem}: : [`) }),
      ],
      [
        'a hub kubeconfig without the context asked for',
        (d) => (d.hub = { kubeconfig: file('kube-context', kubeconfig(canary)), context: 'other' }),
      ],
      [
        'a hub kubeconfig in Secrets Manager that is not YAML',
        async (d) => (d.hub = { kubeconfigSecretArn: await secret('kube', `${pem}: : [`) }),
      ],
    ];
    const env = { ...emulators.env, AWS_ENDPOINT_URL_SECRETS_MANAGER: emulators.moto.endpoint };
    const shown: string[] = [];
    for (const [what, change] of cases) {
      let document: Doc = {};
      const ws = workspace((d) => void (document = d));
      await change(document);
      writeFileSync(ws.config, stringify(document));
      for (const command of [['validate-config'], ['sync'], ['list']]) {
        const run = await runCli([...command, '--config', ws.config], { cwd: ws.directory, env });
        shown.push(run.stdout, run.stderr);
        assert.ok(!hasStackTrace(run.stderr), `${what}: ${command[0]} printed a stack trace:\n${run.stderr}`);
        assert.ok(
          !run.stdout.includes(canary) && !run.stderr.includes(canary),
          `${what}: ${command[0]} quoted the credential:\n${run.stderr}`,
        );
      }
    }
    // The AKS user kubeconfig (it carries a user token) read for CA data, when it does not parse: the
    // cluster is listed without CA data and the summary says so, without a word of the kubeconfig.
    const ws = workspace((d) => {
      d.providers = { aks: d.providers.aks };
    });
    const webId = emulators.arm.clusters.get(AZURE_SUBSCRIPTION)![0]!.id.toLowerCase();
    emulators.arm.caData.set(webId, `${canary}\n  : - [`);
    try {
      const run = await ws.sync();
      shown.push(run.stdout, run.stderr);
      assert.equal(run.code, 0, run.stderr);
      assert.match(
        run.stderr,
        /1 profile\(s\) carry no CA data .*\/cpsync-aks-web-\w+ \(UnreadableKubeconfig\)/,
      );
    } finally {
      emulators.arm.caData.delete(webId);
    }
    const all = shown.join('\n');
    assert.ok(!all.includes(canary), 'a credential was quoted');
    assert.ok(!all.includes('local-user-token-never-to-be-stored'), 'the AKS user token was quoted');
    assert.match(all, /providers\.gke\.credentials \(file \S+gcp-text\): is not valid JSON/);
    assert.match(all, /hub\.context: context "other" is not in /);
  });

  it('13. finds on reading what would fail at run time (exit 2, the field named), and refuses huge files early', async () => {
    const missing = join(emulators.directory, 'no-such-file');
    const cases: Array<[string, (d: Doc) => void, RegExp]> = [
      [
        'a credentials file that is not there',
        (d) => (d.providers.gke.credentials = { file: missing }),
        /providers\.gke\.credentials\.file: \S+no-such-file: no such file/,
      ],
      [
        'a client secret file that is not there',
        (d) => (d.providers.aks.credential.clientSecret = { file: missing }),
        /providers\.aks\.credential\.clientSecret\.file: \S+no-such-file: no such file/,
      ],
      [
        'a kubeconfig that is not there',
        (d) => (d.hub = { kubeconfig: missing }),
        /hub\.kubeconfig: \S+no-such-file: no such file/,
      ],
      [
        'a kubeconfig context that is not in it',
        (d) => {
          const kubeconfig = join(emulators.directory, 'context.kubeconfig');
          writeFileSync(
            kubeconfig,
            stringify({
              contexts: [{ name: 'hub', context: {} }],
              clusters: [],
              users: [],
              'current-context': 'hub',
            }),
          );
          d.hub = { kubeconfig, context: 'elsewhere' };
        },
        /hub\.context: context "elsewhere" is not in \S+ \(it has: hub\)/,
      ],
      [
        'a home region that is no region',
        (d) => (d.providers.eks.homeRegion = 'nowhere'),
        /providers\.eks\.homeRegion: must be an AWS region/,
      ],
      [
        'regions of two AWS partitions',
        (d) => (d.providers.eks.regions = ['us-east-1', 'cn-north-1']),
        /providers\.eks\.regions\[1\]: cn-north-1 is in the aws-cn partition, but the home region us-east-1 is in aws/,
      ],
      [
        'a home region of another partition than the regions',
        (d) => (d.providers.eks.homeRegion = 'us-gov-west-1'),
        /providers\.eks\.regions\[0\]: \S+ is in the aws partition, but the home region us-gov-west-1 \(providers\.eks\.homeRegion\) is in aws-us-gov/,
      ],
      [
        'a file: endpoint',
        (d) => (d.providers.eks.endpoint = 'file:///etc/passwd'),
        /providers\.eks\.endpoint: must be an https:\/\/ URL/,
      ],
      [
        'an ftp: endpoint',
        (d) => (d.providers.gke.endpoint = 'ftp://example.com/'),
        /providers\.gke\.endpoint: must be an https:\/\/ URL/,
      ],
      [
        'an http: authority host elsewhere',
        (d) => (d.providers.aks.authorityHost = 'http://login.example.com'),
        /providers\.aks\.authorityHost: must be https:\/\//,
      ],
    ];
    for (const [what, change, expected] of cases) {
      const ws = workspace(change);
      for (const command of ['validate-config', 'sync']) {
        const run = clean(await ws.run([command]));
        assert.equal(run.code, 2, `${what} (${command}): ${run.stderr}`);
        assert.match(run.stderr, expected, what);
      }
      assert.equal(ws.inventory().size, 0);
    }
    // What only fails on contact: one line, exit 2.
    const contact = workspace((d) => {
      d.providers.gke.credentials = {
        secretArn: 'arn:aws:secretsmanager:us-east-1:123456789012:secret:absent-AbCdEf',
      };
    });
    const absent = clean(
      await contact.run(['sync'], {
        env: { ...emulators.env, AWS_ENDPOINT_URL_SECRETS_MANAGER: emulators.moto.endpoint },
      }),
    );
    assert.equal(absent.code, 2, absent.stderr);
    assert.match(
      absent.stderr,
      /^cpsync: providers\.gke\.credentials \(secret arn:\S+absent-AbCdEf\): cannot be read: ResourceNotFoundException/m,
    );
    assert.equal(absent.stderr.trim().split('\n').length, 1, absent.stderr);
    // A configuration of 50 MB is refused before it is parsed.
    const huge = join(emulators.directory, 'huge.yaml');
    writeFileSync(huge, `# ${'x'.repeat(50 * 1024 * 1024)}\n`);
    const refused = clean(await runCli(['validate-config', '--config', huge], { env: emulators.env }));
    assert.equal(refused.code, 2);
    // Its size is all that is named: the file was measured, not read and parsed.
    assert.match(refused.stderr, /the file is 50\.0 MiB; a configuration is at most 1 MiB/);
    assert.equal(refused.stderr.trim().split('\n').length, 2, refused.stderr);
  });

  it('12. names malformed hub files, leaves them untouched, and syncs every other cluster', async () => {
    const ws = workspace();
    assert.equal(clean(await ws.sync()).code, 0);
    const namespace = join(ws.directory, 'inventory', 'edges');
    const files = readdirSync(namespace);
    const noSpec = files.find((f) => f.startsWith('cpsync-aks-batch-'))!;
    const badConditions = files.find((f) => f.startsWith('cpsync-eks-checkout-'))!;
    const edit = (file: string, change: (p: Doc) => void) => {
      const profile = parse(readFileSync(join(namespace, file), 'utf8'));
      change(profile);
      writeFileSync(join(namespace, file), stringify(profile));
    };
    edit(noSpec, (p) => delete p.spec);
    edit(badConditions, (p) => (p.status.conditions = 7));
    writeFileSync(join(namespace, 'scalar.yaml'), '7\n');
    writeFileSync(join(namespace, 'list.yaml'), '- a\n- b\n');
    const before = Object.fromEntries(
      [noSpec, badConditions, 'scalar.yaml', 'list.yaml'].map((f) => [
        f,
        readFileSync(join(namespace, f), 'utf8'),
      ]),
    );
    emulators.arm.clusters.set(AZURE_SUBSCRIPTION, [
      aksCluster('web', 'rg-web', { currentKubernetesVersion: '1.31.9' }),
      aksCluster('batch', 'rg-batch'),
    ]);
    const run = clean(await ws.sync());
    assert.equal(run.code, 1, run.stderr);
    for (const [file, reason] of [
      [noSpec, 'has no spec'],
      [badConditions, 'status.conditions is not a list'],
      ['scalar.yaml', 'is a number, not an object'],
      ['list.yaml', 'is a list, not an object'],
    ] as const)
      assert.match(
        run.stderr,
        new RegExp(`malformed object in the hub, left untouched: edges/${file.slice(0, -5)} \\(${reason}`),
      );
    for (const [file, text] of Object.entries(before))
      assert.equal(readFileSync(join(namespace, file), 'utf8'), text, `${file} was changed`);
    assert.ok(
      changes(run).some(
        (e) =>
          e['detail-type'] === 'ClusterProfile Updated' &&
          e.detail.changedFields?.includes('status.version.kubernetes'),
      ),
      'the other clusters were synced',
    );
    assert.ok(!changes(run).some((e) => e['detail-type'] === 'ClusterProfile Deleted'));
    const list = clean(await ws.run(['list']));
    assert.equal(list.code, 1);
    assert.match(list.stdout, /cpsync-aks-web-/);
    assert.match(list.stderr, /malformed object in the hub, not listed: edges\/scalar/);
  });
});
