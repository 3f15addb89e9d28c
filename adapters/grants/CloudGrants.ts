/**
 * Consumers' access grants (the `accessGrants` feature), made the way each cloud documents:
 *   EKS      an access entry for the consumer's IAM role, tagged as cpsync's, with the level's EKS access
 *            policy (AmazonEKSViewPolicy / AmazonEKSEditPolicy / AmazonEKSAdminPolicy) at cluster scope;
 *            that the entry holds the policy is the proof of reach (EKS's own authorizer reads it).
 *   GKE      first the cloud role the identity needs before GKE lets it in (`roles/container.clusterViewer`,
 *            in a binding of the project's IAM policy marked as cpsync's, one per consumer: adapters/gke/
 *            projectRoles.ts), settled per project from what every cluster of it records; then as AKS:
 *   GKE, AKS a ClusterRoleBinding on the member (through cpsync's member access) of the consumer's identity
 *            (Google principal, Entra object id) to the level's user-facing ClusterRole (view / edit /
 *            admin), labelled as cpsync's; the member's own authorizer is asked (a SubjectAccessReview)
 *            whether the identity may do what the level allows.
 * What cpsync did not make (an entry without its tags, a binding without its labels) is never changed or
 * deleted: it is reported, and the proof of reach says whether the consumer gets in through it.
 *
 * One file because the three clouds' grants keep one contract: what a look may say it left (made.ts), one
 * deadline, the member's bindings and the proof of reach. Read side by side, a path that promises less shows.
 */
import {
  ApiException,
  AuthorizationV1Api,
  RbacAuthorizationV1Api,
  type ConfigurationOptions,
  type KubeConfig,
} from '@kubernetes/client-node';
import {
  GrantReason,
  KUBERNETES_CLUSTER_ROLES,
  LEVEL_PROOF,
  type ClusterGrantPlan,
  type Consumer,
  type GrantResult,
  type HeldGrant,
} from '../../core/domain/grants.ts';
import { withDeadline } from '../../core/sync/deadline.ts';
import type { AccessGrants, CheckOutcome, RoleHolders } from '../../core/sync/ports.ts';
import type { MemberPacing } from '../../core/domain/member.ts';
import { MemberAccessError, memberConnection, type MemberAccess } from '../member/connection.ts';

import { classifyGoogleError } from '../gke/classify.ts';
import { MadeByLook, neverConnected, unreached } from './made.ts';
import { GRANT_CONSUMER_KEY, GRANT_MANAGER_KEY, grantMessage } from './marks.ts';
import { MemberBindings } from './memberBindings.ts';
import { checkMemberPolicy } from './memberPolicy.ts';

/** One cloud's own way of granting (EKS: access entries), given by its provider. */
export interface ProviderGrants {
  /** `made` is told of every write that can give access, and of cpsync's grant found already there. */
  ensure(
    plan: ClusterGrantPlan,
    consumer: Consumer,
    identity: string,
    signal: AbortSignal,
    made: MadeByLook,
  ): Promise<GrantResult>;
  revoke(
    plan: ClusterGrantPlan,
    grant: HeldGrant,
    signal: AbortSignal,
  ): Promise<{ revoked: boolean; message: string }>;
  /**
   * Takes back every grant of one of `principals` carrying cpsync's marks that `keep` does not name; what it took
   * back. `reached` is called once the cloud has answered its listing.
   */
  sweep(
    plan: ClusterGrantPlan,
    keep: (consumer: string, identity: string) => boolean,
    principals: readonly string[],
    signal: AbortSignal,
    reached: () => void,
  ): Promise<Array<HeldGrant & { message: string }>>;
}

/** AKS: Azure role assignments on clusters that use Azure RBAC (given by the AKS provider). */
export interface AzureRoleGrants {
  usesAzureRbac(plan: ClusterGrantPlan): Promise<boolean>;
  /**
   * True when cpsync's own assignments hold the level; false when only assignments it did not make do.
   * `made` is told of every assignment made, and of cpsync's found already there.
   */
  assign(plan: ClusterGrantPlan, consumer: Consumer, identity: string, made: MadeByLook): Promise<boolean>;
  revoke(plan: ClusterGrantPlan, grant: HeldGrant): Promise<string>;
  sweep(
    plan: ClusterGrantPlan,
    keep: (consumer: string, identity: string) => boolean,
    principals: readonly string[],
  ): Promise<Array<HeldGrant & { message: string }>>;
}

