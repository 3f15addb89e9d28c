/**
 * Consumer access grants (the `accessGrants` feature): who may reach the clusters of an inventory
 * namespace, decided by the configuration alone. A consumer bound to a namespace is granted its level
 * on every cluster whose profile cpsync writes there. What cpsync granted is recorded in its ledger, a store
 * only cpsync writes (a DynamoDB table the stack owns; locally, the state directory beside the outbox), so
 * that exactly those grants are revoked when the cluster leaves the consumer's namespaces, the consumer leaves
 * the configuration or the feature is turned off — whatever anyone writes on the hub. The hub shows the record
 * (the `cpsync.io/access-grants` annotation: consumer → the identity granted) and one condition per consumer,
 * `consumers.cpsync.io/<name>`, on the profiles in that consumer's namespaces; neither is ever read back.
 *
 * This module plans and records; the grants themselves are made by the AccessGrants port (adapters/grants/).
 * One file because the plan, the record written ahead, the record after the look and what the hub shows are
 * one rule seen four times: what the ledger names, and when it may stop naming it.
 */
import {
  ANNOTATION_ACCESS_GRANTS,
  CONDITION_CONTROL_PLANE_HEALTHY,
  CONDITION_MESSAGE_MAX_LENGTH,
  CONSUMER_CONDITION_PREFIX,
  HealthReason,
} from './constants.ts';
import type { ClusterProfile, Condition } from './model/clusterProfile.ts';
import { PROVIDERS, type Provider } from './model/observedCluster.ts';
import { providerIdOf } from './member.ts';
import { LABEL_PROVIDER, LABEL_REGION, LABEL_ACCOUNT } from './constants.ts';
import { canonicalProviderId, legacyCanonicalProviderIds } from './naming.ts';
import { cut } from './text.ts';
import { own } from './own.ts';

/** The levels a consumer can be given: nothing else can be granted. */
export const ACCESS_LEVELS = ['view', 'edit', 'admin'] as const;
export type AccessLevel = (typeof ACCESS_LEVELS)[number];

/** What each level is on each cloud: on EKS, the name of an access policy AWS manages. */
const EKS_ACCESS_POLICY_NAMES: Readonly<Record<AccessLevel, string>> = {
  view: 'AmazonEKSViewPolicy',
  edit: 'AmazonEKSEditPolicy',
  admin: 'AmazonEKSAdminPolicy',
};

/**
 * The ARN of `level`'s EKS access policy in `partition` (`aws`, `aws-cn`, `aws-us-gov`, …): the cluster's own, as
 * its ARN names it; EKS knows a partition's policies only by that partition's ARNs.
 */
export function eksAccessPolicyArn(partition: string, level: AccessLevel): string {
  return `arn:${partition}:eks::aws:cluster-access-policy/${EKS_ACCESS_POLICY_NAMES[level]}`;
}
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
  /**
   * Recorded before it was asked of the cloud, and not yet known to be made (the run stopped, or the cloud
   * could not be reached): revoked like any other, but not yet announced.
   */
  pending?: true;
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
  /**
   * Nothing of cpsync's that can give the identity access may be there after this look: no write that could
   * give it was done (none sent, each refused or never reaching its server) and none of cpsync's was found.
   * Only then is a grant recorded ahead for this look dropped; whatever else the result says (refused, granted
   * through what cpsync did not make, unreachable), without it the record keeps naming what may be there.
   */
  untouched?: true;
}

/** A consumer's outcome at the last look, as the ledger keeps it (the condition shown, and the pacing). */
export type GrantOutcomeRecord = Pick<GrantResult, 'status' | 'reason' | 'message'>;

/**
 * What cpsync holds on one cluster, as its ledger keeps it: never read from the hub. The ledger is the only
 * authority for what cpsync must take back.
 */
export interface GrantRecord {
  /** The cluster's provider id, as its cloud spells it. */
  providerId: string;
  provider: Provider;
  /** The account, project or subscription, and the region, of the scope that lists the cluster. */
  account: string;
  region: string;
  /** The grants cpsync made (or was about to make: `pending`) on the cluster, by consumer. */
  grants: HeldGrant[];
  /** Each wanted consumer's outcome at the last look. */
  outcomes?: Record<string, GrantOutcomeRecord>;
  /** Complete listings of the cluster's scope in a row that did not list it: the record goes with the cluster. */
  missed?: number;
  /** Scanned for cpsync's marks since the feature was turned off, and nothing of cpsync's was left. */
  swept?: true;
}

