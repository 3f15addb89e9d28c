/**
 * The EKS adapter of the ClusterSource port (`EksSource` below): clusters of one account and region, or every
 * enabled region, with their managed node groups, and one cluster's read for its events. One file because the
 * listing, the node groups remembered between listings and the per-account and overall call limits share one
 * state per source; the SDK clients are made in `awsClients.ts`, and an answer is mapped in `mapCluster.ts`.
 */
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
import type {
  AnswerStore,
  ClusterRef,
  ClusterSource,
  RememberedAnswer,
  ScopeListing,
} from '../../core/sync/ports.ts';
import { listedDigest, ScopeAnswers, stillStands, type AnswerMemory } from '../shared/rememberedAnswers.ts';
import { awsClientFactory, type AwsClientFactory, type AwsClientOptions } from './awsClients.ts';
import { answered, classifyAwsError, errorMessage, listed } from './classify.ts';
import { eksClusterArn } from './clusterArn.ts';
import { eksClusterOfArn, isEksClusterArn, mapEksCluster } from './mapCluster.ts';
import { awsPartitionOf } from '../shared/awsPartition.ts';
import { memoizeUntilFailure } from '../shared/memo.ts';
import { PageTokens } from '../shared/pages.ts';
import { compareOrdinal } from '../../core/domain/naming.ts';
import { GRANT_SOURCE_IDENTITY } from '../grants/marks.ts';

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
   * Where the node groups read are remembered (only cpsync writes it): a cluster DescribeCluster shows as it
   * was when its node groups were read (see `clusterDigest`), none of whose node groups was changing then, is
   * not asked for them again until they are `nodegroupsMaxAgeMillis` old. A node-group call (CloudTrail's
   * CreateNodegroup, DeleteNodegroup, UpdateNodegroup*) syncs the one cluster, which always asks. Unset: every
   * listing asks.
   */
  answers?: AnswerStore;
  /**
   * How old remembered node groups may be and still stand for the cloud's answer (0: always ask).
   * @default 21600000 (six hours)
   */
  nodegroupsMaxAgeMillis?: number;
  /**
   * How old a remembered DescribeCluster answer may be and still stand for the cloud's, in a listing, for a
   * cluster that was `ACTIVE` with no health issues and whose node groups are remembered and settled: such a
   * cluster is not described again until then (0: every listed cluster is described at every listing). One
   * cluster's read (an event, a follow-up look) always describes it. An EKS health issue comes with no API call,
   * so no event: `ControlPlaneHealthy` may lag by up to this age.
   * @default 0
   */
  clusterMaxAgeMillis?: number;
  /**
   * The clock remembered answers are asked and judged by.
   * @default Date.now
   */
  now?: () => number;
  /**
   * Makes the SDK clients.
   * @default real clients built from these options
   */
  clients?: AwsClientFactory;
}

const DEFAULT_ROLE_NAME = 'cpsync-reader';

/** Remembered node groups are asked for again after six hours at most. */
const DEFAULT_NODEGROUPS_MAX_AGE_MILLIS = 6 * 60 * 60 * 1000;

/**
 * What DescribeCluster shows of a cluster that its node groups follow: its ARN and creation (a cluster made
 * again under the same name), version, platform version and status. A change in any reads them again.
 */
function clusterDigest(cluster: Cluster): string {
  const created = cluster.createdAt instanceof Date ? cluster.createdAt.toISOString() : '';
  return listedDigest([
    cluster.arn ?? '',
    created,
    cluster.version ?? '',
    cluster.platformVersion ?? '',
    cluster.status ?? '',
  ]);
}

/** What is remembered of DescribeCluster's answer: the fields a profile is made from (see `mapEksCluster`). */
type RememberedCluster = Pick<
  Cluster,
  | 'name'
  | 'arn'
  | 'endpoint'
  | 'certificateAuthority'
  | 'version'
  | 'platformVersion'
  | 'status'
  | 'createdAt'
  | 'health'
  | 'tags'
  | 'resourcesVpcConfig'
>;

/** DescribeCluster's answer as remembered (JSON: its creation time as ISO text). */
function rememberedCluster(cluster: Cluster): Record<string, unknown> {
  const vpc = cluster.resourcesVpcConfig;
  const kept: Record<string, unknown> = {
    name: cluster.name,
    arn: cluster.arn,
    endpoint: cluster.endpoint,
    certificateAuthority:
      cluster.certificateAuthority?.data === undefined
        ? undefined
        : { data: cluster.certificateAuthority.data },
    version: cluster.version,
    platformVersion: cluster.platformVersion,
    status: cluster.status,
    createdAt: cluster.createdAt instanceof Date ? cluster.createdAt.toISOString() : undefined,
    health: {
      issues: (cluster.health?.issues ?? []).map((issue) => ({ code: issue.code, message: issue.message })),
    },
    tags: cluster.tags,
    resourcesVpcConfig: vpc
      ? { endpointPublicAccess: vpc.endpointPublicAccess, endpointPrivateAccess: vpc.endpointPrivateAccess }
      : undefined,
  };
  return JSON.parse(JSON.stringify(kept)) as Record<string, unknown>;
}

