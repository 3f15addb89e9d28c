/** What the queue messages' schemas share. */
import type { z } from 'zod';

/**
 * For the strict schemas of queue messages: keys a message should not have are counted, never named. A message is
 * input, its keys as much its text as its values, and the reason it failed is logged (zod's own words quote each key).
 */
export const UNRECOGNIZED_KEYS_COUNTED = {
  error: (issue: z.core.$ZodRawIssue) =>
    issue.code === 'unrecognized_keys' ? `${issue.keys.length} key(s) it does not have` : undefined,
};
