/**
 * `cpsync hub install` on the real kube-apiserver (the shared test hub): what it applies lets the identity it is
 * given run a sync, and nothing more (as test/integration/adapters/hub/rbac.test.ts proves for rbac.yaml); a second
 * run changes nothing; `--dry-run` applies nothing and prints what server-side apply makes into the same objects.
 *
 * The hub is shared with every other test: the install is made for a configuration whose inventory namespaces are
 * this test's own, for a user of its own, and with `--admission-policy inventory` — the policy then binds this
 * test's namespaces only, so no other test's writes meet it. The cluster-scoped objects the install applies (its
 * ClusterRoles and their bindings, the policy and its binding: fixed names) are put back as they were, or deleted
 * when they were not there, pass or fail; the CRD is the hub's own, and installing it again must change nothing.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { request as httpsRequest, type RequestOptions } from 'node:https';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { parseAllDocuments, stringify } from 'yaml';
import { HubForbiddenError } from '../../adapters/hub/errors.ts';
import { KubernetesHub } from '../../adapters/hub/KubernetesHub.ts';
import { KubernetesLeaseStore } from '../../adapters/hub/KubernetesLeases.ts';
import type { ObservedCluster } from '../../core/domain/model/observedCluster.ts';
import { syncScope } from '../support/absences.ts';
import { clientCertificate, kubeconfigYaml } from '../env/hub.ts';
import { runCli, type CliRun } from '../support/cli.ts';
import { eksCluster } from '../support/fixtures.ts';
import { adminKubeConfig, localHub, uniqueNamespace, userKubeConfig } from '../support/hub.ts';
import { inventoryOptions } from '../support/settings.ts';
import { temporaryDirectory } from '../support/tmp.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- hub documents are read freely here
type Doc = Record<string, any>;

/** Where each kind the install applies is served. */
const PATHS: Record<string, (name: string, namespace?: string) => string> = {
  CustomResourceDefinition: (n) => `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${n}`,
  Namespace: (n) => `/api/v1/namespaces/${n}`,
  ClusterRole: (n) => `/apis/rbac.authorization.k8s.io/v1/clusterroles/${n}`,
  ClusterRoleBinding: (n) => `/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/${n}`,
  RoleBinding: (n, ns) => `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/rolebindings/${n}`,
  Role: (n, ns) => `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/roles/${n}`,
  ValidatingAdmissionPolicy: (n) => `/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/${n}`,
  ValidatingAdmissionPolicyBinding: (n) =>
    `/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings/${n}`,
};
const pathOf = (doc: Doc) => PATHS[doc.kind]!(doc.metadata.name, doc.metadata.namespace);
const keyOf = (doc: Doc) => `${doc.kind} ${doc.metadata.namespace ?? ''}/${doc.metadata.name}`;

/** One request to the hub as `config` authenticates, the body sent as it is (no typed model in between). */
function raw(
  config: KubeConfig,
  method: string,
  path: string,
  body?: unknown,
  contentType = 'application/json',
): Promise<{ status: number; body: Doc }> {
  return new Promise((resolve, reject) => {
    const options: RequestOptions = {
      method,
      headers: { 'content-type': contentType, accept: 'application/json' },
    };
    void config.applyToHTTPSOptions(options).then(() => {
      const request = httpsRequest(`${config.getCurrentCluster()!.server}${path}`, options, (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () =>
          resolve({ status: response.statusCode ?? 0, body: JSON.parse(text || '{}') as Doc }),
        );
      });
      request.on('error', reject);
      request.end(body === undefined ? undefined : JSON.stringify(body));
    }, reject);
  });
}

/** An object as it stands, without what the server keeps about its writes. */
function content(doc: Doc): Doc {
  const { managedFields: _managed, resourceVersion: _version, ...metadata } = doc.metadata;
  return { ...doc, metadata };
}

async function statusOf(call: Promise<unknown>): Promise<number> {
  try {
    await call;
    return 200;
  } catch (error) {
    return (error as { code?: number }).code ?? 0;
  }
}

const scope = { provider: 'eks' as const, account: '111122223333', region: 'us-east-1' };

