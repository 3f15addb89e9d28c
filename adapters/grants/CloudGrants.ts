/**
 * Consumers' access grants (the `accessGrants` feature), made the way each cloud documents:
 *   EKS      an access entry for the consumer's IAM role, tagged as cpsync's, with the level's EKS access
 *            policy (AmazonEKSViewPolicy / AmazonEKSEditPolicy / AmazonEKSAdminPolicy) at cluster scope;
 *            that the entry holds the policy is the proof of reach (EKS's own authorizer reads it).
 *   GKE, AKS a ClusterRoleBinding on the member (through cpsync's member access) of the consumer's identity
 *            (Google principal, Entra object id) to the level's user-facing ClusterRole (view / edit /
 *            admin), labelled as cpsync's; the member's own authorizer is asked (a SubjectAccessReview)
 *            whether the identity may do what the level allows.
 * What cpsync did not make (an entry without its tags, a binding without its labels) is never changed or
 * deleted: it is reported, and the proof of reach says whether the consumer gets in through it.
 */
import {
  ApiException,
  AuthorizationV1Api,
  RbacAuthorizationV1Api,
  type V1ClusterRoleBinding,
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
import type { AccessGrants } from '../../core/sync/ports.ts';
import { MemberAccessError, memberConnection, type MemberAccess } from '../member/connection.ts';

import { GRANT_CONSUMER_KEY, GRANT_MANAGER_KEY, grantMessage, isCpsyncGrant } from './marks.ts';

/** One cloud's own way of granting (EKS: access entries), given by its provider. */
export interface ProviderGrants {
  ensure(
    plan: ClusterGrantPlan,
    consumer: Consumer,
    identity: string,
    signal: AbortSignal,
  ): Promise<GrantResult>;
  revoke(
    plan: ClusterGrantPlan,
    grant: HeldGrant,
    signal: AbortSignal,
  ): Promise<{ revoked: boolean; message: string }>;
}

export interface CloudGrantsOptions extends MemberAccess {
  /** The cluster manager name: the mark on every grant cpsync makes. */
  manager: string;
  /** EKS's access entries (from the EKS provider, with its SDK). */
  eks?: ProviderGrants;
  /** One cluster's grant or revocation, every request included. */
  timeoutMillis: number;
}

/** The binding cpsync makes for a consumer on a member (GKE, AKS). */
const bindingName = (consumer: string) => `cpsync:consumer:${consumer}`;

const message = grantMessage;

export class CloudGrants implements AccessGrants {
  readonly #options: CloudGrantsOptions;

  constructor(options: CloudGrantsOptions) {
    this.#options = options;
  }

  #mine(marks: Record<string, string> | undefined, consumer: string): boolean {
    return isCpsyncGrant(marks, this.#options.manager, consumer);
  }

  #eks(): ProviderGrants {
    if (!this.#options.eks) throw new Error('EKS is not configured: no access entries can be made');
    return this.#options.eks;
  }

  async ensure(plan: ClusterGrantPlan, consumer: Consumer, signal?: AbortSignal): Promise<GrantResult> {
    const identity = consumer.identities[plan.provider]!;
    try {
      return await withDeadline(
        `granting ${consumer.name} on ${plan.profile.metadata.name}`,
        this.#options.timeoutMillis,
        (deadline) =>
          plan.provider === 'eks'
            ? this.#eks().ensure(plan, consumer, identity, deadline)
            : this.#ensureBinding(plan, consumer, identity, deadline),
        signal,
      );
    } catch (error) {
      return { status: 'False', reason: GrantReason.MemberUnreachable, message: message(error) };
    }
  }

  async revoke(
    plan: ClusterGrantPlan,
    grant: HeldGrant,
    signal?: AbortSignal,
  ): Promise<{ revoked: boolean; message: string }> {
    try {
      return await withDeadline(
        `revoking ${grant.consumer} on ${plan.profile.metadata.name}`,
        this.#options.timeoutMillis,
        (deadline) =>
          plan.provider === 'eks'
            ? this.#eks().revoke(plan, grant, deadline)
            : this.#revokeBinding(plan, grant, deadline),
        signal,
      );
    } catch (error) {
      return { revoked: false, message: message(error) };
    }
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
    signal: AbortSignal,
  ): Promise<GrantResult> {
    const { config, options } = await this.#member(plan, signal);
    const rbac = config.makeApiClient(RbacAuthorizationV1Api);
    const name = bindingName(consumer.name);
    const wanted: V1ClusterRoleBinding = {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: {
        name,
        labels: { [GRANT_MANAGER_KEY]: this.#options.manager, [GRANT_CONSUMER_KEY]: consumer.name },
      },
      roleRef: {
        apiGroup: 'rbac.authorization.k8s.io',
        kind: 'ClusterRole',
        name: KUBERNETES_CLUSTER_ROLES[consumer.level],
      },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: identity }],
    };
    let mine: boolean;
    try {
      // Made, or the identity added to cpsync's own binding of the consumer; again on a conflict (another
      // writer, another cluster's grant on the same member).
      for (let attempt = 1; ; attempt++) {
        try {
          mine = await this.#bind(rbac, options, wanted, consumer.name, identity);
          break;
        } catch (error) {
          if (!(error instanceof ApiException && error.code === 409 && attempt < 4)) throw error;
        }
      }
    } catch (error) {
      if (error instanceof ApiException && (error.code === 401 || error.code === 403))
        return {
          status: 'False',
          reason: GrantReason.Refused,
          message: `the member refused cpsync's binding (${error.code}): cpsync's identity may not bind ${wanted.roleRef.name}`,
        };
      throw error;
    }
    // The member's own authorizer: may the identity do what the level allows?
    const proof = LEVEL_PROOF[consumer.level];
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
          ? `the member allows ${identity} to ${what} (ClusterRoleBinding ${name} to ${wanted.roleRef.name})`
          : `the member allows ${identity} to ${what} through a binding cpsync did not make (${name} is not cpsync's; left as it is)`,
      };
    return {
      ...(mine ? { held: identity } : {}),
      status: 'False',
      reason: GrantReason.NotAllowed,
      message: `the member does not allow ${identity} to ${what}${review.status?.reason ? `: ${review.status.reason}` : ''}`,
    };
  }

  /** Makes the binding true; false when a binding of that name is not cpsync's (it is left as it is). */
  async #bind(
    rbac: RbacAuthorizationV1Api,
    options: Parameters<RbacAuthorizationV1Api['readClusterRoleBinding']>[1],
    wanted: V1ClusterRoleBinding,
    consumer: string,
    identity: string,
  ): Promise<boolean> {
    const name = wanted.metadata!.name!;
    let existing: V1ClusterRoleBinding | undefined;
    try {
      existing = await rbac.readClusterRoleBinding({ name }, options);
    } catch (error) {
      if (!(error instanceof ApiException && error.code === 404)) throw error;
    }
    if (!existing) {
      await rbac.createClusterRoleBinding({ body: wanted }, options);
      return true;
    }
    if (!this.#mine(existing.metadata?.labels, consumer)) return false;
    if (existing.roleRef.name !== wanted.roleRef.name) {
      // A binding's role cannot change: cpsync's own is made again for the new level.
      await rbac.deleteClusterRoleBinding({ name }, options);
      await rbac.createClusterRoleBinding({ body: wanted }, options);
      return true;
    }
    const subjects = existing.subjects ?? [];
    if (!subjects.some((s) => s.kind === 'User' && s.name === identity))
      await rbac.replaceClusterRoleBinding(
        { name, body: { ...existing, subjects: [...subjects, ...(wanted.subjects ?? [])] } },
        options,
      );
    return true;
  }

  async #revokeBinding(
    plan: ClusterGrantPlan,
    grant: HeldGrant,
    signal: AbortSignal,
  ): Promise<{ revoked: boolean; message: string }> {
    const { config, options } = await this.#member(plan, signal);
    const rbac = config.makeApiClient(RbacAuthorizationV1Api);
    const name = bindingName(grant.consumer);
    try {
      const existing = await rbac.readClusterRoleBinding({ name }, options);
      if (!this.#mine(existing.metadata?.labels, grant.consumer))
        return { revoked: true, message: `${name} is not cpsync's; left as it is` };
      await rbac.deleteClusterRoleBinding({ name }, options);
      return { revoked: true, message: `${name} deleted` };
    } catch (error) {
      if (error instanceof ApiException && error.code === 404)
        return { revoked: true, message: 'already gone' };
      return { revoked: false, message: message(error) };
    }
  }
}
