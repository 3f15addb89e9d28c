/**
 * Azure role assignments for consumers on AKS clusters that use Azure RBAC for Kubernetes authorization (the
 * `accessGrants` feature): the level's built-in role (Azure Kubernetes Service RBAC Reader / Writer / Admin)
 * for the consumer's Entra object id at the cluster's scope (or each of its member namespaces'), marked as
 * cpsync's by its description. An assignment cpsync did not make is never changed or deleted.
 */
import {
  AuthorizationManagementClient,
  getContinuationToken,
  type RoleAssignment,
} from '@azure/arm-authorization';
import { azureItems } from '../shared/pages.ts';
import type { ManagedCluster } from '@azure/arm-containerservice';
import type { TokenCredential } from '@azure/core-auth';
import { createHash } from 'node:crypto';
import { grantDescription } from '../grants/marks.ts';
import type { MadeByLook } from '../grants/made.ts';
import { aksClusterOfId } from './mapCluster.ts';
import { wholePages } from './classify.ts';
import { MalformedAnswerError } from '../shared/pages.ts';
import type { AccessLevel, ClusterGrantPlan, Consumer, HeldGrant } from '../../core/domain/grants.ts';
import { foldCase } from '../../core/domain/naming.ts';

/** The built-in AKS data-plane roles each level is (their role definition ids are the same in every tenant). */
const AKS_RBAC_ROLES: Readonly<Record<AccessLevel, string>> = {
  view: '7f6c6a51-bcf8-42ba-9220-52d62157d7db',
  edit: 'a7ffa36f-339b-4b5c-8bdf-e2c188b2c0eb',
  admin: '3498e952-d568-435e-9b2c-8d77e338d7f7',
};

