/**
 * AKS listed through Azure Resource Graph (`listing: 'resourceGraph'`): one query (see `AksResourceGraph`) serves the
 * scopes listed within `shareMillis` of it. The graph is an index that lags ARM, so it only says where to look: a
 * row unlike what ARM last answered is read from ARM, a row ARM answers not found is left out, and the listing's
 * absences are confirmed by ARM's own answer (`confirmAbsent`) before the engine deletes anything.
 */
import type { ContainerServiceClient, ManagedCluster } from '@azure/arm-containerservice';
import type { LimitFunction } from 'p-limit';
import type { ObservedCluster } from '../../core/domain/model/observedCluster.ts';
import { ALL_REGIONS, type Scope } from '../../core/domain/model/scope.ts';
import { InvalidOptionError } from '../../core/domain/errors.ts';
import { canonicalRegion } from '../../core/domain/scopes.ts';
import type { AbsenceAnswer, ClusterRef, ScopeListing } from '../../core/sync/ports.ts';
import { listedDigest, ScopeAnswers, type AnswerMemory } from '../shared/rememberedAnswers.ts';
import { azureResourceGone } from './classify.ts';
import { aksClusterOfId, isAksResourceId } from './mapCluster.ts';
import type { AksResourceGraph } from './resourceGraph.ts';
import { compareOrdinal, foldCase } from '../../core/domain/naming.ts';

/** The provisioning state of a cluster no operation is changing. */
const SETTLED = 'succeeded';

/**
 * How long the graph's one query may take, every page of it (1,000 clusters a page). Past it the query fails, and
 * the scopes waiting on it are listed through ARM.
 */
const GRAPH_QUERY_MILLIS = 120_000;

/** A remembered answer as the source stores it: the CA, and (listing through the graph) what the graph lacks. */
export type CaAnswer = Pick<ObservedCluster, 'certificateAuthorityData' | 'createdAt'>;

export function isCaAnswer(answer: Record<string, unknown>): answer is CaAnswer {
  const keys = Object.keys(answer);
  return (
    keys.every((key) => key === 'certificateAuthorityData' || key === 'createdAt') &&
    (answer.certificateAuthorityData === undefined || typeof answer.certificateAuthorityData === 'string') &&
    (answer.createdAt === undefined || typeof answer.createdAt === 'string')
  );
}

/**
 * What Resource Graph shows of a cluster, as cpsync maps it (all but its creation time and CA, which the graph
 * lacks): a graph row whose digest is the one ARM's answer had when it was read stands for that answer.
 */
export function graphDigest(observed: ObservedCluster, readsCa: boolean): string {
  const {
    createdAt: _created,
    certificateAuthorityData: _ca,
    certificateAuthorityUnavailable: _unavailable,
    ...shown
  } = observed;
  // Ids are compared as ARM compares them (without regard to case).
  return listedDigest([
    'graph',
    readsCa,
    {
      ...shown,
      providerId: foldCase(shown.providerId),
      resourceGroup: shown.resourceGroup === undefined ? undefined : foldCase(shown.resourceGroup),
    },
  ]);
}

/** What the graph listing uses of the AKS source: its ARM clients and limits, and its one way to observe a cluster. */
export interface ArmReads {
  client(subscription: string): ContainerServiceClient;
  limit(subscription: string): LimitFunction;
  call(signal?: AbortSignal): { requestOptions: { timeout: number }; abortSignal?: AbortSignal };
  mapped(cluster: ManagedCluster, scope: Pick<Scope, 'account'>): ObservedCluster;
  /** The cluster with its CA, what ARM answered remembered. */
  observe(
    client: ContainerServiceClient,
    cluster: ManagedCluster,
    observed: ObservedCluster,
    answers: ScopeAnswers,
    signal?: AbortSignal,
  ): Promise<ObservedCluster>;
  readsCa: boolean;
  memory: AnswerMemory;
}

export class GraphListing {
  readonly #graph: AksResourceGraph;
  readonly #arm: ArmReads;
  readonly #subscriptions: readonly string[] | undefined;
  readonly #shareMillis: number;
  readonly #queryMillis: number;
  /** The Resource Graph answer the scopes listed now share, and when it came. */
  #graphAnswer: { clusters: Promise<Map<string, ManagedCluster[]>>; at?: number } | undefined;

  constructor(
    graph: AksResourceGraph,
    arm: ArmReads,
    options: { subscriptions?: readonly string[]; shareMillis?: number; queryMillis?: number },
  ) {
    this.#graph = graph;
    this.#arm = arm;
    this.#subscriptions = options.subscriptions;
    this.#shareMillis = options.shareMillis ?? 30_000;
    this.#queryMillis = options.queryMillis ?? GRAPH_QUERY_MILLIS;
  }

