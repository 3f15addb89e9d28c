/**
 * One scope against the hub: the listing normalized, the names chosen, the plan made and applied, and around
 * them what a scope also carries (the members' readings, the consumers' grants, the feature counts).
 *
 * One file because each step narrows what the next may touch (a cluster outside the scope is neither planned nor
 * granted, a name is chosen before anything is written under it, a profile being deleted is not written): read in
 * one place, in order, a step that would widen the scope's reach shows.
 */
import { applyPlan, type ApplyResult } from './applyPlan.ts';
import { ANNOTATION_PROJECTED_TO, PROPERTY_CA_OMITTED } from '../domain/constants.ts';
import { confirmAbsences } from './absences.ts';
import { InvalidClusterError } from '../domain/errors.ts';
import { scopeSelector } from '../domain/labels.ts';
import { profileKey, withAnnotations, type ClusterProfile } from '../domain/model/clusterProfile.ts';
import { profileProblem } from '../domain/model/validate.ts';
import { namespacesOf, normalizeAll } from '../domain/normalize.ts';
import { PROFILE_NAMES, type NameScheme } from '../domain/naming.ts';
import type { ObservedCluster } from '../domain/model/observedCluster.ts';
import { chooseNames, nameKey, type NameClaims, type NameRequest } from './names.ts';
import { inventoryNamespaces, type InventoryOptions } from '../domain/options.ts';
import { plan, type Plan } from '../domain/plan.ts';
import { featureCounts, type FeatureName } from '../domain/features.ts';
import type {
  AbsenceStore,
  AccessGrants,
  GrantLedger,
  Hub,
  MalformedObject,
  MemberProbe,
  MissedListings,
  ProfileNotice,
  ScopeListing,
} from './ports.ts';
import { withGrants, type AccountWork, type GrantFigures, type ProjectClusters } from './grants.ts';
import { ledgerKey } from '../domain/grants.ts';
import {
  type MemberReading,
  applyMemberReading,
  carryMemberState,
  memberDue,
  probedBefore,
  providerIdOf,
} from '../domain/member.ts';
import { canonicalRegion, clusterInScope, placeOfProviderId, providerIdInScope } from '../domain/scopes.ts';
import { ALL_REGIONS, scopeKey, type Scope } from '../domain/model/scope.ts';
import { ANNOTATION_PROVIDER_ID, LABEL_REGION } from '../domain/constants.ts';
import { canonicalProviderId } from '../domain/naming.ts';
import { CpsyncError, firstLineOf } from '../domain/errors.ts';

export interface SyncScopeInput {
  hub: Hub;
  listing: ScopeListing;
  options: InventoryOptions;
  /** Stamp for what changes in this run (RFC 3339, whole seconds). */
  now: string;
  /** Provider ids the provider confirmed gone. */
  confirmedGone?: ReadonlySet<string>;
  /** Provider ids whose profiles are pruned: they go, and (unlike clusters gone) the ledger keeps their grants. */
  pruned?: ReadonlySet<string>;
  /** Plan only: read the hub, write nothing. */
  dryRun?: boolean;
  /** Called with the plan just before it is applied (write-ahead intents). */
  beforeApply?: (plan: Plan) => Promise<void>;
  /** Stops applying (the write in flight finishes). */
  signal?: AbortSignal;
  /** Reads member clusters while the `memberProbe` feature is on (without it, what was read before stays). */
  members?: MemberProbe;
  /** Makes, checks and revokes consumers' grants (the `accessGrants` feature, and its turn-off). */
  grants?: AccessGrants;
  /** What cpsync granted: the grants step's one authority (never the hub). */
  ledger?: GrantLedger;
  /** The deletion grace's counts: the one authority for how many listings in a row missed a cluster (never the hub). */
  absences: AbsenceStore;
  /**
   * The listing is one cluster's reading (an event's, a follow-up's look), not the scope's: the counts are not
   * read, and the cluster's, when it is there, is begun again.
   */
  oneCluster?: boolean;
  /**
   * Set where other syncs of the account may be applying at the same time (one-cluster syncs): what is
   * settled for the whole account (a GKE project's cloud role) is settled inside it, from the ledger as read there.
   */
  alone?: AccountWork;
  /** Beside `alone`: the GKE project's clusters as the cloud lists them now (see GrantsInput). */
  projectClusters?: ProjectClusters;
  /** The names profiles may have. @default PROFILE_NAMES */
  naming?: NameScheme;
  /** Names given by the run's other scopes, synced at the same time (see core/sync/names.ts). */
  claims?: NameClaims;
}