/** GKE: the project-wide cloud role consumers need to authenticate (given by the GKE provider). */
export interface GoogleProjectRoles {
  /** The consumer's identity in cpsync's binding of the cluster's project; returns what changed. */
  hold(providerId: string, consumer: string, identity: string, signal?: AbortSignal): Promise<string[]>;
  /** cpsync's bindings of the project made exactly what `holders`, asked after each reading of the policy, says. */
  settle(project: string, holders: () => Promise<RoleHolders>, signal?: AbortSignal): Promise<string[]>;
  /** What cpsync holds in the project's policy, read without changing it; rejects when it cannot be read. */
  inspect(project: string, signal?: AbortSignal): Promise<string>;
}

export interface CloudGrantsOptions extends MemberAccess {
  /** The cluster manager name: the mark on every grant cpsync makes. */
  manager: string;
  /** EKS's access entries (from the EKS provider, with its SDK), made on first use. */
  eks?: () => Promise<ProviderGrants>;
  /** AKS's Azure role assignments (from the AKS provider, with its SDK), made on first use. */
  aks?: () => Promise<AzureRoleGrants>;
  /** GKE's project IAM role for consumers (from the GKE provider, with its SDK), made on first use. */
  gke?: () => Promise<GoogleProjectRoles>;
  /** One cluster's grant or revocation, every request included. */
  timeoutMillis: number;
  /** How often a cluster whose grants all held is looked at again (the member probe's slots). */
  pacing?: MemberPacing;
}

const message = grantMessage;

/** The cloud's own grant clients of one look. */
interface CloudClients {
  eks?: ProviderGrants;
  aks?: AzureRoleGrants;
  gke?: GoogleProjectRoles;
}

/**
 * The identity taken out of cpsync's binding of the consumer at `place`; when that fails, what may still hold
 * it there is cpsync's, found by the look.
 */
async function takenOut(
  bindings: MemberBindings,
  place: { namespace?: string },
  identity: string,
  made: MadeByLook,
) {
  try {
    await bindings.unbind(place, identity);
  } catch (error) {
    made.found();
    throw error;
  }
}

/** Whether `holders` says nothing is held, read within `millis`; false when it cannot be read then. */
const holdsNothing = (holders: () => Promise<RoleHolders>, millis: number) =>
  withDeadline('reading who holds the role', millis, () => holders()).then(
    (read) => read.size === 0,
    () => false,
  );

/** Whether Google refused cpsync (PERMISSION_DENIED, UNAUTHENTICATED, the API not enabled), rather than failing to answer. */
const googleRefused = (error: unknown) =>
  ['AccessDenied', 'ApiNotEnabled'].includes(classifyGoogleError(error));

export class CloudGrants implements AccessGrants {
  readonly #options: CloudGrantsOptions;
  readonly pacing?: MemberPacing;

  constructor(options: CloudGrantsOptions) {
    this.#options = options;
    if (options.pacing) this.pacing = options.pacing;
  }

