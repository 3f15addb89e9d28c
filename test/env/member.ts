/**
 * A member cluster for the consumer tests: a second real kube-apiserver (its own etcd and CA) on port 443 of a
 * loopback address of its own (127.x.y.z, chosen at random where 443 is free, so two test runs on one machine do
 * not meet) — port 443 because every cloud's endpoint shape can name it, AKS's `https://<fqdn>:443` too —
 * that authenticates bearer tokens through a token webhook verifying them as the clouds do:
 *   EKS  `k8s-aws-v1.` tokens the way aws-iam-authenticator does: the presigned STS GetCallerIdentity
 *        URL must point at the local STS, be signed over `x-k8s-aws-id` = the member's cluster id (the
 *        signature checked with the caller's key, as STS checks it), be at most 15 minutes old; the
 *        local STS then names the caller, whose ARN is the user;
 *   GKE  Google access tokens through the issuer's tokeninfo endpoint;
 *   AKS  Entra JWTs: the issuer's signature, issuer and the AKS server application as audience.
 * Users it authenticates are in the group `cpsync:consumers`, which may list namespaces. For the access grants it can
 * authorize as the clouds do besides RBAC: EKS access entries, Azure role assignments, and GKE's check of the
 * project's IAM policy (`container.clusters.get`), which denies before RBAC is asked.
 */
import { Sha256 } from '@aws-crypto/sha256-js';
import { HttpRequest } from '@smithy/protocol-http';
import { SignatureV4 } from '@smithy/signature-v4';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import {
  AdmissionregistrationV1Api,
  KubeConfig,
  RbacAuthorizationV1Api,
  loadAllYaml,
  type V1ClusterRole,
  type V1ClusterRoleBinding,
  type V1ValidatingAdmissionPolicy,
  type V1ValidatingAdmissionPolicyBinding,
} from '@kubernetes/client-node';
import { HUB_CREDENTIALS } from '../support/aws.ts';
import { AZURE_SUBSCRIPTION, GCP_PROJECT, gkeCluster, withEksClusters, type Emulators } from './emulators.ts';
import type { RoleAssignmentJson } from './fakes/armServer.ts';
import type { GkeClusterJson, IamPolicyJson } from './fakes/gkeServer.ts';
import type { EksAccessEntries } from './eksAccessEntries.ts';
import { startHub, stopHub } from './hub.ts';
import { freeLoopbackAddress, freePort, readBody, sendJson, serveOnLoopback } from './net.ts';

const CONSUMER_GROUP = 'cpsync:consumers';
const AKS_SERVER_APPLICATION = '6dae42f8-4368-4678-94ff-3960e28e3630';
const EKS_TOKEN_PREFIX = 'k8s-aws-v1.';

export interface MemberVerifiers {
  eks: {
    /**
     * The cluster id tokens must be signed for (the member's EKS cluster name), or the ids it answers
     * for (one member standing in for several EKS clusters).
     */
    clusterId: string | (() => readonly string[]);
    /** The local STS tokens must point at (its origin). */
    stsEndpoint: string;
    /** Secret keys by access key id: the signature check STS does (the local STS does not). */
    secretOf: (accessKeyId: string) => string | undefined;
  };
  gke: { tokeninfo: string };
  aks: { verify: (token: string, audience: string) => Promise<string> };
}

export interface Member {
  /** `https://127.x.y.z` (port 443). */
  server: string;
  /** The member's CA certificate, base64 (what a profile carries). */
  caData: string;
  kubeconfig: string;
  /** Every token review: which cloud's token, whether it was accepted, and the token (to look for leaks). */
  reviews: Array<{ kind: string; authenticated: boolean; user?: string; error?: string; token: string }>;
  stop(): Promise<void>;
}

