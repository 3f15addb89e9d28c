import type { ClusterProfile, ProfileRef } from '../domain/model/clusterProfile.ts';
import { labelsOf, type Hub, type MalformedObject, type NamespaceSpec, type ProfileLabels } from './ports.ts';

/** Profile requests a run made of the hub: reads (get, list, listLabels) and writes (object, status, delete). */
export interface HubCounts {
  reads: number;
  writes: number;
}

/** A hub that counts the profile reads and writes made through it (a run's figures for its summary). */
export class CountingHub implements Hub {
  readonly #hub: Hub;
  readonly #counts: HubCounts = { reads: 0, writes: 0 };

  /** Present when the hub counted has it: one write. */
  readonly applyWhole?: (profile: ClusterProfile) => Promise<ClusterProfile>;

  constructor(hub: Hub) {
    this.#hub = hub;
    if (hub.applyWhole) {
      const whole = hub.applyWhole.bind(hub);
      this.applyWhole = (profile) => {
        this.#counts.writes += 1;
        return whole(profile);
      };
    }
  }

  counts(): HubCounts {
    return { ...this.#counts };
  }

  ensureNamespace(namespace: NamespaceSpec): Promise<void> {
    return this.#hub.ensureNamespace(namespace);
  }

  dropClusterSet(name: string): Promise<void> {
    return this.#hub.dropClusterSet(name);
  }

  get(ref: ProfileRef): Promise<ClusterProfile | undefined> {
    this.#counts.reads += 1;
    return this.#hub.get(ref);
  }

  list(namespace: string, selector: Record<string, string>): Promise<ClusterProfile[]> {
    this.#counts.reads += 1;
    return this.#hub.list(namespace, selector);
  }

  /** One read, whether the hub counted lists labels alone or (without `listLabels`) whole profiles. */
  listLabels(namespace: string, selector: Record<string, string>): Promise<ProfileLabels[]> {
    this.#counts.reads += 1;
    return labelsOf(this.#hub, namespace, selector);
  }

  applyObject(profile: ClusterProfile): Promise<ClusterProfile> {
    this.#counts.writes += 1;
    return this.#hub.applyObject(profile);
  }

  applyStatus(profile: ClusterProfile, before?: ClusterProfile): Promise<ClusterProfile> {
    this.#counts.writes += 1;
    return this.#hub.applyStatus(profile, before);
  }

  delete(ref: ProfileRef & { resourceVersion?: string }): Promise<void> {
    this.#counts.writes += 1;
    return this.#hub.delete(ref);
  }

  updateConfigMap(
    ref: ProfileRef,
    change: (data: Readonly<Record<string, string>>) => Record<string, string>,
  ): Promise<void> {
    return this.#hub.updateConfigMap(ref, change);
  }

  malformed(): MalformedObject[] {
    return this.#hub.malformed?.() ?? [];
  }
}