export interface SyncScopeResult {
  plan: Plan;
  applied: ApplyResult;
  /** Profiles of the listing written without CA data, and why (consumers fall back to their own trust). */
  withoutCertificateAuthority: ProfileNotice[];
  /** Clusters the listing reported that could not become profiles. */
  invalid: InvalidClusterError[];
  /**
   * Clusters a lagging listing did not show that the cloud answered present when asked about their profiles
   * (`ScopeListing.confirmAbsent`): synced as listed ones.
   */
  confirmedPresent: ObservedCluster[];
  /** Objects of the hub that are not well-formed profiles: left untouched. */
  malformed: MalformedObject[];
  /**
   * By namespace, how many of the scope's profiles carry what each feature wrote, as the hub holds them
   * once the plan is applied (as it held them before, for a dry run).
   */
  featureCounts: Map<string, Record<FeatureName, number>>;
  /** Namespaces of projected copies no rule names any more that could not be read: their copies are left. */
  unreadable: ProfileNotice[];
  /** The member probe's work in this scope (while the `memberProbe` feature is on). */
  members?: MemberFigures;
  /** Grants made, revoked and refused in this scope (the `accessGrants` feature, and its turn-off). */
  grants?: GrantFigures;
  /** Newcomers whose first name something else holds, and the name each was given instead. */
  collisions: string[];
  /**
   * What the caller runs once it has announced the scope's changes, however its sync ends: a GKE project's role
   * settled beside other syncs of the project (withGrants' `afterwards`). Never rejects.
   */
  afterwards?: () => Promise<{ changed: string[]; problem?: string }>;
  /** What could not be done that the scope's sync went on without (the deletion grace's counts not read). */
  problems: string[];
}

/** How many members a scope read, how many of them could not be read, and the time it took. */
export interface MemberFigures {
  read: number;
  unreachable: number;
  millis: number;
}

/** The scope's profiles as the hub holds them after `applied`: those read, with the writes that landed. */
function profilesAfter(current: readonly ClusterProfile[], applied: ApplyResult): ClusterProfile[] {
  const after = new Map(current.map((p) => [profileKey(p.metadata), p]));
  for (const change of applied.applied) {
    const key = profileKey(change.profile.metadata);
    if (change.kind === 'deleted') after.delete(key);
    else after.set(key, change.profile);
  }
  return [...after.values()];
}

function countsByNamespace(
  profiles: readonly ClusterProfile[],
  accessProviderNames: readonly string[],
  grants: { namespace: string; remaining?: number },
): Map<string, Record<FeatureName, number>> {
  const byNamespace = new Map<string, ClusterProfile[]>();
  for (const profile of profiles) {
    const list = byNamespace.get(profile.metadata.namespace);
    if (list) list.push(profile);
    else byNamespace.set(profile.metadata.namespace, [profile]);
  }
  const counts = new Map(
    [...byNamespace].map(([namespace, list]) => [namespace, featureCounts(list, accessProviderNames)]),
  );
  // What the access grants still hold that no profile shows (the ledger's): counted in the inventory's namespace.
  if (grants.remaining) {
    const own = counts.get(grants.namespace) ?? featureCounts([], accessProviderNames);
    own.accessGrants += grants.remaining;
    counts.set(grants.namespace, own);
  }
  return counts;
}

/**
 * The profiles with what their members say (the `memberProbe` feature): the members due this run are
 * read (a new profile's at once), the others keep what the hub holds from earlier readings. Every copy
 * of a cluster (projections) gets what its first profile gets, so that they stay the same.
 */
async function withMembers(
  desired: readonly ClusterProfile[],
  current: readonly ClusterProfile[],
  input: SyncScopeInput,
): Promise<{ profiles: ClusterProfile[]; figures: MemberFigures }> {
  const previous = new Map(current.map((p) => [profileKey(p.metadata), p]));
  const basis = new Map<string, ClusterProfile | undefined>();
  const due: ClusterProfile[] = [];
  const nowMillis = Date.parse(input.now);
  for (const profile of desired) {
    const id = providerIdOf(profile);
    if (id === undefined || basis.has(id)) continue;
    const before = previous.get(profileKey(profile.metadata));
    basis.set(id, before);
    const probe = input.members;
    if (probe && !input.dryRun && (!probedBefore(before) || memberDue(id, nowMillis, probe.pacing)))
      due.push(profile);
  }
  const started = performance.now();
  const readings: Map<string, MemberReading> =
    due.length > 0 && input.members ? await input.members.readAll(due, input.signal) : new Map();
  const figures = {
    read: readings.size,
    unreachable: [...readings.values()].filter((r) => !r.reachable).length,
    millis: Math.round(performance.now() - started),
  };
  const profiles = desired.map((profile) => {
    const id = providerIdOf(profile) ?? '';
    const before = basis.get(id) ?? previous.get(profileKey(profile.metadata));
    const reading = readings.get(id);
    return reading
      ? applyMemberReading(profile, reading, before, input.now)
      : carryMemberState(profile, before);
  });
  return { profiles, figures };
}

