import type { ClusterProfile, ProfileRef } from '../../core/domain/model/clusterProfile.ts';
import type { Hub, HubRequestCounts, NamespaceSpec } from '../../core/sync/ports.ts';

/**
 * A hub whose credentials expire: `connect()` makes a fresh hub (e.g. with a new EKS token), used
 * until `maxAgeMillis` have passed. Request counts add up over every hub it made.
 */
export class RefreshingHub implements Hub {
  readonly #connect: () => Promise<Hub>;
  readonly #maxAge: number;
  readonly #clock: () => number;
  #current: { hub: Hub; madeAt: number } | undefined;
  #retired: HubRequestCounts = { reads: 0, writes: 0 };

  constructor(connect: () => Promise<Hub>, maxAgeMillis: number, clock: () => number = Date.now) {
    this.#connect = connect;
    this.#maxAge = maxAgeMillis;
    this.#clock = clock;
  }

  /** The hub in use now (a fresh one once the last is too old). */
  async current(): Promise<Hub> {
    const now = this.#clock();
    if (!this.#current || now - this.#current.madeAt >= this.#maxAge) {
      if (this.#current) {
        const counts = this.#current.hub.requestCounts();
        this.#retired = {
          reads: this.#retired.reads + counts.reads,
          writes: this.#retired.writes + counts.writes,
        };
      }
      this.#current = { hub: await this.#connect(), madeAt: now };
    }
    return this.#current.hub;
  }

  requestCounts(): HubRequestCounts {
    const counts = this.#current?.hub.requestCounts() ?? { reads: 0, writes: 0 };
    return { reads: this.#retired.reads + counts.reads, writes: this.#retired.writes + counts.writes };
  }

  async ensureNamespace(namespace: NamespaceSpec): Promise<void> {
    return (await this.current()).ensureNamespace(namespace);
  }

  async get(ref: ProfileRef): Promise<ClusterProfile | undefined> {
    return (await this.current()).get(ref);
  }

  async list(namespace: string, selector: Record<string, string>): Promise<ClusterProfile[]> {
    return (await this.current()).list(namespace, selector);
  }

  async applyObject(profile: ClusterProfile): Promise<ClusterProfile> {
    return (await this.current()).applyObject(profile);
  }

  async applyStatus(profile: ClusterProfile): Promise<ClusterProfile> {
    return (await this.current()).applyStatus(profile);
  }

  async delete(ref: ProfileRef & { resourceVersion?: string }): Promise<void> {
    return (await this.current()).delete(ref);
  }
}
