import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { makePoster } from '../../../../../functions/subscribers/chat/delivery.ts';
import type { ChatNotifierSettings } from '../../../../../functions/subscribers/chat/settings.ts';

/** A webhook on loopback that answers each post with the next status it is given (then 200). */
class Webhook {
  readonly posts: Array<{ at: number; ended: number; body: unknown }> = [];
  answers: Array<{ status: number; headers?: Record<string, string> }> = [];
  #server: Server | undefined;
  url = '';

  async start(): Promise<void> {
    this.#server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const at = Date.now();
        const answer = this.answers.shift() ?? { status: 200 };
        response.writeHead(answer.status, answer.headers).end(answer.status === 200 ? 'ok' : 'no');
        this.posts.push({ at, ended: Date.now(), body: JSON.parse(Buffer.concat(chunks).toString('utf8')) });
      });
    });
    await new Promise<void>((resolve) => this.#server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.#server!.address() as { port: number }).port}/hooks/secret-token`;
  }

  async stop(): Promise<void> {
    this.#server?.closeAllConnections();
    await new Promise((resolve) => this.#server?.close(resolve));
  }
}

const settings: ChatNotifierSettings = {
  format: 'slack',
  webhookSecret: 'unused',
  table: 'unused',
  minIntervalMs: 150,
  rememberSeconds: 60,
  maxLines: 20,
  maxAttempts: 3,
  retryBaseMs: 10,
  requestTimeoutMs: 5000,
  safetyMarginMs: 0,
  quietSeconds: 0,
};
const later = () => Date.now() + 60_000;

describe('chat delivery (posting to the webhook)', () => {
  const webhook = new Webhook();
  before(() => webhook.start());
  after(() => webhook.stop());

  it('posts one at a time, each at least minIntervalMs after the previous one ended', async () => {
    const post = makePoster();
    const from = webhook.posts.length;
    for (const n of [1, 2, 3])
      assert.deepEqual(await post(webhook.url, { n }, settings, later()), { posted: true, attempts: 1 });
    const posts = webhook.posts.slice(from);
    assert.deepEqual(
      posts.map((p) => p.body),
      [{ n: 1 }, { n: 2 }, { n: 3 }],
    );
    for (let i = 1; i < posts.length; i++)
      assert.ok(posts[i]!.at - posts[i - 1]!.ended >= settings.minIntervalMs - 5, `post ${i}`);
  });

  it('waits out a 429 as its Retry-After says, and retries a 5xx', async () => {
    webhook.answers = [{ status: 429, headers: { 'retry-after': '1' } }, { status: 503 }];
    const from = webhook.posts.length;
    const outcome = await makePoster()(webhook.url, { n: 4 }, settings, later());
    assert.deepEqual(outcome, { posted: true, attempts: 3 });
    const posts = webhook.posts.slice(from);
    assert.equal(posts.length, 3);
    assert.ok(posts[1]!.at - posts[0]!.ended >= 1000 - 5, 'Retry-After: 1 waited');
  });

  it('gives up after maxAttempts, telling the batch to stop; a 4xx is not retried and does not stop it', async () => {
    webhook.answers = [{ status: 500 }, { status: 500 }, { status: 500 }];
    const down = await makePoster()(webhook.url, {}, settings, later());
    assert.equal(down.posted, false);
    assert.deepEqual(
      down.posted
        ? undefined
        : [down.attempts, down.stop, down.reason.startsWith('the webhook answered 500')],
      [3, true, true],
    );
    webhook.answers = [{ status: 400 }];
    const refused = await makePoster()(webhook.url, {}, settings, later());
    assert.deepEqual(refused.posted ? undefined : [refused.attempts, refused.stop], [1, false]);
  });

  it('never says the webhook URL or its path in a reason, whatever the request failed with', async () => {
    // Node's fetch refuses a URL with a user and password, and quotes the whole URL in its error.
    // A token in the query too, as Teams' workflows put it.
    const url = `${webhook.url.replace('://', '://someone:pass@')}?sig=query-token`;
    const outcome = await makePoster()(url, {}, { ...settings, maxAttempts: 1 }, later());
    assert.equal(outcome.posted, false);
    const reason = outcome.posted ? '' : outcome.reason;
    assert.match(reason, /<of the webhook URL>/);
    assert.ok(!/secret-token|query-token|pass@/.test(reason), reason);
  });

  it('never starts a post past the deadline', async () => {
    const from = webhook.posts.length;
    const outcome = await makePoster()(webhook.url, {}, settings, Date.now() + 500);
    assert.deepEqual(outcome, {
      posted: false,
      attempts: 0,
      reason: 'no time left in this invocation',
      stop: true,
    });
    assert.equal(webhook.posts.length, from);
  });
});
