/**
 * The `accessGrants` step of a scope's sync: for every cluster of the listing, the grants its consumers
 * should hold are made true and checked, and what cpsync holds but should not is revoked, before the plan,
 * so that the profiles carry the outcome (the record, each consumer's condition). It runs while the feature
 * is on, and while it is off for as long as a profile still records a grant (the clean turn-off).
 */
import pLimit from 'p-limit';
import { firstLineOf } from '../domain/errors.ts';
import {
  applyGrantOutcome,
  carriesGrants,
  consumerCondition,
  grantBlocked,
  heldGrants,
  sameTerms,
  planGrants,
  GrantReason,
  type AccessLevel,
  type ClusterGrantOutcome,
  type ClusterGrantPlan,
  type GrantResult,
  type HeldGrant,
} from '../domain/grants.ts';
import { memberDue, providerIdOf } from '../domain/member.ts';
import { profileKey, type ClusterProfile } from '../domain/model/clusterProfile.ts';
import type { InventoryOptions } from '../domain/options.ts';
import type { AccessGrants } from './ports.ts';

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
}

async function handle(
  plan: ClusterGrantPlan,
  grants: AccessGrants,
  signal: AbortSignal | undefined,
): Promise<ClusterGrantOutcome & { revoked: Array<HeldGrant & { message: string }> }> {
  const revoked: Array<HeldGrant & { message: string }> = [];
  for (const grant of plan.revoke) {
    const taken = await grants.revoke(plan, grant, signal);
    if (taken.revoked) revoked.push({ ...grant, message: taken.message });
  }
  const results = new Map<string, GrantResult>();
  for (const consumer of plan.wanted)
    results.set(consumer.name, grantBlocked(plan, consumer) ?? (await grants.ensure(plan, consumer, signal)));
  return { results, revoked };
}

/**
 * Whether nothing is to be done for a cluster's grants but to look again: nothing to revoke, every wanted
 * consumer with an identity held as it is configured (or let in by a grant cpsync did not make), and each
 * consumer's condition True on the cluster's profiles in its namespaces as the hub holds them.
 */
function settled(
  plan: ClusterGrantPlan,
  desired: readonly ClusterProfile[],
  previous: ReadonlyMap<string, ClusterProfile>,
): boolean {
  if (plan.revoke.length > 0) return false;
  const profiles = desired.filter((p) => providerIdOf(p) === plan.providerId);
  // A grant held on other terms (a level or member namespaces changed) is to be made again now.
  const changed = plan.wanted.some((consumer) => {
    const held = plan.held.find((g) => g.consumer === consumer.name);
    return held !== undefined && !sameTerms(held, consumer);
  });
  if (changed) return false;
  return plan.wanted.every((consumer) =>
    profiles
      .filter((p) => consumer.namespaces.includes(p.metadata.namespace))
      .every(
        (p) =>
          previous
            .get(profileKey(p.metadata))
            ?.status?.conditions?.find((c) => c.type === consumerCondition(consumer.name))?.status === 'True',
      ),
  );
}

/**
 * The profiles with their clusters' grants: made, checked and revoked through `grants` (none in a dry run:
 * the actions it would take are listed, and what the hub holds stays).
 */
