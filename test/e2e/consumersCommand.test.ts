/**
 * `cpsync consumers <kind>` as a user runs it: what it prints parses back (the whole as YAML or JSON, each part in the
 * form it is used in), shows configuration values as text, and a request it cannot answer exits 2 naming what is wrong.
 * What each consumer does with what it prints is proven by the consumers' own code: test/e2e/consumers.test.ts (the
 * access library, multicluster-runtime), kueue.test.ts (Kueue), argocd.test.ts (the Argo CD integration).
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { hasStackTrace, runCli } from '../support/cli.ts';
import { temporaryDirectory } from '../support/tmp.ts';

const BIDI = '\u202e';

describe('cpsync consumers prints what a consumer needs, in forms that parse back', () => {
  let config: string;
  const consumers = (...args: string[]) => runCli(['consumers', ...args, '--config', config]);

  before(() => {
    const directory = temporaryDirectory('cpsync-consumers-command-');
    config = join(directory, 'cpsync.yaml');
    writeFileSync(
      config,
      stringify({
        providers: {
          eks: { accounts: ['111122223333'], regions: ['us-east-1'] },
          gke: { projects: ['acme-prod'] },
        },
        features: { accessGrants: 'on' },
        inventory: {
          accessProviderNames: { gke: `google${BIDI}evil` },
          projections: [{ provider: 'eks', namespaces: ['kueue-system', 'argocd'] }],
        },
      }),
    );
  });

  it('prints the whole as YAML by default and the same as JSON, every part of the kind in it', async () => {
    const yaml = await consumers(
      'argocd-integration',
      '--identity',
      'eks=arn:aws:iam::111122223333:role/argocd',
    );
    const json = await consumers(
      'argocd-integration',
      '--identity',
      'eks=arn:aws:iam::111122223333:role/argocd',
      '-o',
      'json',
    );
    assert.equal(yaml.code, 0, yaml.stderr);
    assert.equal(json.code, 0, json.stderr);
    const whole = parse(yaml.stdout) as Record<string, unknown>;
    assert.deepEqual(whole, JSON.parse(json.stdout));
    assert.deepEqual(Object.keys(whole), [
      'consumer',
      'namespaces',
      'providerFile',
      'argocdIntegration',
      'rbac',
      'consumerEntry',
    ]);
    assert.deepEqual(whole.namespaces, ['argocd']);
  });

  it('prints each part alone in the form it is used in: the provider file as JSON, manifests as a YAML stream or a JSON List', async () => {
    const file = await consumers('access-library', '--part', 'provider-file');
    assert.equal(file.code, 0, file.stderr);
    const providers = (JSON.parse(file.stdout) as { providers: Array<{ name: string }> }).providers;
    assert.deepEqual(
      providers.map((p) => p.name),
      ['eks', `google${BIDI}evil`],
    );
    // A configuration value that would act on a terminal is written as an escape, and reads back as it is.
    assert.ok(!file.stdout.includes(BIDI));
    const rbac = await consumers('kueue', '--part', 'rbac');
    assert.equal(rbac.code, 0, rbac.stderr);
    assert.deepEqual(
      parseAllDocuments(rbac.stdout).map((d) => (d.toJS() as { kind: string }).kind),
      ['ClusterRole', 'RoleBinding'],
    );
    const list = await consumers('kueue', '--part', 'rbac', '-o', 'json');
    assert.deepEqual(
      (JSON.parse(list.stdout) as { kind: string; items: unknown[] }).items,
      parseAllDocuments(rbac.stdout).map((d) => d.toJS()),
    );
    const kueue = await consumers('kueue', '--part', 'kueue-configuration');
    assert.equal((parse(kueue.stdout) as { namespace: string }).namespace, 'kueue-system');
    assert.ok(!kueue.stdout.includes(BIDI));
    const entry = await consumers(
      'kueue',
      '--identity',
      'gke=kueue-runner@acme-prod.iam.gserviceaccount.com',
      '--part',
      'consumer-entry',
    );
    assert.deepEqual(parse(entry.stdout), {
      consumers: [
        {
          name: 'kueue',
          namespaces: ['kueue-system'],
          level: 'edit',
          identities: { gke: { principal: 'kueue-runner@acme-prod.iam.gserviceaccount.com' } },
        },
      ],
    });
  });

  it('says on stderr what to give for what it leaves out, and keeps stdout to the output', async () => {
    const run = await consumers('multicluster-runtime');
    assert.equal(run.code, 0, run.stderr);
    assert.match(
      run.stderr,
      /for the hub RBAC it needs, say who the multicluster-runtime manager is on the hub: --subject/,
    );
    assert.match(
      run.stderr,
      /accessGrants is on: for the consumers: entry of multicluster-runtime, give its identities/,
    );
    assert.equal((parse(run.stdout) as Record<string, unknown>).rbac, undefined);
  });

  it('refuses what it cannot answer with exit 2, naming it', async () => {
    const cases: Array<[string[], RegExp]> = [
      [['nope'], /command-argument value 'nope' is invalid for argument 'kind'/],
      [
        ['access-library', '--namespace', 'elsewhere'],
        /--namespace elsewhere: cpsync writes no profile there \(the inventory namespaces of this configuration: argocd, cluster-inventory, kueue-system\)/,
      ],
      [
        ['kueue', '--part', 'provider-file'],
        /--part: kueue has no provider-file; its parts: kueue-configuration, rbac/,
      ],
      [
        ['access-library', '--part', 'rbac'],
        /--part: access-library has no rbac \(say who it is on the hub: --subject/,
      ],
      [
        ['access-library', '--subject', 'robot'],
        /expected user:<name>, group:<name> or serviceaccount:<namespace>\/<name>/,
      ],
      [['kueue', '--identity', 'ibm=x'], /expected eks=<IAM role ARN>/],
      [
        ['kueue', '--identity', 'eks=arn:aws:iam::1:role/x'],
        /the consumers: entry for kueue would not be valid: consumer\.identities\.eks\.roleArn/,
      ],
      [['access-library', '--env', '=x'], /expected NAME=VALUE/],
      [
        ['argocd-subscriber', '--plugin', '/opt/cpsync/cpsync-credentials.mjs'],
        /--plugin: the Argo CD subscriber's Secrets run/,
      ],
      [['kueue', '--namespace', `kueue${BIDI}`], /cpsync writes no profile there/],
    ];
    for (const [args, message] of cases) {
      const run = await consumers(...args);
      assert.equal(run.code, 2, `${args.join(' ')}: ${run.stderr}`);
      assert.match(run.stderr, message, args.join(' '));
      assert.equal(run.stdout, '', args.join(' '));
      assert.ok(!run.stderr.includes(BIDI) && !hasStackTrace(run.stderr), run.stderr);
    }
  });
});
