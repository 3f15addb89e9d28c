/* eslint-disable @typescript-eslint/no-explicit-any -- events read back as plain JSON */
/**
 * `cpsync announce` along its entry points: the flags that choose profiles (and bad ones), a bus that
 * refuses the events, and a stop signal — against a file hub, with the events read back from the bus.
 */
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { FileHub } from '../../../adapters/hub/FileHub.ts';
import { normalize } from '../../../core/domain/normalize.ts';
import { ANNOTATION_DELETED_AT } from '../../../core/domain/constants.ts';
import { main, type Io } from '../../../cli/program.ts';
import { parse, stringify } from 'yaml';
import { DetailValidator } from '../../../events/index.ts';
import { aksCluster, eksCluster, gkeCluster, NOW } from '../../support/fixtures.ts';
import { inventoryOptions } from '../../support/settings.ts';
import { temporaryDirectory } from '../../support/tmp.ts';

const NAMESPACE = 'cluster-inventory';

function io(signal?: AbortSignal): Io & { out: () => string; err: () => string } {
  let out = '';
  let err = '';
  return {
    stdout: { write: (s: string) => ((out += s), true) } as unknown as NodeJS.WritableStream,
    stderr: { write: (s: string) => ((err += s), true) } as unknown as NodeJS.WritableStream,
    ...(signal ? { signal } : {}),
    out: () => out,
    err: () => err,
  };
}

