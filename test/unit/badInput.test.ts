import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { stringify } from 'yaml';
import { mapAksCluster } from '../../adapters/aks/mapCluster.ts';
import { mapEksCluster } from '../../adapters/eks/mapCluster.ts';
import { mapGkeCluster } from '../../adapters/gke/mapCluster.ts';
import { iamMember } from '../../adapters/gke/projectRoles.ts';
import { ConfigError, parseConfig } from '../../adapters/compose/config.ts';
import { InvalidClusterError } from '../../core/domain/errors.ts';
import type { ObservedCluster } from '../../core/domain/model/observedCluster.ts';
import { normalize } from '../../core/domain/normalize.ts';
import { inventoryOptions } from '../support/settings.ts';
import { v1alpha2Violations } from '../support/v1alpha2.ts';
import { crdViolations } from '../support/crdSchema.ts';
import { loadConfig } from '../../cli/loadConfig.ts';
import { temporaryDirectory } from '../support/tmp.ts';

const RUNS = 250;
const options = inventoryOptions({
  tagAllowList: ['team', 'env', 'a*'],
  labels: { fromTags: ['team', 'env', 'a*'], prefix: 'cpsync.io/tag-' },
});

/** Any JSON-ish value, including the awkward ones: unicode, huge strings, nulls, numbers as strings. */
const junk = fc.oneof(
  { depthSize: 'small' },
  fc.string({ unit: 'grapheme', maxLength: 80 }),
  fc.string({ minLength: 1000, maxLength: 3000 }),
  fc.integer({ min: -10, max: 1e6 }),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.constant(undefined),
  fc.array(fc.string({ maxLength: 20 }), { maxLength: 5 }),
  fc.dictionary(fc.string({ maxLength: 10 }), fc.string({ maxLength: 30 }), { maxKeys: 5 }),
);

/** A field that is usually of the right type and sometimes not. */
const maybe = <T>(good: fc.Arbitrary<T>) =>
  fc.oneof({ weight: 3, arbitrary: good }, { weight: 1, arbitrary: junk });
const name = fc.oneof(
  fc.stringMatching(/^[a-zA-Z0-9_.-]{1,120}$/),
  fc.string({ unit: 'grapheme', minLength: 1, maxLength: 70 }),
);
const tags = fc.dictionary(fc.string({ minLength: 1, maxLength: 300 }), fc.string({ maxLength: 400 }), {
  maxKeys: 40,
});
const typeList = fc.array(fc.string({ minLength: 1, maxLength: 40 }), { maxLength: 200 });

const eksPayload = fc.record({
  cluster: fc.record(
    {
      name: maybe(name),
      arn: maybe(name.map((n) => `arn:aws:eks:us-east-1:111122223333:cluster/${n}`)),
      endpoint: maybe(fc.oneof(fc.webUrl(), fc.string({ maxLength: 40 }))),
      version: maybe(fc.stringMatching(/^1\.\d{1,2}$/)),
      status: maybe(
        fc.constantFrom('ACTIVE', 'CREATING', 'DELETING', 'FAILED', 'UPDATING', 'PENDING', 'weird'),
      ),
      tags: maybe(tags),
      health: maybe(
        fc.record({
          issues: maybe(
            fc.array(fc.record({ code: maybe(fc.string()), message: maybe(fc.string()) }), { maxLength: 4 }),
          ),
        }),
      ),
      certificateAuthority: maybe(fc.record({ data: maybe(fc.base64String({ maxLength: 200 })) })),
      createdAt: maybe(fc.date({ noInvalidDate: false })),
      resourcesVpcConfig: maybe(
        fc.record({ endpointPublicAccess: maybe(fc.boolean()), endpointPrivateAccess: maybe(fc.boolean()) }),
      ),
    },
    { requiredKeys: [] },
  ),
  nodegroups: fc.array(
    fc.record(
      {
        instanceTypes: maybe(typeList),
        scalingConfig: maybe(
          fc.record({
            desiredSize: maybe(fc.nat(500)),
            minSize: maybe(fc.nat(50)),
            maxSize: maybe(fc.nat(900)),
          }),
        ),
      },
      { requiredKeys: [] },
    ),
    { maxLength: 6 },
  ),
});

