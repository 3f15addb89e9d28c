/**
 * A queue message (or bus event) a function refuses or cannot read leaves a log line at INFO with its reason,
 * and never its text: the scope worker, the follow-up function and the EKS event handler, each with a
 * configuration of its own (a file hub, EKS in one account; nothing is reached over the network).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { compose } from '../../../adapters/compose/compose.ts';
import { parseConfig } from '../../../adapters/compose/config.ts';
import { eksProvider } from '../../../adapters/compose/providers/eks.ts';
import type { Chases } from '../../../functions/chases.ts';
import type { FunctionDeps } from '../../../functions/runtime.ts';
import { cloudTrailEvent, lambdaContext, sqsRecord } from '../../support/lambda.ts';
import { temporaryDirectory } from '../../support/tmp.ts';

/** What must never reach a log line: it stands for a secret someone put in a message. */
const SECRET = 'hunter2-not-for-logs';
const ACCOUNT = '111122223333';

interface Line {
  level: string;
  message: string;
  messageId?: string;
  eventId?: string;
  reason?: string;
}

/** Chases whose every look is current and comes again; an ended one's id is put in `ended`. */
function chasesEndingInto(ended: string[]): Chases {
  return {
    start: () => Promise.resolve('started'),
    isCurrent: () => Promise.resolve(true),
    next: () => Promise.resolve('again'),
    complete: () => Promise.resolve(false),
    end: (message) => {
      ended.push(message.chaseId);
      return Promise.resolve();
    },
  };
}