/** A role assignment's name (a GUID) from what it is for: the same assignment is made again under its name. */
function assignmentName(...parts: string[]): string {
  const hex = createHash('sha256').update(parts.join('\n')).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-8${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

export class AksRoleAssignments {
  readonly #credential: TokenCredential;
  readonly #endpoint: string | undefined;
  readonly #manager: string;
  readonly #cluster: (providerId: string) => Promise<ManagedCluster | undefined>;

  constructor(options: {
    credential: TokenCredential;
    endpoint?: string;
    manager: string;
    cluster: (providerId: string) => Promise<ManagedCluster | undefined>;
  }) {
    this.#credential = options.credential;
    this.#endpoint = options.endpoint;
    this.#manager = options.manager;
    this.#cluster = options.cluster;
  }

  /**
   * Whether the cluster authorizes Kubernetes requests with Azure RBAC. ARM answers a managed cluster with its id and
   * its properties: an answer without them (an empty body) says nothing of how it authorizes, and fails.
   */
  async usesAzureRbac(plan: ClusterGrantPlan): Promise<boolean> {
    const cluster = await this.#cluster(plan.providerId);
    if (cluster !== undefined && (!cluster.id || cluster.provisioningState === undefined))
      throw new MalformedAnswerError(
        `ARM's managed cluster ${plan.providerId}: an answer without its id or properties; not taken as a cluster without Azure RBAC`,
      );
    return cluster?.aadProfile?.enableAzureRbac === true;
  }

  #client(providerId: string) {
    const subscription = aksClusterOfId(providerId)?.subscription;
    if (!subscription) throw new Error(`not an AKS cluster id: ${providerId}`);
    return {
      subscription,
      client: new AuthorizationManagementClient(
        this.#credential,
        subscription,
        this.#endpoint ? { endpoint: this.#endpoint } : {},
      ),
    };
  }

  /**
   * The principal's assignments on the cluster: at its scope and at each of its namespaces' (Azure lists
   * those below a scope only by principal), by scope (`foldCase`).
   */
  async #onCluster(
    client: AuthorizationManagementClient,
    providerId: string,
    principalId: string,
  ): Promise<Map<string, RoleAssignment[]>> {
    const cluster = foldCase(providerId);
    const byScope = new Map<string, RoleAssignment[]>();
    for await (const assignment of azureItems(
      `ARM's role assignments of ${principalId} on ${providerId}`,
      client.roleAssignments.listForScope(providerId, {
        filter: `principalId eq '${principalId}'`,
        ...wholePages(`ARM's role assignments of ${principalId} on ${providerId}`),
      }),
      getContinuationToken,
    )) {
      const scope = foldCase(assignment.scope ?? '');
      if (scope !== cluster && !scope.startsWith(`${cluster}/namespaces/`)) continue;
      byScope.set(scope, [...(byScope.get(scope) ?? []), assignment]);
    }
    return byScope;
  }

  /**
   * The level's role for `identity` at the cluster's scope (or each member namespace's): true when cpsync's
   * own assignments hold it, false when only assignments cpsync did not make do. cpsync's assignments of the
   * consumer elsewhere on the cluster (its namespaces or scope changed) are taken off once the wanted ones
   * hold. Rejects as Azure does (403 AuthorizationFailed when cpsync may not assign roles there).
   * `made` is told of every assignment made, and of cpsync's found already there.
   */
  async assign(
    plan: ClusterGrantPlan,
    consumer: Consumer,
    identity: string,
    made: MadeByLook,
  ): Promise<boolean> {
    const { subscription, client } = this.#client(plan.providerId);
    const mark = grantDescription(this.#manager, consumer.name);
    const role = `/subscriptions/${subscription}/providers/Microsoft.Authorization/roleDefinitions/${AKS_RBAC_ROLES[consumer.level]}`;
    const scopes = consumer.memberNamespaces
      ? consumer.memberNamespaces.map((ns) => `${plan.providerId}/namespaces/${ns}`)
      : [plan.providerId];
    const onCluster = await this.#onCluster(client, plan.providerId, identity);
    const holds = (a: RoleAssignment) =>
      foldCase(a.roleDefinitionId ?? '').endsWith(AKS_RBAC_ROLES[consumer.level]);
    // cpsync's own assignments of the consumer, already there: the record names them as much.
    if ([...onCluster.values()].flat().some((a) => a.description === mark)) made.found();
    let mine = true;
    for (const scope of scopes) {
      const existing = onCluster.get(foldCase(scope)) ?? [];
      const ours = existing.filter((a) => a.description === mark);
      if (!ours.some(holds)) {
        if (existing.some(holds)) mine = false;
        else
          // Azure's SDK sends a request again after a failure: only a refusal proves it was not done.
          await made.adding(
            () =>
              client.roleAssignments.create(
                scope,
                assignmentName(scope, consumer.name, consumer.level, identity),
                { roleDefinitionId: role, principalId: identity, description: mark },
              ),
            { resent: true },
          );
      }
      // Another level's assignment of cpsync's (the level changed): taken off.
      for (const other of ours.filter((a) => !holds(a)))
        await client.roleAssignments.delete(scope, other.name!);
    }
    // cpsync's assignments of the consumer where it is no longer wanted (its namespaces changed): taken off.
    const wanted = new Set(scopes.map(foldCase));
    for (const [scope, assignments] of onCluster)
      if (!wanted.has(scope))
        for (const assignment of assignments)
          if (assignment.description === mark && assignment.name)
            await client.roleAssignments.delete(assignment.scope!, assignment.name);
    return mine;
  }

  /**
   * Every role assignment on the cluster (its scope, and its namespaces' for `principals`: Azure lists those
   * below a scope only by principal) marked as cpsync's that `keep` does not name, deleted; what it deleted. Only
   * assignments of `principals` (the identities the configuration gives a consumer, and those the ledger holds
   * grants of): cpsync assigns roles to those alone, and a description is not proof of who made an assignment.
   */
  async sweep(
    plan: ClusterGrantPlan,
    keep: (consumer: string, identity: string) => boolean,
    principals: readonly string[],
  ): Promise<Array<HeldGrant & { message: string }>> {
    const { client } = this.#client(plan.providerId);
    const mark = grantDescription(this.#manager, '');
    const cluster = foldCase(plan.providerId);
    const known = new Set(principals.map(foldCase));
    const found = new Map<string, RoleAssignment>();
    for await (const assignment of azureItems(
      `ARM's role assignments on ${plan.providerId}`,
      client.roleAssignments.listForScope(
        plan.providerId,
        wholePages(`ARM's role assignments on ${plan.providerId}`),
      ),
      getContinuationToken,
    ))
      found.set(foldCase(assignment.id ?? ''), assignment);
    for (const principal of principals)
      for await (const assignment of azureItems(
        `ARM's role assignments of ${principal} on ${plan.providerId}`,
        client.roleAssignments.listForScope(plan.providerId, {
          filter: `principalId eq '${principal}'`,
          ...wholePages(`ARM's role assignments of ${principal} on ${plan.providerId}`),
        }),
        getContinuationToken,
      ))
        found.set(foldCase(assignment.id ?? ''), assignment);
    const removed: Array<HeldGrant & { message: string }> = [];
    for (const assignment of found.values()) {
      const scope = assignment.scope ?? '';
      const folded = foldCase(scope);
      const on = folded === cluster || folded.startsWith(`${cluster}/namespaces/`);
      const description = assignment.description ?? '';
      if (!on || !description.startsWith(mark) || !assignment.name || !assignment.principalId) continue;
      if (!known.has(foldCase(assignment.principalId))) continue;
      const consumer = description.slice(mark.length);
      if (keep(consumer, assignment.principalId)) continue;
      await client.roleAssignments.delete(scope, assignment.name);
      removed.push({
        consumer,
        identity: assignment.principalId,
        message: `Azure role assignment at ${scope} deleted (cpsync's, and no consumer is configured with it here)`,
      });
    }
    return removed;
  }

  /**
   * Deletes cpsync's assignments of the grant: every one of the consumer's for the identity on the cluster (its
   * scope and any namespace's), whatever terms the record gives; what it did.
   */
  async revoke(plan: ClusterGrantPlan, grant: HeldGrant): Promise<string> {
    const { client } = this.#client(plan.providerId);
    const mark = grantDescription(this.#manager, grant.consumer);
    let deleted = 0;
    for (const assignments of (await this.#onCluster(client, plan.providerId, grant.identity)).values())
      for (const assignment of assignments)
        if (assignment.description === mark && assignment.name) {
          await client.roleAssignments.delete(assignment.scope!, assignment.name);
          deleted += 1;
        }
    return `${deleted} Azure role assignment(s) deleted`;
  }
}
