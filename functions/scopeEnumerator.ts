/** Scheduled: lists the scopes the configuration covers and sends one SQS message per scope. */
import type { SQSClient } from '@aws-sdk/client-sqs';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import type { Context } from 'aws-lambda';
import { scopeKey } from '../core/domain/model/scope.ts';
import { PROVIDERS } from '../core/domain/model/observedCluster.ts';
import { runSync } from '../core/sync/engine.ts';
import { memoizeUntilFailure } from '../adapters/shared/memo.ts';
import { lazyDeps, logger, metrics, withPowertools, type FunctionDeps } from './runtime.ts';
import { ALL_PROVIDERS } from '../adapters/compose/providers/index.ts';

/** What EventBridge Scheduler passes (the stack sets it from the schedule's context attributes). */
export interface ScheduleInput {
  executionId?: string;
  scheduledTime?: string;
}

export interface EnumeratorOptions {
  queueUrl?: string;
  sqs?: SQSClient;
}

/** The enumerator could not do all its work: the queue is not named, SQS refused messages, or a cloud could not be enumerated. */
export class EnumerationError extends Error {
  override readonly name = 'EnumerationError';
}

/** Bounded re-sends of messages SQS did not take. */
const MAX_SEND_ATTEMPTS = 3;

export function makeScopeEnumerator(
  getDeps: () => Promise<FunctionDeps> = lazyDeps(ALL_PROVIDERS),
  options: EnumeratorOptions = {},
) {
  // The SQS client is made with the first run, not at module initialisation.
  const sqsClient = memoizeUntilFailure(async () => {
    const { SQSClient, SendMessageBatchCommand } = await import('./sqsApi.ts');
    return { sqs: options.sqs ?? new SQSClient({}), SendMessageBatchCommand };
  });
  return withPowertools(async (event: ScheduleInput, context: Context) => {
    const queueUrl = options.queueUrl ?? process.env.CPSYNC_SCOPE_QUEUE_URL;
    if (!queueUrl) throw new EnumerationError('CPSYNC_SCOPE_QUEUE_URL is not set');
    const deps = await getDeps();
    const syncId = event?.executionId ?? context.awsRequestId;
    const { scopes, failures } = await deps.resolveScopes();
    let pending = scopes.map((scope, index) => ({
      Id: String(index),
      MessageBody: JSON.stringify({ syncId, scope }),
    }));
    for (let attempt = 1; pending.length > 0; attempt++) {
      const failed: typeof pending = [];
      for (let i = 0; i < pending.length; i += 10) {
        const batch = pending.slice(i, i + 10);
        const { sqs, SendMessageBatchCommand } = await sqsClient();
        const answer = await sqs.send(new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: batch }));
        for (const failure of answer.Failed ?? []) failed.push(batch.find((m) => m.Id === failure.Id)!);
      }
      if (failed.length > 0 && attempt >= MAX_SEND_ATTEMPTS)
        throw new EnumerationError(`SQS refused ${failed.length} scope message(s) after ${attempt} attempts`);
      pending = failed;
    }
    metrics.addMetric('ScopesEnqueued', MetricUnit.Count, scopes.length);
    logger.info('scopes enqueued', { syncId, scopes: scopes.map(scopeKey) });
    // Profiles of scopes the configuration no longer covers: reported and announced, never deleted here.
    const determined = PROVIDERS.filter((p) => !failures.some((f) => f.provider === p));
    const report = await runSync(deps.ports, {
      syncId,
      scopes: [],
      ...deps.settings,
      orphans: { configured: scopes, determined },
    });
    const orphans = (report.orphans ?? []).reduce((n, o) => n + o.names.length, 0);
    metrics.addMetric('OrphanProfiles', MetricUnit.Count, orphans);
    if (orphans > 0)
      logger.warn('profiles of scopes the configuration no longer covers (kept)', {
        syncId,
        orphans: report.orphans!.map((o) => ({ scope: scopeKey(o.scope), profiles: o.names.length })),
      });
    for (const problem of report.problems) logger.error(problem, { syncId });
    if (failures.length > 0) {
      // What could be enumerated is enqueued; the run still fails, so its error alarm names the rest.
      metrics.addMetric('FailedEnumerations', MetricUnit.Count, failures.length);
      throw new EnumerationError(
        `cannot enumerate the scopes of ${failures.map((f) => `${f.provider} (${f.message})`).join('; ')}`,
      );
    }
    return { syncId, scopes: scopes.length, orphans };
  });
}

export const handler = makeScopeEnumerator();
