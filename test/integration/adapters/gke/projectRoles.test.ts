/**
 * GKE's project role for consumers (the `accessGrants` feature) through the real Resource Manager client over
 * its REST transport, at the local server: cpsync's one marked binding per consumer is made, kept exact and
 * removed; every other binding of the policy is left as it was; a write that loses a race is made again on
 * the policy as it now is; what the project does not let cpsync do is refused.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import fc from 'fast-check';
import { GkeSource } from '../../../../adapters/gke/GkeSource.ts';
import { CloudGrants } from '../../../../adapters/grants/CloudGrants.ts';
import {
  CLUSTER_VIEWER_ROLE,
  GKE_ONLY,
  GkeProjectRoles,
  iamMember,
} from '../../../../adapters/gke/projectRoles.ts';
import {
  letCpsyncGrantInProject,
  PROJECT_IAM_ADMIN,
  startGkeServer,
  type GkeServer,
  type IamPolicyJson,
} from '../../../env/fakes/gkeServer.ts';

const PROJECT = 'acme-data';
const CLUSTER = `https://container.googleapis.com/v1/projects/${PROJECT}/locations/europe-west1/clusters/edge`;
const DEPLOYER = 'deployer@consumers.iam.gserviceaccount.com';
const FEDERATED =
  'principal://iam.googleapis.com/projects/123456789/locations/global/workloadIdentityPools/ci/subject/deployer';

describe("GKE project role for consumers: cpsync's own bindings of the project's IAM policy, and nothing else", () => {
  let server: GkeServer;
  let source: GkeSource;
  let roles: GkeProjectRoles;
  /** Bindings cpsync must never change: someone's own grants, one of the same role. */
  let foreign: NonNullable<IamPolicyJson['bindings']>;

  before(async () => {
    server = await startGkeServer();
    source = new GkeSource({
      credentials: server.serviceAccountKey,
      endpoint: server.endpoint,
      maxRetries: 0,
    });
    roles = new GkeProjectRoles({
      projects: () => source.projectsClient(),
      manager: 'cpsync',
      timeoutMillis: 10_000,
    });
  });
  after(async () => {
    await source.close();
    await server.stop();
  });
  beforeEach(() => {
    foreign = [
      { role: 'roles/container.clusterViewer', members: ['user:alice@example.com'] },
      {
        role: 'roles/container.clusterViewer',
        members: ['serviceAccount:ops@acme-data.iam.gserviceaccount.com'],
        condition: { title: 'ops', description: 'someone else: access grant', expression: GKE_ONLY },
      },
    ];
    server.iamPolicies.set(PROJECT, { version: 3, etag: 'BwAAAA==', bindings: structuredClone(foreign) });
    letCpsyncGrantInProject(server, PROJECT);
  });
  const ours = () =>
    (server.iamPolicies.get(PROJECT)!.bindings ?? []).filter((b) =>
      b.condition?.description?.startsWith('cpsync: '),
    );
  const others = () =>
    (server.iamPolicies.get(PROJECT)!.bindings ?? []).filter(
      (b) => !b.condition?.description?.startsWith('cpsync: ') && b.role !== PROJECT_IAM_ADMIN,
    );

  it('holds a consumer in one marked binding limited to GKE, once, and writes nothing when it is there', async () => {
    assert.equal((await roles.hold(CLUSTER, 'deployer', DEPLOYER)).length, 1);
    const writes = () => server.requests.filter((r) => r.path.endsWith(':setIamPolicy')).length;
    const before = writes();
    assert.deepEqual(await roles.hold(CLUSTER, 'deployer', DEPLOYER), []);
    assert.equal(writes(), before, 'a held identity is not written again');
    assert.deepEqual(ours(), [
      {
        role: CLUSTER_VIEWER_ROLE,
        members: [`serviceAccount:${DEPLOYER}`],
        condition: {
          title: 'cpsync consumer deployer',
          description: 'cpsync: access grant for consumer deployer',
          expression: 'resource.service == "container.googleapis.com"',
        },
      },
    ]);
    assert.deepEqual(others(), foreign);
    assert.equal(iamMember(FEDERATED), FEDERATED, 'a federated principal is its own member');
  });

  it('settles its bindings to exactly the holders, over any sequence of holders, leaving every other binding as it was', async () => {
    const consumers = ['deployer', 'auditor'];
    const identities = [DEPLOYER, 'auditor@consumers.iam.gserviceaccount.com', FEDERATED];
    const holders = fc.array(
      fc.dictionary(fc.constantFrom(...consumers), fc.subarray(identities, { minLength: 1 })),
      { minLength: 1, maxLength: 4 },
    );
    await fc.assert(
      fc.asyncProperty(holders, async (sequence) => {
        for (const step of sequence) {
          const wanted = new Map(Object.entries(step).map(([c, ids]) => [c, new Set(ids)]));
          await roles.settle(PROJECT, wanted);
          const held = Object.fromEntries(
            ours().map((b) => [b.condition!.title!.replace('cpsync consumer ', ''), [...b.members].sort()]),
          );
          const expected = Object.fromEntries(
            Object.entries(step).map(([c, ids]) => [c, ids.map(iamMember).sort()]),
          );
          assert.deepEqual(held, expected);
          assert.deepEqual(others(), foreign);
        }
        await roles.settle(PROJECT, new Map());
        assert.deepEqual(ours(), []);
      }),
      { numRuns: 15 },
    );
  });

  it('never adds a member that stands for more than one principal, whatever it is handed, and then writes nothing', async () => {
    await roles.hold(CLUSTER, 'deployer', DEPLOYER);
    const writes = () => server.requests.filter((r) => r.path.endsWith(':setIamPolicy')).length;
    const before = { writes: writes(), policy: structuredClone(server.iamPolicies.get(PROJECT)) };
    for (const identity of [
      'allUsers',
      ' allAuthenticatedUsers ',
      'domain:example.com',
      'group:admins@example.com',
      'principalSet://iam.googleapis.com/projects/123456789/locations/global/workloadIdentityPools/ci/*',
    ]) {
      await assert.rejects(
        roles.hold(CLUSTER, 'deployer', identity),
        (error: Error) =>
          error.name === 'InvalidOptionError' && /names more than one principal/.test(error.message),
        identity,
      );
      await assert.rejects(
        roles.settle(PROJECT, new Map([['deployer', new Set([DEPLOYER, identity])]])),
        /names more than one principal/,
        identity,
      );
    }
    assert.equal(writes(), before.writes, 'no write was made');
    assert.deepEqual(server.iamPolicies.get(PROJECT), before.policy);
  });

  it('makes a write that lost a race again on the policy as it now is, keeping what the other writer did', async () => {
    // Another writer changes the policy between cpsync's read and its write, once.
    let raced = false;
    const original = server.iamPolicies.get.bind(server.iamPolicies);
    server.iamPolicies.get = (project: string) => {
      const policy = original(project);
      const lastRequest = server.requests.at(-1)?.path ?? '';
      if (!raced && policy && lastRequest.endsWith(':setIamPolicy')) {
        raced = true;
        policy.bindings = [
          ...(policy.bindings ?? []),
          { role: 'roles/viewer', members: ['user:bob@example.com'] },
        ];
        policy.etag = Buffer.from('raced').toString('base64');
      }
      return policy;
    };
    try {
      await roles.hold(CLUSTER, 'deployer', DEPLOYER);
    } finally {
      server.iamPolicies.get = original;
    }
    assert.ok(raced);
    const bindings = server.iamPolicies.get(PROJECT)!.bindings ?? [];
    assert.ok(
      bindings.some((b) => b.role === 'roles/viewer'),
      "the other writer's binding is kept",
    );
    assert.deepEqual(
      ours().map((b) => b.members),
      [[`serviceAccount:${DEPLOYER}`]],
    );
  });

  it('edits no policy answered without its etag (an empty body, or another document), which written back would replace every binding', async () => {
    for (const raw of ['{}', '{"bindings":null}', '{"error":{"code":200}}', '']) {
      const before = structuredClone(server.iamPolicies.get(PROJECT));
      server.iamFaults.push({ method: 'getIamPolicy', fault: { status: 200, code: 'OK', message: '', raw } });
      await assert.rejects(
        roles.hold(CLUSTER, 'deployer', DEPLOYER),
        /the IAM policy of project \S+ was answered without its etag; not edited|null response/,
        raw,
      );
      assert.deepEqual(server.iamPolicies.get(PROJECT), before, `${raw}: the project's policy as it was`);
      assert.deepEqual(others(), foreign);
    }
  });

  it('is refused where the project does not let cpsync change the policy, and changes nothing', async () => {
    const policy = server.iamPolicies.get(PROJECT)!;
    policy.bindings = policy.bindings!.filter((b) => b.role !== PROJECT_IAM_ADMIN);
    const before = structuredClone(policy);
    await assert.rejects(
      roles.hold(CLUSTER, 'deployer', DEPLOYER),
      (error: { code?: number; message?: string }) => {
        // PERMISSION_DENIED: Resource Manager's client reports the HTTP status; the message is Google's own.
        assert.equal(error.code, 403);
        assert.equal(
          error.message,
          `The caller does not have permission (resourcemanager.projects.getIamPolicy on projects/${PROJECT})`,
        );
        return true;
      },
    );
    assert.deepEqual(server.iamPolicies.get(PROJECT), before);
  });

  /** The grants as the functions build them, with only GKE's project role to settle. */
  const projectGrants = () =>
    new CloudGrants({
      manager: 'cpsync',
      tokens: {},
      accessProviderNames: { eks: 'eks', gke: 'gke', aks: 'aks' },
      gke: async () => roles,
      timeoutMillis: 10_000,
    });

  it("a project that refuses cpsync: through the grants, nothing to take back where nothing is held, Google's refusal where something is or who holds it cannot be read", async () => {
    const policy = server.iamPolicies.get(PROJECT)!;
    policy.bindings = policy.bindings!.filter((b) => b.role !== PROJECT_IAM_ADMIN);
    const grants = projectGrants();
    const refused = /The caller does not have permission/;
    assert.deepEqual(await grants.settleProjectRoles(PROJECT, async () => new Map()), []);
    await assert.rejects(
      grants.settleProjectRoles(PROJECT, async () => new Map([['deployer', new Set([DEPLOYER])]])),
      refused,
    );
    await assert.rejects(
      grants.settleProjectRoles(PROJECT, () => Promise.reject(new Error('the ledger is unavailable'))),
      refused,
    );
  });

  it("a project whose policy shows a binding of cpsync's and refuses its removal: said, never taken as holding nothing", async () => {
    await roles.hold(CLUSTER, 'deployer', DEPLOYER);
    assert.equal(ours().length, 1);
    const grants = projectGrants();
    // cpsync may read the policy, and not write it (its admin role narrowed, or the write refused by an org policy).
    const deny = { status: 403, code: 'PERMISSION_DENIED', message: 'The caller does not have permission' };
    server.iamFaults.push({ method: 'setIamPolicy', fault: deny });
    // Nothing held any more (the feature turned off, or the consumer taken out): the binding is to go.
    await assert.rejects(
      grants.settleProjectRoles(PROJECT, async () => new Map()),
      (error: Error) => {
        assert.match(
          error.message,
          new RegExp(
            `roles/container.clusterViewer binding cpsync made in project ${PROJECT} stands, its removal refused: The caller does not have permission`,
          ),
        );
        return true;
      },
    );
    assert.equal(ours().length, 1, 'the binding stands, as the error says');
    // Allowed again: it goes.
    assert.deepEqual((await grants.settleProjectRoles(PROJECT, async () => new Map())).length, 1);
    assert.equal(ours().length, 0);
  });

  it("settles a project's role through the grants with the look's whole deadline once Resource Manager's client is made, however long making it takes", async () => {
    // Making the client (its SDK's first load, in a cold process) takes as long as the look's deadline: the
    // deadline starts once it is made, so the settling still gets every millisecond of it.
    const DEADLINE_MILLIS = 3_000;
    const grants = new CloudGrants({
      manager: 'cpsync',
      tokens: {},
      accessProviderNames: { eks: 'eks', gke: 'gke', aks: 'aks' },
      gke: () => new Promise((resolve) => setTimeout(() => resolve(roles), DEADLINE_MILLIS)),
      timeoutMillis: DEADLINE_MILLIS,
    });
    const changed = await grants.settleProjectRoles(
      PROJECT,
      async () => new Map([['deployer', new Set([DEPLOYER])]]),
    );
    assert.deepEqual(changed, [
      `granted ${iamMember(DEPLOYER)} ${CLUSTER_VIEWER_ROLE} on GKE in project ${PROJECT} for consumer deployer`,
    ]);
    assert.deepEqual(
      ours().map((b) => b.members),
      [[iamMember(DEPLOYER)]],
    );
    assert.deepEqual(others(), foreign);
  });

  it("asks again when Resource Manager is briefly unavailable or throttling, by the source's retry settings, and says the last answer when it stays so", async () => {
    const retrying = new GkeSource({
      credentials: server.serviceAccountKey,
      endpoint: server.endpoint,
      maxRetries: 2,
    });
    const patient = new GkeProjectRoles({
      projects: () => retrying.projectsClient(),
      manager: 'cpsync',
      timeoutMillis: 10_000,
      retry: retrying.resourceManagerRetry,
    });
    const unavailable = {
      status: 503,
      code: 'UNAVAILABLE',
      message: 'The service is currently unavailable.',
    };
    const throttled = {
      status: 429,
      code: 'RESOURCE_EXHAUSTED',
      message: 'Quota exceeded for quota metric.',
    };
    const asked = (method: string) => server.requests.filter((r) => r.path.endsWith(`:${method}`)).length;
    try {
      const before = { get: asked('getIamPolicy'), set: asked('setIamPolicy') };
      server.iamFaults.push(
        { method: 'getIamPolicy', fault: unavailable },
        { method: 'setIamPolicy', fault: throttled },
      );
      await patient.hold(CLUSTER, 'deployer', DEPLOYER);
      assert.deepEqual(
        { get: asked('getIamPolicy') - before.get, set: asked('setIamPolicy') - before.set },
        { get: 2, set: 2 },
        'each asked once more',
      );
      const ours = server.iamPolicies
        .get(PROJECT)!
        .bindings!.filter((b) => b.condition?.title === 'cpsync consumer deployer');
      assert.deepEqual(
        ours.map((b) => [b.members, b.condition?.expression]),
        [[[`serviceAccount:${DEPLOYER}`], GKE_ONLY]],
      );
      // Unavailable on every ask: after the retries, the error is the last answer's, in Google's words.
      const gets = asked('getIamPolicy');
      server.iamFaults.push(
        ...Array.from({ length: 3 }, () => ({ method: 'getIamPolicy' as const, fault: unavailable })),
      );
      await assert.rejects(patient.inspect(PROJECT), (error: { code?: number; message?: string }) => {
        assert.equal(error.code, 503);
        assert.match(
          error.message!,
          /^The service is currently unavailable\. \(still so when the retries ran out\)$/,
        );
        return true;
      });
      assert.equal(asked('getIamPolicy') - gets, 3, 'asked once, and again as many times as maxRetries (2)');
      // A refusal is not asked again.
      const refused = asked('getIamPolicy');
      server.iamFaults.push({
        method: 'getIamPolicy',
        fault: { status: 403, code: 'PERMISSION_DENIED', message: 'The caller does not have permission' },
      });
      await assert.rejects(patient.inspect(PROJECT), {
        code: 403,
        message: 'The caller does not have permission',
      });
      assert.equal(asked('getIamPolicy') - refused, 1);
    } finally {
      await retrying.close();
    }
  });
});
