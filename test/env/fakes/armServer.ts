/**
 * A local Azure Resource Manager over TLS speaking the shapes `@azure/arm-containerservice`,
 * `@azure/arm-resources-subscriptions` and `@azure/identity` use: the Entra ID OpenID configuration and
 * token endpoints (client credentials), subscriptions, managed clusters (paged with nextLink) and
 * listClusterUserCredential, and Azure Resource Graph's `resources` query for managed clusters (the one query
 * cpsync sends, paged with `$skipToken`, as an index that may lag ARM). The ARM SDK refuses bearer tokens over
 * plain HTTP, hence TLS.
 */
import { ClientSecretCredential } from '@azure/identity';
import { createServer, type Server } from 'node:https';
import { generateKeyPair, jwtVerify, SignJWT } from 'jose';
import type { ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort, readBody, sendJson, serveOnLoopback, takeFault, type QueuedFault } from '../net.ts';
import { makeLocalCertificate, trustCertificate } from '../tlsCert.ts';
import { TEST_CA_DATA } from '../../support/certificates.ts';
import type { PageScript } from './pageScript.ts';

/**
 * Two ids or names are one to ARM when they are equal after this: each character upper-cased by its simple
 * (one-character) mapping, as .NET's ordinal ignore-case comparison does; a character without one is kept, and
 * so is one whose mapping would leave the non-ASCII for ASCII (`ſ`, `ı`: .NET does not map them so). So `kube`
 * and `KUBE` are one resource group, and `kube` and `\u212Aube` (KELVIN SIGN, its own upper case) are two,
 * though `toLowerCase()` makes them one.
 */
export function armCase(text: string): string {
  let out = folded.get(text);
  if (out !== undefined) return out;
  out = '';
  for (const character of text) {
    const upper = character.toUpperCase();
    const intoAscii = character.charCodeAt(0) > 0x7f && upper.length === 1 && upper.charCodeAt(0) <= 0x7f;
    out += [...upper].length === 1 && !intoAscii ? upper : character;
  }
  if (folded.size >= FOLDED_KEPT) folded.clear();
  folded.set(text, out);
  return out;
}

/**
 * The ids already folded: a request's lookup folds every cluster's id it compares (the bench's 3,000 AKS clusters,
 * each read once, made 9 million folds a sync, a minute of the bench process's CPU beside the measured one).
 */
const folded = new Map<string, string>();
const FOLDED_KEPT = 100_000;

/** A path as ARM reads it: percent-decoding undone (a resource group may be named with any letter). */
const decodedPath = (pathname: string) => {
  try {
    return decodeURIComponent(pathname);
  } catch {
    return pathname;
  }
};

/** A managed cluster as ARM returns it on the wire (properties nested, `privateFQDN` spelled so). */
export type ManagedClusterJson = {
  id: string;
  name: string;
  location: string;
  tags?: Record<string, string>;
  properties: Record<string, unknown>;
  systemData?: Record<string, unknown>;
};

/** The Resource Graph query cpsync sends for managed clusters (the index below answers only this one). */
const MANAGED_CLUSTERS_QUERY =
  "resources | where type =~ 'microsoft.containerservice/managedclusters' | project id, name, location, tags, properties, subscriptionId | order by id asc";

interface GraphQuery {
  subscriptions?: string[];
  query: string;
  options?: { $top?: number; $skipToken?: string; resultFormat?: string };
}

export interface ArmError {
  status: number;
  code: string;
  message: string;
  retryAfterSeconds?: number;
  /** A body answered as it is (with `status`), in place of ARM's error envelope: a gateway's, or a malformed answer. */
  raw?: string;
}

/** A role assignment as ARM answers it. */
export interface RoleAssignmentJson {
  id: string;
  name: string;
  type: 'Microsoft.Authorization/roleAssignments';
  properties: {
    scope: string;
    roleDefinitionId: string;
    principalId: string;
    principalType?: string;
    description?: string;
  };
}

