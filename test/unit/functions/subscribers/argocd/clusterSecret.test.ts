import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { canonicalServer } from '../../../../../core/domain/endpoints.ts';
import type { ClusterProfile } from '../../../../../core/domain/model/clusterProfile.ts';
import { normalize } from '../../../../../core/domain/normalize.ts';
import { LABEL_CLUSTER_MANAGER } from '../../../../../core/domain/constants.ts';
import { PROVIDERS, type Provider } from '../../../../../core/domain/model/observedCluster.ts';
import {
  clusterSecretOf,
  DISPLAY_NAME_ANNOTATION,
  isManagersSecret,
  type ClusterSecret,
} from '../../../../../functions/subscribers/argocd/clusterSecret.ts';
import { aksCluster, eksCluster, gkeCluster, NOW } from '../../../../support/fixtures.ts';
import { asEarlierVersionWrote } from '../../../../support/argocdSecrets.ts';
import { inventoryOptions } from '../../../../support/settings.ts';

const labelsOf = (profile: ClusterProfile) => {
  const made = clusterSecretOf(profile, { namespace: 'argocd' });
  assert.ok('secret' in made, JSON.stringify(made));
  return made.secret.metadata.labels;
};

describe('the Argo CD subscriber’s cluster Secret: the labels selectors choose by', () => {
  it('carries the standard topology labels and the cloud of every profile', () => {
    const labels = labelsOf(normalize(gkeCluster({ zone: 'europe-west1-b' }), inventoryOptions(), NOW));
    assert.equal(labels['topology.kubernetes.io/region'], 'europe-west1');
    assert.equal(labels['topology.kubernetes.io/zone'], 'europe-west1-b');
    assert.equal(labels['cpsync.io/cloud'], 'gcp');
    assert.equal(labels['cpsync.io/provider'], 'gke');
  });

  it('carries the labels cpsync copied from the cluster’s tags, under the default prefix or none', () => {
    const tags = { env: 'prod', team: 'payments', owner: 'jane' };
    const prefixed = inventoryOptions({ labels: { fromTags: ['env', 'team'], prefix: 'cpsync.io/tag-' } });
    const secret = labelsOf(normalize(eksCluster({ tags }), prefixed, NOW));
    assert.equal(secret['cpsync.io/tag-env'], 'prod');
    assert.equal(secret['cpsync.io/tag-team'], 'payments');
    assert.equal(secret['cpsync.io/tag-owner'], undefined, 'a tag not allow-listed');
    const bare = inventoryOptions({ labels: { fromTags: ['env'], prefix: '' } });
    assert.equal(labelsOf(normalize(eksCluster({ tags }), bare, NOW)).env, 'prod');
  });

  it('copies no label of the profile cpsync did not record, and none over the Secret’s own', () => {
    const profile = normalize(
      eksCluster({ tags: { env: 'prod' } }),
      inventoryOptions({ labels: { fromTags: ['env'], prefix: '' } }),
      NOW,
    );
    // Another writer's label, and a record naming labels of the Secret's own (what a forger without the admission
    // policy could write): the Secret's own stay as the subscriber sets them.
    profile.metadata.labels = {
      ...profile.metadata.labels,
      team: 'theirs',
      'argocd.argoproj.io/secret-type': 'repository',
      'app.kubernetes.io/managed-by': 'someone',
      'cpsync.io/clusterset': 'forged',
    };
    profile.metadata.annotations = {
      ...profile.metadata.annotations,
      'cpsync.io/labels-from-tags':
        'app.kubernetes.io/managed-by,argocd.argoproj.io/secret-type,cpsync.io/clusterset,env,missing',
    };
    const labels = labelsOf(profile);
    assert.equal(labels.env, 'prod');
    assert.equal(labels.team, undefined);
    assert.equal(labels.missing, undefined);
    assert.equal(labels['argocd.argoproj.io/secret-type'], 'cluster');
    assert.equal(labels['app.kubernetes.io/managed-by'], 'cpsync');
    assert.equal(labels['cpsync.io/clusterset'], undefined, 'the profile is in no ClusterSet');
  });
});

