/**
 * The engine's ports, what a run and a one-cluster sync are asked, and what they report: the types its
 * entry points (run.ts, cluster.ts) and their callers share.
 */
import { type ScopeSummary } from './events.ts';
import type { CpsyncEvent } from '../../events/types.ts';
import type { InventoryOptions } from '../domain/options.ts';
import type { Plan } from '../domain/plan.ts';
import type {
  AbsenceStore,
  ClusterRef,
  ClusterSource,
  EventSink,
  Hub,
  IntentLog,
  LeaseStore,
  MalformedObject,
  MemberProbe,
  AccessGrants,
  GrantLedger,
  ProfileNotice,
  Outbox,
  PublishFailure,
  QuarantinedRecord,
} from './ports.ts';
import { type Scope, type ScopeOutcome } from '../domain/model/scope.ts';
import type { Provider } from '../domain/model/observedCluster.ts';
import { type MemberFigures } from './syncScope.ts';
import type { NameScheme } from '../domain/naming.ts';
import type { GrantFigures } from './grants.ts';
import { type FeatureReport } from '../domain/features.ts';

export interface EnginePorts {
  sources: Partial<Record<Provider, ClusterSource>>;
  hub: Hub;
  bus: EventSink;
  outbox: Outbox;
  intents: IntentLog;
  /** Leases that keep two runs from applying the same account at once. @default none (one run at a time is assumed) */
  leases?: LeaseStore;
  /** Reads member clusters (the `memberProbe` feature). @default none (what was read before stays) */
  members?: MemberProbe;
  /** Makes and revokes consumers' grants (the `accessGrants` feature). @default none (what is recorded stays) */
  grants?: AccessGrants;
  /** What cpsync granted, kept where only it writes: the grants' one authority. @default none (nothing is granted) */
  ledger?: GrantLedger;
  /**
   * How many listings in a row missed each cluster (the deletion grace's counts), kept where only cpsync writes:
   * never read back from the hub.
   */
  absences: AbsenceStore;
  /** @default () => new Date() */
  clock?: () => Date;
  /** The names profiles may have (tests give a weak one, to make clusters' names collide). @default PROFILE_NAMES */
  naming?: NameScheme;
}

/**
 * What every run takes from the configuration. There are no defaults here: the configuration schema
 * (adapters/compose/config.ts) is their one source, and adapters/compose/settings.ts turns it into these.
 */
export interface RunSettings {
  options: InventoryOptions;
  /** The `source` of every event. */
  eventSource: string;
  /** Scopes listed at once. */
  concurrency: number;
  /**
   * How long this run's write-ahead intents stay its own before another run may settle them (sooner
   * once the run has given up its lease).
   */
  intentLeaseMillis: number;
  /**
   * How long after its change an intent of a run that gave up its lease is still left alone: a write
   * that run sent may yet land on the hub (a Kubernetes hub finishes requests its clients abandoned).
   */
  intentSettleDelayMillis: number;
  /**
   * Time one scope's listing may take (every call to the cloud, retries included); a listing that
   * has not finished by then ends the scope `failed` (Timeout), and the other scopes go on.
   */
  scopeTimeoutMillis: number;
  /** Time to wait for an account's lease held by another run before the scope fails (Busy). */
  leaseWaitMillis: number;
}

export interface SyncRequest extends RunSettings {
  /** Identifies the run in every event; derive it from the trigger so a redelivered trigger keeps it. */
  syncId: string;
  /**
   * The run this sync is part of, when it is one scope of a run fanned out (a scheduled full sync's scope
   * worker): carried by its events beside `syncId` (`runId`), so that subscribers can tell the whole run.
   */
  runId?: string;
  scopes: Scope[];
  /** How long a lease lasts unless renewed. @default 60000 */
  leaseDurationMillis?: number;
  /** Plan and report only: the hub and the bus are left untouched. */
  dryRun?: boolean;
  /** Provider ids the provider confirmed gone: their profiles go at once. */
  confirmedGone?: ReadonlySet<string>;
  /**
   * Provider ids of profiles no configured scope covers any more, pruned (`cpsync prune --orphans`, a provider set
   * to off): their profiles go at once. Never taken for clusters gone: what cpsync granted on them stays in its
   * ledger (nothing asks the cloud here, so nothing is taken back).
   */
  pruned?: ReadonlySet<string>;
  /**
   * Look for orphans once the scopes are synced (a full sync): profiles no configured scope covers are
   * reported and announced (`Inventory Scope Orphaned`), never deleted. `configured` is every scope of
   * the configuration; `determined` the providers whose scopes are all known (discovery did not fail).
   */
  orphans?: { configured: readonly Scope[]; determined: readonly Provider[] };
  /** Called as each scope finishes (progress displays). */
  onScope?: (report: ScopeReport, done: number, total: number) => void;
  /**
   * Keep each scope's plan and events in the report. A run over thousands of clusters that only
   * needs the summaries turns this off: the profiles then go once their scope is done.
   * @default true
   */
  retainDetails?: boolean;
  /**
   * Stops the run (SIGINT, SIGTERM): no scope is started after it aborts, listings under way are
   * abandoned, applies finish the write in flight and stop; what was applied is announced, intents and
   * leases are settled, and the report says what was left.
   */
  signal?: AbortSignal;
}