export async function withGrants(
  desired: readonly ClusterProfile[],
  current: readonly ClusterProfile[],
  input: {
    options: InventoryOptions;
    grants?: AccessGrants;
    dryRun?: boolean;
    now: string;
    signal?: AbortSignal;
    /**
     * The GKE project the scope is whole for (every region): its cloud role for consumers is settled from
     * the grants its profiles record. Unset for a narrower scope, which cannot see every holder.
     */
    project?: string;
  },
): Promise<{ profiles: ClusterProfile[]; figures?: GrantFigures }> {
  const on = input.options.features.accessGrants;
  // A GKE project's cloud role outlives the records of one run: it is settled while consumers are configured.
  const projectRoles =
    input.project !== undefined && (input.options.consumers ?? []).some((c) => c.identities.gke);
  if (!on && !current.some(carriesGrants) && !projectRoles) return { profiles: [...desired] };
  const plans = planGrants(desired, current, on ? (input.options.consumers ?? []) : []);
  // The profiles as the hub holds them, by namespace/name.
  const previous = new Map(current.map((p) => [profileKey(p.metadata), p]));
  const figures: GrantFigures = { granted: 0, revoked: 0, refused: 0, notUsable: 0, actions: [] };
  const outcomes = new Map<
    string,
    ClusterGrantOutcome & { revoked: Array<HeldGrant & { message: string }> }
  >();
  if (input.dryRun || !input.grants) {
    for (const plan of plans) {
      for (const grant of plan.revoke)
        figures.actions.push({
          action: 'revoke',
          providerId: plan.providerId,
          ...grant,
          message: 'would revoke',
          profile: plan.profile,
        });
      for (const consumer of plan.wanted) {
        const identity = consumer.identities[plan.provider];
        if (identity && !plan.held.some((g) => g.consumer === consumer.name && g.identity === identity))
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
    const limit = pLimit(CLUSTERS_AT_ONCE);
    // A cluster whose grants all held at the last look is looked at again in its slot (as the member probe
    // paces its reads); one with anything to do, or not yet usable by a consumer, at every sync.
    const due = (plan: ClusterGrantPlan) =>
      !grants.pacing ||
      !settled(plan, desired, previous) ||
      memberDue(plan.providerId, Date.parse(input.now), grants.pacing);
    await Promise.all(
      plans
        .filter(due)
        .map((plan) =>
          limit(async () => outcomes.set(plan.providerId, await handle(plan, grants, input.signal))),
        ),
    );
    for (const plan of plans) {
      const outcome = outcomes.get(plan.providerId);
      if (!outcome) continue;
      for (const grant of outcome.revoked) {
        figures.revoked++;
        figures.actions.push({
          action: 'revoke',
          providerId: plan.providerId,
          ...grant,
          profile: plan.profile,
        });
      }
      for (const [consumer, result] of outcome.results) {
        const before = plan.held.find((g) => g.consumer === consumer);
        const revokedFirst = outcome.revoked.some((g) => g.consumer === consumer);
        const wanted = plan.wanted.find((c) => c.name === consumer)!;
        // Announced when made, and when made again on other terms (a level or member namespaces changed).
        const changed = before !== undefined && !sameTerms(before, wanted);
        if (result.held && (before?.identity !== result.held || revokedFirst || changed)) {
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
  const byCluster = new Map(plans.map((plan) => [plan.providerId, plan]));
  const profiles = desired.map((profile) => {
    const plan = byCluster.get(providerIdOf(profile) ?? '');
    return plan
      ? applyGrantOutcome(
          profile,
          plan,
          outcomes.get(plan.providerId),
          previous.get(profileKey(profile.metadata)),
          input.now,
        )
      : profile;
  });
  if (input.project !== undefined && input.grants?.settleProjectRoles && !input.dryRun) {
    const settled = await settleProject(input.project, input.grants, profiles, current, input.signal);
    if (settled.changed.length > 0) figures.projectRoles = settled.changed;
    if (settled.problem) figures.problems = [settled.problem];
  }
  // Turned off with nothing left to take back: the feature did nothing to report.
  if (!on && plans.length === 0 && !figures.projectRoles && !figures.problems) return { profiles };
  return { profiles, figures };
}

/**
 * Who holds a GKE project's cloud role: every consumer identity a grant of cpsync's on one of the project's
 * clusters is recorded for, on the profiles as this run leaves them, and on those of clusters this run did not
 * list (kept until their profiles go). The role is then made exactly that.
 */
async function settleProject(
  project: string,
  grants: AccessGrants,
  after: readonly ClusterProfile[],
  current: readonly ClusterProfile[],
  signal: AbortSignal | undefined,
): Promise<{ changed: string[]; problem?: string }> {
  const listed = new Set(after.map(providerIdOf));
  const holders = new Map<string, Set<string>>();
  for (const profile of [...after, ...current.filter((p) => !listed.has(providerIdOf(p)))])
    for (const grant of heldGrants(profile)) {
      const identities = holders.get(grant.consumer) ?? new Set<string>();
      identities.add(grant.identity);
      holders.set(grant.consumer, identities);
    }
  try {
    return { changed: await grants.settleProjectRoles!(project, holders, signal) };
  } catch (error) {
    return {
      changed: [],
      problem: `cannot settle project ${project}'s cloud role for consumers: ${firstLineOf(error, 1000)}`,
    };
  }
}
