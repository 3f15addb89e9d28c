/**
 * The cloud role a consumer's Google identity needs before GKE lets it in at all (the `accessGrants` feature):
 * `container.clusters.get` on the cluster, which GKE checks on every request, from
 * `roles/container.clusterViewer`. It is granted where GKE reads it, in the project's IAM policy, in one
 * binding per consumer that cpsync marks as its own: its condition, limited to GKE
 * (`resource.service == "container.googleapis.com"`), carries cpsync's description. One binding serves every
 * cluster of the project the consumer is granted; it holds exactly the identities cpsync's grants on them are
 * for. A binding without cpsync's mark is never changed.
 *
 * Resource Manager v3's getIamPolicy / setIamPolicy (policy version 3, which conditions need), written with
 * the etag read, and read again when another writer got there first.
 */
import type { ProjectsClient } from '@google-cloud/resource-manager/build/src/v3/projects_client.js';
import type { CallOptions } from 'google-gax';
import { InvalidOptionError, messageOf } from '../../core/domain/errors.ts';
import { MalformedAnswerError } from '../shared/pages.ts';
import type { RoleHolders } from '../../core/sync/ports.ts';
import { grantDescription } from '../grants/marks.ts';
import { askingResourceManager } from './classify.ts';
import { manyPrincipals } from './manyPrincipals.ts';
import { projectOfSelfLink } from './mapCluster.ts';

/** The role with `container.clusters.get` and nothing else of the project's (nor any Kubernetes permission). */
export const CLUSTER_VIEWER_ROLE = 'roles/container.clusterViewer';
/** The condition that keeps cpsync's bindings to GKE. */
export const GKE_ONLY = 'resource.service == "container.googleapis.com"';
/** Writes tried again when another writer changed the policy in between (ABORTED, 409). */
const ATTEMPTS = 5;
/** Settles of a project whose write took an identity out, each read again after it (see `settle`). */
const SETTLE_ROUNDS = 3;

interface Binding {
  role?: string | null;
  members?: string[] | null;
  condition?: { title?: string | null; description?: string | null; expression?: string | null } | null;
}
interface Policy {
  version?: number | null;
  bindings?: Binding[] | null;
  etag?: Uint8Array | string | null;
}

/**
 * The IAM member a consumer's Google identity is: a service account's email, or a federated principal as it
 * is. A member that stands for more than one principal (`allUsers`, `group:`, `domain:`, `principalSet://` …)
 * is refused, whatever the configuration let through: the project's cluster viewer role is never given to
 * such a member.
 */
export function iamMember(identity: string): string {
  const form = manyPrincipals(identity);
  if (form)
    throw new InvalidOptionError(
      `GKE identity ${JSON.stringify(identity)}`,
      `names more than one principal (${form}); cpsync grants ${CLUSTER_VIEWER_ROLE} to one service account or one federated principal only`,
    );
  return identity.startsWith('principal://') ? identity : `serviceAccount:${identity}`;
}

/** cpsync's bindings as one comparable value: consumer → members, without those left empty. */
const shape = (ours: ReadonlyMap<string, ReadonlySet<string>>) =>
  JSON.stringify(
    [...ours]
      .filter(([, members]) => members.size > 0)
      .map(([consumer, members]) => [consumer, [...members].sort()])
      .sort(),
  );

export class GkeProjectRoles {
  readonly #projects: () => Promise<ProjectsClient>;
  readonly #manager: string;
  readonly #callOptions: CallOptions;

