import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { chatSettings } from '../../../../../functions/subscribers/chat/settings.ts';

const REQUIRED = { CHAT_WEBHOOK_SECRET: 'cpsync/chat', CHAT_IDEMPOTENCY_TABLE: 'delivered' };

describe('chat notifier settings (from the environment)', () => {
  it('takes the defaults for what is not set', () => {
    const settings = chatSettings(REQUIRED);
    assert.deepEqual(
      {
        format: settings.format,
        minIntervalMs: settings.minIntervalMs,
        rememberSeconds: settings.rememberSeconds,
        maxLines: settings.maxLines,
        quietSeconds: settings.quietSeconds,
        flushQueueUrl: settings.flushQueueUrl,
      },
      {
        format: 'slack',
        minIntervalMs: 1000,
        rememberSeconds: 86_400,
        maxLines: 20,
        quietSeconds: 0,
        flushQueueUrl: undefined,
      },
    );
    assert.equal(settings.webhookSecret, 'cpsync/chat');
    assert.equal(settings.table, 'delivered');
  });

  it('reads the format in any case, and every bounded number', () => {
    const settings = chatSettings({
      ...REQUIRED,
      CHAT_FORMAT: ' Teams ',
      CHAT_MIN_INTERVAL_MS: '250',
      CHAT_IDEMPOTENCY_TTL_SECONDS: '3600',
      CHAT_MAX_LINES: '50',
      CHAT_QUIET_SECONDS: '900',
      CHAT_FLUSH_QUEUE_URL: 'https://sqs.us-east-1.amazonaws.com/123456789012/flush',
    });
    assert.equal(settings.format, 'teams');
    assert.equal(settings.minIntervalMs, 250);
    assert.equal(settings.rememberSeconds, 3600);
    assert.equal(settings.maxLines, 50);
    assert.equal(settings.quietSeconds, 900);
    assert.equal(settings.flushQueueUrl, 'https://sqs.us-east-1.amazonaws.com/123456789012/flush');
  });

  it('names every variable that is wrong, and why, in one error', () => {
    assert.throws(
      () =>
        chatSettings({
          CHAT_FORMAT: 'discord',
          CHAT_MAX_LINES: '51',
          CHAT_MIN_INTERVAL_MS: '1.5',
          CHAT_QUIET_SECONDS: '901',
        }),
      (error: Error) => {
        for (const expected of [
          /CHAT_WEBHOOK_SECRET.*is not set/,
          /CHAT_IDEMPOTENCY_TABLE.*is not set/,
          /CHAT_FORMAT.*"discord", not slack or teams/,
          /CHAT_MAX_LINES.*"51", not a whole number from 1 to 50/,
          /CHAT_MIN_INTERVAL_MS.*"1\.5", not a whole number from 0 to 60000/,
          /CHAT_QUIET_SECONDS.*"901", not a whole number from 0 to 900/,
        ])
          assert.match(error.message, expected);
        return true;
      },
    );
  });

  it('refuses a quiet time without the queue its flushes go through', () => {
    assert.throws(
      () => chatSettings({ ...REQUIRED, CHAT_QUIET_SECONDS: '60' }),
      /CHAT_FLUSH_QUEUE_URL.*is not set \(CHAT_QUIET_SECONDS gathers each sync in a digest/,
    );
  });
});
