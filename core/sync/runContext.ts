/** What one run shares between its scopes, and how a step of it fails without ending the run. */
import type { ChangeIntent } from './changes.ts';
import { messageOf } from '../domain/errors.ts';
import type { NameClaims } from './names.ts';
import type { RunLeases } from './runLeases.ts';
import { type FeatureName } from '../domain/features.ts';
import type { EnginePorts, SyncRequest, SyncReport } from './types.ts';

/** What one run shares between its scopes. */
export interface RunContext {
  ports: EnginePorts;
  /** Profiles carrying each feature's writes, over the scopes synced so far. */
  featureTotals: Record<FeatureName, number>;
  request: SyncRequest;
  clock: () => Date;
  leases?: RunLeases;
  report: SyncReport;
  /** The names the run's scopes gave newcomers: scopes synced at once never give one name twice. */
  claims: NameClaims;
  /** The intents the run's recovery left to runs that may still be going (see `landedBefore`). */
  others?: readonly ChangeIntent[];
}

/** Runs `work`; a failure is named in the report's problems instead of ending the run. Undefined on failure. */
export async function attempt<T>(
  run: RunContext,
  what: string,
  work: () => Promise<T>,
): Promise<T | undefined> {
  try {
    return await work();
  } catch (error) {
    run.report.problems.push(`cannot ${what}: ${messageOf(error)}`);
    return undefined;
  }
}
