/** DynamoDB's batch calls, which may leave part of a request unprocessed (throttled). */
import { setTimeout as sleep } from 'node:timers/promises';

/** Runs a DynamoDB batch call until nothing is left unprocessed (a few rounds, with backoff). */
export async function untilProcessed<T>(
  what: string,
  first: T,
  call: (request: T) => Promise<T | undefined>,
): Promise<void> {
  let request: T | undefined = first;
  for (let round = 0; request; round++) {
    if (round > 0) await sleep(50 * 2 ** round);
    if (round === 6) throw new Error(`${what}: DynamoDB left items unprocessed after ${round} rounds`);
    request = await call(request);
  }
}
