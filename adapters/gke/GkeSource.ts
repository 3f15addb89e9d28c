// Deep imports: the package index also loads the static protobuf code (about 3 MB), which the REST transport does not use.
import { ClusterManagerClient } from '@google-cloud/container/build/src/v1/cluster_manager_client.js';
import type { ProjectsClient } from '@google-cloud/resource-manager/build/src/v3/projects_client.js';
import { GoogleAuth } from 'google-auth-library';
import { authClientFor, SCOPES } from './authClient.ts';
import type { CallOptions, ClientOptions } from 'google-gax';
import { InvalidOptionError, messageOf } from '../../core/domain/errors.ts';
import { ALL_REGIONS, type Scope } from '../../core/domain/model/scope.ts';
import { regionOfZone } from '../../core/domain/scopes.ts';
import type { ObservedCluster } from '../../core/domain/model/observedCluster.ts';
import type { ClusterRef, ClusterSource, ScopeListing } from '../../core/sync/ports.ts';
import {
  askingResourceManager,
  classifyGoogleError,
  googleClusterGone,
  GrpcCode,
  RESOURCE_MANAGER_RETRY_CODES,
} from './classify.ts';
import { isGkeSelfLink, mapGkeCluster } from './mapCluster.ts';
import { memoizeUntilFailure } from '../shared/memo.ts';
import { PageTokens } from '../shared/pages.ts';

export interface GkeSourceOptions {
  /**
   * A Google credential configuration: an `external_account` (workload identity federation, e.g.
   * from AWS) or a `service_account` key.
   * @default Application Default Credentials
   */
  credentials?: Record<string, unknown>;
  /**
   * Endpoint override for the Google APIs (`https://host[:port]`, or `http://` for an emulator).
   * @default the public endpoints
   */
  endpoint?: string;
  /**
   * Retries, after the first ask, of a listing answered RESOURCE_EXHAUSTED (429), UNAVAILABLE (503) or
   * DEADLINE_EXCEEDED (504), and of Resource Manager's calls (`resourceManagerRetry`), spaced by the client's backoff.
   * @default 5
   */
  maxRetries?: number;
  /**
   * Time allowed for one listing, retries included.
   * @default 60000
   */
  timeoutMillis?: number;
  /**
   * Time one request may take before it is abandoned (and retried).
   * @default 20000
   */
  requestTimeoutMillis?: number;
  /** @default a ClusterManagerClient over the REST transport, built from these options */
  client?: ClusterManagerClient;
  /** @default a ProjectsClient over the REST transport, built from these options */
  projectsClient?: ProjectsClient;
}

/** How to find the GCP projects to list. */
export type ProjectSelection = { projects: string[] } | { search: { query?: string } };

function clientOptions(options: GkeSourceOptions): ClientOptions {
  const base: ClientOptions = {
    fallback: true,
    ...(options.credentials
      ? { authClient: authClientFor(options.credentials) }
      : { auth: new GoogleAuth({ scopes: SCOPES }) }),
  };
  if (!options.endpoint) return base;
  const url = new URL(options.endpoint);
  const protocol = url.protocol.replace(':', '');
  return {
    ...base,
    apiEndpoint: url.hostname,
    port: Number(url.port || (protocol === 'http' ? 80 : 443)),
    protocol,
  };
}

/**
 * GKE clusters of one project, all locations at once (`locations/-`) or one location. A listing
 * with `missingZones` is partial: the zones that did not answer may hold clusters.
 */
export class GkeSource implements ClusterSource {
  readonly #client: ClusterManagerClient;
  readonly #options: GkeSourceOptions;
  /** One set of client options (hence one auth client and token cache) for both clients. */
  #made: ClientOptions | undefined;
  /** Made on the first project search: Resource Manager's client is large, and most setups list projects. */
  readonly #projects: () => Promise<ProjectsClient>;
  #projectsMade = false;
  readonly #callOptions: CallOptions;
  /** How Resource Manager's calls are retried (project search, project IAM): as the cluster listing's. */
  readonly resourceManagerRetry: NonNullable<CallOptions['retry']>;
  /**
   * The credentials, resolved before the first call: the client makes a promise per API method when it
   * first connects, and without credentials every one it does not call would reject unhandled (a crash).
   */
  readonly #credentials: () => Promise<unknown>;