/** Keys earlier versions kept a cluster's record under, where they differ from `ledgerKey` (see naming.ts). */
export function legacyLedgerKeys(record: Pick<GrantRecord, 'provider' | 'providerId'>): string[] {
  return legacyCanonicalProviderIds(record);
}

/**
 * Whether `kept`, found under a key an earlier version used for `record`'s cluster (`legacyLedgerKeys`), is that
 * cluster's record. Such a key may be another cluster's key today: an id lowered whole (`/resourceGroups/\u212Aube`,
 * with a Kelvin sign, lowers to `/resourcegroups/kube`) is the id of another resource group as ARM compares them. So
 * what is kept there is removed only when it is this very cluster's.
 */
export function keptForCluster(kept: unknown, record: Pick<GrantRecord, 'provider' | 'providerId'>): boolean {
  if (typeof kept !== 'object' || kept === null) return false;
  const { provider, providerId } = kept as Partial<GrantRecord>;
  return (
    provider === record.provider &&
    typeof providerId === 'string' &&
    ledgerKey({ provider, providerId }) === ledgerKey(record)
  );
}

/**
 * The records a ledger found, one per cluster: where one is kept both under today's key and under a key an earlier
 * version used (`legacyLedgerKeys`), today's; the earlier one while it is the only one.
 */
export function oneRecordPerCluster(
  found: Iterable<{ record: GrantRecord; keptToday: boolean }>,
): GrantRecord[] {
  const byKey = new Map<string, GrantRecord>();
  const today = new Set<string>();
  for (const { record, keptToday } of found) {
    const key = ledgerKey(record);
    if (!keptToday && today.has(key)) continue;
    byKey.set(key, record);
    if (keptToday) today.add(key);
  }
  return [...byKey.values()];
}

/** Whether `value` is a record as the ledgers write them. */
export function isGrantRecord(value: unknown): value is GrantRecord {
  const r = value as Partial<GrantRecord> | null;
  return (
    typeof r === 'object' &&
    r !== null &&
    typeof r.providerId === 'string' &&
    (PROVIDERS as readonly unknown[]).includes(r.provider) &&
    typeof r.account === 'string' &&
    typeof r.region === 'string' &&
    Array.isArray(r.grants) &&
    r.grants.every((g) => typeof g?.consumer === 'string' && typeof g.identity === 'string')
  );
}

/** Whether `record` is of the account `scope` reads: a ledger gives an account's reader no other's record. */
export function ofScope(record: GrantRecord, scope: { provider: string; account: string }): boolean {
  return record.provider === scope.provider && record.account === scope.account;
}

/** Whether `key` is one a ledger keeps `record` under: its own (`ledgerKey`), or one an earlier version used. */
export function keptUnderOwnKey(record: GrantRecord, key: string): boolean {
  return key === ledgerKey(record) || legacyLedgerKeys(record).includes(key);
}

/** The key a ledger keeps a cluster's record under: its canonical id (an Azure id in any case is one). */
export function ledgerKey(record: Pick<GrantRecord, 'provider' | 'providerId'>): string {
  return canonicalProviderId(record);
}

/** Whether a record holds nothing worth keeping (no grant, no sweep to remember). */
export function emptyRecord(record: GrantRecord): boolean {
  return record.grants.length === 0 && !record.swept;
}

