import { ContainerServiceClient, type ManagedCluster } from '@azure/arm-containerservice';
import { getContinuationToken, SubscriptionClient } from '@azure/arm-resources-subscriptions';
import type { TokenCredential } from '@azure/core-auth';
import { DefaultAzureCredential } from '@azure/identity';
import { load } from 'js-yaml';
import pLimit, { type LimitFunction } from 'p-limit';
import type { ObservedCluster } from '../../core/domain/model/observedCluster.ts';
import { ALL_REGIONS, type Scope } from '../../core/domain/model/scope.ts';
import { InvalidOptionError } from '../../core/domain/errors.ts';
import { canonicalRegion } from '../../core/domain/scopes.ts';
import type { AnswerStore, ClusterRef, ClusterSource, ScopeListing } from '../../core/sync/ports.ts';
import { listedDigest, ScopeAnswers, type AnswerMemory } from '../shared/rememberedAnswers.ts';
import { azureItems, continuationOnPage } from '../shared/pages.ts';
import { azureErrorDetails, azureResourceGone, classifyAzureError } from './classify.ts';
import { aksClusterOfId, isAksResourceId, mapAksCluster, resourceGroupOf } from './mapCluster.ts';
import { AksResourceGraph } from './resourceGraph.ts';
import { GraphListing, graphDigest, isCaAnswer } from './graphListing.ts';
import { compareOrdinal, foldCase } from '../../core/domain/naming.ts';

export interface AksSourceOptions {
  /**
   * The identity cpsync uses in Azure (a federated workload identity, or a client secret).
   * @default DefaultAzureCredential
   */
  credential?: TokenCredential;
  /**
   * Azure Resource Manager endpoint override (private link, proxies, emulators).
   * @default https://management.azure.com
   */
  endpoint?: string;
  /**
   * Read each cluster's CA bundle with listClusterUserCredential (needs
   * `Microsoft.ContainerService/managedClusters/listClusterUserCredential/action`). Only the CA data is
   * kept from the returned kubeconfig; nothing else of it is stored. A read that fails (a missing
   * permission) leaves the CA out and says why on the profile; it never makes the listing partial.
   * @default true
   */
  fetchCertificateAuthority?: boolean;
  /**
   * The Entra tenant a cluster without its own AAD tenant (`aadProfile.tenantID`) belongs to: what a
   * credential plugin needs to ask Entra for a token.
   */
  tenantId?: string;
  /**
   * Time one request to ARM may take before it is abandoned.
   * @default 30000
   */
  requestTimeoutMillis?: number;
  /**
   * listClusterUserCredential calls in flight against one subscription at once (ARM throttles reads per
   * subscription; a subscription of hundreds of clusters would otherwise ask for every CA at once).
   * @default 8
   */
  perSubscriptionConcurrency?: number;
  /**
   * Where the CAs read are remembered (only cpsync writes it): a cluster whose listing shows its control
   * plane as it was when its CA was read (see `controlPlaneDigest`) and whose CA is younger than
   * `certificateAuthorityMaxAgeMillis` is not asked again. Unset: every listing asks for every CA.
   */
  answers?: AnswerStore;
  /**
   * How old a remembered CA may be and still stand for the cloud's answer (0: always ask).
   * @default 86400000 (a day)
   */
  certificateAuthorityMaxAgeMillis?: number;
  /**
   * How the subscriptions' clusters are listed: `arm`, one `managedClusters.list` per subscription (the
   * authority); or `resourceGraph`, one Azure Resource Graph query for many subscriptions at once, read from
   * ARM only where it differs from what ARM last answered (a new cluster, a change, an operation in progress, an
   * answer a day old), with every absence confirmed by ARM's own "not found" before a profile goes.
   * @default 'arm'
   */
  listing?: 'arm' | 'resourceGraph';
  /**
   * The subscriptions the Resource Graph query covers (its `subscriptions`); unset, every subscription the
   * identity can read (a tenant-wide query). Each scope keeps only its own subscription's rows.
   */
  graphSubscriptions?: readonly string[];
  /**
   * How long one Resource Graph answer serves the scopes listed after it (a run lists every subscription
   * within seconds; a later run asks again).
   * @default 30000
   */
  graphShareMillis?: number;
  /** @default a ContainerServiceClient per subscription, built from these options */
  clientFor?: (subscriptionId: string) => ContainerServiceClient;
  /** @default a SubscriptionClient built from these options */
  subscriptionClient?: SubscriptionClient;
}

/** How to find the Azure subscriptions to list. */
export type SubscriptionSelection = { subscriptions: string[] } | { all: true };

/** A remembered CA is asked again after a day at most. */
const DEFAULT_CA_MAX_AGE_MILLIS = 24 * 60 * 60 * 1000;

