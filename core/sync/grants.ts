/**
 * The `accessGrants` step of a scope's sync: for every cluster of the listing, the grants its consumers
 * should hold are made true and checked, and what cpsync holds but should not is revoked, before the plan,
 * so that the profiles show the outcome (the record, each consumer's condition).
 *
 * What cpsync holds is what its ledger says (core/sync/ports.ts GrantLedger): a store only cpsync writes.
 * The hub shows the record and the conditions but is never read back for them, so nothing written on the hub
 * can make cpsync grant, keep or forget a grant. The ledger is written ahead: a grant is recorded (pending)
 * before the cloud is asked, so that a run stopped halfway leaves nothing of cpsync's that no record names.
 *
 * It runs while the feature is on, and while it is turning off (off, with consumers still configured) or the
 * ledger still holds something of the scope's. At turn-off every listed cluster is also scanned once for
 * cpsync's marks (in its slot), so that what no record names is taken back too.
 *
 * One file because the step reads the ledger once and every decision below (grant, check, revoke, the
 * turn-off's sweep, the GKE project role) is made from that one reading and recorded in one write.
 */
import pLimit from 'p-limit';
import { ANNOTATION_ACCESS_GRANTS, CONSUMER_CONDITION_PREFIX } from '../domain/constants.ts';
import { firstLineOf } from '../domain/errors.ts';
import { sameProviderId } from '../domain/naming.ts';
import {
  carriesGrants,
  emptyRecord,
  grantBlocked,
  ledgerKey,
  planGrants,
  recordAfter,
  recordBefore,
  sameTerms,
  showGrants,
  GrantReason,
  type AccessLevel,
  type ClusterGrantOutcome,
  type ClusterGrantPlan,
  type ClusterPlace,
  type Consumer,
  type GrantRecord,
  type GrantResult,
  type HeldGrant,
} from '../domain/grants.ts';
import { memberDue, providerIdOf } from '../domain/member.ts';
import { own } from '../domain/own.ts';
import { profileKey, withAnnotations, type ClusterProfile } from '../domain/model/clusterProfile.ts';
import type { Scope } from '../domain/model/scope.ts';
import { ALL_REGIONS } from '../domain/model/scope.ts';
import type { InventoryOptions } from '../domain/options.ts';
import type { AccessGrants, GrantLedger, RoleHolders } from './ports.ts';

/** Clusters whose grants are handled at once. */
const CLUSTERS_AT_ONCE = 8;

/** One grant made or revoked (or, in a dry run, that would be). */
export interface GrantAction {
  action: 'grant' | 'revoke';
  providerId: string;
  consumer: string;
  identity: string;
  /** The level granted (grants only). */
  level?: AccessLevel;
  /** What was done, in words. */
  message: string;
  /** A profile of the cluster (its event's `cluster`). */
  profile: ClusterProfile;
}

/** What the step did in a scope. */
export interface GrantFigures {
  /** Grants cpsync made this run (a consumer it did not hold before). */
  granted: number;
  revoked: number;
  /** Grants the cloud refused. */
  refused: number;
  /** Consumers whose condition is False for another reason (member unreachable, not allowed, not ready). */
  notUsable: number;
  /** What was done, or in a dry run what would be. */
  actions: GrantAction[];
  /** What changed in GKE projects' cloud roles (the role consumers need to authenticate). */
  projectRoles?: string[];
  /** What could not be done and is tried again next run. */
  problems?: string[];
  /**
   * Clusters the turn-off's scan could not reach at all and of which the ledger names nothing: taken as holding
   * nothing of cpsync's.
   */
  unreachedScans?: string[];
  /**
   * Clusters of the scope the feature still holds something on, as the ledger says after this run: grants
   * cpsync made, and (while turning off) clusters not yet scanned for its marks. The feature reads
   * `turning-off` until none is left.
   */
  remaining?: number;
}

type Outcome = ClusterGrantOutcome & {
  revoked: Array<HeldGrant & { message: string }>;
  /** Taken back by the scan of cpsync's marks; `complete` when it could look everywhere. */
  swept?: { removed: Array<HeldGrant & { message: string }>; complete: boolean; unreachable?: true };
};

