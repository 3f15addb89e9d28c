import type { ClusterProfile, ProfileRef } from '../domain/model/clusterProfile.ts';
import type { NamespaceSpec } from '../domain/options.ts';
import type { ClusterGrantPlan, Consumer, GrantRecord, GrantResult, HeldGrant } from '../domain/grants.ts';
import type { MemberPacing, MemberReading } from '../domain/member.ts';

export type { NamespaceSpec };
import type { ObservedCluster, Provider } from '../domain/model/observedCluster.ts';
import type { Scope, ScopeOutcome } from '../domain/model/scope.ts';
import type { CpsyncEvent } from '../../events/types.ts';
import type { ChangeIntent } from './changes.ts';

/** What a source adapter reports for one scope. A failed listing carries no clusters. */
export interface ScopeListing {
  outcome: ScopeOutcome;
  clusters: ObservedCluster[];
  /**
   * Set by a listing read from an index that lags the cloud (Azure Resource Graph): a complete listing's
   * absences are not the cloud's word. Before anything is deleted, the engine hands it the provider ids of the
   * scope's profiles the listing did not show; it asks the cloud for each and answers which are there (as
   * observed now), which are gone (the cloud's own "not found"), and which it could not tell (their profiles
   * are kept, and the listing counts as partial).
   */
  confirmAbsent?: (providerIds: readonly string[], signal?: AbortSignal) => Promise<AbsenceAnswer>;
}

/** What the cloud answered for the clusters a lagging listing did not show. */
export interface AbsenceAnswer {
  present: ObservedCluster[];
  gone: string[];
  unknown: string[];
}

/** A cloud: turns a scope into the clusters it holds. */
export interface ClusterSource {
  listScope(scope: Scope, signal?: AbortSignal): Promise<ScopeListing>;
  /**
   * One cluster, for event-triggered syncs: the cluster as it is now, or `undefined` when the provider
   * answers that it does not exist (not found). Any other failure throws.
   */
  getCluster(ref: ClusterRef): Promise<ObservedCluster | undefined>;
  /** Whether `providerId` (a profile's provider id) names the cluster `ref` points at, compared as this cloud spells ids. */
  isProviderIdOf(providerId: string, ref: ClusterRef): boolean;
}

/** Names one cluster within a scope: EKS/GKE by name (GKE with its location), AKS with its resource group. */
export interface ClusterRef {
  scope: Scope;
  name: string;
  /** GKE: the cluster's location (region or zone). */
  location?: string;
  /** AKS: the cluster's resource group. */
  resourceGroup?: string;
}

/**
 * Reads member clusters through their profiles' own access providers (the `memberProbe` feature), with
 * deadlines and bounded concurrency of its own.
 */
export interface MemberProbe {
  /** How often each member is read. */
  pacing: MemberPacing;
  /**
   * Reads the member of each profile; keyed by provider id. Never rejects for a member: one that cannot
   * be read is a reading saying why.
   */
  readAll(profiles: readonly ClusterProfile[], signal?: AbortSignal): Promise<Map<string, MemberReading>>;
}

/** What a read-only check found (`cpsync doctor`): whether it holds, and what it saw or what to do. */
export interface CheckOutcome {
  ok: boolean;
  detail: string;
}

/** A GKE project's cloud role as cpsync's grants want it: consumer → the identities its grants there are for. */
export type RoleHolders = ReadonlyMap<string, ReadonlySet<string>>;

/**
 * Makes, checks and takes back consumers' access to clusters (the `accessGrants` feature): EKS access
 * entries, Kubernetes RBAC bindings on GKE and AKS members. Marks what it makes as cpsync's and never
 * changes what it did not make.
 */
