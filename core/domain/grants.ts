/**
 * Consumer access grants (the `accessGrants` feature): who may reach the clusters of an inventory
 * namespace, decided by the configuration alone. A consumer bound to a namespace is granted its level
 * on every cluster profiled or projected there; what cpsync granted is recorded on the cluster's profiles
 * (the `cpsync.io/access-grants` annotation: consumer → the identity granted), so that exactly those grants
 * are revoked when the cluster leaves the consumer's namespaces, the consumer leaves the configuration or
 * the feature is turned off. Whether each consumer can reach the cluster is one condition per consumer,
 * `consumers.cpsync.io/<name>`, on the profiles in that consumer's namespaces.
 *
 * This module plans and records; the grants themselves are made by the AccessGrants port (adapters/grants/).
 */
import {
  ANNOTATION_ACCESS_GRANTS,
  CONDITION_CONTROL_PLANE_HEALTHY,
  CONDITION_MESSAGE_MAX_LENGTH,
  CONSUMER_CONDITION_PREFIX,
  HealthReason,
} from './constants.ts';
import type { ClusterProfile, Condition } from './model/clusterProfile.ts';
import type { Provider } from './model/observedCluster.ts';
import { providerIdOf } from './member.ts';
import { LABEL_PROVIDER } from './constants.ts';

/** The levels a consumer can be given: nothing else can be granted. */
export const ACCESS_LEVELS = ['view', 'edit', 'admin'] as const;
export type AccessLevel = (typeof ACCESS_LEVELS)[number];

/** What each level is on each cloud. */
export const EKS_ACCESS_POLICIES: Readonly<Record<AccessLevel, string>> = {
  view: 'arn:aws:eks::aws:cluster-access-policy/AmazonEKSViewPolicy',
  edit: 'arn:aws:eks::aws:cluster-access-policy/AmazonEKSEditPolicy',
  admin: 'arn:aws:eks::aws:cluster-access-policy/AmazonEKSAdminPolicy',
};
/** The Kubernetes user-facing ClusterRoles each level binds (GKE, AKS). */
export const KUBERNETES_CLUSTER_ROLES: Readonly<Record<AccessLevel, string>> = {
  view: 'view',
  edit: 'edit',
  admin: 'admin',
};
/** The one permission that shows a level is in force (asked of the member's authorizer). */
export const LEVEL_PROOF: Readonly<
  Record<AccessLevel, { verb: string; group: string; resource: string; namespace: string }>
> = {
  view: { verb: 'list', group: '', resource: 'configmaps', namespace: 'default' },
  edit: { verb: 'create', group: '', resource: 'configmaps', namespace: 'default' },
  admin: {
    verb: 'create',
    group: 'rbac.authorization.k8s.io',
    resource: 'rolebindings',
    namespace: 'default',
  },
};

/** A consumer of the inventory, from the configuration's `consumers:` section. */
export interface Consumer {
  /** A DNS label: the condition type's name and the mark on what cpsync grants. */
  name: string;
  /** The inventory namespaces it reads: it is granted the clusters profiled or projected there. */
  namespaces: readonly string[];
  level: AccessLevel;
  /** Its identity on each cloud (EKS: an IAM role ARN; GKE: a Google principal; AKS: an Entra object id). */
  identities: Partial<Record<Provider, string>>;
  /** The member namespaces it is granted in; unset, the whole cluster. */
  memberNamespaces?: readonly string[];
}

/** One grant cpsync holds: the consumer's name, the identity it was granted to, and on what terms. */
export interface HeldGrant {
  consumer: string;
  identity: string;
  /** The level and member namespaces it was made with (a record without them: unknown). */
  level?: AccessLevel;
  memberNamespaces?: readonly string[];
}

/** Whether a held grant is on the terms `consumer` is configured with now. */
export function sameTerms(grant: HeldGrant, consumer: Consumer): boolean {
  const wanted = consumer.memberNamespaces ? [...consumer.memberNamespaces].sort() : undefined;
  const held = grant.memberNamespaces ? [...grant.memberNamespaces].sort() : undefined;
  return grant.level === consumer.level && JSON.stringify(held) === JSON.stringify(wanted);
}

/** The consumers' conditions' reasons. */
export const GrantReason = {
  /** The member's authorizer (or, for EKS, the cluster's access entry) lets the consumer in. */
  Granted: 'Granted',
  /** Allowed through a grant cpsync did not make (it is left as it is). */
  GrantedElsewhere: 'GrantedElsewhere',
  /** Granted, but the member's authorizer does not (yet) let the consumer do what its level allows. */
  NotAllowed: 'NotAllowed',
  /** The cloud refused cpsync's grant (AccessDenied and the like). */
  Refused: 'Refused',
  /** The member could not be reached to grant or to check. */
  MemberUnreachable: 'MemberUnreachable',
  /** The cluster is not ready for grants yet (creating, updating): granted once it is. */
  ClusterNotReady: 'ClusterNotReady',
  /** The consumer has no identity for this cluster's cloud. */
  NoIdentity: 'NoIdentity',
  /** A member namespace the consumer is to be granted in does not exist on the member. */
  NamespaceMissing: 'NamespaceMissing',
} as const;

