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
import { decide, rolePolicies } from '../support/iam.ts';
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
});
