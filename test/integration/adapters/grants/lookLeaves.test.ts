/**
 * Whatever ends a look at a consumer's grant on a member (GKE, AKS: RBAC bindings), what it may leave there is
 * named by the cluster's ledger record: the record written ahead, then `recordAfter` with the look's result.
 * The member is the real local kube-apiserver behind a TLS proxy that can fail any request of the look: a
 * refusal or rejection (400, 401, 403, 404, 409, 422), a server error (500, 503), a dropped connection, an
 * answer lost after the request was done, a request never answered, or every connection refused once one
 * request has been answered. GKE's project role is the real adapter against the local Google server, which
 * lets cpsync hold it or refuses, and can fail a read or a write of the project's policy or lose its answer. An AKS
 * cluster that uses Azure RBAC is granted through role assignments on the local ARM server, which can fail any of
 * their requests or lose its answer. The oracles are the member's own bindings, read as its admin, the project's
 * policy as Google keeps it, and the role assignments as ARM keeps them.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import {
  ApiException,
  CoreV1Api,
  RbacAuthorizationV1Api,
  type V1ClusterRoleBinding,
  type V1RoleBinding,
} from '@kubernetes/client-node';
import type { ManagedCluster } from '@azure/arm-containerservice';
import { AksRoleAssignments } from '../../../../adapters/aks/roleAssignments.ts';
import { GkeSource } from '../../../../adapters/gke/GkeSource.ts';
import { GkeProjectRoles } from '../../../../adapters/gke/projectRoles.ts';
import { CloudGrants } from '../../../../adapters/grants/CloudGrants.ts';
import { GRANT_CONSUMER_KEY, GRANT_MANAGER_KEY } from '../../../../adapters/grants/marks.ts';
import {
  ledgerKey,
  planGrants,
  recordAfter,
  recordBefore,
  type AccessLevel,
  type Consumer,
  type GrantRecord,
  type GrantResult,
} from '../../../../core/domain/grants.ts';
import type { ClusterProfile } from '../../../../core/domain/model/clusterProfile.ts';
import { normalize } from '../../../../core/domain/normalize.ts';
import { letCpsyncGrantInProject, startGkeServer, type GkeServer } from '../../../env/fakes/gkeServer.ts';
import type { HubState } from '../../../env/hub.ts';
import { startHubProxy, type HubProxy } from '../../../env/hubProxy.ts';
import { freePort } from '../../../env/net.ts';
import { aggregateClusterRoles } from '../../../env/member.ts';
import { aksCluster, gkeCluster, NOW, reachingMember } from '../../../support/fixtures.ts';
import type { GoogleError } from '../../../env/fakes/gkeServer.ts';
import {
  armCredential,
  startArmServer,
  type ArmError,
  type ArmServer,
} from '../../../env/fakes/armServer.ts';
import { adminKubeConfig, localHub, uniqueNamespace } from '../../../support/hub.ts';
import { inventoryOptions } from '../../../support/settings.ts';

const PROJECT = 'acme-looks';
const LEVELS: AccessLevel[] = ['view', 'edit', 'admin'];
/** What a place on the member holds before the look, under the consumer's binding name. */
type Planted =
  | 'none'
  | 'ours'
  | 'oursOtherLevel'
  | 'oursOtherIdentity'
  | 'foreign'
  | 'forgedWithStrangers'
  /** cpsync's at the level, holding the identity and strangers: what an earlier version could leave. */
  | 'oursWithStrangers'
  /** Labelled as cpsync's, bound to a Role of the level's name in the namespace (cluster-wide: a ClusterRole). */
  | 'forgedRoleKind';
/** Subjects someone else put in a binding labelled as cpsync's ('forgedWithStrangers', at another level). */
const STRANGERS = [
  { apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'system:authenticated' },
  { apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'stranger@example.com' },
  { kind: 'ServiceAccount', name: 'default', namespace: 'default' },
];
type Fault =
  | { status: 400 | 401 | 403 | 404 | 409 | 422 | 500 | 503 }
  | { drop: true }
  | { lose: true }
  | { refuseAfter: true }
  | { hang: true };

/** Google failing a read or a write of the project's policy: refusing, conflicting, erring, or losing its answer. */
interface GoogleFault {
  method: 'getIamPolicy' | 'setIamPolicy';
  kind: 403 | 409 | 500 | 503 | 'lose';
}

const GOOGLE_ERRORS: Record<Exclude<GoogleFault['kind'], 'lose'>, GoogleError> = {
  403: { status: 403, code: 'PERMISSION_DENIED', message: 'The caller does not have permission' },
  409: { status: 409, code: 'ABORTED', message: 'There were concurrent policy changes.' },
  500: { status: 500, code: 'INTERNAL', message: 'Internal error encountered.' },
  503: { status: 503, code: 'UNAVAILABLE', message: 'The service is currently unavailable.' },
};

/** ARM failing a role assignment request: refusing, conflicting, erring, or losing its answer. */
interface ArmFault {
  method: 'GET' | 'PUT' | 'DELETE';
  /** Requests of that method answered first. */
  after: number;
  kind: 403 | 409 | 500 | 'lose';
}