const optional = (value: unknown, type: 'string' | 'boolean') => value === undefined || typeof value === type;

/**
 * A remembered DescribeCluster answer as the SDK gives it (its creation time a Date again); undefined when the
 * record is not one this source wrote.
 */
function clusterOf(answer: Record<string, unknown>): RememberedCluster | undefined {
  const c = answer.cluster as Record<string, unknown> | undefined;
  if (typeof c !== 'object' || c === null || Array.isArray(c)) return undefined;
  const ca = c.certificateAuthority as { data?: unknown } | undefined;
  const issues = (c.health as { issues?: unknown } | undefined)?.issues;
  const vpc = c.resourcesVpcConfig as Record<string, unknown> | undefined;
  const tags = c.tags as Record<string, unknown> | undefined;
  const created = typeof c.createdAt === 'string' ? new Date(c.createdAt) : undefined;
  const valid =
    typeof c.name === 'string' &&
    typeof c.arn === 'string' &&
    typeof c.status === 'string' &&
    ['endpoint', 'version', 'platformVersion'].every((key) => optional(c[key], 'string')) &&
    (ca === undefined || (typeof ca === 'object' && ca !== null && optional(ca.data, 'string'))) &&
    Array.isArray(issues) &&
    issues.every(
      (issue: unknown) =>
        typeof issue === 'object' &&
        issue !== null &&
        optional((issue as { code?: unknown }).code, 'string') &&
        optional((issue as { message?: unknown }).message, 'string'),
    ) &&
    (vpc === undefined ||
      (typeof vpc === 'object' &&
        vpc !== null &&
        optional(vpc.endpointPublicAccess, 'boolean') &&
        optional(vpc.endpointPrivateAccess, 'boolean'))) &&
    (tags === undefined ||
      (typeof tags === 'object' &&
        tags !== null &&
        Object.values(tags).every((v) => typeof v === 'string'))) &&
    (c.createdAt === undefined || (created !== undefined && !Number.isNaN(created.getTime())));
  if (!valid) return undefined;
  return { ...(c as RememberedCluster), ...(created ? { createdAt: created } : {}) };
}

/** The fields of a node group a profile is made from: all that is remembered of it. */
const NODEGROUP_FIELDS = ['nodegroupName', 'status', 'scalingConfig', 'instanceTypes'] as const;
type RememberedNodegroup = Pick<Nodegroup, (typeof NODEGROUP_FIELDS)[number]>;

function rememberedNodegroup(group: Nodegroup): RememberedNodegroup {
  const kept: Record<string, unknown> = {};
  for (const field of NODEGROUP_FIELDS) if (group[field] !== undefined) kept[field] = group[field];
  return kept as RememberedNodegroup;
}

/** Remembered node groups, as the source stored them; undefined when the record is not that. */
function nodegroupsOf(answer: Record<string, unknown>): RememberedNodegroup[] | undefined {
  const groups = answer.nodegroups;
  if (!Array.isArray(groups)) return undefined;
  const valid = groups.every(
    (g: unknown) =>
      typeof g === 'object' &&
      g !== null &&
      typeof (g as RememberedNodegroup).nodegroupName === 'string' &&
      Object.keys(g).every((key) => (NODEGROUP_FIELDS as readonly string[]).includes(key)),
  );
  return valid ? (groups as RememberedNodegroup[]) : undefined;
}

