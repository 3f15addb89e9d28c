import type { RunSettings } from '../../core/sync/engine.ts';
import { DEFAULT_SOURCE } from '../../events/detailTypes.ts';
import { inventoryOptionsOf, type CpsyncConfig } from './config.ts';

/** What every engine run takes from the configuration (the engine has no defaults for these). */
export type EngineSettings = RunSettings;

/** How long a Kubernetes hub is given to finish requests of a run that gave up its lease. */
const KUBERNETES_SETTLE_DELAY_MILLIS = 10_000;

/** The event source name events carry: the EventBridge bus's `source`, else the contract's default. */
export function eventSourceOf(config: CpsyncConfig): string {
  return config.bus && 'eventBridge' in config.bus ? config.bus.eventBridge.source : DEFAULT_SOURCE;
}

export function engineSettings(config: CpsyncConfig): EngineSettings {
  return {
    options: inventoryOptionsOf(config),
    eventSource: eventSourceOf(config),
    concurrency: config.sync.concurrency,
    intentLeaseMillis: config.sync.intentLeaseSeconds * 1000,
    scopeTimeoutMillis: config.sync.scopeTimeoutSeconds * 1000,
    leaseWaitMillis: config.sync.leaseWaitSeconds * 1000,
    // A Kubernetes hub may still carry out a write whose client has gone; files are written or not.
    intentSettleDelayMillis: config.hub && !('directory' in config.hub) ? KUBERNETES_SETTLE_DELAY_MILLIS : 0,
  };
}
