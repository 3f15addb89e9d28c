import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { InvalidClusterError } from '../../../../core/domain/errors.ts';
import type { ClusterProfile } from '../../../../core/domain/model/clusterProfile.ts';
import { normalize, normalizeAll } from '../../../../core/domain/normalize.ts';
import { inventoryNamespaces, type InventoryOptions } from '../../../../core/domain/options.ts';
import { ConfigError } from '../../../../adapters/compose/config.ts';
import { inventoryOptions } from '../../../support/settings.ts';
import { aksCluster, eksCluster, gkeCluster, NOW } from '../../../support/fixtures.ts';
import { crdViolations } from '../../../support/crdSchema.ts';
import { TEST_CA_DATA, TEST_CA_PEM } from '../../../support/certificates.ts';

const options = inventoryOptions();

function prop(profile: ClusterProfile, name: string): string | undefined {
  return profile.status?.properties?.find((p) => p.name === name)?.value;
}
function condition(profile: ClusterProfile, type: string) {
  return profile.status?.conditions?.find((c) => c.type === type);
}

describe('normalize: metadata and spec', () => {
  it('writes the manager label, the cpsync selection labels, the standard topology labels, the cloud and the provider id annotation', () => {
    const profile = normalize(eksCluster(), options, NOW);
    assert.deepEqual(profile.metadata.labels, {
      'x-k8s.io/cluster-manager': 'cpsync',
      'cpsync.io/provider': 'eks',
      'cpsync.io/region': 'us-east-1',
      'cpsync.io/account': '111122223333',
      // KEP-4322's member id: the first 20 hex digits of the SHA-256 of the cluster's ARN.
      'multicluster.x-k8s.io/inventory-member-id': createHash('sha256')
        .update('arn:aws:eks:us-east-1:111122223333:cluster/payments')
        .digest('hex')
        .slice(0, 20),
      'topology.kubernetes.io/region': 'us-east-1',
      'cpsync.io/cloud': 'aws',
    });
    assert.deepEqual(profile.metadata.annotations, {
      'cpsync.io/provider-id': 'arn:aws:eks:us-east-1:111122223333:cluster/payments',
    });
  });

  it('gives every cluster one member id: the same wherever and however it is written, another for another cluster of the same name', () => {
    const MEMBER_ID = 'multicluster.x-k8s.io/inventory-member-id';
    const idOf = (profile: ClusterProfile) => profile.metadata.labels?.[MEMBER_ID];
    const cluster = eksCluster({ tags: { argocd: 'managed', team: 'pay' } });
    const id = idOf(normalize(cluster, options, NOW))!;
    // A label value (KEP-4322: non-empty when set, a valid label value).
    assert.match(id, /^[0-9a-f]{20}$/);
    // Stable: other tags, other label rules, another namespace, another manager, projected copies.
    const elsewhere = inventoryOptions({
      manager: 'fleet',
      namespaceRules: [{ provider: 'eks', namespace: 'eks-inventory' }],
      tagAllowList: ['team'],
      projections: [{ tag: { key: 'argocd', value: 'managed' }, namespaces: ['argocd', 'kueue-system'] }],
    });
    const everywhere = normalizeAll([eksCluster({ tags: { argocd: 'managed' } })], elsewhere, NOW).profiles;
    assert.equal(everywhere.length, 3);
    assert.deepEqual(new Set(everywhere.map(idOf)), new Set([id]));
    assert.deepEqual(
      everywhere.map((p) => p.metadata.labels?.['cpsync.io/cluster']),
      [id, id, id],
      'the alias, where a cluster is written more than once',
    );
    // The same name in another region, another account, another cloud: another member.
    const others = [
      eksCluster({ region: 'eu-west-1', providerId: 'arn:aws:eks:eu-west-1:111122223333:cluster/payments' }),
      eksCluster({
        account: '444455556666',
        providerId: 'arn:aws:eks:us-east-1:444455556666:cluster/payments',
      }),
      gkeCluster({ name: 'payments' }),
      aksCluster({ name: 'payments' }),
    ].map((c) => idOf(normalize(c, options, NOW)));
    assert.equal(new Set([id, ...others]).size, 5);
    // An Azure id in another case is the same cluster: the same member.
    const aks = aksCluster();
    assert.equal(
      idOf(normalize({ ...aks, providerId: aks.providerId.toUpperCase() }, options, NOW)),
      idOf(normalize(aks, options, NOW)),
    );
  });

  it('sets displayName to the cloud name and clusterManager to the manager', () => {
    const profile = normalize(
      gkeCluster({ name: 'Analytics_EU' }),
      inventoryOptions({ manager: 'fleet' }),
      NOW,
    );
    assert.deepEqual(profile.spec, { displayName: 'Analytics_EU', clusterManager: { name: 'fleet' } });
    assert.ok(profile.metadata.name.startsWith('fleet-gke-analytics-eu-'));
    assert.equal(profile.metadata.labels?.['x-k8s.io/cluster-manager'], 'fleet');
  });

  it('keeps nothing that changes on every run in the object', () => {
    const a = normalize(eksCluster(), options, NOW);
    const b = normalize(eksCluster(), options, '2030-01-01T00:00:00Z');
    assert.deepEqual(a.metadata, b.metadata);
    assert.deepEqual(a.spec, b.spec);
  });

  it('uses the default namespace cluster-inventory', () => {
    assert.equal(normalize(eksCluster(), options, NOW).metadata.namespace, 'cluster-inventory');
  });

  it('places clusters by the first matching rule: provider, account, tag', () => {
    const ruled = inventoryOptions({
      namespaceRules: [
        { tag: { key: 'env', value: 'dev' }, namespace: 'dev-inventory' },
        { provider: 'gke', namespace: 'gcp-inventory' },
        { account: '999999999999', namespace: 'sandbox' },
      ],
    });
    assert.equal(
      normalize(eksCluster({ tags: { env: 'dev' } }), ruled, NOW).metadata.namespace,
      'dev-inventory',
    );
    assert.equal(normalize(gkeCluster(), ruled, NOW).metadata.namespace, 'gcp-inventory');
    assert.equal(
      normalize(eksCluster({ account: '999999999999' }), ruled, NOW).metadata.namespace,
      'sandbox',
    );
    assert.equal(normalize(eksCluster(), ruled, NOW).metadata.namespace, 'cluster-inventory');
  });

  it('places by region too', () => {
    const ruled = inventoryOptions({ namespaceRules: [{ region: 'eu-west-1', namespace: 'eu' }] });
    assert.equal(normalize(eksCluster({ region: 'eu-west-1' }), ruled, NOW).metadata.namespace, 'eu');
    assert.equal(normalize(eksCluster(), ruled, NOW).metadata.namespace, 'cluster-inventory');
  });

  it('projects a matching cluster into every namespace its rules name: the same profile, labelled as one cluster', () => {
    const projecting = inventoryOptions({
      clusterSets: { argocd: 'argo' },
      projections: [
        { provider: 'eks', region: 'us-east-1', namespaces: ['kueue-system', 'cluster-inventory'] },
        { tag: { key: 'argocd', value: 'managed' }, namespaces: ['argocd', 'kueue-system'] },
      ],
    });
    const cluster = eksCluster({ tags: { argocd: 'managed' } });
    const [own, ...copies] = normalizeAll([cluster], projecting, NOW).profiles;
    assert.equal(own!.metadata.namespace, 'cluster-inventory');
    assert.deepEqual(
      copies.map((p) => p.metadata.namespace),
      ['kueue-system', 'argocd'],
    );
    const id = own!.metadata.labels?.['cpsync.io/cluster'];
    assert.match(id ?? '', /^[0-9a-f]{20}$/);
    for (const copy of copies) {
      assert.equal(copy.metadata.name, own!.metadata.name);
      assert.equal(copy.metadata.labels?.['cpsync.io/cluster'], id);
      assert.equal(copy.metadata.labels?.['cpsync.io/projected-from'], 'cluster-inventory');
      assert.deepEqual(copy.spec, own!.spec);
      assert.deepEqual(copy.status?.accessProviders, own!.status?.accessProviders);
      assert.deepEqual(copy.status?.conditions, own!.status?.conditions);
      // The same properties, but for the ClusterSet of the namespace the copy is in.
      const others = (p: ClusterProfile) =>
        p.status?.properties?.filter((q) => q.name !== 'clusterset.k8s.io');
      assert.deepEqual(others(copy), others(own!));
      assert.equal(crdViolations(copy).length, 0);
    }
    assert.equal(prop(copies[1]!, 'clusterset.k8s.io'), 'argo');
    assert.equal(prop(own!, 'clusterset.k8s.io'), undefined);
    // No rule matches: one profile, no label. The feature off: the same.
    const alone = normalizeAll([eksCluster({ region: 'eu-west-1' })], projecting, NOW).profiles;
    assert.deepEqual(
      alone.map((p) => p.metadata.labels?.['cpsync.io/cluster']),
      [undefined],
    );
    const off = inventoryOptions({ ...projecting, features: { projections: false } });
    assert.deepEqual(normalizeAll([cluster], off, NOW).profiles, [normalize(cluster, off, NOW)]);
    assert.equal(normalize(cluster, off, NOW).metadata.labels?.['cpsync.io/cluster'], undefined);
  });

  it('gives profiles in a ClusterSet namespace the clusterset.k8s.io property', () => {
    const set = inventoryOptions({ clusterSets: { 'cluster-inventory': 'prod-set' } });
    assert.equal(prop(normalize(eksCluster(), set, NOW), 'clusterset.k8s.io'), 'prod-set');
    assert.equal(prop(normalize(eksCluster(), options, NOW), 'clusterset.k8s.io'), undefined);
  });
});