const gkePayload = fc.record(
  {
    name: maybe(name),
    location: maybe(fc.constantFrom('us-central1', 'us-central1-a', 'europe-west1-c', '', 'nowhere')),
    selfLink: maybe(fc.webUrl()),
    endpoint: maybe(fc.ipV4()),
    status: maybe(fc.oneof(fc.constantFrom('RUNNING', 'DEGRADED', 'ERROR'), fc.nat(9).map(String))),
    currentMasterVersion: maybe(fc.string({ maxLength: 30 })),
    currentNodeCount: maybe(fc.integer({ min: -3, max: 5000 })),
    nodePools: maybe(
      fc.array(
        fc.record(
          {
            config: maybe(fc.record({ machineType: maybe(fc.string({ maxLength: 30 })) })),
            initialNodeCount: maybe(fc.nat(100)),
            locations: maybe(fc.array(fc.string(), { maxLength: 3 })),
            autoscaling: maybe(
              fc.record({
                enabled: maybe(fc.boolean()),
                minNodeCount: maybe(fc.nat(10)),
                maxNodeCount: maybe(fc.nat(100)),
              }),
            ),
          },
          { requiredKeys: [] },
        ),
        { maxLength: 6 },
      ),
    ),
    resourceLabels: maybe(tags),
    conditions: maybe(
      fc.array(fc.record({ code: maybe(fc.string()), message: maybe(fc.string()) }), { maxLength: 3 }),
    ),
    privateClusterConfig: maybe(
      fc.record({ enablePrivateEndpoint: maybe(fc.boolean()), privateEndpoint: maybe(fc.ipV4()) }),
    ),
  },
  { requiredKeys: [] },
);

const aksPayload = fc.record(
  {
    id: maybe(
      name.map(
        (n) =>
          `/subscriptions/00000000-1111-2222-3333-444444444444/resourceGroups/rg/providers/Microsoft.ContainerService/managedClusters/${n}`,
      ),
    ),
    name: maybe(name),
    location: maybe(fc.constantFrom('westeurope', 'eastus', '')),
    fqdn: maybe(fc.domain()),
    privateFqdn: maybe(fc.domain()),
    provisioningState: maybe(fc.constantFrom('Succeeded', 'Failed', 'Creating', 'Upgrading', 'x')),
    powerState: maybe(fc.record({ code: maybe(fc.constantFrom('Running', 'Stopped')) })),
    kubernetesVersion: maybe(fc.string({ maxLength: 12 })),
    agentPoolProfiles: maybe(
      fc.array(
        fc.record(
          {
            count: maybe(fc.integer({ min: -1, max: 1000 })),
            vmSize: maybe(fc.string({ maxLength: 30 })),
            enableAutoScaling: maybe(fc.boolean()),
            minCount: maybe(fc.nat(10)),
            maxCount: maybe(fc.nat(100)),
          },
          { requiredKeys: [] },
        ),
        { maxLength: 5 },
      ),
    ),
    tags: maybe(tags),
  },
  { requiredKeys: [] },
);

/** Normalizing ends in a typed refusal or in a profile the CRD accepts; nothing else. */
function typedErrorOrValidProfile(observed: ObservedCluster): void {
  let profile;
  try {
    profile = normalize(observed, options, '2026-01-01T00:00:00Z');
  } catch (error) {
    assert.ok(error instanceof InvalidClusterError, `not a typed error: ${String(error)}`);
    assert.ok(error.field.length > 0);
    return;
  }
  assert.deepEqual(crdViolations(profile), []);
  assert.deepEqual(v1alpha2Violations(profile), []);
}

