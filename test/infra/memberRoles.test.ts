/** The roles cpsync asks member accounts to create (CpsyncMemberRoles): what they trust and what they allow. */
import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { App, Stack, Validations } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { CpsyncMemberRoles } from '../../infra/CpsyncMemberRoles.ts';
import { CpsyncStack } from '../../infra/CpsyncStack.ts';
import { decide, grantsOf, rolePolicies } from '../support/iam.ts';
import { CONFIG, NO_BUNDLING } from '../support/infra.ts';
import { placeholderRefs, templateResolver, type CfnResource } from '../support/template.ts';
import { temporaryDirectory } from '../support/tmp.ts';

describe('the member account roles', () => {
  let outdir: string;
  let template: Template;

  before(() => {
    outdir = temporaryDirectory('cpsync-member-roles-');
    const app = new App({ outdir });
    const stack = new Stack(app, 'Member', { env: { account: '210987654321', region: 'us-east-1' } });
    new CpsyncMemberRoles(stack, 'Cpsync', {
      cpsyncAccount: '123456789012',
      externalId: 'my-external-id',
      probeRoleName: 'cpsync-probe',
    });
    Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
    app.synth();
    template = Template.fromStack(stack);
  });
  after(() => rmSync(outdir, { recursive: true, force: true }));

  it('synthesizes with zero unacknowledged cdk-nag AwsSolutions findings', () => {
    const report = JSON.parse(readFileSync(join(outdir, 'validation-report.json'), 'utf8')) as {
      pluginReports: unknown[];
    };
    assert.deepEqual(report.pluginReports, []);
  });

  it('the reader trusts the cpsync account with the external id, and may only read clusters, node groups and regions', () => {
    const roles = template.findResources('AWS::IAM::Role');
    const reader = Object.values(roles).find((r) => r.Properties.RoleName === 'cpsync-reader')!;
    assert.deepEqual(reader.Properties.AssumeRolePolicyDocument.Statement, [
      {
        Action: 'sts:AssumeRole',
        Condition: { StringEquals: { 'sts:ExternalId': 'my-external-id' } },
        Effect: 'Allow',
        Principal: {
          AWS: { 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':iam::123456789012:root']] },
        },
      },
    ]);
    const actions = (
      reader.Properties.Policies as Array<{ PolicyDocument: { Statement: Array<{ Action: unknown }> } }>
    )
      .flatMap((p) => p.PolicyDocument.Statement)
      .flatMap((s) => [s.Action].flat())
      .sort();
    assert.deepEqual(actions, [
      'ec2:DescribeRegions',
      'eks:DescribeCluster',
      'eks:DescribeNodegroup',
      'eks:ListClusters',
      'eks:ListNodegroups',
    ]);
    const probe = Object.values(roles).find((r) => r.Properties.RoleName === 'cpsync-probe')!;
    assert.equal(probe.Properties.Policies, undefined, 'the probe role needs no IAM permission');
    assert.deepEqual(Object.keys(template.findResources('AWS::IAM::Policy')), []);
  });

  it('IAM lets the functions that probe members assume the probe role (as the probe signs, without an external id), and no other function', async () => {
    const app = new App({ context: NO_BUNDLING });
    const cpsync = new CpsyncStack(app, 'Cpsync', {
      env: { account: '123456789012', region: 'us-east-1' },
      cpsync: {
        config: { ...CONFIG, features: { memberProbe: 'on' }, memberProbe: { eksRoleName: 'cpsync-probe' } },
      },
    });
    const resources = Template.fromStack(cpsync).toJSON().Resources as Record<string, CfnResource>;
    const stack = templateResolver(resources, placeholderRefs(resources));
    const member = template.toJSON().Resources as Record<string, CfnResource>;
    const memberAccount = templateResolver(member, {}, '210987654321');
    const trustOf = (name: string) =>
      memberAccount.resolve(
        Object.values(member).find((r) => r.Properties.RoleName === name)!.Properties
          .AssumeRolePolicyDocument,
      ) as Parameters<typeof decide>[2];
    const assume = async (prefix: string, role: string, context: Record<string, string> = {}) => {
      const roleId = Object.keys(resources).find(
        (id) => resources[id]!.Type === 'AWS::IAM::Role' && id.startsWith(prefix),
      )!;
      return decide(
        {
          principal: `arn:aws:sts::123456789012:assumed-role/${roleId}/${prefix}`,
          action: 'sts:AssumeRole',
          resource: `arn:aws:iam::210987654321:role/${role}`,
          account: '210987654321',
        },
        rolePolicies(resources, roleId, stack.resolve),
        trustOf(role),
        context,
      );
    };
    assert.equal(await assume('CpsyncScopeWorker', 'cpsync-probe'), 'Allowed');
    assert.equal(await assume('CpsyncEksEventHandler', 'cpsync-probe'), 'Allowed');
    assert.equal(await assume('CpsyncWebhook', 'cpsync-probe'), 'ImplicitlyDenied', 'no EKS member for it');
    assert.equal(await assume('CpsyncScopeEnumerator', 'cpsync-probe'), 'ImplicitlyDenied');
    // The reader, as the sources assume it: with the external id, and not without.
    const externalId = { 'sts:ExternalId': 'my-external-id' };
    assert.equal(await assume('CpsyncScopeWorker', 'cpsync-reader', externalId), 'Allowed');
    assert.equal(await assume('CpsyncScopeWorker', 'cpsync-reader'), 'ImplicitlyDenied');
  });

  it("with accessGrants, IAM lets the reader make access entries only for the configured consumers, tagged, with the three level policies, and delete only entries tagged as cpsync's", async () => {
    const app = new App();
    const stack = new Stack(app, 'Grants', { env: { account: '210987654321', region: 'us-east-1' } });
    new CpsyncMemberRoles(stack, 'Cpsync', {
      cpsyncAccount: '123456789012',
      accessGrants: { consumerRoleArns: ['arn:aws:iam::210987654321:role/argocd'] },
    });
    const resources = Template.fromStack(stack).toJSON().Resources as Record<string, CfnResource>;
    const resolver = templateResolver(resources, {}, '210987654321');
    const readerId = Object.keys(resources).find(
      (id) => resources[id]!.Properties.RoleName === 'cpsync-reader',
    )!;
    const policies = rolePolicies(resources, readerId, resolver.resolve);
    const cluster = 'arn:aws:eks:us-east-1:210987654321:cluster/checkout';
    const entry =
      'arn:aws:eks:us-east-1:210987654321:access-entry/checkout/role/210987654321/argocd/4ec4d1b5-0a3c-43d2-a6f8-4e0e6c1f2a01';
    const ask = (action: string, resource: string, context: Record<string, string | string[]>) =>
      decide(
        {
          principal: 'arn:aws:sts::210987654321:assumed-role/cpsync-reader/cpsync',
          action,
          resource,
          account: '210987654321',
        },
        policies,
        undefined,
        context as Record<string, string>,
      );
    const tag = 'aws:RequestTag/app.kubernetes.io/managed-by';
    const mine = { 'aws:ResourceTag/app.kubernetes.io/managed-by': 'cpsync' };
    const argocd = 'arn:aws:iam::210987654321:role/argocd';
    assert.equal(
      await ask('eks:CreateAccessEntry', cluster, { [tag]: 'cpsync', 'eks:principalArn': argocd }),
      'Allowed',
    );
    assert.equal(
      await ask('eks:CreateAccessEntry', cluster, {
        [tag]: 'cpsync',
        'eks:principalArn': 'arn:aws:iam::210987654321:role/admin',
      }),
      'ImplicitlyDenied',
      'a role no consumer has',
    );
    assert.equal(
      await ask('eks:CreateAccessEntry', cluster, { 'eks:principalArn': argocd }),
      'ImplicitlyDenied',
      'untagged',
    );
    const policy = (name: string) => `arn:aws:eks::aws:cluster-access-policy/${name}`;
    assert.equal(
      await ask('eks:AssociateAccessPolicy', entry, {
        ...mine,
        'eks:policyArn': policy('AmazonEKSEditPolicy'),
      }),
      'Allowed',
    );
    assert.equal(
      await ask('eks:AssociateAccessPolicy', entry, {
        ...mine,
        'eks:policyArn': policy('AmazonEKSClusterAdminPolicy'),
      }),
      'ImplicitlyDenied',
      'cluster admin is never granted',
    );
    assert.equal(
      await ask('eks:AssociateAccessPolicy', entry, { 'eks:policyArn': policy('AmazonEKSViewPolicy') }),
      'ImplicitlyDenied',
      "not cpsync's entry",
    );
    assert.equal(await ask('eks:DeleteAccessEntry', entry, mine), 'Allowed');
    assert.equal(
      await ask('eks:DeleteAccessEntry', entry, {
        'aws:ResourceTag/app.kubernetes.io/managed-by': 'terraform',
      }),
      'ImplicitlyDenied',
    );
    assert.equal(await ask('eks:DescribeAccessEntry', entry, {}), 'Allowed');
  });

  it('gives the functions EKS access-entry permissions only with accessGrants on (and, to revoke, while consumers stay configured), cdk-nag clean', () => {
    const consumers = [
      {
        name: 'argocd',
        namespaces: ['cluster-inventory'],
        level: 'view',
        identities: { eks: { roleArn: 'arn:aws:iam::123456789012:role/argocd' } },
      },
    ];
    const accessActions = (config: Record<string, unknown>) => {
      const dir = temporaryDirectory('cpsync-grants-stack-');
      try {
        const app = new App({ outdir: dir, context: NO_BUNDLING });
        const stack = new CpsyncStack(app, 'Grants', {
          env: { account: '123456789012', region: 'us-east-1' },
          cpsync: { config },
        });
        Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
        app.synth();
        const report = JSON.parse(readFileSync(join(dir, 'validation-report.json'), 'utf8')) as {
          pluginReports: unknown[];
        };
        assert.deepEqual(report.pluginReports, []);
        const resources = Template.fromStack(stack).toJSON().Resources as Record<string, CfnResource>;
        const resolver = templateResolver(resources, placeholderRefs(resources));
        const byFunction: Record<string, string[]> = {};
        for (const prefix of [
          'CpsyncScopeWorker',
          'CpsyncEksEventHandler',
          'CpsyncFollowUp',
          'CpsyncWebhook',
          'CpsyncScopeEnumerator',
        ]) {
          const roleId = Object.keys(resources).find(
            (id) => resources[id]!.Type === 'AWS::IAM::Role' && id.startsWith(prefix),
          )!;
          byFunction[prefix] = [
            ...new Set(
              grantsOf(rolePolicies(resources, roleId, resolver.resolve))
                .map((g) => g.action)
                .filter((a) => /AccessEntry|AccessPolic|TagResource/.test(a)),
            ),
          ].sort();
        }
        return byFunction;
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    };
    const full = [
      'eks:AssociateAccessPolicy',
      'eks:CreateAccessEntry',
      'eks:DeleteAccessEntry',
      'eks:DescribeAccessEntry',
      'eks:DisassociateAccessPolicy',
      'eks:ListAssociatedAccessPolicies',
      'eks:TagResource',
    ];
    const on = accessActions({ ...CONFIG, features: { accessGrants: 'on' }, consumers });
    assert.deepEqual(on, {
      CpsyncScopeWorker: full,
      CpsyncEksEventHandler: full,
      CpsyncFollowUp: full,
      CpsyncWebhook: [],
      CpsyncScopeEnumerator: [],
    });
    const turningOff = accessActions({ ...CONFIG, consumers });
    assert.deepEqual(turningOff.CpsyncScopeWorker, [
      'eks:DeleteAccessEntry',
      'eks:DescribeAccessEntry',
      'eks:ListAssociatedAccessPolicies',
    ]);
    const off = accessActions(CONFIG);
    assert.ok(
      Object.values(off).every((actions) => actions.length === 0),
      JSON.stringify(off),
    );
  });
});