/** The provisioning state of a cluster no operation is changing. */
const SETTLED = 'succeeded';

/**
 * What the listing shows of a cluster's control plane: its id, API server names, Kubernetes version,
 * provisioning state and ARM's last modification. A change in any of them (an upgrade, a private cluster
 * turned public, an operation that ran, a cluster deleted and made again under the same id) reads the CA again.
 */
function controlPlaneDigest(cluster: ManagedCluster): string {
  const time = (value: unknown) => (value instanceof Date ? value.toISOString() : String(value ?? ''));
  return listedDigest([
    foldCase(cluster.id ?? ''),
    cluster.fqdn ?? '',
    cluster.privateFqdn ?? '',
    cluster.azurePortalFqdn ?? '',
    cluster.kubernetesVersion ?? '',
    cluster.currentKubernetesVersion ?? '',
    cluster.provisioningState ?? '',
    time(cluster.systemData?.createdAt),
    time(cluster.systemData?.lastModifiedAt),
  ]);
}

/** Subscription states in which clusters can be listed. */
const USABLE_STATES = new Set(['Enabled', 'Warned', 'PastDue']);

/**
 * AKS managed clusters of one subscription (every page of `managedClusters.list`), optionally
 * filtered to one location. The SDK follows nextLink and honours 429 Retry-After by itself.
 *
 * One file because the listing, one cluster's read and the CA each cluster's kubeconfig holds share one memory of
 * what ARM answered (when the CA is asked again, and what a control-plane change makes stale): apart, a path
 * that asks again or trusts a stale answer would not show beside the others. Resource Graph's listing, which
 * only replaces the listing, is its own file (graphListing.ts).
 */
export class AksSource implements ClusterSource {
  readonly #options: AksSourceOptions;
  readonly #credential: TokenCredential;
  readonly #clients = new Map<string, ContainerServiceClient>();
  readonly #perSubscription = new Map<string, LimitFunction>();
  readonly #memory: AnswerMemory;
  /** Listing through Resource Graph (`listing: 'resourceGraph'`). */
  readonly #graph: GraphListing | undefined;

