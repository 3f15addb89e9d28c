import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { configDocument, parseConfig } from '../../../../adapters/compose/config.ts';
import {
  ConsumerSetupError,
  consumerSetup,
  type ConsumerRequest,
} from '../../../../adapters/compose/consumers.ts';

const ROLE = 'arn:aws:iam::111122223333:role/kueue';
const config = (document: Record<string, unknown> = {}) =>
  parseConfig({
    providers: {
      eks: { accounts: ['111122223333'], regions: ['us-east-1'] },
      aks: { subscriptions: ['00000000-0000-0000-0000-000000000001'] },
    },
    inventory: {
      accessProviderNames: { eks: 'aws' },
      projections: [
        { provider: 'eks', namespaces: ['kueue-system'] },
        { provider: 'aks', namespaces: ['argocd', 'team-a'] },
      ],
    },
    ...document,
  });
const subject = { kind: 'User' as const, name: 'fleet' };
const refused = (request: ConsumerRequest, message: RegExp, from = config()) =>
  assert.throws(
    () => consumerSetup(from, request),
    (error: unknown) => error instanceof ConsumerSetupError && message.test(error.message),
  );

describe('what a consumer needs, from the configuration', () => {
  it('maps each configured cloud, under its configured access provider name, to cpsync credentials in the image', () => {
    const setup = consumerSetup(config(), { kind: 'access-library', subject });
    assert.deepEqual(setup.providerFile, {
      providers: ['aws', 'aks'].map((name) => ({
        name,
        execConfig: {
          apiVersion: 'client.authentication.k8s.io/v1',
          command: '/usr/local/bin/node',
          args: ['/opt/cpsync/cpsync-credentials.mjs'],
          env: [],
          provideClusterInfo: true,
          interactiveMode: 'Never',
        },
      })),
    });
    assert.deepEqual(setup.notes, []);
  });

  it("gives each cloud's plugin flags to that cloud's provider only, and the environment to all", () => {
    const setup = consumerSetup(
      config({ providers: { eks: { accounts: ['111122223333'] }, gke: { projects: ['acme-prod'] } } }),
      {
        kind: 'multicluster-runtime',
        subject,
        command: '/bin/cpsync-credentials',
        plugin: false,
        eksRoleName: 'reader',
        googleCredentials: '/var/run/google.json',
        env: [{ name: 'AWS_REGION', value: 'us-east-1' }],
      },
    );
    assert.deepEqual(
      setup.providerFile!.providers.map((p) => [
        p.name,
        p.execConfig.command,
        p.execConfig.args,
        p.execConfig.env,
      ]),
      [
        [
          'aws',
          '/bin/cpsync-credentials',
          ['--role-name', 'reader'],
          [{ name: 'AWS_REGION', value: 'us-east-1' }],
        ],
        [
          'gke',
          '/bin/cpsync-credentials',
          ['--google-credentials', '/var/run/google.json'],
          [{ name: 'AWS_REGION', value: 'us-east-1' }],
        ],
      ],
    );
  });

  it('names every cloud when the configuration names none, and says so', () => {
    const setup = consumerSetup(parseConfig({}), { kind: 'access-library', subject });
    assert.deepEqual(
      setup.providerFile!.providers.map((p) => p.name),
      ['eks', 'gke', 'aks'],
    );
    assert.match(setup.notes.join('\n'), /names no cloud/);
  });

  it("reads the inventory's own namespace by default, and binds its identity to read ClusterProfiles there", () => {
    const setup = consumerSetup(config(), {
      kind: 'access-library',
      subject,
      namespaces: ['team-a', 'cluster-inventory'],
    });
    assert.deepEqual(setup.namespaces, ['team-a', 'cluster-inventory']);
    assert.deepEqual(consumerSetup(config(), { kind: 'access-library', subject }).namespaces, [
      'cluster-inventory',
    ]);
    assert.deepEqual(setup.rbac![0], {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: {
        name: 'cpsync:clusterprofiles:access-library',
        labels: { 'app.kubernetes.io/name': 'cpsync' },
      },
      rules: [
        {
          apiGroups: ['multicluster.x-k8s.io'],
          resources: ['clusterprofiles'],
          verbs: ['get', 'list', 'watch'],
        },
      ],
    });
    assert.deepEqual(
      setup.rbac!.slice(1).map((b) => [b.kind, b.metadata.namespace, b.subjects]),
      ['team-a', 'cluster-inventory'].map((ns) => [
        'RoleBinding',
        ns,
        [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'fleet' }],
      ]),
    );
  });

  it('leaves the RBAC out, and says what to give, when who the consumer is on the hub is not known', () => {
    const setup = consumerSetup(config(), { kind: 'access-library' });
    assert.equal(setup.rbac, undefined);
    assert.ok(setup.providerFile);
    assert.match(
      setup.notes.join('\n'),
      /for the hub RBAC it needs, say who the program using the access library is on the hub: --subject/,
    );
  });

  it('refuses what cannot be answered, naming it', () => {
    refused(
      { kind: 'access-library', subject, namespaces: ['nowhere'] },
      /--namespace nowhere: cpsync writes no profile there \(the inventory namespaces of this configuration: argocd, cluster-inventory, kueue-system, team-a\)/,
    );
    refused(
      { kind: 'kueue' },
      /kueue-system: cpsync writes no profile there.*inventory\.projections/,
      parseConfig({}),
    );
    refused(
      { kind: 'kueue', namespaces: ['kueue-system', 'team-a'] },
      /Kueue reads ClusterProfiles in its own namespace only/,
    );
    refused(
      { kind: 'argocd-subscriber', plugin: '/opt/cpsync/cpsync-credentials.mjs' },
      /--plugin: .*cpsync command/,
    );
    refused(
      { kind: 'argocd-subscriber', namespaces: ['argocd'] },
      /--namespace: the Argo CD subscriber reads every inventory namespace/,
    );
    refused(
      { kind: 'access-library', subject, eksRoleName: 'a', eksRoleArn: 'arn:aws:iam::1:role/a' },
      /give one/,
    );
    refused(
      { kind: 'access-library', subject, identities: { eks: 'arn:aws:iam::1:role/x' } },
      /consumer\.identities\.eks\.roleArn: must be an IAM role ARN/,
    );
  });

  it('gives Kueue its Configuration: the ClusterProfile gate, its namespace, the credentials providers; its ServiceAccount reads its namespace', () => {
    const setup = consumerSetup(config(), { kind: 'kueue', command: 'node', plugin: 'p.mjs' });
    assert.equal(setup.providerFile, undefined);
    assert.deepEqual(setup.kueueConfiguration, {
      apiVersion: 'config.kueue.x-k8s.io/v1beta2',
      kind: 'Configuration',
      namespace: 'kueue-system',
      featureGates: { MultiKueueClusterProfile: true },
      multiKueue: {
        clusterProfile: {
          credentialsProviders: ['aws', 'aks'].map((name) => ({
            name,
            execConfig: {
              apiVersion: 'client.authentication.k8s.io/v1',
              command: 'node',
              args: ['p.mjs'],
              env: [],
              provideClusterInfo: true,
              interactiveMode: 'Never',
            },
          })),
        },
      },
    });
    assert.deepEqual(setup.rbac![1]!.subjects, [
      { kind: 'ServiceAccount', name: 'kueue-controller-manager', namespace: 'kueue-system' },
    ]);
  });

  it('gives the Argo CD integration the provider file in a ConfigMap its Deployment mounts, and may update profiles (its finalizer)', () => {
    const setup = consumerSetup(config(), { kind: 'argocd-integration' });
    const [configMap, deployment] = setup.argocdIntegration!;
    assert.deepEqual(
      JSON.parse((configMap!.data as Record<string, string>)['providers.json']!),
      setup.providerFile,
    );
    assert.equal(configMap!.metadata.namespace, 'argocd');
    const container = (deployment!.spec as { template: { spec: { containers: Array<{ env: unknown }> } } })
      .template.spec.containers[0]!;
    assert.deepEqual(container.env, [
      {
        name: 'ARGOCD_CLUSTERPROFILE_CONTROLLER_CLUSTER_PROFILE_PROVIDERS_FILE',
        value: '/etc/cpsync/providers.json',
      },
    ]);
    assert.deepEqual((setup.rbac![0]!.rules as Array<{ verbs: string[] }>)[0]!.verbs, [
      'get',
      'list',
      'watch',
      'update',
      'patch',
    ]);
    assert.deepEqual(setup.rbac![1]!.subjects, [
      { kind: 'ServiceAccount', name: 'argocd-clusterprofile-controller', namespace: 'argocd' },
    ]);
  });

  it("gives the Argo CD subscriber its settings, and read on every inventory namespace with its Secrets in Argo CD's", () => {
    const setup = consumerSetup(config(), {
      kind: 'argocd-subscriber',
      eksRoleName: 'reader',
      argocdNamespace: 'gitops',
    });
    assert.deepEqual(setup.argocdSubscriber, {
      environment: {
        ARGOCD_NAMESPACE: 'gitops',
        ARGOCD_CREDENTIALS_COMMAND: 'cpsync',
        ARGOCD_CREDENTIALS_ARGS: '["--role-name","reader"]',
      },
      constructProps: {
        namespace: 'gitops',
        credentialsCommand: 'cpsync',
        credentialsArgs: ['--role-name', 'reader'],
      },
    });
    assert.deepEqual(
      setup
        .rbac!.filter((m) => m.kind === 'RoleBinding')
        .map((m) => [m.metadata.namespace, (m.roleRef as { name: string }).name]),
      [
        ['argocd', 'cpsync:clusterprofiles:argocd'],
        ['cluster-inventory', 'cpsync:clusterprofiles:argocd'],
        ['kueue-system', 'cpsync:clusterprofiles:argocd'],
        ['team-a', 'cpsync:clusterprofiles:argocd'],
        ['gitops', 'cpsync-argocd-clusters'],
      ],
    );
    // It reads the hub's admission policy (it acts only where that keeps others from writing profiles).
    assert.deepEqual(
      setup
        .rbac!.filter((m) => m.kind === 'ClusterRoleBinding')
        .map((m) => [m.metadata.name, (m.roleRef as { name: string }).name]),
      [['cpsync:admission-policy:cpsync-argocd', 'cpsync:admission-policy']],
    );
    // An identity of its own, never cpsync's, and an admission policy on Secrets in Argo CD's namespace alone.
    const subjects = setup.rbac!.flatMap((m) => (m.subjects as object[] | undefined) ?? []);
    assert.deepEqual(
      new Set(subjects.map((s) => JSON.stringify(s))),
      new Set([
        JSON.stringify({ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'cpsync-argocd' }),
      ]),
    );
    const policy = setup.rbac!.find((m) => m.kind === 'ValidatingAdmissionPolicy')!;
    const binding = setup.rbac!.find((m) => m.kind === 'ValidatingAdmissionPolicyBinding')!;
    assert.equal(policy.metadata.name, 'cpsync-argocd-secrets');
    assert.deepEqual(binding.spec, {
      policyName: 'cpsync-argocd-secrets',
      validationActions: ['Deny'],
      matchResources: { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'gitops' } } },
    });
  });

  it("names the Argo CD subscriber's own hub user after the manager, and says how its function becomes it", () => {
    const eksHub = { hub: { eks: { clusterName: 'hub', region: 'eu-west-1' } } };
    const named = consumerSetup(config({ manager: 'platform', ...eksHub }), { kind: 'argocd-subscriber' });
    const policy = named.rbac!.find((m) => m.kind === 'ValidatingAdmissionPolicy')!;
    assert.equal(policy.metadata.name, 'platform-argocd-secrets');
    assert.match(JSON.stringify(policy.spec), /request\.userInfo\.username == 'platform-argocd'/);
    assert.match(
      named.notes.join('\n'),
      /aws eks create-access-entry --cluster-name hub --region eu-west-1 --principal-arn <ArgoCdHubRole> --type STANDARD --username platform-argocd/,
    );
    const kubeconfigHub = {
      hub: { kubeconfigSecretArn: 'arn:aws:secretsmanager:us-east-1:111122223333:secret:hub-AbCdEf' },
    };
    assert.match(
      consumerSetup(config(kubeconfigHub), { kind: 'argocd-subscriber' }).notes.join('\n'),
      /a kubeconfig of the user cpsync-argocd .*subscribers\.argocd\.hubKubeconfigSecretArn/,
    );
    // Named for the manager where two managers' subscribers share a name: its Secrets Role and its policy reading.
    assert.deepEqual(
      named
        .rbac!.filter((m) => m.kind === 'Role' || m.kind === 'ClusterRoleBinding')
        .map((m) => m.metadata.name),
      ['platform-argocd-clusters', 'cpsync:admission-policy:platform-argocd'],
    );
    // Argo CD on another cluster: which objects go there.
    const elsewhere = consumerSetup(
      config({
        subscribers: {
          argocd: { kubeconfigSecretArn: 'arn:aws:secretsmanager:us-east-1:111122223333:secret:argocd' },
        },
      }),
      { kind: 'argocd-subscriber' },
    );
    assert.match(
      elsewhere.notes.join('\n'),
      /Argo CD runs on another cluster \(subscribers\.argocd\.kubeconfigSecretArn\): apply the Role and RoleBinding in argocd and the ValidatingAdmissionPolicy and its binding there, the rest on the hub/,
    );
    // Never cpsync's own identity, nor one the API server stands for others with.
    for (const subject of [
      { kind: 'User', name: 'cpsync' },
      { kind: 'Group', name: 'system:authenticated' },
      { kind: 'User', name: 'system:admin' },
    ] as const)
      refused(
        { kind: 'argocd-subscriber', subject },
        /--subject: the Argo CD subscriber is an identity of its own/,
      );
    // Another subject, as asked: a group's members, a service account.
    for (const [subject, identity] of [
      [{ kind: 'Group', name: 'gitops-writers' }, "'gitops-writers' in request.userInfo.groups"],
      [
        { kind: 'ServiceAccount', namespace: 'ops', name: 'subscriber' },
        "request.userInfo.username == 'system:serviceaccount:ops:subscriber'",
      ],
    ] as const) {
      const spec = JSON.stringify(
        consumerSetup(config(), { kind: 'argocd-subscriber', subject }).rbac!.find(
          (m) => m.kind === 'ValidatingAdmissionPolicy',
        )!.spec,
      );
      assert.ok(spec.includes(JSON.stringify(identity).slice(1, -1)), spec);
    }
  });

  it('makes its consumers: entry from its identities, one the configuration takes as it is', () => {
    const on = config({ features: { accessGrants: 'on' } });
    const setup = consumerSetup(on, { kind: 'kueue', identities: { eks: ROLE } });
    assert.deepEqual(setup.consumerEntry, {
      consumers: [
        {
          name: 'kueue',
          namespaces: ['kueue-system'],
          level: 'edit',
          identities: { eks: { roleArn: ROLE } },
        },
      ],
    });
    const document = configDocument(on);
    assert.equal(parseConfig({ ...document, ...setup.consumerEntry }).consumers[0]!.name, 'kueue');
    assert.match(consumerSetup(on, { kind: 'kueue' }).notes.join('\n'), /give its identities/);
  });

  it("prints a configured consumer's entry as configured, and says when it does not read the namespaces chosen", () => {
    const configured = {
      name: 'argocd',
      namespaces: ['team-a'],
      level: 'admin',
      identities: { eks: { roleArn: ROLE } },
    };
    const setup = consumerSetup(config({ consumers: [configured] }), {
      kind: 'argocd-integration',
      namespaces: ['argocd'],
    });
    assert.deepEqual(setup.consumerEntry, { consumers: [configured] });
    assert.match(setup.notes.join('\n'), /reads team-a, not argocd/);
    // Without --namespace, the namespaces the configured consumer reads.
    assert.deepEqual(
      consumerSetup(config({ consumers: [configured] }), { kind: 'access-library', name: 'argocd', subject })
        .namespaces,
      ['team-a'],
    );
  });
});
