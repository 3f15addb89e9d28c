/**
 * Processes that claim one state directory at once (two `cpsync` commands started together, of one configuration
 * or of two): whatever the order the file system serves them in, the directory is one configuration's. Every
 * contender of that configuration gets it, every other is refused it, naming the one it holds, and the owner file
 * names that one, whole. Each contender is a process of its own, held at a start line until all are ready, so
 * their claims meet; what is asserted is the outcome, never an order.
 *
 * The same where the file system has no hard links (FAT, some network and FUSE mounts): the contenders' `link`
 * fails as it fails there, and the owner file is created exclusively in place.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { OWNER_FILE, EARLIER_DEFAULT, type StateOwner } from '../../../../adapters/outbox/stateDirectory.ts';
import { temporaryDirectory } from '../../../support/tmp.ts';

const MODULE = new URL('../../../../adapters/outbox/stateDirectory.ts', import.meta.url).href;

/** What one contender's claim came to: the directory it was given, or the refusal's message. */
type Outcome = { given: string } | { refused: string };

/**
 * One contender: a process that, once told to go, claims `directory` (named, as by `outbox.directory`) or the
 * default directory where cpsync is run (`cwd`) for `owner`. `noLinks`: its file system has no hard links.
 */
function contender(
  owner: StateOwner,
  target: { directory: string } | { cwd: string },
  noLinks: boolean,
): { process: ChildProcess; ready: Promise<void>; outcome: Promise<Outcome> } {
  const code = `
    import fs from 'node:fs';
    import { syncBuiltinESMExports } from 'node:module';
    if (${noLinks}) {
      fs.linkSync = () => { throw Object.assign(new Error('EPERM: operation not permitted, link'), { code: 'EPERM' }); };
      syncBuiltinESMExports();
    }
    const { claimedDirectory, defaultDirectory } = await import(${JSON.stringify(MODULE)});
    const target = ${JSON.stringify(target)};
    const owner = ${JSON.stringify(owner)};
    process.stdout.write('ready\\n');
    process.stdin.once('data', () => {
      let outcome;
      try {
        outcome = { given: 'directory' in target ? claimedDirectory(target.directory, owner) : defaultDirectory(owner, target.cwd) };
      } catch (error) {
        if (error.name !== 'StateDirectoryTakenError') throw error;
        outcome = { refused: error.message };
      }
      process.stdout.write(JSON.stringify(outcome) + '\\n');
      process.stdin.destroy();
    });`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', code], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  let out = '';
  let readyNow: () => void;
  const ready = new Promise<void>((resolve) => (readyNow = resolve));
  child.stdout!.on('data', (chunk: Buffer) => {
    out += chunk.toString();
    if (out.startsWith('ready\n')) readyNow();
  });
  const outcome = new Promise<Outcome>((resolve, reject) =>
    child.on('close', (status) =>
      status === 0 && out.startsWith('ready\n')
        ? resolve(JSON.parse(out.slice('ready\n'.length)) as Outcome)
        : reject(new Error(`a contender exited with ${status}: ${out}`)),
    ),
  );
  return { process: child, ready, outcome };
}

/** Starts the contenders, lets them all go at once once every one is ready, and gives their outcomes. */
async function race(
  entrants: ReadonlyArray<{ owner: StateOwner; target: { directory: string } | { cwd: string } }>,
  noLinks: boolean,
): Promise<Outcome[]> {
  const started = entrants.map(({ owner, target }) => contender(owner, target, noLinks));
  try {
    await Promise.all(started.map((c) => c.ready));
    for (const c of started) c.process.stdin!.write('go\n');
    return await Promise.all(started.map((c) => c.outcome));
  } finally {
    for (const c of started) if (c.process.exitCode === null) c.process.kill();
  }
}

const owners: readonly StateOwner[] = [
  { manager: 'cpsync', hub: 'the directory /srv/hub-a' },
  { manager: 'cpsync', hub: 'the directory /srv/hub-b' },
  { manager: 'platform', hub: 'the directory /srv/hub-a' },
];

const ownerFileOf = (directory: string) =>
  JSON.parse(readFileSync(join(directory, OWNER_FILE), 'utf8')) as StateOwner;

describe('processes that claim one state directory at once', () => {
  for (const noLinks of [false, true])
    it(`named by outbox.directory${noLinks ? ', on a file system without hard links' : ''}: one configuration holds it, its every contender is given it, every other refused naming it (property)`, async () => {
      await fc.assert(
        fc.asyncProperty(
          // Which configuration each of four to six contenders is.
          fc.array(fc.integer({ min: 0, max: owners.length - 1 }), { minLength: 4, maxLength: 6 }),
          async (picks) => {
            const base = temporaryDirectory('cpsync-claim-race-');
            const directory = join(base, 'state');
            const outcomes = await race(
              picks.map((i) => ({ owner: owners[i]!, target: { directory } })),
              noLinks,
            );
            const holder = ownerFileOf(directory);
            const held = picks
              .map((i) => owners[i]!)
              .findIndex((o) => o.hub === holder.hub && o.manager === holder.manager);
            assert.ok(held >= 0, `the owner file names one of the contenders: ${JSON.stringify(holder)}`);
            picks.forEach((i, n) => {
              const owner = owners[i]!;
              const outcome = outcomes[n]!;
              if (owner === owners[picks[held]!])
                assert.deepEqual(
                  outcome,
                  { given: directory },
                  `contender ${n} (the holder's configuration)`,
                );
              else {
                assert.ok('refused' in outcome, `contender ${n} is refused: ${JSON.stringify(outcome)}`);
                assert.ok(
                  outcome.refused.includes(`manager "${holder.manager}" writing hub ${holder.hub};`),
                  `contender ${n} is told whose it is: ${outcome.refused}`,
                );
              }
            });
            assert.deepEqual(
              readdirSync(directory),
              [OWNER_FILE],
              'the owner file alone, nothing half-made left',
            );
          },
        ),
        { numRuns: 6 },
      );
    });

  for (const noLinks of [false, true])
    it(`unset, the earlier default unowned${noLinks ? ', on a file system without hard links' : ''}: one configuration keeps it, each other gets a directory of its own`, async () => {
      const cwd = temporaryDirectory('cpsync-default-race-');
      mkdirSync(join(cwd, EARLIER_DEFAULT), { recursive: true });
      // Each configuration twice: two commands of one configuration started together.
      const entrants = [...owners, ...owners].map((owner) => ({ owner, target: { cwd } }));
      const outcomes = await race(entrants, noLinks);
      const given = outcomes.map((outcome, n) => {
        assert.ok('given' in outcome, `contender ${n} is given a directory: ${JSON.stringify(outcome)}`);
        return outcome.given;
      });
      const earlier = join(cwd, EARLIER_DEFAULT);
      const holder = ownerFileOf(earlier);
      entrants.forEach(({ owner }, n) => {
        const same = entrants.findIndex((e) => e.owner === owner);
        assert.equal(given[n], given[same], `contender ${n} is given what its configuration's other is`);
        const theHolder = owner.manager === holder.manager && owner.hub === holder.hub;
        assert.equal(
          given[n] === earlier,
          theHolder,
          `contender ${n}: the earlier default is the holder's alone`,
        );
        assert.deepEqual(ownerFileOf(given[n]!), owner, `contender ${n}'s directory names it`);
      });
      assert.equal(new Set(given).size, owners.length, 'one directory per configuration');
      for (const directory of new Set(given))
        assert.deepEqual(readdirSync(directory), [OWNER_FILE], `${directory}: the owner file alone`);
      assert.ok(!existsSync(join(cwd, '.cpsync', 'owner')));
    });
});
