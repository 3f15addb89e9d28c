/**
 * Orphans: profiles of scopes dropped from the configuration (a region, a whole provider, a mistyped
 * project). The real CLI against the local clouds, the file hub and the stdout bus; the oracle reads the
 * hub's files and the delivered lines. They are reported (summary, `Inventory Scope Orphaned`,
 * `cpsync list --orphans`) and never deleted for being absent — only by `cpsync prune --orphans --yes`
 * or a provider set to `off`, each deletion announced.
 */
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parse, stringify } from 'yaml';
import { DetailValidator } from '../../events/validate.ts';
import { EKS_ACCOUNT, startEmulators, type Emulators } from '../env/emulators.ts';
import { serveEksAccessEntries } from '../env/eksAccessEntries.ts';
import { hasStackTrace, jsonLines, runCli, type CliRun } from '../support/cli.ts';
import { readInventory, type DeliveredEvent } from '../support/oracle.ts';
import { temporaryDirectory } from '../support/tmp.ts';

/** The consumer's IAM role: what cpsync grants on the EKS clusters. */
const DEPLOYER = `arn:aws:iam::${EKS_ACCOUNT}:role/deployer`;

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- configuration documents are edited freely here
type Doc = Record<string, any>;

describe('orphans: scopes dropped from the configuration', () => {
  let emulators: Emulators;
  let base: Doc;
  let counter = 0;
  const validator = new DetailValidator();

  before(async () => {
    emulators = await startEmulators({ directory: temporaryDirectory('cpsync-orphans-') });
    base = parse(readFileSync(emulators.configPath, 'utf8')) as Doc;
  });
  after(async () => emulators?.stop());

  /** An inventory of its own; `run(change, args)` runs the CLI with the configuration `change` makes. */
  const workspace = () => {
    const directory = join(emulators.directory, `ws-${++counter}`);
    mkdirSync(directory, { recursive: true });
    const run = async (change: (document: Doc) => void, args: string[]): Promise<CliRun> => {
      const document: Doc = structuredClone(base);
      delete document.bus;
      document.hub = { directory: join(directory, 'inventory') };
      document.outbox = { directory: join(directory, 'outbox') };
      // The least forgiving grace: were absence from the configuration taken for absence from the cloud,
      // one run would delete.
      document.inventory = { namespace: 'orphans', deletionGraceListings: 1 };
      change(document);
      const config = join(directory, 'cpsync.yaml');
      writeFileSync(config, stringify(document));
      const result = await runCli([...args, '--config', config], { cwd: directory, env: emulators.env });
      assert.ok(!hasStackTrace(result.stderr), result.stderr);
      return result;
    };
    return { run, inventory: () => readInventory(join(directory, 'inventory')) };
  };
  const events = (run: CliRun, type: string) =>
    jsonLines<DeliveredEvent & { detail: Doc }>(run.stdout).filter((e) => e['detail-type'] === type);
  const names = (inventory: ReturnType<ReturnType<typeof workspace>['inventory']>, provider?: string) =>
    [...inventory.values()]
      .filter((p) => provider === undefined || p.providerId.includes(provider))
      .map((p) => `${p.namespace}/${p.name}`)
      .sort();
  /** Drops eu-west-1 from EKS and AKS altogether. */
  const narrowed = (document: Doc) => {
    document.providers.eks.regions = ['us-east-1'];
    delete document.providers.aks;
  };

  it('reports the profiles of a dropped region and a dropped provider, keeps them run after run, and lists them', async () => {
    const ws = workspace();
    const first = await ws.run(() => {}, ['sync']);
    assert.equal(first.code, 0, first.stderr);
    const all = ws.inventory();
    const orphaned = [...all.values()]
      .filter(
        (p) => p.providerId.includes(':eu-west-1:') || p.providerId.includes('Microsoft.ContainerService'),
      )
      .map((p) => `${p.namespace}/${p.name}`)
      .sort();
    assert.equal(orphaned.length, 3, 'the eu-west-1 payments cluster and the two AKS clusters');

    for (let i = 0; i < 2; i++) {
      const run = await ws.run(narrowed, ['sync']);
      assert.equal(run.code, 0, run.stderr);
      assert.deepEqual(names(ws.inventory()), names(all), 'nothing is deleted for being left out');
      assert.match(run.stderr, /3 profile\(s\) of 2 scope\(s\) the configuration no longer covers, kept/);
      const announced = events(run, 'Inventory Scope Orphaned');
      assert.deepEqual(
        announced
          .map((e) => {
            const s = e.detail.scope as Doc;
            return `${s.provider}/${s.account}/${s.region}`;
          })
          .sort(),
        [`aks/00000000-1111-2222-3333-444444444444/westeurope`, `eks/${EKS_ACCOUNT}/eu-west-1`],
      );
      assert.deepEqual(announced.flatMap((e) => e.detail.names as string[]).sort(), orphaned);
      for (const event of announced)
        assert.deepEqual(validator.errors(event['detail-type'], event.detail), []);
      assert.equal(events(run, 'ClusterProfile Deleted').length, 0);
    }

    const listed = await ws.run(narrowed, ['list', '--orphans', '-o', 'json']);
    assert.equal(listed.code, 0, listed.stderr);
    const rows = JSON.parse(listed.stdout) as Array<{ namespace: string; name: string; scope: string }>;
    assert.deepEqual(rows.map((r) => `${r.namespace}/${r.name}`).sort(), orphaned);
  });

  it('prunes them only when told: a dry run first, then --yes deletes each with a Deleted event and nothing else', async () => {
    const ws = workspace();
    assert.equal((await ws.run(() => {}, ['sync'])).code, 0);
    const before = ws.inventory();

    const dry = await ws.run(narrowed, ['prune', '--orphans']);
    assert.equal(dry.code, 0, dry.stderr);
    assert.match(dry.stderr, /dry run: 3 orphan profile\(s\).*nothing deleted — run again with --yes/);
    assert.equal(dry.stdout.match(/^would delete /gm)?.length, 3);
    assert.deepEqual(names(ws.inventory()), names(before));

    const usage = await ws.run(narrowed, ['prune']);
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /say what to prune: --orphans/);

    const pruned = await ws.run(narrowed, ['prune', '--orphans', '--yes']);
    assert.equal(pruned.code, 0, pruned.stderr);
    const after = ws.inventory();
    const gone = names(before).filter((n) => !after.has(n));
    assert.equal(gone.length, 3);
    const deleted = events(pruned, 'ClusterProfile Deleted');
    assert.deepEqual(deleted.map((e) => `${e.detail.namespace}/${e.detail.name}`).sort(), gone);
    // Every profile of a configured scope is as it was.
    for (const [key, profile] of after) assert.equal(profile.uid, before.get(key)?.uid);

    const again = await ws.run(narrowed, ['prune', '--orphans', '--yes']);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stderr, /no orphans/);
  });

  it('keeps every profile of a mistyped project, and of a provider whose scopes cannot be told', async () => {
    const ws = workspace();
    assert.equal((await ws.run(() => {}, ['sync'])).code, 0);
    const gke = names(ws.inventory(), 'container.googleapis.com');
    assert.equal(gke.length, 2);

    const typo = await ws.run((d) => (d.providers.gke.projects = ['acme-dta']), ['sync']);
    assert.deepEqual(
      names(ws.inventory(), 'container.googleapis.com'),
      gke,
      'a typo does not empty the inventory',
    );
    assert.match(typo.stderr, /2 profile\(s\) of 1 scope\(s\) the configuration no longer covers, kept/);

    // Projects found by search, and the search fails: GKE's scopes cannot be told, so none of its
    // profiles is judged.
    emulators.gke.searchFailures.push(
      ...Array.from({ length: 10 }, () => ({ status: 503, code: 'UNAVAILABLE', message: 'search is down' })),
    );
    try {
      const undetermined = await ws.run(
        (d) => (d.providers.gke.projects = { search: { query: '' } }),
        ['list', '--orphans', '-o', 'json'],
      );
      assert.match(undetermined.stderr, /cannot tell the orphans of gke/);
      assert.deepEqual(JSON.parse(undetermined.stdout), []);
    } finally {
      emulators.gke.searchFailures.splice(0);
    }
    assert.deepEqual(names(ws.inventory(), 'container.googleapis.com'), gke);
  });

  it('prunes no grant: what cpsync granted on a pruned cluster stays granted and recorded, is named, and is taken back once the scope is configured again without the consumer', async () => {
    const entries = serveEksAccessEntries(emulators.proxy);
    try {
      const ws = workspace();
      const granting = (document: Doc) => {
        document.features = { accessGrants: 'on' };
        document.consumers = [
          {
            name: 'deployer',
            namespaces: ['orphans'],
            level: 'view',
            identities: { eks: { roleArn: DEPLOYER } },
          },
        ];
      };
      const first = await ws.run(granting, ['sync']);
      assert.equal(first.code, 0, first.stderr);
      // The oracle is the cloud: the EKS clusters' access entries.
      const eksClusters = [...ws.inventory().values()].filter((p) => p.providerId.startsWith('arn:aws:eks:'));
      const pruned = eksClusters.filter((p) => p.providerId.includes(':eu-west-1:'));
      assert.ok(pruned.length > 0, 'an EKS cluster in eu-west-1');
      const entryOf = (providerId: string) => {
        const match = /^arn:aws:eks:([^:]+):\d+:cluster\/(.+)$/.exec(providerId)!;
        return entries.of(match[1]!, match[2]!).get(DEPLOYER);
      };
      for (const profile of eksClusters)
        assert.ok(entryOf(profile.providerId), `granted on ${profile.providerId}`);

      const prune = await ws.run((d) => (granting(d), narrowed(d)), ['prune', '--orphans', '--yes']);
      assert.equal(prune.code, 0, prune.stderr);
      for (const profile of pruned) {
        assert.ok(!ws.inventory().has(`${profile.namespace}/${profile.name}`), 'the profile pruned');
        assert.ok(entryOf(profile.providerId), 'the grant stays, as nothing asked the cloud');
        assert.match(
          prune.stderr,
          new RegExp(
            `still held, as cpsync's ledger keeps them: what it granted on ${pruned.length} cluster\\(s\\) no configured scope covers — .*${profile.providerId.replace(/[/.]/g, '\\$&')} \\(deployer: ${DEPLOYER.replace(/[/.]/g, '\\$&')}\\)`,
          ),
        );
      }

      // The scope configured again, the consumer gone: the record kept is what cpsync takes back.
      const back = await ws.run((d) => (granting(d), (d.consumers = [])), ['sync']);
      assert.equal(back.code, 0, back.stderr);
      for (const profile of eksClusters)
        assert.equal(entryOf(profile.providerId), undefined, profile.providerId);

      // The other way to prune: EKS set to off, at a full sync. Granted again first; then every EKS profile goes,
      // and every grant stays, named.
      assert.equal((await ws.run(granting, ['sync'])).code, 0);
      for (const profile of eksClusters)
        assert.ok(entryOf(profile.providerId), `granted on ${profile.providerId}`);
      const off = await ws.run((d) => (granting(d), (d.providers.eks = 'off')), ['sync']);
      assert.equal(off.code, 0, off.stderr);
      assert.match(off.stderr, /deleting the profiles of eks \(set to off\)/);
      assert.match(
        off.stderr,
        new RegExp(
          `still held, as cpsync's ledger keeps them: what it granted on ${eksClusters.length} cluster\\(s\\)`,
        ),
      );
      for (const profile of eksClusters) {
        assert.ok(!ws.inventory().has(`${profile.namespace}/${profile.name}`), 'the profile pruned');
        assert.ok(entryOf(profile.providerId), `still granted on ${profile.providerId}`);
      }
    } finally {
      entries.stop();
    }
  });

  it('deletes the profiles of a provider set to off, each announced, at the next full sync', async () => {
    const ws = workspace();
    assert.equal((await ws.run(() => {}, ['sync'])).code, 0);
    const before = ws.inventory();
    const azure = names(before, 'Microsoft.ContainerService');
    assert.equal(azure.length, 2);
    const off = await ws.run((d) => (d.providers.aks = 'off'), ['sync']);
    assert.equal(off.code, 0, off.stderr);
    assert.match(off.stderr, /deleting the profiles of aks \(set to off\)/);
    const after = ws.inventory();
    assert.deepEqual(
      azure.filter((n) => after.has(n)),
      [],
    );
    assert.deepEqual(
      events(off, 'ClusterProfile Deleted')
        .map((e) => `${e.detail.namespace}/${e.detail.name}`)
        .sort(),
      azure,
    );
    assert.equal(after.size, before.size - 2);
  });
});
