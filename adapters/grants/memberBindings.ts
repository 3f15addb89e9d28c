/**
 * A consumer's RBAC bindings on a member (GKE, AKS): the ClusterRoleBinding `cpsync:consumer:<name>` (the
 * whole cluster), or a RoleBinding of that name in each namespace the consumer is given, of its identities
 * (`User` subjects) to the level's ClusterRole; labelled as cpsync's. An identity is added to or taken out of
 * cpsync's binding (one binding may hold several identities of the consumer: one per cloud); a binding
 * without cpsync's labels is never changed or deleted. Labels are anyone's to write, so what cpsync writes into a
 * binding labelled as its own binds only the consumer's configured identities (`User` subjects): any other subject
 * found there is left out, never carried to the level cpsync binds. Conflicts (another writer) are tried again.
 */
import type { RbacAuthorizationV1Api } from '@kubernetes/client-node';
import {
  ApiException,
  type ConfigurationOptions,
  type V1ClusterRoleBinding,
  type V1RoleBinding,
  type RbacV1Subject as V1Subject,
} from '@kubernetes/client-node';
import type { MadeByLook } from './made.ts';
import { GRANT_CONSUMER_KEY, GRANT_MANAGER_KEY, isCpsyncGrant } from './marks.ts';

/** Where a binding is: the whole cluster, or one namespace. */
type Place = { namespace?: string };
type Binding = V1ClusterRoleBinding | V1RoleBinding;

/** The name of a consumer's bindings. */
const bindingName = (consumer: string) => `cpsync:consumer:${consumer}`;

const isUser = (identity: string) => (s: V1Subject) => s.kind === 'User' && s.name === identity;
const notFound = (error: unknown) => error instanceof ApiException && error.code === 404;
const conflict = (error: unknown) => error instanceof ApiException && error.code === 409;

/** `work` again on a conflict (another writer, another cluster's grant on the same member), up to 4 times. */
async function retried<T>(work: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++)
    try {
      return await work();
    } catch (error) {
      if (!(conflict(error) && attempt < 4)) throw error;
    }
}

export class MemberBindings {
  readonly #rbac: RbacAuthorizationV1Api;
  readonly #options: ConfigurationOptions;
  readonly #manager: string;
  readonly #consumer: string;
  readonly #made: MadeByLook | undefined;
  readonly #identities: ReadonlySet<string>;

  /**
   * `made`: a grant's look, told of every write that can give the identity access. `identities`: the consumer's
   * identities in the configuration, the only subjects kept beside the one bound when cpsync writes a binding.
   */
  constructor(
    rbac: RbacAuthorizationV1Api,
    options: ConfigurationOptions,
    manager: string,
    consumer: string,
    made?: MadeByLook,
    identities: readonly string[] = [],
  ) {
    this.#rbac = rbac;
    this.#options = options;
    this.#manager = manager;
    this.#consumer = consumer;
    this.#made = made;
    this.#identities = new Set(identities);
  }