describe('the Argo CD subscriber’s cluster Secret: the server Argo CD sends the token to', () => {
  /** Servers no EKS cluster of us-east-1 is reached at: any name, another region's endpoint, AKS's, a look-alike. */
  const notOfUsEast1Eks = fc.oneof(
    fc.domain().map((host) => `https://${host}`),
    fc.constantFrom(
      'https://PAYMENTS1234.gr7.eu-west-1.eks.amazonaws.com',
      'https://PAYMENTS1234.gr7.us-east-1.eks.amazonaws.com.evil.example',
      'https://web-dns-abc123.hcp.westeurope.azmk8s.io',
    ),
  );
  const profileWith = (server: string, provider: 'eks' | 'gke' = 'gke') => {
    const profile = normalize(provider === 'gke' ? gkeCluster() : eksCluster(), inventoryOptions(), NOW);
    profile.status!.accessProviders = profile.status!.accessProviders!.map((a) => ({
      ...a,
      cluster: { ...a.cluster!, server },
    }));
    return profile;
  };

  it('makes no Secret of a server cpsync would not write, whoever wrote the profile', () => {
    for (const server of [
      'http://169.254.169.254/latest',
      'https://169.254.169.254',
      'https://127.0.0.1:6443',
      'https://user@evil.example.com',
      'https://metadata.goog',
      'https://[::ffff:127.0.0.1]',
      'https://[2002:a9fe:a9fe::]',
      'https://kubernetes.default.svc',
      // Another spelling of a server cpsync would write: not its one spelling.
      'https://API.example.com:443/',
      'https://34.76.10.20/',
    ]) {
      const made = clusterSecretOf(profileWith(server), { namespace: 'argocd' });
      assert.ok('skipped' in made, server);
      assert.match(made.skipped, /is not one cpsync writes/);
    }
  });

  it("makes no Secret that would send a cluster's token to a server such a cluster is not reached at", () => {
    const own = profileWith('https://PAYMENTS1234.gr7.us-east-1.eks.amazonaws.com', 'eks');
    assert.ok('secret' in clusterSecretOf(own, { namespace: 'argocd' }));
    fc.assert(
      fc.property(notOfUsEast1Eks, (server) => {
        const made = clusterSecretOf(profileWith(server, 'eks'), { namespace: 'argocd' });
        assert.ok('skipped' in made, server);
        assert.match(made.skipped, /is not/);
      }),
      { numRuns: 100 },
    );
    // The extension naming a cluster of another cloud than the profile's.
    const crossed = profileWith('https://PAYMENTS1234.gr7.us-east-1.eks.amazonaws.com', 'eks');
    const access = crossed.status!.accessProviders![0]!.cluster!;
    access.extensions = access.extensions!.map((e) => ({
      ...e,
      extension: { provider: 'aks', cluster: 'web', tenantId: '0c1d2e3f-0000-4000-8000-000000000001' },
    }));
    const made = clusterSecretOf(crossed, { namespace: 'argocd' });
    assert.ok('skipped' in made);
    assert.match(made.skipped, /names a cluster of aks, and the profile is of "eks"/);
  });

  it('makes the Secret of any server in the one spelling cpsync writes; loopback only for a local cloud', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.domain().map((host) => `https://${host}`),
          fc.ipV4().map((address) => `https://${address}`),
          fc.ipV6().map((address) => `https://[${address}]`),
        ),
        fc.constantFrom('', ':6443', '/k8s/clusters/c-1'),
        (base, rest) => {
          const given = `${base}${rest}`;
          const written = canonicalServer(given);
          const made = clusterSecretOf(profileWith(given), { namespace: 'argocd' });
          if (written === given) {
            assert.ok('secret' in made, given);
            assert.equal(Buffer.from(made.secret.data.server!, 'base64').toString(), given);
          } else assert.ok('skipped' in made, given);
        },
      ),
      { numRuns: 300 },
    );
    const local = profileWith('https://127.0.0.2:6443');
    assert.ok('skipped' in clusterSecretOf(local, { namespace: 'argocd', localClouds: ['eks'] }));
    assert.ok('secret' in clusterSecretOf(local, { namespace: 'argocd', localClouds: ['gke'] }));
    // A local cloud adds its loopback servers, nothing else: an EKS profile's server off EKS's domain stays refused.
    fc.assert(
      fc.property(notOfUsEast1Eks, (server) => {
        const made = clusterSecretOf(profileWith(server, 'eks'), {
          namespace: 'argocd',
          localClouds: ['eks', 'gke', 'aks'],
        });
        assert.ok('skipped' in made, server);
        assert.match(made.skipped, /is not an EKS endpoint in us-east-1/);
      }),
      { numRuns: 100 },
    );
    assert.ok(
      'secret' in
        clusterSecretOf(profileWith('https://127.0.0.2:6443', 'eks'), {
          namespace: 'argocd',
          localClouds: ['eks'],
        }),
    );
  });
});