describe('normalize: topology labels and labels from tags', () => {
  const labelled = inventoryOptions({ labels: { fromTags: ['env', 'team'], prefix: 'cpsync.io/tag-' } });
  const topology = (p: ClusterProfile) =>
    Object.fromEntries(
      Object.entries(p.metadata.labels ?? {}).filter(
        ([key]) => key.startsWith('topology.kubernetes.io/') || key === 'cpsync.io/cloud',
      ),
    );

  it("labels every profile with its region (and a zonal cluster's zone) as Kubernetes' topology labels, and its cloud", () => {
    assert.deepEqual(topology(normalize(eksCluster(), options, NOW)), {
      'topology.kubernetes.io/region': 'us-east-1',
      'cpsync.io/cloud': 'aws',
    });
    assert.deepEqual(topology(normalize(gkeCluster({ zone: 'europe-west1-b' }), options, NOW)), {
      'topology.kubernetes.io/region': 'europe-west1',
      'topology.kubernetes.io/zone': 'europe-west1-b',
      'cpsync.io/cloud': 'gcp',
    });
    assert.deepEqual(topology(normalize(aksCluster(), options, NOW)), {
      'topology.kubernetes.io/region': 'westeurope',
      'cpsync.io/cloud': 'azure',
    });
  });

  it('copies the allow-listed tags to labels, records them, and counts the ones it left out', () => {
    const profile = normalize(
      eksCluster({ tags: { env: 'prod', team: 'Payments Platform', owner: 'jane' } }),
      labelled,
      NOW,
    );
    assert.equal(profile.metadata.labels?.['cpsync.io/tag-env'], 'prod');
    assert.equal(profile.metadata.labels?.['cpsync.io/tag-team'], undefined);
    assert.equal(profile.metadata.labels?.['cpsync.io/tag-owner'], undefined);
    assert.equal(profile.metadata.annotations?.['cpsync.io/labels-from-tags'], 'cpsync.io/tag-env');
    assert.equal(prop(profile, 'cpsync.io/tag-labels-omitted'), '1');
    assert.deepEqual(crdViolations(profile), []);
    // Nothing named, nothing left out: no record, no count.
    const plain = normalize(eksCluster({ tags: { owner: 'Jane Doe' } }), labelled, NOW);
    assert.equal(plain.metadata.annotations?.['cpsync.io/labels-from-tags'], undefined);
    assert.equal(prop(plain, 'cpsync.io/tag-labels-omitted'), undefined);
  });

  it('writes tag keys as label keys with the prefix "", recorded (they are outside cpsync.io/)', () => {
    const bare = inventoryOptions({ labels: { fromTags: ['env', 'example.com/*'], prefix: '' } });
    const profile = normalize(eksCluster({ tags: { env: 'prod', 'example.com/tier': 'gold' } }), bare, NOW);
    assert.equal(profile.metadata.labels?.env, 'prod');
    assert.equal(profile.metadata.labels?.['example.com/tier'], 'gold');
    assert.equal(profile.metadata.annotations?.['cpsync.io/labels-from-tags'], 'env,example.com/tier');
  });

  it('gives every copy of a projected profile the same labels', () => {
    const projecting = inventoryOptions({
      labels: { fromTags: ['env'], prefix: 'cpsync.io/tag-' },
      projections: [{ tag: { key: 'env', value: 'prod' }, namespaces: ['argocd', 'kueue-system'] }],
    });
    const profiles = normalizeAll([eksCluster({ tags: { env: 'prod' } })], projecting, NOW).profiles;
    assert.equal(profiles.length, 3);
    const selectable = (p: ClusterProfile) => {
      const { 'cpsync.io/projected-from': _from, ...labels } = p.metadata.labels ?? {};
      return { labels, record: p.metadata.annotations?.['cpsync.io/labels-from-tags'] };
    };
    for (const copy of profiles.slice(1)) assert.deepEqual(selectable(copy), selectable(profiles[0]!));
    assert.equal(profiles[2]!.metadata.labels?.['cpsync.io/tag-env'], 'prod');
  });

  it('writes no tag label, record or count while the tagLabels feature is off', () => {
    const off = inventoryOptions({
      labels: { fromTags: ['env', 'team'], prefix: 'cpsync.io/tag-' },
      features: { tagLabels: false },
    });
    const cluster = eksCluster({ tags: { env: 'prod', team: 'Payments Platform' } });
    const profile = normalize(cluster, off, NOW);
    assert.deepEqual(profile, normalize(cluster, inventoryOptions(), NOW));
    assert.deepEqual(topology(profile), {
      'topology.kubernetes.io/region': 'us-east-1',
      'cpsync.io/cloud': 'aws',
    });
  });
});