describe('bad input: generated cloud payloads', () => {
  it(`EKS payloads (${RUNS} cases) end in a typed error or a valid profile`, () => {
    fc.assert(
      fc.property(eksPayload, ({ cluster, nodegroups }) =>
        typedErrorOrValidProfile(
          mapEksCluster(cluster as never, nodegroups as never, '111122223333', 'us-east-1'),
        ),
      ),
      { numRuns: RUNS },
    );
  });

  it(`GKE payloads (${RUNS} cases) end in a typed error or a valid profile`, () => {
    fc.assert(
      fc.property(gkePayload, (cluster) =>
        typedErrorOrValidProfile(mapGkeCluster(cluster as never, 'acme-data')),
      ),
      { numRuns: RUNS },
    );
  });

  it(`AKS payloads (${RUNS} cases) end in a typed error or a valid profile`, () => {
    fc.assert(
      fc.property(aksPayload, (cluster) =>
        typedErrorOrValidProfile(mapAksCluster(cluster as never, '00000000-1111-2222-3333-444444444444')),
      ),
      { numRuns: RUNS },
    );
  });

  it(`completely arbitrary values (${RUNS} cases) never crash the mappers`, () => {
    fc.assert(
      fc.property(fc.anything(), fc.anything(), (a, b) => {
        typedErrorOrValidProfile(mapEksCluster(a as never, b as never, '111122223333', 'us-east-1'));
        typedErrorOrValidProfile(mapGkeCluster(a as never, 'acme-data'));
        typedErrorOrValidProfile(mapAksCluster(a as never, '00000000-1111-2222-3333-444444444444'));
      }),
      { numRuns: RUNS },
    );
  });
});

describe('bad input: generated configuration files', () => {
  const field = fc.oneof(junk, fc.dictionary(fc.string({ maxLength: 12 }), junk, { maxKeys: 4 }));
  const document = fc.record(
    {
      manager: maybe(fc.stringMatching(/^[a-z][a-z0-9-]{0,40}$/)),
      inventory: maybe(
        fc.record(
          {
            namespace: maybe(fc.string()),
            deletionGraceListings: maybe(fc.integer({ min: -2, max: 200 })),
            tagAllowList: maybe(fc.array(fc.string())),
          },
          { requiredKeys: [] },
        ),
      ),
      providers: maybe(
        fc.record(
          {
            eks: maybe(
              fc.record(
                {
                  accounts: maybe(fc.array(fc.stringMatching(/^\d{10,13}$/))),
                  regions: maybe(fc.array(fc.string())),
                },
                { requiredKeys: [] },
              ),
            ),
            gke: field,
            aks: field,
          },
          { requiredKeys: [] },
        ),
      ),
      hub: field,
      bus: field,
      sync: field,
    },
    { requiredKeys: [] },
  );

  it(`${RUNS} generated documents are either valid or refused with a ConfigError naming fields`, () => {
    fc.assert(
      fc.property(document, (doc) => {
        try {
          parseConfig(doc, 'generated.yaml');
        } catch (error) {
          assert.ok(error instanceof ConfigError, `not a ConfigError: ${String(error)}`);
          assert.ok(
            error.issues.length > 0 && error.issues.every((i) => /^[\w.[\]()-]+: /.test(i)),
            error.issues.join('\n'),
          );
        }
      }),
      { numRuns: RUNS },
    );
  });

  it(`${RUNS} arbitrary YAML files, well-formed or not, are read by the CLI's loader: accepted or refused with a ConfigError, never a crash`, () => {
    const directory = temporaryDirectory('cpsync-yaml-');
    const file = join(directory, 'cpsync.yaml');
    // YAML written from arbitrary values, and arbitrary text that may not be YAML at all.
    const text = fc.oneof(
      fc.jsonValue().map((value) => stringify(value)),
      fc.string({ unit: 'binary', maxLength: 200 }),
    );
    fc.assert(
      fc.property(text, (yaml) => {
        writeFileSync(file, yaml);
        try {
          loadConfig(file);
        } catch (error) {
          assert.ok(error instanceof ConfigError, `${JSON.stringify(yaml)}: ${String(error)}`);
          assert.ok(error.issues.length > 0);
        }
      }),
      { numRuns: RUNS },
    );
  });
});

