/**
 * `cpsync doctor` on a Kubernetes hub (the real local kube-apiserver): whether the admission policy that lets only
 * cpsync write its profiles (adapters/hub/manifests/admission-policy.yaml) is in force in each inventory namespace,
 * read with the identity bound only to adapters/hub/manifests/rbac.yaml, as the command prints it; and, where the
 * doctor says it is, whether the API server does refuse another user's profile there.
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  CoreV1Api,
  CustomObjectsApi,
  RbacAuthorizationV1Api,
  type KubeConfig,
  type V1ValidatingAdmissionPolicyBinding,
} from '@kubernetes/client-node';
import { main } from '../../../../cli/program.ts';
import { adminKubeConfig, localHub, uniqueNamespace, userKubeConfig } from '../../../support/hub.ts';
import { ensureShippedRbac, installAdmissionPolicy } from '../../../support/hubManifests.ts';
import { temporaryDirectory } from '../../../support/tmp.ts';

const namespace = uniqueNamespace('doctor');
/** A second inventory namespace (a projection's), which the binding matches only where a test says so. */
const projected = `${namespace}-deploy`;
/**
 * The binding matching the namespaces `names` by name, as `cpsync hub install` binds it (the namespace's name label,
 * which the doctor judges without reading the namespace).
 */
const boundTo =
  (...names: string[]) =>
  (binding: V1ValidatingAdmissionPolicyBinding): V1ValidatingAdmissionPolicyBinding => ({
    ...binding,
    spec: {
      ...binding.spec!,
      matchResources: {
        namespaceSelector: {
          matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: names }],
        },
      },
    },
  });
const POLICY_LINE = /^[✔✖] admission policy cpsync-clusterprofiles: .*$/m;
const NOT_IN_FORCE =
  "✖ admission policy cpsync-clusterprofiles: the hub's admission policy is not in force: ";
const APPLY =
  ' — apply adapters/hub/manifests/admission-policy.yaml (cpsync hub install); the Argo CD subscriber acts on no profile where it is not in force';