describe('cpsync hub install makes the hub ready for a configuration and one identity, on the real kube-apiserver', () => {
  let admin: KubeConfig;
  let adminKubeconfig: string;
  let directory: string;
  let configFile: string;
  const own = uniqueNamespace('hub-install');
  const projected = `${own}-kueue`;
  const outside = `${own}-outside`;
  const user = `cpsync-install-${own.slice(-6)}`;
  /** Argo CD's namespace, where the configuration's Argo CD subscriber writes, and who that subscriber is. */
  const argocd = `${own}-argocd`;
  const subscriber = `${user}-argocd`;
  let identity: KubeConfig;
  /** The cluster-scoped objects the install applies, as they were before (undefined: absent). */
  const previous = new Map<string, Doc | undefined>();
  let manifests: Doc[];
  let first: CliRun;
  let crdVersion: string;

  const hubInstall = (...args: string[]) =>
    runCli([
      'hub',
      'install',
      '--config',
      configFile,
      '--kubeconfig',
      adminKubeconfig,
      '--user',
      user,
      '--argocd-user',
      subscriber,
      ...args,
    ]);
  const profile = (namespace: string) => ({
    apiVersion: 'multicluster.x-k8s.io/v1alpha1',
    kind: 'ClusterProfile',
    metadata: { name: 'looks-like-cpsyncs', namespace, labels: { 'x-k8s.io/cluster-manager': 'cpsync' } },
    spec: { displayName: 'x', clusterManager: { name: 'cpsync' } },
  });
  const profiles = (namespace: string) =>
    `/apis/multicluster.x-k8s.io/v1alpha1/namespaces/${namespace}/clusterprofiles`;
  /**
   * Holds until the hub enforces what the install applied. Its authorizer and its admission plugin learn of a
   * RoleBinding or a policy from their informers, after the write returns (later under load): asked with dry
   * runs, which nothing stores, the identity may create a profile in both inventory namespaces and an
   * administrator may not.
   */
  const enforced = async () => {
    const tries = async () => ({
      identity: await Promise.all(
        [own, projected].map(
          async (ns) => (await raw(identity, 'POST', `${profiles(ns)}?dryRun=All`, profile(ns))).status,
        ),
      ),
      admin: (await raw(admin, 'POST', `${profiles(own)}?dryRun=All`, profile(own))).status,
    });
    const until = Date.now() + 60_000;
    for (let seen = await tries(); ; seen = await tries()) {
      if (seen.identity.every((s) => s === 201) && seen.admin === 403) return;
      if (Date.now() > until)
        throw new Error(`the install is not enforced a minute after it applied: ${JSON.stringify(seen)}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  };
  const read = async (doc: Doc) => raw(admin, 'GET', pathOf(doc));
  const versions = async (docs: Doc[]) =>
    Object.fromEntries(
      await Promise.all(
        docs.map(async (doc) => [keyOf(doc), (await read(doc)).body.metadata?.resourceVersion]),
      ),
    ) as Record<string, string>;

  before(async () => {
    const state = await localHub();
    admin = adminKubeConfig(state);
    adminKubeconfig = state.kubeconfig;
    directory = temporaryDirectory('cpsync-hub-install-');
    // cpsync runs as a user of this test's own; its kubeconfig is the configuration's hub.
    const { cert, key } = clientCertificate(state, user);
    const userKubeconfig = join(directory, 'cpsync.kubeconfig');
    writeFileSync(userKubeconfig, kubeconfigYaml(state.server, state.caCert, user, cert, key), {
      mode: 0o600,
    });
    identity = userKubeConfig(state, user);
    configFile = join(directory, 'cpsync.yaml');
    writeFileSync(
      configFile,
      stringify({
        hub: { kubeconfig: userKubeconfig },
        bus: { stdout: true },
        outbox: { directory: join(directory, 'outbox') },
        inventory: {
          namespace: own,
          clusterSets: { prod: [own] },
          projections: [{ provider: 'eks', namespaces: [projected] }],
        },
        subscribers: { argocd: { namespace: argocd } },
      }),
    );
    // Argo CD installed: its namespace is there before cpsync's install.
    assert.equal(
      (await raw(admin, 'POST', '/api/v1/namespaces', { metadata: { name: argocd } })).status,
      201,
    );
    const printed = await hubInstall('--admission-policy', 'inventory', '--dry-run');
    assert.equal(printed.code, 0, printed.stderr);
    manifests = parseAllDocuments(printed.stdout).map((d) => d.toJS() as Doc);
    for (const doc of manifests.filter(
      (d) => !d.metadata.namespace && !['Namespace', 'CustomResourceDefinition'].includes(d.kind),
    )) {
      const found = await read(doc);
      previous.set(keyOf(doc), found.status === 200 ? found.body : undefined);
    }
    crdVersion = (await read(manifests[0]!)).body.metadata.resourceVersion as string;
    first = await hubInstall('--admission-policy', 'inventory');
    if (first.code === 0) await enforced();
  });

  after(async () => {
    if (!manifests) return;
    // Cluster-scoped objects back as they were (or gone), the policy's binding first.
    for (const doc of manifests.filter((d) => previous.has(keyOf(d))).reverse()) {
      const was = previous.get(keyOf(doc));
      if (!was) await raw(admin, 'DELETE', pathOf(doc));
      else {
        const {
          resourceVersion: _v,
          managedFields: _m,
          uid: _u,
          creationTimestamp: _c,
          generation: _g,
          ...metadata
        } = was.metadata;
        const restored = await raw(admin, 'PUT', pathOf(doc), { ...was, metadata });
        assert.equal(restored.status, 200, `${keyOf(doc)} restored: ${JSON.stringify(restored.body)}`);
      }
    }
    for (const namespace of [own, projected, outside, argocd])
      await raw(admin, 'DELETE', `/api/v1/namespaces/${namespace}`);
  });

  it("applies the CRD (already the hub's: no write), both inventory namespaces, cpsync's RBAC for the user and the admission policy", async () => {
    assert.equal(first.code, 0, first.stderr);
    const lines = first.stdout.trim().split('\n');
    assert.deepEqual(lines, [
      'customresourcedefinition clusterprofiles.multicluster.x-k8s.io unchanged',
      `namespace ${own} created`,
      `namespace ${projected} created`,
      ...lines.slice(3),
    ]);
    assert.equal(lines.length, manifests.length);
    assert.equal((await read(manifests[0]!)).body.metadata.resourceVersion, crdVersion);
    for (const namespace of [own, projected]) {
      const binding = await raw(
        admin,
        'GET',
        `/apis/rbac.authorization.k8s.io/v1/namespaces/${namespace}/rolebindings/cpsync:clusterprofiles`,
      );
      assert.deepEqual(binding.body.subjects, [
        { apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user },
      ]);
    }
    const policy = await raw(admin, 'GET', PATHS.ValidatingAdmissionPolicy!('cpsync-clusterprofiles'));
    assert.ok(
      (policy.body.spec.variables as Array<{ name: string; expression: string }>).some(
        (v) => v.name === 'identity' && v.expression === `'${user}'`,
      ),
    );
    assert.match(first.stderr, /the hub is ready for the user cpsync-install-\w+: \d+ objects/);
  });

  it('changes nothing when run again: every object keeps its resourceVersion', async () => {
    const was = await versions(manifests);
    const again = await hubInstall('--admission-policy', 'inventory');
    assert.equal(again.code, 0, again.stderr);
    assert.deepEqual(
      again.stdout
        .trim()
        .split('\n')
        .map((line) => line.split(' ').at(-1)),
      manifests.map(() => 'unchanged'),
    );
    assert.deepEqual(await versions(manifests), was);
  });

  it("refuses a configuration of another manager, naming both, and applies nothing: the install's objects are named alike whatever the manager", async () => {
    const was = await versions(manifests);
    const other = join(directory, 'platform.yaml');
    writeFileSync(
      other,
      stringify({
        manager: 'platform',
        hub: { kubeconfig: join(directory, 'cpsync.kubeconfig') },
        bus: { stdout: true },
        outbox: { directory: join(directory, 'outbox-platform') },
        inventory: { namespace: `${own}-platform` },
      }),
    );
    for (const policy of ['inventory', 'all', 'none']) {
      const refused = await runCli([
        'hub',
        'install',
        '--config',
        other,
        '--kubeconfig',
        adminKubeconfig,
        '--user',
        `${user}-platform`,
        '--admission-policy',
        policy,
      ]);
      assert.equal(refused.code, 1, refused.stderr);
      assert.equal(refused.stdout, '');
      assert.match(
        refused.stderr,
        /it holds the install of manager "cpsync" \(ClusterRole cpsync:clusterprofiles(, ValidatingAdmissionPolicy cpsync-clusterprofiles)?\); this configuration is manager "platform"\. Nothing was applied/,
      );
      assert.deepEqual(await versions(manifests), was, `--admission-policy ${policy}: nothing changed`);
      assert.equal((await raw(admin, 'GET', `/api/v1/namespaces/${own}-platform`)).status, 404);
    }
  });

  it('lets the identity run a sync — label the namespace, write, project and delete profiles, take leases, record the features — past the admission policy', async () => {
    const hub = new KubernetesHub({ kubeConfig: identity });
    const options = inventoryOptions({
      namespace: own,
      clusterSets: { [own]: 'prod' },
      projections: [{ provider: 'eks', namespaces: [projected] }],
      deletionGraceListings: 1,
    });
    const listing = (clusters: ObservedCluster[]) => ({
      outcome: { scope, kind: 'complete' as const },
      clusters,
    });
    const a = eksCluster({ name: 'install-a' });
    const b = eksCluster({ name: 'install-b' });
    const created = await syncScope({ hub, listing: listing([a, b]), options, now: '2026-03-01T00:00:00Z' });
    assert.deepEqual(created.applied.failed, []);
    assert.equal(created.applied.applied.length, 4);
    const changed = await syncScope({
      hub,
      listing: listing([{ ...a, kubernetesVersion: '1.33' }]),
      options,
      now: '2026-03-01T00:15:00Z',
    });
    assert.deepEqual(changed.applied.failed, []);
    for (const namespace of [own, projected])
      assert.deepEqual(
        (await hub.list(namespace, { 'x-k8s.io/cluster-manager': 'cpsync' })).map((p) => p.spec.displayName),
        ['install-a'],
      );
    const core = identity.makeApiClient(CoreV1Api);
    assert.equal(
      (await core.readNamespace({ name: own })).metadata?.labels?.['multicluster.x-k8s.io/clusterset'],
      'prod',
    );
    const leases = new KubernetesLeaseStore({ kubeConfig: identity, namespace: own });
    assert.deepEqual(await leases.acquire('cpsync-lease-install', 'run-1', 30_000), { acquired: true });
    await leases.release('cpsync-lease-install', 'run-1');
    await hub.updateConfigMap({ namespace: own, name: 'cpsync-features' }, () => ({ 'features.json': '{}' }));

    // cpsync doctor, as the identity: every write allowed in both namespaces, the policy in force for it.
    const doctor = await runCli(['doctor', '--config', configFile]);
    assert.equal(doctor.code, 0, doctor.stdout + doctor.stderr);
    assert.match(doctor.stdout, new RegExp(`✔ hub ${own}: .*every write cpsync makes is allowed`));
    assert.match(doctor.stdout, new RegExp(`✔ hub ${projected}: .*every write cpsync makes is allowed`));
    assert.match(
      doctor.stdout,
      new RegExp(`✔ admission policy cpsync-clusterprofiles: in force: only the user ${user} writes`),
    );
  });

  it("gives the configuration's Argo CD subscriber an identity of its own: it reads profiles and writes its own cluster Secrets; cpsync's identity reaches none of them", async () => {
    const asSubscriber = userKubeConfig(await localHub(), subscriber);
    const subscriberCore = asSubscriber.makeApiClient(CoreV1Api);
    const secret = {
      metadata: {
        name: 'cluster-install',
        labels: {
          'argocd.argoproj.io/secret-type': 'cluster',
          'app.kubernetes.io/managed-by': 'cpsync',
          'x-k8s.io/cluster-manager': 'cpsync',
        },
      },
      stringData: { name: 'install', server: 'https://install.example', config: '{}' },
    };
    // Held until the hub enforces the Secrets policy: another writer's dry run of such a Secret is refused.
    const until = Date.now() + 60_000;
    while (
      (await raw(admin, 'POST', `/api/v1/namespaces/${argocd}/secrets?dryRun=All`, secret)).status !== 403
    )
      if (Date.now() > until)
        throw new Error('the Secrets policy is not enforced a minute after the install');
      else await new Promise((resolve) => setTimeout(resolve, 100));
    // It reads what the hub holds there (whatever the cases run before this one left), as the administrator does.
    const names = async (config: KubeConfig) =>
      (await new KubernetesHub({ kubeConfig: config }).list(own, {})).map((p) => p.metadata.name).sort();
    assert.deepEqual(await names(asSubscriber), await names(admin));
    assert.equal(
      await statusOf(subscriberCore.createNamespacedSecret({ namespace: argocd, body: secret })),
      200,
    );
    const other = { metadata: { name: 'argocd-secret' }, stringData: { key: 'x' } };
    assert.equal(
      await statusOf(subscriberCore.createNamespacedSecret({ namespace: argocd, body: other })),
      403,
    );
    const written = await raw(asSubscriber, 'POST', profiles(own), profile(own));
    assert.equal(written.status, 403, JSON.stringify(written.body));
    const cpsyncCore = identity.makeApiClient(CoreV1Api);
    assert.equal(await statusOf(cpsyncCore.listNamespacedSecret({ namespace: argocd })), 403);
    assert.equal(
      await statusOf(
        cpsyncCore.createNamespacedSecret({
          namespace: argocd,
          body: { ...secret, metadata: { ...secret.metadata, name: 'cluster-planted' } },
        }),
      ),
      403,
    );
  });

  it('lets the identity do nothing more: no Secrets, no other kinds, no profiles, leases or namespaces elsewhere', async () => {
    const core = identity.makeApiClient(CoreV1Api);
    assert.equal(await statusOf(core.listNamespacedSecret({ namespace: own })), 403);
    assert.equal(await statusOf(core.listSecretForAllNamespaces()), 403);
    assert.equal(
      await statusOf(
        core.createNamespacedConfigMap({ namespace: own, body: { metadata: { name: 'other' } } }),
      ),
      403,
    );
    assert.equal(await statusOf(core.readNamespace({ name: 'kube-system' })), 403);
    const hub = new KubernetesHub({ kubeConfig: identity });
    const elsewhere = await syncScope({
      hub,
      listing: {
        outcome: { scope, kind: 'complete' as const },
        clusters: [eksCluster({ name: 'elsewhere' })],
      },
      options: inventoryOptions({ namespace: 'default' }),
      now: '2026-03-01T00:00:00Z',
    }).catch((e: unknown) => e);
    assert.ok(elsewhere instanceof HubForbiddenError, String(elsewhere));
    const lease = await new KubernetesLeaseStore({ kubeConfig: identity, namespace: 'default' })
      .acquire('cpsync-lease-install', 'run-1', 30_000)
      .catch((e: unknown) => e);
    assert.ok(lease instanceof HubForbiddenError, String(lease));
  });

  it("keeps everyone else from writing cpsync's profiles in the inventory namespaces, and only there (--admission-policy inventory)", async () => {
    // Even an administrator, whom RBAC lets do anything.
    const refused = await raw(admin, 'POST', profiles(own), profile(own));
    assert.equal(refused.status, 403);
    assert.match(
      String(refused.body.message),
      new RegExp(`only ${user} may create a ClusterProfile of manager cpsync`),
    );
    assert.equal(
      (await raw(admin, 'POST', '/api/v1/namespaces', { metadata: { name: outside } })).status,
      201,
    );
    assert.equal((await raw(admin, 'POST', profiles(outside), profile(outside))).status, 201);
  });

  it('--dry-run applies nothing, and what it prints, applied with server-side apply, makes the objects the install made', async () => {
    const was = await versions(manifests);
    // A dry run for more than is installed (another namespace, another user): none of it reaches the hub.
    const more = join(directory, 'more.yaml');
    writeFileSync(more, stringify({ inventory: { namespace: `${own}-dry` } }));
    const dry = await runCli(['hub', 'install', '--config', more, '--group', 'someone', '--dry-run']);
    assert.equal(dry.code, 0, dry.stderr);
    assert.match(dry.stderr, /nothing applied/);
    assert.equal((await raw(admin, 'GET', `/api/v1/namespaces/${own}-dry`)).status, 404);
    assert.deepEqual(await versions(manifests), was);

    // This configuration's manifests, applied as `kubectl apply --server-side` would (the hub asked to dry-run
    // the apply, so the shared CRD is not taken over by this test): each comes out as the install left it.
    for (const doc of manifests) {
      const applied = await raw(
        admin,
        'PATCH',
        `${pathOf(doc)}?fieldManager=cpsync-install&force=true&dryRun=All`,
        doc,
        'application/apply-patch+yaml',
      );
      assert.equal(applied.status, 200, `${keyOf(doc)}: ${JSON.stringify(applied.body)}`);
      const stored = await read(doc);
      assert.deepEqual(content(applied.body), content(stored.body), keyOf(doc));
    }
  });

  it('says what is wrong, and exits 2, when it cannot be done as asked', async () => {
    const cases: Array<[string[], RegExp]> = [
      [
        ['--config', configFile],
        /say who cpsync is on the hub: --user <name>, --group <name>, or --eks-role/,
      ],
      [['--config', configFile, '--user', 'a', '--group', 'b'], /give --user or --group, not both/],
      [['--config', configFile, '--eks-role', 'arn:aws:iam::1:role/x'], /expected an IAM role ARN/],
      [['--config', configFile, '--user', 'a\u001b[2Jb'], /expected a user or group name/],
      [
        ['--config', configFile, '--user', 'system:cpsync', '--eks-role', 'arn:aws:iam::111122223333:role/x'],
        /starting with system:/,
      ],
      [
        ['--config', configFile, '--user', 'a', '--admission-policy', 'some'],
        /Allowed choices are all, inventory, none/,
      ],
      [['--user', 'a'], /hub is a directory of files \(inventory, the default\).*--dry-run/],
      [['--config', configFile, '--user', 'a', '--context', 'nope'], /--context "nope" is not a context of/],
      [
        ['--config', configFile, '--user', 'a', '--argocd-user', 'a'],
        /the Argo CD subscriber is an identity of its own, not cpsync's \(user a\)/,
      ],
      [
        [
          '--config',
          configFile,
          '--eks-role',
          'arn:aws:iam::111122223333:role/x',
          '--argocd-eks-role',
          'arn:aws:iam::111122223333:role/x',
        ],
        /--argocd-eks-role arn:aws:iam::111122223333:role\/x is also an --eks-role/,
      ],
      [['--user', 'a', '--argocd-user', 'b'], /--argocd-user: the configuration has no Argo CD subscriber/],
      [
        ['--config', configFile, '--group', 'writers', '--argocd-group', 'writers'],
        /the Argo CD subscriber is an identity of its own, not cpsync's \(group writers\)/,
      ],
      [
        ['--config', configFile, '--user', 'a', '--argocd-group', 'system:authenticated'],
        /not the API server's group system:authenticated/,
      ],
    ];
    const empty = temporaryDirectory('cpsync-hub-install-empty-');
    for (const [args, message] of cases) {
      const run = await runCli(['hub', 'install', ...args], { cwd: empty });
      assert.equal(run.code, 2, `${args.join(' ')}: ${run.stderr}`);
      assert.match(run.stderr, message, args.join(' '));
      assert.equal(run.stdout, '', args.join(' '));
      assert.ok(!run.stderr.includes('\u001b'), 'no escape sequence reaches the terminal');
    }
  });

  it("refuses to install while Argo CD's namespace is missing, naming it, and applies nothing", async () => {
    const missing = join(directory, 'no-argocd.yaml');
    writeFileSync(
      missing,
      stringify({
        hub: { kubeconfig: join(directory, 'cpsync.kubeconfig') },
        bus: { stdout: true },
        outbox: { directory: join(directory, 'outbox-no-argocd') },
        inventory: { namespace: `${own}-noargo` },
        subscribers: { argocd: { namespace: `${own}-noargo-argocd` } },
      }),
    );
    const was = await versions(manifests);
    const run = await runCli([
      'hub',
      'install',
      '--config',
      missing,
      '--kubeconfig',
      adminKubeconfig,
      '--user',
      user,
    ]);
    assert.equal(run.code, 1, run.stderr);
    assert.match(
      run.stderr,
      new RegExp(
        `Argo CD's namespace ${own}-noargo-argocd \\(subscribers\\.argocd\\.namespace\\) does not exist: install Argo CD first`,
      ),
    );
    assert.equal((await raw(admin, 'GET', `/api/v1/namespaces/${own}-noargo`)).status, 404);
    assert.deepEqual(await versions(manifests), was);
  });

  it('on an EKS hub, says how to map each function role to the user with an access entry', async () => {
    const eks = join(directory, 'eks.yaml');
    writeFileSync(
      eks,
      stringify({
        hub: { eks: { clusterName: 'platform hub', region: 'eu-west-1' } },
        subscribers: { argocd: {} },
      }),
    );
    const roles = [
      'arn:aws:iam::111122223333:role/Cpsync-Worker',
      'arn:aws:iam::111122223333:role/Cpsync-Events',
    ];
    const run = await runCli([
      'hub',
      'install',
      '--config',
      eks,
      '--dry-run',
      ...roles.flatMap((r) => ['--eks-role', r]),
    ]);
    assert.equal(run.code, 0, run.stderr);
    for (const role of roles)
      assert.ok(
        run.stderr.includes(
          `aws eks create-access-entry --cluster-name 'platform hub' --region eu-west-1 --principal-arn ${role} --type STANDARD --username cpsync`,
        ),
        run.stderr,
      );
    const policy = parseAllDocuments(run.stdout)
      .map((d) => d.toJS() as Doc)
      .find((d) => d.kind === 'ValidatingAdmissionPolicy')!;
    assert.ok(policy.spec.variables.some((v: Doc) => v.name === 'identity' && v.expression === "'cpsync'"));
    // The Argo CD subscriber's role, mapped to its own user; without the role, where to find it.
    assert.match(run.stderr, /give its role \(the stack's ArgoCdHubRole output\) with --argocd-eks-role/);
    const subscriberRole = 'arn:aws:iam::111122223333:role/Cpsync-ArgoCd';
    const mapped = await runCli([
      'hub',
      'install',
      '--config',
      eks,
      '--dry-run',
      '--eks-role',
      roles[0]!,
      '--argocd-eks-role',
      subscriberRole,
    ]);
    assert.equal(mapped.code, 0, mapped.stderr);
    assert.ok(
      mapped.stderr.includes(
        `aws eks create-access-entry --cluster-name 'platform hub' --region eu-west-1 --principal-arn ${subscriberRole} --type STANDARD --username cpsync-argocd`,
      ),
      mapped.stderr,
    );
    const printed = parseAllDocuments(mapped.stdout).map((d) => d.toJS() as Doc);
    assert.ok(printed.some((d) => d.kind === 'Role' && d.metadata.namespace === 'argocd'));
    assert.ok(
      printed.some(
        (d) => d.kind === 'ValidatingAdmissionPolicy' && d.metadata.name === 'cpsync-argocd-secrets',
      ),
    );
    // Argo CD on another cluster: its Secrets' Role and policy are for that cluster, not the hub.
    const elsewhere = join(directory, 'elsewhere.yaml');
    writeFileSync(
      elsewhere,
      stringify({
        hub: { eks: { clusterName: 'platform hub', region: 'eu-west-1' } },
        subscribers: {
          argocd: { kubeconfigSecretArn: 'arn:aws:secretsmanager:eu-west-1:111122223333:secret:argocd' },
        },
      }),
    );
    const apart = await runCli([
      'hub',
      'install',
      '--config',
      elsewhere,
      '--dry-run',
      '--eks-role',
      roles[0]!,
    ]);
    assert.equal(apart.code, 0, apart.stderr);
    const hubOnly = parseAllDocuments(apart.stdout).map((d) => d.toJS() as Doc);
    assert.ok(
      hubOnly.some((d) => d.kind === 'ClusterRole' && d.metadata.name === 'cpsync:clusterprofiles:argocd'),
    );
    assert.ok(!hubOnly.some((d) => d.kind === 'Role' || d.metadata.name === 'cpsync-argocd-secrets'));
    assert.match(
      apart.stderr,
      /apply its Secrets Role and their admission policy there: cpsync consumers argocd-subscriber --part rbac/,
    );
  });
});
