/**
 * Azure Resource Graph as AKS's bulk listing: one query for the managed clusters of many subscriptions at
 * once (1,000 rows a page), where ARM lists one subscription a call. The graph is an index that lags ARM by
 * minutes, so it says only where to look: a row unlike what ARM last answered is read from ARM, and a
 * profile the graph does not show is deleted only on ARM's own "not found" (see `AksSource`).
 */
import type { ManagedCluster } from '@azure/arm-containerservice';
import type { TokenCredential } from '@azure/core-auth';
import type { ResourceGraphClient } from '@azure/arm-resourcegraph';
import { PageTokens } from '../shared/pages.ts';
import { obj, str } from '../shared/read.ts';
import { foldCase } from '../../core/domain/naming.ts';

/** The one query: every managed cluster, in the columns the mapping reads, in a stable order for paging. */
const MANAGED_CLUSTERS_QUERY =
  "resources | where type =~ 'microsoft.containerservice/managedclusters' | project id, name, location, tags, properties, subscriptionId | order by id asc";

/** Rows a page: Resource Graph's largest. */
const PAGE_ROWS = 1000;

/** One row of the query: a managed cluster as the graph holds it, and the subscription it is in. */
export interface GraphCluster {
  subscription: string;
  /** As the SDK would have deserialized ARM's answer, less what the graph lacks (`systemData`). */
  cluster: ManagedCluster;
}

/** Wire names of ARM's managed cluster properties that the SDK's model spells otherwise. */
const RENAMED: Record<string, string> = {
  privateFQDN: 'privateFqdn',
  azurePortalFQDN: 'azurePortalFqdn',
};

/**
 * A graph row as the SDK's `ManagedCluster` (ARM's `properties` flattened into the resource, as the SDK's
 * deserializer does), for the fields cpsync maps. Undefined for a row that is not a managed cluster's.
 */
function graphRowCluster(row: unknown): GraphCluster | undefined {
  const r = obj(row);
  const id = str(r.id);
  const subscription = str(r.subscriptionId);
  if (!id || !subscription) return undefined;
  const flattened: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(obj(r.properties))) flattened[RENAMED[key] ?? key] = value;
  const tags = obj(r.tags);
  return {
    subscription: foldCase(subscription),
    cluster: {
      ...flattened,
      id,
      ...(str(r.name) ? { name: str(r.name) } : {}),
      location: str(r.location) ?? '',
      ...(Object.keys(tags).length > 0 ? { tags: tags as Record<string, string> } : {}),
    } as ManagedCluster,
  };
}

export interface ResourceGraphOptions {
  credential: TokenCredential;
  /** ARM endpoint override (Resource Graph answers at ARM's). */
  endpoint?: string;
  requestTimeoutMillis: number;
  /** @default a ResourceGraphClient built from these options */
  client?: ResourceGraphClient;
}

/** Reads the managed clusters of subscriptions through Resource Graph, every page. */
export class AksResourceGraph {
  readonly #options: ResourceGraphOptions;
  #client: ResourceGraphClient | undefined;

  constructor(options: ResourceGraphOptions) {
    this.#options = options;
    this.#client = options.client;
  }

  /** The SDK is loaded on the first query: a source that lists through ARM never loads it. */
  async #graphClient(): Promise<ResourceGraphClient> {
    if (!this.#client) {
      const { ResourceGraphClient } = await import('@azure/arm-resourcegraph');
      const { credential, endpoint } = this.#options;
      this.#client = new ResourceGraphClient(credential, endpoint ? { endpoint } : {});
    }
    return this.#client;
  }

  /**
   * Every managed cluster of `subscriptions` (every subscription the identity can read, without any), by
   * subscription (lower case). Rejects when a page cannot be read: the graph's answer is whole or none.
   */
  async clusters(subscriptions: readonly string[] | undefined, signal?: AbortSignal) {
    const client = await this.#graphClient();
    const found = new Map<string, ManagedCluster[]>();
    const tokens = new PageTokens('Resource Graph query of managed clusters', { signal });
    let skipToken: string | undefined;
    let pages = 0;
    do {
      const page = await client.resources(
        {
          ...(subscriptions ? { subscriptions: [...subscriptions] } : {}),
          query: MANAGED_CLUSTERS_QUERY,
          options: { top: PAGE_ROWS, resultFormat: 'objectArray', ...(skipToken ? { skipToken } : {}) },
        },
        {
          requestOptions: { timeout: this.#options.requestTimeoutMillis },
          ...(signal ? { abortSignal: signal } : {}),
        },
      );
      pages += 1;
      if (page.resultTruncated === 'true' && !page.skipToken)
        throw new Error('Resource Graph truncated its answer without a $skipToken to read the rest');
      for (const row of Array.isArray(page.data) ? (page.data as unknown[]) : []) {
        const read = graphRowCluster(row);
        if (!read) continue;
        const list = found.get(read.subscription);
        if (list) list.push(read.cluster);
        else found.set(read.subscription, [read.cluster]);
      }
      skipToken = tokens.next(page.skipToken);
    } while (skipToken);
    return { clusters: found, pages };
  }
}