/** What the step needs besides the profiles. */
export interface GrantsInput {
  options: InventoryOptions;
  grants?: AccessGrants;
  /** Where cpsync keeps what it granted. Without one, nothing is granted (and nothing is known to be held). */
  ledger?: GrantLedger;
  dryRun?: boolean;
  now: string;
  signal?: AbortSignal;
  /** The scope listed: the ledger's records of it are read, and judged by the listing. */
  scope: Scope;
  /** The listing was complete: a record of a cluster it did not list is counted missed (and goes with the grace). */
  complete: boolean;
  /** Ledger keys of the clusters the listing holds (readable or not). */
  listed: ReadonlySet<string>;
  /**
   * The region of each listed cluster as its cloud gives it, by ledger key: with the scope's account, what a new
   * record is filed under. Unset (or a cluster it lacks): the scope's region, else the profile's label.
   */
  regions?: ReadonlyMap<string, string>;
  /** Provider ids the cloud confirmed gone: their records go. */
  confirmedGone?: ReadonlySet<string>;
  /**
   * Profiles of listed clusters that this run writes nowhere (every name they may have is held by something
   * else): no consumer is granted on them; what cpsync holds there stays while the configuration wants it.
   */
  unwritten?: readonly ClusterProfile[];
  /**
   * Every profile of the listed clusters where the configuration routes them, names aside (asked only when
   * grants are planned): the consumers the configuration wants on each cluster, whether or not the hub lets
   * cpsync write all of its profiles. Unset: the desired and unwritten profiles.
   */
  routed?: () => readonly ClusterProfile[];
  /** Whether the plan writes a profile (one being deleted by another controller's finalizer is not). */
  writable?: (profile: ClusterProfile) => boolean;
  /**
   * The GKE project the scope is whole for (every region): its cloud role for consumers is settled from
   * the ledger's records of its clusters. Unset for a narrower scope.
   */
  project?: string;
  /**
   * Set where other syncs of the account may be applying at the same time (one-cluster syncs): the project's
   * role is then settled inside it, from the ledger as read there, so that no sync settles it from a reading
   * older than another's last write.
   */
  alone?: AccountWork;
  /**
   * Beside `alone`: the ledger keys of the project's clusters as the cloud lists them now, read by key with the
   * project's records when its role is settled (a record just written may not be in the ledger's index yet).
   * Rejects when the cloud cannot list them all.
   */
  projectClusters?: ProjectClusters;
  /**
   * The ledger's record of what the run did (written once the grants are made) is left to the caller
   * (`recorded`), to be awaited beside the hub's writes rather than before them. Where the project's cloud role is
   * settled from the ledger, the record is written first all the same.
   */
  recordAlongside?: boolean;
}

/** What `withGrants` did: the profiles showing it, its figures, and the ledger's record when left to the caller. */
export interface Granted {
  profiles: ClusterProfile[];
  figures?: GrantFigures;
  /**
   * Resolves once the ledger holds what this run did (`recordAlongside`); never rejects: a record that could not
   * be written resolves to the problem that names it (the next run, reading the ledger, does the work again).
   */
  recorded?: Promise<string | undefined>;
  /**
   * A GKE project's role, settled beside other syncs of the project once the caller has announced its changes
   * (`recordAlongside` with `alone`). Never rejects; the caller runs it however its sync ends.
   */
  afterwards?: () => Promise<{ changed: string[]; problem?: string }>;
}

/** Runs `work` while no other sync of the account runs work of its own (`signal`: that hold was lost). */
export type AccountWork = <T>(work: (signal: AbortSignal) => Promise<T>) => Promise<T>;
/** The ledger keys of a GKE project's clusters, as the cloud lists them now. */
export type ProjectClusters = (signal?: AbortSignal) => Promise<readonly string[]>;

async function handle(
  plan: ClusterGrantPlan,
  grants: AccessGrants,
  sweep: ((plan: ClusterGrantPlan) => boolean) | undefined,
  on: boolean,
  consumers: readonly Consumer[],
  signal: AbortSignal | undefined,
  /** The consumers the configuration wants on the cluster, wherever the hub lets its profiles be written. */
  configured: () => readonly Consumer[] = () => plan.wanted,
): Promise<Outcome> {
  const revoked: Array<HeldGrant & { message: string }> = [];
  for (const grant of plan.revoke) {
    const taken = await grants.revoke(plan, grant, signal);
    if (taken.revoked) revoked.push({ ...grant, message: taken.message });
  }
  const results = new Map<string, GrantResult>();
  for (const consumer of plan.wanted)
    results.set(consumer.name, grantBlocked(plan, consumer) ?? (await grants.ensure(plan, consumer, signal)));
  const outcome: Outcome = { results, revoked };
  if (sweep?.(plan) && grants.sweep) {
    // What carries cpsync's marks and no configured consumer is wanted with here goes.
    // (Any of a wanted consumer's configured identities: one is never wrong where the consumer is wanted.)
    const keep = (consumer: string, identity: string) =>
      on && configured().some((c) => c.name === consumer && Object.values(c.identities).includes(identity));
    const identities = [
      ...new Set([
        ...consumers.flatMap((c) => c.identities[plan.provider] ?? []),
        ...plan.held.map((g) => g.identity),
      ]),
    ];
    try {
      outcome.swept = await grants.sweep(plan, keep, identities, signal);
    } catch {
      outcome.swept = { removed: [], complete: false };
    }
  }
  return outcome;
}