  constructor(options: AksSourceOptions = {}) {
    this.#options = options;
    this.#credential = options.credential ?? new DefaultAzureCredential();
    this.#memory = {
      ...(options.answers ? { store: options.answers } : {}),
      maxAgeMillis: options.certificateAuthorityMaxAgeMillis ?? DEFAULT_CA_MAX_AGE_MILLIS,
    };
    this.#graph =
      options.listing === 'resourceGraph'
        ? new GraphListing(
            new AksResourceGraph({
              credential: this.#credential,
              ...(options.endpoint ? { endpoint: options.endpoint } : {}),
              requestTimeoutMillis: options.requestTimeoutMillis ?? 30_000,
            }),
            {
              client: (subscription) => this.#client(subscription),
              limit: (subscription) => this.#limit(subscription),
              call: (signal) => this.#call(signal),
              mapped: (cluster, scope) => this.#mapped(cluster, scope),
              observe: (client, cluster, observed, answers, signal) =>
                this.#observe(client, cluster, observed, answers, signal),
              readsCa: this.#fetchesCa(),
              memory: this.#memory,
            },
            {
              ...(options.graphSubscriptions ? { subscriptions: options.graphSubscriptions } : {}),
              ...(options.graphShareMillis !== undefined ? { shareMillis: options.graphShareMillis } : {}),
            },
          )
        : undefined;
  }

  /** Options of every ARM call: its deadline, and the scope's signal. */
  #call(signal?: AbortSignal) {
    const timeout = this.#options.requestTimeoutMillis ?? 30_000;
    return { requestOptions: { timeout }, ...(signal ? { abortSignal: signal } : {}) };
  }

  #client(subscriptionId: string): ContainerServiceClient {
    if (this.#options.clientFor) return this.#options.clientFor(subscriptionId);
    let client = this.#clients.get(subscriptionId);
    if (!client) {
      client = new ContainerServiceClient(
        this.#credential,
        subscriptionId,
        this.#options.endpoint ? { endpoint: this.#options.endpoint } : {},
      );
      this.#clients.set(subscriptionId, client);
    }
    return client;
  }

  async #caData(
    client: ContainerServiceClient,
    cluster: ManagedCluster,
    signal?: AbortSignal,
  ): Promise<Pick<ObservedCluster, 'certificateAuthorityData' | 'certificateAuthorityUnavailable'>> {
    const group = resourceGroupOf(cluster.id ?? '');
    if (!group || !cluster.name) return {};
    const result = await client.managedClusters.listClusterUserCredentials(
      group,
      cluster.name,
      this.#call(signal),
    );
    // ARM answers a cluster's user credentials with its kubeconfig, which names its CA: an answer without one says
    // nothing of the CA, and is not taken (nor remembered) as a cluster without one.
    const value = result.kubeconfigs?.[0]?.value;
    if (!value) return { certificateAuthorityUnavailable: 'InvalidResponse' };
    let kubeconfig: { clusters?: Array<{ cluster?: Record<string, string> }> } | undefined;
    try {
      // js-yaml: several times faster than the `yaml` package, once per cluster of every sync.
      kubeconfig = load(Buffer.from(value).toString('utf8')) as typeof kubeconfig;
    } catch {
      // The user kubeconfig holds credentials: its text is never quoted, only that it did not parse.
      return { certificateAuthorityUnavailable: 'UnreadableKubeconfig' };
    }
    const ca = kubeconfig?.clusters?.[0]?.cluster?.['certificate-authority-data'];
    return typeof ca === 'string' && ca !== ''
      ? { certificateAuthorityData: ca }
      : { certificateAuthorityUnavailable: 'UnreadableKubeconfig' };
  }

  async listScope(scope: Scope, signal?: AbortSignal): Promise<ScopeListing> {
    if (this.#graph) {
      const rows = await this.#graph.rows(scope);
      // The graph could not be read: ARM lists the subscription, as it does without the graph.
      if (rows) return this.#graph.list(scope, rows, signal);
    }
    const client = this.#client(scope.account);
    const found: ManagedCluster[] = [];
    const unplaced: string[] = [];
    try {
      for await (const cluster of azureItems(
        `ARM's managed clusters of subscription ${scope.account}`,
        client.managedClusters.list(this.#call(signal)),
        continuationOnPage,
        signal,
      )) {
        if (scope.region === ALL_REGIONS || canonicalRegion('aks', cluster.location ?? '') === scope.region)
          found.push(cluster);
        // A listed cluster whose location is not told may be in the region: not listed there, not taken as gone.
        else if (!cluster.location) unplaced.push(`${cluster.name ?? 'a cluster'} (no location)`);
      }
    } catch (error) {
      return {
        outcome: {
          scope,
          kind: 'failed',
          failure: { reason: classifyAzureError(error), message: azureErrorDetails(error).message },
        },
        clusters: [],
      };
    }
    const limit = this.#limit(scope.account);
    const answers = this.#fetchesCa()
      ? await ScopeAnswers.load(this.#memory, scope)
      : ScopeAnswers.none(this.#memory);
    const clusters = await Promise.all(
      found.map((cluster) => {
        const observed = this.#mapped(cluster, scope);
        const remembered = this.#rememberedCa(cluster, observed, answers);
        return remembered ?? limit(() => this.#observe(client, cluster, observed, answers, signal));
      }),
    );
    // The listing was whole: what is remembered of a cluster it did not show goes.
    if (this.#fetchesCa()) await answers.save('all');
    clusters.sort((a, b) => compareOrdinal(a.providerId, b.providerId));
    return {
      outcome:
        unplaced.length > 0
          ? { scope, kind: 'partial', missing: unplaced.sort() }
          : { scope, kind: 'complete' },
      clusters,
    };
  }

  /** ARM reads in flight against one subscription at once. */
  #limit(subscription: string): LimitFunction {
    let limit = this.#perSubscription.get(subscription);
    if (!limit) {
      limit = pLimit(this.#options.perSubscriptionConcurrency ?? 8);
      this.#perSubscription.set(subscription, limit);
    }
    return limit;
  }

  #fetchesCa(): boolean {
    return this.#options.fetchCertificateAuthority !== false;
  }

  #mapped(cluster: ManagedCluster, scope: Pick<Scope, 'account'>): ObservedCluster {
    const observed = mapAksCluster(cluster, scope.account);
    if (!observed.tenantId && this.#options.tenantId) observed.tenantId = this.#options.tenantId;
    return observed;
  }

  /**
   * The cluster with the CA last read for it, when its listing shows its control plane settled and as it was
   * then, and that read is young enough; undefined when the CA is to be asked for.
   */
  #rememberedCa(
    cluster: ManagedCluster,
    observed: ObservedCluster,
    answers: ScopeAnswers,
  ): ObservedCluster | undefined {
    // An operation in progress (a certificate rotation among them) may change the CA: asked at every listing.
    if (!this.#fetchesCa() || (cluster.provisioningState ?? '').toLowerCase() !== SETTLED) return undefined;
    const answer = answers.usable(observed, controlPlaneDigest(cluster));
    return answer && isCaAnswer(answer) ? { ...observed, ...answer } : undefined;
  }

  /**
   * One listed cluster with its CA. A CA that cannot be read (no permission for
   * listClusterUserCredential, a throttled call) is left out with the reason, and the cluster is still
   * observed: the listing stays complete, so deletions in the subscription are not frozen by it.
   */
  async #observe(
    client: ContainerServiceClient,
    cluster: ManagedCluster,
    observed: ObservedCluster,
    answers: ScopeAnswers,
    signal?: AbortSignal,
  ): Promise<ObservedCluster> {
    const identity = {
      provider: 'aks' as const,
      account: observed.account,
      region: canonicalRegion('aks', observed.region),
      providerId: observed.providerId,
    };
    const askedAt = answers.askingNow();
    let ca: Pick<ObservedCluster, 'certificateAuthorityData' | 'certificateAuthorityUnavailable'>;
    if (!this.#fetchesCa()) ca = { certificateAuthorityUnavailable: 'NotRead' };
    else
      try {
        ca = await this.#caData(client, cluster, signal);
      } catch (error) {
        if (signal?.aborted) throw error;
        ca = { certificateAuthorityUnavailable: classifyAzureError(error) };
      }
    const result = { ...observed, ...ca };
    // A CA that could not be read is asked again next time.
    if (this.#fetchesCa() && ca.certificateAuthorityUnavailable) answers.forget(identity);
    else if (this.#graph)
      answers.remember(identity, graphDigest(result, this.#fetchesCa()), askedAt, {
        ...(result.createdAt ? { createdAt: result.createdAt } : {}),
        ...(result.certificateAuthorityData
          ? { certificateAuthorityData: result.certificateAuthorityData }
          : {}),
      });
    else if (this.#fetchesCa())
      answers.remember(identity, controlPlaneDigest(cluster), askedAt, {
        certificateAuthorityData: result.certificateAuthorityData,
      });
    return result;
  }

  /** A managed cluster as ARM answers it, by its resource id (undefined when it is not there). */
  async managedCluster(providerId: string): Promise<ManagedCluster | undefined> {
    const cluster = aksClusterOfId(providerId);
    if (!cluster) throw new InvalidOptionError('providerId', `is not an AKS cluster id: ${providerId}`);
    try {
      return await this.#client(cluster.subscription).managedClusters.get(
        cluster.resourceGroup,
        cluster.name,
        this.#call(),
      );
    } catch (error) {
      if (azureResourceGone(error)) return undefined;
      throw error;
    }
  }

  isProviderIdOf(providerId: string, ref: ClusterRef): boolean {
    return isAksResourceId(providerId, ref.scope.account, ref.resourceGroup ?? '', ref.name);
  }

  async getCluster(ref: ClusterRef): Promise<ObservedCluster | undefined> {
    if (!ref.resourceGroup) throw new InvalidOptionError('resourceGroup', 'is needed to find an AKS cluster');
    const client = this.#client(ref.scope.account);
    let cluster: ManagedCluster;
    try {
      cluster = await client.managedClusters.get(ref.resourceGroup, ref.name, this.#call());
    } catch (error) {
      if (!azureResourceGone(error)) throw error;
      // The graph may show a deleted cluster for minutes: what was remembered of it must not stand for it.
      if (this.#graph) await this.#graph.forgetGone(ref);
      return undefined;
    }
    // One cluster (an event, a follow-up look) is always asked, and what it said is remembered.
    const answers = ScopeAnswers.none(this.#memory);
    const observed = await this.#observe(client, cluster, this.#mapped(cluster, ref.scope), answers);
    await answers.save();
    return observed;
  }

  /** Subscriptions the identity can use: explicit, or every one it can see in a usable state. */
  async selectSubscriptions(selection: SubscriptionSelection): Promise<string[]> {
    if ('subscriptions' in selection) return [...new Set(selection.subscriptions.map(foldCase))].sort();
    const client =
      this.#options.subscriptionClient ??
      new SubscriptionClient(
        this.#credential,
        this.#options.endpoint ? { endpoint: this.#options.endpoint } : {},
      );
    const found: string[] = [];
    for await (const subscription of azureItems(
      "ARM's subscriptions",
      client.subscriptions.list(this.#call()),
      getContinuationToken,
    )) {
      if (subscription.subscriptionId && (!subscription.state || USABLE_STATES.has(subscription.state)))
        found.push(foldCase(subscription.subscriptionId));
    }
    return [...new Set(found)].sort();
  }
}

/** One scope per selected subscription, every location at once. */
export async function enumerateAksScopes(
  source: AksSource,
  selection: SubscriptionSelection,
): Promise<Scope[]> {
  return (await source.selectSubscriptions(selection)).map((subscription) => ({
    provider: 'aks',
    account: subscription,
    region: ALL_REGIONS,
  }));
}
