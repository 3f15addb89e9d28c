/**
 * The once-only work of each function (Powertools idempotency, `once` in runtime.ts): every record of a work's
 * key begins `cpsync.<work>#`, and IAM holds each function to its own work's records (the stack, `Cpsync`).
 */
export const ONCE_WORK = {
  scopeWorker: 'scope',
  followUp: 'follow',
  eksEventHandler: 'eks-event',
  webhook: 'webhook',
} as const;

export type OnceWork = (typeof ONCE_WORK)[keyof typeof ONCE_WORK];

/** What the key of every idempotency record of `work` begins with (then `#` and the payload's hash). */
export const onceKeyPrefix = (work: OnceWork): string => `cpsync.${work}`;