async function verifyEks(
  token: string,
  v: MemberVerifiers['eks'],
): Promise<{ arn: string; clusterId: string }> {
  let url: URL;
  try {
    url = new URL(Buffer.from(token.slice(EKS_TOKEN_PREFIX.length), 'base64url').toString('utf8'));
  } catch {
    throw new Error('not a presigned URL');
  }
  if (url.origin !== new URL(v.stsEndpoint).origin) throw new Error(`not an STS URL: ${url.origin}`);
  const query = url.searchParams;
  if (query.get('Action') !== 'GetCallerIdentity') throw new Error('not GetCallerIdentity');
  const signedHeaders = (query.get('X-Amz-SignedHeaders') ?? '').split(';');
  if (!signedHeaders.includes('x-k8s-aws-id')) throw new Error('x-k8s-aws-id is not signed');
  const date = query.get('X-Amz-Date') ?? '';
  const signedAt = Date.parse(
    `${date.slice(0, 4)}-${date.slice(4, 6)}-${date.slice(6, 8)}T${date.slice(9, 11)}:${date.slice(11, 13)}:${date.slice(13, 15)}Z`,
  );
  if (!(Date.now() - signedAt < 15 * 60_000)) throw new Error('expired or undated');
  // STS's own check: the signature over this URL with x-k8s-aws-id = the member's cluster id.
  const [accessKeyId, , region] = (query.get('X-Amz-Credential') ?? '').split('/');
  const secret = accessKeyId ? v.secretOf(accessKeyId) : undefined;
  if (!accessKeyId || !secret || !region) throw new Error('unknown access key');
  const unsigned = Object.fromEntries([...query].filter(([key]) => !key.startsWith('X-Amz-')));
  const signer = new SignatureV4({
    credentials: {
      accessKeyId,
      secretAccessKey: secret,
      ...(query.get('X-Amz-Security-Token') ? { sessionToken: query.get('X-Amz-Security-Token')! } : {}),
    },
    region,
    service: 'sts',
    sha256: Sha256,
  });
  const candidates = typeof v.clusterId === 'string' ? [v.clusterId] : v.clusterId();
  let clusterId: string | undefined;
  for (const candidate of candidates) {
    const again = await signer.presign(
      new HttpRequest({
        method: 'GET',
        protocol: url.protocol,
        hostname: url.hostname,
        ...(url.port ? { port: Number(url.port) } : {}),
        path: '/',
        query: unsigned,
        headers: { host: url.host, 'x-k8s-aws-id': candidate },
      }),
      { expiresIn: Number(query.get('X-Amz-Expires') ?? '60'), signingDate: new Date(signedAt) },
    );
    if (again.query?.['X-Amz-Signature'] === query.get('X-Amz-Signature')) clusterId = candidate;
  }
  if (!clusterId) throw new Error('signature does not match this cluster');
  // Then what aws-iam-authenticator does: ask STS who signed it.
  const answer = await fetch(url, { headers: { 'x-k8s-aws-id': clusterId } });
  const body = await answer.text();
  const arn = /<Arn>([^<]+)<\/Arn>/.exec(body)?.[1];
  if (answer.status !== 200 || !arn)
    throw new Error(`STS refused: HTTP ${answer.status} ${body.slice(0, 300)}`);
  return { arn, clusterId };
}

/** The user's extra attribute naming the EKS cluster its token was signed for (one member may stand for several). */
const EKS_CLUSTER_EXTRA = 'cpsync.test/eks-cluster-id';

async function verifyGke(token: string, v: MemberVerifiers['gke']): Promise<string> {
  const answer = await fetch(`${v.tokeninfo}?access_token=${encodeURIComponent(token)}`);
  const info = (await answer.json()) as { email?: string; sub?: string; error?: string };
  const name = info.email ?? info.sub;
  if (answer.status !== 200 || !name) throw new Error(`tokeninfo: ${info.error ?? answer.status}`);
  // As GKE names it: a token without the email scope is its identity's numeric unique id.
  return name;
}

async function review(
  token: string,
  verifiers: MemberVerifiers,
): Promise<{ kind: string; user: string; extra?: Record<string, string[]> }> {
  if (token.startsWith(EKS_TOKEN_PREFIX)) {
    const { arn, clusterId } = await verifyEks(token, verifiers.eks);
    return { kind: 'eks', user: arn, extra: { [EKS_CLUSTER_EXTRA]: [clusterId] } };
  }
  if (token.startsWith('ya29.')) return { kind: 'gke', user: await verifyGke(token, verifiers.gke) };
  if (token.split('.').length === 3)
    return { kind: 'aks', user: await verifiers.aks.verify(token, AKS_SERVER_APPLICATION) };
  throw new Error('not a token of any cloud');
}