  /**
   * The scope's managed clusters as Resource Graph shows them, from the answer the scopes listed now share (one
   * query for every subscription); undefined when the graph cannot be read.
   */
  async rows(scope: Scope): Promise<ManagedCluster[] | undefined> {
    const share = this.#shareMillis;
    const now = Date.now();
    let answer = this.#graphAnswer;
    if (!answer || (answer.at !== undefined && now - answer.at >= share)) {
      const asked: NonNullable<typeof answer> = {
        // Its own deadline: every scope listed meanwhile waits on this one query, and one that never ended
        // would keep them all from ARM's listing for as long as the process lives.
        clusters: this.#graph
          .clusters(this.#subscriptions, AbortSignal.timeout(this.#queryMillis))
          .then(({ clusters }) => clusters),
      };
      this.#graphAnswer = answer = asked;
      // A failed query is not shared: the next scope asks again.
      asked.clusters.then(
        () => (asked.at = Date.now()),
        () => {
          if (this.#graphAnswer === asked) this.#graphAnswer = undefined;
        },
      );
    }
    try {
      const rows = (await answer.clusters).get(foldCase(scope.account)) ?? [];
      return rows.filter(
        (cluster) =>
          scope.region === ALL_REGIONS || canonicalRegion('aks', cluster.location ?? '') === scope.region,
      );
    } catch {
      return undefined;
    }
  }

  /**
   * A subscription listed through Resource Graph. A row the graph shows as ARM last answered (and settled, and
   * young enough) stands with what was remembered of that answer; any other is read from ARM (a row ARM no
   * longer has is left out: the graph lags a deletion). The listing's absences are confirmed with ARM
   * (`confirmAbsent`) before the engine deletes anything.
   */
  async list(scope: Scope, rows: ManagedCluster[], signal?: AbortSignal): Promise<ScopeListing> {
    const client = this.#arm.client(scope.account);
    const limit = this.#arm.limit(scope.account);
    const answers = await ScopeAnswers.load(this.#arm.memory, scope);
    const unread: string[] = [];
    const read = await Promise.all(
      rows.map((row) => {
        const shown = this.#arm.mapped(row, scope);
        const remembered =
          (row.provisioningState ?? '').toLowerCase() === SETTLED
            ? answers.usable(shown, graphDigest(shown, this.#arm.readsCa))
            : undefined;
        if (remembered && isCaAnswer(remembered)) return this.#withRemembered(shown, remembered);
        return limit(async () => {
          try {
            return await this.#readFromArm(client, shown, answers, signal);
          } catch (error) {
            if (signal?.aborted) throw error;
            unread.push(shown.providerId);
            return undefined;
          }
        });
      }),
    );
    await answers.save('all');
    const clusters = read.filter((c): c is ObservedCluster => c !== undefined);
    clusters.sort((a, b) => compareOrdinal(a.providerId, b.providerId));
    return {
      outcome:
        unread.length > 0 ? { scope, kind: 'partial', missing: unread.sort() } : { scope, kind: 'complete' },
      clusters,
      confirmAbsent: (providerIds, absentSignal) => this.#confirmAbsent(scope, providerIds, absentSignal),
    };
  }

  #withRemembered(shown: ObservedCluster, remembered: CaAnswer): ObservedCluster {
    return {
      ...shown,
      ...remembered,
      ...(this.#arm.readsCa ? {} : { certificateAuthorityUnavailable: 'NotRead' }),
    };
  }

  /** One cluster read from ARM by its id, with its CA; undefined when ARM answers not found (what was remembered of it goes). */
  async #readFromArm(
    client: ContainerServiceClient,
    shown: Pick<ObservedCluster, 'providerId' | 'account' | 'region'>,
    answers: ScopeAnswers,
    signal?: AbortSignal,
  ): Promise<ObservedCluster | undefined> {
    const id = aksClusterOfId(shown.providerId);
    if (!id) throw new InvalidOptionError('providerId', `is not an AKS cluster id: ${shown.providerId}`);
    let cluster: ManagedCluster;
    try {
      cluster = await client.managedClusters.get(id.resourceGroup, id.name, this.#arm.call(signal));
    } catch (error) {
      if (!azureResourceGone(error)) throw error;
      answers.forget({
        provider: 'aks',
        account: shown.account,
        region: canonicalRegion('aks', shown.region),
        providerId: shown.providerId,
      });
      return undefined;
    }
    return this.#arm.observe(
      client,
      cluster,
      this.#arm.mapped(cluster, { account: shown.account }),
      answers,
      signal,
    );
  }

  /** What ARM answers for clusters the graph did not show: there (read now), gone, or not told. */
  async #confirmAbsent(
    scope: Scope,
    providerIds: readonly string[],
    signal?: AbortSignal,
  ): Promise<AbsenceAnswer> {
    const client = this.#arm.client(scope.account);
    const limit = this.#arm.limit(scope.account);
    const answers = ScopeAnswers.none(this.#arm.memory);
    const answer: AbsenceAnswer = { present: [], gone: [], unknown: [] };
    await Promise.all(
      providerIds.map((providerId) =>
        limit(async () => {
          const id = aksClusterOfId(providerId);
          if (id === undefined || foldCase(id.subscription) !== foldCase(scope.account)) {
            answer.unknown.push(providerId);
            return;
          }
          try {
            const found = await this.#readFromArm(
              client,
              { providerId, account: scope.account, region: scope.region },
              answers,
              signal,
            );
            if (found) answer.present.push(found);
            else answer.gone.push(providerId);
          } catch (error) {
            if (signal?.aborted) throw error;
            answer.unknown.push(providerId);
          }
        }),
      ),
    );
    await answers.save();
    return answer;
  }

  /** Drops what is remembered of a cluster ARM answered not found (never rejects: it is then asked next time). */
  async forgetGone(ref: ClusterRef): Promise<void> {
    const store = this.#arm.memory.store;
    if (!store) return;
    try {
      const held = await store.read({ provider: 'aks', account: ref.scope.account, region: ALL_REGIONS });
      const gone = held.filter((record) =>
        isAksResourceId(record.providerId, ref.scope.account, ref.resourceGroup ?? '', ref.name),
      );
      if (gone.length > 0) await store.write([], gone);
    } catch {
      // Not forgotten: the listing's ARM read finds it gone, as without memory.
    }
  }
}
