/**
 * `cpsync doctor`: whether the identity running cpsync can do its work, checked without changing anything —
 * the hub (each inventory namespace read, and what cpsync writes there allowed by the hub's own authorizer;
 * on a Kubernetes hub, whether the admission policy that lets only cpsync write its profiles is in force, and that
 * cpsync's identity reaches no Secret where Argo CD reads its clusters),
 * the bus, the outbox, and every configured scope listed; with the access grants on, each GKE project's IAM policy
 * and each GKE or AKS member's bounds on cpsync's identity there. The CLI runs it with its own credentials, and a
 * deployed stack's scope worker with its role (`cpsync doctor --function`).
 */
import { AuthenticationV1Api, AuthorizationV1Api, type KubeConfig } from '@kubernetes/client-node';
import pLimit from 'p-limit';
import { messageOf } from '../../core/domain/errors.ts';
import { LABEL_ACCOUNT, LABEL_CLUSTER_MANAGER } from '../../core/domain/constants.ts';
import { planGrants } from '../../core/domain/grants.ts';
import type { ObservedCluster } from '../../core/domain/model/observedCluster.ts';
import { normalizeAll } from '../../core/domain/normalize.ts';
import { inventoryNamespaces } from '../../core/domain/options.ts';
import { scopeKey, type Scope } from '../../core/domain/model/scope.ts';
import { apiMessage } from '../shared/admissionPolicy.ts';
import { HUB_POLICY, readHubGuard, writerText, writesAs, type HubGuard } from '../hub/hubPolicy.ts';
import type { CheckOutcome } from '../../core/sync/ports.ts';
import type { Composition } from './compose.ts';

export interface DoctorCheck extends CheckOutcome {
  /** What was checked: `hub cluster-inventory`, `bus`, `outbox`, `scope eks/111122223333/us-east-1`, … */
  subject: string;
}

export interface DoctorReport {
  ok: boolean;
  checks: DoctorCheck[];
}

export interface DoctorOptions {
  /** How long one scope's listing may take. @default 60 s */
  scopeTimeoutMillis?: number;
  /** Scopes listed at once. @default 8 */
  concurrency?: number;
  /**
   * Argo CD's namespace on the hub, where the Argo CD subscriber writes its cluster Secrets: checked that cpsync's
   * identity reaches none there. The deployed functions are not told of the subscribers, so `cpsync doctor --function`
   * sends it from the configuration it reads. @default the configuration's (`argoCdNamespaceOf`)
   */
  argocdNamespace?: string;
}

/** Argo CD's namespace when the configuration's Argo CD subscriber writes its Secrets on the hub; else undefined. */
export function argoCdNamespaceOf(config: Composition['config']): string | undefined {
  const argocd = config.subscribers?.argocd;
  return argocd && !argocd.kubeconfigSecretArn ? argocd.namespace : undefined;
}

/** What cpsync does in each inventory namespace (adapters/hub/manifests/rbac.yaml), as access reviews. */
function needs(namespace: string, manager: string) {
  const profiles = { group: 'multicluster.x-k8s.io', resource: 'clusterprofiles', namespace };
  return [
    ...['get', 'list', 'create', 'patch', 'delete'].map((verb) => ({ ...profiles, verb })),
    { ...profiles, subresource: 'status', verb: 'patch' },
    ...['get', 'list', 'create', 'update', 'delete'].map((verb) => ({
      group: 'coordination.k8s.io',
      resource: 'leases',
      namespace,
      verb,
    })),
    ...['get', 'create', 'patch'].map((verb) => ({
      group: '',
      resource: 'configmaps',
      name: `${manager}-features`,
      namespace,
      verb,
    })),
    ...['get', 'patch'].map((verb) => ({ group: '', resource: 'namespaces', name: namespace, verb })),
  ];
}

const spell = (need: ReturnType<typeof needs>[number]) =>
  `${need.verb} ${need.resource}${'subresource' in need ? `/${need.subresource}` : ''}${'name' in need ? ` ${need.name}` : ''}`;