  constructor(options: {
    projects: () => Promise<ProjectsClient>;
    manager: string;
    timeoutMillis: number;
    /** How a call is asked again (GkeSource's `resourceManagerRetry`); by default, as the client's own settings. */
    retry?: CallOptions['retry'];
  }) {
    this.#projects = options.projects;
    this.#manager = options.manager;
    this.#callOptions = {
      timeout: options.timeoutMillis,
      ...(options.retry ? { retry: options.retry } : {}),
    };
  }

  /** Whether a binding is cpsync's, and for which consumer. */
  #consumerOf(binding: Binding): string | undefined {
    if (binding.role !== CLUSTER_VIEWER_ROLE || binding.condition?.expression !== GKE_ONLY) return undefined;
    const prefix = grantDescription(this.#manager, '');
    const description = binding.condition.description ?? '';
    return description.startsWith(prefix) && description.length > prefix.length
      ? description.slice(prefix.length)
      : undefined;
  }

  #binding(consumer: string, members: string[]): Binding {
    return {
      role: CLUSTER_VIEWER_ROLE,
      members,
      condition: {
        title: `cpsync consumer ${consumer}`,
        description: grantDescription(this.#manager, consumer),
        expression: GKE_ONLY,
      },
    };
  }

  /**
   * Reads the project's policy, lets `change` edit cpsync's bindings (consumer → members) and writes it
   * back when they changed, with the etag it read. Returns what `change` said it did.
   */
  async #edit(
    project: string,
    change: (ours: Map<string, Set<string>>) => string[] | Promise<string[]>,
    signal?: AbortSignal,
  ): Promise<string[]> {
    const client = await this.#projects();
    const resource = `projects/${project}`;
    for (let attempt = 1; ; attempt++) {
      signal?.throwIfAborted();
      const [policy] = (await askingResourceManager(() =>
        client.getIamPolicy({ resource, options: { requestedPolicyVersion: 3 } }, this.#callOptions),
      )) as [Policy, ...unknown[]];
      // A policy is written back whole, every binding of the project in it, guarded by the etag it was read with:
      // an answer without one (an empty body from a proxy or an endpoint override reads as a policy of no bindings)
      // is no reading of the project's policy, and writing it back would take every other binding out.
      const etag = policy.etag;
      if (etag === undefined || etag === null || etag.length === 0 || !Array.isArray(policy.bindings ?? []))
        throw new MalformedAnswerError(
          `the IAM policy of project ${project} was answered without its etag; not edited (written back, it would replace every binding of the project)`,
        );
      const others: Binding[] = [];
      const ours = new Map<string, Set<string>>();
      for (const binding of policy.bindings ?? []) {
        const consumer = this.#consumerOf(binding);
        if (consumer === undefined) others.push(binding);
        else {
          const members = ours.get(consumer) ?? new Set<string>();
          for (const member of binding.members ?? []) members.add(member);
          ours.set(consumer, members);
        }
      }
      const before = shape(ours);
      const done = await change(ours);
      signal?.throwIfAborted();
      if (shape(ours) === before) return [];
      const bindings = [
        ...others,
        ...[...ours]
          .filter(([, members]) => members.size > 0)
          .sort(([a], [b]) => a.localeCompare(b))
          .map(([consumer, members]) => this.#binding(consumer, [...members].sort())),
      ];
      try {
        await askingResourceManager(() =>
          client.setIamPolicy({ resource, policy: { ...policy, version: 3, bindings } }, this.#callOptions),
        );
        return done;
      } catch (error) {
        // Another writer changed the policy since it was read: read it again.
        const code = (error as { code?: number }).code;
        if ((code === 10 || code === 409) && attempt < ATTEMPTS) continue;
        throw error;
      }
    }
  }

  /** What cpsync holds in the project's policy, read without changing it (`cpsync doctor`). */
  async inspect(project: string, signal?: AbortSignal): Promise<string> {
    signal?.throwIfAborted();
    const client = await this.#projects();
    const [policy] = (await askingResourceManager(() =>
      client.getIamPolicy(
        { resource: `projects/${project}`, options: { requestedPolicyVersion: 3 } },
        this.#callOptions,
      ),
    )) as [Policy, ...unknown[]];
    const consumers = (policy.bindings ?? []).flatMap((binding) => this.#consumerOf(binding) ?? []);
    return `its IAM policy is readable; cpsync's ${CLUSTER_VIEWER_ROLE} bindings: ${consumers.length > 0 ? consumers.sort().join(', ') : 'none'}`;
  }

  /** `consumer`'s identity in cpsync's binding of the cluster's project (added when missing). */
  async hold(
    providerId: string,
    consumer: string,
    identity: string,
    signal?: AbortSignal,
  ): Promise<string[]> {
    const project = projectOfSelfLink(providerId);
    const member = iamMember(identity);
    return this.#edit(
      project,
      (ours) => {
        const members = ours.get(consumer) ?? new Set<string>();
        if (members.has(member)) return [];
        members.add(member);
        ours.set(consumer, members);
        return [
          `granted ${member} ${CLUSTER_VIEWER_ROLE} on GKE in project ${project} for consumer ${consumer}`,
        ];
      },
      signal,
    );
  }

  /**
   * cpsync's bindings of the project made exactly `holders` (consumer → identities); returns what changed.
   *
   * Given as a function, `holders` is asked after each reading of the policy, and the policy is written with that
   * reading's etag: an identity another writer added before the reading is counted by the holders read after it
   * (its grant was recorded first), and one added after it fails the write, which is then made again on both read
   * anew. One race is left that the etag cannot see: a grant recorded after the holders were read whose identity
   * was already there, which adds nothing and so changes no etag. So after a write that took an identity out,
   * the policy and the holders are read again and the policy made right (a few rounds at most): such a grant is
   * named by then, and one recorded later finds the identity gone and adds it itself.
   */
  async settle(
    project: string,
    holders: RoleHolders | (() => Promise<RoleHolders>),
    signal?: AbortSignal,
  ): Promise<string[]> {
    const changed: string[] = [];
    for (let round = 1; ; round++) {
      let tookOut = false;
      let done: string[];
      try {
        done = await this.#edit(
          project,
          async (ours) => {
            const wantedBy = typeof holders === 'function' ? await holders() : holders;
            const changes: string[] = [];
            tookOut = false;
            for (const consumer of new Set([...ours.keys(), ...wantedBy.keys()])) {
              const wanted = new Set([...(wantedBy.get(consumer) ?? [])].map(iamMember));
              const members = ours.get(consumer) ?? new Set<string>();
              for (const member of members)
                if (!wanted.has(member)) {
                  tookOut = true;
                  changes.push(
                    `revoked ${member} ${CLUSTER_VIEWER_ROLE} in project ${project} (consumer ${consumer}: no cluster of the project is granted to it)`,
                  );
                }
              for (const member of wanted)
                if (!members.has(member))
                  changes.push(
                    `granted ${member} ${CLUSTER_VIEWER_ROLE} on GKE in project ${project} for consumer ${consumer}`,
                  );
              ours.set(consumer, wanted);
            }
            return changes;
          },
          signal,
        );
      } catch (error) {
        // What the rounds before wrote is said all the same.
        if (changed.length > 0 && error instanceof Error)
          error.message = `the settle ${changed.join('; ')}, then: ${error.message}`;
        // Google refusing the write that takes a binding of cpsync's out is no project holding nothing of cpsync's
        // (which a refusal to read it may be): the binding stands, and that is said, whoever refused.
        if (tookOut)
          throw new Error(
            `a ${CLUSTER_VIEWER_ROLE} binding cpsync made in project ${project} stands, its removal refused: ${messageOf(error)}`,
            { cause: error },
          );
        throw error;
      }
      changed.push(...done);
      const written = done.length > 0;
      if (!written || !tookOut || typeof holders !== 'function' || round === SETTLE_ROUNDS) return changed;
    }
  }
}