/**
 * Whether nothing is to be done for a cluster's grants but to look again: nothing to revoke, every wanted
 * consumer with an identity held on its configured terms (or let in by a grant cpsync did not make), and
 * each one's last outcome True — as the ledger says.
 */
function settled(plan: ClusterGrantPlan): boolean {
  if (plan.revoke.length > 0) return false;
  return plan.wanted.every((consumer) => {
    const identity = consumer.identities[plan.provider];
    const held = plan.held.find((g) => g.consumer === consumer.name && g.identity === identity);
    if (held && (held.pending || !sameTerms(held, consumer))) return false;
    return own(plan.record?.outcomes, consumer.name)?.status === 'True';
  });
}

/** Whether `record` is of a cluster of `scope` (its provider, account and, for a regional scope, region). */
function inScope(record: GrantRecord, scope: Scope): boolean {
  return (
    record.provider === scope.provider &&
    record.account === scope.account &&
    (scope.region === ALL_REGIONS || record.region === scope.region)
  );
}

const sameRecord = (a: GrantRecord | undefined, b: GrantRecord) => JSON.stringify(a) === JSON.stringify(b);

/**
 * `desired` showing what the hub shows of the grants now (the record, the consumers' conditions): when the
 * ledger cannot be read or written, nothing is done and nothing shown changes (the next run shows the ledger's).
 */
function asShown(desired: readonly ClusterProfile[], current: readonly ClusterProfile[]): ClusterProfile[] {
  const previous = new Map(current.map((p) => [profileKey(p.metadata), p]));
  return desired.map((profile) => {
    const before = previous.get(profileKey(profile.metadata));
    if (!before || !carriesGrants(before)) return profile;
    const record = before.metadata.annotations?.[ANNOTATION_ACCESS_GRANTS];
    const conditions = (before.status?.conditions ?? []).filter((c) =>
      c.type.startsWith(CONSUMER_CONDITION_PREFIX),
    );
    return {
      ...withAnnotations(profile, record !== undefined ? { [ANNOTATION_ACCESS_GRANTS]: record } : {}),
      status: { ...profile.status, conditions: [...(profile.status?.conditions ?? []), ...conditions] },
    };
  });
}

/**
 * The profiles with their clusters' grants: made, checked and revoked through `grants`, and recorded in the
 * ledger (none in a dry run: the actions it would take are listed, and nothing is written).
 */
