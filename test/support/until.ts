import assert from 'node:assert/strict';

/**
 * Resolves once `condition` holds, asking again as soon as each answer is in (a 5 ms pause between asks, no
 * fixed wait); fails naming `what` if it never does.
 */
export async function until(condition: () => Promise<boolean>, what: string): Promise<void> {
  for (let attempt = 0; attempt < 10_000; attempt++) {
    if (await condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  assert.fail(`never saw: ${what}`);
}