describe('cpsync doctor: the hub’s admission policy', () => {
  let admin: KubeConfig;
  let directory: string;
  let removeRbac: (() => Promise<void>) | undefined;

  /**
   * A configuration reaching the hub as `user` (a member of `group`, if given), with `manager` (and, with
   * `projecting`, both namespaces).
   */
  async function configAs(
    user: string,
    manager = 'cpsync',
    projecting = false,
    group?: string,
  ): Promise<string> {
    const kubeconfig = join(directory, `${user}-${group ?? ''}.kubeconfig`);
    writeFileSync(kubeconfig, userKubeConfig(await localHub(), user, group).exportConfig(), { mode: 0o600 });
    const file = join(directory, `${user}-${group ?? ''}-${manager}${projecting ? '-projecting' : ''}.json`);
    writeFileSync(
      file,
      JSON.stringify({
        manager,
        hub: { kubeconfig },
        inventory: {
          namespace,
          ...(projecting
            ? { projections: [{ tag: { key: 'access', value: 'deploy' }, namespaces: [projected] }] }
            : {}),
        },
        bus: { jsonl: join(directory, 'events.jsonl') },
        // A state directory is one configuration's (its manager and hub).
        outbox: { directory: join(directory, `outbox-${manager}`) },
      }),
    );
    return file;
  }

  /** What `cpsync doctor` printed about the policy, and its exit code. */
  async function doctorSays(config: string): Promise<{ line: string; code: number; stdout: string }> {
    const out: string[] = [];
    const io = {
      stdout: { write: (s: string) => out.push(s) } as unknown as NodeJS.WritableStream,
      stderr: { write: () => true } as unknown as NodeJS.WritableStream,
    };
    const code = await main(['--config', config, 'doctor'], io);
    const stdout = out.join('');
    const line = stdout.match(POLICY_LINE)?.[0];
    assert.ok(line, `doctor says nothing of the policy:\n${stdout}`);
    return { line, code, stdout };
  }

  before(async () => {
    admin = adminKubeConfig(await localHub());
    directory = temporaryDirectory('cpsync-doctor-');
    const core = admin.makeApiClient(CoreV1Api);
    for (const name of [namespace, projected]) await core.createNamespace({ body: { metadata: { name } } });
    removeRbac = await ensureShippedRbac(admin, [
      'ClusterRole/cpsync:clusterprofiles',
      'ClusterRole/cpsync:admission-policy',
      'ClusterRoleBinding/cpsync:admission-policy',
    ]);
    // cpsync's role in both namespaces, and another user's (any profile write) in the first: the oracle's writer.
    const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
    for (const [where, user] of [
      [namespace, 'cpsync'],
      [projected, 'cpsync'],
      [namespace, 'writer'],
      [projected, 'writer'],
    ] as const)
      await rbac.createNamespacedRoleBinding({
        namespace: where,
        body: {
          metadata: { name: `cpsync:clusterprofiles:${user}` },
          roleRef: {
            apiGroup: 'rbac.authorization.k8s.io',
            kind: 'ClusterRole',
            name: 'cpsync:clusterprofiles',
          },
          subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }],
        },
      });
  });

  after(async () => {
    try {
      const core = admin?.makeApiClient(CoreV1Api);
      await Promise.all([namespace, projected].map((name) => core?.deleteNamespace({ name })));
    } finally {
      await removeRbac?.();
    }
  });

  /**
   * Whether the API server refuses `user` (whom RBAC lets write ClusterProfiles in both namespaces) a profile like
   * cpsync's in `where`: the oracle, which is not the doctor's reading of the policy. Asked until it gives the answer
   * `expected` (a new binding reaches the admission plugin a moment after it is stored), at most 30 s.
   */
  async function serverRefuses(
    user: string,
    expected: boolean,
    where = namespace,
    group?: string,
  ): Promise<boolean> {
    const api = userKubeConfig(await localHub(), user, group).makeApiClient(CustomObjectsApi);
    const target = {
      group: 'multicluster.x-k8s.io',
      version: 'v1alpha1',
      namespace: where,
      plural: 'clusterprofiles',
    };
    for (let attempt = 0; ; attempt++) {
      let refused: boolean;
      try {
        await api.createNamespacedCustomObject({
          ...target,
          body: {
            apiVersion: 'multicluster.x-k8s.io/v1alpha1',
            kind: 'ClusterProfile',
            metadata: { name: `planted-${attempt}`, labels: { 'x-k8s.io/cluster-manager': 'cpsync' } },
            spec: { displayName: 'planted', clusterManager: { name: 'cpsync' } },
          },
        });
        refused = false;
        await api.deleteNamespacedCustomObject({ ...target, name: `planted-${attempt}` });
      } catch (error) {
        if ((error as { code?: number }).code !== 403) throw error;
        refused = true;
      }
      if (refused === expected || attempt >= 300) return refused;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  it('says the policy is in force where its binding (Deny) matches each inventory namespace, as the server does', async () => {
    const installed = await installAdmissionPolicy(admin, { binding: boundTo(namespace) });
    try {
      assert.equal(await serverRefuses('writer', true), true, 'the API server refuses another writer');
      const { line } = await doctorSays(await configAs('cpsync'));
      assert.equal(
        line,
        `✔ admission policy cpsync-clusterprofiles: in force: only the user cpsync writes the profiles of manager cpsync in ${namespace} (binding cpsync-clusterprofiles, Deny)`,
      );
    } finally {
      await installed.remove();
    }
  });

  it('says it is in force for a group cpsync is a member of (hub install --group), as the server lets it write', async () => {
    const installed = await installAdmissionPolicy(admin, {
      binding: boundTo(namespace),
      identity: 'cpsync-writers',
      byGroup: true,
    });
    try {
      // The oracle: the server refuses another writer, and lets cpsync (as a member of the group) write.
      assert.equal(await serverRefuses('writer', true), true, 'another writer refused');
      assert.equal(
        await serverRefuses('cpsync', false, namespace, 'cpsync-writers'),
        false,
        'a member lets in',
      );
      const { line } = await doctorSays(await configAs('cpsync', 'cpsync', false, 'cpsync-writers'));
      assert.equal(
        line,
        `✔ admission policy cpsync-clusterprofiles: in force: only the members of the group cpsync-writers write the profiles of manager cpsync in ${namespace} (binding cpsync-clusterprofiles, Deny)`,
      );
      // The same user outside the group is refused by the policy, and the doctor says so.
      const outside = await doctorSays(await configAs('cpsync'));
      assert.match(
        outside.line,
        /^✖ .*this identity is the user cpsync \(groups system:authenticated\), which it refuses/,
      );
    } finally {
      await installed.remove();
    }
  });

  it('says the policy refuses this identity when it names another as cpsync, as the server does, and fails', async () => {
    const installed = await installAdmissionPolicy(admin, {
      binding: boundTo(namespace),
      identity: 'cpsync-elsewhere',
    });
    try {
      // The oracle: the API server refuses cpsync (whom RBAC lets create profiles there) a profile of its own.
      assert.equal(
        await serverRefuses('cpsync', true),
        true,
        'the API server refuses cpsync its own profile',
      );
      const { line, code } = await doctorSays(await configAs('cpsync'));
      assert.equal(
        line,
        `✖ admission policy cpsync-clusterprofiles: in force: only the user cpsync-elsewhere writes the profiles of manager cpsync in ${namespace} (binding cpsync-clusterprofiles, Deny); this identity is the user cpsync (groups system:authenticated), which it refuses: cpsync's writes of its profiles there fail — run cpsync as it, or set the policy's identity to this one (cpsync hub install --user or --group)`,
      );
      assert.equal(code, 1);
    } finally {
      await installed.remove();
    }
  });

  it('says it is not in force in a namespace its binding does not match, naming it, and fails', async () => {
    // Bound elsewhere: the policy and binding are there, and the server refuses no one in the inventory namespace.
    const nowhere = await installAdmissionPolicy(admin, { binding: boundTo(`${namespace}-elsewhere`) });
    try {
      assert.equal(await serverRefuses('writer', false), false, 'the API server lets another writer in');
      const { line, code } = await doctorSays(await configAs('cpsync'));
      assert.equal(
        line,
        `✖ admission policy cpsync-clusterprofiles: the hub's admission policy binding cpsync-clusterprofiles does not match the namespace ${namespace} (its namespaceSelector) — bind it there (cpsync hub install); the Argo CD subscriber acts on no profile where it is not in force`,
      );
      assert.equal(code, 1);
    } finally {
      await nowhere.remove();
    }
    // Bound in one of two inventory namespaces: the other is named, the first said in force.
    const one = await installAdmissionPolicy(admin, { binding: boundTo(namespace) });
    try {
      assert.equal(await serverRefuses('writer', true, namespace), true, 'refused in the first');
      assert.equal(await serverRefuses('writer', false, projected), false, 'let in in the second');
      const { line, code } = await doctorSays(await configAs('cpsync', 'cpsync', true));
      assert.equal(
        line,
        `✖ admission policy cpsync-clusterprofiles: the hub's admission policy binding cpsync-clusterprofiles does not match the namespace ${projected} (its namespaceSelector) — bind it there (cpsync hub install); in force: only the user cpsync writes the profiles of manager cpsync in ${namespace} (binding cpsync-clusterprofiles, Deny); the Argo CD subscriber acts on no profile where it is not in force`,
      );
      assert.equal(code, 1);
    } finally {
      await one.remove();
    }
  });

  it('says it is not in force when it is absent, and what to apply; the doctor fails', async () => {
    const { line, code } = await doctorSays(await configAs('cpsync'));
    assert.equal(
      line,
      `${NOT_IN_FORCE}the ValidatingAdmissionPolicy cpsync-clusterprofiles is not on the hub${APPLY}`,
    );
    assert.equal(code, 1);
  });

  it('says it is not in force when its binding only warns', async () => {
    const installed = await installAdmissionPolicy(admin, {
      binding: (binding) => ({ ...binding, spec: { ...binding.spec!, validationActions: ['Warn'] } }),
    });
    try {
      const { line } = await doctorSays(await configAs('cpsync'));
      assert.equal(
        line,
        `${NOT_IN_FORCE}the binding cpsync-clusterprofiles does not deny (validationActions: Warn)${APPLY}`,
      );
    } finally {
      await installed.remove();
    }
  });

  it('says it is not in force when its binding is there without the policy', async () => {
    const installed = await installAdmissionPolicy(admin, { policy: false });
    try {
      const { line } = await doctorSays(await configAs('cpsync'));
      assert.equal(
        line,
        `${NOT_IN_FORCE}the ValidatingAdmissionPolicy cpsync-clusterprofiles is not on the hub${APPLY}`,
      );
    } finally {
      await installed.remove();
    }
  });

  it('says it is not in force for a configuration whose manager the policy does not guard', async () => {
    const installed = await installAdmissionPolicy(admin);
    try {
      const { line } = await doctorSays(await configAs('cpsync', 'acme'));
      assert.equal(
        line,
        `${NOT_IN_FORCE}the policy guards the manager "cpsync", this configuration's is "acme" (set its manager variable)${APPLY}`,
      );
    } finally {
      await installed.remove();
    }
  });

  it('says so when the identity may not read the policy, and goes on with the other checks', async () => {
    const installed = await installAdmissionPolicy(admin);
    try {
      const { line, code, stdout } = await doctorSays(await configAs('stranger'));
      assert.match(
        line,
        /^✖ admission policy cpsync-clusterprofiles: cannot tell whether the hub's admission policy cpsync-clusterprofiles is in force: the hub does not let this identity read it \(.*"stranger" cannot get resource "validatingadmissionpolic(y|ies)(bindings)?".*\) — bind the ClusterRole cpsync:admission-policy \(adapters\/hub\/manifests\/rbac\.yaml\); the Argo CD subscriber acts on no profile where it is not in force$/,
      );
      assert.equal(code, 1);
      assert.match(stdout, /^cpsync doctor: \d+ of \d+ checks failed$/m);
    } finally {
      await installed.remove();
    }
  });

  it("says whether cpsync's identity reaches Secrets where the configuration's Argo CD subscriber writes, as the server answers it", async () => {
    const base = JSON.parse(readFileSync(await configAs('cpsync'), 'utf8')) as Record<string, unknown>;
    const config = join(directory, 'with-argocd.json');
    // Argo CD's namespace: the inventory's second namespace will do (the subscriber's default is argocd).
    writeFileSync(config, JSON.stringify({ ...base, subscribers: { argocd: { namespace: projected } } }));
    const secretsLine = (stdout: string) => stdout.match(/^[✔✖] hub secrets .*$/m)?.[0];
    /** The oracle: whether the API server lets cpsync's identity list Secrets there, asked until it answers `expected`. */
    const serverLets = async (expected: boolean) => {
      const core = userKubeConfig(await localHub(), 'cpsync').makeApiClient(CoreV1Api);
      for (let attempt = 0; ; attempt++) {
        const lets = await core.listNamespacedSecret({ namespace: projected }).then(
          () => true,
          (error: { code?: number }) => (error.code === 403 ? false : Promise.reject(error)),
        );
        if (lets === expected || attempt >= 300) return lets;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    };
    assert.equal(await serverLets(false), false);
    assert.equal(
      secretsLine((await doctorSays(config)).stdout),
      `✔ hub secrets ${projected}: cpsync's identity reaches no Secret in ${projected}`,
    );
    // The Secrets Role of an earlier version's printed RBAC, bound to cpsync's identity.
    const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
    await rbac.createNamespacedRole({
      namespace: projected,
      body: {
        metadata: { name: 'cpsync-argocd-clusters' },
        rules: [
          { apiGroups: [''], resources: ['secrets'], verbs: ['get', 'list', 'create', 'update', 'delete'] },
        ],
      },
    });
    await rbac.createNamespacedRoleBinding({
      namespace: projected,
      body: {
        metadata: { name: 'cpsync-argocd-clusters' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'cpsync-argocd-clusters' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'cpsync' }],
      },
    });
    try {
      assert.equal(await serverLets(true), true);
      const { stdout, code } = await doctorSays(config);
      assert.match(
        secretsLine(stdout) ?? '',
        new RegExp(
          `^✖ hub secrets ${projected}: cpsync's identity may get, list, create, update, delete Secrets in ${projected}, where Argo CD reads its clusters: it needs none`,
        ),
      );
      assert.equal(code, 1);
      // Without the subscriber, nothing is said of Secrets.
      assert.equal(secretsLine((await doctorSays(await configAs('cpsync'))).stdout), undefined);
    } finally {
      await rbac.deleteNamespacedRoleBinding({ namespace: projected, name: 'cpsync-argocd-clusters' });
      await rbac.deleteNamespacedRole({ namespace: projected, name: 'cpsync-argocd-clusters' });
    }
  });
});