/** EKS managed node group states the cloud moves on from by itself: not remembered while any is in one. */
const NODEGROUP_SETTLED = (group: RememberedNodegroup) =>
  !['CREATING', 'UPDATING', 'DELETING'].includes((group.status ?? '').toUpperCase());

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
  readonly #memory: AnswerMemory;
  readonly #clusterMaxAgeMillis: number;

  constructor(options: EksSourceOptions = {}) {
    this.#options = options;
    this.#memory = {
      ...(options.answers ? { store: options.answers } : {}),
      ...(options.now ? { now: options.now } : {}),
      maxAgeMillis: options.nodegroupsMaxAgeMillis ?? DEFAULT_NODEGROUPS_MAX_AGE_MILLIS,
    };
    // A remembered answer stands for DescribeCluster's only beside the node groups it was read with.
    this.#clusterMaxAgeMillis = this.#memory.maxAgeMillis > 0 ? (options.clusterMaxAgeMillis ?? 0) : 0;
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

  /** The ARN of the role assumed in `account`: in the home region's partition, which cpsync's credentials are in. */
  roleArn(account: string): string {
    return `arn:${awsPartitionOf(this.#homeRegion).name}:iam::${account}:role/${this.#options.roleName ?? DEFAULT_ROLE_NAME}`;
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

  /**
   * EKS's API in `account` and `region` for the access grants: in a member account, a session of the member role that
   * carries cpsync's granting source identity (GRANT_SOURCE_IDENTITY), which the role's grant statements require; in
   * the base credentials' own account, those credentials.
   */
  async grantClient(account: string, region: string): Promise<EKSClient> {
    const credentials =
      account === (await this.hubAccountId())
        ? undefined
        : this.#clients.assumeRole(
            this.roleArn(account),
            this.#options.externalId,
            this.#options.roleSessionName ?? 'cpsync',
            GRANT_SOURCE_IDENTITY,
          );
    return this.#clients.eks(region, credentials);
  }

  isProviderIdOf(providerId: string, ref: ClusterRef): boolean {
    return isEksClusterArn(providerId, ref.scope.account, ref.scope.region, ref.name);
  }

  async getCluster(ref: ClusterRef): Promise<ObservedCluster | undefined> {
    const credentials = await this.credentialsFor(ref.scope.account);
    // One cluster (an event, a follow-up look) is always asked for its node groups, and what it said is remembered.
    const answers = ScopeAnswers.none(this.#memory);
    const observed = await this.#describe(
      this.#clients.eks(ref.scope.region, credentials),
      ref.scope.account,
      ref.scope.region,
      ref.name,
      answers,
    );
    await answers.save();
    return observed;
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
    // Never complete: DescribeRegions answers the regions enabled now, and an account's clusters in a region it has
    // since disabled are still there (AWS keeps them; EKS answers access denied there, not not-found). A region left
    // out of the answer says nothing of its clusters, so no profile of the account is deleted for being missing here;
    // the account's per-region scopes (this is their stand-in when its regions could not be read) delete as ever.
    return {
      outcome: {
        scope,
        kind: 'partial',
        missing: [...missing, `every region but ${regions.join(', ') || 'none'} (not enabled now)`],
        ...(failure ? { failure } : {}),
      },
      clusters,
    };
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
      const tokens = new PageTokens(`EKS ListClusters in ${scope.account}/${region}`, { signal });
      for await (const page of paginateListClusters({ client, pageSize: 100 }, {}, { abortSignal: signal })) {
        names.push(...listed(page.clusters, `ListClusters in ${scope.account}/${region}`));
        tokens.next(page.nextToken);
      }
    } catch (error) {
      return failed(scope, error, `cannot list clusters in ${region}: `);
    }

    const clusters: ObservedCluster[] = [];
    const missing: string[] = [];
    let firstFailure: ScopeOutcome['failure'];
    const answers = await ScopeAnswers.load(this.#memory, { ...scope, region });
    const held = this.#clusterMaxAgeMillis > 0 ? heldByName(answers, scope.account, region) : undefined;
    await Promise.all(
      names.map(async (name) => {
        try {
          const observed =
            (held?.has(name) ? this.#standing(held.get(name)!, answers, scope.account, region) : undefined) ??
            (await this.#describe(client, scope.account, region, name, answers, signal));
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
    // Only a whole listing of the region drops what is remembered of the clusters it did not show.
    await answers.save(missing.length === 0 ? { regions: [region] } : 'none');
    clusters.sort((a, b) => compareOrdinal(a.providerId, b.providerId));
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

  /**
   * A listed cluster as remembered, when the remembered DescribeCluster answer still stands for the cloud's (see
   * `clusterMaxAgeMillis`): the cluster `ACTIVE` with no health issues, the answer young enough, its node groups
   * remembered with it, young enough and settled. Undefined: describe it.
   */
  #standing(
    record: RememberedAnswer,
    answers: ScopeAnswers,
    account: string,
    region: string,
  ): ObservedCluster | undefined {
    const cluster = clusterOf(record.answer);
    const describedAt = record.answer.describedAt;
    if (
      !cluster ||
      cluster.arn !== record.providerId ||
      typeof describedAt !== 'number' ||
      cluster.status !== 'ACTIVE' ||
      (cluster.health?.issues?.length ?? 0) > 0 ||
      !stillStands(record.providerId, describedAt, this.#clusterMaxAgeMillis, answers.askingNow())
    )
      return undefined;
    const remembered = answers.usable(
      { provider: 'eks', providerId: record.providerId },
      clusterDigest(cluster),
    );
    const nodegroups = remembered && nodegroupsOf(remembered);
    if (!nodegroups?.every(NODEGROUP_SETTLED)) return undefined;
    return mapEksCluster(cluster, nodegroups, account, region);
  }

  /** What a record keeps of DescribeCluster's answer, asked at `at`: nothing unless it may stand for it. */
  #described(cluster: Cluster, at: number): Record<string, unknown> {
    return this.#clusterMaxAgeMillis > 0 ? { cluster: rememberedCluster(cluster), describedAt: at } : {};
  }

  /**
   * One cluster with its node groups (those remembered, when DescribeCluster shows the cluster as it was when
   * they were read and they are young enough); undefined when it was deleted in between (not found).
   */
  async #describe(
    client: EKSClient,
    account: string,
    region: string,
    name: string,
    answers: ScopeAnswers,
    signal?: AbortSignal,
  ): Promise<ObservedCluster | undefined> {
    const describedAt = answers.askingNow();
    const cluster = await this.#notFoundAsUndefined(() =>
      this.#limit(account, () =>
        client.send(new DescribeClusterCommand({ name }), { abortSignal: signal }),
      ).then((r) => answered(r.cluster, `DescribeCluster of ${name} in ${account}/${region}`)),
    );
    if (!cluster) {
      // Gone: what was remembered of it stands for no cluster of that name made again (an ARN names both).
      answers.forget({ provider: 'eks', account, region, providerId: eksClusterArn(account, region, name) });
      return undefined;
    }
    const nodegroups = cluster.arn
      ? await this.#rememberedNodegroups(client, account, region, cluster, describedAt, answers, signal)
      : (await this.#nodegroups(client, account, cluster, signal)).map(rememberedNodegroup);
    return mapEksCluster(cluster, nodegroups, account, region);
  }

  /**
   * The node groups remembered for an active cluster DescribeCluster shows as it was when they were read, when
   * young enough; else those the cloud answers now (remembered unless one is changing).
   */
  async #rememberedNodegroups(
    client: EKSClient,
    account: string,
    region: string,
    cluster: Cluster,
    describedAt: number,
    answers: ScopeAnswers,
    signal?: AbortSignal,
  ): Promise<RememberedNodegroup[]> {
    const identity = { provider: 'eks' as const, account, region, providerId: cluster.arn! };
    const listed = clusterDigest(cluster);
    // A cluster an operation is changing is asked at every listing.
    const remembered = cluster.status === 'ACTIVE' ? answers.usableRecord(identity, listed) : undefined;
    const known = remembered && nodegroupsOf(remembered.answer);
    if (known) {
      // The node groups keep the time they were asked; the cluster's answer is the one just given.
      if (this.#clusterMaxAgeMillis > 0)
        answers.remember(identity, listed, remembered.askedAt, {
          nodegroups: known,
          ...this.#described(cluster, describedAt),
        });
      return known;
    }
    const askedAt = answers.askingNow();
    let nodegroups: RememberedNodegroup[];
    try {
      nodegroups = (await this.#nodegroups(client, account, cluster, signal)).map(rememberedNodegroup);
    } catch (error) {
      answers.forget(identity);
      throw error;
    }
    if (nodegroups.every(NODEGROUP_SETTLED))
      answers.remember(identity, listed, askedAt, { nodegroups, ...this.#described(cluster, describedAt) });
    else answers.forget(identity);
    return nodegroups;
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
        const tokens = new PageTokens(`EKS ListNodegroups of ${clusterName} in ${account}`, { signal });
        for await (const page of paginateListNodegroups(
          { client, pageSize: 100 },
          { clusterName },
          { abortSignal: signal },
        )) {
          names.push(...listed(page.nodegroups, `ListNodegroups of ${clusterName} in ${account}`));
          tokens.next(page.nextToken);
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
          ).then((r) =>
            answered(r.nodegroup, `DescribeNodegroup of ${nodegroupName} of ${clusterName} in ${account}`),
          ),
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

/** The records held for the clusters of `account` in `region`, by cluster name. */
function heldByName(answers: ScopeAnswers, account: string, region: string): Map<string, RememberedAnswer> {
  const byName = new Map<string, RememberedAnswer>();
  for (const record of answers.heldOf('eks')) {
    let cluster: ReturnType<typeof eksClusterOfArn>;
    try {
      cluster = eksClusterOfArn(record.providerId);
    } catch {
      continue; // not an EKS cluster's ARN: stands for nothing
    }
    // An ARN of another partition than the region's (or another scope) names none of this scope's clusters.
    if (record.providerId === eksClusterArn(account, region, cluster.name)) byName.set(cluster.name, record);
  }
  return byName;
}