/** The record as the hub shows it (`cpsync.io/access-grants`): consumer → the identity and terms granted. */
function shownRecord(grants: readonly HeldGrant[]): string {
  return JSON.stringify(
    Object.fromEntries(
      [...grants]
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
}

/** Whether a profile carries anything the feature wrote (the record shown, a consumer's condition). */
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
  /** The consumers bound to a namespace the cluster's profile is written in. */
  wanted: Consumer[];
  /** What cpsync holds on the cluster now, as its ledger says (pending grants included). */
  held: HeldGrant[];
  /** What cpsync holds and must take back: the consumer is no longer wanted, or its identity changed. */
  revoke: HeldGrant[];
  /** The cluster's record in the ledger, if it has one. */
  record?: GrantRecord;
  /**
   * The cluster's account and region as its cloud gives them (its profile's labels may spell them otherwise): what
   * a new record is filed under, so that a read of the scope finds it.
   */
  place?: ClusterPlace;
}

/** A cluster's account and region, as its cloud gives them (the region where it is known). */
export interface ClusterPlace {
  account: string;
  region?: string;
}

/** Whether the cluster's control plane is running (grants are made on a running cluster only). */
function ready(profile: ClusterProfile): boolean {
  const health = profile.status?.conditions?.find((c) => c.type === CONDITION_CONTROL_PLANE_HEALTHY);
  return health?.status === 'True' || health?.reason === HealthReason.HealthIssues;
}

/**
 * The grants of every cluster among `desired` (the profiles this run writes): for each, the consumers bound
 * to a namespace it is written in (none while the feature is off), what the ledger records as held
 * (`records`, by ledgerKey), and what of that must be revoked.
 */
export function planGrants(
  desired: readonly ClusterProfile[],
  records: ReadonlyMap<string, GrantRecord>,
  consumers: readonly Consumer[],
  /**
   * `everyCluster`: a plan for every cluster, also one with nothing wanted or recorded (the turn-off's scan of
   * marks). `placeOf`: each cluster's account and region, by ledger key (see `ClusterGrantPlan.place`).
   */
  {
    everyCluster = false,
    placeOf,
  }: { everyCluster?: boolean; placeOf?: (key: string) => ClusterPlace | undefined } = {},
): ClusterGrantPlan[] {
  const byCluster = new Map<string, ClusterProfile[]>();
  for (const profile of desired) {
    const id = providerIdOf(profile);
    if (id === undefined) continue;
    const list = byCluster.get(id);
    if (list) list.push(profile);
    else byCluster.set(id, [profile]);
  }
  const plans: ClusterGrantPlan[] = [];
  for (const [providerId, profiles] of byCluster) {
    const first = profiles[0]!;
    const provider = first.metadata.labels?.[LABEL_PROVIDER] as Provider;
    const namespaces = new Set(profiles.map((p) => p.metadata.namespace));
    const wanted = consumers.filter((c) => c.namespaces.some((ns) => namespaces.has(ns)));
    const key = ledgerKey({ provider, providerId });
    const record = records.get(key);
    const place = placeOf?.(key);
    const held = [...(record?.grants ?? [])].sort((a, b) => a.consumer.localeCompare(b.consumer));
    const revoke = held.filter(
      (grant) => wanted.find((c) => c.name === grant.consumer)?.identities[provider] !== grant.identity,
    );
    if (!everyCluster && wanted.length === 0 && held.length === 0 && record === undefined) continue;
    plans.push({
      providerId,
      provider,
      profile: first,
      ready: ready(first),
      wanted,
      held,
      revoke,
      ...(record ? { record } : {}),
      ...(place ? { place } : {}),
    });
  }
  return plans;
}

/** What became of one cluster's grants: the results per wanted consumer and the grants revoked. */
export interface ClusterGrantOutcome {
  results: ReadonlyMap<string, GrantResult>;
  /** Held grants that were revoked (or found gone). */
  revoked: readonly HeldGrant[];
}

/** The record a plan starts from: the cluster's in the ledger, or a new one. */
function baseRecord(plan: ClusterGrantPlan): GrantRecord {
  const labels = plan.profile.metadata.labels ?? {};
  return (
    plan.record ?? {
      providerId: plan.providerId,
      provider: plan.provider,
      // The labels are label values of the account and region (a GKE project `example.com:data` is
      // `example.com-data` there): a record filed under them would never be read again.
      account: plan.place?.account ?? labels[LABEL_ACCOUNT] ?? '',
      region: plan.place?.region ?? labels[LABEL_REGION] ?? '',
      grants: [],
    }
  );
}

/**
 * The record as it must be before the cloud is asked (write-ahead): what is held, with each grant about to be
 * made or made again on other terms recorded as pending, so that a run stopped halfway leaves nothing of
 * cpsync's that its ledger does not name.
 */
export function recordBefore(plan: ClusterGrantPlan): GrantRecord {
  const grants = new Map(plan.held.map((g) => [pairOf(g), g]));
  for (const consumer of plan.wanted) {
    const identity = consumer.identities[plan.provider];
    if (identity === undefined || !plan.ready) continue;
    const held = grants.get(pairOf({ consumer: consumer.name, identity }));
    if (held && !held.pending && sameTerms(held, consumer)) continue;
    // A grant for another identity stays until it is revoked: both are named while either may be there.
    grants.set(pairOf({ consumer: consumer.name, identity }), {
      ...termsOf(consumer, identity),
      pending: true,
    });
  }
  const { swept: _swept, ...rest } = baseRecord(plan);
  return { ...rest, grants: [...grants.values()].sort(byConsumer) };
}

/** A grant's consumer and identity, as one key. */
const pairOf = (g: Pick<HeldGrant, 'consumer' | 'identity'>) => `${g.consumer}\u0000${g.identity}`;

function termsOf(consumer: Consumer, identity: string): HeldGrant {
  return {
    consumer: consumer.name,
    identity,
    level: consumer.level,
    ...(consumer.memberNamespaces ? { memberNamespaces: [...consumer.memberNamespaces].sort() } : {}),
  };
}

const byConsumer = (a: HeldGrant, b: HeldGrant) =>
  a.consumer.localeCompare(b.consumer) || a.identity.localeCompare(b.identity);

/**
 * The record once the cloud has answered: what was held, less what was revoked, with what was made (on the
 * terms it now has). A grant that could not be made or checked keeps its record (pending when it was never
 * known to be made): a later revocation finds out whether anything of cpsync's is there. Only a look that
 * says it left nothing (`untouched`) drops what this look recorded ahead. Each wanted consumer's outcome is
 * kept (the condition the hub shows). Without an outcome (a dry run, a cluster not looked at) the record is
 * as it was.
 */
export function recordAfter(
  plan: ClusterGrantPlan,
  outcome: ClusterGrantOutcome | undefined,
  written: GrantRecord = baseRecord(plan),
): GrantRecord {
  if (!outcome) return written;
  const revoked = new Set(outcome.revoked.map(pairOf));
  const grants = new Map<string, HeldGrant>();
  for (const grant of written.grants) if (!revoked.has(pairOf(grant))) grants.set(pairOf(grant), grant);
  const outcomes: Record<string, GrantOutcomeRecord> = {};
  for (const [name, result] of outcome.results) {
    const consumer = plan.wanted.find((c) => c.name === name);
    if (!consumer) continue;
    outcomes[name] = { status: result.status, reason: result.reason, message: result.message };
    const identity = consumer.identities[plan.provider];
    if (identity === undefined) continue;
    const key = pairOf({ consumer: name, identity });
    if (result.held)
      grants.set(pairOf({ consumer: name, identity: result.held }), termsOf(consumer, result.held));
    else {
      const before = plan.held.find((g) => pairOf(g) === key);
      // Nothing of cpsync's for the identity may be there after the look: the record is as before it (a grant
      // held, or one recorded pending by an earlier look that may have made it, stays named).
      if (result.untouched) {
        if (before) grants.set(key, before);
        else grants.delete(key);
      }
      // Not made on its new terms: a grant held before stays held on its own (it names the identity, and a
      // revocation takes back all of cpsync's for it, whatever the terms), until a look makes the new ones.
      else if (before && !before.pending) grants.set(key, before);
      // Otherwise the grant recorded ahead stays pending: it names what the look may have made.
    }
  }
  const { swept: _swept, missed: _missed, ...rest } = written;
  return {
    ...rest,
    grants: [...grants.values()].sort(byConsumer),
    ...(Object.keys(outcomes).length > 0 ? { outcomes } : {}),
  };
}

/**
 * `profile` as the hub shows the cluster's grants: the record (`cpsync.io/access-grants`, from the ledger: the
 * grants known to be made),
 * and each consumer bound to the profile's namespace with its condition as the ledger's last outcome says
 * (its time kept from the hub while it says the same). Conditions of consumers no longer bound there go.
 */
export function showGrants(
  profile: ClusterProfile,
  plan: ClusterGrantPlan,
  record: GrantRecord,
  previous: ClusterProfile | undefined,
  now: string,
): ClusterProfile {
  // What is known to be made: a pending grant (asked of a cloud that did not answer) is the ledger's to settle.
  const made = record.grants.filter((g) => !g.pending);
  const annotations = { ...profile.metadata.annotations };
  if (made.length > 0) annotations[ANNOTATION_ACCESS_GRANTS] = shownRecord(made);
  else delete annotations[ANNOTATION_ACCESS_GRANTS];
  const mine = plan.wanted.filter((c) => c.namespaces.includes(profile.metadata.namespace));
  const before = (previous?.status?.conditions ?? []).filter((c) =>
    c.type.startsWith(CONSUMER_CONDITION_PREFIX),
  );
  const conditions: Condition[] = [];
  for (const consumer of mine) {
    const type = consumerCondition(consumer.name);
    const result = own(record.outcomes, consumer.name);
    if (!result) continue;
    const old = before.find((c) => c.type === type);
    const message = cut(result.message, CONDITION_MESSAGE_MAX_LENGTH);
    const same =
      old && old.status === result.status && old.reason === result.reason && old.message === message;
    conditions.push({
      type,
      status: result.status,
      reason: result.reason,
      message,
      lastTransitionTime: same && old.lastTransitionTime ? old.lastTransitionTime : now,
    });
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
