/**
 * A test reporter that writes one JSON line per failed test (not per suite that failed because a test in it
 * did), so that the test command can name every failure again at the very end of a long run, where it is read.
 */
import type { TestEvent } from 'node:test/reporters';

export default async function* failures(source: AsyncIterable<TestEvent>): AsyncGenerator<string> {
  for await (const event of source) {
    if (event.type !== 'test:fail') continue;
    const { name, file, line, details } = event.data;
    if (details.type === 'suite') continue;
    const error = details.error as Error & { cause?: unknown };
    const cause = error.cause instanceof Error ? error.cause.message : String(error.cause ?? error.message);
    yield `${JSON.stringify({ name, file, line, message: cause.split('\n').slice(0, 6).join('\n') })}\n`;
  }
}
