/**
 * `cpsync doctor` on a Kubernetes hub (the real local kube-apiserver): whether the admission policy that lets only
 * cpsync write its profiles (adapters/hub/manifests/admission-policy.yaml) is in force, read with the identity
 * bound only to adapters/hub/manifests/rbac.yaml, as the command prints it.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CoreV1Api, RbacAuthorizationV1Api, type KubeConfig } from '@kubernetes/client-node';
import { main } from '../../../../cli/program.ts';
import { adminKubeConfig, localHub, uniqueNamespace, userKubeConfig } from '../../../support/hub.ts';
import { ensureShippedRbac, installAdmissionPolicy } from '../../../support/hubManifests.ts';
import { temporaryDirectory } from '../../../support/tmp.ts';

const namespace = uniqueNamespace('doctor');
const POLICY_LINE = /^[✔✖] admission policy cpsync-clusterprofiles: .*$/m;
const APPLY = ' — apply adapters/hub/manifests/admission-policy.yaml';

describe('cpsync doctor: the hub’s admission policy', () => {
  let admin: KubeConfig;
  let directory: string;
  let removeRbac: (() => Promise<void>) | undefined;

  /** A configuration reaching the hub as `user`, with `manager`. */
  async function configAs(user: string, manager = 'cpsync'): Promise<string> {
    const kubeconfig = join(directory, `${user}.kubeconfig`);
    writeFileSync(kubeconfig, userKubeConfig(await localHub(), user).exportConfig(), { mode: 0o600 });
    const file = join(directory, `${user}-${manager}.json`);
    writeFileSync(
      file,
      JSON.stringify({
        manager,
        hub: { kubeconfig },
        inventory: { namespace },
        bus: { jsonl: join(directory, 'events.jsonl') },
        outbox: { directory: join(directory, 'outbox') },
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
    await admin.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: namespace } } });
    removeRbac = await ensureShippedRbac(admin, [
      'ClusterRole/cpsync:clusterprofiles',
      'ClusterRole/cpsync:admission-policy',
      'ClusterRoleBinding/cpsync:admission-policy',
    ]);
    await admin.makeApiClient(RbacAuthorizationV1Api).createNamespacedRoleBinding({
      namespace,
      body: {
        metadata: { name: 'cpsync:clusterprofiles' },
        roleRef: {
          apiGroup: 'rbac.authorization.k8s.io',
          kind: 'ClusterRole',
          name: 'cpsync:clusterprofiles',
        },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'cpsync' }],
      },
    });
  });

  after(async () => {
    try {
      await admin?.makeApiClient(CoreV1Api).deleteNamespace({ name: namespace });
    } finally {
      await removeRbac?.();
    }
  });

  it('says the policy is in force when it and its binding (Deny) are on the hub', async () => {
    const installed = await installAdmissionPolicy(admin);
    try {
      const { line } = await doctorSays(await configAs('cpsync'));
      assert.equal(
        line,
        '✔ admission policy cpsync-clusterprofiles: in force: only the user cpsync writes the profiles of manager cpsync (binding cpsync-clusterprofiles, Deny)',
      );
    } finally {
      await installed.remove();
    }
  });

  it('says it is not in force when it is absent, and what to apply; the doctor fails', async () => {
    const { line, code } = await doctorSays(await configAs('cpsync'));
    assert.equal(
      line,
      `✖ admission policy cpsync-clusterprofiles: not in force: the ValidatingAdmissionPolicy cpsync-clusterprofiles is not on the hub${APPLY}`,
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
        `✖ admission policy cpsync-clusterprofiles: not in force: the binding cpsync-clusterprofiles does not deny (validationActions: Warn)${APPLY}`,
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
        `✖ admission policy cpsync-clusterprofiles: not in force: the ValidatingAdmissionPolicy cpsync-clusterprofiles is not on the hub${APPLY}`,
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
        `✖ admission policy cpsync-clusterprofiles: not in force: the policy guards the manager "cpsync", this configuration's is "acme" (set its manager variable)${APPLY}`,
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
        /^✖ admission policy cpsync-clusterprofiles: cannot tell whether it is in force: the hub does not let this identity read it \(.*"stranger" cannot get resource "validatingadmissionpolic(y|ies)(bindings)?".*\) — bind the ClusterRole cpsync:admission-policy \(adapters\/hub\/manifests\/rbac\.yaml\)$/,
      );
      assert.equal(code, 1);
      assert.match(stdout, /^cpsync doctor: \d+ of \d+ checks failed$/m);
    } finally {
      await installed.remove();
    }
  });
});