export async function withGrants(
  desired: readonly ClusterProfile[],
  current: readonly ClusterProfile[],
  input: GrantsInput,
): Promise<Granted> {
  const on = input.options.features.accessGrants;
  const consumers = input.options.consumers ?? [];
  const turningOff = !on && consumers.length > 0;
  const figures: GrantFigures = { granted: 0, revoked: 0, refused: 0, notUsable: 0, actions: [] };
  const problems: string[] = [];
  let records: GrantRecord[] = [];
  if (input.ledger)
    try {
      records = await input.ledger.read(input.scope);
    } catch (error) {
      // Without its record nothing is granted or revoked: what the ledger holds is kept for the next run.
      return {
        profiles: asShown(desired, current),
        figures: {
          ...figures,
          problems: [`cannot read what cpsync granted (its ledger): ${firstLineOf(error, 1000)}`],
        },
      };
    }
  else if (on) problems.push('no ledger is configured: nothing is granted');
  const scoped = records.filter((r) => inScope(r, input.scope));
  const projectRoles = input.project !== undefined && consumers.some((c) => c.identities.gke);
  if (!on && !turningOff && scoped.length === 0 && !current.some(carriesGrants) && !projectRoles)
    return { profiles: [...desired] };

  // The turn-off's scan of cpsync's marks, where the feature has left a trace: the ledger holds something of
  // the account's (a grant, a scan done), or the hub shows a grant. Configured and never on, nothing is scanned.
  const scanning = turningOff && (records.length > 0 || current.some(carriesGrants));
  const byKey = new Map(scoped.map((r) => [ledgerKey(r), r]));
  // Every cluster of the scope is of its account; its region is the cloud's (a profile's labels may spell both
  // otherwise, and a record filed under them would not be read again).
  const placeOf = (key: string): ClusterPlace => {
    const region =
      input.regions?.get(key) ?? (input.scope.region === ALL_REGIONS ? undefined : input.scope.region);
    return { account: input.scope.account, ...(region === undefined ? {} : { region }) };
  };
  const writable = input.writable ?? (() => true);
  const written = desired.filter(writable);
  const configured = on && input.ledger ? consumers : [];
  // Listed clusters this run writes nowhere (every name held by something else) or only into profiles someone is
  // deleting: nothing is granted where cpsync writes no profile.
  const shadows = [
    ...(input.unwritten ?? []),
    ...desired.filter((p) => !writable(p) && !written.some((w) => providerIdOf(w) === providerIdOf(p))),
  ];
  // But what keeps a profile from being written is the hub's state, and the hub never decides what cpsync takes
  // back: a grant the configuration still wants on a cluster, wherever it routes it, on the same terms, stays.
  // Worked out once, and only when something would be taken back or swept.
  let wantedByCluster: Map<string, Consumer[]> | undefined;
  const wantedAnywhere = (providerId: string): Consumer[] =>
    (wantedByCluster ??= new Map(
      planGrants(input.routed?.() ?? [...desired, ...(input.unwritten ?? [])], byKey, configured, {
        placeOf,
      }).map((plan) => [plan.providerId, plan.wanted]),
    )).get(providerId) ?? [];
  const holding = (plan: ClusterGrantPlan): ClusterGrantPlan => {
    if (plan.revoke.length === 0) return plan;
    const wanted = wantedAnywhere(plan.providerId);
    const stillWanted = (grant: HeldGrant) => {
      const consumer = wanted.find((c) => c.name === grant.consumer);
      return consumer?.identities[plan.provider] === grant.identity && sameTerms(grant, consumer);
    };
    return { ...plan, revoke: plan.revoke.filter((grant) => !stillWanted(grant)) };
  };
  const plans = [
    ...planGrants(written, byKey, configured, { everyCluster: scanning, placeOf }),
    ...planGrants(shadows, byKey, [], { everyCluster: scanning, placeOf }).filter(
      (shadow) => !written.some((w) => providerIdOf(w) === shadow.providerId),
    ),
  ].map(holding);
  const previous = new Map(current.map((p) => [profileKey(p.metadata), p]));
  // A scan of cpsync's marks: at turn-off, once per cluster (in its slot); with the feature on, once for a
  // cluster the hub shows grants for that the ledger does not know (a record lost, or written before it).
  const nowMillis = Date.parse(input.now);
  const inSlot = (plan: ClusterGrantPlan) =>
    !input.grants?.pacing || memberDue(plan.providerId, nowMillis, input.grants.pacing);
  const shownBefore = (plan: ClusterGrantPlan) =>
    current.some(
      (p) =>
        providerIdOf(p) === plan.providerId &&
        p.metadata.annotations?.[ANNOTATION_ACCESS_GRANTS] !== undefined,
    );
  const sweepDue = (plan: ClusterGrantPlan) =>
    plan.ready &&
    (scanning ? plan.record?.swept !== true && inSlot(plan) : on && !plan.record && shownBefore(plan));

  const outcomes = new Map<string, Outcome>();
  const after = new Map<string, GrantRecord>();
  /** The records this run wrote ahead, by cluster (the ledger holds them even where it held none before). */
  const writtenAhead = new Map<string, GrantRecord>();
  if (input.dryRun || !input.grants || !input.ledger) {
    for (const plan of plans) {
      for (const grant of plan.revoke)
        if (!grant.pending)
          figures.actions.push({
            action: 'revoke',
            providerId: plan.providerId,
            ...grant,
            message: 'would revoke',
            profile: plan.profile,
          });
      for (const consumer of plan.wanted) {
        const identity = consumer.identities[plan.provider];
        if (
          identity &&
          !plan.held.some((g) => g.consumer === consumer.name && g.identity === identity && !g.pending)
        )
          figures.actions.push({
            action: 'grant',
            providerId: plan.providerId,
            consumer: consumer.name,
            identity,
            level: consumer.level,
            message: 'would grant',
            profile: plan.profile,
          });
      }
    }
  } else {
    const grants = input.grants;
    const ledger = input.ledger;
    // A cluster whose grants all held at the last look is looked at again in its slot (as the member probe
    // paces its reads); one with anything to do, or not yet usable by a consumer, at every sync.
    const due = plans.filter((plan) => !settled(plan) || inSlot(plan) || sweepDue(plan));
    // Written ahead: every grant about to be made is recorded before the cloud is asked.
    // (A scan done since the turn-off stays remembered while it lasts; turned on again, it is forgotten.)
    const keepSwept = (plan: ClusterGrantPlan, record: GrantRecord): GrantRecord =>
      turningOff && plan.record?.swept ? { ...record, swept: true } : record;
    const ahead = due.map((plan) => keepSwept(plan, recordBefore(plan)));
    // Nothing is written ahead for a cluster the ledger knows nothing of and that nothing is about to be made on
    // (one not ready yet): there is nothing a stop halfway could leave unnamed.
    const changed = ahead.filter(
      (record, i) => !sameRecord(due[i]!.record, record) && (due[i]!.record || !emptyRecord(record)),
    );
    for (const record of changed) writtenAhead.set(record.providerId, record);
    try {
      if (changed.length > 0) await ledger.write(changed);
    } catch (error) {
      return {
        profiles: asShown(desired, current),
        figures: {
          ...figures,
          problems: [
            `cannot record grants ahead in cpsync's ledger (nothing was granted): ${firstLineOf(error, 1000)}`,
          ],
        },
      };
    }
    const limit = pLimit(CLUSTERS_AT_ONCE);
    await Promise.all(
      due.map((plan, i) =>
        limit(async () => {
          const outcome = await handle(plan, grants, sweepDue, on, consumers, input.signal, () =>
            wantedAnywhere(plan.providerId),
          );
          outcomes.set(plan.providerId, outcome);
          const record = keepSwept(plan, recordAfter(plan, outcome, ahead[i]));
          if (outcome.swept?.complete && !on) record.swept = true;
          // A member that cannot be reached at all, of which the ledger names nothing: taken as holding nothing
          // of cpsync's (named in the run's figures), so that it does not hold the turn-off for ever.
          else if (outcome.swept?.unreachable && !on && record.grants.length === 0) {
            record.swept = true;
            (figures.unreachedScans ??= []).push(plan.profile.metadata.name);
          }
          after.set(plan.providerId, record);
        }),
      ),
    );
    for (const plan of plans) {
      const outcome = outcomes.get(plan.providerId);
      if (!outcome) continue;
      for (const grant of [...outcome.revoked, ...(outcome.swept?.removed ?? [])]) {
        if (grant.pending) continue;
        figures.revoked++;
        figures.actions.push({
          action: 'revoke',
          providerId: plan.providerId,
          consumer: grant.consumer,
          identity: grant.identity,
          message: grant.message,
          profile: plan.profile,
        });
      }
      // A scan that could not look everywhere (a member out of reach) is made again at the next look: until
      // then the feature reads turning-off (`remaining`), which names no problem of the run.
      for (const [consumer, result] of outcome.results) {
        const wanted = plan.wanted.find((c) => c.name === consumer)!;
        const before = plan.held.find(
          (g) => g.consumer === consumer && g.identity === result.held && !g.pending,
        );
        const revokedFirst = outcome.revoked.some(
          (g) => g.consumer === consumer && g.identity === result.held,
        );
        // Announced when made, and when made again on other terms (a level or member namespaces changed).
        if (result.held && (!before || revokedFirst || !sameTerms(before, wanted))) {
          figures.granted++;
          figures.actions.push({
            action: 'grant',
            providerId: plan.providerId,
            consumer,
            identity: result.held,
            level: wanted.level,
            message: result.message,
            profile: plan.profile,
          });
        }
        if (result.reason === GrantReason.Refused) figures.refused++;
        else if (result.status === 'False') figures.notUsable++;
      }
    }
  }

  // The ledger after this run: what was done, and the records of clusters the listing did not hold.
  const stored: GrantRecord[] = [];
  const removed: GrantRecord[] = [];
  for (const plan of plans) {
    const record = after.get(plan.providerId);
    if (!record || (sameRecord(plan.record, record) && !writtenAhead.has(plan.providerId))) continue;
    if (emptyRecord(record)) {
      if (plan.record || writtenAhead.has(plan.providerId)) removed.push(record);
    } else stored.push(record);
  }
  // The ids as the hub spelled them may differ from the ledger's in ASCII case (Azure): one cluster either way.
  const confirmedGone = [...(input.confirmedGone ?? [])];
  // The clusters this run looked at, by ledger key: a record of one is this run's, whatever the spelling of its id.
  const looked = new Set(plans.filter((plan) => after.has(plan.providerId)).map((plan) => ledgerKey(plan)));
  for (const record of scoped) {
    const key = ledgerKey(record);
    if (confirmedGone.some((id) => sameProviderId(record.provider, id, record.providerId)))
      removed.push(record);
    else if (!on && !turningOff && record.grants.length === 0 && !looked.has(key))
      removed.push(record); // the turn-off is over: what each scan found is no longer needed
    else if (input.listed.has(key)) {
      if (record.missed && !looked.has(key)) stored.push({ ...record, missed: 0 });
    } else if (input.complete) {
      // Not listed by a complete listing: the cluster went (its grants with it) once the grace is over.
      const missed = (record.missed ?? 0) + 1;
      if (missed >= input.options.deletionGraceListings) removed.push(record);
      else stored.push({ ...record, missed });
    }
  }
  let recorded =
    !input.dryRun && input.ledger && (stored.length > 0 || removed.length > 0)
      ? input.ledger.write(stored, removed).then(
          () => undefined,
          (error: unknown) =>
            `cannot record in cpsync's ledger what this run granted: ${firstLineOf(error, 1000)}`,
        )
      : undefined;
  const final = new Map(records.map((r) => [ledgerKey(r), r]));
  for (const record of stored) final.set(ledgerKey(record), record);
  for (const record of removed) final.delete(ledgerKey(record));

  const byCluster = new Map(plans.map((plan) => [plan.providerId, plan]));
  const profiles = desired.map((profile) => {
    const plan = byCluster.get(providerIdOf(profile) ?? '');
    if (!plan || !writable(profile)) return profile;
    const record = after.get(plan.providerId) ?? plan.record ?? recordAfter(plan, undefined);
    return showGrants(profile, plan, record, previous.get(profileKey(profile.metadata)), input.now);
  });
  // What the feature still holds in the scope that no profile shows: clusters not yet scanned at turn-off, and
  // grants recorded for clusters this run writes no profile of.
  const shown = new Set(profiles.filter(carriesGrants).map((p) => providerIdOf(p)));
  const unswept = scanning
    ? plans.filter((plan) => input.listed.has(ledgerKey(plan)) && final.get(ledgerKey(plan))?.swept !== true)
    : [];
  const unshown = [...final.values()].filter(
    (r) => inScope(r, input.scope) && r.grants.length > 0 && !shown.has(r.providerId),
  );
  const remaining = new Set([...unswept.map((p) => p.providerId), ...unshown.map((r) => r.providerId)]).size;
  if (remaining > 0) figures.remaining = remaining;
  // Beside other syncs of the project (`alone`), a sync that took nothing out of the ledger leaves the role to the
  // syncs that did: a grant it made already holds the role (the grant's own step adds its identity). One whose
  // grant was refused settles it all the same, so that what the project refuses is named among its problems.
  // Only a record that named a grant (held, or written ahead) can take anything out of the role.
  const named = new Map(scoped.map((r) => [ledgerKey(r), r.grants.length > 0]));
  for (const record of writtenAhead.values())
    if (record.grants.length > 0) named.set(ledgerKey(record), true);
  const shrank =
    figures.revoked > 0 ||
    removed.some((r) => named.get(ledgerKey(r)) === true) ||
    !on ||
    figures.refused > 0;
  const settling =
    input.project !== undefined &&
    input.grants?.settleProjectRoles &&
    !input.dryRun &&
    input.ledger &&
    (!input.alone || shrank);
  // Beside other syncs of the project, where the caller writes the record beside the hub's writes, the role is
  // settled once the sync's changes are announced (`afterwards`): its wait for the project's turn holds up no
  // profile and no event.
  const deferred = settling && input.alone !== undefined && input.recordAlongside === true;
  // The project's role is settled from the ledger as this run leaves it: the record is written first.
  if (recorded && ((settling && !deferred) || !input.recordAlongside)) {
    const problem = await recorded;
    if (problem) problems.push(problem);
    recorded = undefined;
  }
  let afterwards: Granted['afterwards'];
  if (settling && input.project !== undefined && input.grants) {
    const [project, port, written] = [input.project, input.grants, recorded];
    const settle = async () => {
      await written;
      return settleProject(project, port, final, input, on);
    };
    if (deferred) afterwards = settle;
    else {
      const settledProject = await settle();
      if (settledProject.changed.length > 0) figures.projectRoles = settledProject.changed;
      if (settledProject.problem) problems.push(settledProject.problem);
    }
  }
  if (problems.length > 0) figures.problems = problems;
  const later = { ...(recorded ? { recorded } : {}), ...(afterwards ? { afterwards } : {}) };
  // Nothing held, nothing done: the feature did nothing to report.
  if (!on && plans.length === 0 && !figures.projectRoles && !figures.problems && !figures.remaining)
    return { profiles, ...later };
  return { profiles, figures, ...later };
}