/**
 * One scope, end to end against the hub: normalize the listing, read what the hub holds for the
 * scope, plan, apply. Level-triggered: whatever earlier runs did, the hub ends matching the listing.
 *
 * Two guards keep a scope to what it can see: a listed cluster outside the scope is not planned (it
 * is reported as invalid), and every profile's name is chosen before the plan (core/sync/names.ts): a
 * newcomer's name is looked up on the hub first, so that it never goes over another cluster's profile or
 * another manager's, and a profile of the cluster that exists but is not selected by the scope's labels
 * (written by hand, or by an older version) is updated rather than announced as created again.
 * Malformed objects are left untouched.
 */
export async function syncScope(input: SyncScopeInput): Promise<SyncScopeResult> {
  const { hub, options, now } = input;
  let listing = input.listing;
  const scope = listing.outcome.scope;
  const invalid: InvalidClusterError[] = [];
  const valid: ObservedCluster[] = [];
  const requests: NameRequest[] = [];
  const admit = (cluster: ObservedCluster) => {
    if (!clusterInScope(cluster, scope)) {
      invalid.push(
        new InvalidClusterError(
          'region',
          cluster.providerId,
          `is ${cluster.provider}/${cluster.account}/${cluster.region}, outside the scope listed`,
        ),
      );
      return;
    }
    try {
      for (const namespace of namespacesOf(cluster, options)) requests.push({ cluster, namespace });
      valid.push(cluster);
    } catch (error) {
      if (!(error instanceof InvalidClusterError)) throw error;
      invalid.push(error);
    }
  };
  for (const cluster of listing.clusters) admit(cluster);
  const namespaces = inventoryNamespaces(options);
  const selector = scopeSelector(options.manager, scope);
  const malformed: MalformedObject[] = [];
  const current: ClusterProfile[] = [];
  const note = (
    profile: { metadata?: { namespace?: unknown; name?: unknown } },
    reason: string,
    ns: string,
  ) =>
    malformed.push({
      namespace: typeof profile.metadata?.namespace === 'string' ? profile.metadata.namespace : ns,
      name: typeof profile.metadata?.name === 'string' ? profile.metadata.name : '(unnamed)',
      reason,
    });
  const read = async (namespace: string) => {
    for (const profile of await hub.list(namespace, selector)) {
      const problem = profileProblem(profile);
      if (problem) note(profile, problem, namespace);
      else current.push(profile);
    }
  };
  // Every namespace is read before anything is written: one that cannot be read stops the scope whole.
  for (const namespace of namespaces) await read(namespace.name);
  // Copies in namespaces no configured rule names any more (a projection rule removed): found through the
  // profiles that list where their copies are, so that they are deleted rather than left behind.
  const listed = new Set(namespaces.map((ns) => ns.name));
  const projectedTo = [
    ...new Set(current.flatMap((p) => p.metadata.annotations?.[ANNOTATION_PROJECTED_TO]?.split(',') ?? [])),
  ]
    .filter((ns) => ns !== '' && !listed.has(ns))
    .sort();
  // Unlike a configured namespace, one known only from an annotation may have lost its RoleBinding once its
  // rule was removed: its copies are left (and named), the scope goes on.
  const unreadable: ProfileNotice[] = [];
  for (const namespace of projectedTo)
    try {
      await read(namespace);
    } catch (error) {
      if (!(error instanceof Error && (error as { status?: number }).status === 403)) throw error;
      unreadable.push({ namespace, name: '*', reason: error.message });
    }

  // A lagging listing's absences are asked of the cloud before the plan may take them for clusters gone.
  let confirmedGone = input.confirmedGone;
  const confirmedPresent: ObservedCluster[] = [];
  if (listing.confirmAbsent && listing.outcome.kind === 'complete') {
    const confirmed = await confirmAbsences(
      { ...listing, confirmAbsent: listing.confirmAbsent },
      current,
      input.signal,
    );
    for (const cluster of confirmed.present) admit(cluster);
    confirmedPresent.push(...confirmed.present);
    listing = confirmed.listing;
    if (confirmed.gone.length > 0) confirmedGone = new Set([...(confirmedGone ?? []), ...confirmed.gone]);
  }
  // A complete listing with clusters that could not be read is not complete: their profiles must not be
  // taken for clusters that are gone.
  let outcome: ScopeListing['outcome'] =
    invalid.length > 0 && listing.outcome.kind === 'complete'
      ? { ...listing.outcome, kind: 'partial', missing: invalid.map((e) => e.providerId || '(no id)').sort() }
      : listing.outcome;
  // How many listings in a row missed each cluster, as cpsync's own store counted them. Without the counts, a
  // listing's absences are not acted on (as a partial listing's are not): a deletion is put off, never hastened.
  const problems: string[] = [];
  let counted: MissedListings[] | undefined;
  if (!input.oneCluster && outcome.kind !== 'failed')
    try {
      // The account's, every region's: a listed cluster's count begins again wherever it was filed.
      counted = await input.absences.read({ ...scope, region: ALL_REGIONS });
    } catch (error) {
      problems.push(
        `cannot read how many listings of ${scopeKey(scope)} missed its clusters (cpsync's absence store): ${firstLineOf(error, 1000)}; no profile is marked missing or deleted for a missed listing this time`,
      );
      if (outcome.kind === 'complete') outcome = { ...outcome, kind: 'partial', missing: [] };
    }

  // Each profile's name, before anything is planned: the hub's profiles keep theirs, newcomers get their own.
  const naming = await chooseNames({
    requests,
    current,
    malformedHere: malformed,
    hub,
    manager: options.manager,
    scheme: input.naming ?? PROFILE_NAMES,
    ...(input.claims ? { claims: input.claims } : {}),
  });
  malformed.push(...naming.malformed);
  const { profiles: normalized } = normalizeAll(valid, options, now, (cluster, namespace) =>
    naming.names.get(nameKey(namespace, cluster)),
  );
  // The profiles of listed clusters found under their names but not selected by the scope's labels (written
  // by hand, or by an older version) are planned against like the others: updated, not created again.
  const known = [...current, ...naming.found];

  const probed = options.features.memberProbe ? await withMembers(normalized, known, input) : undefined;
  // Listed clusters written nowhere (every name they may have is held by something else): their profile as it
  // would be, for the grants step (nothing is granted there; only what the configuration no longer wants is
  // taken back).
  const named = new Set(normalized.map(providerIdOf));
  const unwritten = normalizeAll(
    valid.filter((cluster) => !named.has(cluster.providerId)),
    options,
    now,
  ).profiles.filter((p) => !named.has(providerIdOf(p)));
  const terminating = new Set(
    known.filter((p) => p.metadata.deletionTimestamp !== undefined).map((p) => profileKey(p.metadata)),
  );
  const inScope = listing.clusters.filter(
    (c) => typeof c.providerId === 'string' && clusterInScope(c, scope),
  );
  const granted = await withGrants(probed?.profiles ?? normalized, known, {
    options,
    now,
    scope,
    complete: outcome.kind === 'complete',
    listed: new Set(inScope.map((c) => ledgerKey(c))),
    regions: new Map(
      inScope.filter((c) => typeof c.region === 'string').map((c) => [ledgerKey(c), c.region]),
    ),
    unwritten,
    // Each cluster on its own: only where its profiles go matters here, not the names they may have.
    routed: () => valid.flatMap((cluster) => normalizeAll([cluster], options, now).profiles),
    writable: (profile) => !terminating.has(profileKey(profile.metadata)),
    ...(confirmedGone ? { confirmedGone } : {}),
    ...(input.grants ? { grants: input.grants } : {}),
    ...(input.ledger ? { ledger: input.ledger } : {}),
    ...(input.alone ? { alone: input.alone } : {}),
    ...(input.projectClusters ? { projectClusters: input.projectClusters } : {}),
    ...(input.dryRun ? { dryRun: true } : {}),
    ...(input.signal ? { signal: input.signal } : {}),
    // The ledger's record of what was granted is written beside the hub's writes (it is the grants' authority,
    // written ahead of every grant: the hub showing a grant before the record of it is safe).
    recordAlongside: true,
    // A GKE project's cloud role is settled where the whole project is seen (and its listing did not fail).
    ...(scope.provider === 'gke' && scope.region === ALL_REGIONS && outcome.kind !== 'failed'
      ? { project: scope.account }
      : {}),
  });
  const desired = stillNaming(granted.profiles, known, new Set(unreadable.map((u) => u.namespace)));
  const result = plan({
    outcome,
    desired,
    current: known,
    manager: options.manager,
    deletionGraceListings: options.deletionGraceListings,
    missedBefore: missedBefore(counted ?? []),
    accessProviderNames: Object.values(options.accessProviderNames),
    now,
    ...(confirmedGone ? { confirmedGone } : {}),
    ...(input.pruned ? { pruned: input.pruned } : {}),
  });
  result.skipped.push(...naming.skipped);
  const withoutCertificateAuthority = desired.flatMap((profile): ProfileNotice[] => {
    const reason = profile.status?.properties?.find((p) => p.name === PROPERTY_CA_OMITTED)?.value;
    return reason ? [{ namespace: profile.metadata.namespace, name: profile.metadata.name, reason }] : [];
  });
  const absences = absenceChanges(result, counted, {
    scope,
    now,
    listed: listing.clusters,
    known,
    gone: [...(confirmedGone ?? []), ...(input.pruned ?? [])],
  });
  const done = {
    collisions: naming.collisions,
    unreadable,
    invalid,
    confirmedPresent,
    malformed,
    withoutCertificateAuthority,
    ...(probed ? { members: probed.figures } : {}),
  };
  const after = [...known, ...result.updates.map((u) => u.current)];
  const names = Object.values(options.accessProviderNames);
  const stillHeld = {
    namespace: options.namespace,
    ...(granted.figures?.remaining ? { remaining: granted.figures.remaining } : {}),
  };
  const noneApplied: ApplyResult = { applied: [], failed: [] };
  if (input.dryRun)
    return {
      plan: result,
      applied: noneApplied,
      ...done,
      problems,
      ...(granted.figures ? { grants: granted.figures } : {}),
      featureCounts: countsByNamespace(profilesAfter(after, noneApplied), names, stillHeld),
    };

  let applied: ApplyResult | undefined;
  let unrecorded: string | undefined;
  try {
    const used = new Set(result.creates.map((c) => c.profile.metadata.namespace));
    for (const namespace of namespaces.filter((ns) => used.has(ns.name)))
      await hub.ensureNamespace(namespace);
    // Kept before the hub's writes, and the scope's sync fails without them (it is retried): a count not begun again
    // would be carried on by the next listing that misses the cluster.
    if (absences.put.length > 0 || absences.removed.length > 0)
      await input.absences.write(absences.put, absences.removed).catch((error: unknown) => {
        throw new CpsyncError(
          `cannot keep how many listings of ${scopeKey(scope)} missed its clusters (cpsync's absence store): ${firstLineOf(error, 1000)}`,
        );
      });
    await input.beforeApply?.(result);
    applied = await applyPlan(hub, result, input.signal);
  } finally {
    // Nothing of the scope's is left running when it returns, nor when it throws; and what was to be done
    // once the changes are announced is done now when it throws (nothing will be announced).
    unrecorded = await granted.recorded;
    if (!applied) await granted.afterwards?.();
  }
  return {
    plan: result,
    applied,
    ...done,
    problems,
    ...withProblem(granted.figures, unrecorded),
    ...(granted.afterwards ? { afterwards: granted.afterwards } : {}),
    featureCounts: countsByNamespace(profilesAfter(after, applied), names, stillHeld),
  };
}