  /** A write that gives access, told to the look. */
  #adding<T>(write: () => Promise<T>): Promise<T> {
    return this.#made ? this.#made.adding(write) : write();
  }

  get name(): string {
    return bindingName(this.#consumer);
  }

  #read(place: Place): Promise<Binding> {
    const name = this.name;
    return place.namespace
      ? this.#rbac.readNamespacedRoleBinding({ name, namespace: place.namespace }, this.#options)
      : this.#rbac.readClusterRoleBinding({ name }, this.#options);
  }

  #create(place: Place, body: Binding): Promise<Binding> {
    return place.namespace
      ? this.#rbac.createNamespacedRoleBinding({ namespace: place.namespace, body }, this.#options)
      : this.#rbac.createClusterRoleBinding({ body }, this.#options);
  }

  #replace(place: Place, body: Binding): Promise<Binding> {
    const name = this.name;
    return place.namespace
      ? this.#rbac.replaceNamespacedRoleBinding({ name, namespace: place.namespace, body }, this.#options)
      : this.#rbac.replaceClusterRoleBinding({ name, body }, this.#options);
  }

  async #delete(place: Place, resourceVersion: string | undefined): Promise<void> {
    const name = this.name;
    const body = resourceVersion ? { preconditions: { resourceVersion } } : {};
    if (place.namespace)
      await this.#rbac.deleteNamespacedRoleBinding({ name, namespace: place.namespace, body }, this.#options);
    else await this.#rbac.deleteClusterRoleBinding({ name, body }, this.#options);
  }

  #mine(binding: Binding): boolean {
    return isCpsyncGrant(binding.metadata?.labels, this.#manager, this.#consumer);
  }

  /**
   * Binds `identity` to `role` at `place`: true when cpsync's binding holds it, false when a binding of that
   * name is not cpsync's (left as it is). A missing namespace is a 404 for the caller to say.
   */
  async bind(place: Place, role: string, identity: string): Promise<boolean> {
    const subject: V1Subject = { apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: identity };
    const wanted: Binding = {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: place.namespace ? 'RoleBinding' : 'ClusterRoleBinding',
      metadata: {
        name: this.name,
        ...(place.namespace ? { namespace: place.namespace } : {}),
        labels: { [GRANT_MANAGER_KEY]: this.#manager, [GRANT_CONSUMER_KEY]: this.#consumer },
      },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
      subjects: [subject],
    };
    return retried(async () => {
      let existing: Binding | undefined;
      try {
        existing = await this.#read(place);
      } catch (error) {
        if (!notFound(error)) throw error;
      }
      if (!existing) {
        await this.#adding(() => this.#create(place, wanted));
        return true;
      }
      if (!this.#mine(existing)) return false;
      const subjects = existing.subjects ?? [];
      const holds = subjects.some(isUser(identity));
      if (holds) this.#made?.found(); // cpsync's, already giving the identity access
      // What cpsync writes binds the consumer's own identities only: the identity, and others of its configured
      // ones already there. Whatever else a binding labelled as cpsync's holds is not carried into the write.
      const kept = [
        ...subjects.filter(
          (s) =>
            s.apiGroup === subject.apiGroup &&
            this.#identities.has(s.name) &&
            isUser(s.name)(s) &&
            s.name !== identity,
        ),
        subject,
      ];
      const { roleRef } = existing;
      if (
        roleRef.name !== role ||
        roleRef.kind !== 'ClusterRole' ||
        roleRef.apiGroup !== wanted.roleRef.apiGroup
      ) {
        // A binding's role cannot change: cpsync's own is made again for the new level (always the ClusterRole of
        // that name, never a Role someone wrote under it), with its identities.
        await this.#delete(place, existing.metadata?.resourceVersion);
        await this.#adding(() => this.#create(place, { ...wanted, subjects: kept }));
        return true;
      }
      // The identity added, or whatever else the binding came to hold (an earlier version kept it) left out.
      if (!holds || subjects.length !== kept.length)
        await this.#adding(() => this.#replace(place, { ...existing, subjects: kept }));
      return true;
    });
  }

  /** Takes `identity` out of cpsync's binding at `place` (deleting it when no one is left); what it did. */
  async unbind(place: Place, identity: string): Promise<string> {
    return retried(async () => {
      let existing: Binding;
      try {
        existing = await this.#read(place);
      } catch (error) {
        if (notFound(error)) return 'already gone';
        throw error;
      }
      const where = place.namespace ? `${place.namespace}/${this.name}` : this.name;
      if (!this.#mine(existing)) return `${where} is not cpsync's; left as it is`;
      // cpsync binds users only, and no system identity: a group, a service account or a system user in its binding
      // is no one's to keep there (the member's admission policy refuses a write that binds one). Given the
      // consumer's identities, only those are kept, as `bind` keeps them.
      const others = (existing.subjects ?? []).filter(
        (s) =>
          s.kind === 'User' &&
          !isUser(identity)(s) &&
          !s.name.startsWith('system:') &&
          (this.#identities.size === 0 || this.#identities.has(s.name)),
      );
      if (others.length === (existing.subjects ?? []).length) return `${identity} is not in ${where}`;
      if (others.length === 0) await this.#delete(place, existing.metadata?.resourceVersion);
      else
        try {
          await this.#replace(place, { ...existing, subjects: others });
        } catch (error) {
          // The member refuses to keep a subject someone put there (its admission policy): the binding goes
          // whole, access taken rather than left; the consumer's next grant makes what is wanted again.
          if (!(error instanceof ApiException && (error.code === 403 || error.code === 422))) throw error;
          await this.#delete(place, existing.metadata?.resourceVersion);
          return `${identity} taken out of ${where} (deleted whole: the member refused what else it held)`;
        }
      return `${identity} taken out of ${where}`;
    });
  }

  /** The places where cpsync's bindings of this consumer are: the cluster's, and each namespace's. */
  async places(): Promise<Place[]> {
    const places: Place[] = [];
    const selector = `${GRANT_MANAGER_KEY}=${this.#manager},${GRANT_CONSUMER_KEY}=${this.#consumer}`;
    // The cluster's binding and the namespaces', asked at once (both answered before either's failure is met).
    const [cluster, listed] = await Promise.allSettled([
      this.#read({}),
      this.#rbac.listRoleBindingForAllNamespaces({ labelSelector: selector }, this.#options),
    ]);
    if (cluster.status === 'rejected' && !notFound(cluster.reason)) throw cluster.reason;
    if (listed.status === 'rejected') throw listed.reason;
    if (cluster.status === 'fulfilled' && this.#mine(cluster.value)) places.push({});
    const { items } = listed.value;
    for (const binding of items)
      if (binding.metadata?.name === this.name && binding.metadata.namespace)
        places.push({ namespace: binding.metadata.namespace });
    return places;
  }
}
