/**
 * What every cpsync function shares: Powertools logger, metrics and tracer; the configuration (the
 * CPSYNC_CONFIG document the stack sets); and the adapters built from it once per container.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import { Tracer } from '@aws-lambda-powertools/tracer';
import { captureLambdaHandler } from '@aws-lambda-powertools/tracer/middleware';
import middy from '@middy/core';
import type { Context } from 'aws-lambda';
import {
  buildBus,
  buildOutbox,
  buildSources,
  connectHub,
  eventSourceOf,
  type ProviderModule,
  type Sources,
} from '../adapters/compose.ts';
import { ConfigError, parseConfig, type CpsyncConfig } from '../core/config.ts';
import type { EnginePorts } from '../core/engine.ts';

export const logger = new Logger({ serviceName: 'cpsync' });
export const metrics = new Metrics({ namespace: 'cpsync', serviceName: 'cpsync' });
export const tracer = new Tracer({ serviceName: 'cpsync' });

export interface FunctionDeps {
  config: CpsyncConfig;
  ports: EnginePorts;
  sources: Sources;
  eventSource: string;
}

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

/** Builds the adapters a configuration names, with the sources of the given provider modules. */
export async function depsFor(
  config: CpsyncConfig,
  providers: readonly ProviderModule[],
): Promise<FunctionDeps> {
  const sources = await buildSources(config, providers);
  const ports: EnginePorts = {
    sources: sources.sources,
    hub: await connectHub(config),
    bus: buildBus(config),
    outbox: buildOutbox(config),
  };
  return { config, ports, sources, eventSource: eventSourceOf(config) };
}

/**
 * The adapters of this container, built on first use from the environment's configuration, with the
 * sources of `providers` only (so each function bundles only the cloud SDKs it uses).
 */
export function lazyDeps(providers: readonly ProviderModule[]): () => Promise<FunctionDeps> {
  let cached: Promise<FunctionDeps> | undefined;
  return () => {
    cached ??= depsFor(configFromEnvironment(), providers).catch((error: unknown) => {
      cached = undefined;
      throw error;
    });
    return cached;
  };
}

/** Wraps a handler with the Powertools middlewares every function uses. */
export function withPowertools<E, R>(handler: (event: E, context: Context) => Promise<R>) {
  return middy(handler)
    .use(captureLambdaHandler(tracer))
    .use(injectLambdaContext(logger, { clearState: true }))
    .use(logMetrics(metrics, { captureColdStartMetric: true }));
}