describe('normalize: status', () => {
  it('reports the most precise Kubernetes version the provider gives', () => {
    assert.deepEqual(normalize(gkeCluster(), options, NOW).status?.version, {
      kubernetes: '1.30.5-gke.1014001',
    });
    assert.equal(
      normalize(eksCluster({ kubernetesVersion: undefined }), options, NOW).status?.version,
      undefined,
    );
  });

  it('lists public and private endpoints as a JSON array of host:port (the KEP form), public first', () => {
    const profile = normalize(gkeCluster(), options, NOW);
    assert.deepEqual(JSON.parse(prop(profile, 'cluster-endpoints.k8s.io')!), [
      '34.76.10.20:443',
      '10.0.0.2:443',
    ]);
    // The access provider keeps the full URL.
    assert.equal(profile.status?.accessProviders?.[0]?.cluster?.server, 'https://34.76.10.20');
  });

  it('keeps an explicit port, and IPv6 hosts in brackets', () => {
    const profile = normalize(
      eksCluster({
        endpoints: [
          { url: 'https://api.example:6443/', visibility: 'public' },
          { url: 'https://[fd00::1]', visibility: 'private' },
        ],
      }),
      options,
      NOW,
    );
    assert.deepEqual(JSON.parse(prop(profile, 'cluster-endpoints.k8s.io')!), [
      'api.example:6443',
      '[fd00::1]:443',
    ]);
  });

  it('puts the private endpoint first when configured to prefer it', () => {
    const profile = normalize(gkeCluster(), inventoryOptions({ features: { privateEndpoints: true } }), NOW);
    assert.equal(JSON.parse(prop(profile, 'cluster-endpoints.k8s.io')!)[0], '10.0.0.2:443');
    assert.equal(profile.status?.accessProviders?.[0]?.cluster?.server, 'https://10.0.0.2');
  });

  it('drops endpoints that are not URLs', () => {
    const profile = normalize(
      eksCluster({
        endpoints: [
          { url: 'not a url', visibility: 'public' },
          { url: 'https://ok.example', visibility: 'private' },
        ],
      }),
      options,
      NOW,
    );
    assert.deepEqual(JSON.parse(prop(profile, 'cluster-endpoints.k8s.io')!), ['ok.example:443']);
  });

  it('writes no server a consumer should not send credentials to: only https URLs with a real host', () => {
    const hostile = [
      'http://34.76.10.20',
      'https://34.76.10.20@evil.example.com',
      'https://user:pass@api.example.com',
      'https://kubernetes.default.svc',
      'https://kubernetes.default.svc.cluster.local:443',
      'https://localhost:6443',
      'https://kubernetes',
      'https://api.example.com/?next=https://evil.example.com',
      'https://api.example.com/#x',
      `https://api.example.com/${'a'.repeat(2048)}`,
      'javascript:alert(1)',
      'file:///etc/passwd',
    ];
    for (const url of hostile) {
      const profile = normalize(eksCluster({ endpoints: [{ url, visibility: 'public' }] }), options, NOW);
      assert.deepEqual(profile.status?.accessProviders ?? [], [], url);
      assert.equal(prop(profile, 'cluster-endpoints.k8s.io'), '[]', url);
    }
    // Written in the canonical spelling (core/domain/endpoints.ts): a canonical URL as it came.
    for (const [url, server] of [
      ['https://34.76.10.20', 'https://34.76.10.20'],
      ['https://ABC.gr7.us-east-1.eks.amazonaws.com', 'https://ABC.gr7.us-east-1.eks.amazonaws.com'],
      ['https://[fd00::1]:443', 'https://[fd00::1]'],
    ]) {
      const profile = normalize(
        eksCluster({ endpoints: [{ url: url!, visibility: 'public' }] }),
        options,
        NOW,
      );
      assert.equal(profile.status?.accessProviders?.[0]?.cluster?.server, server, url);
    }
  });

  it('writes loopback servers only for a cloud the configuration reaches on this machine (a local emulator)', () => {
    const local = eksCluster({ endpoints: [{ url: 'https://127.0.0.2', visibility: 'public' }] });
    assert.deepEqual(normalize(local, options, NOW).status?.accessProviders, []);
    const emulated = { ...options, localClouds: ['eks' as const] };
    assert.equal(
      normalize(local, emulated, NOW).status?.accessProviders?.[0]?.cluster?.server,
      'https://127.0.0.2',
    );
    const metadata = eksCluster({ endpoints: [{ url: 'https://169.254.169.254', visibility: 'public' }] });
    assert.deepEqual(normalize(metadata, emulated, NOW).status?.accessProviders, [], 'metadata never');
    const gke = gkeCluster({ endpoints: [{ url: 'https://127.0.0.2', visibility: 'public' }] });
    assert.deepEqual(normalize(gke, emulated, NOW).status?.accessProviders, [], 'another cloud is not local');
  });

  it('writes location as cloud/region, or cloud/zone for zonal clusters, with topology properties', () => {
    const eks = normalize(eksCluster(), options, NOW);
    assert.equal(prop(eks, 'location.topology.k8s.io'), 'aws/us-east-1');
    assert.equal(prop(eks, 'topology.kubernetes.io/region'), 'us-east-1');
    assert.equal(prop(eks, 'topology.kubernetes.io/zone'), undefined);
    const zonal = normalize(gkeCluster({ zone: 'europe-west1-b' }), options, NOW);
    assert.equal(prop(zonal, 'location.topology.k8s.io'), 'gcp/europe-west1-b');
    assert.equal(prop(zonal, 'topology.kubernetes.io/region'), 'europe-west1');
    assert.equal(prop(zonal, 'topology.kubernetes.io/zone'), 'europe-west1-b');
    assert.equal(prop(normalize(aksCluster(), options, NOW), 'location.topology.k8s.io'), 'azure/westeurope');
  });

  it('counts nodes and lists distinct node types sorted', () => {
    const profile = normalize(eksCluster(), options, NOW);
    assert.equal(prop(profile, 'count.node.k8s.io'), '6');
    assert.equal(prop(profile, 'type.node.k8s.io'), '["c6i.xlarge","m6i.large"]');
    assert.equal(prop(profile, 'cpsync.io/node-count-min'), undefined);
  });

  it('writes the autoscaling bounds of the node count when some pool autoscales', () => {
    const nodes = { count: 6, instanceTypes: ['m6i.large'], autoscaling: { min: 2, max: 20 } };
    const profile = normalize(eksCluster({ nodes }), options, NOW);
    assert.equal(prop(profile, 'cpsync.io/node-count-min'), '2');
    assert.equal(prop(profile, 'cpsync.io/node-count-max'), '20');
  });

  it('keeps a node type list too long for one value as valid JSON and says how many were left out', () => {
    const types = Array.from(
      { length: 120 },
      (_, i) => `Standard_NC${String(i).padStart(3, '0')}ads_H100_v5`,
    );
    const profile = normalize(aksCluster({ nodes: { count: 120, instanceTypes: types } }), options, NOW);
    const value = prop(profile, 'type.node.k8s.io')!;
    assert.ok(value.length <= 1024, `${value.length}`);
    const kept = JSON.parse(value) as string[];
    assert.ok(kept.length > 0 && kept.length < 120);
    assert.deepEqual(kept, [...types].sort().slice(0, kept.length));
    assert.equal(prop(profile, 'cpsync.io/node-types-omitted'), String(120 - kept.length));
  });

  it('keeps every property value within 1..1024 characters', () => {
    const profile = normalize(
      eksCluster({ platformVersion: 'p'.repeat(5000), tags: { note: 'n'.repeat(3000) } }),
      inventoryOptions({ tagAllowList: ['note'] }),
      NOW,
    );
    for (const p of profile.status?.properties ?? []) {
      assert.ok(p.value.length >= 1 && p.value.length <= 1024, `${p.name} has ${p.value.length}`);
    }
    assert.ok(prop(profile, 'cpsync.io/platform-version')!.endsWith('…'));
  });

  it('copies only allow-listed tags, exact or by prefix', () => {
    const profile = normalize(
      eksCluster({ tags: { team: 'payments', env: 'prod', 'cost/center': '42', secret: 'x' } }),
      inventoryOptions({ tagAllowList: ['team', 'cost/*'] }),
      NOW,
    );
    const tags = (profile.status?.properties ?? [])
      .filter((p) => p.name.startsWith('cpsync.io/tag.'))
      .map((p) => [p.name, p.value]);
    assert.deepEqual(tags, [
      ['cpsync.io/tag.cost/center', '42'],
      ['cpsync.io/tag.team', 'payments'],
    ]);
    assert.equal(
      normalize(eksCluster(), options, NOW).status?.properties?.some((p) =>
        p.name.startsWith('cpsync.io/tag.'),
      ),
      false,
    );
  });

  it('adds provider extras: platform version, status, power state, resource group, creation time', () => {
    const eks = normalize(eksCluster(), options, NOW);
    assert.equal(prop(eks, 'cpsync.io/platform-version'), 'eks.12');
    assert.equal(prop(eks, 'cpsync.io/status'), 'ACTIVE');
    assert.equal(prop(eks, 'cpsync.io/created-at'), '2024-05-01T10:00:00Z');
    const aks = normalize(aksCluster(), options, NOW);
    assert.equal(prop(aks, 'cpsync.io/power-state'), 'Running');
    assert.equal(prop(aks, 'cpsync.io/resource-group'), 'rg-web');
  });

  it('sorts properties by name and stamps them with the given time', () => {
    const names = normalize(eksCluster(), options, NOW).status!.properties!.map((p) => p.name);
    assert.deepEqual(names, [...names].sort());
    assert.ok(
      normalize(eksCluster(), options, NOW).status!.properties!.every((p) => p.lastObservedTime === NOW),
    );
  });

  it('sets ControlPlaneHealthy from the provider status and Joined=True', () => {
    const profile = normalize(
      aksCluster({ health: { status: 'Succeeded', powerState: 'Stopped', issues: [] } }),
      options,
      NOW,
    );
    assert.deepEqual(
      { ...condition(profile, 'ControlPlaneHealthy'), message: undefined },
      {
        type: 'ControlPlaneHealthy',
        status: 'False',
        reason: 'Stopped',
        message: undefined,
        lastTransitionTime: NOW,
      },
    );
    assert.equal(condition(profile, 'Joined')?.status, 'True');
    assert.equal(condition(profile, 'Joined')?.reason, 'ListedByProvider');
  });

  it('describes access: server, CA data and a non-secret exec extension per cloud', () => {
    const eksProfile = normalize(eksCluster(), options, NOW);
    const eks = eksProfile.status!.accessProviders!;
    assert.equal(eks.length, 1);
    assert.equal(eks[0]!.name, 'eks');
    assert.equal(eks[0]!.cluster!.server, 'https://PAYMENTS1234.gr7.us-east-1.eks.amazonaws.com');
    assert.equal(eks[0]!.cluster!['certificate-authority-data'], TEST_CA_DATA);
    assert.deepEqual(eks[0]!.cluster!.extensions, [
      {
        name: 'client.authentication.k8s.io/exec',
        extension: {
          provider: 'eks',
          clusterName: eksProfile.metadata.name,
          cluster: 'payments',
          clusterId: 'payments',
          region: 'us-east-1',
          accountId: '111122223333',
        },
      },
    ]);
    const aksProfile = normalize(aksCluster(), options, NOW);
    const aks = aksProfile.status!.accessProviders![0]!;
    assert.equal(aks.cluster!['certificate-authority-data'], undefined);
    assert.equal(prop(aksProfile, 'cpsync.io/certificate-authority-omitted'), 'NotProvided');
    assert.deepEqual(aks.cluster!.extensions![0]!.extension, {
      provider: 'aks',
      clusterName: aksProfile.metadata.name,
      cluster: 'web',
      resourceGroup: 'rg-web',
      subscriptionId: '00000000-1111-2222-3333-444444444444',
      location: 'westeurope',
    });
    // A cluster with AAD integration names its tenant (what kubelogin needs).
    const tenant = '72f988bf-86f1-41af-91ab-2d7cd011db47';
    const aad = normalize(aksCluster({ tenantId: tenant }), options, NOW).status!.accessProviders![0]!;
    assert.equal(aad.cluster!.extensions![0]!.extension.tenantId, tenant);
    const gkeProfile = normalize(gkeCluster({ zone: 'europe-west1-b' }), options, NOW);
    assert.deepEqual(gkeProfile.status!.accessProviders![0]!.cluster!.extensions![0]!.extension, {
      provider: 'gke',
      clusterName: gkeProfile.metadata.name,
      cluster: 'analytics',
      location: 'europe-west1-b',
      projectId: 'acme-data',
    });
  });

  it('gives same-named clusters of different regions different clusterName keys (what secretreader reads)', () => {
    const east = normalize(eksCluster({ region: 'us-east-1' }), options, NOW);
    const west = normalize(eksCluster({ region: 'eu-west-1' }), options, NOW);
    const key = (p: ClusterProfile) => p.status!.accessProviders![0]!.cluster!.extensions![0]!.extension;
    assert.notEqual(key(east).clusterName, key(west).clusterName);
    assert.equal(key(east).clusterName, east.metadata.name);
    assert.deepEqual([key(east).clusterId, key(west).clusterId], ['payments', 'payments']);
    assert.deepEqual([key(east).region, key(west).region], ['us-east-1', 'eu-west-1']);
  });

  it('writes CA data only when it is PEM certificates, and says why it left it out', () => {
    const pem = (body: string) =>
      Buffer.from(`-----BEGIN CERTIFICATE-----\n${body}\n-----END CERTIFICATE-----\n`);
    const cases: Array<[string, string]> = [
      ['not base64!', 'NotBase64'],
      ['YWJj=ZGVm', 'NotBase64'],
      ['YWJjZA', 'NotBase64'],
      [' YWJj', 'NotBase64'],
      [Buffer.from('just some bytes').toString('base64'), 'NotPEMCertificates'],
      [
        Buffer.from(TEST_CA_PEM.replaceAll('CERTIFICATE', 'PUBLIC KEY')).toString('base64'),
        'NotPEMCertificates',
      ],
      [pem('MIIB').toString('base64'), 'InvalidCertificate'],
      [
        Buffer.from(`${TEST_CA_PEM}${pem('bm90IGEgY2VydA==').toString()}`).toString('base64'),
        'InvalidCertificate',
      ],
    ];
    for (const [bad, reason] of cases) {
      const profile = normalize(eksCluster({ certificateAuthorityData: bad }), options, NOW);
      const cluster = profile.status!.accessProviders![0]!.cluster!;
      assert.equal(cluster['certificate-authority-data'], undefined, bad);
      assert.equal(prop(profile, 'cpsync.io/certificate-authority-omitted'), reason, bad);
      assert.equal(cluster.server, 'https://PAYMENTS1234.gr7.us-east-1.eks.amazonaws.com');
      assert.deepEqual(crdViolations(profile), []);
    }
    // A bundle of two certificates is kept whole.
    const bundle = Buffer.from(`${TEST_CA_PEM}${TEST_CA_PEM}`).toString('base64');
    const kept = normalize(eksCluster({ certificateAuthorityData: bundle }), options, NOW);
    assert.equal(kept.status!.accessProviders![0]!.cluster!['certificate-authority-data'], bundle);
    assert.equal(prop(kept, 'cpsync.io/certificate-authority-omitted'), undefined);
    // A CA the source could not read says why.
    const unread = normalize(aksCluster({ certificateAuthorityUnavailable: 'AccessDenied' }), options, NOW);
    assert.equal(prop(unread, 'cpsync.io/certificate-authority-omitted'), 'AccessDenied');
  });

  it('names access providers as configured', () => {
    const named = inventoryOptions({
      accessProviderNames: { eks: 'aws-iam', gke: 'gke-gcloud', aks: 'kubelogin' },
    });
    assert.equal(normalize(eksCluster(), named, NOW).status!.accessProviders![0]!.name, 'aws-iam');
    assert.equal(normalize(aksCluster(), named, NOW).status!.accessProviders![0]!.name, 'kubelogin');
  });

  it('handles a cluster still being created: no endpoint, no access provider, health Unknown', () => {
    const profile = normalize(
      eksCluster({
        endpoints: [],
        certificateAuthorityData: undefined,
        health: { status: 'CREATING', issues: [] },
        nodes: { instanceTypes: [] },
      }),
      options,
      NOW,
    );
    assert.equal(prop(profile, 'cluster-endpoints.k8s.io'), '[]');
    assert.deepEqual(profile.status?.accessProviders, []);
    assert.equal(condition(profile, 'ControlPlaneHealthy')?.status, 'Unknown');
    assert.equal(prop(profile, 'count.node.k8s.io'), undefined);
    assert.equal(prop(profile, 'type.node.k8s.io'), undefined);
  });
});

