/**
 * SQS: syncs one scope per message; reports partial batch failures so only failed messages come back.
 * Each message is parsed by the Powertools batch parser (a malformed one is a failed item, named).
 */
import { BatchProcessor, EventType, type ParsedRecord } from '@aws-lambda-powertools/batch';
import { parser } from '@aws-lambda-powertools/batch/parser';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import type { Context, SQSEvent, SQSRecord } from 'aws-lambda';
import type { PartialItemFailureResponse } from '@aws-lambda-powertools/batch/types';
import type { DoctorReport } from '../adapters/compose/doctor.ts';
import { z } from 'zod';
import { runSync } from '../core/sync/engine.ts';
import { scopeKey, type Scope } from '../core/domain/model/scope.ts';
import pLimit from 'p-limit';
import {
  lazyDeps,
  logger,
  metrics,
  once,
  parsedOrRefused,
  withPowertools,
  type FunctionDeps,
} from './runtime.ts';
import { follower } from './chases.ts';
import { processQueueBatch } from './queueBatch.ts';
import { UNRECOGNIZED_KEYS_COUNTED } from './strictMessages.ts';
import { ALL_PROVIDERS } from '../adapters/compose/providers/index.ts';
import { isDns1123Label } from '../core/domain/naming.ts';
import { ONCE_WORK } from './onceWork.ts';

/**
 * The time a scope's sync keeps, of what is left of the function's, to finish after its deadline: its outcome
 * (failed, `Timeout`) recorded and published, the account's lease given back, its clusters in change followed.
 */
const FINISHING_MILLIS = 30_000;

/**
 * A scope's deadline: the configuration's (`sync.scopeTimeoutSeconds`), or earlier when the function would end
 * first. Cut off by the function's own timeout, a scope would say nothing of why (no `Inventory Scope Synced`), and
 * SQS would deliver it again to meet the same end.
 */
function scopeDeadlineMillis(configured: number, functionLeftMillis: number): number {
  return Math.max(1_000, Math.min(configured, functionLeftMillis - FINISHING_MILLIS));
}

/** The message the scope enumerator sends. */
export const ScopeMessage = z.strictObject(
  {
    syncId: z.string().min(1).max(256),
    scope: z.strictObject(
      {
        provider: z.enum(['eks', 'gke', 'aks']),
        account: z.string().min(1),
        region: z.string().min(1),
      },
      UNRECOGNIZED_KEYS_COUNTED,
    ),
  },
  UNRECOGNIZED_KEYS_COUNTED,
);

/** A scope message the configuration does not cover (or cannot be checked now): the item fails, nothing is synced. */
export class ScopeRefusedError extends Error {
  override readonly name = 'ScopeRefusedError';
}

/** A scope message whose scope's sync could not finish (hub unreachable, …): SQS delivers it again. */
export class ScopeRetryError extends Error {
  override readonly name = 'ScopeRetryError';
}

/**
 * `{ "doctor": true }`: what `cpsync doctor --function` sends, with Argo CD's namespace on the hub when its
 * configuration has the Argo CD subscriber write there (this function is not told of the subscribers).
 */
const DoctorRequest = z.strictObject({
  doctor: z.literal(true),
  argocdNamespace: z
    .string()
    .refine(isDns1123Label, {
      message: 'must be a DNS-1123 label (lower-case letters, digits and -, at most 63 characters)',
    })
    .optional(),
});
const isDoctorRequest = (event: unknown): event is { doctor: true } =>
  typeof event === 'object' && event !== null && (event as { doctor?: unknown }).doctor === true;

/** The worker as its callers see it: an SQS batch gets its failed items, a doctor request the report. */
interface ScopeWorker {
  (event: SQSEvent, context: Context): Promise<PartialItemFailureResponse>;
  (event: z.input<typeof DoctorRequest>, context: Context): Promise<DoctorReport>;
}