export interface AccessGrants {
  /** How often a cluster whose grants all held is looked at again (unset: at every sync). */
  pacing?: MemberPacing;
  /**
   * Makes `consumer`'s grant true on the cluster (or finds a grant cpsync did not make, left as it is),
   * then asks whether the consumer may do what its level allows. Never rejects: a grant that cannot be
   * made or checked is a result saying why.
   */
  ensure(plan: ClusterGrantPlan, consumer: Consumer, signal?: AbortSignal): Promise<GrantResult>;
  /**
   * Takes back a grant cpsync made: true once it is gone (or what is there is not cpsync's), false when it
   * could not be done now (kept, tried again next run), with why.
   */
  revoke(
    plan: ClusterGrantPlan,
    grant: HeldGrant,
    signal?: AbortSignal,
  ): Promise<{ revoked: boolean; message: string }>;
  /**
   * GKE: the project-wide cloud role a consumer's identity needs to authenticate to any of the project's
   * clusters (`container.clusters.get`), made exactly what `holders` says: consumer → the identities cpsync's
   * grants on the project's clusters are for. `holders` is asked after each reading of the project's policy,
   * and the policy is written only as it was read: a grant whose identity was added before that reading was
   * recorded before it too (a grant is recorded ahead), so the holders read after it count it, and one added
   * after it makes the write fail and the policy be read again. Only cpsync's own (marked) bindings are
   * changed. Returns what it changed, in words; rejects when the project's policy cannot be read or written
   * while something is held there (with nothing to hold, a project that refuses cpsync has nothing of
   * cpsync's to take back).
   */
  settleProjectRoles?(
    project: string,
    holders: () => Promise<RoleHolders>,
    signal?: AbortSignal,
  ): Promise<string[]>;
  /**
   * `cpsync doctor`: whether what bounds cpsync's own writes on the cluster is in force (a GKE or AKS member's
   * admission policy for cpsync's identity there), read without changing anything. Never rejects.
   */
  inspectMember?(plan: ClusterGrantPlan, signal?: AbortSignal): Promise<CheckOutcome>;
  /**
   * Looks on the cluster for every grant carrying cpsync's marks (EKS access entries, member bindings, Azure
   * role assignments) and takes back each that `keep` (consumer, identity) does not name: what no record names
   * (the feature turned off, a record lost or written before the ledger). Never changes what is not cpsync's.
   * Resolves with what it took back, and whether it could look everywhere (a member it could not reach: not).
   */
  sweep?(
    plan: ClusterGrantPlan,
    keep: (consumer: string, identity: string) => boolean,
    /** Identities worth asking about by name (the configured consumers', and those recorded): some clouds list grants below a scope only by principal. */
    identities: readonly string[],
    signal?: AbortSignal,
  ): Promise<{
    removed: Array<HeldGrant & { message: string }>;
    complete: boolean;
    /** The cluster could not be reached at all (nothing it was asked answered). */
    unreachable?: true;
  }>;
}

/**
 * What cpsync granted, kept where only cpsync writes (a DynamoDB table the stack owns; the state directory
 * beside the outbox): the one authority for what it must take back. One record per cluster.
 */
export interface GrantLedger {
  /**
   * The records of the clusters of an account, project or subscription (every region). `clusters`: ledger keys to read as well, whether or not the store's
   * index of the account shows them yet (a store whose index lags its writes reads them by key).
   */
  read(scope: Pick<Scope, 'provider' | 'account'>, clusters?: readonly string[]): Promise<GrantRecord[]>;
  /** Durable once it resolves: stores each record (in place of the cluster's), and removes the records `removed` names. */
  write(records: readonly GrantRecord[], removed?: readonly GrantRecord[]): Promise<void>;
  /** Records found unreadable (and moved aside) so far. */
  quarantined?(): QuarantinedRecord[];
}

/**
 * One per-cluster answer a cloud gave a source (an AKS cluster's CA, an EKS cluster's node groups), with what
 * its listing showed of the cluster when it was asked.
 */
export interface RememberedAnswer {
  provider: Provider;
  account: string;
  /** The cluster's own region (never `*`). */
  region: string;
  providerId: string;
  /** What the listing showed of the cluster when the cloud was asked (the source's digest): a change asks again. */
  listed: string;
  /** When the cloud was asked (milliseconds since the epoch): a later answer is never replaced by an earlier one. */
  askedAt: number;
  /** The answer, in the source's own shape (checked by the source when it is read back). */
  answer: Record<string, unknown>;
}

/**
 * What the sources remember of the clouds' per-cluster answers, so that a cluster whose listing shows it
 * unchanged is not asked again until its answer is old (a cloud event or a changed listing asks at once). Kept
 * where only cpsync writes (the state directory beside the outbox; a DynamoDB table the stack owns), never on
 * the hub. A hint, never an authority: a record that cannot be read is no record (the cloud is asked), and
 * nothing is listed, kept or deleted on its say.
 */
export interface AnswerStore {
  /** The records of an account's clusters in `scope.region` (every region: `*`). Rejects when the store cannot be read. */
  read(scope: Scope): Promise<RememberedAnswer[]>;
  /** Stores each record unless the store holds a later answer for its cluster, and removes those `removed` names. */
  write(
    records: readonly RememberedAnswer[],
    removed?: ReadonlyArray<Pick<RememberedAnswer, 'provider' | 'account' | 'region' | 'providerId'>>,
  ): Promise<void>;
}

