import {
  DescribeClusterCommand,
  DescribeNodegroupCommand,
  paginateListClusters,
  paginateListNodegroups,
  type Cluster,
  type EKSClient,
  type Nodegroup,
} from '@aws-sdk/client-eks';
import { GetCallerIdentityCommand } from '@aws-sdk/client-sts';
import type { AwsCredentialIdentityProvider } from '@smithy/types';
import pLimit, { type LimitFunction } from 'p-limit';
import type { ObservedCluster } from '../../core/domain/model/observedCluster.ts';
import { ALL_REGIONS, type Scope, type ScopeOutcome } from '../../core/domain/model/scope.ts';
import type { ClusterRef, ClusterSource, ScopeListing } from '../../core/sync/ports.ts';
import { awsClientFactory, type AwsClientFactory, type AwsClientOptions } from './awsClients.ts';
import { classifyAwsError, errorMessage } from './classify.ts';
import { isEksClusterArn, mapEksCluster } from './mapCluster.ts';
import { memoizeUntilFailure } from '../shared/memo.ts';

export interface EksSourceOptions extends AwsClientOptions {
  /**
   * Role assumed in every member account.
   * @default 'cpsync-reader'
   */
  roleName?: string;
  /** External id the member accounts' trust policies require, if any. */
  externalId?: string;
  /**
   * Session name of assumed roles (shows in the member accounts' CloudTrail).
   * @default 'cpsync'
   */
  roleSessionName?: string;
  /**
   * The account cpsync runs in: listed with its own credentials, without assuming a role.
   * @default the account STS GetCallerIdentity names
   */
  hubAccountId?: string;
  /**
   * Region the account-wide calls (EC2 DescribeRegions, STS) go to.
   * @default 'us-east-1'
   */
  homeRegion?: string;
  /**
   * Calls in flight at once against one account.
   * @default 8
   */
  perAccountConcurrency?: number;
  /**
   * Calls in flight at once over all accounts.
   * @default 32
   */
  overallConcurrency?: number;
  /**
   * Makes the SDK clients.
   * @default real clients built from these options
   */
  clients?: AwsClientFactory;
}

const DEFAULT_ROLE_NAME = 'cpsync-reader';

function failed(scope: Scope, error: unknown, prefix = ''): ScopeListing {
  return {
    outcome: {
      scope,
      kind: 'failed',
      failure: { reason: classifyAwsError(error), message: prefix + errorMessage(error) },
    },
    clusters: [],
  };
}

/**
 * EKS clusters of one account and region (or every enabled region of the account), with their
 * managed node groups. Member accounts are reached through `roleName`; throttling is left to the
 * SDK's adaptive retry; calls are bounded per account and overall.
 */
export class EksSource implements ClusterSource {
  readonly #options: EksSourceOptions;
  readonly #clients: AwsClientFactory;
  readonly #overall: LimitFunction;
  readonly #perAccount = new Map<string, LimitFunction>();
  readonly #hubAccount: () => Promise<string>;

  constructor(options: EksSourceOptions = {}) {
    this.#options = options;
    this.#clients = options.clients ?? awsClientFactory(options);
    this.#overall = pLimit(options.overallConcurrency ?? 32);
    this.#hubAccount = options.hubAccountId
      ? () => Promise.resolve(options.hubAccountId!)
      : memoizeUntilFailure(() =>
          this.#clients
            .sts(this.#homeRegion)
            .send(new GetCallerIdentityCommand({}))
            .then((identity) => identity.Account ?? ''),
        );
  }

  get #homeRegion(): string {
    return this.#options.homeRegion ?? 'us-east-1';
  }

  /** The account cpsync's own credentials belong to. */
  hubAccountId(): Promise<string> {
    return this.#hubAccount();
  }

  /** The ARN of the role assumed in `account`. */
  roleArn(account: string): string {
    return `arn:aws:iam::${account}:role/${this.#options.roleName ?? DEFAULT_ROLE_NAME}`;
  }