export function makeScopeWorker(getDeps: () => Promise<FunctionDeps> = lazyDeps(ALL_PROVIDERS)): ScopeWorker {
  // Keyed by the run and the scope: a message delivered twice (SQS is at-least-once) or sent twice for
  // the same run syncs its scope once. A scope whose hub writes failed is not remembered, so it runs again.
  const syncScope = once(
    ONCE_WORK.scopeWorker,
    async ({ key, runId, scope, endsAt }: { key: string; runId: string; scope: Scope; endsAt: number }) => {
      const deps = await getDeps();
      // The scope's own sync id, and the run it is part of: every scope of one enumerator invocation shares it.
      const report = await runSync(deps.ports, {
        syncId: key,
        runId,
        scopes: [scope],
        ...deps.settings,
        scopeTimeoutMillis: scopeDeadlineMillis(deps.settings.scopeTimeoutMillis, endsAt - Date.now()),
      });
      // What needs a look (a name collision, copies that could not be removed): in the log, every delivery.
      for (const problem of report.problems) logger.warn(problem, { scope: scopeKey(scope) });
      const result = report.scopes[0]!;
      if (result.summary.error?.reason === 'HubError')
        throw new ScopeRetryError(`${scopeKey(scope)}: ${result.summary.error.message}`);
      return {
        outcome: result.outcome.kind,
        counts: result.summary.counts,
        error: result.summary.error,
        settling: report.settling,
      };
    },
  );
  const follow = follower();
  return withPowertools(async (event: SQSEvent | z.input<typeof DoctorRequest>, context: Context) => {
    const deps = await getDeps();
    // Invoked directly by `cpsync doctor --function` (SQS never sends this): the checks, with this role.
    if (isDoctorRequest(event)) {
      const { argocdNamespace } = parsedOrRefused(DoctorRequest, 'not a doctor request', event);
      const { doctor } = await import('../adapters/compose/doctor.ts');
      const report = await doctor(deps, argocdNamespace ? { argocdNamespace } : {});
      logger.info('doctor', { ok: report.ok, failed: report.checks.filter((c) => !c.ok) });
      return report;
    }
    const processor = new BatchProcessor(EventType.SQS, {
      parser,
      innerSchema: ScopeMessage,
      transformer: 'json',
      logger,
    });
    const record = async (item: ParsedRecord<SQSRecord, z.infer<typeof ScopeMessage>>) => {
      const { syncId, scope: asked } = item.body;
      // Only what the configuration covers, in its canonical spelling: a message is input like any other.
      const resolved = await deps.resolveScopes({ scopes: [asked] });
      const refusal = resolved.refused[0];
      if (refusal || resolved.scopes.length !== 1)
        throw new ScopeRefusedError(
          `scope message ${item.messageId} (${refusal?.requested ?? scopeKey(asked)}) refused: ${refusal?.reason ?? 'it stands for more than one configured scope'}`,
        );
      const scope = resolved.scopes[0]!;
      // A redelivered message keeps its sync id: its events keep their ids, and the sync itself is idempotent.
      const key = `${syncId}/${scopeKey(scope)}`;
      const endsAt = Date.now() + context.getRemainingTimeInMillis();
      const { value: result, replayed } = await syncScope(
        deps,
        { key, runId: syncId, scope, endsAt },
        context,
      );
      // Clusters the listing found in change are followed until they settle — on a redelivery too, so
      // a chase that could not be started the first time is started now (a running one is joined).
      const limit = pLimit(4);
      await Promise.all(
        (result.settling ?? []).map(({ ref, state, since }) =>
          limit(() => follow(deps.config, ref, state, since)),
        ),
      );
      if (replayed) return;
      metrics.addMetric('ScopesSynced', MetricUnit.Count, 1);
      if (result.outcome === 'failed') metrics.addMetric('FailedScopes', MetricUnit.Count, 1);
      if (result.outcome === 'partial') metrics.addMetric('PartialScopes', MetricUnit.Count, 1);
      const { created, updated, deleted } = result.counts;
      metrics.addMetric('ProfilesChanged', MetricUnit.Count, created + updated + deleted);
      logger.info('scope synced', {
        scope: scopeKey(scope),
        outcome: result.outcome,
        counts: result.counts,
        error: result.error,
        inChange: result.settling?.length ?? 0,
      });
    };
    return processQueueBatch(
      event,
      record,
      processor,
      context,
      (error) => error instanceof ScopeRefusedError,
    );
  }) as unknown as ScopeWorker;
}

export const handler = makeScopeWorker();