async function hubChecks(composition: Composition): Promise<DoctorCheck[]> {
  const { hub } = composition.ports;
  const { options } = composition.settings;
  const authorization = composition.hubKubeConfig
    ? (await composition.hubKubeConfig()).makeApiClient(AuthorizationV1Api)
    : undefined;
  return Promise.all(
    inventoryNamespaces(options).map(async ({ name }): Promise<DoctorCheck> => {
      const subject = `hub ${name}`;
      let profiles: number;
      try {
        profiles = (await hub.list(name, { [LABEL_CLUSTER_MANAGER]: options.manager })).length;
      } catch (error) {
        return { subject, ok: false, detail: `cannot list ClusterProfiles: ${messageOf(error)}` };
      }
      if (!authorization) return { subject, ok: true, detail: `${profiles} profile(s)` };
      try {
        const refused: string[] = [];
        for (const need of needs(name, options.manager)) {
          const review = await authorization.createSelfSubjectAccessReview({
            body: { spec: { resourceAttributes: need } },
          });
          if (!review.status?.allowed) refused.push(spell(need));
        }
        return refused.length === 0
          ? { subject, ok: true, detail: `${profiles} profile(s); every write cpsync makes is allowed` }
          : {
              subject,
              ok: false,
              detail: `${profiles} profile(s); the hub refuses: ${refused.join(', ')} (adapters/hub/manifests/rbac.yaml)`,
            };
      } catch (error) {
        return { subject, ok: false, detail: `cannot review access: ${messageOf(error)}` };
      }
    }),
  );
}

/**
 * On a Kubernetes hub: whether the admission policy that lets only cpsync's identity write its profiles is in
 * force in each inventory namespace, judged as the Argo CD subscriber judges it before it turns a profile there into
 * credentials (adapters/hub/hubPolicy.ts): the policy and its binding there, denying, failing closed, for this
 * configuration's manager, asking at least what the shipped one asks, and the binding matching the namespace.
 */
async function admissionPolicyCheck(composition: Composition): Promise<DoctorCheck[]> {
  if (!composition.hubKubeConfig) return [];
  const subject = `admission policy ${HUB_POLICY}`;
  const { manager } = composition.settings.options;
  const namespaces = inventoryNamespaces(composition.settings.options).map(({ name }) => name);
  const config = await composition.hubKubeConfig();
  let guard: HubGuard;
  const unguarded = new Map<string, string[]>();
  try {
    guard = await readHubGuard(config, manager);
    for (const namespace of namespaces) {
      const why = await guard.unguarded(namespace);
      if (why !== undefined) unguarded.set(why, [...(unguarded.get(why) ?? []), namespace]);
    }
  } catch (error) {
    return [{ subject, ok: false, detail: `cannot tell whether it is in force: ${apiMessage(error)}` }];
  }
  const left = new Set([...unguarded.values()].flat());
  const guarded = namespaces.filter((namespace) => !left.has(namespace));
  const said: string[] = [...unguarded.keys()];
  let ok = unguarded.size === 0;
  if (guarded.length > 0 && guard.writer) {
    said.push(
      `in force: only ${writerText(guard.writer)} ${'user' in guard.writer ? 'writes' : 'write'} the profiles of manager ${manager} in ${guarded.join(', ')} (binding ${HUB_POLICY}, Deny)`,
    );
    // The policy refuses cpsync's own writes when cpsync runs as another identity than the one it names.
    const self = await whoAmI(config);
    if (typeof self === 'string') said.push(`cannot tell whether this identity is that one: ${self}`);
    else if (!writesAs(guard.writer, self)) {
      ok = false;
      said.push(
        `this identity is the user ${self.username ?? '(unnamed)'}${self.groups?.length ? ` (groups ${self.groups.join(', ')})` : ''}, which it refuses: cpsync's writes of its profiles there fail — run cpsync as it, or set the policy's identity to this one (cpsync hub install --user or --group)`,
      );
    }
  }
  if (unguarded.size > 0) said.push('the Argo CD subscriber acts on no profile where it is not in force');
  return [{ subject, ok, detail: said.join('; ') }];
}