export interface ArmServer {
  endpoint: string;
  /** PEM of the server's self-signed certificate, for clients in other processes (NODE_EXTRA_CA_CERTS). */
  certificate: string;
  tenantId: string;
  clientId: string;
  clientSecret: string;
  /** Other applications (a consumer's) that may get tokens: client id → secret; a token's subject is its client id. */
  clients: Map<string, string>;
  subscriptions: Array<{ subscriptionId: string; displayName: string; state: string }>;
  clusters: Map<string, ManagedClusterJson[]>;
  /** Clusters per page of the managed cluster listing. */
  pageSize: number;
  /** Errors to answer for a subscription's listing, one per request, before answering normally. */
  failures: Map<string, ArmError[]>;
  /**
   * The subscriptions', role assignments', the managed cluster listing's and Resource Graph's pages as a test
   * scripts them (see PageScript).
   */
  pages?: PageScript;
  /** CA data returned in each cluster's user kubeconfig, by resource id (lower case); TEST_CA_DATA otherwise. */
  caData: Map<string, string>;
  /** An error to answer a managed cluster's GET with, by resource id (lower case). */
  readFailures: Map<string, ArmError>;
  /** An error to answer listClusterUserCredential with, by resource id (lower case): a missing permission. */
  credentialFailures: Map<string, ArmError>;
  /** Azure role assignments (Microsoft.Authorization/roleAssignments), by id (lower case). */
  roleAssignments: Map<string, RoleAssignmentJson>;
  /** Scopes (lower case) where the caller may not assign roles: 403 AuthorizationFailed. */
  refuseAssignments: Set<string>;
  /**
   * Faults of role assignment requests, each taken by the next request of its method once `after` more of them
   * have been answered: an error answered instead (nothing changed), or (`lose`) the request done as usual and its
   * answer lost, the connection cut first.
   */
  assignmentFaults: Array<QueuedFault<'GET' | 'PUT' | 'DELETE', ArmError>>;
  /**
   * What Azure Resource Graph holds of managed clusters, by subscription: unset, it is in step with `clusters`;
   * set (see `indexGraph`), it answers from this copy, as the real index does in the minutes after a change.
   */
  graph: Map<string, ManagedClusterJson[]> | undefined;
  /** Rows per page of a Resource Graph answer (`$top` asks for fewer). */
  graphPageSize: number;
  /** Errors to answer Resource Graph queries with, one per request, before answering normally. */
  graphFailures: ArmError[];
  /** The bodies of the Resource Graph queries received. */
  graphQueries: Array<{ subscriptions?: string[]; query: string; options?: Record<string, unknown> }>;
  /** Freezes Resource Graph at what ARM holds now: later changes to `clusters` are not seen until it is indexed again. */
  indexGraph(): void;
  requests: Array<{ method: string; path: string; query: string }>;
  /** The most listClusterUserCredential requests it held at once, by subscription (lower case). */
  peakCredentialReads: Map<string, number>;
  /** Verifies a token this server issued for `audience` as Entra's resource would: signature, issuer, audience, expiry; resolves to its subject. */
  verifyToken(token: string, audience: string): Promise<string>;
  stop(): Promise<void>;
}

function armError(response: ServerResponse, error: ArmError): void {
  if (error.raw !== undefined) {
    response.writeHead(error.status, { 'content-type': 'application/json' });
    response.end(error.raw);
    return;
  }
  sendJson(
    response,
    error.status,
    { error: { code: error.code, message: error.message } },
    error.retryAfterSeconds !== undefined ? { 'retry-after': String(error.retryAfterSeconds) } : {},
  );
}

