/**
 * EKS access entries for consumers (the `accessGrants` feature): an entry for the consumer's IAM role,
 * tagged as cpsync's, with the level's EKS access policy at cluster scope. That the entry holds the policy
 * is the proof of reach: EKS's own authorizer reads it. An entry without cpsync's marks (the manager's and the
 * consumer's tags) is never changed; one of a consumer's role that carries them is taken for cpsync's, whoever
 * tagged it (EKS tells a creation from a later tag by no condition: docs/security.md).
 */
import {
  AssociateAccessPolicyCommand,
  CreateAccessEntryCommand,
  DeleteAccessEntryCommand,
  DescribeAccessEntryCommand,
  DisassociateAccessPolicyCommand,
  paginateListAccessEntries,
  paginateListAssociatedAccessPolicies,
  type AssociatedAccessPolicy,
  type EKSClient,
} from '@aws-sdk/client-eks';
import {
  ACCESS_LEVELS,
  eksAccessPolicyArn,
  GrantReason,
  type ClusterGrantPlan,
  type Consumer,
  type GrantResult,
  type HeldGrant,
} from '../../core/domain/grants.ts';
import type { ProviderGrants } from '../grants/CloudGrants.ts';
import { PageTokens } from '../shared/pages.ts';
import { answered, listed } from './classify.ts';
import type { MadeByLook } from '../grants/made.ts';
import { eksClusterOfArn } from './mapCluster.ts';
import {
  GRANT_CONSUMER_KEY,
  GRANT_MANAGER_KEY,
  grantMessage as message,
  isCpsyncGrant,
} from '../grants/marks.ts';

/** Whether an AWS error is a refusal (the caller may not do it), rather than a failure to reach the API. */
function refused(error: unknown): boolean {
  const name = (error as { name?: string }).name ?? '';
  return /AccessDenied|Unauthorized|InvalidRequest|InvalidParameter|NotAuthorized/.test(name);
}

const notFound = (error: unknown) => (error as { name?: string }).name === 'ResourceNotFoundException';

export class EksAccessEntries implements ProviderGrants {
  readonly #manager: string;
  readonly #client: (account: string, region: string) => Promise<EKSClient>;

  constructor(options: { manager: string; client: (account: string, region: string) => Promise<EKSClient> }) {
    this.#manager = options.manager;
    this.#client = options.client;
  }

  #mine(marks: Record<string, string> | undefined, consumer: string): boolean {
    return isCpsyncGrant(marks, this.#manager, consumer);
  }

  async #eks(plan: ClusterGrantPlan) {
    const cluster = eksClusterOfArn(plan.providerId);
    return { cluster, client: await this.#client(cluster.account, cluster.region) };
  }