describe('refused and malformed messages are logged at INFO with their reason, never their text', () => {
  const lines: string[] = [];
  const restore: Array<() => void> = [];
  let deps: FunctionDeps;
  const ended: string[] = [];
  /** The log lines written while `work` ran, parsed. */
  const logged = async (work: () => Promise<unknown>): Promise<Line[]> => {
    const from = lines.length;
    await work();
    return lines.slice(from).map((line) => JSON.parse(line) as Line);
  };

  before(async () => {
    // After the environment is set: Powertools reads the level when the functions' modules load.
    Object.assign(process.env, {
      POWERTOOLS_LOG_LEVEL: 'INFO',
      POWERTOOLS_METRICS_DISABLED: 'true',
      POWERTOOLS_TRACE_ENABLED: 'false',
    });
    for (const stream of [process.stdout, process.stderr]) {
      const write = stream.write.bind(stream);
      restore.push(() => (stream.write = write));
      stream.write = ((chunk: string | Uint8Array, ...rest: never[]) => {
        if (typeof chunk === 'string' && chunk.startsWith('{"level"')) {
          lines.push(chunk);
          return true;
        }
        return write(chunk, ...rest);
      }) as typeof stream.write;
    }
    const directory = temporaryDirectory('cpsync-refused-');
    const config = parseConfig({
      providers: { eks: { accounts: [ACCOUNT], regions: ['us-east-1'] } },
      hub: { directory: `${directory}/hub` },
      bus: { stdout: true },
      outbox: { directory: `${directory}/outbox` },
    });
    deps = await compose(config, [eksProvider], { onDemand: true });
  });

  after(async () => {
    for (const undo of restore) undo();
    await deps?.close();
  });

  it('the scope worker: a body that is not JSON, a message of the wrong shape, a scope the configuration does not cover', async () => {
    const { makeScopeWorker } = await import('../../../functions/scopeWorker.ts');
    const worker = makeScopeWorker(async () => deps);
    let failure: unknown;
    // Every message of the batch fails: the invocation fails (as a batch of one does, deployed), each logged.
    const logs = await logged(async () => {
      failure = await worker(
        {
          Records: [
            sqsRecord('not-json', `token=${SECRET}`),
            sqsRecord('shape', JSON.stringify({ syncId: 's1', scope: { provider: 'oci', account: SECRET } })),
            sqsRecord(
              'foreign',
              JSON.stringify({
                syncId: 's1',
                scope: { provider: 'eks', account: '999988887777', region: 'us-east-1' },
              }),
            ),
          ],
        },
        lambdaContext('worker'),
      ).catch((error: unknown) => error);
    });
    assert.equal((failure as Error).name, 'FullBatchFailureError');
    const byId = new Map(logs.filter((l) => l.messageId).map((l) => [l.messageId, l]));
    assert.deepEqual(
      [...byId.values()].map((l) => [l.messageId, l.level, l.message]),
      [
        ['not-json', 'INFO', 'message refused: malformed'],
        ['shape', 'INFO', 'message refused: malformed'],
        ['foreign', 'INFO', 'message refused'],
      ],
    );
    assert.equal(byId.get('not-json')!.reason, 'body: not JSON');
    assert.match(byId.get('shape')!.reason!, /body\.scope\.provider: Invalid option/);
    assert.match(byId.get('foreign')!.reason!, /eks\/999988887777\/us-east-1.*refused: /);
    assert.ok(!JSON.stringify(logs).includes(SECRET), 'no message text logged');
  });

  it('the follow-up function: a look that is not JSON, one of the wrong shape, one at a cluster the configuration does not cover (its chase ended)', async () => {
    const { makeFollowUp } = await import('../../../functions/followUp.ts');
    const followUp = makeFollowUp(
      async () => deps,
      () => chasesEndingInto(ended),
    );
    const look = {
      chaseId: '6f1c7c2a-0d7e-4a4f-8a55-2a0d7a1f3b10',
      attempt: 1,
      ref: { scope: { provider: 'eks', account: '999988887777', region: 'us-east-1' }, name: 'far' },
      state: 'EKS CREATING',
      startedAt: 0,
      delaySeconds: 10,
    };
    let answer: unknown;
    const logs = await logged(async () => {
      answer = await followUp(
        {
          Records: [
            sqsRecord('not-json', `{"chaseId": "${SECRET}`),
            sqsRecord('shape', JSON.stringify({ ...look, attempt: 0, state: SECRET.repeat(20) })),
            // A name no EKS cluster can have: a look at it would be answered not found.
            sqsRecord('name', JSON.stringify({ ...look, ref: { ...look.ref, name: 'far/../orders' } })),
            sqsRecord('foreign', JSON.stringify(look)),
          ],
        },
        lambdaContext('follow-up'),
      );
    });
    assert.deepEqual(answer, {
      batchItemFailures: [
        { itemIdentifier: 'not-json' },
        { itemIdentifier: 'shape' },
        { itemIdentifier: 'name' },
      ],
    });
    const byId = new Map(logs.filter((l) => l.messageId).map((l) => [l.messageId, l]));
    assert.deepEqual([...byId.values()].map((l) => [l.messageId, l.level]).sort(), [
      ['foreign', 'INFO'],
      ['name', 'INFO'],
      ['not-json', 'INFO'],
      ['shape', 'INFO'],
    ]);
    assert.match(byId.get('name')!.reason!, /body\.ref\.name: not a eks cluster name/);
    assert.equal(byId.get('not-json')!.reason, 'body: not JSON');
    assert.match(byId.get('shape')!.reason!, /body\.attempt: .*; body\.state: /);
    assert.match(
      byId.get('foreign')!.message,
      /^message refused: the configuration does not cover its cluster/,
    );
    assert.ok(byId.get('foreign')!.reason, 'with its reason');
    assert.deepEqual(ended, [look.chaseId], 'the chase of the uncovered cluster ended');
    assert.ok(!JSON.stringify(logs).includes(SECRET), 'no message text logged');
  });

  it('a message with keys it should not have, anywhere in it: counted in the reason, never named (property over the keys)', async () => {
    const { makeScopeWorker } = await import('../../../functions/scopeWorker.ts');
    const { makeFollowUp } = await import('../../../functions/followUp.ts');
    const worker = makeScopeWorker(async () => deps);
    const followUp = makeFollowUp(
      async () => deps,
      () => chasesEndingInto([]),
    );
    const scope = { provider: 'eks', account: ACCOUNT, region: 'us-east-1' };
    const look = {
      chaseId: '6f1c7c2a-0d7e-4a4f-8a55-2a0d7a1f3b10',
      attempt: 1,
      ref: { scope, name: 'near' },
      state: 'EKS CREATING',
      startedAt: 0,
      delaySeconds: 10,
    };
    // Keys that carry the secret, with whatever around it: quotes, separators, newlines, any text.
    const key = fc
      .tuple(
        fc.string({ maxLength: 6 }),
        fc.constantFrom('', '"', '"; ', '\n', ': ', ', "'),
        fc.string({ maxLength: 6 }),
      )
      .map(([before, mark, after]) => `${before}${mark}${SECRET}${after}`);
    const withKeys = (at: Record<string, unknown>, keys: string[]) =>
      Object.assign({ ...at }, Object.fromEntries(keys.map((k) => [k, 1])));
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(key, { minLength: 1, maxLength: 3 }),
        fc.constantFrom('message', 'scope', 'ref'),
        async (keys, where) => {
          const scopeMessage =
            where === 'message'
              ? withKeys({ syncId: 's1', scope }, keys)
              : { syncId: 's1', scope: withKeys(scope, keys) };
          const lookMessage =
            where === 'message'
              ? withKeys(look, keys)
              : where === 'scope'
                ? { ...look, ref: { ...look.ref, scope: withKeys(scope, keys) } }
                : { ...look, ref: withKeys(look.ref, keys) };
          const logs = await logged(async () => {
            await worker(
              { Records: [sqsRecord('keys', JSON.stringify(scopeMessage))] },
              lambdaContext('worker'),
            ).catch(() => {});
            // A batch whose every message fails fails the invocation (as deployed): each still logged.
            await followUp(
              { Records: [sqsRecord('keys', JSON.stringify(lookMessage))] },
              lambdaContext('follow-up'),
            ).catch(() => {});
          });
          const refused = logs.filter((l) => l.messageId === 'keys');
          assert.equal(refused.length, 2, JSON.stringify(logs));
          for (const line of refused) {
            assert.equal(line.message, 'message refused: malformed');
            assert.match(line.reason!, new RegExp(`${keys.length} key\\(s\\) it does not have`));
          }
          assert.ok(!JSON.stringify(logs).includes(SECRET), JSON.stringify(logs));
        },
      ),
      { numRuns: 40, seed: 20261202 },
    );
  });

  it('the EKS event handler: an event that is not a CloudTrail call of EKS, an account the configuration does not cover', async () => {
    const { makeEksEventHandler } = await import('../../../functions/eksEvents.ts');
    const handler = makeEksEventHandler(async () => deps);
    const malformed = {
      ...cloudTrailEvent('CreateCluster', ACCOUNT, 'us-east-1', { name: 'x' }, 'ct-malformed'),
      detail: { eventSource: 'eks.amazonaws.com', eventName: SECRET, recipientAccountId: SECRET },
    };
    const refused = await logged(() =>
      assert.rejects(handler(malformed as never, lambdaContext('eks')), { name: 'ParseError' }),
    );
    const line = refused.find((l) => l.eventId === 'ct-malformed')!;
    assert.equal(line.level, 'INFO');
    assert.equal(line.message, 'event refused: malformed');
    assert.match(line.reason!, /detail\.awsRegion: .*; detail\.recipientAccountId: /);
    assert.ok(!JSON.stringify(refused).includes(SECRET), 'no event text logged');

    const foreign = await logged(() =>
      handler(
        cloudTrailEvent('CreateCluster', '999988887777', 'us-east-1', { name: 'far' }, 'ct-foreign') as never,
        lambdaContext('eks'),
      ),
    );
    const outside = foreign.find((l) => l.eventId === 'ct-foreign')!;
    assert.equal(outside.level, 'INFO');
    assert.equal(outside.message, 'event refused: account or region outside the configuration');
    assert.ok(outside.reason, 'with its reason');
  });
});
