/**
 * A local server speaking the GKE (container.googleapis.com v1) and Resource Manager v3 REST shapes that
 * `@google-cloud/container` and `@google-cloud/resource-manager` use over their REST transport, plus the
 * OAuth token endpoint google-auth-library posts its signed JWT to. Enums are answered as numbers, as
 * the real API does when the client asks for `enum-encoding=int`.
 */
import { createHash, generateKeyPairSync, verify } from 'node:crypto';
import { createServer, type ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort, readBody, sendJson, serveOnLoopback, takeFault, type QueuedFault } from '../net.ts';
import type { PageScript } from './pageScript.ts';

/** A cluster as the GKE REST API returns it (camelCase JSON of google.container.v1.Cluster). */
export type GkeClusterJson = Record<string, unknown> & { name: string; location: string };

interface GkeProjectJson {
  projectId: string;
  name?: string;
  displayName?: string;
  state?: number | string;
  parent?: string;
  labels?: Record<string, string>;
}

/** An IAM allow policy as Resource Manager's REST API carries it (etag base64). */
export interface IamPolicyJson {
  version?: number;
  bindings?: Array<{
    role: string;
    members: string[];
    condition?: { title?: string; description?: string; expression: string };
  }>;
  etag?: string;
}

/** The role whose `resourcemanager.projects.getIamPolicy` / `setIamPolicy` the caller needs. */
export const PROJECT_IAM_ADMIN = 'roles/resourcemanager.projectIamAdmin';

/**
 * The roles a conditional projectIamAdmin binding lets its member grant or revoke: IAM's documented
 * `api.getAttribute('iam.googleapis.com/modifiedGrantsByRole', []).hasOnly([...])`; unconditional, any.
 */
function grantableRoles(expression: string | undefined): Set<string> | 'any' | undefined {
  if (!expression) return 'any';
  const listed =
    /^api\.getAttribute\('iam\.googleapis\.com\/modifiedGrantsByRole', \[\]\)\.hasOnly\(\[([^\]]*)\]\)$/.exec(
      expression.trim(),
    )?.[1];
  if (listed === undefined) return undefined;
  return new Set([...listed.matchAll(/'([^']+)'/g)].map((m) => m[1]!));
}

/** The roles whose grants differ between two policies (a binding's role, with or without its condition). */
function modifiedRoles(before: IamPolicyJson, after: IamPolicyJson): Set<string> {
  const grants = (policy: IamPolicyJson) =>
    new Set(
      (policy.bindings ?? []).flatMap((b) =>
        b.members.map((m) => JSON.stringify([b.role, m, b.condition?.expression ?? ''])),
      ),
    );
  const [a, b] = [grants(before), grants(after)];
  const changed = [...a].filter((g) => !b.has(g)).concat([...b].filter((g) => !a.has(g)));
  return new Set(changed.map((grant) => (JSON.parse(grant) as [string])[0]));
}

export interface GoogleError {
  status: number;
  /** google.rpc.Code name, e.g. PERMISSION_DENIED. */
  code: string;
  message: string;
  /** google.rpc.ErrorInfo reason, e.g. SERVICE_DISABLED. */
  reason?: string;
  /** Answer this body (as text/html) instead of an error document: what a proxy in the way sends. */
  raw?: string;
}

export interface GkeServer {
  endpoint: string;
  port: number;
  /** A service-account key whose token_uri points at this server. */
  serviceAccountKey: Record<string, string>;
  clusters: Map<string, GkeClusterJson[]>;
  missingZones: Map<string, string[]>;
  projects: GkeProjectJson[];
  /** Errors to answer for a project's cluster listing or a cluster of it: each request takes the next one; when empty, it answers normally. */
  failures: Map<string, GoogleError[]>;
  /** Errors to answer for project searches, one per request, before answering normally. */
  searchFailures: GoogleError[];
  /** The project search's pages as a test scripts them (see PageScript). */
  pages?: PageScript;
  /** While set, project searches are answered only once it settles (a search that never answers, until then). */
  searchHeld?: Promise<void>;
  requests: Array<{ method: string; path: string }>;
  /**
   * Other Google identities (a consumer's), by the workload identity federation subject token that buys
   * their access token at this server's STS: their email, which tokeninfo names for that token.
   */
  identities: Map<string, string>;
  /**
   * Projects' IAM allow policies (Resource Manager v3 getIamPolicy / setIamPolicy). cpsync's service account
   * reads and writes one only with `roles/resourcemanager.projectIamAdmin` there, and changes only the roles
   * that binding's `modifiedGrantsByRole` condition lets it; a write with a stale etag is ABORTED (409).
   */
  iamPolicies: Map<string, IamPolicyJson>;
  /**
   * Faults of IAM policy calls, each taken by the next call of its method: an error answered instead (nothing
   * changed), or (`lose`) the call done as usual and its answer lost, the connection cut before it is sent.
   */
  iamFaults: Array<QueuedFault<'getIamPolicy' | 'setIamPolicy', GoogleError>>;
  stop(): Promise<void>;
}