/** An orphaned scope in a report. */
export interface OrphanReport {
  scope: Scope;
  /** `namespace/name` of its profiles. */
  names: string[];
  providerIds: string[];
}

/** A cluster seen in change, and how to look at it again. */
export interface SettlingCluster {
  ref: ClusterRef;
  /** As `settlingState` names it: `EKS CREATING`, `GKE RECONCILING`, `AKS Upgrading`. */
  state: string;
  /** While the cluster is being created: when the cloud says it was created (ISO 8601), where the looks are placed from. */
  since?: string;
}

export interface ScopeReport {
  scope: Scope;
  outcome: ScopeOutcome;
  summary: ScopeSummary;
  plan?: Plan;
  /** Change events of this scope (those published and those left pending). */
  events: CpsyncEvent[];
}

export interface SyncReport {
  syncId: string;
  scopes: ScopeReport[];
  events: {
    published: number;
    /** Events waiting in the outbox when the run ended (this run's and earlier runs'). */
    pending: number;
    failed: PublishFailure[];
    republished: number;
  };
  /** Write-ahead intents left: changes whose events a later run settles. */
  intents: { waiting: number; settledFrom?: string };
  hub: { reads: number; writes: number };
  durationMs: number;
  /** What went wrong outside any one scope: the outbox, the bus, the hub during recovery. */
  problems: string[];
  /** Objects of the hub that are not well-formed profiles: left untouched. */
  malformed: MalformedObject[];
  /** Profiles written without CA data, and why (`cpsync.io/certificate-authority-omitted`). */
  withoutCertificateAuthority: ProfileNotice[];
  /** Clusters whose reading shows them in change (being created, updated, deleted…): worth another look soon. */
  settling: SettlingCluster[];
  /** Outbox records that could not be read and were moved aside. */
  quarantined: QuarantinedRecord[];
  /** Set when the run was stopped: the signal's reason, and the scopes not started. */
  interrupted?: { reason: string; notStarted: number };
  /**
   * Each feature's desired and actual state over the scopes this run synced: `turning-off` while their
   * profiles still carry what it wrote (the hub's `<manager>-features` ConfigMaps hold it over all scopes).
   */
  features: FeatureReport;
  /** Profiles of scopes the configuration no longer covers, by scope (when the run looked for them). */
  orphans?: OrphanReport[];
  /** Members the probe read over all scopes (the `memberProbe` feature); `millis` adds up each scope's time. */
  members?: MemberFigures;
  /** Consumers' grants over all scopes (the `accessGrants` feature): made, revoked, refused, and each action. */
  grants?: GrantFigures;
}

export interface ClusterSyncRequest extends Pick<
  RunSettings,
  'options' | 'eventSource' | 'intentLeaseMillis' | 'intentSettleDelayMillis' | 'leaseWaitMillis'
> {
  syncId: string;
  ref: ClusterRef;
  /** How long a lease lasts unless renewed. @default 60000 */
  leaseDurationMillis?: number;
}

export interface ClusterSyncReport {
  /** What happened to the cluster's profile. */
  result: 'created' | 'updated' | 'deleted' | 'unchanged' | 'absent';
  events: CpsyncEvent[];
  published: number;
  pending: number;
  /** What needs a person's look: a name collision left the stored profile of another cluster untouched. */
  problems?: string[];
  /** Set when the cluster's reading shows it in change: it is worth another look soon. */
  settling?: string;
  /** While the cluster is being created: when the cloud says it was created (ISO 8601). */
  since?: string;
}