/** What the port reports for one consumer on one cluster. */
export interface GrantResult {
  /** The identity cpsync's own grant is now for (it made or found its own), else none. */
  held?: string;
  status: 'True' | 'False';
  reason: string;
  message: string;
}

/** What cpsync has granted on a cluster, as its profile records it (unreadable: nothing). */
export function heldGrants(profile: ClusterProfile | undefined): HeldGrant[] {
  const text = profile?.metadata.annotations?.[ANNOTATION_ACCESS_GRANTS];
  if (!text) return [];
  try {
    const record = JSON.parse(text) as unknown;
    if (typeof record !== 'object' || record === null || Array.isArray(record)) return [];
    const grants: HeldGrant[] = [];
    for (const [consumer, value] of Object.entries(record)) {
      // { identity, level, memberNamespaces? }; a bare identity is a grant on unknown terms.
      const entry = (typeof value === 'string' ? { identity: value } : value) as Record<string, unknown>;
      if (
        typeof entry !== 'object' ||
        entry === null ||
        typeof entry.identity !== 'string' ||
        !entry.identity
      )
        continue;
      const level = (ACCESS_LEVELS as readonly unknown[]).includes(entry.level)
        ? (entry.level as AccessLevel)
        : undefined;
      const namespaces = Array.isArray(entry.memberNamespaces)
        ? entry.memberNamespaces.filter((n): n is string => typeof n === 'string')
        : undefined;
      grants.push({
        consumer,
        identity: entry.identity,
        ...(level ? { level } : {}),
        ...(namespaces ? { memberNamespaces: namespaces } : {}),
      });
    }
    return grants.sort((a, b) => a.consumer.localeCompare(b.consumer));
  } catch {
    return [];
  }
}

/** Whether a profile carries anything the feature wrote. */
export function carriesGrants(profile: ClusterProfile): boolean {
  return (
    profile.metadata.annotations?.[ANNOTATION_ACCESS_GRANTS] !== undefined ||
    (profile.status?.conditions ?? []).some((c) => c.type.startsWith(CONSUMER_CONDITION_PREFIX))
  );
}

/** A consumer's condition type. */
export const consumerCondition = (name: string) => `${CONSUMER_CONDITION_PREFIX}${name}`;

/** One cluster's grants this run. */
export interface ClusterGrantPlan {
  providerId: string;
  provider: Provider;
  /** A profile of the cluster (the access cpsync reaches the member with). */
  profile: ClusterProfile;
  /** Whether grants can be made now (the control plane is running). */
  ready: boolean;
  /** The consumers bound to one of the cluster's namespaces. */
  wanted: Consumer[];
  /** What cpsync holds on the cluster now. */
  held: HeldGrant[];
  /** What cpsync holds and must take back: the consumer is no longer wanted, or its identity changed. */
  revoke: HeldGrant[];
}

/** Whether the cluster's control plane is running (grants are made on a running cluster only). */
function ready(profile: ClusterProfile): boolean {
  const health = profile.status?.conditions?.find((c) => c.type === CONDITION_CONTROL_PLANE_HEALTHY);
  return health?.status === 'True' || health?.reason === HealthReason.HealthIssues;
}

/**
 * The grants of every cluster among `desired`: for each, the consumers bound to a namespace it is
 * profiled in (none while the feature is off), what the hub's profiles (`current`) record as held, and
 * what of that must be revoked.
 */
export function planGrants(
  desired: readonly ClusterProfile[],
  current: readonly ClusterProfile[],
  consumers: readonly Consumer[],
): ClusterGrantPlan[] {
  const byCluster = new Map<string, ClusterProfile[]>();
  for (const profile of desired) {
    const id = providerIdOf(profile);
    if (id === undefined) continue;
    const list = byCluster.get(id);
    if (list) list.push(profile);
    else byCluster.set(id, [profile]);
  }
  const heldBy = new Map<string, Map<string, HeldGrant>>();
  for (const profile of current) {
    const id = providerIdOf(profile);
    if (id === undefined) continue;
    const held = heldBy.get(id) ?? new Map<string, HeldGrant>();
    for (const grant of heldGrants(profile)) held.set(grant.consumer, grant);
    heldBy.set(id, held);
  }
  const plans: ClusterGrantPlan[] = [];
  for (const [providerId, profiles] of byCluster) {
    const first = profiles[0]!;
    const provider = first.metadata.labels?.[LABEL_PROVIDER] as Provider;
    const namespaces = new Set(profiles.map((p) => p.metadata.namespace));
    const wanted = consumers.filter((c) => c.namespaces.some((ns) => namespaces.has(ns)));
    const held = [...(heldBy.get(providerId) ?? new Map<string, HeldGrant>()).values()].sort((a, b) =>
      a.consumer.localeCompare(b.consumer),
    );
    const revoke = held.filter(
      (grant) => wanted.find((c) => c.name === grant.consumer)?.identities[provider] !== grant.identity,
    );
    if (wanted.length === 0 && held.length === 0) continue;
    plans.push({ providerId, provider, profile: first, ready: ready(first), wanted, held, revoke });
  }
  return plans;
}