/**
 * Who holds a GKE project's cloud role: every identity a grant of cpsync's on one of the project's clusters
 * is recorded for in the ledger — and only while that consumer is configured with that identity and the
 * feature is on. The role is then made exactly that (cpsync's own bindings only). A grant recorded ahead and not
 * yet known to be made counts only while other syncs of the project may be making it (`alone`); a whole run
 * of the project, which nothing runs beside, finds such a grant left by a sync that stopped.
 *
 * Beside other syncs of the project, the ledger is read after each reading of the project's policy, not before
 * it: another cluster's grant adds its identity to the role outside the project's turn, after recording it
 * ahead. Added before the policy was read, it is in the ledger read after; added after, the policy's write
 * (with the etag it read) fails and both are read again. Read the other way round, a grant recorded and added
 * between the two readings would be taken out of the role it had just been given. The ledger's records are read
 * with those of every cluster the cloud lists in the project now, by key (`projectClusters`): a ledger whose index
 * lags its writes (DynamoDB's) may not show a record just written. A grant recorded after the holders were read,
 * whose identity was there already, changes no etag: the port reads again after a write that took one out.
 */
async function settleProject(
  project: string,
  grants: AccessGrants,
  records: ReadonlyMap<string, GrantRecord>,
  input: GrantsInput,
  on: boolean,
): Promise<{ changed: string[]; problem?: string }> {
  const holdersOf = (from: Iterable<GrantRecord>, inFlight: boolean): RoleHolders => {
    const holders = new Map<string, Set<string>>();
    if (!on) return holders;
    for (const record of from) {
      if (record.provider !== 'gke' || record.account !== project) continue;
      for (const grant of record.grants) {
        const configured = input.options.consumers?.find((c) => c.name === grant.consumer);
        if ((grant.pending && !inFlight) || configured?.identities.gke !== grant.identity) continue;
        holders.set(grant.consumer, (holders.get(grant.consumer) ?? new Set()).add(grant.identity));
      }
    }
    return holders;
  };
  const settle = async (holders: () => Promise<RoleHolders>, signal?: AbortSignal) => {
    try {
      return { changed: await grants.settleProjectRoles!(project, holders, signal) };
    } catch (error) {
      return { changed: [], problem: cannotSettle(project, error) };
    }
  };
  if (input.alone && input.ledger) {
    const ledger = input.ledger;
    const listed = input.projectClusters;
    try {
      return await input.alone((lease) => {
        const signal = AbortSignal.any([lease, ...(input.signal ? [input.signal] : [])]);
        const fresh = async () => {
          // With the feature off nothing holds the role: nothing to read.
          if (!on) return holdersOf([], true);
          const clusters = listed ? await listed(signal) : undefined;
          return holdersOf(await ledger.read({ provider: 'gke', account: project }, clusters), true);
        };
        return settle(fresh, signal);
      });
    } catch (error) {
      return { changed: [], problem: cannotSettle(project, error) };
    }
  }
  return settle(async () => holdersOf(records.values(), false), input.signal);
}

/** The problem a project whose cloud role could not be settled is named by. */
function cannotSettle(project: string, error: unknown): string {
  return `cannot settle project ${project}'s cloud role for consumers: ${firstLineOf(error, 1000)}`;
}
