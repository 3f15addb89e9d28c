import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { parseAllDocuments } from 'yaml';
import fc from 'fast-check';
import { hubManifests, installedManager, type HubManifest } from '../../../../adapters/hub/hubManifests.ts';

const shipped = (file: string) =>
  parseAllDocuments(
    readFileSync(new URL(`../../../../adapters/hub/manifests/${file}`, import.meta.url), 'utf8'),
  )
    .map((document) => document.toJS() as HubManifest)
    .filter(Boolean);
const key = (m: HubManifest) => `${m.kind}/${m.metadata.namespace ?? ''}/${m.metadata.name}`;
const byKey = (manifests: HubManifest[]) => [...manifests].sort((a, b) => key(a).localeCompare(key(b)));
const one = (manifests: HubManifest[], kind: string, name?: string) =>
  manifests.find((m) => m.kind === kind && (name === undefined || m.metadata.name === name))!;
const variable = (policy: HubManifest, name: string) =>
  (policy.spec as { variables: Array<{ name: string; expression: string }> }).variables.find(
    (v) => v.name === name,
  )!.expression;

describe('the hub manifests made for a configuration and an identity', () => {
  it('are the shipped files themselves for the default configuration and the user cpsync', async () => {
    const made = await hubManifests({
      manager: 'cpsync',
      namespaces: ['cluster-inventory'],
      identity: { kind: 'User', name: 'cpsync' },
    });
    assert.deepEqual(made[0], shipped('crd/multicluster.x-k8s.io_clusterprofiles.yaml')[0]);
    // The namespace with the label the API server gives it anyway (its name): so that the install owns a field of it.
    const files = [...shipped('rbac.yaml'), ...shipped('admission-policy.yaml')].map((m) =>
      m.kind === 'Namespace'
        ? { ...m, metadata: { ...m.metadata, labels: { 'kubernetes.io/metadata.name': m.metadata.name } } }
        : m,
    );
    assert.deepEqual(byKey(made.slice(1)), byKey(files));
  });

  it('apply the CRD first, then the namespaces, the roles and their bindings, and the policy before its binding', async () => {
    const made = await hubManifests({
      manager: 'cpsync',
      namespaces: ['b', 'a'],
      identity: { kind: 'User', name: 'cpsync' },
    });
    assert.deepEqual(
      made.map((m) => m.kind),
      [
        'CustomResourceDefinition',
        'Namespace',
        'Namespace',
        'ClusterRole',
        'ClusterRole',
        'ClusterRole',
        'ClusterRoleBinding',
        'ClusterRoleBinding',
        'RoleBinding',
        'RoleBinding',
        'ValidatingAdmissionPolicy',
        'ValidatingAdmissionPolicyBinding',
      ],
    );
  });

  it('name every inventory namespace: each made, each with its RoleBinding, all in the namespaces rule, and the manager throughout', async () => {
    const made = await hubManifests({
      manager: 'fleet',
      namespaces: ['team-b', 'cluster-inventory', 'kueue-system', 'team-b'],
      identity: { kind: 'User', name: 'system:serviceaccount:cpsync:cpsync' },
    });
    const namespaces = ['cluster-inventory', 'kueue-system', 'team-b'];
    assert.deepEqual(
      made.filter((m) => m.kind === 'Namespace').map((m) => m.metadata.name),
      namespaces,
    );
    const bindings = made.filter((m) => m.kind === 'RoleBinding');
    assert.deepEqual(
      bindings.map((m) => [m.metadata.namespace, m.metadata.name, (m.roleRef as { name: string }).name]),
      namespaces.map((ns) => [ns, 'cpsync:clusterprofiles', 'cpsync:clusterprofiles']),
    );
    const subject = {
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'User',
      name: 'system:serviceaccount:cpsync:cpsync',
    };
    for (const binding of [...bindings, ...made.filter((m) => m.kind === 'ClusterRoleBinding')])
      assert.deepEqual(binding.subjects, [subject], key(binding));
    const rules = (name: string) =>
      one(made, 'ClusterRole', name).rules as Array<{ resources: string[]; resourceNames?: string[] }>;
    assert.deepEqual(rules('cpsync:namespaces').find((r) => r.resourceNames)!.resourceNames, namespaces);
    assert.deepEqual(
      rules('cpsync:clusterprofiles').find((r) => r.resources.includes('configmaps'))!.resourceNames,
      ['fleet-features'],
    );
    const policy = one(made, 'ValidatingAdmissionPolicy');
    assert.equal(variable(policy, 'manager'), "'fleet'");
    assert.equal(variable(policy, 'identity'), "'system:serviceaccount:cpsync:cpsync'");
    assert.equal(variable(policy, 'byCpsync'), 'request.userInfo.username == variables.identity');
    assert.equal(
      (one(made, 'ValidatingAdmissionPolicyBinding').spec as Record<string, unknown>).matchResources,
      undefined,
    );
  });

  it('bind a group: the RBAC subjects and the policy both take any member of it', async () => {
    const made = await hubManifests({
      manager: 'cpsync',
      namespaces: ['cluster-inventory'],
      identity: { kind: 'Group', name: 'cpsync-writers' },
    });
    for (const binding of made.filter(
      (m) => m.kind.endsWith('Binding') && m.kind !== 'ValidatingAdmissionPolicyBinding',
    ))
      assert.deepEqual(binding.subjects, [
        { apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'cpsync-writers' },
      ]);
    const policy = one(made, 'ValidatingAdmissionPolicy');
    assert.equal(variable(policy, 'identity'), "'cpsync-writers'");
    assert.equal(variable(policy, 'byCpsync'), 'variables.identity in request.userInfo.groups');
  });

  it('write an identity a CEL string cannot hold as it is as an escaped literal', async () => {
    const made = await hubManifests({
      manager: 'cpsync',
      namespaces: ['cluster-inventory'],
      identity: { kind: 'User', name: "o'brien\\ops" },
    });
    assert.equal(variable(one(made, 'ValidatingAdmissionPolicy'), 'identity'), '"o\'brien\\\\ops"');
  });

  it('enforce the policy in the inventory namespaces only, when asked, or leave it out', async () => {
    const options = {
      manager: 'cpsync',
      namespaces: ['a', 'b'],
      identity: { kind: 'User' as const, name: 'cpsync' },
    };
    const narrowed = await hubManifests({ ...options, admissionPolicy: { namespaces: ['a', 'b'] } });
    assert.deepEqual(
      (one(narrowed, 'ValidatingAdmissionPolicyBinding').spec as Record<string, unknown>).matchResources,
      {
        namespaceSelector: {
          matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: ['a', 'b'] }],
        },
      },
    );
    const none = await hubManifests({ ...options, admissionPolicy: 'none' });
    assert.deepEqual(
      none.filter((m) => m.kind.startsWith('ValidatingAdmissionPolicy')),
      [],
    );
    // cpsync doctor still reads, by name, whether a policy is there.
    assert.ok(one(none, 'ClusterRole', 'cpsync:admission-policy'));
  });

  it('say whose install they are in the objects the hub keeps, for any manager and identity, and nowhere else (property)', async () => {
    const label = fc.stringMatching(/^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?$/);
    await fc.assert(
      fc.asyncProperty(label, fc.string({ minLength: 1 }), async (manager, identity) => {
        const made = await hubManifests({
          manager,
          namespaces: ['cluster-inventory'],
          identity: { kind: 'User', name: identity },
        });
        const saying = made.filter((m) => installedManager(m) !== undefined);
        assert.deepEqual(saying.map((m) => `${m.kind}/${m.metadata.name}`).sort(), [
          'ClusterRole/cpsync:clusterprofiles',
          'ValidatingAdmissionPolicy/cpsync-clusterprofiles',
        ]);
        for (const m of saying) assert.equal(installedManager(m), manager, `${m.kind} ${m.metadata.name}`);
        // As the hub gives an object back (JSON, with fields of its own), it says the same.
        for (const m of saying)
          assert.equal(
            installedManager({ ...JSON.parse(JSON.stringify(m)), metadata: { ...m.metadata, uid: 'x' } }),
            manager,
          );
      }),
      { numRuns: 40 },
    );
  });
});