  /** Credentials for `account`: none (the base ones) for the hub account, else the assumed role's. */
  async credentialsFor(account: string): Promise<AwsCredentialIdentityProvider | undefined> {
    if (account === (await this.hubAccountId())) return undefined;
    return this.#clients.assumeRole(
      this.roleArn(account),
      this.#options.externalId,
      this.#options.roleSessionName ?? 'cpsync',
    );
  }

  #limit<T>(account: string, task: () => Promise<T>): Promise<T> {
    let limit = this.#perAccount.get(account);
    if (!limit) {
      limit = pLimit(this.#options.perAccountConcurrency ?? 8);
      this.#perAccount.set(account, limit);
    }
    return limit(() => this.#overall(task));
  }

  /** Regions enabled for the account (EC2 DescribeRegions). */
  async enabledRegions(account: string, signal?: AbortSignal): Promise<string[]> {
    const credentials = await this.credentialsFor(account);
    const [ec2, { DescribeRegionsCommand }] = await Promise.all([
      this.#clients.ec2(this.#homeRegion, credentials),
      import('./ec2Api.ts'),
    ]);
    const answer = await ec2.send(new DescribeRegionsCommand({ AllRegions: false }), { abortSignal: signal });
    return (answer.Regions ?? [])
      .filter((r) => r.OptInStatus === undefined || r.OptInStatus !== 'not-opted-in')
      .map((r) => r.RegionName ?? '')
      .filter(Boolean)
      .sort();
  }

  /** EKS's API in `account` and `region`, with the identity the account is listed with. */
  async eksClient(account: string, region: string): Promise<EKSClient> {
    return this.#clients.eks(region, await this.credentialsFor(account));
  }

  isProviderIdOf(providerId: string, ref: ClusterRef): boolean {
    return isEksClusterArn(providerId, ref.scope.account, ref.scope.region, ref.name);
  }

  async getCluster(ref: ClusterRef): Promise<ObservedCluster | undefined> {
    const credentials = await this.credentialsFor(ref.scope.account);
    return this.#describe(
      this.#clients.eks(ref.scope.region, credentials),
      ref.scope.account,
      ref.scope.region,
      ref.name,
    );
  }

  async listScope(scope: Scope, signal?: AbortSignal): Promise<ScopeListing> {
    let credentials: AwsCredentialIdentityProvider | undefined;
    try {
      credentials = await this.credentialsFor(scope.account);
      if (credentials) await credentials();
    } catch (error) {
      return failed(scope, error, `cannot assume ${this.roleArn(scope.account)}: `);
    }
    if (scope.region !== ALL_REGIONS) return this.#listRegion(scope, scope.region, credentials, signal);

    let regions: string[];
    try {
      regions = await this.enabledRegions(scope.account, signal);
    } catch (error) {
      return failed(scope, error, 'cannot list enabled regions: ');
    }
    const listings = await Promise.all(
      regions.map((region) => this.#listRegion(scope, region, credentials, signal)),
    );
    const clusters = listings.flatMap((l) => l.clusters);
    const failure = listings.find((l) => l.outcome.kind === 'failed')?.outcome.failure;
    const missing = listings.flatMap((l, i) =>
      l.outcome.kind === 'complete' ? [] : (l.outcome.missing ?? [regions[i]!]),
    );
    if (failure && clusters.length === 0)
      return { outcome: { scope, kind: 'failed', failure }, clusters: [] };
    if (missing.length > 0)
      return { outcome: { scope, kind: 'partial', missing, ...(failure ? { failure } : {}) }, clusters };
    return { outcome: { scope, kind: 'complete' }, clusters };
  }

  async #listRegion(
    scope: Scope,
    region: string,
    credentials: AwsCredentialIdentityProvider | undefined,
    signal?: AbortSignal,
  ): Promise<ScopeListing> {
    const client = this.#clients.eks(region, credentials);
    const names: string[] = [];
    try {
      for await (const page of paginateListClusters({ client, pageSize: 100 }, {})) {
        if (signal?.aborted) throw signal.reason;
        names.push(...(page.clusters ?? []));
      }
    } catch (error) {
      return failed(scope, error, `cannot list clusters in ${region}: `);
    }

    const clusters: ObservedCluster[] = [];
    const missing: string[] = [];
    let firstFailure: ScopeOutcome['failure'];
    await Promise.all(
      names.map(async (name) => {
        try {
          const observed = await this.#describe(client, scope.account, region, name, signal);
          if (observed) clusters.push(observed);
        } catch (error) {
          missing.push(`${region}/${name}`);
          firstFailure ??= {
            reason: classifyAwsError(error),
            message: `cannot describe ${name} in ${region}: ${errorMessage(error)}`,
          };
        }
      }),
    );
    clusters.sort((a, b) => a.providerId.localeCompare(b.providerId));
    if (missing.length > 0) {
      return {
        outcome: {
          scope,
          kind: 'partial',
          missing: missing.sort(),
          ...(firstFailure ? { failure: firstFailure } : {}),
        },
        clusters,
      };
    }
    return { outcome: { scope, kind: 'complete' }, clusters };
  }

  /** One cluster with its node groups; undefined when it was deleted in between (not found). */
  async #describe(
    client: EKSClient,
    account: string,
    region: string,
    name: string,
    signal?: AbortSignal,
  ): Promise<ObservedCluster | undefined> {
    const cluster = await this.#notFoundAsUndefined(() =>
      this.#limit(account, () =>
        client.send(new DescribeClusterCommand({ name }), { abortSignal: signal }),
      ).then((r) => r.cluster),
    );
    if (!cluster) return undefined;
    const nodegroups = await this.#nodegroups(client, account, cluster, signal);
    return mapEksCluster(cluster, nodegroups, account, region);
  }

  async #nodegroups(
    client: EKSClient,
    account: string,
    cluster: Cluster,
    signal?: AbortSignal,
  ): Promise<Nodegroup[]> {
    const clusterName = cluster.name!;
    const names: string[] = [];
    const pages = await this.#notFoundAsUndefined(() =>
      this.#limit(account, async () => {
        for await (const page of paginateListNodegroups({ client, pageSize: 100 }, { clusterName })) {
          if (signal?.aborted) throw signal.reason;
          names.push(...(page.nodegroups ?? []));
        }
        return names;
      }),
    );
    if (!pages) return [];
    const groups = await Promise.all(
      names.map((nodegroupName) =>
        this.#notFoundAsUndefined(() =>
          this.#limit(account, () =>
            client.send(new DescribeNodegroupCommand({ clusterName, nodegroupName }), {
              abortSignal: signal,
            }),
          ).then((r) => r.nodegroup),
        ),
      ),
    );
    return groups.filter((g): g is Nodegroup => g !== undefined);
  }

  async #notFoundAsUndefined<T>(call: () => Promise<T>): Promise<T | undefined> {
    try {
      return await call();
    } catch (error) {
      if (classifyAwsError(error) === 'NotFound') return undefined;
      throw error;
    }
  }
}
