/**
 * A state directory (the outbox, its intents, the grants ledger, the remembered answers) holds one configuration's
 * state. Named by `outbox.directory`, it is claimed for the first configuration and refused to one of another
 * manager or hub, naming both, before anything there is read or written. Unset, each configuration run from one
 * directory gets its own; the default of earlier versions (`.cpsync/outbox`) stays with the first configuration
 * composed after the upgrade.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { compose } from '../../../../adapters/compose/compose.ts';
import { parseConfig, type CpsyncConfig } from '../../../../adapters/compose/config.ts';
import { stateDirectoryOf } from '../../../../adapters/compose/hub.ts';
import {
  defaultDirectory,
  EARLIER_DEFAULT,
  OWNER_FILE,
  StateDirectoryTakenError,
} from '../../../../adapters/outbox/stateDirectory.ts';
import { FileOutbox } from '../../../../adapters/outbox/FileOutbox.ts';
import type { GrantRecord } from '../../../../core/domain/grants.ts';
import { buildChangeEvent } from '../../../../core/sync/events.ts';
import { eksCluster } from '../../../support/fixtures.ts';
import { temporaryDirectory } from '../../../support/tmp.ts';
import { normalize } from '../../../../core/domain/normalize.ts';
import { inventoryOptions } from '../../../support/settings.ts';

const root = () => temporaryDirectory('cpsync-state-');
const configOf = (base: string, state: string | undefined, manager = 'cpsync', hub = 'hub') =>
  parseConfig({
    manager,
    hub: { directory: join(base, hub) },
    bus: { jsonl: join(base, `${manager}-${hub}.jsonl`) },
    ...(state ? { outbox: { directory: state } } : {}),
  });

/** Composes `config` with `cwd` as the directory cpsync is run in, and gives its ports to `use`. */
async function composed<T>(
  config: CpsyncConfig,
  cwd?: string,
  use?: (ports: Awaited<ReturnType<typeof compose>>['ports']) => Promise<T>,
): Promise<T | undefined> {
  const before = process.cwd();
  if (cwd) process.chdir(cwd);
  try {
    const composition = await compose(config, []);
    try {
      return await use?.(composition.ports);
    } finally {
      await composition.close();
    }
  } finally {
    process.chdir(before);
  }
}

const record: GrantRecord = {
  provider: 'eks',
  providerId: 'arn:aws:eks:us-east-1:111122223333:cluster/granted',
  account: '111122223333',
  region: 'us-east-1',
  grants: [],
};

function anEvent() {
  const profile = normalize(eksCluster({ name: 'waiting' }), inventoryOptions(), '2026-05-01T00:00:00Z');
  return buildChangeEvent(
    {
      kind: 'created',
      profile,
      changes: [{ field: 'metadata.name', after: profile.metadata.name }],
    },
    {
      syncId: 'earlier-run',
      occurredAt: '2026-05-01T00:00:00Z',
      scope: { provider: 'eks', account: '111122223333', region: 'us-east-1' },
    },
  );
}