describe('bad input: GKE identities that name more than one principal', () => {
  /** Whitespace and invisible characters a copied identity may carry around (or inside) it. */
  const blank = fc.constantFrom(
    ' ',
    '\t',
    '\n',
    '\r',
    '\u00a0',
    '\u2028',
    '\u3000',
    '\ufeff',
    '\u200b',
    '\u2060',
  );
  const fullWidth = (text: string) =>
    text.replace(/[!-~]/g, (c) => String.fromCodePoint(c.codePointAt(0)! - 0x21 + 0xff01));
  const spelling = fc
    .record({
      form: fc.constantFrom(
        'allUsers',
        'allAuthenticatedUsers',
        'domain:',
        'group:',
        'principalSet://',
        'projectOwner:',
        'projectEditor:',
        'projectViewer:',
      ),
      // What follows a prefix: a domain, a group's email, a pool's set, or anything at all.
      rest: fc.oneof(
        fc.domain(),
        fc.emailAddress(),
        fc.constant('iam.googleapis.com/projects/123/locations/global/workloadIdentityPools/ci-pool/*'),
        fc.string({ maxLength: 40 }),
      ),
      deleted: fc.boolean(),
      upper: fc.array(fc.boolean(), { minLength: 64, maxLength: 64 }),
      wide: fc.boolean(),
      before: fc.array(blank, { maxLength: 3 }),
      inside: fc.array(fc.tuple(fc.nat(40), blank), { maxLength: 2 }),
      after: fc.array(blank, { maxLength: 3 }),
    })
    .map(({ form, rest, deleted, upper, wide, before, inside, after }) => {
      let core = `${deleted ? 'deleted:' : ''}${form}`;
      core = [...core].map((c, i) => (upper[i] ? c.toUpperCase() : c.toLowerCase())).join('');
      if (wide) core = fullWidth(core);
      for (const [at, c] of inside)
        core = `${core.slice(0, at % (core.length + 1))}${c}${core.slice(at % (core.length + 1))}`;
      const whole = form === 'allUsers' || form === 'allAuthenticatedUsers';
      return { form, identity: `${before.join('')}${core}${whole ? '' : rest}${after.join('')}` };
    });

  it(`${RUNS} spellings of allUsers, allAuthenticatedUsers, domain:, group:, principalSet:// and the project roles are refused by the configuration, naming the field and the form, and by the GKE adapter`, () => {
    fc.assert(
      fc.property(spelling, ({ form, identity }) => {
        const document = {
          inventory: { projections: [{ provider: 'gke', namespaces: ['argocd'] }] },
          consumers: [
            {
              name: 'argocd',
              namespaces: ['argocd'],
              level: 'view',
              identities: { gke: { principal: identity } },
            },
          ],
        };
        assert.throws(
          () => parseConfig(document, 'generated.yaml'),
          (error: unknown) =>
            error instanceof ConfigError &&
            error.issues.length === 1 &&
            error.issues[0]!.startsWith(
              `consumers[0].identities.gke.principal: names more than one principal (${form});`,
            ),
        );
        assert.throws(() => iamMember(identity), /names more than one principal/);
      }),
      { numRuns: RUNS },
    );
  });
});

describe('the CRD check used above', () => {
  it('does refuse what the apiserver would refuse', () => {
    const profile = normalize(
      mapEksCluster(
        { name: 'x', arn: 'arn:aws:eks:us-east-1:111122223333:cluster/x', status: 'ACTIVE' } as never,
        [],
        '111122223333',
        'us-east-1',
      ),
      options,
      '2026-01-01T00:00:00Z',
    );
    assert.deepEqual(crdViolations(profile), []);
    const broken = structuredClone(profile);
    broken.status!.conditions![0]!.reason = '';
    broken.status!.properties![0]!.value = 'v'.repeat(1025);
    (broken.status!.conditions![1] as { status: string }).status = 'Maybe';
    assert.equal(crdViolations(broken).length >= 3, true, crdViolations(broken).join('\n'));
  });
});