/** The counts read, by canonical provider id (the lower, should one cluster have two: a deletion put off, not hastened). */
function missedBefore(counted: readonly MissedListings[]): Map<string, number> {
  const byId = new Map<string, number>();
  for (const record of counted) {
    const id = canonicalProviderId(record);
    byId.set(id, Math.min(byId.get(id) ?? record.missed, record.missed));
  }
  return byId;
}

/**
 * What the absence store keeps after a scope's plan (`counted`: the account's counts, every region's):
 * - the count of each cluster the plan counted (marked missing, or deleted at the grace: kept until its profiles are
 *   gone, so that a deletion that does not land is tried again);
 * - none of a cluster a listing of any kind showed, nor of one the cloud answered gone or that is pruned: begun again;
 * - after a complete listing, none of the scope's other clusters (their profiles not counted: terminating, or of
 *   another manager now);
 * - none of a cluster of the scope with no profile the scope selects (its profiles gone).
 * Unread (a one-cluster reading; a store that could not be read, whose listing counts as partial), the listed
 * clusters' counts go by their keys. Every rule here takes a count away, and
 * so puts a deletion off: only the plan's count, from a complete listing, brings one nearer.
 */
function absenceChanges(
  plan: Plan,
  counted: readonly MissedListings[] | undefined,
  at: {
    scope: Scope;
    now: string;
    listed: readonly ObservedCluster[];
    known: readonly ClusterProfile[];
    gone: readonly string[];
  },
): { put: MissedListings[]; removed: MissedListings[] } {
  const { scope } = at;
  const idOf = (providerId: string) => canonicalProviderId({ provider: scope.provider, providerId });
  const countedAt = Date.parse(at.now);
  const listed = new Map<string, ObservedCluster>();
  for (const cluster of at.listed)
    if (typeof cluster.providerId === 'string' && clusterInScope(cluster, scope))
      listed.set(idOf(cluster.providerId), cluster);
  const record = (providerId: string, region: string, missed: number): MissedListings => ({
    provider: scope.provider,
    account: scope.account,
    region: canonicalRegion(scope.provider, region),
    providerId,
    missed,
    countedAt,
  });
  // Unread (one cluster's reading; a store that could not be read): the listed clusters' counts, by their keys.
  if (!counted)
    return {
      put: [],
      removed: [...listed.values()].map((cluster) => record(cluster.providerId, cluster.region, 1)),
    };
  const profiles = new Map<string, ClusterProfile>();
  for (const profile of at.known) {
    const providerId = profile.metadata.annotations?.[ANNOTATION_PROVIDER_ID];
    if (providerId) profiles.set(idOf(providerId), profile);
  }
  const gone = new Set(at.gone.map(idOf));
  const complete = plan.outcome.kind === 'complete';
  const put = [...plan.missed].map(([id, { providerId, missed }]) => {
    // Where the cluster is: its id's, else (AKS, counted only by a listing of the whole subscription) where it was
    // counted before, else its profile's region.
    const region =
      placeOfProviderId(scope.provider, providerId)?.region ??
      counted.find((r) => canonicalProviderId(r) === id)?.region ??
      profiles.get(id)?.metadata.labels?.[LABEL_REGION] ??
      scope.region;
    return record(providerId, region, missed);
  });
  /** Whether a count is of a cluster of this scope: its id's account and region, or (AKS) where it was filed. */
  const filedHere = (r: MissedListings) =>
    providerIdInScope(r.providerId, scope) && (scope.region === ALL_REGIONS || r.region === scope.region);
  const removed = counted.filter((r) => {
    const id = canonicalProviderId(r);
    if (plan.missed.has(id)) return false;
    if (listed.has(id) || gone.has(id)) return true;
    if (profiles.has(id)) return complete && filedHere(r);
    return filedHere(r);
  });
  return { put, removed };
}