describe('normalize: bad input', () => {
  it('names the missing field', () => {
    assert.throws(
      () => normalize(eksCluster({ providerId: '' }), options, NOW),
      (error: unknown) => error instanceof InvalidClusterError && error.field === 'providerId',
    );
    assert.throws(() => normalize(eksCluster({ region: '  ' }), options, NOW), /region is required/);
    assert.throws(
      () => normalize(eksCluster({ nodes: { count: -1, instanceTypes: [] } }), options, NOW),
      /nodes.count must be a whole number/,
    );
    assert.throws(
      () => normalize({ ...eksCluster(), provider: 'oci' as never }, options, NOW),
      /provider must be one of eks, gke, aks/,
    );
  });

  it('collects per-cluster errors and still normalizes the rest', () => {
    const result = normalizeAll([eksCluster(), eksCluster({ name: '' }), gkeCluster()], options, NOW);
    assert.equal(result.profiles.length, 2);
    assert.equal(result.errors.length, 1);
    assert.equal(result.errors[0]!.field, 'name');
  });

  it('is never given a manager, namespace or grace the configuration refuses (its schema is the one check)', () => {
    const refused = (overrides: Parameters<typeof inventoryOptions>[0], field: RegExp) =>
      assert.throws(
        () => inventoryOptions(overrides),
        (error: unknown) => error instanceof ConfigError && error.issues.some((i) => field.test(i)),
      );
    refused({ manager: 'Bad_Manager' }, /^manager: /);
    refused({ manager: 'm'.repeat(31) }, /^manager: .*at most 30/);
    refused({ namespace: 'Not A Namespace' }, /^inventory\.namespace: /);
    refused({ deletionGraceListings: 0 }, /^inventory\.deletionGraceListings: /);
  });
});