/** What the Argo CD subscriber does to Secrets: cpsync's own identity needs none of it. */
const SECRET_VERBS = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'];

/**
 * On a Kubernetes hub, with the configuration's Argo CD subscriber (Argo CD on the hub): that cpsync's own identity
 * reaches no Secret in Argo CD's namespace. The subscriber writes the Secrets there as an identity of its own; an
 * earlier version's `cpsync consumers argocd-subscriber` bound their Role to cpsync's, and with it every sync function
 * could hand Argo CD credentials. `namespace`: Argo CD's there, else the configuration's.
 */
async function argoCdSecretsCheck(composition: Composition, namespace?: string): Promise<DoctorCheck[]> {
  namespace ??= argoCdNamespaceOf(composition.config);
  if (!composition.hubKubeConfig || !namespace) return [];
  const subject = `hub secrets ${namespace}`;
  try {
    const authorization = (await composition.hubKubeConfig()).makeApiClient(AuthorizationV1Api);
    const allowed: string[] = [];
    for (const verb of SECRET_VERBS) {
      const review = await authorization.createSelfSubjectAccessReview({
        body: { spec: { resourceAttributes: { group: '', resource: 'secrets', namespace, verb } } },
      });
      if (review.status?.allowed) allowed.push(verb);
    }
    return [
      allowed.length === 0
        ? { subject, ok: true, detail: `cpsync's identity reaches no Secret in ${namespace}` }
        : {
            subject,
            ok: false,
            detail: `cpsync's identity may ${allowed.join(', ')} Secrets in ${namespace}, where Argo CD reads its clusters: it needs none (the Argo CD subscriber writes them as an identity of its own) — bind the subscriber's Role to that identity (cpsync hub install, or cpsync consumers argocd-subscriber --part rbac) and take cpsync's identity off every binding that lets it reach Secrets there`,
          },
    ];
  } catch (error) {
    return [{ subject, ok: false, detail: `cannot review access: ${messageOf(error)}` }];
  }
}

/** Who the hub takes this identity for (a SelfSubjectReview), or why it could not say. */
async function whoAmI(config: KubeConfig): Promise<{ username?: string; groups?: string[] } | string> {
  try {
    const review = await config.makeApiClient(AuthenticationV1Api).createSelfSubjectReview({
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
    });
    return review.status?.userInfo ?? {};
  } catch (error) {
    return apiMessage(error);
  }
}

/**
 * The access grants (while the feature is on and a consumer has a Google identity): each GKE project's IAM policy,
 * which cpsync must read and write for GKE's project role, read without changing it.
 */
async function grantChecks(composition: Composition, scopes: readonly Scope[]): Promise<DoctorCheck[]> {
  const { config } = composition;
  const projectRoles = composition.providers.gke?.projectRoles;
  if (!config.features.accessGrants || !projectRoles || !config.consumers?.some((c) => c.identities.gke))
    return [];
  const projects = [...new Set(scopes.filter((s) => s.provider === 'gke').map((s) => s.account))].sort();
  return Promise.all(
    projects.map(async (project): Promise<DoctorCheck> => {
      const subject = `access grants gke/${project}`;
      try {
        return { subject, ok: true, detail: await (await projectRoles()).inspect(project) };
      } catch (error) {
        return {
          subject,
          ok: false,
          detail: `cannot read the project's IAM policy (${messageOf(error)}): GKE's project role for consumers needs Project IAM Admin limited to roles/container.clusterViewer (docs/configuring.md: What cpsync needs to grant)`,
        };
      }
    }),
  );
}

/**
 * The access grants on GKE and AKS members (while the feature is on): on each member a consumer is granted on,
 * whether the member's admission policy bounds what cpsync's identity writes there, read as that identity. The
 * members are those `clusters` (the clouds' own answers, as listed above) normalize to, reached at the server
 * and CA their clouds give, as the sync reaches them; never at what a profile on the hub says.
 */