describe('cpsync announce', () => {
  const directory = temporaryDirectory('cpsync-announce-');
  const hubDirectory = join(directory, 'hub');
  const busFile = join(directory, 'events.jsonl');
  const config = (bus: string) => {
    const file = join(directory, `cpsync-${Math.random().toString(36).slice(2)}.json`);
    writeFileSync(file, JSON.stringify({ hub: { directory: hubDirectory }, bus: { jsonl: bus } }));
    return file;
  };
  const published = () =>
    readFileSync(busFile, 'utf8')
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { 'detail-type': string; detail: Record<string, any> });

  /** Every file of the hub with its text: what a run wrote to it, if anything. */
  const hubFiles = () =>
    Object.fromEntries(
      (readdirSync(hubDirectory, { recursive: true }) as string[]).sort().flatMap((f) => {
        try {
          return [[f, readFileSync(join(hubDirectory, f), 'utf8')]];
        } catch {
          return []; // a directory
        }
      }),
    );

  before(async () => {
    const hub = new FileHub({ directory: hubDirectory });
    const options = inventoryOptions();
    for (const cluster of [
      eksCluster(),
      eksCluster({ name: 'search', region: 'eu-west-1' }),
      gkeCluster(),
      aksCluster(),
    ]) {
      const profile = normalize(cluster, options, NOW);
      await hub.applyObject(profile);
      await hub.applyStatus(profile);
    }
  });

  it('refuses to run without a choice, and names a bad --scope or --provider', async () => {
    for (const [args, message] of [
      [['announce'], /say what to announce: --all, or --provider, --scope or --namespace/],
      [['announce', '--scope', 'eks'], /--scope .*expected <provider>\/<account>\[\/<region>\].*got "eks"/],
      [['announce', '--provider', 'oke'], /--provider .*expected one of eks, gke, aks, got "oke"/],
    ] as const) {
      const run = io();
      assert.equal(await main(['--config', config(busFile), ...args], run), 2, run.err());
      assert.match(run.err(), message);
    }
  });

  it('publishes one valid ClusterProfile Announced event per chosen profile, and writes nothing to the hub', async () => {
    const before = hubFiles();
    assert.ok(Object.keys(before).some((f) => f.startsWith(NAMESPACE)));
    const all = io();
    assert.equal(await main(['--config', config(busFile), 'announce', '--all'], all), 0, all.err());
    const events = published();
    assert.equal(events.length, 4);
    const validator = new DetailValidator();
    for (const event of events) {
      assert.equal(event['detail-type'], 'ClusterProfile Announced');
      assert.deepEqual(validator.errors(event['detail-type'], event.detail), []);
    }
    assert.equal(new Set(events.map((e) => e.detail.syncId)).size, 1, 'one announcement, one id');
    assert.match(all.err(), /announced 4 of 4 profile\(s\)/);

    const some = io();
    assert.equal(
      await main(
        [
          '--config',
          config(busFile),
          'announce',
          '--scope',
          'eks/111122223333/eu-west-1',
          '--provider',
          'eks',
        ],
        some,
      ),
      0,
    );
    const chosen = published().slice(4);
    assert.deepEqual(
      chosen.map((e) => e.detail.cluster.displayName),
      ['search'],
    );
    // A subscription id in upper case is the one Azure spells in lower case: its profile is announced.
    const upper = io();
    assert.equal(
      await main(
        ['--config', config(busFile), 'announce', '--scope', `aks/${aksCluster().account.toUpperCase()}`],
        upper,
      ),
      0,
      upper.err(),
    );
    assert.match(upper.err(), /announced 1 of 1 profile\(s\)/);
    assert.deepEqual(
      published()
        .slice(5)
        .map((e) => e.detail.cluster.provider),
      ['aks'],
    );
    // A scope or a namespace that could select nothing cpsync writes is refused, naming what is wrong: not taken for
    // an empty inventory.
    for (const [args, message] of [
      [['--scope', 'eks/1234'], /--scope: eks account "1234" is not a 12-digit AWS account id/],
      [['--scope', 'gke/Not_A_Project'], /--scope: gke account .* is not a GCP project id/],
      [
        ['--namespace', 'elsewhere'],
        /--namespace: elsewhere is not a namespace cpsync writes profiles to \(cluster-inventory\)/,
      ],
    ] as const) {
      const refused = io();
      assert.equal(await main(['--config', config(busFile), 'announce', ...args], refused), 2, refused.err());
      assert.match(refused.err(), message);
    }
    assert.equal(published().length, 6, 'nothing announced by the refused');
    assert.deepEqual(hubFiles(), before, 'the hub is only read');
  });

  it("withholds, naming it and why, a profile that does not say it is cpsync's, and exits 1", async () => {
    // cpsync's manager label, but another manager named in its spec, and another with no provider id.
    const hub = new FileHub({ directory: hubDirectory });
    const base = normalize(eksCluster({ name: 'odd', region: 'ap-south-1' }), inventoryOptions(), NOW);
    const others = [
      { ...base, spec: { ...base.spec, clusterManager: { name: 'someone-else' } } },
      {
        ...base,
        metadata: { ...base.metadata, name: `${base.metadata.name}-bare`, annotations: {} },
      },
    ];
    for (const profile of others) await hub.applyObject(profile);
    try {
      const count = published().length;
      const run = io();
      assert.equal(await main(['--config', config(busFile), 'announce', '--all'], run), 1, run.err());
      assert.equal(published().length, count + 4, 'the four of cpsync announced');
      assert.match(
        run.err(),
        new RegExp(
          `not announced, as cpsync cannot tell it wrote them: ${NAMESPACE}/${base.metadata.name}: .*not managed by cpsync \\(spec.clusterManager.name: "someone-else"\\)`,
        ),
      );
      assert.match(
        run.err(),
        new RegExp(`${NAMESPACE}/${base.metadata.name}-bare: .*has no cpsync.io/provider-id annotation`),
      );
      assert.match(run.err(), /announced 4 of 4 profile\(s\) .*; 2 withheld/);
      assert.ok(
        !published()
          .slice(count)
          .some((e) => e.detail.cluster.displayName === 'odd'),
      );
    } finally {
      for (const profile of others) await hub.delete({ namespace: NAMESPACE, name: profile.metadata.name });
    }
  });

  it("leaves out a profile cpsync deleted (held by another controller's finalizer): its cluster is gone, and it is not announced again; one another writer deleted is announced", async () => {
    const hub = new FileHub({ directory: hubDirectory });
    /** A profile as a Kubernetes hub holds it while a finalizer holds it (the file hub itself deletes at once). */
    const held = async (name: string, markedByCpsync: boolean) => {
      const base = normalize(eksCluster({ name, region: 'ap-south-1' }), inventoryOptions(), NOW);
      await hub.applyObject(base);
      await hub.applyStatus(base);
      const file = join(hubDirectory, NAMESPACE, `${base.metadata.name}.yaml`);
      const stored = parse(readFileSync(file, 'utf8')) as typeof base;
      const metadata = {
        ...stored.metadata,
        deletionTimestamp: NOW,
        finalizers: ['example.com/hold'],
        annotations: {
          ...stored.metadata.annotations,
          ...(markedByCpsync ? { [ANNOTATION_DELETED_AT]: NOW } : {}),
        },
      };
      writeFileSync(file, stringify({ ...stored, metadata }));
      assert.ok(
        (await hub.get({ namespace: NAMESPACE, name: base.metadata.name }))?.metadata.deletionTimestamp,
      );
      return base;
    };
    const made = [await held('held-open', true), await held('held-by-another', false)];
    try {
      const count = published().length;
      const run = io();
      assert.equal(await main(['--config', config(busFile), 'announce', '--all'], run), 0, run.err());
      assert.match(run.err(), /announced 5 of 5 profile\(s\)/);
      const names = published()
        .slice(count)
        .map((e) => e.detail.cluster.displayName);
      assert.ok(!names.includes('held-open'), names.join(', '));
      assert.ok(names.includes('held-by-another'), names.join(', '));
    } finally {
      for (const base of made) await hub.delete({ namespace: NAMESPACE, name: base.metadata.name });
    }
  });

  it('exits 1 naming each event the bus refused', async () => {
    const refusing = join(directory, 'not-a-file');
    mkdirSync(refusing);
    const run = io();
    assert.equal(await main(['--config', config(refusing), 'announce', '--all'], run), 1);
    assert.equal(run.err().match(/cpsync: event [0-9a-f-]{36} not published: /g)?.length, 4, run.err());
    assert.match(run.err(), /announced 0 of 4 profile\(s\)/);
  });

  it('stops on a signal before handing events to the bus, with the signal’s exit code', async () => {
    const stop = new AbortController();
    stop.abort('SIGINT');
    const count = published().length;
    const run = io(stop.signal);
    assert.equal(await main(['--config', config(busFile), 'announce', '--all'], run), 130);
    assert.equal(published().length, count, 'nothing published after the signal');
    assert.match(run.err(), /announced 0 of 4 profile\(s\)/);
  });
});
