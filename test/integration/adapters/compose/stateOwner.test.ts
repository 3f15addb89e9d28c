/**
 * A state directory (the outbox, its intents, the grants ledger) holds one configuration's state: composed for
 * another manager or another hub, cpsync refuses it, naming both, before anything there is read or written.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { compose } from '../../../../adapters/compose/compose.ts';
import { parseConfig } from '../../../../adapters/compose/config.ts';
import { OWNER_FILE, StateDirectoryTakenError } from '../../../../adapters/outbox/stateOwner.ts';
import { temporaryDirectory } from '../../../support/tmp.ts';

describe('a state directory holds one configuration’s state', () => {
  const root = () => temporaryDirectory('cpsync-state-owner-');
  const configOf = (base: string, state: string, manager = 'cpsync', hub = 'hub') =>
    parseConfig({ manager, hub: { directory: join(base, hub) }, outbox: { directory: state } });
  const composed = async (config: ReturnType<typeof parseConfig>) => (await compose(config, [])).close();

  it('is claimed by the first configuration, and composed again for it', async () => {
    const base = root();
    const state = join(base, 'state');
    await composed(configOf(base, state));
    const owner = JSON.parse(readFileSync(join(state, OWNER_FILE), 'utf8')) as Record<string, string>;
    assert.deepEqual(owner, { manager: 'cpsync', hub: `the directory ${join(base, 'hub')}` });
    await composed(configOf(base, state));
  });

  it('is refused to another manager, and to another hub, naming both, with nothing there touched', async () => {
    const base = root();
    const state = join(base, 'state');
    await composed(configOf(base, state));
    // What the first configuration left: an event waiting to be published.
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

  it('claims a directory an earlier version made (no owner file) as it is, and refuses one whose owner file is unreadable', async () => {
    const base = root();
    const state = join(base, 'state');
    mkdirSync(join(state, 'intents'), { recursive: true });
    writeFileSync(join(state, 'intents', 'kept.json'), '{}\n');
    await composed(configOf(base, state, 'earlier'));
    assert.ok(existsSync(join(state, 'intents', 'kept.json')));
    assert.match(readFileSync(join(state, OWNER_FILE), 'utf8'), /"manager": "earlier"/);
    writeFileSync(join(state, OWNER_FILE), '{"manag');
    await assert.rejects(composed(configOf(base, state, 'earlier')), /owner\.json does not say whose state/);
  });
});
