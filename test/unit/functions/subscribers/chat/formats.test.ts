import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { chatPayload } from '../../../../../functions/subscribers/chat/formats.ts';
import type { ChatMessage } from '../../../../../functions/subscribers/chat/message.ts';

const message = (lines: number, subject = 'cluster'): ChatMessage => ({
  title: `cpsync: ${lines} clusters created`,
  lines: Array.from({ length: lines }, (_, i) => ({
    subject: `${subject}-${i}`,
    text: 'created (aks sub westeurope)',
  })),
  more: 0,
  footer: 'sync run-1 · hub account 123456789012 eu-west-1',
});
const bytes = (payload: object) => Buffer.byteLength(JSON.stringify(payload), 'utf8');

describe('chat formats', () => {
  it('Slack: the title as plain text, cloud strings only in rich-text text elements', () => {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the payload taken apart as JSON
    const payload = chatPayload(message(2, '<!channel>*bold*'), 'slack') as any;
    assert.equal(payload.text, 'cpsync: 2 clusters created');
    assert.equal(payload.blocks[0].text.type, 'plain_text');
    const items = payload.blocks[1].elements[0].elements;
    assert.deepEqual(
      items.map((i: { elements: Array<{ type: string; text: string }> }) => i.elements.map((e) => e.type)),
      [
        ['text', 'text'],
        ['text', 'text'],
      ],
    );
    assert.equal(items[0].elements[0].text, '<!channel>*bold*-0');
  });

  it('Teams: one Adaptive Card, cloud strings only in TextRuns', () => {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the payload taken apart as JSON
    const payload = chatPayload(message(2, '[link](https://x)'), 'teams') as any;
    const card = payload.attachments[0].content;
    assert.equal(card.type, 'AdaptiveCard');
    const runs = card.body.filter((b: { type: string }) => b.type === 'RichTextBlock');
    assert.equal(runs[0].inlines[0].type, 'TextRun');
    assert.equal(runs[0].inlines[0].text, '[link](https://x)-0');
  });

  it('moves lines into "and N more" until the payload fits the chat, in UTF-8 bytes', () => {
    const wide = message(50, '集群'.repeat(90));
    const teams = chatPayload(wide, 'teams');
    const slack = chatPayload(wide, 'slack');
    assert.ok(bytes(teams) <= 27 * 1024, `teams ${bytes(teams)}`);
    assert.ok(bytes(slack) <= 36 * 1024, `slack ${bytes(slack)}`);
    assert.match(JSON.stringify(teams), /…and \d+ more/);
    // What fits is kept: a small message is posted whole.
    assert.doesNotMatch(JSON.stringify(chatPayload(message(3), 'teams')), /more/);
  });
});
