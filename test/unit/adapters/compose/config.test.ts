import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { parse } from 'yaml';
import { ConfigError, inventoryOptionsOf, parseConfig } from '../../../../adapters/compose/config.ts';

const EXAMPLE = new URL('../../../../cpsync.example.yaml', import.meta.url);

function issues(document: unknown): string[] {
  try {
    parseConfig(document, 'test.yaml');
  } catch (error) {
    assert.ok(error instanceof ConfigError);
    assert.match(error.message, /^invalid configuration in test\.yaml:/);
    return error.issues;
  }
  assert.fail('expected the configuration to be refused');
}

describe('configuration', () => {
  it("takes AKS through Resource Graph wherever ARM's answers are remembered: a DynamoDB outbox with its answers table, or a directory", () => {
    const aks = {
      subscriptions: ['AAAAAAAA-0000-0000-0000-000000000000'],
      listing: 'resourceGraph',
    };
    for (const document of [
      {
        providers: { aks },
        outbox: { table: 'cpsync-outbox' },
        answers: { table: 'cpsync-answers' },
        absences: { table: 'cpsync-absences' },
      },
      { providers: { aks }, outbox: { directory: 'outbox' } },
      { providers: { aks } },
    ])
      assert.equal(parseConfig(document, 'test.yaml').providers.aks?.listing, 'resourceGraph');
  });

  it("refuses the hub's own kubeconfig for the Argo CD subscriber, however its ARN is written (complete or partial)", () => {
    const secret = 'arn:aws:secretsmanager:us-east-1:111122223333:secret:cpsync/hub';
    for (const [hub, given] of [
      [secret, secret],
      [`${secret}-AbC123`, secret],
      [secret, `${secret}-AbC123`],
      [`${secret}-AbC123`, `${secret}-AbC123`],
    ])
      for (const key of ['kubeconfigSecretArn', 'hubKubeconfigSecretArn'])
        assert.deepEqual(
          issues({ hub: { kubeconfigSecretArn: hub }, subscribers: { argocd: { [key]: given } } }),
          [
            `subscribers.argocd.${key}: may name the hub's own kubeconfig (hub.kubeconfigSecretArn, its ARN read complete or partial), cpsync's identity; the Argo CD subscriber reaches the hub as an identity of its own: give it a kubeconfig of that identity (subscribers.argocd.hubKubeconfigSecretArn)`,
          ],
        );
    // Another secret is its own (one named as the hub's and `-` and six characters more may be the hub's, read complete).
    assert.doesNotThrow(() =>
      parseConfig({
        hub: { kubeconfigSecretArn: secret },
        subscribers: { argocd: { hubKubeconfigSecretArn: `${secret}/argocd` } },
      }),
    );
  });

  it('accepts the documented example, every option of it', () => {
    const config = parseConfig(parse(readFileSync(EXAMPLE, 'utf8')), 'cpsync.example.yaml');
    assert.equal(config.providers.eks?.roleName, 'cpsync-reader');
    assert.equal(config.inventory.namespaceRules.length, 4);
    assert.deepEqual(inventoryOptionsOf(config).projections, [
      { provider: 'eks', region: 'us-east-1', namespaces: ['kueue-system'] },
      { tag: { key: 'argocd', value: 'managed' }, namespaces: ['argocd'] },
    ]);
    assert.deepEqual(inventoryOptionsOf(config).clusterSets, { 'cluster-inventory': 'production' });
  });

  it('reads ClusterSets as set → namespaces, and the older namespace → set the same way', () => {
    const rules = [{ provider: 'gke', namespace: 'gcp-inventory' }];
    const listed = parseConfig({
      inventory: {
        namespaceRules: rules,
        clusterSets: { production: ['cluster-inventory', 'gcp-inventory'] },
      },
    });
    assert.deepEqual(inventoryOptionsOf(listed).clusterSets, {
      'cluster-inventory': 'production',
      'gcp-inventory': 'production',
    });
    const older = parseConfig({ inventory: { clusterSets: { 'cluster-inventory': 'production' } } });
    assert.deepEqual(inventoryOptionsOf(older).clusterSets, { 'cluster-inventory': 'production' });
  });

  it('reads a rule’s account and region as the clouds spell them, so a rule written in another case still places', () => {
    const config = parseConfig({
      inventory: {
        namespaceRules: [
          { account: '0000ABCD-1111-2222-3333-444444444444', region: 'West Europe', namespace: 'azure-west' },
        ],
        projections: [{ provider: 'gke', account: 'My-Project', region: 'Europe-West1', namespaces: ['eu'] }],
      },
    });
    const options = inventoryOptionsOf(config);
    assert.deepEqual(options.namespaceRules[0], {
      account: '0000abcd-1111-2222-3333-444444444444',
      region: 'westeurope',
      namespace: 'azure-west',
    });
    assert.deepEqual(options.projections[0], {
      provider: 'gke',
      account: 'my-project',
      region: 'europe-west1',
      namespaces: ['eu'],
    });
  });

  it('reads labels from tags with the default prefix, or the one given ("" too)', () => {
    assert.deepEqual(inventoryOptionsOf(parseConfig({})).labels, { fromTags: [], prefix: 'cpsync.io/tag-' });
    assert.deepEqual(
      inventoryOptionsOf(parseConfig({ inventory: { labels: { fromTags: ['env', 'team-*'], prefix: '' } } }))
        .labels,
      { fromTags: ['env', 'team-*'], prefix: '' },
    );
  });

  it('refuses labels from tags that would clash with cpsync’s own labels or not be label keys, naming each', () => {
    assert.deepEqual(
      issues({
        inventory: {
          labels: {
            prefix: '',
            fromTags: ['env', 'cpsync.io/region', 'topology.kubernetes.io/region', 'Cost Center', 'x-k8s*'],
          },
        },
      }),
      [
        "inventory.labels.fromTags[1]: the tag cpsync.io/region would be the label cpsync.io/region, which is one of cpsync's own labels",
        "inventory.labels.fromTags[2]: the tag topology.kubernetes.io/region would be the label topology.kubernetes.io/region, which is one of cpsync's own labels",
        'inventory.labels.fromTags[3]: the tag Cost Center would be the label Cost Center, which is not a valid label key ([<DNS subdomain>/]<name>, the name 1-63 characters of A-Z a-z 0-9 - _ ., alphanumeric at both ends)',
        "inventory.labels.fromTags[4]: x-k8s* could match a tag whose label would be x-k8s.io/cluster-manager, one of cpsync's own labels",
      ],
    );
    assert.deepEqual(issues({ inventory: { labels: { prefix: 'cpsync.io/', fromTags: ['region'] } } }), [
      "inventory.labels.prefix: a label cpsync.io/<tag key> is in cpsync's own domain (tag labels go under cpsync.io/tag- there)",
    ]);
    assert.deepEqual(issues({ inventory: { labels: { fromTags: ['aws:cloudformation:stack-name'] } } }), [
      'inventory.labels.fromTags[0]: the tag aws:cloudformation:stack-name would be the label cpsync.io/tag-aws:cloudformation:stack-name, which is not a valid label key ([<DNS subdomain>/]<name>, the name 1-63 characters of A-Z a-z 0-9 - _ ., alphanumeric at both ends)',
    ]);
  });

  it('reads a namespace named like a prototype property (constructor) as any other', () => {
    const config = parseConfig({
      inventory: {
        namespaceRules: [{ provider: 'gke', namespace: 'constructor' }],
        clusterSets: { production: ['constructor', 'cluster-inventory'] },
      },
    });
    assert.deepEqual(inventoryOptionsOf(config).clusterSets, {
      constructor: 'production',
      'cluster-inventory': 'production',
    });
  });

  it('reads features as on/off (or true/false) over their defaults, and the older preferPrivateEndpoints', () => {
    assert.deepEqual(parseConfig({}).features, {
      tagProperties: true,
      tagLabels: true,
      privateEndpoints: false,
      clusterSets: true,
      certificateAuthority: true,
      projections: true,
      memberProbe: false,
      accessGrants: false,
    });
    const set = parseConfig({ features: { tagProperties: 'off', privateEndpoints: true } });
    assert.deepEqual(inventoryOptionsOf(set).features, {
      tagProperties: false,
      tagLabels: true,
      privateEndpoints: true,
      clusterSets: true,
      certificateAuthority: true,
      projections: true,
      memberProbe: false,
      accessGrants: false,
    });
    assert.equal(
      parseConfig({ inventory: { preferPrivateEndpoints: true } }).features.privateEndpoints,
      true,
    );
    assert.equal(
      parseConfig({ inventory: { preferPrivateEndpoints: true }, features: { privateEndpoints: 'on' } })
        .features.privateEndpoints,
      true,
    );
  });

  it('refuses a feature that does not exist, a state that is not on or off, and two names saying two things', () => {
    assert.deepEqual(issues({ features: { tagProperty: 'on', clusterSets: 'maybe' } }), [
      'features.tagProperty: no such feature (the features are tagProperties, tagLabels, privateEndpoints, clusterSets, certificateAuthority, projections, memberProbe, accessGrants)',
      'features.clusterSets: must be on or off, got "maybe"',
    ]);
    assert.deepEqual(
      issues({ inventory: { preferPrivateEndpoints: false }, features: { privateEndpoints: 'on' } }),
      [
        'features.privateEndpoints: is on but inventory.preferPrivateEndpoints (its older name) is false; set one',
      ],
    );
  });

  it('fills every default from an empty document', () => {
    const config = parseConfig({});
    assert.equal(config.manager, 'cpsync');
    assert.equal(config.inventory.namespace, 'cluster-inventory');
    assert.equal(config.inventory.deletionGraceListings, 2);
    assert.deepEqual(config.providers, { off: [] });
    assert.equal(config.hub, undefined);
  });

  const bad: Array<[string, unknown, RegExp]> = [
    ['an invalid manager name', { manager: 'Fleet_Manager' }, /^manager: must be a DNS-1123 label/],
    [
      'an AWS account id that is not 12 digits',
      { providers: { eks: { accounts: ['1234'] } } },
      /^providers\.eks\.accounts\[0\]: must be a 12-digit AWS account id/,
    ],
    [
      'a region that is not one',
      { providers: { eks: { accounts: ['111122223333'], regions: ['mars-1'] } } },
      /^providers\.eks\.regions\[0\]: must be an AWS region/,
    ],
    [
      'a subscription id that is not a GUID',
      { providers: { aks: { subscriptions: ['prod'] } } },
      /^providers\.aks\.subscriptions\[0\]: must be a subscription id/,
    ],
    [
      'a secret given inline',
      { providers: { gke: { projects: ['acme-data'], credentials: { json: '{}' } } } },
      /^providers\.gke\.credentials/,
    ],
    [
      'an unknown option',
      { inventory: { namespace: 'x', colour: 'blue' } },
      /^inventory: Unrecognized key: "colour"/,
    ],
    [
      'a namespace that is not a DNS label',
      { inventory: { namespace: 'Cluster Inventory' } },
      /^inventory\.namespace: must be a DNS-1123 label/,
    ],
    [
      'a grace of zero listings',
      { inventory: { deletionGraceListings: 0 } },
      /^inventory\.deletionGraceListings: /,
    ],
    ['a bus without a bus name', { bus: { eventBridge: {} } }, /^bus\.eventBridge\.busName: /],
    [
      'a home region that is not an AWS region',
      { providers: { eks: { accounts: ['111122223333'], homeRegion: 'nowhere' } } },
      /^providers\.eks\.homeRegion: must be an AWS region/,
    ],
    [
      'a file: endpoint',
      { providers: { eks: { accounts: ['111122223333'], endpoint: 'file:///etc/passwd' } } },
      /^providers\.eks\.endpoint: must be an https:\/\/ URL, got "file:\/\/\/etc\/passwd"/,
    ],
    [
      'an ftp: endpoint',
      { providers: { gke: { projects: ['acme-data'], endpoint: 'ftp://example.com' } } },
      /^providers\.gke\.endpoint: must be an https:\/\/ URL/,
    ],
    [
      'a plain http endpoint to another machine',
      {
        providers: {
          aks: {
            subscriptions: ['00000000-0000-0000-0000-000000000000'],
            endpoint: 'http://arm.example.com',
          },
        },
      },
      /^providers\.aks\.endpoint: must be https:\/\/ \(plain http:\/\/ only to this machine/,
    ],
    [
      'a plain http authority host to another machine',
      {
        providers: {
          aks: {
            subscriptions: ['00000000-0000-0000-0000-000000000000'],
            authorityHost: 'http://login.example.com',
          },
        },
      },
      /^providers\.aks\.authorityHost: must be https:\/\//,
    ],
    [
      'an endpoint that carries credentials (never repeated back)',
      {
        providers: {
          gke: { projects: ['acme-data'], endpoint: 'https://user:s3cret-token@proxy.example.com' },
        },
      },
      /^providers\.gke\.endpoint: must not carry credentials \(user:password@\), got "https:\/\/\*\*\*@proxy\.example\.com"$/,
    ],
    [
      'an EventBridge region that is not one',
      { bus: { eventBridge: { busName: 'b', region: 'eu' } } },
      /^bus\.eventBridge\.region: must be an AWS region/,
    ],
    [
      'AKS through Resource Graph with a DynamoDB outbox and nowhere to remember what ARM answered',
      {
        providers: {
          aks: { subscriptions: ['AAAAAAAA-0000-0000-0000-000000000000'], listing: 'resourceGraph' },
        },
        outbox: { table: 'cpsync-outbox' },
      },
      /^answers: is required with a DynamoDB outbox while providers\.aks\.listing is resourceGraph/,
    ],
    [
      'a DynamoDB outbox and nowhere to count the listings that missed each cluster',
      { outbox: { table: 'cpsync-outbox' } },
      /^absences: is required with a DynamoDB outbox while inventory\.deletionGraceListings is more than 1/,
    ],
    [
      'a ClusterSet for a namespace nothing uses',
      { inventory: { clusterSets: { elsewhere: 'prod' } } },
      /^inventory\.clusterSets: elsewhere/,
    ],
    [
      'a namespace in two ClusterSets',
      { inventory: { clusterSets: { prod: ['cluster-inventory'], staging: ['cluster-inventory'] } } },
      /^inventory\.clusterSets\.staging: namespace cluster-inventory stands for two ClusterSets \(prod and staging\)/,
    ],
    [
      'a ClusterSet listing a name that is not a namespace',
      { inventory: { clusterSets: { prod: ['Not_A_Namespace'] } } },
      /^inventory\.clusterSets\.prod\[0\]: must be a DNS-1123 label/,
    ],
    [
      'a projection into a name that is not a namespace',
      { inventory: { projections: [{ provider: 'eks', namespaces: ['Kueue System'] }] } },
      /^inventory\.projections\[0\]\.namespaces\[0\]: must be a DNS-1123 label/,
    ],
    [
      'a projection rule with nowhere to go',
      { inventory: { projections: [{ provider: 'eks', namespaces: [] }] } },
      /^inventory\.projections\[0\]\.namespaces: /,
    ],
    [
      'a member probe slot longer than its period',
      { memberProbe: { everyMinutes: 30, slotMinutes: 60 } },
      /^memberProbe\.slotMinutes: slotMinutes must not be longer than everyMinutes/,
    ],
    [
      'a member deadline longer than the probe budget',
      { memberProbe: { timeoutSeconds: 30, budgetSeconds: 20 } },
      /^memberProbe\.timeoutSeconds: timeoutSeconds must not be longer than budgetSeconds/,
    ],
    [
      'a probe role that is not an IAM role name',
      { memberProbe: { eksRoleName: 'not a role' } },
      /^memberProbe\.eksRoleName: must be an IAM role name/,
    ],
    [
      'a first follow delay longer than the longest',
      { follow: { firstDelaySeconds: 300, maxDelaySeconds: 120 } },
      /^follow\.firstDelaySeconds: firstDelaySeconds must not be longer than maxDelaySeconds/,
    ],
    ['a follow bound of no time', { follow: { maxMinutes: 0 } }, /^follow\.maxMinutes: /],
    ...(
      [
        ['a wildcard', 'arn:aws:iam::111111111111:role/*', /no wildcard/],
        ['a single-character wildcard', 'arn:aws:iam::111111111111:role/admin?', /no wildcard/],
        ["a session's ARN", 'arn:aws:sts::111111111111:assumed-role/admin/me', /not a session's/],
        ['a group', 'arn:aws:iam::111111111111:group/admins', /one IAM role or user/],
        ['an account root', 'arn:aws:iam::111111111111:root', /one IAM role or user/],
        ['an account id', '111111111111', /one IAM role or user/],
      ] as const
    ).map(([what, arn, says]): [string, unknown, RegExp] => [
      `an operator that is ${what}`,
      {
        providers: {
          eks: { accounts: ['111122223333'], operators: ['arn:aws:iam::111111111111:role/ops', arn] },
        },
      },
      new RegExp(`^providers\\.eks\\.operators\\[1\\]: must be .*${says.source}`),
    ]),
  ];
  for (const [title, document, expected] of bad) {
    it(`refuses ${title}, naming the field`, () => {
      const found = issues(document);
      assert.ok(
        found.some((issue) => expected.test(issue)),
        found.join('\n'),
      );
    });
  }

  it('keeps the deletion grace where only cpsync writes: a DynamoDB outbox takes a table for it, or nothing to count when one missed listing deletes', () => {
    const counted = parseConfig(
      { outbox: { table: 'cpsync-outbox' }, absences: { table: 'cpsync-absences' } },
      'test.yaml',
    );
    assert.equal(counted.absences?.table, 'cpsync-absences');
    const uncounted = parseConfig(
      { outbox: { table: 'cpsync-outbox' }, inventory: { deletionGraceListings: 1 } },
      'test.yaml',
    );
    assert.equal(uncounted.absences, undefined);
  });

  it('takes plain http to this machine (local emulators), and Azure subscriptions in one spelling', () => {
    const config = parseConfig({
      providers: {
        gke: { projects: ['acme-data'], endpoint: 'http://127.0.0.1:8080' },
        aks: { subscriptions: ['AAAAAAAA-0000-0000-0000-000000000000'], endpoint: 'http://localhost:9000' },
      },
    });
    assert.deepEqual(config.providers.aks?.subscriptions, ['aaaaaaaa-0000-0000-0000-000000000000']);
    // Clouds reached on this machine (emulators) may report loopback servers; no other may.
    assert.deepEqual(inventoryOptionsOf(config).localClouds, ['gke', 'aks']);
    const remote = parseConfig({
      providers: { gke: { projects: ['acme-data'], endpoint: 'https://container.example.com' } },
    });
    assert.deepEqual(inventoryOptionsOf(remote).localClouds, []);
  });

  it('reads consumers, and refuses an unknown level or identity form, an unbound namespace or a name twice, naming the field', () => {
    const consumer = {
      name: 'argocd',
      namespaces: ['argocd'],
      level: 'edit',
      identities: {
        eks: { roleArn: 'arn:aws:iam::111122223333:role/argocd' },
        gke: { principal: 'argocd@ops-project.iam.gserviceaccount.com' },
        aks: { objectId: '5d1c0e2a-7b3f-4c6d-9e8a-0f1b2c3d4e5f' },
      },
    };
    const inventory = { projections: [{ provider: 'eks', namespaces: ['argocd'] }] };
    assert.deepEqual(inventoryOptionsOf(parseConfig({ inventory, consumers: [consumer] })).consumers, [
      {
        name: 'argocd',
        namespaces: ['argocd'],
        level: 'edit',
        identities: {
          eks: 'arn:aws:iam::111122223333:role/argocd',
          gke: 'argocd@ops-project.iam.gserviceaccount.com',
          aks: '5d1c0e2a-7b3f-4c6d-9e8a-0f1b2c3d4e5f',
        },
      },
    ]);
    // An Entra object id in any case is the one Azure answers in lower case (a role assignment's principalId).
    const upper = { ...consumer, identities: { aks: { objectId: '5D1C0E2A-7B3F-4C6D-9E8A-0F1B2C3D4E5F' } } };
    assert.equal(
      inventoryOptionsOf(parseConfig({ inventory, consumers: [upper] })).consumers?.[0]?.identities.aks,
      '5d1c0e2a-7b3f-4c6d-9e8a-0f1b2c3d4e5f',
    );
    const federated =
      'principal://iam.googleapis.com/projects/123456789/locations/global/workloadIdentityPools/ops-pool/subject/argocd';
    assert.equal(
      parseConfig({ inventory, consumers: [{ ...consumer, identities: { gke: { principal: federated } } }] })
        .consumers[0]!.identities.gke?.principal,
      federated,
    );
    const refused = (changes: Record<string, unknown>) =>
      issues({ inventory, consumers: [{ ...consumer, ...changes }] });
    assert.deepEqual(refused({ level: 'cluster-admin' }), [
      'consumers[0].level: must be view, edit or admin',
    ]);
    assert.match(
      refused({ identities: { eks: { roleArn: 'arn:aws:iam::111122223333:user/argocd' } } })[0]!,
      /^consumers\[0\]\.identities\.eks\.roleArn: must be an IAM role ARN/,
    );
    assert.match(
      refused({ identities: { gke: { principal: 'user:someone@example.com' } } })[0]!,
      /^consumers\[0\]\.identities\.gke\.principal: must be a service account email/,
    );
    assert.match(
      refused({ identities: { aks: { objectId: 'someone' } } })[0]!,
      /^consumers\[0\]\.identities\.aks\.objectId: must be an Entra object id/,
    );
    assert.match(refused({ identities: { eks: { arn: 'x' } } })[0]!, /^consumers\[0\]\.identities\.eks/);
    assert.deepEqual(refused({ identities: {} }), [
      'consumers[0].identities: must name an identity for eks, gke or aks',
    ]);
    assert.deepEqual(refused({ namespaces: ['elsewhere'] }), [
      "consumers[0].namespaces[0]: elsewhere is not the inventory namespace nor any namespace or projection rule's namespace (cpsync writes no profile there)",
    ]);
    assert.deepEqual(
      inventoryOptionsOf(
        parseConfig({ inventory, consumers: [{ ...consumer, memberNamespaces: ['apps', 'apps'] }] }),
      ).consumers?.[0]?.memberNamespaces,
      ['apps'],
    );
    assert.match(
      refused({ memberNamespaces: ['Apps'] })[0]!,
      /^consumers\[0\]\.memberNamespaces\[0\]: must be a DNS-1123 label/,
    );
    assert.deepEqual(issues({ inventory, consumers: [consumer, consumer] }), [
      'consumers[1].name: argocd is named twice',
    ]);
  });

  it('refuses a GKE identity that names more than one principal, in any spelling, naming the field and the form', () => {
    const inventory = { projections: [{ provider: 'gke', namespaces: ['argocd'] }] };
    const refused = (principal: string) =>
      issues({
        inventory,
        consumers: [
          { name: 'argocd', namespaces: ['argocd'], level: 'view', identities: { gke: { principal } } },
        ],
      });
    const because = (form: string) => [
      `consumers[0].identities.gke.principal: names more than one principal (${form}); cpsync grants one service account or one workload identity federation principal per consumer`,
    ];
    assert.deepEqual(refused('allUsers'), because('allUsers'));
    assert.deepEqual(refused('  ALLAUTHENTICATEDUSERS\n'), because('allAuthenticatedUsers'));
    assert.deepEqual(refused('\u00a0allusers\u2028'), because('allUsers'), 'Unicode whitespace around it');
    assert.deepEqual(refused('all\u200bUsers'), because('allUsers'), 'an invisible format character inside');
    assert.deepEqual(refused('ａｌｌＵｓｅｒｓ'), because('allUsers'), 'full-width letters');
    assert.deepEqual(refused('domain:example.com'), because('domain:'));
    assert.deepEqual(refused('Group:platform-admins@example.com'), because('group:'));
    assert.deepEqual(
      refused('principalSet://iam.googleapis.com/projects/123/locations/global/workloadIdentityPools/ci/*'),
      because('principalSet://'),
    );
    assert.deepEqual(refused('projectViewer:acme-data'), because('projectViewer:'));
    assert.deepEqual(refused('deleted:group:old-admins@example.com?uid=1'), because('group:'));
    // One principal each: a service account and a federated subject are still read.
    for (const principal of [
      'allusers@acme-data.iam.gserviceaccount.com',
      'principal://iam.googleapis.com/projects/123/locations/global/workloadIdentityPools/ci-pool/subject/group:x',
    ])
      assert.equal(
        parseConfig({
          inventory,
          consumers: [
            { name: 'argocd', namespaces: ['argocd'], level: 'view', identities: { gke: { principal } } },
          ],
        }).consumers[0]!.identities.gke?.principal,
        principal,
      );
  });

  it('refuses a rule whose account or region no cloud (or not its provider) gives, naming the field, whatever the spelling', () => {
    // Well-formed values of each cloud, as the clouds give them and in other spellings a rule may use.
    const good = {
      eks: {
        accounts: ['111122223333', '000000000000'],
        regions: ['us-east-1', 'cn-north-1', 'us-gov-west-1', 'EU-West-2'],
      },
      gke: {
        accounts: ['acme-prod-1', 'My-Project', 'example.com:acme-data'],
        regions: ['europe-west4', 'us-central1', 'northamerica-northeast1', 'Europe-West1'],
      },
      aks: {
        accounts: ['0000abcd-1111-2222-3333-444444444444', '0000ABCD-1111-2222-3333-444444444444'],
        regions: ['westeurope', 'West Europe', 'eastus2', 'uksouth'],
      },
    } as const;
    const rule = (fields: Record<string, string>) => ({
      inventory: { namespaceRules: [{ ...fields, namespace: 'placed' }] },
    });
    const projection = (fields: Record<string, string>) => ({
      inventory: { projections: [{ ...fields, namespaces: ['copies'] }] },
    });
    fc.assert(
      fc.property(
        fc.constantFrom('eks', 'gke', 'aks' as const),
        fc.boolean(),
        fc.constantFrom('account', 'region' as const),
        fc.nat(),
        fc.constantFrom(rule, projection),
        (cloud, withProvider, field, pick, document) => {
          const values = good[cloud][field === 'account' ? 'accounts' : 'regions'];
          const value = values[pick % values.length]!;
          const fields = { ...(withProvider ? { provider: cloud } : {}), [field]: value };
          parseConfig(document(fields)); // accepted
          // A typo of it: a character dropped or added, a separator changed.
          const typos = [
            value.slice(0, -1) + (field === 'account' ? '' : ''),
            `${value}x-`,
            value.replace(/-/g, '_'),
            `${value} 9`,
          ];
          for (const typo of typos) {
            if (
              Object.values(good).some((g) => g.accounts.concat(g.regions as never).includes(typo as never))
            )
              continue;
            let refused: string[];
            try {
              parseConfig(document({ ...fields, [field]: typo }));
              continue; // still the shape of some cloud (a shorter GCP project id, say): a value a cloud could give
            } catch (error) {
              assert.ok(error instanceof ConfigError, String(error));
              refused = error.issues;
            }
            const where = document === rule ? 'inventory.namespaceRules[0]' : 'inventory.projections[0]';
            assert.ok(
              refused.some(
                (issue) => issue.startsWith(`${where}.${field}:`) && issue.includes(JSON.stringify(typo)),
              ),
              `${typo}: ${refused.join('; ')}`,
            );
          }
        },
      ),
      { numRuns: 200 },
    );
    // Of another cloud than the rule's provider: refused, naming the provider.
    const [issue] = issues(rule({ provider: 'eks', account: '0000abcd-1111-2222-3333-444444444444' }));
    assert.match(
      issue!,
      /^inventory\.namespaceRules\[0\]\.account: must be an AWS account id \(12 digits\) \(the rule's provider is eks\)/,
    );
    // The one the review found: an account id a digit short moved every cluster of the account out of its namespace.
    assert.match(issues(rule({ provider: 'eks', account: '11112222333' }))[0]!, /must be an AWS account id/);
    assert.match(issues(rule({ region: 'us_east_1' }))[0]!, /^inventory\.namespaceRules\[0\]\.region:/);
  });

  it('refuses an empty or malformed list of OUs, which would read as the whole organization', () => {
    const organization = (o: object) => ({ providers: { eks: { accounts: { organization: o } } } });
    assert.match(
      issues(organization({ includeOus: [] }))[0]!,
      /includeOus: must name at least one OU or root/,
    );
    assert.match(issues(organization({ includeOus: ['ou-typo'] }))[0]!, /includeOus\[0\]: must be an OU id/);
    assert.match(issues(organization({ excludeOus: ['sandbox'] }))[0]!, /excludeOus\[0\]: must be an OU id/);
    const read = parseConfig(organization({ includeOus: ['ou-ab12-abcdefgh', 'r-ab12'], excludeOus: [] }));
    assert.deepEqual(read.providers.eks?.accounts, {
      organization: { includeOus: ['ou-ab12-abcdefgh', 'r-ab12'], excludeOus: [] },
    });
  });

  it('refuses a ClusterSet name that cannot be its namespaces’ label value, in either form', () => {
    assert.match(
      issues({ inventory: { clusterSets: { 'Prod Set': ['cluster-inventory'] } } })[0]!,
      /ClusterSet name "Prod Set" must be a label value/,
    );
    assert.match(
      issues({ inventory: { clusterSets: { 'cluster-inventory': 'prod/eu' } } })[0]!,
      /ClusterSet name "prod\/eu" must be a label value/,
    );
    assert.match(
      issues({ inventory: { clusterSets: { [`s${'x'.repeat(63)}`]: ['a'] } } })[0]!,
      /must be a label value/,
    );
    assert.deepEqual(
      parseConfig({ inventory: { clusterSets: { 'prod.eu_1': ['cluster-inventory'] } } }).inventory
        .clusterSets,
      { 'cluster-inventory': 'prod.eu_1' },
    );
  });

  it('refuses two consumers with one identity on a cloud, in any spelling the cloud takes as the same', () => {
    const consumer = (name: string, identities: object) => ({
      name,
      namespaces: ['argocd'],
      level: 'view',
      identities,
    });
    const inventory = { projections: [{ provider: 'eks', namespaces: ['argocd'] }] };
    const cases: Array<[object, object, string]> = [
      [
        { eks: { roleArn: 'arn:aws:iam::111122223333:role/shared' } },
        { eks: { roleArn: 'arn:aws:iam::111122223333:role/Shared' } },
        'eks.roleArn',
      ],
      [
        { gke: { principal: 'ci-runner@acme-ops.iam.gserviceaccount.com' } },
        { gke: { principal: 'ci-runner@acme-ops.iam.gserviceaccount.com' } },
        'gke.principal',
      ],
      [
        { aks: { objectId: '5d1c0e2a-7b3f-4c6d-9e8a-0f1b2c3d4e5f' } },
        { aks: { objectId: '5D1C0E2A-7B3F-4C6D-9E8A-0F1B2C3D4E5F' } },
        'aks.objectId',
      ],
    ];
    for (const [a, b, field] of cases) {
      const found = issues({ inventory, consumers: [consumer('first', a), consumer('second', b)] });
      assert.equal(found.length, 1, found.join('; '));
      assert.match(
        found[0]!,
        new RegExp(
          `^consumers\\[1\\]\\.identities\\.${field.replace('.', '\\.')}: .* is consumer first's identity too`,
        ),
      );
    }
    // One consumer's identities on three clouds, and two consumers with identities of their own: accepted.
    parseConfig({
      inventory,
      consumers: [
        consumer(
          'first',
          cases.reduce((all, [a]) => ({ ...all, ...a }), {}),
        ),
        consumer('second', { eks: { roleArn: 'arn:aws:iam::111122223333:role/other' } }),
      ],
    });
  });

  it('refuses a secret ARN of another shape wherever a secret is named', () => {
    const bad = 'arn:nonsense';
    assert.match(
      issues({ providers: { gke: { projects: ['acme-prod-1'], credentials: { secretArn: bad } } } })[0]!,
      /must be a Secrets Manager secret ARN/,
    );
    assert.match(
      issues({ hub: { kubeconfigSecretArn: bad } })[0]!,
      /hub\.kubeconfigSecretArn: must be a Secrets Manager secret ARN/,
    );
  });

  it('reports every bad field at once', () => {
    assert.equal(issues({ manager: 'X', inventory: { deletionGraceListings: -1 } }).length, 2);
    // What no one field says alone, once every field reads: each problem named, not the first alone.
    const found = issues({
      inventory: { clusterSets: { prod: ['elsewhere'] } },
      consumers: [
        {
          name: 'argocd',
          namespaces: ['nowhere'],
          level: 'view',
          identities: { eks: { roleArn: 'arn:aws:iam::111122223333:role/argocd' } },
        },
      ],
      providers: { eks: { accounts: ['111122223333'], regions: ['us-east-1', 'cn-north-1'] } },
      outbox: { table: 'cpsync-outbox' },
    });
    assert.deepEqual(
      found.map((issue) => issue.slice(0, issue.indexOf(':'))),
      [
        'inventory.clusterSets',
        'consumers[0].namespaces[0]',
        'ledger',
        'absences',
        'providers.eks.regions[1]',
      ],
      found.join('\n'),
    );
  });
});