/** What an EKS access policy lets its principal do (AWS's documented scope of each, in short). */
function eksPolicyAllows(policyArn: string, attributes: ResourceAttributes): boolean {
  const policy = policyArn.split('/').pop();
  const reads = ['get', 'list', 'watch'].includes(attributes.verb ?? '');
  const rbac = attributes.group === 'rbac.authorization.k8s.io';
  if (attributes.resource === 'secrets' && policy === 'AmazonEKSViewPolicy') return false;
  if (policy === 'AmazonEKSViewPolicy') return reads;
  if (policy === 'AmazonEKSEditPolicy') return !rbac || reads;
  if (policy === 'AmazonEKSAdminPolicy') return !rbac || attributes.namespace !== undefined || reads;
  return false;
}

interface ResourceAttributes {
  namespace?: string;
  verb?: string;
  group?: string;
  resource?: string;
}

/** An authorizer after RBAC: whether `user` may do `attributes`. */
type Authorize = (
  user: string,
  attributes: ResourceAttributes | undefined,
  extra: Record<string, string[]> | undefined,
) => boolean;

/** The IAM principal an EKS user is (an assumed role's session is its role), as EKS's access entries key it. */
function principalOf(user: string): string {
  const session = /^arn:(aws[a-z-]*):sts::(\d{12}):assumed-role\/([^/]+)\/.+$/.exec(user);
  return session ? `arn:${session[1]}:iam::${session[2]}:role/${session[3]}` : user;
}

/**
 * EKS's authorizer of access entries: a user whose principal has an entry on the cluster its token was signed
 * for may do what the entry's access policies allow (after RBAC, which the member runs first).
 */
function eksAccessAuthorizer(entries: EksAccessEntries): Authorize {
  return (user, attributes, extra) => {
    const cluster = extra?.[EKS_CLUSTER_EXTRA]?.[0];
    if (!attributes || !cluster) return false;
    const principal = principalOf(user);
    for (const [key, map] of entries.entries) {
      if (key.split('/').slice(1).join('/') !== cluster) continue;
      const entry = map.get(principal);
      // A namespace-scoped policy holds in its namespaces only.
      const inScope = (scope: { type: string; namespaces?: string[] }) =>
        scope.type === 'cluster' || (scope.namespaces ?? []).includes(attributes.namespace ?? '');
      if (entry?.policies.some((p) => inScope(p.accessScope) && eksPolicyAllows(p.policyArn, attributes)))
        return true;
    }
    return false;
  };
}

/**
 * What kube-controller-manager's clusterrole-aggregation controller does (the member runs no controller
 * manager, nor does the local hub): each ClusterRole with an aggregationRule (view, edit, admin) gets the
 * rules of the ClusterRoles its selectors match, as on every real cluster.
 */
export async function aggregateClusterRoles(rbac: RbacAuthorizationV1Api): Promise<void> {
  const roles = (await rbac.listClusterRole()).items;
  for (const role of roles) {
    const selectors = role.aggregationRule?.clusterRoleSelectors ?? [];
    if (selectors.length === 0) continue;
    const matches = (labels: Record<string, string> | undefined) =>
      selectors.some((selector) =>
        Object.entries(selector.matchLabels ?? {}).every(([key, value]) => labels?.[key] === value),
      );
    const rules = roles
      .filter((other) => other.metadata?.name !== role.metadata?.name && matches(other.metadata?.labels))
      .flatMap((other) => other.rules ?? []);
    await rbac.replaceClusterRole({ name: role.metadata!.name!, body: { ...role, rules } });
  }
}

/** The EKS access policy each AKS built-in data-plane role matches in what it allows. */
const AKS_ROLE_AS_POLICY: Record<string, string> = {
  '7f6c6a51-bcf8-42ba-9220-52d62157d7db': 'AmazonEKSViewPolicy',
  'a7ffa36f-339b-4b5c-8bdf-e2c188b2c0eb': 'AmazonEKSEditPolicy',
  '3498e952-d568-435e-9b2c-8d77e338d7f7': 'AmazonEKSAdminPolicy',
};

/**
 * AKS's authorizer on a cluster that uses Azure RBAC: an Entra identity with one of the AKS RBAC roles assigned at
 * the cluster's scope (or the request's namespace's) may do what the role allows.
 */
function azureRbacAuthorizer(
  clusterNow: () => string | undefined,
  assignments: () => Iterable<RoleAssignmentJson>,
): Authorize {
  return (user, attributes) => {
    const cluster = clusterNow();
    if (!attributes || !cluster) return false;
    const scopes = [
      cluster,
      ...(attributes.namespace ? [`${cluster}/namespaces/${attributes.namespace}`] : []),
    ].map((s) => s.toLowerCase());
    for (const assignment of assignments()) {
      if (assignment.properties.principalId !== user) continue;
      if (!scopes.includes(assignment.properties.scope.toLowerCase())) continue;
      const policy =
        AKS_ROLE_AS_POLICY[assignment.properties.roleDefinitionId.split('/').pop()!.toLowerCase()];
      if (policy && eksPolicyAllows(policy, attributes)) return true;
    }
    return false;
  };
}

