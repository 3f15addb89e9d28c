import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { canonicalServer } from '../../../../../core/domain/endpoints.ts';
import type { ClusterProfile } from '../../../../../core/domain/model/clusterProfile.ts';
import { normalize } from '../../../../../core/domain/normalize.ts';
import { clusterSecretOf } from '../../../../../functions/subscribers/argocd/clusterSecret.ts';
import { eksCluster, gkeCluster, NOW } from '../../../../support/fixtures.ts';
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
      fc.property(
        fc.oneof(
          fc.domain().map((host) => `https://${host}`),
          fc.constantFrom(
            'https://PAYMENTS1234.gr7.eu-west-1.eks.amazonaws.com',
            'https://PAYMENTS1234.gr7.us-east-1.eks.amazonaws.com.evil.example',
            'https://web-dns-abc123.hcp.westeurope.azmk8s.io',
          ),
        ),
        (server) => {
          const made = clusterSecretOf(profileWith(server, 'eks'), { namespace: 'argocd' });
          assert.ok('skipped' in made, server);
          assert.match(made.skipped, /is not/);
        },
      ),
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
  });
});