describe("a state directory holds one configuration's state", () => {
  it('named by outbox.directory: claimed by the first configuration, and composed again for it', async () => {
    const base = root();
    const state = join(base, 'state');
    await composed(configOf(base, state));
    const owner = JSON.parse(readFileSync(join(state, OWNER_FILE), 'utf8')) as Record<string, string>;
    assert.deepEqual(owner, { manager: 'cpsync', hub: `the directory ${join(base, 'hub')}` });
    assert.deepEqual(readdirSync(state), [OWNER_FILE], 'written whole, nothing else left');
    await composed(configOf(base, state));
  });

  it('named by outbox.directory: refused to another manager, and to another hub, naming both, with nothing there touched', async () => {
    const base = root();
    const state = join(base, 'state');
    await composed(configOf(base, state));
    writeFileSync(join(state, 'pending.json'), '{"waiting": true}\n');
    const before = readdirSync(state).sort();
    for (const [other, names] of [
      [
        configOf(base, state, 'platform'),
        /manager "cpsync" writing hub the directory .*\/hub; this configuration is manager "platform"/,
      ],
      [
        configOf(base, state, 'cpsync', 'other-hub'),
        /this configuration is manager "cpsync" writing hub the directory .*\/other-hub\./,
      ],
    ] as const) {
      await assert.rejects(composed(other), (error: unknown) => {
        assert.ok(error instanceof StateDirectoryTakenError);
        assert.match(error.message, names);
        assert.match(error.message, /give this configuration a directory of its own \(outbox\.directory\)/);
        return true;
      });
    }
    assert.deepEqual(readdirSync(state).sort(), before, 'nothing written or removed');
    assert.equal(readFileSync(join(state, 'pending.json'), 'utf8'), '{"waiting": true}\n');
  });

  it('named by outbox.directory: one an earlier version made (no owner file) is claimed as it is; one whose owner file is unreadable is refused', async () => {
    const base = root();
    const state = join(base, 'state');
    mkdirSync(join(state, 'intents'), { recursive: true });
    writeFileSync(join(state, 'intents', 'kept.json'), '{}\n');
    await composed(configOf(base, state, 'earlier'));
    assert.ok(existsSync(join(state, 'intents', 'kept.json')));
    assert.match(readFileSync(join(state, OWNER_FILE), 'utf8'), /"manager": "earlier"/);
    writeFileSync(join(state, OWNER_FILE), '{"manag');
    await assert.rejects(composed(configOf(base, state, 'earlier')), /owner does not say whose state/);
  });

  it('unset: two configurations run from one directory keep their events, intents, ledger and answers apart', async () => {
    const cwd = root();
    const base = root();
    const a = configOf(base, undefined, 'cpsync', 'hub-a');
    const b = configOf(base, undefined, 'cpsync', 'hub-b');
    // A leaves an event unpublished and a grant recorded.
    await composed(a, cwd, async (ports) => {
      await ports.outbox.add([anEvent()]);
      await ports.ledger!.write([record]);
    });
    // B, from the same directory: neither is its to publish or to take back.
    await composed(b, cwd, async (ports) => {
      assert.deepEqual(await ports.outbox.pending(), []);
      assert.deepEqual(await ports.ledger!.read(record), []);
      assert.deepEqual(await ports.intents.list(), []);
    });
    // A, composed again, finds both where it left them, and the owner file is no record of theirs.
    await composed(a, cwd, async (ports) => {
      assert.deepEqual(
        (await ports.outbox.pending()).map((e) => e.detail.syncId),
        ['earlier-run'],
      );
      assert.deepEqual(await ports.intents.list(), []);
      assert.equal((await ports.ledger!.read(record)).length, 1);
      assert.deepEqual(
        [ports.outbox, ports.intents, ports.ledger!].flatMap((store) => store.quarantined?.() ?? []),
        [],
        'nothing taken for an unreadable record',
      );
    });
    const made = readdirSync(join(cwd, '.cpsync')).sort();
    assert.equal(made.length, 2, made.join());
    assert.ok(made.every((name) => /^state-[0-9a-f]{16}$/.test(name)));
    assert.equal(await stateDirectoryOf(a, cwd), await stateDirectoryOf(a, cwd));
    assert.notEqual(await stateDirectoryOf(a, cwd), await stateDirectoryOf(b, cwd));
  });

  it("unset: the earlier versions' default (.cpsync/outbox) stays with the first configuration composed, with what it holds", async () => {
    const cwd = root();
    const base = root();
    const earlier = join(cwd, EARLIER_DEFAULT);
    mkdirSync(earlier, { recursive: true });
    // What an earlier version left there: an event waiting (and no owner file).
    await new FileOutbox(earlier).add([anEvent()]);
    const first = configOf(base, undefined, 'cpsync', 'hub-a');
    const other = configOf(base, undefined, 'platform', 'hub-a');
    await composed(first, cwd, async (ports) =>
      assert.deepEqual(
        (await ports.outbox.pending()).map((e) => e.detail.syncId),
        ['earlier-run'],
      ),
    );
    assert.equal(await stateDirectoryOf(first, cwd), earlier);
    await composed(other, cwd, async (ports) => assert.deepEqual(await ports.outbox.pending(), []));
    assert.notEqual(await stateDirectoryOf(other, cwd), earlier);

    // An owner file there that cannot be read: whose it is cannot be told, and nothing is taken silently.
    writeFileSync(join(earlier, OWNER_FILE), '{"manag');
    await assert.rejects(composed(first, cwd), StateDirectoryTakenError);
    await assert.rejects(composed(other, cwd), /owner does not say whose state/);
  });

  it('unset: a project moved with its file hub keeps its state, and a directory of its own stays its own', async () => {
    const parent = root();
    const project = join(parent, 'project');
    mkdirSync(project);
    const inProject = (at: string) =>
      parseConfig({ hub: { directory: join(at, 'inventory') }, bus: { jsonl: join(at, 'events.jsonl') } });
    await composed(inProject(project), project, async (ports) => ports.outbox.add([anEvent()]));
    const { renameSync } = await import('node:fs');
    const moved = join(parent, 'moved');
    renameSync(project, moved);
    const pending = async () =>
      composed(inProject(moved), moved, async (ports) =>
        (await ports.outbox.pending()).map((e) => e.detail.syncId),
      );
    assert.deepEqual(await pending(), ['earlier-run'], 'found where the project went');
    // The earlier versions' default appearing beside it later (an earlier version run here) does not take it over.
    mkdirSync(join(moved, EARLIER_DEFAULT), { recursive: true });
    assert.deepEqual(await pending(), ['earlier-run']);
    assert.match((await stateDirectoryOf(inProject(moved), moved))!, /\/\.cpsync\/state-[0-9a-f]{16}$/);
  });

  it('unset, any configurations in any order, the earlier default there or not: each hub and manager keeps one directory of its own (property)', async () => {
    // Three kubeconfig files: two of one server (another user's, a file moved), one of another.
    const files = root();
    const kubeconfig = (file: string, server: string) => {
      const path = join(files, file);
      writeFileSync(
        path,
        `apiVersion: v1\nkind: Config\nclusters:\n- name: hub\n  cluster:\n    server: ${server}\nusers:\n- name: u\n  user:\n    token: t\ncontexts:\n- name: hub\n  context:\n    cluster: hub\n    user: u\ncurrent-context: hub\n`,
      );
      return path;
    };
    // Each hub as a configuration names it, and the hub it is.
    const hubs: Array<[Record<string, unknown>, string]> = [
      [{ directory: '/srv/hub-a' }, 'files a'],
      [{ directory: '/srv/hub-b' }, 'files b'],
      [{ kubeconfig: kubeconfig('admin.kubeconfig', 'https://hub.example:6443') }, 'hub.example'],
      [{ kubeconfig: kubeconfig('moved.kubeconfig', 'https://hub.example:6443') }, 'hub.example'],
      [{ kubeconfig: kubeconfig('other.kubeconfig', 'https://other.example:6443') }, 'other.example'],
      [{ eks: { clusterName: 'hub', region: 'eu-west-1' } }, 'eks'],
      [{ kubeconfigSecretArn: 'arn:aws:secretsmanager:eu-west-1:111122223333:secret:hub' }, 'secret'],
    ];
    const owners = fc.record({
      manager: fc.constantFrom('cpsync', 'platform'),
      hub: fc.nat(hubs.length - 1),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.boolean(),
        fc.array(owners, { minLength: 1, maxLength: 12 }),
        async (earlierThere, order) => {
          const cwd = root();
          if (earlierThere) mkdirSync(join(cwd, EARLIER_DEFAULT), { recursive: true });
          const seen = new Map<string, string>();
          const whose = ({ manager, hub }: (typeof order)[number]) => `${manager} ${hubs[hub]![1]}`;
          for (const owner of order) {
            const config = parseConfig({ manager: owner.manager, hub: hubs[owner.hub]![0] });
            const directory = (await stateDirectoryOf(config, cwd))!;
            assert.equal(
              directory,
              seen.get(whose(owner)) ?? directory,
              'always the same for one hub and manager',
            );
            seen.set(whose(owner), directory);
          }
          const directories = [...seen.values()];
          assert.equal(new Set(directories).size, directories.length, 'never one for two hubs or managers');
          assert.equal(
            seen.get(whose(order[0]!)) === join(cwd, EARLIER_DEFAULT),
            earlierThere,
            "the earlier default, when there, is the first configuration's",
          );
        },
      ),
      { numRuns: 60 },
    );
  });

  it('unset: two owners that differ in any character, a newline included, never share a directory (property)', () => {
    const text = fc.string({ unit: fc.constantFrom('c', 'h', '\n', ' ', 'C', '"', '\\'), maxLength: 4 });
    fc.assert(
      fc.property(fc.tuple(text, text), fc.tuple(text, text), ([m1, h1], [m2, h2]) => {
        fc.pre(m1 !== m2 || h1 !== h2);
        const cwd = root();
        const first = defaultDirectory({ manager: m1, hub: h1 }, cwd);
        // The other's is a directory of its own, never the first's (nor a refusal of it).
        assert.notEqual(defaultDirectory({ manager: m2, hub: h2 }, cwd), first);
      }),
      {
        numRuns: 100,
        examples: [
          [
            ['cpsync', 'h\n'],
            ['cpsync\nh', ''],
          ],
        ],
      },
    );
  });
});
