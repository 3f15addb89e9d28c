/**
 * What every cpsync function shares: Powertools logger, metrics and tracer; the configuration (the
 * CPSYNC_CONFIG document the stack sets); and the adapters built from it once per container.
 */
import type { IdempotencyConfig } from '@aws-lambda-powertools/idempotency';
import { Logger } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import middy, { type MiddlewareObj } from '@middy/core';
import { randomUUID } from 'node:crypto';
import type { Context } from 'aws-lambda';
import type { z } from 'zod';
import type { Composition, ProviderModule } from '../adapters/compose/compose.ts';
import { ConfigError, parseConfig, type CpsyncConfig } from '../adapters/compose/config.ts';
import { memoizeUntilFailure } from '../adapters/shared/memo.ts';
import { onceKeyPrefix, type OnceWork } from './onceWork.ts';

export const logger = new Logger({ serviceName: 'cpsync' });
export const metrics = new Metrics({ namespace: 'cpsync', serviceName: 'cpsync' });

/**
 * The X-Ray middleware, loaded only when tracing is on (`POWERTOOLS_TRACE_ENABLED=true`, which the stack sets
 * with active tracing): the X-Ray SDK is not part of a cold start that does not use it.
 */
const tracing: MiddlewareObj | undefined =
  process.env.POWERTOOLS_TRACE_ENABLED === 'true'
    ? await (async () => {
        const [{ Tracer }, { captureLambdaHandler }] = await Promise.all([
          import('@aws-lambda-powertools/tracer'),
          import('@aws-lambda-powertools/tracer/middleware'),
        ]);
        return captureLambdaHandler(new Tracer({ serviceName: 'cpsync' }));
      })()
    : undefined;

/** What a function runs with: the composition of its configuration, built once per container. */
export type FunctionDeps = Composition;

/** The configuration document from `CPSYNC_CONFIG` (JSON); refused with every bad field named. */
export function configFromEnvironment(env: NodeJS.ProcessEnv = process.env): CpsyncConfig {
  const text = env.CPSYNC_CONFIG;
  if (!text) throw new ConfigError(['CPSYNC_CONFIG: is not set'], 'the environment');
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch (error) {
    throw new ConfigError([`CPSYNC_CONFIG: not valid JSON (${(error as Error).message})`], 'the environment');
  }
  return parseConfig(document, 'CPSYNC_CONFIG');
}

/**
 * A function's own settings from its environment variables, read with `schema` (zod): refused with every
 * variable that is wrong named, as `<label>: NAME: what is wrong; …`.
 */
export function settingsFromEnvironment<T>(
  schema: z.ZodType<T>,
  label: string,
  env: NodeJS.ProcessEnv = process.env,
): T {
  return parsedOrRefused(schema, label, env);
}

/** `value` read with `schema` (zod), or refused with every part that is wrong named, as `<label>: path: what is wrong; …`. */
export function parsedOrRefused<T>(schema: z.ZodType<T>, label: string, value: unknown): T {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  throw new Error(
    `${label}: ${parsed.error.issues.map((issue) => `${issue.path.join('.') || '(the whole)'}: ${issue.message}`).join('; ')}`,
  );
}

/**
 * The adapters of this container, built on first use from the environment's configuration, with the
 * sources of `providers` only (so each function bundles only the cloud SDKs it uses).
 */
export function lazyDeps(providers: readonly ProviderModule[]): () => Promise<FunctionDeps> {
  return memoizeUntilFailure(async () => {
    const config = configFromEnvironment();
    // Loaded on first use, not at module initialisation: the hub client, the bus and the outbox.
    const { compose } = await import('../adapters/compose/compose.ts');
    return compose(config, providers, { onDemand: true });
  });
}

/** A payload of once-only work: `key` names the delivery (event id, message id, …). */
export interface Keyed {
  key: string;
}

/** Whether `error` is Powertools' "this key's first delivery is still running". */
export function isIdempotencyInProgress(error: unknown): boolean {
  return error instanceof Error && error.name === 'IdempotencyAlreadyInProgressError';
}

/**
 * `work` done at most once per payload key while the key is remembered (Powertools idempotency with
 * records in the configured DynamoDB table): a duplicate delivery gets the first delivery's result back
 * and touches neither the clouds, the hub nor the bus. A delivery whose work failed is not remembered, so
 * its retry runs again; a duplicate arriving while the first is still running gets
 * `IdempotencyAlreadyInProgressError` (the caller answers "retry later"). Without `idempotency` in the
 * configuration the work runs every time.
 */
export function once<P extends Keyed, R>(
  name: OnceWork,
  work: (payload: P) => Promise<R>,
): (deps: FunctionDeps, payload: P, context: Context) => Promise<{ value: R; replayed: boolean }> {
  // The stored result carries the id of the call that did the work, so a replayed result is recognisable.
  // Stored as JSON: fields left undefined are dropped, as DynamoDB cannot hold them.
  const recorded = async (payload: P & { call: string }) => ({
    value: JSON.parse(JSON.stringify((await work(payload)) ?? null)) as R,
    call: payload.call,
  });
  const wrapped = new WeakMap<FunctionDeps, { run: typeof recorded; config: IdempotencyConfig }>();
  return async (deps, payload, context) => {
    const call = randomUUID();
    const settings = deps.config.idempotency;
    if (!settings) return { value: await work(payload), replayed: false };
    let entry = wrapped.get(deps);
    if (!entry) {
      // Loaded with the first delivery that needs it (with the DynamoDB client), not at module initialisation.
      const [{ IdempotencyConfig, makeIdempotent }, { DynamoDBPersistenceLayer }] = await Promise.all([
        import('@aws-lambda-powertools/idempotency'),
        import('@aws-lambda-powertools/idempotency/dynamodb'),
      ]);
      const config = new IdempotencyConfig({
        eventKeyJmesPath: 'key',
        throwOnNoIdempotencyKey: true,
        expiresAfterSeconds: settings.expiresAfterSeconds,
      });
      const persistenceStore = new DynamoDBPersistenceLayer({
        tableName: settings.table,
        ...(settings.endpoint ? { clientConfig: { endpoint: settings.endpoint } } : {}),
      });
      entry = {
        run: makeIdempotent(recorded, { persistenceStore, config, keyPrefix: onceKeyPrefix(name) }),
        config,
      };
      wrapped.set(deps, entry);
    }
    entry.config.registerLambdaContext(context);
    const result = await entry.run({ ...payload, call });
    const replayed = result.call !== call;
    if (replayed) {
      logger.info('duplicate delivery: answered from the idempotency record', {
        work: name,
        key: payload.key,
      });
      metrics.addMetric('DuplicateDeliveries', MetricUnit.Count, 1);
    }
    return { value: result.value, replayed };
  };
}

/** Wraps a handler with the Powertools middlewares every function uses. */
export function withPowertools<E, R>(handler: (event: E, context: Context) => Promise<R>) {
  const wrapped = middy(handler);
  if (tracing) wrapped.use(tracing);
  return wrapped
    .use(injectLambdaContext(logger, { clearState: true }))
    .use(logMetrics(metrics, { captureColdStartMetric: true }));
}