  async settleProjectRoles(
    project: string,
    holders: () => Promise<RoleHolders>,
    signal?: AbortSignal,
  ): Promise<string[]> {
    if (!this.#options.gke) return [];
    try {
      const gke = await this.#options.gke();
      return await this.#within(
        `settling project ${project}'s cloud role for consumers`,
        (deadline) => gke.settle(project, holders, deadline),
        signal,
      );
    } catch (error) {
      // With nothing to hold, a project whose policy cpsync may not read or write holds nothing of cpsync's
      // that it could take back (the feature not given the project yet, or turned off there). Holders that cannot
      // be read now leave the refusal as it is.
      if (googleRefused(error) && (await holdsNothing(holders, this.#options.timeoutMillis))) return [];
      throw error;
    }
  }

  /** `work`, given at most the grant timeout (and stopped with `signal`). */
  #within<T>(what: string, work: (deadline: AbortSignal) => Promise<T>, signal?: AbortSignal): Promise<T> {
    return withDeadline(what, this.#options.timeoutMillis, work, signal);
  }

  /**
   * The cloud's own grant clients a look at `plan` uses (`google`: GKE's project role too), made before the look's
   * deadline starts: the first makes its SDK's client and loads its modules, which is no part of a member's answer.
   */
  async #clients(plan: ClusterGrantPlan, google = false): Promise<CloudClients> {
    if (plan.provider === 'eks') {
      if (!this.#options.eks) throw new Error('EKS is not configured: no access entries can be made');
      return { eks: await this.#options.eks() };
    }
    if (plan.provider === 'aks') return this.#options.aks ? { aks: await this.#options.aks() } : {};
    return google && this.#options.gke ? { gke: await this.#options.gke() } : {};
  }

  /**
   * The grant's result says `untouched` (the ledger may drop what it recorded ahead) only when nothing of
   * cpsync's that can give the identity access may be there after the look: no write that can give access
   * may have been done, and none of cpsync's was found. Whatever ends the look (a refusal, a binding that is
   * not cpsync's, a member that stops answering), a look that made something says so.
   */
  async ensure(plan: ClusterGrantPlan, consumer: Consumer, signal?: AbortSignal): Promise<GrantResult> {
    const identity = consumer.identities[plan.provider]!;
    const made = new MadeByLook();
    try {
      const clients = await this.#clients(plan, true);
      const result = await this.#within(
        `granting ${consumer.name} on ${plan.profile.metadata.name}`,
        (deadline) =>
          clients.eks
            ? clients.eks.ensure(plan, consumer, identity, deadline, made)
            : this.#ensureBinding(plan, consumer, identity, clients, deadline, made),
        signal,
      );
      const { untouched: _claimed, ...told } = result;
      return result.held === undefined && !made.made ? { ...told, untouched: true } : told;
    } catch (error) {
      return {
        status: 'False',
        reason: GrantReason.MemberUnreachable,
        message: message(error),
        ...(!made.made && unreached(error) ? { untouched: true as const } : {}),
      };
    }
  }

  async revoke(
    plan: ClusterGrantPlan,
    grant: HeldGrant,
    signal?: AbortSignal,
  ): Promise<{ revoked: boolean; message: string }> {
    try {
      const clients = await this.#clients(plan);
      return await this.#within(
        `revoking ${grant.consumer} on ${plan.profile.metadata.name}`,
        (deadline) =>
          clients.eks
            ? clients.eks.revoke(plan, grant, deadline)
            : this.#revokeBinding(plan, grant, clients, deadline),
        signal,
      );
    } catch (error) {
      return { revoked: false, message: message(error) };
    }
  }

  async sweep(
    plan: ClusterGrantPlan,
    keep: (consumer: string, identity: string) => boolean,
    identities: readonly string[],
    signal?: AbortSignal,
  ): Promise<{ removed: Array<HeldGrant & { message: string }>; complete: boolean; unreachable?: true }> {
    // Unreachable only when what holds cpsync's grants never answered: the member (EKS: its cloud) was not
    // reached, and on an AKS cluster that uses Azure RBAC, Azure's own part was scanned whole first. Once
    // either answered, a refused connection says nothing of what is left.
    let reached = false;
    const answered = () => {
      reached = true;
    };
    let cloudDone = plan.provider !== 'aks' || !this.#options.aks;
    try {
      const clients = await this.#clients(plan);
      const removed = await this.#within(
        `scanning ${plan.profile.metadata.name} for cpsync's grants`,
        async (deadline) => {
          if (clients.eks) return clients.eks.sweep(plan, keep, identities, deadline, answered);
          const taken: Array<HeldGrant & { message: string }> = [];
          const azure = clients.aks;
          if (azure && (await azure.usesAzureRbac(plan)))
            taken.push(...(await azure.sweep(plan, keep, identities)));
          cloudDone = true;
          taken.push(...(await this.#sweepBindings(plan, keep, deadline, answered)));
          return taken;
        },
        signal,
      );
      return { removed, complete: true };
    } catch (error) {
      // Tried again at the next look: nothing is known to be left or gone.
      return {
        removed: [],
        complete: false,
        // Only a member no connection reached is taken as holding nothing of cpsync's that can be reached (see
        // docs/configuring.md): a token that could not be had, or a profile with no way to reach it, is tried again.
        ...(cloudDone && !reached && neverConnected(error) ? { unreachable: true as const } : {}),
      };
    }
  }

  /**
   * Whether the member bounds what cpsync's identity writes there (GKE, AKS: the member's admission policy, see
   * memberPolicy.ts; an AKS cluster that uses Azure RBAC too, where cpsync still takes identities out of its
   * bindings), read without changing anything.
   */
  async inspectMember(plan: ClusterGrantPlan, signal?: AbortSignal): Promise<CheckOutcome> {
    if (plan.provider === 'eks')
      return { ok: true, detail: 'grants are EKS access entries, made through the EKS API' };
    try {
      return await this.#within(
        `reading ${plan.profile.metadata.name}'s bounds on cpsync`,
        async (deadline) => {
          const { config, options } = await this.#member(plan, deadline);
          return checkMemberPolicy(config, options);
        },
        signal,
      );
    } catch (error) {
      return { ok: false, detail: message(error) };
    }
  }

  /** The member's bindings marked as cpsync's: each identity `keep` does not name taken out. */
  async #sweepBindings(
    plan: ClusterGrantPlan,
    keep: (consumer: string, identity: string) => boolean,
    signal: AbortSignal,
    reached: () => void,
  ): Promise<Array<HeldGrant & { message: string }>> {
    const { config, options } = await this.#member(plan, signal);
    const rbac = config.makeApiClient(RbacAuthorizationV1Api);
    const labelSelector = `${GRANT_MANAGER_KEY}=${this.#options.manager}`;
    const clusterWide = (await rbac.listClusterRoleBinding({ labelSelector }, options)).items;
    reached();
    const found = [
      ...clusterWide.map((b) => ({ b, place: {} })),
      ...(await rbac.listRoleBindingForAllNamespaces({ labelSelector }, options)).items.map((b) => ({
        b,
        place: { namespace: b.metadata?.namespace ?? '' },
      })),
    ];
    const removed: Array<HeldGrant & { message: string }> = [];
    for (const { b, place } of found) {
      const consumer = b.metadata?.labels?.[GRANT_CONSUMER_KEY];
      if (consumer === undefined) continue;
      const bindings = new MemberBindings(rbac, options, this.#options.manager, consumer);
      // Only cpsync's own binding of the consumer (its name and marks), never one labelled alike.
      if (b.metadata?.name !== bindings.name) continue;
      for (const subject of b.subjects ?? [])
        if (subject.kind === 'User' && !keep(consumer, subject.name)) {
          signal.throwIfAborted();
          const message = await bindings.unbind(place, subject.name);
          removed.push({ consumer, identity: subject.name, message });
        }
    }
    return removed;
  }

  async #member(plan: ClusterGrantPlan, signal: AbortSignal) {
    try {
      return await memberConnection(plan.profile, this.#options, signal);
    } catch (error) {
      if (error instanceof MemberAccessError) throw new Error(error.message, { cause: error });
      throw error;
    }
  }

  async #ensureBinding(
    plan: ClusterGrantPlan,
    consumer: Consumer,
    identity: string,
    clients: CloudClients,
    signal: AbortSignal,
    made: MadeByLook,
  ): Promise<GrantResult> {
    const { config, options } = await this.#member(plan, signal);
    const bindings = new MemberBindings(
      config.makeApiClient(RbacAuthorizationV1Api),
      options,
      this.#options.manager,
      consumer.name,
      made,
      Object.values(consumer.identities),
    );
    const role = KUBERNETES_CLUSTER_ROLES[consumer.level];
    const scoped = consumer.memberNamespaces;
    const places: Array<{ namespace?: string }> = scoped ? scoped.map((namespace) => ({ namespace })) : [{}];
    const shown = scoped
      ? `RoleBindings ${bindings.name} in ${scoped.join(', ')}`
      : `ClusterRoleBinding ${bindings.name}`;
    let mine = true;
    const azure = clients.aks;
    if (azure && (await azure.usesAzureRbac(plan))) {
      // Azure RBAC authorizes the cluster: an Azure role assignment, and the identity out of cpsync's bindings.
      try {
        mine = await azure.assign(plan, consumer, identity, made);
        for (const place of await bindings.places()) await takenOut(bindings, place, identity, made);
      } catch (error) {
        const status = (error as { statusCode?: number }).statusCode;
        if (status === 401 || status === 403)
          return {
            status: 'False',
            reason: GrantReason.Refused,
            message: `Azure refused the role assignment: ${message(error)}`,
          };
        throw error;
      }
      return this.#prove(config, options, consumer, identity, mine, `Azure RBAC role for ${consumer.level}`);
    }
    // Where cpsync's bindings of the consumer are, read while the wanted ones are made: those are left out of
    // what it is used for, so the binds' own writes do not matter to it.
    const found = bindings.places();
    found.catch(() => {}); // met below, or when this ends first
    try {
      // A namespace the member lacks is named once every other is bound on the consumer's terms.
      const missing: string[] = [];
      for (const place of places)
        try {
          mine = (await bindings.bind(place, role, identity)) && mine;
        } catch (error) {
          if (!(error instanceof ApiException && error.code === 404 && place.namespace)) throw error;
          missing.push(place.namespace);
        }
      // The identity out of cpsync's bindings of the consumer elsewhere (its namespaces changed), whatever the
      // member lacks: a binding of the terms before (the whole cluster, another level) never outlasts them.
      const kept = new Set(places.map((p) => p.namespace ?? ''));
      for (const place of await found)
        if (!kept.has(place.namespace ?? '')) await takenOut(bindings, place, identity, made);
      if (missing.length > 0)
        return {
          status: 'False',
          reason: GrantReason.NamespaceMissing,
          message: `the member has no namespace ${missing.join(', ')} to grant ${consumer.name} in`,
        };
      // GKE lets no identity in without container.clusters.get: the project's role, for a grant of cpsync's.
      const google = mine && clients.gke;
      if (google) {
        const refused = await this.#holdProjectRole(google, plan, consumer, identity, signal);
        if (refused) {
          // A grant it did not hold before is taken back whole: a refused grant changes nothing.
          const heldBefore = plan.held.some(
            (g) => g.consumer === consumer.name && g.identity === identity && !g.pending,
          );
          if (!heldBefore) {
            for (const place of places) await bindings.unbind(place, identity);
            made.takenBack();
          }
          return { ...refused, ...(heldBefore ? { held: identity } : {}) };
        }
      }
    } catch (error) {
      if (error instanceof ApiException && (error.code === 401 || error.code === 403))
        return {
          status: 'False',
          reason: GrantReason.Refused,
          message: `the member refused cpsync's binding (${error.code}): cpsync's identity may not bind ${role} (adapters/member/manifests/access-grants-rbac.yaml)`,
        };
      throw error;
    } finally {
      await found.catch(() => {});
    }
    return this.#prove(config, options, consumer, identity, mine, `${shown} to ${role}`);
  }

  /** The consumer's identity in cpsync's project binding of GKE's role; why not, when Google refused it. */
  async #holdProjectRole(
    google: GoogleProjectRoles,
    plan: ClusterGrantPlan,
    consumer: Consumer,
    identity: string,
    signal: AbortSignal,
  ): Promise<GrantResult | undefined> {
    try {
      await google.hold(plan.providerId, consumer.name, identity, signal);
      return undefined;
    } catch (error) {
      if (!googleRefused(error)) throw error;
      return {
        status: 'False',
        reason: GrantReason.Refused,
        message: `Google refused cpsync's binding of roles/container.clusterViewer in the cluster's project: ${message(error)}`,
      };
    }
  }