  constructor(options: GkeSourceOptions = {}) {
    this.#options = options;
    this.#client = options.client ?? new ClusterManagerClient(this.#clientOptions());
    this.#credentials = memoizeUntilFailure(async () => {
      // A GoogleAuth resolves its chain here; a credential given as an auth client is one already.
      const auth = this.#client.auth as { getClient?: () => Promise<unknown> } | undefined;
      return typeof auth?.getClient === 'function' ? auth.getClient() : auth;
    });
    this.#projects = options.projectsClient
      ? () => Promise.resolve(options.projectsClient!)
      : memoizeUntilFailure(() =>
          import('@google-cloud/resource-manager/build/src/v3/projects_client.js').then(
            ({ ProjectsClient }) => {
              // Resource Manager ships an older google-gax; the options object is the same shape.
              return new ProjectsClient(
                this.#clientOptions() as ConstructorParameters<typeof ProjectsClient>[0],
              );
            },
          ),
        );
    const backoffSettings = {
      initialRetryDelayMillis: 200,
      retryDelayMultiplier: 2,
      maxRetryDelayMillis: 5_000,
      initialRpcTimeoutMillis: options.requestTimeoutMillis ?? 20_000,
      rpcTimeoutMultiplier: 1,
      maxRpcTimeoutMillis: options.requestTimeoutMillis ?? 20_000,
      // google-gax counts the first ask among its "retries": retries after it are one fewer.
      maxRetries: (options.maxRetries ?? 5) + 1,
    };
    this.#callOptions = {
      timeout: options.timeoutMillis ?? 60_000,
      retry: {
        retryCodes: [GrpcCode.RESOURCE_EXHAUSTED, GrpcCode.UNAVAILABLE, GrpcCode.DEADLINE_EXCEEDED],
        backoffSettings,
      },
    };
    this.resourceManagerRetry = { retryCodes: [...RESOURCE_MANAGER_RETRY_CODES], backoffSettings };
  }

  #clientOptions(): ClientOptions {
    this.#made ??= clientOptions(this.#options);
    return this.#made;
  }

  /**
   * A project's clusters, every location at once. A region scope lists them all too and keeps those of
   * the region, zonal ones included: `locations/<region>` would leave out the clusters of its zones,
   * whose profiles the region's labels select (and would then take for deleted).
   */
  async listScope(scope: Scope): Promise<ScopeListing> {
    const inScope = (location: string) =>
      scope.region === ALL_REGIONS || regionOfZone(location) === scope.region;
    try {
      await this.#credentials();
      const [answer] = await this.#client.listClusters(
        { parent: `projects/${scope.account}/locations/-` },
        this.#callOptions,
      );
      const listed = (answer.clusters ?? []).map((cluster) => mapGkeCluster(cluster, scope.account));
      const clusters = listed.filter((cluster) => inScope(cluster.region));
      // A listed cluster whose location is not told may be in the region: not listed there, not taken as gone.
      const unplaced =
        scope.region === ALL_REGIONS
          ? []
          : listed
              .filter((cluster) => cluster.region === '')
              .map((c) => `${c.name || 'a cluster'} (no location)`);
      const missing = [...[...(answer.missingZones ?? [])].filter(inScope).sort(), ...unplaced];
      return {
        outcome: missing.length > 0 ? { scope, kind: 'partial', missing } : { scope, kind: 'complete' },
        clusters,
      };
    } catch (error) {
      const message = messageOf(error);
      return {
        outcome: { scope, kind: 'failed', failure: { reason: classifyGoogleError(error), message } },
        clusters: [],
      };
    }
  }

  isProviderIdOf(providerId: string, ref: ClusterRef): boolean {
    return isGkeSelfLink(providerId, ref.scope.account, ref.location ?? '', ref.name);
  }

  async getCluster(ref: ClusterRef): Promise<ObservedCluster | undefined> {
    if (!ref.location) throw new InvalidOptionError('location', 'is needed to find a GKE cluster');
    try {
      await this.#credentials();
      const [cluster] = await this.#client.getCluster(
        { name: `projects/${ref.scope.account}/locations/${ref.location}/clusters/${ref.name}` },
        this.#callOptions,
      );
      return mapGkeCluster(cluster, ref.scope.account);
    } catch (error) {
      if (googleClusterGone(error, { project: ref.scope.account, location: ref.location, name: ref.name }))
        return undefined;
      throw error;
    }
  }

  /** Active projects matching the selection: explicit, or found with Resource Manager's project search. */
  async selectProjects(selection: ProjectSelection): Promise<string[]> {
    if ('projects' in selection) return [...new Set(selection.projects)].sort();
    const found: string[] = [];
    const projects = await this.projectsClient();
    const query = selection.search.query ?? '';
    // Page by page, each token followed: the client's own iterator ends a search after eleven empty pages in a
    // row as if it were whole, and Resource Manager may answer empty pages that still carry a token.
    const tokens = new PageTokens('Resource Manager project search');
    await askingResourceManager(async () => {
      let pageToken: string | undefined;
      do {
        const [page, , answer] = await projects.searchProjects(
          { query, ...(pageToken ? { pageToken } : {}) },
          { ...this.#callOptions, retry: this.resourceManagerRetry, autoPaginate: false } as CallOptions,
        );
        for (const project of page) {
          const state = project.state as unknown;
          if (
            (state === 'ACTIVE' || state === 1 || state === undefined || state === null) &&
            project.projectId
          )
            found.push(project.projectId);
        }
        pageToken = tokens.next(answer?.nextPageToken);
      } while (pageToken);
    });
    return [...new Set(found)].sort();
  }

  /** Resource Manager's client, made once with the source's credentials (project search, project IAM). */
  async projectsClient(): Promise<ProjectsClient> {
    await this.#credentials();
    const projects = await this.#projects();
    this.#projectsMade = true;
    return projects;
  }

  async close(): Promise<void> {
    await Promise.all([
      // A client that never connected (no credentials) has nothing to end.
      this.#client.close().catch(() => undefined),
      this.#projectsMade
        ? this.#projects()
            .then((projects) => projects.close())
            .catch(() => undefined)
        : undefined,
    ]);
  }
}

/** One all-locations scope per selected project. */
export async function enumerateGkeScopes(source: GkeSource, selection: ProjectSelection): Promise<Scope[]> {
  return (await source.selectProjects(selection)).map((project) => ({
    provider: 'gke',
    account: project,
    region: ALL_REGIONS,
  }));
}