  async ensure(
    plan: ClusterGrantPlan,
    consumer: Consumer,
    principalArn: string,
    signal: AbortSignal,
    made: MadeByLook,
  ): Promise<GrantResult> {
    const { cluster, client } = await this.#eks(plan);
    const clusterName = cluster.name;
    const policyArn = eksAccessPolicyArn(cluster.partition, consumer.level);
    const levelPolicies = ACCESS_LEVELS.map((level) => eksAccessPolicyArn(cluster.partition, level));
    let mine: boolean;
    try {
      let entry;
      try {
        entry = answered(
          (
            await client.send(new DescribeAccessEntryCommand({ clusterName, principalArn }), {
              abortSignal: signal,
            })
          ).accessEntry,
          `DescribeAccessEntry of ${principalArn} on ${clusterName}`,
        );
      } catch (error) {
        if (!notFound(error)) throw error;
      }
      // The AWS SDK sends a request again after a failure: only a refusal proves a write was not done.
      const resent = { resent: true };
      if (!entry) {
        await made.adding(
          () =>
            client.send(
              new CreateAccessEntryCommand({
                clusterName,
                principalArn,
                type: 'STANDARD',
                tags: { [GRANT_MANAGER_KEY]: this.#manager, [GRANT_CONSUMER_KEY]: consumer.name },
              }),
              { abortSignal: signal },
            ),
          resent,
        );
        mine = true;
      } else {
        mine = this.#mine(entry.tags, consumer.name);
        if (mine) made.found(); // cpsync's entry for the identity, already there
      }
      const associated = await associatedPolicies(client, clusterName, principalArn, signal);
      if (mine) {
        // The cluster, or the consumer's member namespaces (associated again when they change).
        const namespaces = consumer.memberNamespaces ? [...consumer.memberNamespaces].sort() : undefined;
        const scope = namespaces ? { type: 'namespace' as const, namespaces } : { type: 'cluster' as const };
        const same = (a: (typeof associated)[number]) =>
          a.policyArn === policyArn &&
          a.accessScope?.type === scope.type &&
          JSON.stringify([...(a.accessScope?.namespaces ?? [])].sort()) === JSON.stringify(namespaces ?? []);
        if (!associated.some(same))
          await made.adding(
            () =>
              client.send(
                new AssociateAccessPolicyCommand({
                  clusterName,
                  principalArn,
                  policyArn,
                  accessScope: scope,
                }),
                { abortSignal: signal },
              ),
            resent,
          );
        // Another level's policy on cpsync's own entry (the level changed): taken off.
        for (const other of associated)
          if (other.policyArn !== policyArn && levelPolicies.includes(other.policyArn ?? ''))
            await client.send(
              new DisassociateAccessPolicyCommand({ clusterName, principalArn, policyArn: other.policyArn! }),
              { abortSignal: signal },
            );
        return {
          held: principalArn,
          status: 'True',
          reason: GrantReason.Granted,
          message: `access entry for ${principalArn} with ${policyArn.split('/').pop()} (${consumer.memberNamespaces ? `namespaces ${consumer.memberNamespaces.join(', ')}` : 'cluster scope'})`,
        };
      }
      const through = associated.some((a) => a.policyArn === policyArn);
      return through
        ? {
            status: 'True',
            reason: GrantReason.GrantedElsewhere,
            message: `an access entry cpsync did not make gives ${principalArn} ${policyArn.split('/').pop()}; left as it is`,
          }
        : {
            status: 'False',
            reason: GrantReason.NotAllowed,
            message: `an access entry cpsync did not make exists for ${principalArn} without ${policyArn.split('/').pop()}; left as it is`,
          };
    } catch (error) {
      if (refused(error))
        return {
          status: 'False',
          reason: GrantReason.Refused,
          message: `EKS refused the access entry: ${message(error)}`,
        };
      throw error;
    }
  }

  /**
   * Every access entry of the cluster carrying cpsync's marks (both tags) that `keep` does not name, deleted:
   * what no record names. Entries without both marks are never touched, nor those of a principal that is none of
   * `principals` (the identities the configuration gives a consumer, and those the ledger holds grants of): cpsync
   * makes entries for those alone, and tags are anyone's with `eks:TagResource` to write, so marks on another's
   * entry (a break-glass role's) are not cpsync's to act on.
   */
  async sweep(
    plan: ClusterGrantPlan,
    keep: (consumer: string, identity: string) => boolean,
    principals: readonly string[],
    signal: AbortSignal,
    reached: () => void,
  ): Promise<Array<HeldGrant & { message: string }>> {
    const known = new Set(principals);
    const { cluster, client } = await this.#eks(plan);
    const clusterName = cluster.name;
    const removed: Array<HeldGrant & { message: string }> = [];
    const tokens = new PageTokens(`EKS ListAccessEntries of ${clusterName}`, { signal });
    for await (const page of paginateListAccessEntries(
      { client },
      { clusterName },
      { abortSignal: signal },
    )) {
      reached();
      tokens.next(page.nextToken);
      for (const principalArn of listed(page.accessEntries, `ListAccessEntries of ${clusterName}`)) {
        signal.throwIfAborted();
        if (!known.has(principalArn)) continue;
        let tags: Record<string, string> | undefined;
        try {
          tags = answered(
            (
              await client.send(new DescribeAccessEntryCommand({ clusterName, principalArn }), {
                abortSignal: signal,
              })
            ).accessEntry,
            `DescribeAccessEntry of ${principalArn} on ${clusterName}`,
          ).tags;
        } catch (error) {
          if (notFound(error)) continue;
          throw error;
        }
        const consumer = tags?.[GRANT_CONSUMER_KEY];
        if (consumer === undefined || !this.#mine(tags, consumer) || keep(consumer, principalArn)) continue;
        try {
          await client.send(new DeleteAccessEntryCommand({ clusterName, principalArn }), {
            abortSignal: signal,
          });
        } catch (error) {
          if (!notFound(error)) throw error;
        }
        removed.push({
          consumer,
          identity: principalArn,
          message: `access entry for ${principalArn} deleted (cpsync's, and no consumer is configured with it here)`,
        });
      }
    }
    return removed;
  }

  async revoke(
    plan: ClusterGrantPlan,
    grant: HeldGrant,
    signal: AbortSignal,
  ): Promise<{ revoked: boolean; message: string }> {
    const { cluster, client } = await this.#eks(plan);
    const ref = { clusterName: cluster.name, principalArn: grant.identity };
    try {
      const entry = answered(
        (await client.send(new DescribeAccessEntryCommand(ref), { abortSignal: signal })).accessEntry,
        `DescribeAccessEntry of ${grant.identity} on ${cluster.name}`,
      );
      if (!this.#mine(entry.tags, grant.consumer))
        return {
          revoked: true,
          message: `the access entry for ${grant.identity} is not cpsync's; left as it is`,
        };
      await client.send(new DeleteAccessEntryCommand(ref), { abortSignal: signal });
      return { revoked: true, message: `access entry for ${grant.identity} deleted` };
    } catch (error) {
      if (notFound(error)) return { revoked: true, message: 'already gone' };
      return { revoked: false, message: message(error) };
    }
  }
}

/** Every access policy associated with an access entry, each of its pages (a level changed leaves the old one). */
async function associatedPolicies(
  client: EKSClient,
  clusterName: string,
  principalArn: string,
  signal: AbortSignal,
): Promise<AssociatedAccessPolicy[]> {
  const associated: AssociatedAccessPolicy[] = [];
  const tokens = new PageTokens(`EKS ListAssociatedAccessPolicies of ${principalArn} on ${clusterName}`, {
    signal,
  });
  for await (const page of paginateListAssociatedAccessPolicies(
    { client },
    { clusterName, principalArn },
    { abortSignal: signal },
  )) {
    associated.push(...(page.associatedAccessPolicies ?? []));
    tokens.next(page.nextToken);
  }
  return associated;
}