describe('normalize: names from the configuration and the clouds are looked up as their own', () => {
  /** The names the object prototype answers to. */
  const PROTOTYPE_NAMES = Object.getOwnPropertyNames(Object.prototype);

  it('matches no cluster by a tag rule on a prototype name the cluster is not tagged with', () => {
    for (const key of ['constructor', '__proto__', 'toString', 'hasOwnProperty']) {
      const ruled = inventoryOptions({ namespaceRules: [{ tag: { key }, namespace: 'tagged' }] });
      const profile = normalize(eksCluster({ tags: {} }), ruled, NOW);
      assert.equal(profile.metadata.namespace, 'cluster-inventory', key);
    }
  });

  it('gives a namespace named constructor no ClusterSet of the prototype', () => {
    const options = inventoryOptions({
      namespaceRules: [{ provider: 'eks', namespace: 'constructor' }],
      clusterSets: { 'cluster-inventory': 'prod-set' },
      features: { clusterSets: true },
    });
    const profile = normalize(eksCluster(), options, NOW);
    assert.equal(profile.metadata.namespace, 'constructor');
    assert.equal(prop(profile, 'clusterset.k8s.io'), undefined);
    assert.deepEqual(
      inventoryNamespaces(options).find((n) => n.name === 'constructor'),
      { name: 'constructor' },
    );
  });

  it('matches by a prototype name only the clusters tagged with it, and places by it no ClusterSet', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...PROTOTYPE_NAMES),
        fc.option(fc.string({ minLength: 1, maxLength: 5 }), { nil: undefined }),
        fc.dictionary(fc.string({ maxLength: 5 }), fc.string({ maxLength: 5 })),
        fc.boolean(),
        (key, value, otherTags, tagged) => {
          const tags = Object.fromEntries(
            Object.entries(otherTags)
              .filter(([k]) => k !== key)
              .concat(tagged ? [[key, value ?? 'x']] : []),
          );
          // Options as the core takes them: the namespace is the prototype name too (whatever the schema allows).
          const options: InventoryOptions = {
            ...inventoryOptions({ features: { clusterSets: true } }),
            namespaceRules: [{ tag: { key, ...(value !== undefined ? { value } : {}) }, namespace: key }],
            clusterSets: {},
          };
          const profile = normalize(eksCluster({ tags }), options, NOW);
          assert.equal(profile.metadata.namespace, tagged ? key : 'cluster-inventory');
          assert.equal(prop(profile, 'clusterset.k8s.io'), undefined);
          assert.ok(inventoryNamespaces(options).every((n) => n.clusterSet === undefined));
        },
      ),
      { numRuns: 300 },
    );
  });
});
