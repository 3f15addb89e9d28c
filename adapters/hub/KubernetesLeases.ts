import {
  ApiException,
  CustomObjectsApi,
  type ConfigurationOptions,
  type KubeConfig,
} from '@kubernetes/client-node';
import { sharedConnections } from './connections.ts';
import type { LeaseAnswer, LeaseHolder, LeaseStore } from '../../core/sync/ports.ts';
import { HOST, holderGone, leaseReleased, leaseTaken, takingLease } from './leaseHolders.ts';
import { translate } from './KubernetesHub.ts';

interface Lease {
  metadata: {
    name: string;
    resourceVersion?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  spec?: {
    holderIdentity?: string;
    leaseDurationSeconds?: number;
    acquireTime?: string;
    renewTime?: string;
  };
}

const LEASE = { group: 'coordination.k8s.io', version: 'v1', plural: 'leases' };
/** Where the holder runs: a lease of a process of this machine that is gone is free at once. */
const HOLDER_HOST = 'cpsync.io/holder-host';
const HOLDER_PID = 'cpsync.io/holder-pid';
/** On a lease taken as a share of another: that lease's name (see `sharers`). */
const SHARES = 'cpsync.io/shares';
/** Attempts at a lease whose resourceVersion keeps moving under us. */
const MAX_ATTEMPTS = 5;

/** MicroTime, as the Lease API stores renewTime and acquireTime. */
function microTime(millis: number): string {
  return new Date(millis).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

function status(error: unknown): number | undefined {
  return error instanceof ApiException ? error.code : undefined;
}

export interface KubernetesLeaseStoreOptions {
  /** How to reach the hub; a function for credentials that are renewed (an EKS hub). */
  kubeConfig: KubeConfig | (() => Promise<KubeConfig>);
  /** Namespace of the leases (the inventory namespace). */
  namespace: string;
  /** @default Date.now */
  clock?: () => number;
  /**
   * Time one request may take before it is abandoned.
   * @default 30000
   */
  requestTimeoutMillis?: number;
}

/**
 * Leases of a Kubernetes hub: `coordination.k8s.io/v1` Lease objects in the inventory namespace, taken
 * and renewed with resourceVersion preconditions, so of two runs racing for one only one gets it. A
 * lease whose renewTime + leaseDurationSeconds has passed is free.
 */
export class KubernetesLeaseStore implements LeaseStore {
  readonly #kubeConfig: KubernetesLeaseStoreOptions['kubeConfig'];
  readonly #namespace: string;
  readonly #clock: () => number;
  readonly #timeoutMillis: number;
  /** The client of the current kubeconfig, and its requests' options: one connection pool, a deadline. */
  #api: { config: KubeConfig; api: CustomObjectsApi; options: ConfigurationOptions } | undefined;

  constructor(options: KubernetesLeaseStoreOptions) {
    this.#kubeConfig = options.kubeConfig;
    this.#namespace = options.namespace;
    this.#clock = options.clock ?? Date.now;
    this.#timeoutMillis = options.requestTimeoutMillis ?? 30_000;
  }

  async #client(): Promise<{ api: CustomObjectsApi; options: ConfigurationOptions }> {
    const config = typeof this.#kubeConfig === 'function' ? await this.#kubeConfig() : this.#kubeConfig;
    if (this.#api?.config !== config)
      this.#api = {
        config,
        api: config.makeApiClient(CustomObjectsApi),
        options: sharedConnections(this.#timeoutMillis),
      };
    return this.#api;
  }

  async #get(name: string): Promise<Lease | undefined> {
    try {
      const { api, options } = await this.#client();
      return (await api.getNamespacedCustomObject(
        { ...LEASE, namespace: this.#namespace, name },
        options,
      )) as Lease;
    } catch (error) {
      if (status(error) === 404) return undefined;
      throw translate(error, 'read lease', `${this.#namespace}/${name}`);
    }
  }

  #until(lease: Lease): number {
    const renewed = Date.parse(lease.spec?.renewTime ?? lease.spec?.acquireTime ?? '');
    return Number.isNaN(renewed) ? 0 : renewed + (lease.spec?.leaseDurationSeconds ?? 0) * 1000;
  }

  #heldBy(lease: Lease, name = lease.metadata.name): LeaseHolder | undefined {
    const holder = lease.spec?.holderIdentity;
    const until = this.#until(lease);
    if (!holder || until <= this.#clock()) return undefined;
    const annotations = lease.metadata.annotations ?? {};
    // A run of this machine that was killed (or is over) holds nothing: nobody need wait for the lease to run out.
    if (holderGone(annotations[HOLDER_HOST], Number(annotations[HOLDER_PID]), name, holder)) return undefined;
    return { holder, until: new Date(until).toISOString() };
  }

  #annotations(current?: Lease): Record<string, string> {
    return { ...current?.metadata.annotations, [HOLDER_HOST]: HOST, [HOLDER_PID]: String(process.pid) };
  }