export async function startArmServer(options: { latencyMillis?: number } = {}): Promise<ArmServer> {
  const { cert, key } = makeLocalCertificate();
  trustCertificate(cert);
  const port = await freePort();
  const endpoint = `https://localhost:${port}`;
  const token = `eyJ.local-${Math.random().toString(36).slice(2)}`;
  // Tokens for an application id (an AKS cluster's server application) are RS256 JWTs, as Entra's are; ARM's are opaque.
  const signing = await generateKeyPair('RS256');
  const state: Omit<ArmServer, 'stop'> = {
    endpoint,
    certificate: cert,
    tenantId: '72f988bf-0000-4000-8000-000000000001',
    clientId: '0b1f0000-0000-4000-8000-00000000c9c9',
    clientSecret: 'local-secret-value',
    clients: new Map(),
    subscriptions: [],
    clusters: new Map(),
    pageSize: 2,
    failures: new Map(),
    caData: new Map(),
    readFailures: new Map(),
    credentialFailures: new Map(),
    roleAssignments: new Map(),
    refuseAssignments: new Set(),
    assignmentFaults: [],
    graph: undefined,
    graphPageSize: 1000,
    graphFailures: [],
    graphQueries: [],
    indexGraph() {
      state.graph = new Map(
        [...state.clusters].map(([subscription, list]) => [
          subscription,
          list.map((cluster) => structuredClone(cluster)),
        ]),
      );
    },
    requests: [],
    peakCredentialReads: new Map(),
    async verifyToken(jwt: string, audience: string) {
      const { payload } = await jwtVerify(jwt, signing.publicKey, {
        issuer: `${endpoint}/${state.tenantId}/v2.0`,
        audience,
      });
      return String(payload.sub);
    },
  };

  const inFlightCredentialReads = new Map<string, number>();
  const server: Server = createServer({ cert, key }, async (request, response) => {
    // A path of repeated slashes (the SDK's `/{scope}` with a scope that starts with one) is one ARM reads as one.
    const url = new URL((request.url ?? '/').replace(/^\/+/, '/'), endpoint);
    const path = decodedPath(url.pathname);
    state.requests.push({ method: request.method ?? 'GET', path, query: url.search });
    const credentialRead = /^\/subscriptions\/([^/]+)\/.*\/listClusterUserCredential$/i.exec(path);
    if (credentialRead) {
      const subscription = armCase(credentialRead[1]!);
      const now = (inFlightCredentialReads.get(subscription) ?? 0) + 1;
      inFlightCredentialReads.set(subscription, now);
      state.peakCredentialReads.set(
        subscription,
        Math.max(now, state.peakCredentialReads.get(subscription) ?? 0),
      );
      response.once('close', () =>
        inFlightCredentialReads.set(subscription, inFlightCredentialReads.get(subscription)! - 1),
      );
    }
    const body = await readBody(request);
    if (options.latencyMillis) await sleep(options.latencyMillis);
    const tenant = state.tenantId;
    if (url.pathname === `/${tenant}/v2.0/.well-known/openid-configuration`) {
      return sendJson(response, 200, {
        issuer: `${endpoint}/${tenant}/v2.0`,
        authorization_endpoint: `${endpoint}/${tenant}/oauth2/v2.0/authorize`,
        token_endpoint: `${endpoint}/${tenant}/oauth2/v2.0/token`,
        jwks_uri: `${endpoint}/${tenant}/discovery/v2.0/keys`,
        response_types_supported: ['code', 'id_token', 'token'],
        subject_types_supported: ['pairwise'],
        id_token_signing_alg_values_supported: ['RS256'],
        tenant_region_scope: 'EU',
      });
    }
    if (request.method === 'POST' && url.pathname === `/${tenant}/oauth2/v2.0/token`) {
      const form = new URLSearchParams(body);
      const client = form.get('client_id') ?? '';
      const secret = client === state.clientId ? state.clientSecret : state.clients.get(client);
      if (secret === undefined || form.get('client_secret') !== secret) {
        return sendJson(response, 401, {
          error: 'invalid_client',
          error_description: 'AADSTS7000215: Invalid client secret provided.',
        });
      }
      const resource = (form.get('scope') ?? '').split(' ').find((s) => s.endsWith('/.default'));
      const audience = resource?.slice(0, -'/.default'.length);
      const access =
        audience && !audience.includes('://')
          ? await new SignJWT({ tid: tenant, appid: client, oid: client })
              .setProtectedHeader({ alg: 'RS256', kid: 'local' })
              .setIssuer(`${endpoint}/${tenant}/v2.0`)
              .setAudience(audience)
              .setSubject(client)
              .setIssuedAt()
              .setExpirationTime('1h')
              .sign(signing.privateKey)
          : token;
      return sendJson(response, 200, {
        token_type: 'Bearer',
        expires_in: 3599,
        ext_expires_in: 3599,
        access_token: access,
      });
    }
    if (request.headers.authorization !== `Bearer ${token}`) {
      return armError(response, {
        status: 401,
        code: 'InvalidAuthenticationToken',
        message: 'The access token is invalid.',
      });
    }
    if (!url.searchParams.get('api-version')) {
      return armError(response, {
        status: 400,
        code: 'MissingApiVersionParameter',
        message: 'The api-version query parameter (?api-version=) is required for all requests.',
      });
    }
    // Microsoft.Authorization/roleAssignments at any scope: list (at the scope and above, by principal), put, delete.
    const assignment = /^(.*)\/providers\/Microsoft\.Authorization\/roleAssignments(?:\/([^/]+))?$/i.exec(
      path,
    );
    if (assignment) {
      const scope = assignment[1]!;
      const name = assignment[2];
      const fault = takeFault(state.assignmentFaults, request.method ?? '', response);
      if (fault) return armError(response, fault);
      if (!name && request.method === 'GET') {
        // As Azure documents it: every assignment at or above the scope; with `principalId eq`, that
        // principal's at, above or below it.
        const principal = /principalId eq '([^']+)'/.exec(url.searchParams.get('$filter') ?? '')?.[1];
        const at = armCase(scope);
        const value = [...state.roleAssignments.values()].filter((a) => {
          const of = armCase(a.properties.scope);
          return principal
            ? a.properties.principalId === principal && (at.startsWith(of) || of.startsWith(`${at}/`))
            : at.startsWith(of);
        });
        // A script pages the listing at the scope; one principal's is answered whole.
        const scripted = principal
          ? undefined
          : state.pages?.('roleAssignments', url.searchParams.get('$skiptoken') ?? undefined);
        if (!scripted) return sendJson(response, 200, { value });
        const query = new URLSearchParams(url.searchParams);
        if (scripted.next) query.set('$skiptoken', scripted.next);
        return sendJson(response, 200, {
          value: value.slice(scripted.from, scripted.from + scripted.count),
          ...(scripted.next ? { nextLink: `${endpoint}${url.pathname}?${query}` } : {}),
        });
      }
      const id = `${scope}/providers/Microsoft.Authorization/roleAssignments/${name}`;
      if (request.method !== 'GET' && state.refuseAssignments.has(scope.toLowerCase()))
        return armError(response, {
          status: 403,
          code: 'AuthorizationFailed',
          message: `The client does not have authorization to perform action 'Microsoft.Authorization/roleAssignments/write' over scope '${scope}'.`,
        });
      if (request.method === 'PUT') {
        const properties = (JSON.parse(body) as { properties: RoleAssignmentJson['properties'] }).properties;
        const made: RoleAssignmentJson = {
          id,
          name: name!,
          type: 'Microsoft.Authorization/roleAssignments',
          properties: { ...properties, scope },
        };
        state.roleAssignments.set(id.toLowerCase(), made);
        return sendJson(response, 201, made);
      }
      if (request.method === 'DELETE') {
        const gone = state.roleAssignments.get(id.toLowerCase());
        state.roleAssignments.delete(id.toLowerCase());
        return gone ? sendJson(response, 200, gone) : (response.writeHead(204), response.end());
      }
    }
    if (request.method === 'POST' && armCase(path) === '/PROVIDERS/MICROSOFT.RESOURCEGRAPH/RESOURCES') {
      const failure = state.graphFailures.shift();
      if (failure) return armError(response, failure);
      return answerGraph(response, JSON.parse(body) as GraphQuery);
    }
    if (request.method === 'GET' && url.pathname === '/subscriptions') {
      const all = state.subscriptions.map((s) => ({
        id: `/subscriptions/${s.subscriptionId}`,
        ...s,
        tenantId: tenant,
      }));
      const scripted = state.pages?.('subscriptions', url.searchParams.get('$skiptoken') ?? undefined);
      if (!scripted) return sendJson(response, 200, { value: all });
      const link = scripted.next
        ? `${endpoint}/subscriptions?api-version=${url.searchParams.get('api-version')}&$skiptoken=${encodeURIComponent(scripted.next)}`
        : undefined;
      return sendJson(response, 200, {
        value: all.slice(scripted.from, scripted.from + scripted.count),
        ...(link ? { nextLink: link } : {}),
      });
    }
    const list = /^\/subscriptions\/([^/]+)\/providers\/Microsoft\.ContainerService\/managedClusters$/i.exec(
      path,
    );
    if (request.method === 'GET' && list) {
      const subscription = list[1]!;
      const failure = state.failures.get(subscription)?.shift();
      if (failure) return armError(response, failure);
      const all = state.clusters.get(subscription) ?? [];
      const scripted = state.pages?.('managedClusters', url.searchParams.get('$skiptoken') ?? undefined);
      if (scripted) {
        const link = scripted.next
          ? `${endpoint}${url.pathname}?api-version=${url.searchParams.get('api-version')}&$skiptoken=${encodeURIComponent(scripted.next)}`
          : undefined;
        return sendJson(response, 200, {
          value: all.slice(scripted.from, scripted.from + scripted.count),
          ...(link ? { nextLink: link } : {}),
        });
      }
      const skip = Number(url.searchParams.get('$skiptoken') ?? '0');
      const page = all.slice(skip, skip + state.pageSize);
      const next =
        skip + state.pageSize < all.length
          ? `${endpoint}${url.pathname}?api-version=${url.searchParams.get('api-version')}&$skiptoken=${skip + state.pageSize}`
          : undefined;
      return sendJson(response, 200, { value: page, ...(next ? { nextLink: next } : {}) });
    }
    const single =
      /^\/subscriptions\/([^/]+)\/resourceGroups\/([^/]+)\/providers\/Microsoft\.ContainerService\/managedClusters\/([^/]+)$/i.exec(
        path,
      );
    if (request.method === 'GET' && single) {
      const id = armCase(path);
      const refused = state.readFailures.get(path.toLowerCase());
      if (refused) return armError(response, refused);
      const cluster = [...state.clusters.values()].flat().find((c) => armCase(c.id) === id);
      if (!cluster)
        return armError(response, {
          status: 404,
          code: 'ResourceNotFound',
          message: `The Resource 'Microsoft.ContainerService/managedClusters/${single[3]}' under resource group '${single[2]}' was not found.`,
        });
      return sendJson(response, 200, cluster);
    }
    const credential =
      /^\/subscriptions\/([^/]+)\/resourceGroups\/([^/]+)\/providers\/Microsoft\.ContainerService\/managedClusters\/([^/]+)\/listClusterUserCredential$/i.exec(
        path,
      );
    if (request.method === 'POST' && credential) {
      const asked = path.replace(/\/listClusterUserCredential$/i, '');
      const id = asked.toLowerCase(); // the test's knobs are keyed so
      const cluster = [...state.clusters.values()].flat().find((c) => armCase(c.id) === armCase(asked));
      if (!cluster)
        return armError(response, {
          status: 404,
          code: 'ResourceNotFound',
          message: `The Resource '${credential[3]}' was not found.`,
        });
      const refused = state.credentialFailures.get(id);
      if (refused) return armError(response, refused);
      const kubeconfig = [
        'apiVersion: v1',
        'kind: Config',
        'clusters:',
        '- cluster:',
        `    certificate-authority-data: ${state.caData.get(id) ?? TEST_CA_DATA}`,
        `    server: https://${String(cluster.properties.fqdn ?? cluster.properties.privateFQDN)}:443`,
        `  name: ${cluster.name}`,
        'users:',
        `- name: clusterUser_${credential[2]}_${cluster.name}`,
        '  user:',
        '    token: local-user-token-never-to-be-stored',
        '',
      ].join('\n');
      return sendJson(response, 200, {
        kubeconfigs: [{ name: 'clusterUser', value: Buffer.from(kubeconfig).toString('base64') }],
      });
    }
    return armError(response, {
      status: 404,
      code: 'NotFound',
      message: `no route ${request.method} ${url.pathname}`,
    });
  });
  /**
   * A Resource Graph query (REST 2024-04-01): the managed clusters of the subscriptions asked (all it knows
   * without any), as its `resources` table shows them (ARM's resource without `systemData`) in the columns the
   * query projects, ordered by id, paged by `$skipToken`.
   * The index runs no KQL: any other query is refused, naming what it expects.
   */
  function answerGraph(response: ServerResponse, asked: GraphQuery): void {
    state.graphQueries.push(asked);
    if (asked.query !== MANAGED_CLUSTERS_QUERY)
      return armError(response, {
        status: 400,
        code: 'BadRequest',
        message: `the local index answers only ${JSON.stringify(MANAGED_CLUSTERS_QUERY)}`,
      });
    const held = state.graph ?? state.clusters;
    const wanted = asked.subscriptions?.map(armCase);
    const rows = [...held]
      .filter(([subscription]) => !wanted || wanted.includes(armCase(subscription)))
      .flatMap(([subscription, list]) =>
        list.map((cluster) => ({
          id: cluster.id,
          name: cluster.name,
          location: cluster.location,
          tags: cluster.tags ?? null,
          properties: cluster.properties,
          subscriptionId: subscription,
        })),
      )
      .sort((a, b) => (armCase(a.id) < armCase(b.id) ? -1 : armCase(a.id) > armCase(b.id) ? 1 : 0));
    const options = asked.options ?? {};
    const scripted = state.pages?.(
      'resources',
      options.$skipToken === undefined ? undefined : String(options.$skipToken),
    );
    if (scripted) {
      const page = rows.slice(scripted.from, scripted.from + scripted.count);
      return sendJson(response, 200, {
        totalRecords: rows.length,
        count: page.length,
        resultTruncated: 'false',
        ...(scripted.next ? { $skipToken: scripted.next } : {}),
        data: page,
      });
    }
    const skip = Number(
      options.$skipToken ? Buffer.from(String(options.$skipToken), 'base64').toString() : 0,
    );
    const top = Math.min(state.graphPageSize, Number(options.$top ?? 100));
    const page = rows.slice(skip, skip + top);
    const next = skip + top < rows.length ? Buffer.from(String(skip + top)).toString('base64') : undefined;
    sendJson(response, 200, {
      totalRecords: rows.length,
      count: page.length,
      resultTruncated: 'false',
      ...(next ? { $skipToken: next } : {}),
      data: page,
    });
  }
  const stop = await serveOnLoopback(server, port);
  return Object.assign(state, { stop });
}

/** The client-secret credential the local ARM issues tokens for, its authority this server. */
export function armCredential(server: ArmServer): ClientSecretCredential {
  return new ClientSecretCredential(server.tenantId, server.clientId, server.clientSecret, {
    authorityHost: server.endpoint,
    disableInstanceDiscovery: true,
  });
}

/** How the AKS clusters were read since request `from`: graph queries, listing pages, and clusters read one by one. */
export function clusterReadsSince(server: ArmServer, from: number) {
  const requests = server.requests.slice(from);
  return {
    graph: requests.filter((r) => /resourcegraph\/resources$/i.test(r.path)).length,
    lists: requests.filter((r) => /\/managedClusters$/i.test(r.path)).length,
    reads: requests
      .filter((r) => r.method === 'GET' && /\/managedClusters\/[^/]+$/i.test(r.path))
      .map((r) => r.path.split('/').at(-1)!)
      .sort(),
  };
}