/**
 * How many consecutive complete listings of its scope have not shown a cluster that has profiles: the deletion
 * grace's count (`inventory.deletionGraceListings`).
 */
export interface MissedListings {
  provider: Provider;
  account: string;
  /** The cluster's own region (never `*`). */
  region: string;
  providerId: string;
  /** Complete listings in a row that did not show the cluster (at least 1). */
  missed: number;
  /** When the last of them was counted (milliseconds since the epoch). */
  countedAt: number;
}

/**
 * The deletion grace's counts, kept where only cpsync writes (the state directory beside the outbox; a DynamoDB
 * table the stack owns), never on the hub: what a profile's status says of its missed listings is shown there,
 * and never read back. A count lost is a count begun again (a deletion put off, never hastened); nothing is
 * listed or kept on its say.
 */
export interface AbsenceStore {
  /** The counts of an account's clusters in `scope.region` (every region: `*`). Rejects when the store cannot be read. */
  read(scope: Scope): Promise<MissedListings[]>;
  /** Stores each count unless a later one of its cluster is stored, and removes those `removed` names. */
  write(
    records: readonly MissedListings[],
    removed?: ReadonlyArray<Pick<MissedListings, 'provider' | 'account' | 'region' | 'providerId'>>,
  ): Promise<void>;
}

/** A profile's name and labels, as `Hub.listLabels` gives them. */
export interface ProfileLabels {
  name: string;
  labels: Readonly<Record<string, string>>;
}

/** Where ClusterProfiles live: a Kubernetes hub, or a directory of files. */
export interface Hub {
  /** Makes the namespace if it is missing, with cpsync's ClusterSet labels as `namespace` says (none: taken off). */
  ensureNamespace(namespace: NamespaceSpec): Promise<void>;
  /**
   * Takes cpsync's ClusterSet labels off a namespace that is no longer a ClusterSet, if it exists and carries them;
   * never makes it, and leaves a label cpsync did not set.
   */
  dropClusterSet(name: string): Promise<void>;
  /** One profile, or undefined when there is none. */
  get(ref: ProfileRef): Promise<ClusterProfile | undefined>;
  /** Every profile in `namespace` whose labels include `selector`. */
  list(namespace: string, selector: Record<string, string>): Promise<ClusterProfile[]>;
  /**
   * The names and labels of the profiles `list` would return, without the profiles: the file hub answers from
   * its index, a Kubernetes hub lists object metadata only. What a run's look for orphans needs of every profile.
   */
  listLabels?(namespace: string, selector: Record<string, string>): Promise<ProfileLabels[]>;
  /** Applies labels, annotations and spec (server-side apply); returns the object as stored. */
  applyObject(profile: ClusterProfile): Promise<ClusterProfile>;
  /** Applies the status (status subresource); returns the object as stored. */
  /**
   * `before`: the profile as the caller read it, when it did: a property the member probe listed then is judged
   * cpsync's as well, though the status written no longer lists it.
   */
  applyStatus(profile: ClusterProfile, before?: ClusterProfile): Promise<ClusterProfile>;
  /**
   * Applies the object and its status in one write that succeeds or fails whole, where the store can (the file
   * hub; a Kubernetes hub writes a status only through its subresource). The engine uses it, when present, in
   * place of `applyObject` then `applyStatus`.
   */
  applyWhole?(profile: ClusterProfile): Promise<ClusterProfile>;
  /**
   * Deletes the profile; with `resourceVersion`, only if it is still that version. Absent is not an error. A hub that
   * keeps a deleted object while another controller's finalizer holds it marks it first as cpsync's deletion
   * (ANNOTATION_DELETED_AT, see deletedByCpsync), one already being deleted included.
   */
  delete(ref: ProfileRef & { resourceVersion?: string }): Promise<void>;
  /**
   * Changes the data of a ConfigMap of cpsync's own (the feature states): `change` is given the data as
   * stored (empty when there is none) and returns the data wanted; it is written only when that
   * differs, at the version it was read at (read again and retried when another writer came first).
   * A namespace that does not exist is left alone.
   */
  updateConfigMap(
    ref: ProfileRef,
    change: (data: Readonly<Record<string, string>>) => Record<string, string>,
  ): Promise<void>;
  /**
   * Malformed objects a hub has set aside so far (the file hub leaves them out of lists; a Kubernetes hub
   * lists them, and the scope sync sets them aside). Never written over.
   */
  malformed?(): MalformedObject[];
}