function sendError(response: ServerResponse, error: GoogleError): void {
  if (error.raw !== undefined) {
    response.writeHead(error.status, { 'content-type': 'text/html' });
    response.end(error.raw);
    return;
  }
  sendJson(response, error.status, {
    error: {
      code: error.status,
      message: error.message,
      status: error.code,
      ...(error.reason
        ? {
            details: [
              {
                '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
                reason: error.reason,
                domain: 'googleapis.com',
                metadata: { service: 'container.googleapis.com' },
              },
            ],
          }
        : {}),
    },
  });
}

/** The scope a Google access token needs for its email to be told (tokeninfo, GKE's authenticator). */
const EMAIL_SCOPE = 'https://www.googleapis.com/auth/userinfo.email';

/** A Google identity's numeric unique id, as tokeninfo gives it: stable per email. */
function uniqueIdOf(email: string): string {
  return BigInt(`0x${createHash('sha256').update(email).digest('hex').slice(0, 15)}`).toString();
}

export async function startGkeServer(options: { latencyMillis?: number } = {}): Promise<GkeServer> {
  const port = await freePort();
  const endpoint = `http://127.0.0.1:${port}`;
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const token = `ya29.local-${Math.random().toString(36).slice(2)}`;
  const clientEmail = 'cpsync@cpsync-hub.iam.gserviceaccount.com';
  /** An access token this server issued, or a JWT the service account signed itself (as google-auth-library sends). */
  const authorized = (header: string | undefined): boolean => {
    const bearer = /^Bearer (.+)$/.exec(header ?? '')?.[1];
    if (!bearer) return false;
    if (bearer === token) return true;
    const [head, payload, signature] = bearer.split('.');
    if (!head || !payload || !signature) return false;
    if (
      !verify('RSA-SHA256', Buffer.from(`${head}.${payload}`), publicKey, Buffer.from(signature, 'base64url'))
    )
      return false;
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as {
      iss?: string;
      exp?: number;
    };
    return claims.iss === clientEmail && (claims.exp ?? 0) * 1000 > Date.now();
  };
  const state: Omit<GkeServer, 'stop'> = {
    endpoint,
    port,
    serviceAccountKey: {
      type: 'service_account',
      project_id: 'cpsync-hub',
      private_key_id: 'local',
      private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
      client_email: clientEmail,
      client_id: '1',
      token_uri: `${endpoint}/token`,
    },
    clusters: new Map(),
    missingZones: new Map(),
    projects: [],
    failures: new Map(),
    searchFailures: [],
    requests: [],
    identities: new Map(),
    iamPolicies: new Map(),
    iamFaults: [],
  };
  /** Access tokens of the other identities: token → email. */
  const issued = new Map<string, string>();
  /** The scopes each access token was issued with (space-separated, as OAuth spells them). */
  const scopesOf = new Map<string, string>();

  const server = createServer(async (request, response) => {
    const url = new URL(request.url ?? '/', endpoint);
    state.requests.push({ method: request.method ?? 'GET', path: url.pathname });
    const body = await readBody(request);
    if (options.latencyMillis) await sleep(options.latencyMillis);
    if (request.method === 'POST' && url.pathname === '/token') {
      const assertion = new URLSearchParams(body).get('assertion');
      if (!assertion) return sendJson(response, 400, { error: 'invalid_grant' });
      // The scopes the service account's signed assertion asks for (its `scope` claim).
      const claims = JSON.parse(
        Buffer.from(assertion.split('.')[1] ?? '', 'base64url').toString('utf8') || '{}',
      ) as { scope?: string };
      scopesOf.set(token, claims.scope ?? '');
      return sendJson(response, 200, { access_token: token, expires_in: 3600, token_type: 'Bearer' });
    }
    // Google's STS token exchange (workload identity federation, an `external_account` configuration):
    // a subject token from the configured source buys an access token.
    if (request.method === 'POST' && url.pathname === '/v1/token') {
      const form = new URLSearchParams(body);
      if (
        form.get('grant_type') !== 'urn:ietf:params:oauth:grant-type:token-exchange' ||
        !form.get('subject_token')
      )
        return sendJson(response, 400, { error: 'invalid_request' });
      const email = state.identities.get(form.get('subject_token')!);
      let access = token;
      if (email) {
        access = `ya29.local-${Math.random().toString(36).slice(2)}`;
        issued.set(access, email);
      }
      scopesOf.set(access, form.get('scope') ?? '');
      return sendJson(response, 200, {
        access_token: access,
        issued_token_type: 'urn:ietf:params:oauth:token-type:access_token',
        token_type: 'Bearer',
        expires_in: 3600,
      });
    }
    // Google's tokeninfo endpoint: what a token is, for a verifier that did not issue it (GKE's own check).
    if (request.method === 'GET' && url.pathname === '/tokeninfo') {
      const asked = url.searchParams.get('access_token') ?? '';
      if (asked !== token && !issued.has(asked))
        return sendJson(response, 400, { error: 'invalid_token', error_description: 'Invalid Value' });
      // As Google's: the email only for a token that asked for it; the numeric unique id always.
      const scope = scopesOf.get(asked) ?? '';
      const email = issued.get(asked) ?? clientEmail;
      return sendJson(response, 200, {
        azp: uniqueIdOf(email),
        aud: uniqueIdOf(email),
        sub: uniqueIdOf(email),
        scope,
        expires_in: 3600,
        ...(scope.split(' ').includes(EMAIL_SCOPE) ? { email, email_verified: 'true' } : {}),
      });
    }
    if (!authorized(request.headers.authorization)) {
      return sendError(response, {
        status: 401,
        code: 'UNAUTHENTICATED',
        message: 'Request had invalid authentication credentials.',
      });
    }
    const list = /^\/v1\/projects\/([^/]+)\/locations\/([^/]+)\/clusters$/.exec(url.pathname);
    if (request.method === 'GET' && list) {
      const project = decodeURIComponent(list[1]!);
      const failure = state.failures.get(project)?.shift();
      if (failure) return sendError(response, failure);
      const location = decodeURIComponent(list[2]!);
      const clusters = (state.clusters.get(project) ?? []).filter(
        (c) => location === '-' || c.location === location,
      );
      return sendJson(response, 200, { clusters, missingZones: state.missingZones.get(project) ?? [] });
    }
    const one = /^\/v1\/projects\/([^/]+)\/locations\/([^/]+)\/clusters\/([^/]+)$/.exec(url.pathname);
    if (request.method === 'GET' && one) {
      const [project, location, name] = [one[1]!, one[2]!, one[3]!].map(decodeURIComponent);
      const failure = state.failures.get(project!)?.shift();
      if (failure) return sendError(response, failure);
      const cluster = (state.clusters.get(project!) ?? []).find(
        (c) => c.name === name && c.location === location,
      );
      if (!cluster)
        return sendError(response, {
          status: 404,
          code: 'NOT_FOUND',
          message: `Not found: projects/${project}/locations/${location}/clusters/${name}.`,
        });
      return sendJson(response, 200, cluster);
    }
    const iam = /^\/v3\/projects\/([^/:]+):(getIamPolicy|setIamPolicy)$/.exec(url.pathname);
    if (request.method === 'POST' && iam) {
      const [project, method] = [decodeURIComponent(iam[1]!), iam[2]!];
      const fault = takeFault(state.iamFaults, method, response);
      if (fault) return sendError(response, fault);
      const policy = state.iamPolicies.get(project) ?? emptyPolicy();
      const denied = (what: string) =>
        sendError(response, {
          status: 403,
          code: 'PERMISSION_DENIED',
          message: `The caller does not have permission (${what} on projects/${project})`,
        });
      const admin = (policy.bindings ?? []).filter(
        (b) => b.role === PROJECT_IAM_ADMIN && b.members.includes(`serviceAccount:${clientEmail}`),
      );
      if (admin.length === 0) return denied(`resourcemanager.projects.${method}`);
      if (method === 'getIamPolicy') return sendJson(response, 200, policy);
      const wanted = (JSON.parse(body) as { policy?: IamPolicyJson }).policy ?? {};
      // As IAM does: a policy sent without an etag is written over the project's blindly; with one, only over the
      // policy that etag was read from.
      if (wanted.etag !== undefined && wanted.etag !== '' && wanted.etag !== policy.etag)
        return sendError(response, {
          status: 409,
          code: 'ABORTED',
          message:
            'There were concurrent policy changes. Please retry the whole read-modify-write with exponential backoff.',
        });
      const allowed = admin.map((b) => grantableRoles(b.condition?.expression));
      for (const role of modifiedRoles(policy, wanted))
        if (!allowed.some((roles) => roles === 'any' || roles?.has(role)))
          return denied(`granting or revoking ${role}`);
      const stored: IamPolicyJson = {
        version: wanted.version ?? 1,
        // As IAM keeps them: a condition's empty fields (proto3 JSON sends its defaults) are not kept.
        bindings: (wanted.bindings ?? []).map(({ condition, ...binding }) => ({
          ...binding,
          ...(condition
            ? {
                condition: Object.fromEntries(
                  Object.entries(condition).filter(([, value]) => value !== ''),
                ) as typeof condition,
              }
            : {}),
        })),
        etag: Buffer.from(String(Date.now() + Math.random())).toString('base64'),
      };
      state.iamPolicies.set(project, stored);
      return sendJson(response, 200, stored);
    }
    if (request.method === 'GET' && url.pathname === '/v3/projects:search') {
      if (state.searchHeld) await state.searchHeld;
      const refused = state.searchFailures.shift();
      if (refused) return sendError(response, refused);
      const query = url.searchParams.get('query') ?? '';
      const pageSize = Number(url.searchParams.get('pageSize') ?? '2');
      const offset = Number(url.searchParams.get('pageToken') || '0');
      const wantedParent = /parent:(\S+)/.exec(query)?.[1];
      const matching = state.projects.filter((p) => !wantedParent || p.parent === wantedParent);
      const scripted = state.pages?.('projects:search', url.searchParams.get('pageToken') || undefined);
      if (scripted)
        return sendJson(response, 200, {
          projects: matching.slice(scripted.from, scripted.from + scripted.count),
          ...(scripted.next ? { nextPageToken: scripted.next } : {}),
        });
      const page = matching.slice(offset, offset + pageSize);
      const next = offset + pageSize < matching.length ? String(offset + pageSize) : '';
      return sendJson(response, 200, { projects: page, ...(next ? { nextPageToken: next } : {}) });
    }
    return sendError(response, {
      status: 404,
      code: 'NOT_FOUND',
      message: `no route ${request.method} ${url.pathname}`,
    });
  });
  const stop = await serveOnLoopback(server, port);
  return Object.assign(state, { stop });
}