/** What became of one cluster's grants: the results per wanted consumer and the grants revoked. */
export interface ClusterGrantOutcome {
  results: ReadonlyMap<string, GrantResult>;
  /** Held grants that were revoked (or found gone). */
  revoked: readonly HeldGrant[];
}

/**
 * `profile` with what the grants of its cluster came to: the annotation records what cpsync now holds
 * (what it held, less what it revoked, with what it made), and each consumer bound to the profile's
 * namespace has its condition (kept with its time while it says the same). Conditions of consumers no
 * longer bound there go. Without an outcome (a dry run, a cluster not handled) what the hub holds stays.
 */
export function applyGrantOutcome(
  profile: ClusterProfile,
  plan: ClusterGrantPlan,
  outcome: ClusterGrantOutcome | undefined,
  previous: ClusterProfile | undefined,
  now: string,
): ClusterProfile {
  const held = new Map(plan.held.map((g) => [g.consumer, g]));
  if (outcome) {
    // A revoked grant is no longer held; a grant that could not be made or checked keeps its record (a later
    // revocation finds out whether anything of cpsync's is there). A grant made or kept is recorded on the
    // terms it now has.
    for (const grant of outcome.revoked) held.delete(grant.consumer);
    for (const [name, result] of outcome.results) {
      const consumer = plan.wanted.find((c) => c.name === name);
      if (result.held && consumer)
        held.set(name, {
          consumer: name,
          identity: result.held,
          level: consumer.level,
          ...(consumer.memberNamespaces ? { memberNamespaces: [...consumer.memberNamespaces].sort() } : {}),
        });
    }
  }
  const annotations = { ...profile.metadata.annotations };
  if (held.size > 0)
    annotations[ANNOTATION_ACCESS_GRANTS] = JSON.stringify(
      Object.fromEntries(
        [...held.values()]
          .sort((a, b) => a.consumer.localeCompare(b.consumer))
          .map((g) => [
            g.consumer,
            g.level
              ? {
                  identity: g.identity,
                  level: g.level,
                  ...(g.memberNamespaces ? { memberNamespaces: g.memberNamespaces } : {}),
                }
              : g.identity,
          ]),
      ),
    );
  else delete annotations[ANNOTATION_ACCESS_GRANTS];

  const mine = plan.wanted.filter((c) => c.namespaces.includes(profile.metadata.namespace));
  const before = (previous?.status?.conditions ?? []).filter((c) =>
    c.type.startsWith(CONSUMER_CONDITION_PREFIX),
  );
  const conditions: Condition[] = [];
  for (const consumer of mine) {
    const type = consumerCondition(consumer.name);
    const result = outcome?.results.get(consumer.name);
    const old = before.find((c) => c.type === type);
    if (!result) {
      if (old) conditions.push(old);
      continue;
    }
    const message = result.message.slice(0, CONDITION_MESSAGE_MAX_LENGTH);
    const same =
      old && old.status === result.status && old.reason === result.reason && old.message === message;
    conditions.push(
      same ? old : { type, status: result.status, reason: result.reason, message, lastTransitionTime: now },
    );
  }
  const others = (profile.status?.conditions ?? []).filter(
    (c) => !c.type.startsWith(CONSUMER_CONDITION_PREFIX),
  );
  return {
    ...profile,
    metadata: { ...profile.metadata, annotations },
    status: {
      ...profile.status,
      conditions: [...others, ...conditions.sort((a, b) => a.type.localeCompare(b.type))],
    },
  } as ClusterProfile;
}

/** Why a consumer cannot be granted on a cluster before anything is asked of the cloud, if it cannot. */
export function grantBlocked(plan: ClusterGrantPlan, consumer: Consumer): GrantResult | undefined {
  if (consumer.identities[plan.provider] === undefined)
    return {
      status: 'False',
      reason: GrantReason.NoIdentity,
      message: `consumer ${consumer.name} has no ${plan.provider} identity in the configuration`,
    };
  if (!plan.ready)
    return {
      status: 'False',
      reason: GrantReason.ClusterNotReady,
      message: 'the cluster is not running yet; it is granted once it is',
    };
  return undefined;
}