describe('the Argo CD subscriber’s cluster Secret: whose it is', () => {
  const FIXTURES = { eks: eksCluster, gke: gkeCluster, aks: aksCluster };
  const label = fc.stringMatching(/^[a-z]([a-z0-9-]{0,10}[a-z0-9])?$/);

  /** The Secret `manager` writes for its profile of the cluster, and the same as a version before this one wrote it. */
  function secretsOf(manager: string, provider: Provider, name: string, account: string) {
    const cluster = FIXTURES[provider]({
      name,
      account: provider === 'eks' ? account : `${provider}-${account}`,
    });
    const made = clusterSecretOf(normalize(cluster, inventoryOptions({ manager }), NOW), {
      namespace: 'argocd',
      manager,
    });
    assert.ok('secret' in made, JSON.stringify(made));
    const labelled: ClusterSecret = made.secret;
    assert.equal(labelled.metadata.labels[LABEL_CLUSTER_MANAGER], manager);
    const earlier = asEarlierVersionWrote(labelled);
    return { labelled, earlier };
  }

  it("is its manager's alone, labelled or made before Secrets named their manager, whatever the managers' names begin with (property)", () => {
    fc.assert(
      fc.property(
        label,
        fc.constantFrom(...PROVIDERS),
        fc.option(label, { nil: undefined }),
        label,
        // Clusters of names that begin as the managers' names continue (`eks-web` of `cpsync` is `cpsync-eks-eks-web-…`,
        // `web` of `cpsync-eks` too), in accounts the managers share.
        fc.array(
          fc.record({
            manager: fc.nat(2),
            provider: fc.constantFrom(...PROVIDERS),
            prefix: fc.constantFrom('', ...PROVIDERS.map((p) => `${p}-`)),
            name: fc.constantFrom('web', 'batch', 'eks', 'gke', 'aks', 'web-eks'),
            account: fc.constantFrom('111111111111', '222222222222'),
          }),
          { minLength: 1, maxLength: 6 },
        ),
        (base, continued, tail, other, clusters) => {
          // A manager whose every name begins as `base`'s names of one provider do, and one of its own.
          const managers = [base, `${base}-${continued}${tail ? `-${tail}` : ''}`.slice(0, 30), other];
          fc.pre(managers[1]!.endsWith('-') === false && new Set(managers).size === 3);
          for (const c of clusters) {
            const manager = managers[c.manager]!;
            const { labelled, earlier } = secretsOf(manager, c.provider, `${c.prefix}${c.name}`, c.account);
            for (const judge of managers) {
              const expected = judge === manager;
              assert.equal(
                isManagersSecret(labelled, judge),
                expected,
                `${labelled.metadata.name} judged by ${judge}`,
              );
              assert.equal(
                isManagersSecret(earlier, judge),
                expected,
                `${earlier.metadata.name}, made before Secrets named their manager, judged by ${judge}`,
              );
            }
          }
        },
      ),
      { numRuns: 200 },
    );
  });

  it("is no manager's when cpsync did not write it: no managed-by label, or (made earlier) no cluster it names", () => {
    const { labelled, earlier } = secretsOf('cpsync', 'eks', 'web', '111111111111');
    const without = (secret: ClusterSecret, key: 'labels' | 'annotations', name: string) => {
      const { [name]: _left, ...rest } = secret.metadata[key];
      return { ...secret, metadata: { ...secret.metadata, [key]: rest } };
    };
    assert.equal(isManagersSecret(earlier, 'cpsync'), true);
    assert.equal(
      isManagersSecret(without(labelled, 'labels', 'app.kubernetes.io/managed-by'), 'cpsync'),
      false,
    );
    for (const annotation of ['cpsync.io/provider-id', DISPLAY_NAME_ANNOTATION])
      assert.equal(
        isManagersSecret(without(earlier, 'annotations', annotation), 'cpsync'),
        false,
        annotation,
      );
    assert.equal(isManagersSecret(without(earlier, 'labels', 'cpsync.io/provider'), 'cpsync'), false);
    // Made earlier of another cluster than it names: not a name the manager gives the cluster.
    const moved = {
      ...earlier,
      metadata: {
        ...earlier.metadata,
        annotations: { ...earlier.metadata.annotations, [DISPLAY_NAME_ANNOTATION]: 'batch' },
      },
    };
    assert.equal(isManagersSecret(moved, 'cpsync'), false);
  });
});