  #spec(holder: string, durationMillis: number, acquired: number) {
    const now = this.#clock();
    return {
      holderIdentity: holder,
      leaseDurationSeconds: Math.max(1, Math.ceil(durationMillis / 1000)),
      acquireTime: microTime(acquired),
      renewTime: microTime(now),
    };
  }

  #labels(current: Lease | undefined, shares: string | undefined): Record<string, string> {
    return {
      ...current?.metadata.labels,
      'app.kubernetes.io/managed-by': 'cpsync',
      ...(shares ? { [SHARES]: shares } : {}),
    };
  }

  acquire(name: string, holder: string, durationMillis: number, shares?: string): Promise<LeaseAnswer> {
    return takingLease(name, holder, () => this.#acquire(name, holder, durationMillis, shares));
  }

  async #acquire(
    name: string,
    holder: string,
    durationMillis: number,
    shares?: string,
  ): Promise<LeaseAnswer> {
    const { api: client, options } = await this.#client();
    for (let attempt = 1; ; attempt++) {
      const current = await this.#get(name);
      try {
        if (!current) {
          await client.createNamespacedCustomObject(
            {
              ...LEASE,
              namespace: this.#namespace,
              body: {
                apiVersion: 'coordination.k8s.io/v1',
                kind: 'Lease',
                metadata: {
                  name,
                  namespace: this.#namespace,
                  labels: this.#labels(undefined, shares),
                  annotations: this.#annotations(),
                },
                spec: this.#spec(holder, durationMillis, this.#clock()),
              },
            },
            options,
          );
          leaseTaken(name, holder);
          return { acquired: true };
        }
        const heldBy = this.#heldBy(current);
        if (heldBy && heldBy.holder !== holder) return { acquired: false, heldBy };
        const acquired =
          heldBy?.holder === holder
            ? Date.parse(current.spec?.acquireTime ?? '') || this.#clock()
            : this.#clock();
        await client.replaceNamespacedCustomObject(
          {
            ...LEASE,
            namespace: this.#namespace,
            name,
            body: {
              ...current,
              metadata: {
                ...current.metadata,
                labels: this.#labels(current, shares),
                annotations: this.#annotations(current),
              },
              spec: this.#spec(holder, durationMillis, acquired),
            },
          },
          options,
        );
        leaseTaken(name, holder);
        return { acquired: true };
      } catch (error) {
        // Someone else created or changed it first: look again.
        if ((status(error) === 409 || status(error) === 422) && attempt < MAX_ATTEMPTS) continue;
        if (status(error) === 409) {
          // Other writers won every race for it: busy, as when it is held, and the caller asks again.
          const now = await this.#get(name);
          const heldBy = now && this.#heldBy(now);
          return {
            acquired: false,
            heldBy: heldBy ?? { holder: now?.spec?.holderIdentity || '(unknown)', until: '' },
          };
        }
        throw translate(error, 'take lease', `${this.#namespace}/${name}`);
      }
    }
  }

  async release(name: string, holder: string): Promise<void> {
    leaseReleased(name, holder);
    const current = await this.#get(name);
    if (!current || current.spec?.holderIdentity !== holder) return;
    try {
      const { api, options } = await this.#client();
      await api.deleteNamespacedCustomObject(
        {
          ...LEASE,
          namespace: this.#namespace,
          name,
          body: { preconditions: { resourceVersion: current.metadata.resourceVersion } },
        },
        options,
      );
    } catch (error) {
      if (status(error) !== 404 && status(error) !== 409)
        throw translate(error, 'give up lease', `${this.#namespace}/${name}`);
    }
  }

  async holderOf(name: string): Promise<LeaseHolder | undefined> {
    const current = await this.#get(name);
    return current && this.#heldBy(current);
  }

  async sharers(name: string): Promise<LeaseHolder[]> {
    let listed: { items?: Lease[] };
    try {
      const { api, options } = await this.#client();
      // A list without a resourceVersion is read from etcd by quorum: it sees every share taken before it.
      listed = (await api.listNamespacedCustomObject(
        { ...LEASE, namespace: this.#namespace, labelSelector: `${SHARES}=${name}` },
        options,
      )) as { items?: Lease[] };
    } catch (error) {
      throw translate(error, 'list the shares of lease', `${this.#namespace}/${name}`);
    }
    const held: LeaseHolder[] = [];
    for (const lease of listed.items ?? []) {
      const heldBy = this.#heldBy(lease);
      if (heldBy) held.push(heldBy);
      else await this.#forget(lease);
    }
    return held;
  }

  /**
   * Deletes a share that ran out (its holder stopped without giving it up), unless it changed since it was
   * read: a cluster's share is taken again only by that cluster's next sync, and a deleted cluster has none.
   * Taking a lease that is not there and one that ran out are the same; a failure leaves it for the next look.
   */
  async #forget(lease: Lease): Promise<void> {
    try {
      const { api, options } = await this.#client();
      await api.deleteNamespacedCustomObject(
        {
          ...LEASE,
          namespace: this.#namespace,
          name: lease.metadata.name,
          body: { preconditions: { resourceVersion: lease.metadata.resourceVersion } },
        },
        options,
      );
    } catch {
      // Taken again meanwhile (409), gone already (404), or the hub did not answer: left as it is.
    }
  }
}