/** The names and labels of what `hub.list` would return: from `listLabels` where the hub has it. */
export async function labelsOf(
  hub: Pick<Hub, 'list' | 'listLabels'>,
  namespace: string,
  selector: Record<string, string>,
): Promise<ProfileLabels[]> {
  if (hub.listLabels) return hub.listLabels(namespace, selector);
  return (await hub.list(namespace, selector)).map((p) => ({
    name: String(p.metadata?.name),
    labels: p.metadata?.labels ?? {},
  }));
}

/** An event the bus did not take; it stays in the outbox. `retryable`: worth another attempt within the call (the bus retries those). */
export interface PublishFailure {
  eventId: string;
  code: string;
  message: string;
  retryable: boolean;
}

export interface PublishResult {
  /** Event ids the bus accepted. */
  published: string[];
  failed: PublishFailure[];
}

/** Where change events go: EventBridge, or JSON lines. */
export interface EventSink {
  /** An event counts as published only once it is really out (written, flushed, accepted). Never throws for a refused event. */
  publish(events: readonly CpsyncEvent[]): Promise<PublishResult>;
  /** What the bus says of itself, read without publishing (`cpsync doctor`); throws when it cannot be reached. */
  describe?(): Promise<string>;
  /**
   * Events this bus reported published whose delivery it can no longer stand behind (a stream whose
   * reader went away): asked once at the end of a run, which puts them back in the outbox.
   */
  unconfirmed?(): Promise<{ events: CpsyncEvent[]; reason: string }>;
}

/** A stored record the outbox could not read (a truncated or empty file): moved aside, never fatal. */
export interface QuarantinedRecord {
  /** Where it was moved to. */
  path: string;
  reason: string;
}

/** Events not yet published, kept durably until the bus takes them. */
export interface Outbox {
  /** Durable once it resolves. */
  add(events: readonly CpsyncEvent[]): Promise<void>;
  pending(): Promise<CpsyncEvent[]>;
  remove(eventIds: readonly string[]): Promise<void>;
  /** Records found unreadable (and moved aside) so far. */
  quarantined?(): QuarantinedRecord[];
}

/** Write-ahead intents: changes about to be made, kept until their events are in the outbox (see intents.ts). */
export interface IntentLog {
  /** Durable once it resolves. */
  add(intents: readonly ChangeIntent[]): Promise<void>;
  list(): Promise<ChangeIntent[]>;
  remove(ids: readonly string[]): Promise<void>;
  /** Records found unreadable (and moved aside) so far. */
  quarantined?(): QuarantinedRecord[];
}

/** Who holds a lease, and until when (RFC 3339). */
export interface LeaseHolder {
  holder: string;
  until: string;
}

export type LeaseAnswer = { acquired: true } | { acquired: false; heldBy: LeaseHolder };

/**
 * Leases on the hub that keep two runs from applying the same account's scopes at once (a
 * `coordination.k8s.io` Lease, or a lock file beside the file hub). A lease may be taken as one of another's
 * shares (`shares`): the one-cluster syncs of an account each hold a share of its lease, and a whole run of
 * the account waits until no share is held (core/sync/runLeases.ts says how the two keep apart).
 */
export interface LeaseStore {
  /**
   * Takes `name` for `holder` for `durationMillis` (renews it when `holder` has it), or says who has it.
   * `shares`: the lease is a share of that lease, found by `sharers(shares)`.
   */
  acquire(name: string, holder: string, durationMillis: number, shares?: string): Promise<LeaseAnswer>;
  /** Gives `name` up if `holder` still has it. */
  release(name: string, holder: string): Promise<void>;
  /** Who has `name` now; an expired lease, or one whose process is gone, is nobody's. */
  holderOf(name: string): Promise<LeaseHolder | undefined>;
  /**
   * Who holds a share of `name` now (as `holderOf` judges each), read at once from the store. Shares nobody
   * holds (run out, their process gone) are removed from the store as they are found, unless they changed.
   */
  sharers(name: string): Promise<LeaseHolder[]>;
}

/** An object in the hub that is not a well-formed ClusterProfile: named, left untouched, counted. */
export interface ProfileNotice {
  namespace: string;
  name: string;
  reason: string;
}
export type MalformedObject = ProfileNotice;
