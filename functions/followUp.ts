/**
 * SQS (the follow-up queue, messages delayed): one look at a cluster in change per message — the ordinary
 * single-cluster sync, which never deletes on a reading in change and deletes a cluster the cloud no longer
 * has at once — then the next look, or the end of the chase (see chases.ts).
 *
 * A redelivered message does its look once (Powertools idempotency, keyed by the chase and the look's
 * number); a look the cloud refuses or throttles is tried again on the chase's own schedule, nothing deleted.
 */
import { BatchProcessor, EventType, type ParsedRecord } from '@aws-lambda-powertools/batch';
import { parser } from '@aws-lambda-powertools/batch/parser';
import type { PartialItemFailureResponse } from '@aws-lambda-powertools/batch/types';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import type { Context, SQSEvent, SQSRecord } from 'aws-lambda';
import type { z } from 'zod';
import { ALL_PROVIDERS } from '../adapters/compose/providers/index.ts';
import { messageOf } from '../core/domain/errors.ts';
import { syncCluster } from '../core/sync/engine.ts';
import { clusterKey } from '../core/sync/clusterKeys.ts';
import type { ClusterRef } from '../core/sync/ports.ts';
import { chasesFromEnvironment, LookMessage, type Chases } from './chases.ts';
import { processQueueBatch } from './queueBatch.ts';
import { lazyDeps, logger, metrics, once, withPowertools, type FunctionDeps } from './runtime.ts';
import { ONCE_WORK } from './onceWork.ts';

/** What one look did. */
export interface LookOutcome {
  result?: 'created' | 'updated' | 'deleted' | 'unchanged' | 'absent';
  /** The state in change the look found; absent once the cluster settled or is gone. */
  state?: string;
  /** The look failed (the cloud refused or throttled, the hub was unreachable): tried again later. */
  error?: string;
  /** What became of the chase. */
  chase: 'settled' | 'again' | 'bounded' | 'superseded' | 'unconfigured';
  published?: number;
}

export function makeFollowUp(
  getDeps: () => Promise<FunctionDeps> = lazyDeps(ALL_PROVIDERS),
  getChases?: (deps: FunctionDeps) => Chases,
) {
  let chases: Chases | undefined;
  const chasesOf = (deps: FunctionDeps) =>
    (chases ??= getChases?.(deps) ?? chasesFromEnvironment(deps.config.follow));

  // Keyed by the chase and the look's number: a redelivered look (SQS is at-least-once) is done once, and
  // does not send its next look twice.
  const look = once(
    ONCE_WORK.followUp,
    async ({
      message,
      ref,
    }: {
      key: string;
      message: LookMessage;
      ref: ClusterRef;
    }): Promise<LookOutcome> => {
      const deps = await getDeps();
      const chase = chasesOf(deps);
      let outcome: Omit<LookOutcome, 'chase'> & { since?: string };
      try {
        const report = await syncCluster(deps.ports, {
          syncId: `follow-${message.chaseId}-${message.attempt}`,
          ref,
          ...deps.settings,
        });
        for (const problem of report.problems ?? []) logger.warn(problem);
        outcome = {
          result: report.result,
          published: report.published,
          ...(report.settling ? { state: report.settling } : {}),
          ...(report.since ? { since: report.since } : {}),
        };
      } catch (error) {
        // Like a reading in change (its state as the chase has it): looked at again on the chase's schedule; nothing
        // is deleted.
        outcome = { error: messageOf(error) };
        metrics.addMetric('FailedLooks', MetricUnit.Count, 1);
      }
      if (outcome.state === undefined && outcome.error === undefined) {
        await chase.end(message);
        metrics.addMetric('ChasesSettled', MetricUnit.Count, 1);
        return { ...outcome, chase: 'settled' };
      }
      const { since, ...look } = outcome;
      return { ...look, chase: await chase.next(message, outcome.state, since) };
    },
  );

  return withPowertools(async (event: SQSEvent, context: Context): Promise<PartialItemFailureResponse> => {
    const deps = await getDeps();
    const processor = new BatchProcessor(EventType.SQS, {
      parser,
      innerSchema: LookMessage,
      transformer: 'json',
      logger,
    });
    const record = async (item: ParsedRecord<SQSRecord, z.infer<typeof LookMessage>>) => {
      const message = item.body;
      const cluster = clusterKey(message.ref);
      const chase = chasesOf(deps);
      // Only what the configuration covers, in its canonical spelling: a message is input like any other.
      const resolved = await deps.resolveScopes({ scopes: [message.ref.scope] });
      const scope = resolved.scopes[0];
      if (resolved.refused.some((r) => r.undetermined))
        throw new Error(`${cluster}: coverage undetermined: ${resolved.refused[0]!.reason}`);
      if (!scope || resolved.refused.length > 0) {
        await chase.end(message);
        logger.info('message refused: the configuration does not cover its cluster (its chase ended)', {
          messageId: item.messageId,
          cluster,
          reason: resolved.refused[0]?.reason ?? 'it stands for more than one configured scope',
        });
        return { chase: 'unconfigured' } satisfies LookOutcome;
      }
      if (!(await chase.isCurrent(message))) {
        logger.info('follow-up of an ended or replaced chase: nothing to do', {
          cluster,
          chaseId: message.chaseId,
        });
        return { chase: 'superseded' } satisfies LookOutcome;
      }
      metrics.addMetric('FollowLooks', MetricUnit.Count, 1);
      const { value, replayed } = await look(
        deps,
        { key: `${message.chaseId}#${message.attempt}`, message, ref: { ...message.ref, scope } },
        context,
      );
      logger.info('follow-up look', {
        cluster,
        attempt: message.attempt,
        replayed,
        ...value,
      });
      return value;
    };
    // A look at a cluster the configuration no longer covers ends its chase (above): nothing is refused here.
    return processQueueBatch(event, record, processor, context, () => false);
  });
}

export const handler = makeFollowUp();
