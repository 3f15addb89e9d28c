import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { parse } from 'yaml';
import {
  CLUSTER_PROFILE_GROUP,
  CLUSTER_PROFILE_KIND,
  CLUSTER_PROFILE_PLURAL,
  CLUSTER_PROFILE_VERSION,
} from '../../core/domain/model/clusterProfile.ts';

const CRD = new URL(
  '../../adapters/hub/manifests/crd/multicluster.x-k8s.io_clusterprofiles.yaml',
  import.meta.url,
);
/** sha256 of the upstream file (kubernetes-sigs/cluster-inventory-api at 8375ac2). */
const UPSTREAM_SHA256 = '6ff09e298672dac644e85926774e1e5f9768c8a2c94b36e54408f737e05bd1c6';

describe('the vendored ClusterProfile CRD', () => {
  it('is the upstream file, unchanged', () => {
    assert.equal(createHash('sha256').update(readFileSync(CRD)).digest('hex'), UPSTREAM_SHA256);
  });

  it('names the group, version, kind and plural the core writes', () => {
    const crd = parse(readFileSync(CRD, 'utf8'));
    assert.equal(crd.spec.group, CLUSTER_PROFILE_GROUP);
    assert.equal(crd.spec.names.kind, CLUSTER_PROFILE_KIND);
    assert.equal(crd.spec.names.plural, CLUSTER_PROFILE_PLURAL);
    assert.deepEqual(
      crd.spec.versions.map((v: { name: string }) => v.name),
      [CLUSTER_PROFILE_VERSION],
    );
    assert.equal(crd.spec.scope, 'Namespaced');
  });
});