async function memberChecks(
  composition: Composition,
  clusters: readonly ObservedCluster[],
  options: DoctorOptions,
): Promise<DoctorCheck[]> {
  const { grants } = composition.ports;
  const { options: engine } = composition.settings;
  if (!composition.config.features.accessGrants || !grants?.inspectMember) return [];
  const { profiles } = normalizeAll(clusters, engine, new Date().toISOString());
  const plans = planGrants(profiles, new Map(), engine.consumers ?? []).filter(
    (plan) => plan.provider !== 'eks' && plan.wanted.some((c) => c.identities[plan.provider]),
  );
  const limit = pLimit(options.concurrency ?? 8);
  return Promise.all(
    plans.map((plan) =>
      limit(async (): Promise<DoctorCheck> => {
        const labels = plan.profile.metadata.labels ?? {};
        const cluster = plan.profile.spec.displayName ?? plan.profile.metadata.name;
        const subject = `access grants member ${plan.provider}/${labels[LABEL_ACCOUNT] ?? ''}/${cluster}`;
        if (!plan.ready)
          return {
            subject,
            ok: true,
            detail: 'not read: the control plane is not running',
          };
        return { subject, ...(await grants.inspectMember!(plan)) };
      }),
    ),
  );
}

/** Runs every check; resolves to the report (never throws for a failed check). */
export async function doctor(composition: Composition, options: DoctorOptions = {}): Promise<DoctorReport> {
  const checks: DoctorCheck[] = [];
  checks.push(...(await hubChecks(composition)));
  checks.push(...(await admissionPolicyCheck(composition)));
  checks.push(...(await argoCdSecretsCheck(composition, options.argocdNamespace)));

  const { bus, outbox } = composition.ports;
  try {
    checks.push({ subject: 'bus', ok: true, detail: (await bus.describe?.()) ?? 'reachable' });
  } catch (error) {
    checks.push({ subject: 'bus', ok: false, detail: messageOf(error) });
  }
  try {
    checks.push({
      subject: 'outbox',
      ok: true,
      detail: `${(await outbox.pending()).length} event(s) waiting`,
    });
  } catch (error) {
    checks.push({ subject: 'outbox', ok: false, detail: messageOf(error) });
  }

  const { scopes, failures } = await composition.resolveScopes();
  for (const failure of failures)
    checks.push({ subject: `scopes of ${failure.provider}`, ok: false, detail: failure.message });
  const limit = pLimit(options.concurrency ?? 8);
  const listedClusters: ObservedCluster[] = [];
  const listed = await Promise.all(
    scopes.map((scope) =>
      limit(async (): Promise<DoctorCheck> => {
        const subject = `scope ${scopeKey(scope)}`;
        const source = composition.ports.sources[scope.provider];
        if (!source) return { subject, ok: false, detail: `providers.${scope.provider} is not configured` };
        try {
          const listing = await source.listScope(
            scope,
            AbortSignal.timeout(options.scopeTimeoutMillis ?? 60_000),
          );
          const { outcome } = listing;
          listedClusters.push(...listing.clusters);
          const found = `${listing.clusters.length} cluster(s)`;
          if (outcome.kind === 'complete') return { subject, ok: true, detail: found };
          const why = outcome.failure ? `${outcome.failure.reason}: ${outcome.failure.message}` : '';
          if (outcome.kind === 'partial')
            return {
              subject,
              ok: false,
              detail: `${found}, not ${(outcome.missing ?? []).join(', ') || 'all of it'}${why ? ` (${why})` : ''}`,
            };
          return { subject, ok: false, detail: why || 'listing failed' };
        } catch (error) {
          return { subject, ok: false, detail: messageOf(error) };
        }
      }),
    ),
  );
  checks.push(...listed);
  checks.push(...(await grantChecks(composition, scopes)));
  checks.push(...(await memberChecks(composition, listedClusters, options)));
  return { ok: checks.every((check) => check.ok), checks };
}