/** A check before every other authorizer: the reason a request is denied outright, or undefined (no opinion). */
type Deny = (user: string) => string | undefined;

/** The roles that hold `container.clusters.get` (GKE's predefined roles and the basic ones). */
const CLUSTERS_GET_ROLES = new Set([
  'roles/container.clusterViewer',
  'roles/container.viewer',
  'roles/container.developer',
  'roles/container.admin',
  'roles/container.clusterAdmin',
  'roles/viewer',
  'roles/editor',
  'roles/owner',
]);

/**
 * GKE's own check before RBAC: a Google identity (a service account, a federated principal) is let in only
 * with `container.clusters.get` in the cluster's project, from a binding of the project's IAM policy that is
 * unconditional or limited to GKE (`resource.service == "container.googleapis.com"`).
 */
function gkeProjectIam(project: string, policy: () => IamPolicyJson | undefined): Deny {
  return (user) => {
    const google = user.endsWith('.iam.gserviceaccount.com') || user.startsWith('principal://');
    if (!google) return undefined;
    const member = user.startsWith('principal://') ? user : `serviceAccount:${user}`;
    const held = (policy()?.bindings ?? []).some(
      (b) =>
        CLUSTERS_GET_ROLES.has(b.role) &&
        b.members.includes(member) &&
        (!b.condition ||
          b.condition.expression.replace(/\s+/g, '') === 'resource.service=="container.googleapis.com"'),
    );
    return held ? undefined : `Required "container.clusters.get" permission(s) for "projects/${project}".`;
  };
}

/** Authorizers after RBAC, any of which may allow (none: no webhook authorizer). */
function anyOf(authorizers: Authorize[]): Authorize | undefined {
  if (authorizers.length === 0) return undefined;
  return (user, attributes, extra) => authorizers.some((authorize) => authorize(user, attributes, extra));
}

