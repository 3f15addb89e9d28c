import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { addToTally, composeMessage } from '../../../../../functions/subscribers/chat/message.ts';
import type { Notice } from '../../../../../functions/subscribers/chat/notices.ts';

const about = { syncId: 'run-1', account: '123456789012', region: 'eu-west-1' };
const cluster = (name: string, kind: Notice['kind'] = 'created'): Notice => ({
  kind,
  subject: name,
  text: `${kind} (eks 111122223333 us-east-1)`,
  key: `cluster:${name}`,
});

describe('the message of a sync (tally and composition)', () => {
  it('counts each cluster once per kind, whatever its copies, across tallies carried from batch to batch', () => {
    const first = addToTally([cluster('a'), cluster('a'), cluster('b')], 20);
    const carried = JSON.parse(JSON.stringify(first)) as typeof first;
    const tally = addToTally([cluster('b'), cluster('c'), cluster('a', 'deleted')], 20, carried);
    assert.deepEqual(tally.counts, { created: 3, deleted: 1 });
    assert.deepEqual(
      tally.lines.created?.map((l) => l.subject),
      ['a', 'b', 'c'],
    );
  });

  it('titles the counts, lists the most pressing first, and says how many more', () => {
    const notices = [
      ...Array.from({ length: 5 }, (_, i) => cluster(`new-${i}`)),
      cluster('old', 'deleted'),
      {
        kind: 'scopeFailed',
        subject: 'eks/1/us-east-1',
        text: 'could not be synced',
        key: 'scope:x',
      } as Notice,
    ];
    const message = composeMessage(addToTally(notices, 3), about, 3);
    assert.equal(message.title, 'cpsync: 5 clusters created, 1 deleted, 1 scope failed');
    assert.deepEqual(
      message.lines.map((l) => l.subject),
      ['eks/1/us-east-1', 'old', 'new-0'],
    );
    assert.equal(message.more, 4);
    assert.equal(message.footer, 'sync run-1 · hub account 123456789012 eu-west-1');
  });

  it('shows cloud strings as text: controls and bidi overrides escaped, lines bounded', () => {
    const hostile = { ...cluster('evil\u202Ename\n<!channel>'), text: `created ${'x'.repeat(1000)}` };
    const [line] = composeMessage(addToTally([hostile], 20), about, 20).lines;
    assert.doesNotMatch(line!.subject, /[\u202E\n]/);
    assert.match(line!.subject, /\\u/);
    assert.ok(Array.from(line!.subject).length + Array.from(line!.text).length <= 300);
  });
});
