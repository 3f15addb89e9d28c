import type { ClusterProfile, ProfileRef } from '../../core/domain/model/clusterProfile.ts';
import { labelsOf, type Hub, type NamespaceSpec, type ProfileLabels } from '../../core/sync/ports.ts';

/**
 * A hub whose credentials expire: `connect()` makes a fresh hub (e.g. with a new EKS token), used
 * until `maxAgeMillis` have passed.
 */
export class RefreshingHub implements Hub {
  readonly #connect: () => Promise<Hub>;
  readonly #maxAge: number;
  readonly #clock: () => number;
  #current: { hub: Hub; madeAt: number } | undefined;

  constructor(connect: () => Promise<Hub>, maxAgeMillis: number, clock: () => number = Date.now) {
    this.#connect = connect;
    this.#maxAge = maxAgeMillis;
    this.#clock = clock;
  }

  /** The hub in use now (a fresh one once the last is too old). */
  async current(): Promise<Hub> {
    const now = this.#clock();
    if (!this.#current || now - this.#current.madeAt >= this.#maxAge)
      this.#current = { hub: await this.#connect(), madeAt: now };
    return this.#current.hub;
  }

  async ensureNamespace(namespace: NamespaceSpec): Promise<void> {
    return (await this.current()).ensureNamespace(namespace);
  }

  async dropClusterSet(name: string): Promise<void> {
    return (await this.current()).dropClusterSet(name);
  }

  async get(ref: ProfileRef): Promise<ClusterProfile | undefined> {
    return (await this.current()).get(ref);
  }

  async list(namespace: string, selector: Record<string, string>): Promise<ClusterProfile[]> {
    return (await this.current()).list(namespace, selector);
  }

  async listLabels(namespace: string, selector: Record<string, string>): Promise<ProfileLabels[]> {
    return labelsOf(await this.current(), namespace, selector);
  }

  async applyObject(profile: ClusterProfile): Promise<ClusterProfile> {
    return (await this.current()).applyObject(profile);
  }

  async applyStatus(profile: ClusterProfile, before?: ClusterProfile): Promise<ClusterProfile> {
    return (await this.current()).applyStatus(profile, before);
  }

  async delete(ref: ProfileRef & { resourceVersion?: string }): Promise<void> {
    return (await this.current()).delete(ref);
  }

  async updateConfigMap(
    ref: ProfileRef,
    change: (data: Readonly<Record<string, string>>) => Record<string, string>,
  ): Promise<void> {
    return (await this.current()).updateConfigMap(ref, change);
  }
}