/** A project's IAM policy before anyone changed it. */
const emptyPolicy = (): IamPolicyJson => ({ version: 1, etag: 'BwAAAA==', bindings: [] });

/**
 * A project's IAM policy as a project using cpsync starts: cpsync's own service account sees its clusters
 * (`roles/container.viewer`), with `bindings` besides.
 */
export function letCpsyncSeeProject(
  gke: GkeServer,
  project: string,
  bindings: NonNullable<IamPolicyJson['bindings']> = [],
): void {
  gke.iamPolicies.set(project, {
    ...emptyPolicy(),
    bindings: [
      { role: 'roles/container.viewer', members: [`serviceAccount:${gke.serviceAccountKey.client_email!}`] },
      ...bindings,
    ],
  });
}

/**
 * What a GKE project gives cpsync for the access grants, as docs/configuring.md asks: Project IAM Admin, limited by its
 * condition to granting and revoking GKE's cluster viewer role.
 */
export function letCpsyncGrantInProject(gke: GkeServer, project: string): void {
  const policy = gke.iamPolicies.get(project) ?? emptyPolicy();
  (policy.bindings ??= []).push({
    role: PROJECT_IAM_ADMIN,
    members: [`serviceAccount:${gke.serviceAccountKey.client_email!}`],
    condition: {
      title: 'cpsync grants GKE cluster viewer only',
      expression:
        "api.getAttribute('iam.googleapis.com/modifiedGrantsByRole', []).hasOnly(['roles/container.clusterViewer'])",
    },
  });
  gke.iamPolicies.set(project, policy);
}