const ARM_ERRORS: Record<Exclude<ArmFault['kind'], 'lose'>, ArmError> = {
  403: { status: 403, code: 'AuthorizationFailed', message: 'The client does not have authorization.' },
  409: { status: 409, code: 'RoleAssignmentExists', message: 'The role assignment already exists.' },
  500: { status: 500, code: 'InternalServerError', message: 'Internal error.' },
};

const googleFaultOf = ({ method, kind }: GoogleFault) => ({
  method,
  fault: kind === 'lose' ? ('lose' as const) : GOOGLE_ERRORS[kind],
});

const notFound = (error: unknown) => error instanceof ApiException && error.code === 404;

/** The deadline of a look whose every request is answered: one no look comes near, however busy the machine. */
const ANSWERED_MILLIS = 60_000;
/** The deadline of a look where the member never answers a request: what ends it. */
const HANG_MILLIS = 1_500;

describe("a look at a consumer's grant leaves nothing on the member that its ledger does not name", () => {
  let state: HubState;
  let proxy: HubProxy;
  let gke: GkeServer;
  let source: GkeSource;
  let rbac: RbacAuthorizationV1Api;
  let core: CoreV1Api;
  const manager = uniqueNamespace('cpsync-looks');
  const namespaces = { a: uniqueNamespace('looks-a'), b: uniqueNamespace('looks-b') };
  const missing = uniqueNamespace('looks-missing'); // never made
  let grants: CloudGrants;
  /** The same, with a short deadline: for looks where the member never answers a request. */
  let hangingGrants: CloudGrants;
  /** As `grants`, with no token to be had for any member (its issuer failing). */
  let tokenlessGrants: CloudGrants;
  let arm: ArmServer;
  /** Grants on AKS clusters that use Azure RBAC: role assignments on the local ARM, bindings on the member. */
  let azureGrants: CloudGrants;
  let runs = 0;

  before(async () => {
    state = await localHub();
    proxy = await startHubProxy(state);
    proxy.keepAlive = false; // a connection per request: once refused, every later request is refused
    const admin = adminKubeConfig(state);
    rbac = admin.makeApiClient(RbacAuthorizationV1Api);
    core = admin.makeApiClient(CoreV1Api);
    await aggregateClusterRoles(rbac); // view, edit and admin allow what they do on a real cluster
    for (const name of Object.values(namespaces))
      await core.createNamespace({ body: { metadata: { name } } });
    gke = await startGkeServer();
    source = new GkeSource({ credentials: gke.serviceAccountKey, endpoint: gke.endpoint, maxRetries: 0 });
    const roles = new GkeProjectRoles({
      projects: () => source.projectsClient(),
      manager,
      timeoutMillis: ANSWERED_MILLIS,
    });
    const noToken = async (): Promise<never> => {
      throw new Error('the token issuer is unavailable');
    };
    const memberGrants = (timeoutMillis: number, tokenless = false) =>
      new CloudGrants({
        manager,
        tokens: tokenless
          ? { gke: noToken, aks: noToken }
          : { gke: async () => ({ token: 'gke-token' }), aks: async () => ({ token: 'aks-token' }) },
        // The member is a local server: a cloud the configuration would reach on this machine.
        localClouds: ['eks', 'gke', 'aks'],
        accessProviderNames: { eks: 'eks', gke: 'gke', aks: 'aks' },
        gke: async () => roles,
        timeoutMillis,
      });
    // A look ends by its deadline only where a request is never answered (`hang`): there, any ending of the look
    // (however far it got first) keeps the promise. Every other look's outcome comes from what the member and the
    // clouds answered, under a deadline no look on a busy machine comes near.
    grants = memberGrants(ANSWERED_MILLIS);
    hangingGrants = memberGrants(HANG_MILLIS);
    tokenlessGrants = memberGrants(ANSWERED_MILLIS, true);
    arm = await startArmServer();
    const assignments = new AksRoleAssignments({
      credential: armCredential(arm),
      endpoint: arm.endpoint,
      manager,
      cluster: async (providerId: string) =>
        ({
          id: providerId,
          provisioningState: 'Succeeded',
          aadProfile: { managed: true, enableAzureRbac: true },
        }) as ManagedCluster,
    });
    azureGrants = new CloudGrants({
      manager,
      tokens: { aks: async () => ({ token: 'aks-token' }) },
      // The member is a local server: a cloud the configuration would reach on this machine.
      localClouds: ['eks', 'gke', 'aks'],
      accessProviderNames: { eks: 'eks', gke: 'gke', aks: 'aks' },
      aks: async () => assignments,
      timeoutMillis: ANSWERED_MILLIS,
    });
  });

  after(async () => {
    await proxy?.stop();
    await source?.close();
    await gke?.stop();
    await arm?.stop();
    for (const name of Object.values(namespaces)) await core?.deleteNamespace({ name }).catch(() => {});
    const labelSelector = `${GRANT_MANAGER_KEY}=${manager}`;
    for (const binding of (await rbac.listClusterRoleBinding({ labelSelector })).items)
      await rbac.deleteClusterRoleBinding({ name: binding.metadata!.name! }).catch(() => {});
  });

  /** A ready cluster of `provider` whose profile reaches the member through the proxy. */
  function profileOf(provider: 'gke' | 'aks', name: string): ClusterProfile {
    const cluster =
      provider === 'gke'
        ? gkeCluster({ name, account: PROJECT })
        : aksCluster({ name, resourceGroup: 'rg-looks' });
    return reachingMember(
      normalize(cluster, inventoryOptions({ namespace: 'cluster-inventory' }), NOW),
      proxy.server,
      readFileSync(state.caCert).toString('base64'),
    );
  }

  const bindingName = (consumer: string) => `cpsync:consumer:${consumer}`;

  /** The places (`''`: the cluster) where cpsync's binding of `consumer` holds `identity`, as the member says. */
  async function holding(consumer: string, identity: string): Promise<Set<string>> {
    const name = bindingName(consumer);
    const read = async (place: string): Promise<V1ClusterRoleBinding | V1RoleBinding | undefined> => {
      try {
        return place
          ? await rbac.readNamespacedRoleBinding({ name, namespace: place })
          : await rbac.readClusterRoleBinding({ name });
      } catch (error) {
        if (notFound(error)) return undefined;
        throw error;
      }
    };
    const places = new Set<string>();
    for (const place of ['', namespaces.a, namespaces.b]) {
      const binding = await read(place);
      const labels = binding?.metadata?.labels;
      if (labels?.[GRANT_MANAGER_KEY] !== manager || labels[GRANT_CONSUMER_KEY] !== consumer) continue;
      if ((binding?.subjects ?? []).some((s) => s.kind === 'User' && s.name === identity)) places.add(place);
    }
    return places;
  }

  /**
   * Every subject other than `identity` bound by the consumer's binding name, with its role and place, as the
   * member says: what no look may add to (cpsync binds the consumer's identities only).
   */
  async function othersBound(consumer: string, identity: string): Promise<Set<string>> {
    const name = bindingName(consumer);
    const bound = new Set<string>();
    for (const place of ['', namespaces.a, namespaces.b]) {
      let binding: V1ClusterRoleBinding | V1RoleBinding;
      try {
        binding = place
          ? await rbac.readNamespacedRoleBinding({ name, namespace: place })
          : await rbac.readClusterRoleBinding({ name });
      } catch (error) {
        if (notFound(error)) continue;
        throw error;
      }
      for (const s of binding.subjects ?? [])
        if (!(s.kind === 'User' && s.name === identity))
          bound.add(
            `${place || '(cluster)'}: ${s.kind} ${s.namespace ?? ''}/${s.name} as ${binding.roleRef.name}`,
          );
    }
    return bound;
  }

  async function plant(place: string, what: Planted, consumer: string, identity: string, level: AccessLevel) {
    if (what === 'none') return;
    const other = LEVELS.find((l) => l !== level)!;
    const body = {
      metadata: {
        name: bindingName(consumer),
        ...(place ? { namespace: place } : {}),
        ...(what === 'foreign'
          ? {}
          : { labels: { [GRANT_MANAGER_KEY]: manager, [GRANT_CONSUMER_KEY]: consumer } }),
      },
      roleRef: {
        apiGroup: 'rbac.authorization.k8s.io',
        kind: what === 'forgedRoleKind' && place ? 'Role' : 'ClusterRole',
        name: what === 'oursOtherLevel' || what === 'forgedWithStrangers' ? other : level,
      },
      subjects:
        what === 'forgedWithStrangers'
          ? STRANGERS
          : what === 'oursWithStrangers'
            ? [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: identity }, ...STRANGERS]
            : [
                {
                  apiGroup: 'rbac.authorization.k8s.io',
                  kind: 'User',
                  name: what === 'oursOtherIdentity' ? `someone-else-${consumer}` : identity,
                },
              ],
    };
    if (what === 'forgedRoleKind' && place)
      await rbac.createNamespacedRole({
        namespace: place,
        body: {
          metadata: { name: level },
          rules: [{ apiGroups: [''], resources: ['secrets'], verbs: ['*'] }],
        },
      });
    if (place) await rbac.createNamespacedRoleBinding({ namespace: place, body });
    else await rbac.createClusterRoleBinding({ body });
  }

  async function clear(consumer: string) {
    const name = bindingName(consumer);
    await rbac.deleteClusterRoleBinding({ name }).catch(() => {});
    for (const namespace of Object.values(namespaces)) {
      await rbac.deleteNamespacedRoleBinding({ name, namespace }).catch(() => {});
      for (const level of LEVELS) await rbac.deleteNamespacedRole({ name: level, namespace }).catch(() => {});
    }
  }

  /** Google's answer for the project: cpsync may hold its role there, or is refused. */
  function project(lets: boolean) {
    gke.iamPolicies.set(PROJECT, { version: 3, etag: 'BwAAAA==', bindings: [] });
    if (lets) letCpsyncGrantInProject(gke, PROJECT);
  }

  interface Look {
    provider: 'gke' | 'aks';
    googleLets: boolean;
    level: AccessLevel;
    /** Member namespaces (`missing`: one the member lacks); unset: the whole cluster. */
    scope?: Array<'a' | 'b' | 'missing'>;
    planted: { cluster: Planted; a: Planted; b: Planted };
    /** What the ledger records for the consumer's identity before the look. */
    ledger: 'none' | 'held' | 'pending';
    /** The fault, on the look's `at`th request, or its `at`th change (any request but a read). */
    fault?: { at: number; among: 'requests' | 'changes'; kind: Fault };
    /** GKE: a fault of Google's, on the first read or write of the project's policy. */
    googleFault?: GoogleFault;
    /** AKS: the cluster uses Azure RBAC (the grant is a role assignment), and ARM's fault on its requests. */
    azureRbac?: boolean;
    armFault?: ArmFault;
  }

  type Rule = NonNullable<HubProxy['rule']>;

  /** One look, as the engine takes it: the record written ahead, the look, the record after. */
  async function look(
    given: Look,
    rule?: Rule,
    /** Asked after the look, before the member is cleared: what the test reads there itself. */
    inspect?: (consumerName: string) => Promise<void>,
  ) {
    runs += 1;
    const consumerName = `c${runs}`;
    // Azure RBAC assigns roles to an Entra object id.
    const identity = given.azureRbac ? randomUUID() : `${given.provider}-user-${runs}@example.com`;
    const consumer: Consumer = {
      name: consumerName,
      namespaces: ['cluster-inventory'],
      level: given.level,
      identities: { [given.provider]: identity },
      ...(given.scope
        ? { memberNamespaces: given.scope.map((s) => (s === 'missing' ? missing : namespaces[s])) }
        : {}),
    };
    await clear(consumerName);
    for (const [place, what] of Object.entries(given.planted))
      await plant(
        place === 'cluster' ? '' : namespaces[place as 'a' | 'b'],
        what,
        consumerName,
        identity,
        given.level,
      );
    project(given.googleLets);
    gke.iamFaults = given.googleFault ? [googleFaultOf(given.googleFault)] : [];
    arm.assignmentFaults = given.armFault
      ? [
          {
            method: given.armFault.method,
            after: given.armFault.after,
            fault: given.armFault.kind === 'lose' ? 'lose' : ARM_ERRORS[given.armFault.kind],
          },
        ]
      : [];
    const profile = profileOf(given.provider, `looks-${runs}`);
    const records = new Map<string, GrantRecord>();
    if (given.ledger !== 'none') {
      const record: GrantRecord = {
        providerId: profile.metadata.annotations!['cpsync.io/provider-id']!,
        provider: given.provider,
        account: '',
        region: '',
        grants: [
          {
            consumer: consumerName,
            identity,
            level: given.level,
            ...(given.ledger === 'pending' ? { pending: true as const } : {}),
          },
        ],
      };
      records.set(ledgerKey(record), record);
    }
    const [plan] = planGrants([profile], records, [consumer]);
    assert.ok(plan?.ready, 'the cluster is ready for grants');
    const before = await holding(consumerName, identity);
    const othersBefore = await othersBound(consumerName, identity);
    const ahead = recordBefore(plan);
    const fault = given.fault;
    proxy.requests = [];
    let seen = 0;
    proxy.rule =
      rule ??
      (fault
        ? ({ method }) =>
            (fault.among === 'requests' || method !== 'GET') && seen++ === fault.at ? fault.kind : undefined
        : undefined);
    let result: GrantResult;
    try {
      const hangs = fault !== undefined && 'hang' in fault.kind;
      assert.ok(!(hangs && given.azureRbac), 'the property hangs the member only for a binding');
      result = await (given.azureRbac ? azureGrants : hangs ? hangingGrants : grants).ensure(plan, consumer);
    } finally {
      proxy.rule = undefined;
      await proxy.reopen();
    }
    const recorded = recordAfter(plan, { results: new Map([[consumerName, result]]), revoked: [] }, ahead);
    const left = await holding(consumerName, identity);
    const othersAfter = await othersBound(consumerName, identity);
    await inspect?.(consumerName);
    const named = recorded.grants.find((g) => g.consumer === consumerName && g.identity === identity);
    const googleFaultTaken = given.googleFault !== undefined && gke.iamFaults.length === 0;
    const armFaultTaken = given.armFault !== undefined && arm.assignmentFaults.length === 0;
    gke.iamFaults = [];
    arm.assignmentFaults = [];
    await clear(consumerName);
    return {
      result,
      identity,
      before,
      left,
      othersBefore,
      othersAfter,
      inProject: projectHolds(identity),
      inAzure: [...arm.roleAssignments.values()].some((a) => a.properties.principalId === identity),
      armFaultTaken,
      googleFaultTaken,
      named,
      namedBefore: given.ledger !== 'none',
      requests: proxy.requests,
    };
  }

  /** The promise: what the look may have left, or what was named before it, is named after it. */
  function assertNamed(given: Look, outcome: Awaited<ReturnType<typeof look>>) {
    const { result, before, left, named, namedBefore, inProject, inAzure } = outcome;
    const made = [...left].filter((place) => !before.has(place));
    const why = JSON.stringify({
      given,
      result,
      before: [...before],
      left: [...left],
      requests: outcome.requests,
    });
    if (made.length > 0)
      assert.ok(named, `the look left a binding of the identity its record does not name: ${why}`);
    if (namedBefore && left.size > 0)
      assert.ok(named, `a grant named before the look is no longer named: ${why}`);
    if (result.untouched)
      assert.deepEqual(made, [], `a look that says it left nothing made a binding: ${why}`);
    // The project's policy began each look without the identity: holding it now, the look left it there.
    if (inProject) assert.ok(named, `the look left the identity in the project's policy, unnamed: ${why}`);
    if (result.untouched) assert.equal(inProject, false, `a look that says it left nothing: ${why}`);
    // No assignment held the identity before the look (a new one each look): one now, the look made it.
    if (inAzure) assert.ok(named, `the look left a role assignment of the identity, unnamed: ${why}`);
    if (result.untouched) assert.equal(inAzure, false, `a look that says it left nothing: ${why}`);
    // Whatever the binding held, the look bound no one else, to no role they did not have there.
    const added = [...outcome.othersAfter].filter((bound) => !outcome.othersBefore.has(bound));
    assert.deepEqual(added, [], `the look bound someone other than the consumer's identity: ${why}`);
  }

  /** Whether the project's policy, as Google keeps it, binds `identity` to anything. */
  function projectHolds(identity: string): boolean {
    const policy = gke.iamPolicies.get(PROJECT);
    return (policy?.bindings ?? []).some((b) => b.members.includes(`serviceAccount:${identity}`));
  }

  const creates = (resource: string) => (request: { method: string; path: string }) =>
    request.method === 'POST' && request.path.endsWith(`/${resource}`);
  const cluster = { cluster: 'none', a: 'none', b: 'none' } as const;
  const gkeLook: Look = {
    provider: 'gke',
    googleLets: true,
    level: 'view',
    planted: cluster,
    ledger: 'none',
  };

  it("binds no one but the consumer's identity when a binding labelled as cpsync's holds strangers at another level", async () => {
    for (const level of ['admin', 'view'] as const)
      for (const place of ['cluster', 'a'] as const) {
        const given: Look = {
          ...gkeLook,
          level,
          ...(place === 'a' ? { scope: ['a' as const] } : {}),
          planted: { ...cluster, [place]: 'forgedWithStrangers' },
        };
        const outcome = await look(given);
        assert.equal(outcome.result.held, outcome.identity, JSON.stringify(outcome.result));
        assert.deepEqual([...outcome.left], [place === 'a' ? namespaces.a : ''], 'the identity is bound');
        assert.ok(outcome.othersBefore.size === STRANGERS.length, 'the strangers were planted');
        assert.deepEqual([...outcome.othersAfter], [], 'the strangers are not carried to the new level');
        assertNamed(given, outcome);
      }
  });

  it("leaves out strangers an earlier version left in cpsync's binding, and re-binds a Role of the level's name to the ClusterRole", async () => {
    for (const place of ['cluster', 'a'] as const) {
      const given: Look = {
        ...gkeLook,
        level: 'edit',
        ...(place === 'a' ? { scope: ['a' as const] } : {}),
        planted: { ...cluster, [place]: 'oursWithStrangers' },
      };
      const outcome = await look(given);
      assert.equal(outcome.result.held, outcome.identity, JSON.stringify(outcome.result));
      assert.equal(outcome.othersBefore.size, STRANGERS.length, 'the strangers were there');
      assert.deepEqual([...outcome.othersAfter], [], 'and are left out');
      assertNamed(given, outcome);
    }
    const given: Look = {
      ...gkeLook,
      level: 'edit',
      scope: ['a'],
      planted: { ...cluster, a: 'forgedRoleKind' },
    };
    const outcome = await look(given, undefined, async (consumerName) => {
      const binding = await rbac.readNamespacedRoleBinding({
        name: bindingName(consumerName),
        namespace: namespaces.a,
      });
      assert.deepEqual(
        [binding.roleRef.kind, binding.roleRef.name],
        ['ClusterRole', 'edit'],
        'bound to the ClusterRole, not the Role of its name',
      );
    });
    assert.equal(outcome.result.held, outcome.identity, JSON.stringify(outcome.result));
    assertNamed(given, outcome);
  });

  it("takes the identity out of cpsync's binding and leaves no group or service account in it", async () => {
    runs += 1;
    const consumerName = `c${runs}`;
    const identity = `gke-user-${runs}@example.com`;
    await clear(consumerName);
    await plant('', 'oursWithStrangers', consumerName, identity, 'view');
    const profile = profileOf('gke', `looks-${runs}`);
    const record: GrantRecord = {
      providerId: profile.metadata.annotations!['cpsync.io/provider-id']!,
      provider: 'gke',
      account: '',
      region: '',
      grants: [{ consumer: consumerName, identity, level: 'view' }],
    };
    // The consumer removed from the configuration: its grant is to be taken back.
    const [plan] = planGrants([profile], new Map([[ledgerKey(record), record]]), []);
    try {
      const taken = await grants.revoke(plan!, record.grants[0]!);
      assert.equal(taken.revoked, true, taken.message);
      const left = await rbac.readClusterRoleBinding({ name: bindingName(consumerName) });
      // The stranger user stays (cpsync cannot tell it from another of the consumer's identities); the group and
      // the service account go, and so does the identity.
      assert.deepEqual(
        (left.subjects ?? []).map((s) => `${s.kind} ${s.name}`),
        ['User stranger@example.com'],
      );
    } finally {
      await clear(consumerName);
    }
  });

  it('names the binding it made when the member refuses every connection after making it', async () => {
    const outcome = await look(gkeLook, (r) =>
      creates('clusterrolebindings')(r) ? { refuseAfter: true } : undefined,
    );
    assert.deepEqual([...outcome.left], [''], 'the binding was made');
    assert.equal(outcome.result.reason, 'MemberUnreachable');
    // Why it failed, and where: not only `fetch failed`.
    assert.match(outcome.result.message, /ECONNREFUSED 127\.0\.0\.1:\d+/);
    assert.equal(outcome.result.untouched, undefined);
    assert.equal(outcome.named?.pending, true, 'named as pending');
    assertNamed(gkeLook, outcome);
  });

  it("names cpsync's binding it found holding the identity, when the member stops answering before the proof", async () => {
    // Both reads of the cluster's binding answered (the bind's and the look for where the consumer's bindings
    // are), then no connection is taken: the look made nothing, but found the identity bound by cpsync.
    const given: Look = { ...gkeLook, planted: { ...cluster, cluster: 'ours' } };
    let reads = 0;
    const outcome = await look(given, (r) =>
      r.method === 'GET' && /\/clusterrolebindings\/[^/?]+$/.test(r.path) && ++reads === 2
        ? { refuseAfter: true }
        : undefined,
    );
    assert.equal(outcome.result.reason, 'MemberUnreachable');
    assert.equal(outcome.result.untouched, undefined);
    assert.deepEqual([...outcome.left], ['']);
    assert.equal(outcome.named?.pending, true);
  });

  it("names cpsync's binding elsewhere that it could not take the identity out of", async () => {
    // Wanted in b only, where the binding is not cpsync's (nothing made); cpsync's binding in a (the consumer's
    // namespaces changed) holds the identity, and taking it out is refused.
    const given: Look = {
      ...gkeLook,
      provider: 'aks',
      scope: ['b'],
      planted: { ...cluster, a: 'ours', b: 'foreign' },
    };
    const outcome = await look(given, (r) =>
      r.method !== 'GET' && r.path.includes(`/namespaces/${namespaces.a}/rolebindings/`)
        ? { status: 403 }
        : undefined,
    );
    assert.equal(outcome.result.reason, 'Refused');
    assert.equal(outcome.result.untouched, undefined);
    assert.deepEqual([...outcome.left], [namespaces.a]);
    assert.equal(outcome.named?.pending, true);
  });

  it('names the binding it made when the answer to making it is lost', async () => {
    const outcome = await look(gkeLook, (r) =>
      creates('clusterrolebindings')(r) ? { lose: true } : undefined,
    );
    assert.deepEqual([...outcome.left], ['']);
    assert.equal(outcome.result.untouched, undefined);
    assert.equal(outcome.named?.pending, true);
  });

  it("names the first namespace's binding when the second is refused, or not cpsync's", async () => {
    const scoped: Look = { ...gkeLook, provider: 'aks', scope: ['a', 'b'] };
    const refused = await look(scoped, (r) =>
      r.method === 'POST' && r.path.includes(`/namespaces/${namespaces.b}/`) ? { status: 403 } : undefined,
    );
    assert.equal(refused.result.reason, 'Refused');
    assert.deepEqual([...refused.left], [namespaces.a]);
    assert.equal(refused.named?.pending, true);
    const elsewhere = await look({ ...scoped, planted: { ...cluster, b: 'foreign' } });
    assert.equal(elsewhere.result.reason, 'GrantedElsewhere');
    assert.deepEqual([...elsewhere.left], [namespaces.a]);
    assert.equal(elsewhere.named?.pending, true);
  });

  it('records nothing when nothing was made: refused at its first write, or its bindings taken back when Google refuses the project role', async () => {
    const refused = await look(gkeLook, (r) =>
      creates('clusterrolebindings')(r) ? { status: 403 } : undefined,
    );
    assert.equal(refused.result.reason, 'Refused');
    assert.equal(refused.result.untouched, true);
    assert.equal(refused.named, undefined);
    const google = await look({ ...gkeLook, googleLets: false });
    assert.equal(google.result.reason, 'Refused');
    assert.match(google.result.message, /Google refused/);
    assert.deepEqual([...google.left], [], 'taken back whole');
    assert.equal(google.named, undefined);
    // Granted in full when nothing fails.
    const granted = await look(gkeLook);
    assert.deepEqual([granted.result.status, granted.result.held], ['True', granted.identity]);
    assert.deepEqual(granted.named?.pending, undefined);
  });

  it("names the grant when Google did hold the project's role but its answer was lost; nothing when it refused", async () => {
    const lost = await look({ ...gkeLook, googleFault: { method: 'setIamPolicy', kind: 'lose' } });
    assert.equal(lost.googleFaultTaken, true);
    assert.equal(lost.inProject, true, "Google holds the identity in cpsync's binding");
    assert.equal(lost.result.untouched, undefined);
    assert.equal(lost.named?.pending, true, 'named as pending');
    const refused = await look({ ...gkeLook, googleFault: { method: 'setIamPolicy', kind: 403 } });
    assert.equal(refused.result.reason, 'Refused');
    // Google's own words, on one line: nothing of the HTTP error's raw answer below it.
    assert.match(refused.result.message, /^Google refused .*The caller does not have permission/);
    assert.doesNotMatch(refused.result.message, /\[object Object\]|\n/);
    assert.deepEqual([refused.inProject, [...refused.left]], [false, []], 'nothing left, anywhere');
    assert.equal(refused.named, undefined);
    // A conflicting writer: the policy is read again and written with the identity.
    const conflict = await look({ ...gkeLook, googleFault: { method: 'setIamPolicy', kind: 409 } });
    assert.deepEqual([conflict.result.status, conflict.inProject], ['True', true]);
    assert.equal(conflict.named?.pending, undefined);
  });

  it('a scan for its marks that the member answered never says the member could not be reached', async () => {
    runs += 1;
    const consumerName = `c${runs}`;
    // Two of cpsync's bindings no consumer is configured with: the scan (the feature turned off) takes them out.
    await plant('', 'ours', consumerName, 'gone-1@example.com', 'view');
    await plant(namespaces.a, 'ours', consumerName, 'gone-2@example.com', 'view');
    const profile = profileOf('gke', `looks-scan-${runs}`);
    const [plan] = planGrants([profile], new Map(), [], { everyCluster: true });
    const scan = () => grants.sweep(plan!, () => false, []);
    try {
      // The cluster's bindings listed, then no connection taken: the member was reached.
      proxy.rule = ({ method, path }) =>
        method === 'GET' && path.includes('/clusterrolebindings?') ? { refuseAfter: true } : undefined;
      const cut = await scan();
      assert.deepEqual([cut.complete, cut.unreachable], [false, undefined]);
      proxy.rule = undefined;
      await proxy.reopen();
      // A member never reached at all: said so.
      const unreachable = await grants.sweep(
        { ...plan!, profile: reachingMember(profile, `https://127.0.0.1:${await freePort()}`) },
        () => false,
        [],
      );
      assert.deepEqual([unreachable.complete, unreachable.unreachable], [false, true]);
      // No token to be had for it, or no way to reach it in its profile: nothing says the member is gone, so it is
      // scanned again (and what is there stays named), never taken as holding nothing.
      const tokenless = await tokenlessGrants.sweep(plan!, () => false, []);
      assert.deepEqual([tokenless.complete, tokenless.unreachable], [false, undefined]);
      const { accessProviders: _none, ...status } = profile.status!;
      const wayless = await grants.sweep({ ...plan!, profile: { ...profile, status } }, () => false, []);
      assert.deepEqual([wayless.complete, wayless.unreachable], [false, undefined]);
      // Reached and answered in full: both taken out.
      const whole = await scan();
      assert.equal(whole.complete, true);
      assert.deepEqual(whole.removed.map((r) => r.identity).sort(), [
        'gone-1@example.com',
        'gone-2@example.com',
      ]);
    } finally {
      proxy.rule = undefined;
      await proxy.reopen();
      await clear(consumerName);
    }
  });

  /** What a place holds before a look: nothing more often than each of the others. */
  const planted = fc.constantFrom<Planted>(
    'none',
    'none',
    'ours',
    'oursOtherLevel',
    'oursOtherIdentity',
    'foreign',
    'forgedWithStrangers',
    'oursWithStrangers',
    'forgedRoleKind',
  );

  /**
   * Looks drawn from `drawn` on top of `base`, each with a fault of its cloud's: what each leaves is named
   * (`assertNamed`), and at least `atLeast` of the 40 met their fault (`met`).
   */
  async function cloudFaultLooks(
    base: Pick<Look, 'provider' | 'googleLets' | 'azureRbac'>,
    drawn: fc.Arbitrary<Omit<Look, 'provider' | 'googleLets' | 'azureRbac'>>,
    met: (outcome: Awaited<ReturnType<typeof look>>) => boolean,
    atLeast: number,
  ) {
    let taken = 0;
    await fc.assert(
      fc.asyncProperty(drawn, async (fields) => {
        const given: Look = { ...base, ...fields };
        const outcome = await look(given);
        if (met(outcome)) taken += 1;
        assertNamed(given, outcome);
      }),
      { numRuns: 40 },
    );
    assert.ok(taken >= atLeast, `only ${taken} looks met their cloud's fault`);
  }

  it("whatever Google fails, GKE's project role is named when it may be held (property)", async () => {
    await cloudFaultLooks(
      { provider: 'gke', googleLets: true },
      fc.record({
        level: fc.constantFrom(...LEVELS),
        planted: fc.record({ cluster: planted, a: planted, b: planted }),
        ledger: fc.constantFrom<Look['ledger']>('none', 'held', 'pending'),
        // Writes more than reads, and a lost answer as often as any error: after a write, Google may hold it.
        googleFault: fc.record({
          method: fc.constantFrom<GoogleFault['method']>('setIamPolicy', 'setIamPolicy', 'getIamPolicy'),
          kind: fc.constantFrom<GoogleFault['kind']>('lose', 'lose', 'lose', 403, 409, 500, 503),
        }),
      }),
      (outcome) => outcome.googleFaultTaken,
      20,
    );
  });

  it("names the role assignment made in the first namespace when ARM refuses the second's", async () => {
    const outcome = await look({
      ...gkeLook,
      provider: 'aks',
      azureRbac: true,
      scope: ['a', 'b'],
      armFault: { method: 'PUT', after: 1, kind: 403 },
    });
    assert.equal(outcome.armFaultTaken, true);
    assert.equal(outcome.result.reason, 'Refused');
    assert.equal(outcome.inAzure, true, 'the first namespace holds its assignment');
    assert.equal(outcome.result.untouched, undefined);
    assert.equal(outcome.named?.pending, true, 'named as pending');
  });

  it('whatever ARM fails, a role assignment the look leaves is named (property)', async () => {
    await cloudFaultLooks(
      { provider: 'aks', azureRbac: true, googleLets: false },
      fc.record(
        {
          level: fc.constantFrom(...LEVELS),
          scope: fc.option(
            fc.uniqueArray(fc.constantFrom<'a' | 'b'>('a', 'b'), { minLength: 1, maxLength: 2 }),
            { nil: undefined },
          ),
          planted: fc.record({ cluster: planted, a: planted, b: planted }),
          ledger: fc.constantFrom<Look['ledger']>('none', 'held', 'pending'),
          // Writes more than reads, and a lost answer as often as any error: after a write, ARM may hold it.
          // The second namespace's write as well as the first (`after`); every look reads before it writes.
          armFault: fc
            .record({
              method: fc.constantFrom<ArmFault['method']>('PUT', 'PUT', 'PUT', 'GET', 'DELETE'),
              after: fc.nat({ max: 1 }),
              kind: fc.constantFrom<ArmFault['kind']>('lose', 'lose', 403, 409, 500),
            })
            .map((f) => (f.method === 'PUT' ? f : { ...f, after: 0 })),
        },
        { requiredKeys: ['level', 'planted', 'ledger', 'armFault'] },
      ),
      (outcome) => outcome.armFaultTaken,
      // Most meet theirs; those that do not are a second write of a look with one namespace, or a removal never sent.
      8,
    );
  });

  it('whatever fails, and wherever (property)', async () => {
    const faultKind = fc.oneof(
      {
        weight: 6,
        arbitrary: fc
          .constantFrom(400, 401, 403, 404, 409, 422, 500, 503)
          .map((status) => ({ status }) as Fault),
      },
      { weight: 2, arbitrary: fc.constant<Fault>({ drop: true }) },
      { weight: 3, arbitrary: fc.constant<Fault>({ lose: true }) },
      { weight: 4, arbitrary: fc.constant<Fault>({ refuseAfter: true }) },
      { weight: 1, arbitrary: fc.constant<Fault>({ hang: true }) },
    );
    let faulted = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.record<Look>(
          {
            provider: fc.constantFrom('gke', 'aks'),
            googleLets: fc.boolean(),
            level: fc.constantFrom(...LEVELS),
            scope: fc.option(
              fc.uniqueArray(fc.constantFrom<'a' | 'b' | 'missing'>('a', 'b', 'missing'), {
                minLength: 1,
                maxLength: 3,
              }),
              { nil: undefined },
            ),
            planted: fc.record({ cluster: planted, a: planted, b: planted }),
            ledger: fc.constantFrom('none', 'held', 'pending'),
            // Google's faults too, now and then; the GKE property above meets one in each look.
            googleFault: fc.option(
              fc.record({
                method: fc.constantFrom<GoogleFault['method']>('getIamPolicy', 'setIamPolicy'),
                kind: fc.constantFrom<GoogleFault['kind']>(403, 409, 500, 503, 'lose'),
              }),
              { nil: undefined, freq: 3 },
            ),
            fault: fc.option(
              fc.record({
                at: fc.nat({ max: 6 }),
                among: fc.constantFrom<'requests' | 'changes'>('requests', 'changes'),
                kind: faultKind,
              }),
              {
                nil: undefined,
                freq: 6,
              },
            ),
          },
          { requiredKeys: ['provider', 'googleLets', 'level', 'planted', 'ledger'] },
        ),
        async (given) => {
          const outcome = await look(given);
          if (outcome.requests.some((r) => r.fault)) faulted += 1;
          assertNamed(given, outcome);
        },
      ),
      { numRuns: 120 },
    );
    assert.ok(faulted >= 20, `only ${faulted} looks met a fault`);
  });
});