/** Starts the token webhook and the member kube-apiserver behind it. */
async function startMember(
  directory: string,
  verifiers: MemberVerifiers,
  log: (line: string) => void = () => {},
  authorize?: Authorize,
  deny?: Deny,
): Promise<Member> {
  const reviews: Member['reviews'] = [];
  const webhook = createServer(async (request, response) => {
    const body = JSON.parse(await readBody(request)) as { spec?: { token?: string } };
    const token = body.spec?.token ?? '';
    const answer = { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview' };
    try {
      const { kind, user, extra } = await review(token, verifiers);
      reviews.push({ kind, authenticated: true, user, token });
      sendJson(response, 200, {
        ...answer,
        status: {
          authenticated: true,
          user: { username: user, groups: [CONSUMER_GROUP], ...(extra ? { extra } : {}) },
        },
      });
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      reviews.push({ kind: token.slice(0, 11), authenticated: false, error: reason, token });
      sendJson(response, 200, { ...answer, status: { authenticated: false, error: reason } });
    }
  });
  const webhookPort = await freePort();
  const stopWebhook = await serveOnLoopback(webhook, webhookPort);
  const webhookConfig = join(directory, '..', 'member-token-webhook.kubeconfig');
  writeFileSync(
    webhookConfig,
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters:',
      `- name: webhook`,
      `  cluster: { server: "http://127.0.0.1:${webhookPort}/review" }`,
      'users:',
      '- name: apiserver',
      '  user: {}',
      'contexts:',
      '- name: webhook',
      '  context: { cluster: webhook, user: apiserver }',
      'current-context: webhook',
      '',
    ].join('\n'),
  );
  // A webhook authorizer, when the member has one: checks that deny outright (GKE's project IAM) before RBAC,
  // then what may allow besides RBAC (EKS's access entries, Azure RBAC); no opinion otherwise.
  let stopAuthorizer = async () => {};
  const authorizerArgs: string[] = [];
  if (authorize || deny) {
    const authorizer = createServer(async (request, response) => {
      const body = JSON.parse(await readBody(request)) as {
        spec?: { user?: string; resourceAttributes?: ResourceAttributes; extra?: Record<string, string[]> };
      };
      const user = body.spec?.user ?? '';
      const denied = deny?.(user);
      const allowed =
        !denied && (authorize?.(user, body.spec?.resourceAttributes, body.spec?.extra) ?? false);
      sendJson(response, 200, {
        apiVersion: 'authorization.k8s.io/v1',
        kind: 'SubjectAccessReview',
        status: denied
          ? { allowed: false, denied: true, reason: denied }
          : { allowed, ...(allowed ? { reason: 'EKS access entry' } : {}) },
      });
    });
    const authorizerPort = await freePort();
    stopAuthorizer = await serveOnLoopback(authorizer, authorizerPort);
    const authorizerConfig = join(directory, '..', 'member-authorizer-webhook.kubeconfig');
    writeFileSync(
      authorizerConfig,
      readFileSync(webhookConfig, 'utf8').replace(
        `http://127.0.0.1:${webhookPort}/review`,
        `http://127.0.0.1:${authorizerPort}/authorize`,
      ),
    );
    authorizerArgs.push(
      `--authorization-webhook-config-file=${authorizerConfig}`,
      '--authorization-webhook-version=v1',
      '--authorization-webhook-cache-authorized-ttl=0s',
      '--authorization-webhook-cache-unauthorized-ttl=0s',
    );
  }
  let hub;
  let address;
  try {
    address = await freeLoopbackAddress(443);
    hub = await startHub(directory, log, {
      address,
      port: 443,
      crd: false,
      // The webhook first when it may deny: an outright denial stops the chain before RBAC.
      ...(deny
        ? { authorizationModes: ['Webhook', 'RBAC'] }
        : authorize
          ? { authorizationModes: ['RBAC', 'Webhook'] }
          : {}),
      apiserverArgs: [
        `--authentication-token-webhook-config-file=${webhookConfig}`,
        '--authentication-token-webhook-version=v1',
        '--authentication-token-webhook-cache-ttl=0s',
        ...authorizerArgs,
      ],
    });
  } catch (error) {
    await stopWebhook();
    await stopAuthorizer();
    throw error;
  }
  const config = new KubeConfig();
  config.loadFromFile(hub.kubeconfig);
  const rbac = config.makeApiClient(RbacAuthorizationV1Api);
  await aggregateClusterRoles(rbac);
  await rbac.createClusterRole({
    body: {
      metadata: { name: 'cpsync-consumer' },
      rules: [{ apiGroups: [''], resources: ['namespaces'], verbs: ['get', 'list', 'watch'] }],
    },
  });
  await rbac.createClusterRoleBinding({
    body: {
      metadata: { name: 'cpsync-consumer' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cpsync-consumer' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: CONSUMER_GROUP }],
    },
  });
  return {
    server: `https://${address}`,
    caData: readFileSync(hub.caCert).toString('base64'),
    kubeconfig: hub.kubeconfig,
    reviews,
    async stop() {
      await stopHub(directory);
      await stopWebhook();
      await stopAuthorizer();
    },
  };
}

/**
 * The member for the local estate: EKS tokens signed for `eksClusterId` with the estate's credentials and
 * presigned for its STS, Google tokens the local issuer gave, Entra tokens the local authority signed.
 */
export function startEstateMember(
  emulators: Emulators,
  eksClusterId: MemberVerifiers['eks']['clusterId'],
  log: (line: string) => void = () => {},
  options: {
    /** EKS access entries the member's authorizer honours (for the clusters it stands for). */
    accessEntries?: EksAccessEntries;
    /** Secret keys of other AWS identities (a consumer's): access key id → secret. */
    secrets?: ReadonlyMap<string, string>;
    /** The AKS cluster (resource id) whose Azure role assignments the member's authorizer honours. */
    azureRbacCluster?: () => string | undefined;
    /** The GCP project whose IAM policy (at the local GKE) must give Google identities container.clusters.get. */
    googleProject?: string;
  } = {},
): Promise<Member> {
  return startMember(
    join(emulators.directory, 'member'),
    {
      eks: {
        clusterId: eksClusterId,
        stsEndpoint: emulators.proxy.endpoint,
        secretOf: (id) =>
          id === HUB_CREDENTIALS.accessKeyId ? HUB_CREDENTIALS.secretAccessKey : options.secrets?.get(id),
      },
      gke: { tokeninfo: `${emulators.gke.endpoint}/tokeninfo` },
      aks: { verify: (token, audience) => emulators.arm.verifyToken(token, audience) },
    },
    log,
    anyOf([
      ...(options.accessEntries ? [eksAccessAuthorizer(options.accessEntries)] : []),
      ...(options.azureRbacCluster
        ? [azureRbacAuthorizer(options.azureRbacCluster, () => emulators.arm.roleAssignments.values())]
        : []),
    ]),
    options.googleProject
      ? gkeProjectIam(options.googleProject, () => emulators.gke.iamPolicies.get(options.googleProject!))
      : undefined,
  );
}

/**
 * What a member gives cpsync for the access grants, as docs/configuring.md asks of members: the ClusterRole and binding
 * of `adapters/member/manifests/access-grants-rbac.yaml`, bound to cpsync's own GKE service account and Entra
 * application, and its admission policy (which reads cpsync's identities from that binding). Returns the member's
 * RBAC client (to look at what cpsync bound).
 */
export async function letCpsyncGrant(emulators: Emulators, member: Member): Promise<RbacAuthorizationV1Api> {
  const config = new KubeConfig();
  config.loadFromFile(member.kubeconfig);
  const rbac = config.makeApiClient(RbacAuthorizationV1Api);
  await applyAccessGrantsManifests(config, [
    emulators.gke.serviceAccountKey.client_email!,
    emulators.arm.clientId,
  ]);
  return rbac;
}

/** The documents of `adapters/member/manifests/access-grants-rbac.yaml`, in order. */
export function accessGrantsManifests(): {
  role: V1ClusterRole;
  binding: V1ClusterRoleBinding;
  policy: V1ValidatingAdmissionPolicy;
  policyBinding: V1ValidatingAdmissionPolicyBinding;
} {
  const [role, binding, policy, policyBinding] = loadAllYaml(
    readFileSync(new URL('../../adapters/member/manifests/access-grants-rbac.yaml', import.meta.url), 'utf8'),
  ) as [V1ClusterRole, V1ClusterRoleBinding, V1ValidatingAdmissionPolicy, V1ValidatingAdmissionPolicyBinding];
  return { role, binding, policy, policyBinding };
}

/**
 * Makes the shipped access-grants manifests in the cluster `config` reaches, the binding's subjects replaced by
 * `identities` (Users), as an operator binds cpsync's identity; the rest as shipped.
 */
export async function applyAccessGrantsManifests(
  config: KubeConfig,
  identities: readonly string[],
): Promise<void> {
  const { role, binding, policy, policyBinding } = accessGrantsManifests();
  const rbac = config.makeApiClient(RbacAuthorizationV1Api);
  const admission = config.makeApiClient(AdmissionregistrationV1Api);
  await rbac.createClusterRole({ body: role });
  await rbac.createClusterRoleBinding({
    body: {
      ...binding,
      subjects: identities.map((name) => ({ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name })),
    },
  });
  await admission.createValidatingAdmissionPolicy({ body: policy });
  await admission.createValidatingAdmissionPolicyBinding({ body: policyBinding });
}

/** The estate's clusters a member stands for: one per cloud. */
export const AT_MEMBER = { eks: 'checkout', gke: 'edge', aks: 'batch' } as const;

/**
 * Points one cluster of each cloud of the estate (`AT_MEMBER`) at `member`, with the member's real CA: the
 * EKS answers rewritten through the AWS proxy, the GKE record replaced, the AKS record's fqdn and CA set.
 * Returns the GKE cluster record the member stands behind (to put back once a test removed it).
 */
export function serveFromMember(emulators: Emulators, member: Member): GkeClusterJson {
  const memberHost = new URL(member.server).hostname;
  emulators.proxy.rewrite(
    withEksClusters((name) =>
      name === AT_MEMBER.eks ? { ca: member.caData, endpoint: member.server } : undefined,
    ),
  );
  const gke = emulators.gke.clusters.get(GCP_PROJECT)!;
  const edge = gkeCluster(AT_MEMBER.gke, 'europe-west1-c', {
    endpoint: memberHost,
    masterAuth: { clusterCaCertificate: member.caData },
  });
  gke[gke.findIndex((c) => c.name === AT_MEMBER.gke)] = edge;
  const batch = emulators.arm.clusters.get(AZURE_SUBSCRIPTION)!.find((c) => c.name === AT_MEMBER.aks)!;
  batch.properties.fqdn = memberHost;
  emulators.arm.caData.set(batch.id.toLowerCase(), member.caData);
  return edge;
}