/** The grants' figures, with a problem met after they were made (the ledger's record of them not written). */
function withProblem(
  figures: GrantFigures | undefined,
  problem: string | undefined,
): { grants?: GrantFigures } {
  if (!problem) return figures ? { grants: figures } : {};
  const base = figures ?? { granted: 0, revoked: 0, refused: 0, notUsable: 0, actions: [] };
  return { grants: { ...base, problems: [...(base.problems ?? []), problem] } };
}

/**
 * The wanted profiles, each still naming the namespaces of its copies that could not be read now: a namespace known
 * only from a profile's `cpsync.io/projected-to` (its rule removed, and its RoleBinding with it) would be forgotten
 * with the annotation, and its copies left there for good. Named still, they are looked for (and deleted) at every
 * run until the namespace can be read; the profile's other changes are written meanwhile.
 */
function stillNaming(
  wanted: readonly ClusterProfile[],
  current: readonly ClusterProfile[],
  unreadable: ReadonlySet<string>,
): ClusterProfile[] {
  if (unreadable.size === 0) return [...wanted];
  const named = (profile: ClusterProfile | undefined) =>
    profile?.metadata.annotations?.[ANNOTATION_PROJECTED_TO]?.split(',').filter(Boolean) ?? [];
  const byKey = new Map(current.map((profile) => [profileKey(profile.metadata), profile]));
  return wanted.map((profile) => {
    const now = named(profile);
    const kept = named(byKey.get(profileKey(profile.metadata))).filter(
      (namespace) => unreadable.has(namespace) && !now.includes(namespace),
    );
    if (kept.length === 0) return profile;
    return withAnnotations(profile, { [ANNOTATION_PROJECTED_TO]: [...now, ...kept].sort().join(',') });
  });
}