  /** The member's own authorizer: may the identity do what the level allows? */
  async #prove(
    config: KubeConfig,
    options: ConfigurationOptions,
    consumer: Consumer,
    identity: string,
    mine: boolean,
    shown: string,
  ): Promise<GrantResult> {
    const scoped = consumer.memberNamespaces;
    const proof = { ...LEVEL_PROOF[consumer.level], ...(scoped ? { namespace: scoped[0]! } : {}) };
    const review = await config.makeApiClient(AuthorizationV1Api).createSubjectAccessReview(
      {
        body: {
          apiVersion: 'authorization.k8s.io/v1',
          kind: 'SubjectAccessReview',
          spec: {
            user: identity,
            resourceAttributes: {
              verb: proof.verb,
              group: proof.group,
              resource: proof.resource,
              namespace: proof.namespace,
            },
          },
        },
      },
      options,
    );
    const what = `${proof.verb} ${proof.resource} in ${proof.namespace}`;
    if (review.status?.allowed)
      return {
        ...(mine ? { held: identity } : {}),
        status: 'True',
        reason: mine ? GrantReason.Granted : GrantReason.GrantedElsewhere,
        message: mine
          ? `the member allows ${identity} to ${what} (${shown})`
          : `the member allows ${identity} to ${what} through a grant cpsync did not make (left as it is)`,
      };
    return {
      ...(mine ? { held: identity } : {}),
      status: 'False',
      reason: GrantReason.NotAllowed,
      message: `the member does not allow ${identity} to ${what}${review.status?.reason ? `: ${review.status.reason}` : ''}`,
    };
  }

  async #revokeBinding(
    plan: ClusterGrantPlan,
    grant: HeldGrant,
    clients: CloudClients,
    signal: AbortSignal,
  ): Promise<{ revoked: boolean; message: string }> {
    const { config, options } = await this.#member(plan, signal);
    const bindings = new MemberBindings(
      config.makeApiClient(RbacAuthorizationV1Api),
      options,
      this.#options.manager,
      grant.consumer,
    );
    try {
      const done: string[] = [];
      if (clients.aks) done.push(await clients.aks.revoke(plan, grant));
      for (const place of await bindings.places()) done.push(await bindings.unbind(place, grant.identity));
      return { revoked: true, message: done.length > 0 ? done.join('; ') : 'already gone' };
    } catch (error) {
      return { revoked: false, message: message(error) };
    }
  }
}
