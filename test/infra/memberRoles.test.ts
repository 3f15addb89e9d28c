/** The roles cpsync asks member accounts to create (CpsyncMemberRoles): what they trust and what they allow. */
import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { App, Stack, Validations } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import fc from 'fast-check';
import { CpsyncMemberRoles } from '../../infra/CpsyncMemberRoles.ts';
import { CpsyncStack } from '../../infra/CpsyncStack.ts';
import type { AwsCall } from '../env/awsProxy.ts';
import { decide as judge, grantsOf, iamRequestsOf, rolePolicies, sessionOf } from '../support/iam.ts';
import { GRANT_SOURCE_IDENTITY } from '../../adapters/grants/marks.ts';
import { CONFIG, EXAMPLE, NO_BUNDLING } from '../support/infra.ts';
import { placeholderRefs, roleIdOf, templateResolver, type CfnResource } from '../support/template.ts';
import { temporaryDirectory } from '../support/tmp.ts';

/** A session of the reader as the functions that grant open it: with cpsync's granting source identity. */
const GRANTING = { 'aws:SourceIdentity': GRANT_SOURCE_IDENTITY };

/** IAM's decision, the request made in a granting session (`GRANTING`, unless the request's context says otherwise). */
const decide: typeof judge = (request, ...rest) =>
  judge({ ...request, context: { ...GRANTING, ...request.context } }, ...rest);

/** The ARN EKS gives `roleArn`'s access entry on the cluster `checkout` of `account` (`access-entry/<cluster>/<type>/<role's account>/<name>/<id>`). */
function accessEntryArn(account: string, roleArn: string): string {
  const [, , , , roleAccount, resource] = roleArn.split(':');
  const [type, ...path] = resource!.split('/');
  return `arn:aws:eks:us-east-1:${account}:access-entry/checkout/${type}/${roleAccount}/${path.pop()}/4ec4d1b5-0a3c-43d2-a6f8-4e0e6c1f2a01`;
}

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
        Condition: {
          ArnLike: {
            'aws:PrincipalArn': [
              { 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':iam::123456789012:role/cpsync/*']] },
            ],
          },
          StringEquals: { 'sts:ExternalId': 'my-external-id' },
        },
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
    // A member account the configuration lists (the example's first), and one it does not.
    const listed = '111122223333';
    const trustOf = (name: string, account: string) =>
      templateResolver(member, {}, account).resolve(
        Object.values(member).find((r) => r.Properties.RoleName === name)!.Properties
          .AssumeRolePolicyDocument,
      ) as Parameters<typeof decide>[2];
    const assume = async (
      prefix: string,
      role: string,
      context: Record<string, string> = {},
      account = listed,
    ) => {
      const session = sessionOf(resources, roleIdOf(resources, prefix), '123456789012', prefix);
      return decide(
        {
          ...session,
          action: 'sts:AssumeRole',
          resource: `arn:aws:iam::${account}:role/${role}`,
          account,
        },
        rolePolicies(resources, roleIdOf(resources, prefix), stack.resolve),
        trustOf(role, account),
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
    // An account the configuration does not list (one left out of it, its roles still there) is not entered.
    assert.equal(
      await assume('CpsyncScopeWorker', 'cpsync-reader', externalId, '210987654321'),
      'ImplicitlyDenied',
    );
    assert.equal(await assume('CpsyncScopeWorker', 'cpsync-probe', {}, '210987654321'), 'ImplicitlyDenied');
  });

  it("trusts, of the cpsync account, only cpsync's function roles (their IAM path) and the operators the configuration names, for every way in: the reader, its granting sessions, the probe role (property over principals)", async () => {
    const CPSYNC = '123456789012';
    const listed = '111122223333';
    const operators = [`arn:aws:iam::${CPSYNC}:role/platform-admin`, `arn:aws:iam::${CPSYNC}:user/ops/night`];
    const providers = (CONFIG as Record<string, unknown>).providers as { eks: Record<string, unknown> };
    const memberApp = new App();
    const memberStack = new Stack(memberApp, 'Member', { env: { account: listed, region: 'us-east-1' } });
    new CpsyncMemberRoles(memberStack, 'Cpsync', {
      cpsyncAccount: CPSYNC,
      config: {
        ...CONFIG,
        providers: { ...providers, eks: { ...providers.eks, externalId: 'my-external-id', operators } },
        features: { accessGrants: 'on', memberProbe: 'on' },
        memberProbe: { eksRoleName: 'cpsync-probe' },
        consumers: [
          {
            name: 'argocd',
            namespaces: ['cluster-inventory'],
            level: 'view',
            identities: { eks: { roleArn: `arn:aws:iam::${listed}:role/argocd` } },
          },
        ],
      },
    });
    const member = Template.fromStack(memberStack).toJSON().Resources as Record<string, CfnResource>;
    const resolver = templateResolver(member, {}, listed);
    const trustOf = (name: string) =>
      resolver.resolve(
        Object.values(member).find((r) => r.Properties.RoleName === name)!.Properties
          .AssumeRolePolicyDocument,
      ) as Parameters<typeof judge>[2];
    // The principal's own account lets it ask for anything: the member role's trust alone decides.
    const anything = [
      { name: 'all', policy: { Statement: [{ Effect: 'Allow' as const, Action: 'sts:*', Resource: '*' }] } },
    ];
    /** Every way into the member account, as `principalArn` (of `account`) would ask: each decision. */
    const ways = async (principalArn: string, account: string) => {
      const principal = principalArn.includes(':role/')
        ? `arn:aws:sts::${account}:assumed-role/${principalArn.split('/').pop()}/session`
        : principalArn;
      const ask = (action: string, role: string, context: Record<string, string>) =>
        judge(
          { principal, action, resource: `arn:aws:iam::${listed}:role/${role}`, account: listed },
          anything,
          trustOf(role),
          { 'aws:PrincipalArn': principalArn, ...context },
        );
      return Promise.all([
        ask('sts:AssumeRole', 'cpsync-reader', { 'sts:ExternalId': 'my-external-id' }),
        ask('sts:AssumeRole', 'cpsync-reader', {
          'sts:ExternalId': 'my-external-id',
          'sts:SourceIdentity': GRANT_SOURCE_IDENTITY,
        }),
        ask('sts:SetSourceIdentity', 'cpsync-reader', { 'sts:SourceIdentity': GRANT_SOURCE_IDENTITY }),
        ask('sts:AssumeRole', 'cpsync-probe', {}),
      ]);
    };
    // cpsync's own function roles are made under that path, every one of them, and no other function's (a
    // subscriber's, made beside them).
    const cpsync = Template.fromStack(
      new CpsyncStack(new App({ context: NO_BUNDLING }), 'Cpsync', {
        env: { account: CPSYNC, region: 'us-east-1' },
        cpsync: {
          config: {
            ...CONFIG,
            subscribers: {
              chat: {
                webhookSecretArn: `arn:aws:secretsmanager:us-east-1:${CPSYNC}:secret:cpsync/chat-webhook`,
              },
            },
          },
        },
      }),
    ).toJSON().Resources as Record<string, CfnResource>;
    const pathOf = Object.fromEntries(
      Object.entries(cpsync)
        .filter(([, r]) => r.Type === 'AWS::Lambda::Function')
        .map(([id, fn]) => {
          const roleId = (fn.Properties.Role as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
          return [id.replace(/[0-9A-F]{8}$/, ''), cpsync[roleId]!.Properties.Path ?? '/'];
        }),
    );
    const own = ['ScopeEnumerator', 'ScopeWorker', 'EksEventHandler', 'Webhook', 'FollowUp'].map(
      (f) => `Cpsync${f}`,
    );
    assert.deepEqual(
      Object.entries(pathOf)
        .filter(([, p]) => p === '/cpsync/')
        .map(([id]) => id)
        .sort(),
      [...own].sort(),
      JSON.stringify(pathOf),
    );
    assert.ok(Object.keys(pathOf).length > own.length, 'a subscriber function beside them');

    const name = fc.stringMatching(/^[\w+=,.@-]{1,20}$/);
    const segment = fc.stringMatching(/^[\w+=,.@-]{1,12}$/);
    const account = fc.oneof(fc.constant(CPSYNC), fc.constant(listed), fc.stringMatching(/^\d{12}$/));
    const kind = fc.constantFrom('role', 'user');
    const path = fc
      .array(segment, { maxLength: 3 })
      .map((parts) => (parts.length ? `/${parts.join('/')}/` : '/'));
    // Any principal of any account and path, with the spellings near cpsync's path and the operators weighted in.
    const principal = fc.oneof(
      fc
        .record({ account, kind, path, name })
        .map((p) => `arn:aws:iam::${p.account}:${p.kind}${p.path}${p.name}`),
      fc
        .record({
          account,
          kind,
          near: fc.constantFrom(
            '/cpsync/',
            '/CPSYNC/',
            '/cpsync-x/',
            '/cpsyncs/',
            '/x/cpsync/',
            '/cpsync/a/',
            '/',
          ),
          name: fc.oneof(name, fc.constant('cpsync')),
        })
        .map((p) => `arn:aws:iam::${p.account}:${p.kind}${p.near}${p.name}`),
      fc
        .constantFrom(...operators)
        .chain((operator) =>
          fc.constantFrom(
            operator,
            operator.toUpperCase(),
            `${operator}2`,
            operator.replace('platform-admin', 'platform-admin/x'),
            operator.replace('ops/night', 'night'),
            operator.replace(':role/', ':user/'),
            operator.replace(':user/', ':role/'),
            operator.replace(CPSYNC, listed),
          ),
        ),
    );
    // The oracle: the configuration's words, read directly (a role of cpsync's path in its account, or an operator).
    const trusted = (arn: string) =>
      operators.includes(arn) || arn.startsWith(`arn:aws:iam::${CPSYNC}:role/cpsync/`);
    let seen = { trusted: 0, refused: 0 };
    await fc.assert(
      fc.asyncProperty(principal, async (arn) => {
        const decisions = await ways(arn, arn.split(':')[4]!);
        const expected = trusted(arn) ? 'Allowed' : 'ImplicitlyDenied';
        seen = trusted(arn) ? { ...seen, trusted: seen.trusted + 1 } : { ...seen, refused: seen.refused + 1 };
        assert.deepEqual(decisions, [expected, expected, expected, expected], arn);
      }),
      { numRuns: 150, seed: 20261203 },
    );
    assert.ok(seen.trusted > 10 && seen.refused > 10, JSON.stringify(seen));
    // Without the external id, or with another source identity, no principal is let in by the reader's trust.
    const fn = `arn:aws:iam::${CPSYNC}:role/cpsync/Cpsync-ScopeWorkerRole-1A2B`;
    const other = (role: string, action: string, context: Record<string, string>) =>
      judge(
        { principal: fn, action, resource: `arn:aws:iam::${listed}:role/${role}`, account: listed },
        anything,
        trustOf(role),
        { 'aws:PrincipalArn': fn, ...context },
      );
    assert.equal(await other('cpsync-reader', 'sts:AssumeRole', {}), 'ImplicitlyDenied');
    assert.equal(
      await other('cpsync-reader', 'sts:SetSourceIdentity', { 'sts:SourceIdentity': 'cpsync' }),
      'ImplicitlyDenied',
    );
  });

  it('refuses an operator that is no single IAM principal of the cpsync account, naming it', () => {
    const providers = (CONFIG as Record<string, unknown>).providers as { eks: Record<string, unknown> };
    const withOperators = (operators: unknown) => () =>
      new CpsyncMemberRoles(new Stack(new App(), 'Member'), 'Cpsync', {
        cpsyncAccount: '123456789012',
        config: { ...CONFIG, providers: { ...providers, eks: { ...providers.eks, operators } } },
      });
    assert.throws(
      withOperators(['arn:aws:iam::210987654321:role/platform-admin']),
      /operators\[0\] \(providers\.eks\.operators\) is of account 210987654321, not the cpsync account 123456789012/,
    );
    assert.throws(
      withOperators([
        'arn:aws:iam::123456789012:role/cpsync/platform-admin',
        'arn:aws:iam::123456789012:role/*',
      ]),
      /providers\.eks\.operators\[1\]: must be the ARN of one IAM role or user, with no wildcard/,
    );
    assert.throws(
      withOperators(['arn:aws:sts::123456789012:assumed-role/platform-admin/me']),
      /providers\.eks\.operators\[0\]: must be the role's ARN .*, not a session's/,
    );
    assert.throws(withOperators([]), /providers\.eks\.operators/);
    assert.throws(
      () =>
        new CpsyncMemberRoles(new Stack(new App(), 'Member'), 'Cpsync', {
          cpsyncAccount: '123456789012',
          operators: ['arn:aws:iam::123456789012:role/x?'],
        }),
      /operators\[0\] \(providers\.eks\.operators\) must be the ARN of one IAM role or user, with no wildcard/,
    );
  });

  it('lets only the functions that grant open a granting session of the reader: the scope enumerator, entering members to read their regions, is refused every grant', async () => {
    const listed = '111122223333';
    const consumerRole = `arn:aws:iam::${listed}:role/argocd`;
    const providers = (CONFIG as Record<string, unknown>).providers as { eks: Record<string, unknown> };
    const eks = { ...providers.eks };
    delete eks.regions; // the enumerator enters members only to read their regions
    const app = new App({ context: NO_BUNDLING });
    const cpsync = new CpsyncStack(app, 'Granting', {
      env: { account: '123456789012', region: 'us-east-1' },
      cpsync: {
        config: {
          ...CONFIG,
          providers: { ...providers, eks },
          features: { accessGrants: 'on' },
          consumers: [
            {
              name: 'argocd',
              namespaces: ['cluster-inventory'],
              level: 'view',
              identities: { eks: { roleArn: consumerRole } },
            },
          ],
        },
      },
    });
    const resources = Template.fromStack(cpsync).toJSON().Resources as Record<string, CfnResource>;
    const resolver = templateResolver(resources, placeholderRefs(resources));
    const memberApp = new App();
    const memberStack = new Stack(memberApp, 'Member', { env: { account: listed, region: 'us-east-1' } });
    new CpsyncMemberRoles(memberStack, 'Cpsync', {
      cpsyncAccount: '123456789012',
      externalId: 'my-external-id',
      accessGrants: { manager: 'cpsync', consumerRoleArns: [consumerRole], consumerNames: ['argocd'] },
    });
    const member = Template.fromStack(memberStack).toJSON().Resources as Record<string, CfnResource>;
    const memberResolver = templateResolver(member, {}, listed);
    const readerId = Object.keys(member).find((id) => member[id]!.Properties.RoleName === 'cpsync-reader')!;
    const trust = memberResolver.resolve(member[readerId]!.Properties.AssumeRolePolicyDocument) as Parameters<
      typeof judge
    >[2];
    const reader = `arn:aws:iam::${listed}:role/cpsync-reader`;
    /** Whether the function may assume the reader with `sourceIdentity` (AssumeRole and SetSourceIdentity both). */
    const opens = async (prefix: string, sourceIdentity: string) => {
      const roleId = roleIdOf(resources, prefix);
      const { principal, context: session } = sessionOf(resources, roleId, '123456789012', prefix);
      const policies = rolePolicies(resources, roleId, resolver.resolve);
      // The external id is a key of AssumeRole's alone; the source identity of both.
      const decisions = await Promise.all(
        [
          ['sts:AssumeRole', { 'sts:ExternalId': 'my-external-id', 'sts:SourceIdentity': sourceIdentity }],
          ['sts:SetSourceIdentity', { 'sts:SourceIdentity': sourceIdentity }],
        ].map(([action, context]) =>
          judge({ principal, action: action as string, resource: reader, account: listed }, policies, trust, {
            ...session,
            ...(context as Record<string, string>),
          }),
        ),
      );
      return decisions.every((d) => d === 'Allowed') ? 'Allowed' : decisions.join(', ');
    };
    for (const granting of ['CpsyncScopeWorker', 'CpsyncEksEventHandler', 'CpsyncFollowUp'])
      assert.equal(await opens(granting, GRANT_SOURCE_IDENTITY), 'Allowed', granting);
    assert.equal(
      await opens('CpsyncScopeEnumerator', GRANT_SOURCE_IDENTITY),
      'Allowed, ImplicitlyDenied',
      'the enumerator assumes the reader, and may not set the granting identity',
    );
    for (const other of ['cpsync', 'cpsync-grants-x', 'CPSYNC-GRANTS'])
      assert.notEqual(
        await opens('CpsyncScopeWorker', other),
        'Allowed',
        `no other source identity: ${other}`,
      );

    // The reader's grant statements, in a session without the granting identity (as the enumerator opens it) or with
    // another: every grant call refused; its reads allowed.
    const readerPolicies = rolePolicies(member, readerId, memberResolver.resolve);
    const entry = accessEntryArn(listed, consumerRole);
    const cluster = `arn:aws:eks:us-east-1:${listed}:cluster/checkout`;
    const grantCalls: Array<[string, string]> = [
      ['eks:ListAccessEntries', cluster],
      ['eks:DescribeAccessEntry', entry],
      ['eks:CreateAccessEntry', cluster],
      ['eks:AssociateAccessPolicy', entry],
      ['eks:DisassociateAccessPolicy', entry],
      ['eks:DeleteAccessEntry', entry],
    ];
    const marked = {
      'aws:ResourceTag/app.kubernetes.io/managed-by': 'cpsync',
      'aws:ResourceTag/cpsync.io/consumer': 'argocd',
    };
    const sessions: Array<Record<string, string>> = [{}, { 'aws:SourceIdentity': 'cpsync' }];
    for (const session of sessions) {
      const principal = `arn:aws:sts::${listed}:assumed-role/cpsync-reader/cpsync`;
      for (const [action, resource] of grantCalls)
        assert.notEqual(
          await judge(
            { principal, action, resource, account: listed, context: { ...marked, ...session } },
            readerPolicies,
          ),
          'Allowed',
          `${action} in ${JSON.stringify(session)}`,
        );
      assert.equal(
        await judge(
          { principal, action: 'eks:DescribeCluster', resource: cluster, account: listed, context: session },
          readerPolicies,
        ),
        'Allowed',
      );
    }
    // The same calls in a granting session: the ones on the entry allowed (the rest are judged in full below).
    for (const [action, resource] of grantCalls.filter(([a]) => /Describe|Delete|List/.test(a)))
      assert.equal(
        await judge(
          {
            principal: `arn:aws:sts::${listed}:assumed-role/cpsync-reader/cpsync`,
            action,
            resource,
            account: listed,
            context: { ...marked, ...GRANTING },
          },
          readerPolicies,
        ),
        'Allowed',
        action,
      );
  });

  it('with Organizations discovery, IAM lets every function that enters members enter only the organization’s accounts, under the OUs included and not under those left out', async () => {
    const INCLUDED = 'ou-ab12-11111111';
    const EXCLUDED = 'ou-ab12-22222222';
    const ORG = 'o-a1b2c3d4e5';
    const providers = (CONFIG as unknown as { providers: Record<string, Record<string, unknown>> }).providers;
    const app = new App({ context: NO_BUNDLING });
    const cpsync = new CpsyncStack(app, 'Cpsync', {
      env: { account: '123456789012', region: 'us-east-1' },
      cpsync: {
        config: {
          ...CONFIG,
          providers: {
            ...providers,
            eks: {
              ...providers.eks,
              accounts: { organization: { includeOus: [INCLUDED], excludeOus: [EXCLUDED] } },
            },
          },
        },
      },
    });
    const resources = Template.fromStack(cpsync).toJSON().Resources as Record<string, CfnResource>;
    const stack = templateResolver(resources, placeholderRefs(resources));
    // The member account's reader, as CpsyncMemberRoles makes it: it trusts cpsync's account with the external id.
    const member = template.toJSON().Resources as Record<string, CfnResource>;
    const trust = templateResolver(member, {}, '210987654321').resolve(
      Object.values(member).find((r) => r.Properties.RoleName === 'cpsync-reader')!.Properties
        .AssumeRolePolicyDocument,
    ) as Parameters<typeof decide>[2];
    // Every function that enters member accounts: the sync of a scope, of one cluster (a cloud event), a follow-up look.
    for (const prefix of ['CpsyncScopeWorker', 'CpsyncEksEventHandler', 'CpsyncFollowUp']) {
      const roleId = roleIdOf(resources, prefix);
      const policies = rolePolicies(resources, roleId, stack.resolve);
      const session = sessionOf(resources, roleId, '123456789012', prefix);
      const assume = (org: string, path: string) =>
        decide(
          {
            principal: session.principal,
            action: 'sts:AssumeRole',
            resource: 'arn:aws:iam::210987654321:role/cpsync-reader',
            account: '210987654321',
            context: {
              ...session.context,
              'sts:ExternalId': 'my-external-id',
              'aws:PrincipalOrgID': ORG,
              'aws:ResourceOrgID': org,
              'aws:ResourceOrgPaths': [path],
            },
          },
          policies,
          trust,
        );
      const cases: Array<[string, string, string, string]> = [
        [ORG, `${ORG}/r-ab12/${INCLUDED}/`, 'Allowed', 'under an included OU'],
        [ORG, `${ORG}/r-ab12/${INCLUDED}/ou-ab12-33333333/`, 'Allowed', 'deeper under it'],
        ['o-zzzzzzzzzz', `o-zzzzzzzzzz/r-zz99/${INCLUDED}/`, 'ImplicitlyDenied', 'another organization'],
        [ORG, `${ORG}/r-ab12/ou-ab12-44444444/`, 'ImplicitlyDenied', 'under no included OU'],
        [
          ORG,
          `${ORG}/r-ab12/${INCLUDED}1/`,
          'ImplicitlyDenied',
          'under an OU whose id begins as the included one',
        ],
        [
          ORG,
          `${ORG}/r-ab12/${INCLUDED}/${EXCLUDED}/`,
          'ExplicitlyDenied',
          'under an OU left out, inside an included one',
        ],
        [
          ORG,
          `${ORG}/r-ab12/${INCLUDED}/${EXCLUDED}/ou-ab12-55555555/`,
          'ExplicitlyDenied',
          'deeper under it',
        ],
      ];
      for (const [org, path, decision, why] of cases)
        assert.equal(await assume(org, path), decision, `${prefix}: ${why}`);
    }
  });

  describe('with accessGrants, IAM (judged by the policy simulator) bounds every access-entry write to what cpsync makes', () => {
    const MEMBER = '210987654321';
    const argocd = `arn:aws:iam::${MEMBER}:role/argocd`;
    // A consumer whose role lives in another account than the clusters.
    const deployer = 'arn:aws:iam::111122223333:role/platform/deployer';
    const admin = `arn:aws:iam::${MEMBER}:role/admin`;
    const cluster = `arn:aws:eks:us-east-1:${MEMBER}:cluster/checkout`;
    const entryOf = (role: string) => accessEntryArn(MEMBER, role);
    const MANAGED_BY = 'app.kubernetes.io/managed-by';
    const CONSUMER = 'cpsync.io/consumer';
    /** The marks cpsync puts on an entry it makes for `consumer`. */
    const marks = (consumer: string) => ({ [MANAGED_BY]: 'cpsync', [CONSUMER]: consumer });
    const policy = (name: string) => `arn:aws:eks::aws:cluster-access-policy/${name}`;
    let policies: ReturnType<typeof rolePolicies>;
    let tagsOf: Record<string, Record<string, string>>;
    const principal = `arn:aws:sts::${MEMBER}:assumed-role/cpsync-reader/cpsync`;

    /** IAM's decisions on one EKS REST call as the reader makes it (mapped as test/support/iam.ts maps recorded calls). */
    /** `session`: the condition keys of the session the call is made in (a granting one unless said otherwise). */
    const decisions = async (
      method: string,
      path: string,
      body: unknown = undefined,
      session: Record<string, string> = GRANTING,
    ) => {
      const call: AwsCall = {
        method,
        path,
        service: 'eks',
        region: 'us-east-1',
        accessKeyId: 'AKIA',
        operation: '',
        body: body === undefined ? '' : JSON.stringify(body),
      };
      const requests = iamRequestsOf(call, principal, MEMBER, (_cluster, role) => tagsOf[role] ?? {});
      return Promise.all(
        requests.map(
          async (request) =>
            `${request.action} ${await judge({ ...request, context: { ...request.context, ...session } }, policies)}`,
        ),
      );
    };
    const entries = (role?: string) =>
      `/clusters/checkout/access-entries${role ? `/${encodeURIComponent(role)}` : ''}`;
    /** One request judged as IAM would, with the condition keys given. */
    const ask = (action: string, resource: string, context: Record<string, string | string[]> = {}) =>
      decide({ principal, action, resource, account: MEMBER, context }, policies);
    const requestTags = (tags: Record<string, string>) => ({
      ...Object.fromEntries(Object.entries(tags).map(([k, v]) => [`aws:RequestTag/${k}`, v])),
      'aws:TagKeys': Object.keys(tags),
    });

    before(() => {
      const app = new App();
      const stack = new Stack(app, 'Grants', { env: { account: MEMBER, region: 'us-east-1' } });
      new CpsyncMemberRoles(stack, 'Cpsync', {
        cpsyncAccount: '123456789012',
        accessGrants: {
          manager: 'cpsync',
          consumerRoleArns: [argocd, deployer],
          consumerNames: ['argocd', 'deployer'],
        },
      });
      const resources = Template.fromStack(stack).toJSON().Resources as Record<string, CfnResource>;
      const resolver = templateResolver(resources, {}, MEMBER);
      const readerId = Object.keys(resources).find(
        (id) => resources[id]!.Properties.RoleName === 'cpsync-reader',
      )!;
      policies = rolePolicies(resources, readerId, resolver.resolve);
    });

    it('allows each call cpsync makes: list, describe, create tagged (the tags judged on the new entry), associate, disassociate, delete', async () => {
      tagsOf = { [argocd]: marks('argocd') };
      assert.deepEqual(await decisions('GET', entries()), ['eks:ListAccessEntries Allowed']);
      assert.deepEqual(await decisions('GET', entries(argocd)), ['eks:DescribeAccessEntry Allowed']);
      for (const [role, name] of [
        [argocd, 'argocd'],
        [deployer, 'deployer'],
      ] as const)
        assert.deepEqual(
          await decisions('POST', entries(), { principalArn: role, type: 'STANDARD', tags: marks(name) }),
          ['eks:CreateAccessEntry Allowed', 'eks:TagResource Allowed'],
          name,
        );
      assert.deepEqual(await decisions('GET', `${entries(argocd)}/access-policies`), [
        'eks:ListAssociatedAccessPolicies Allowed',
      ]);
      for (const accessScope of [{ type: 'cluster' }, { type: 'namespace', namespaces: ['apps'] }])
        assert.deepEqual(
          await decisions('POST', `${entries(argocd)}/access-policies`, {
            policyArn: policy('AmazonEKSEditPolicy'),
            accessScope,
          }),
          ['eks:AssociateAccessPolicy Allowed'],
        );
      assert.deepEqual(
        await decisions(
          'DELETE',
          `${entries(argocd)}/access-policies/${encodeURIComponent(policy('AmazonEKSViewPolicy'))}`,
        ),
        ['eks:DisassociateAccessPolicy Allowed'],
      );
      assert.deepEqual(await decisions('DELETE', entries(argocd)), ['eks:DeleteAccessEntry Allowed']);
    });

    /** Sessions of the reader that are not granting ones: without a source identity, or with another. */
    const OTHER_SESSIONS: Array<Record<string, string>> = [
      {},
      { 'aws:SourceIdentity': 'cpsync' },
      { 'aws:SourceIdentity': 'CPSYNC-GRANTS' },
    ];
    it('refuses each of those calls, as cpsync makes them, in a session without the granting source identity or with another (the scope enumerator’s)', async () => {
      tagsOf = { [argocd]: marks('argocd') };
      const calls: Array<[string, string, unknown?]> = [
        ['GET', entries()],
        ['GET', entries(argocd)],
        ['POST', entries(), { principalArn: argocd, type: 'STANDARD', tags: marks('argocd') }],
        ['GET', `${entries(argocd)}/access-policies`],
        [
          'POST',
          `${entries(argocd)}/access-policies`,
          { policyArn: policy('AmazonEKSEditPolicy'), accessScope: { type: 'cluster' } },
        ],
        ['DELETE', `${entries(argocd)}/access-policies/${encodeURIComponent(policy('AmazonEKSViewPolicy'))}`],
        ['DELETE', entries(argocd)],
      ];
      for (const [method, path, body] of calls) {
        const granting = await decisions(method, path, body);
        assert.ok(
          granting.every((d) => d.endsWith(' Allowed')),
          `${method} ${path}: ${granting.join(', ')}`,
        );
        for (const session of OTHER_SESSIONS)
          assert.deepEqual(
            await decisions(method, path, body, session),
            granting.map((d) => d.replace(/ Allowed$/, ' ImplicitlyDenied')),
            `${method} ${path} in ${JSON.stringify(session)}`,
          );
      }
    });

    it('refuses CreateAccessEntry of another type, with Kubernetes groups, with a username, for another principal, or tagged otherwise', async () => {
      const made = { principalArn: argocd, type: 'STANDARD', tags: marks('argocd') };
      const create = async (body: Record<string, unknown>) => (await decisions('POST', entries(), body))[0];
      assert.equal(await create(made), 'eks:CreateAccessEntry Allowed');
      assert.equal(await create({ ...made, type: 'EC2_LINUX' }), 'eks:CreateAccessEntry ImplicitlyDenied');
      assert.equal(
        await create({ ...made, kubernetesGroups: ['system:masters'] }),
        'eks:CreateAccessEntry ImplicitlyDenied',
      );
      assert.equal(await create({ ...made, username: 'admin' }), 'eks:CreateAccessEntry ImplicitlyDenied');
      assert.equal(
        await create({ ...made, type: undefined }),
        'eks:CreateAccessEntry ImplicitlyDenied',
        'the type is pinned, so cpsync names it',
      );
      assert.equal(
        await create({ ...made, principalArn: admin }),
        'eks:CreateAccessEntry ImplicitlyDenied',
        'a role no consumer has',
      );
      assert.equal(
        await create({ ...made, tags: undefined }),
        'eks:CreateAccessEntry ImplicitlyDenied',
        'untagged',
      );
      assert.equal(
        await create({ ...made, tags: { ...marks('argocd'), team: 'platform' } }),
        'eks:CreateAccessEntry ImplicitlyDenied',
        'a third tag key',
      );
      assert.equal(
        await create({ ...made, tags: marks('someone') }),
        'eks:CreateAccessEntry ImplicitlyDenied',
        'a consumer the configuration does not name',
      );
    });

    it('refuses TagResource on a cluster, of another key or value, or on an entry of a principal that is no consumer', async () => {
      const mine = requestTags(marks('argocd'));
      assert.equal(await ask('eks:TagResource', entryOf(argocd), mine), 'Allowed');
      assert.equal(
        await ask('eks:TagResource', cluster, mine),
        'ImplicitlyDenied',
        'clusters are never tagged',
      );
      assert.equal(
        await ask('eks:TagResource', cluster, requestTags({ access: 'deploy' })),
        'ImplicitlyDenied',
        "a cluster's tags choose its namespaces",
      );
      assert.equal(
        await ask('eks:TagResource', entryOf(argocd), requestTags({ ...marks('argocd'), team: 'x' })),
        'ImplicitlyDenied',
        'another tag key beside the two',
      );
      assert.equal(
        await ask('eks:TagResource', entryOf(argocd), requestTags({ team: 'x' })),
        'ImplicitlyDenied',
        'another tag key alone',
      );
      assert.equal(
        await ask(
          'eks:TagResource',
          entryOf(argocd),
          requestTags({ ...marks('argocd'), [MANAGED_BY]: 'terraform' }),
        ),
        'ImplicitlyDenied',
        "another manager's value",
      );
      assert.equal(
        await ask('eks:TagResource', entryOf(argocd), requestTags(marks('intruder'))),
        'ImplicitlyDenied',
        'a consumer name the configuration does not have',
      );
      assert.equal(
        await ask('eks:TagResource', entryOf(admin), mine),
        'ImplicitlyDenied',
        "a hand-made entry of another principal is never marked as cpsync's",
      );
      assert.equal(
        await ask('eks:TagResource', entryOf(`arn:aws:iam::${MEMBER}:user/argocd`), mine),
        'ImplicitlyDenied',
        "a user's entry of the consumer role's name",
      );
      assert.equal(
        await ask('eks:UntagResource', entryOf(argocd), { 'aws:TagKeys': [MANAGED_BY] }),
        'ImplicitlyDenied',
        'tags are never taken off',
      );
    });

    it('refuses policy changes on an entry of a principal that is no consumer, on entries not marked as cpsync’s, and of any other policy', async () => {
      const tagged = { [`aws:ResourceTag/${MANAGED_BY}`]: 'cpsync' };
      const associate = (entry: string, name: string, tags: Record<string, string> = tagged) =>
        ask('eks:AssociateAccessPolicy', entry, { ...tags, 'eks:policyArn': policy(name) });
      assert.equal(await associate(entryOf(argocd), 'AmazonEKSAdminPolicy'), 'Allowed');
      assert.equal(
        await associate(entryOf(admin), 'AmazonEKSAdminPolicy'),
        'ImplicitlyDenied',
        'another principal, even an entry carrying the tag',
      );
      assert.equal(
        await associate(entryOf(argocd), 'AmazonEKSViewPolicy', {}),
        'ImplicitlyDenied',
        'untagged',
      );
      assert.equal(
        await associate(entryOf(argocd), 'AmazonEKSClusterAdminPolicy'),
        'ImplicitlyDenied',
        'cluster admin is never granted',
      );
      assert.equal(
        await ask('eks:DisassociateAccessPolicy', entryOf(admin), {
          ...tagged,
          'eks:policyArn': policy('AmazonEKSViewPolicy'),
        }),
        'ImplicitlyDenied',
      );
    });

    it("deletes only entries marked as cpsync's: never a hand-made entry, of a consumer or of any other principal; a grant to a consumer since removed is still taken back", async () => {
      const resourceTags = (tags: Record<string, string>) =>
        Object.fromEntries(Object.entries(tags).map(([k, v]) => [`aws:ResourceTag/${k}`, v]));
      assert.equal(
        await ask('eks:DeleteAccessEntry', entryOf(argocd), resourceTags(marks('argocd'))),
        'Allowed',
      );
      assert.equal(await ask('eks:DeleteAccessEntry', entryOf(admin), {}), 'ImplicitlyDenied', 'hand-made');
      assert.equal(
        await ask('eks:DeleteAccessEntry', entryOf(admin), resourceTags({ [MANAGED_BY]: 'terraform' })),
        'ImplicitlyDenied',
      );
      assert.equal(
        await ask('eks:DeleteAccessEntry', entryOf(admin), resourceTags({ [MANAGED_BY]: 'cpsync' })),
        'ImplicitlyDenied',
        'only one of the two marks',
      );
      assert.equal(await ask('eks:DeleteAccessEntry', entryOf(argocd), {}), 'ImplicitlyDenied', 'hand-made');
      // Its marks could only have been put there when the role was a consumer's (TagResource is bounded above).
      assert.equal(
        await ask(
          'eks:DeleteAccessEntry',
          entryOf(`arn:aws:iam::${MEMBER}:role/retired`),
          resourceTags(marks('retired')),
        ),
        'Allowed',
      );
    });
  });

  it("with each consumer's terms, IAM lets a consumer's role's entries get only its level, at its scope, tagged with its name (property over levels, scopes and namespaces)", async () => {
    const MEMBER = '210987654321';
    const reader = `arn:aws:sts::${MEMBER}:assumed-role/cpsync-reader/cpsync`;
    const terms = [
      {
        name: 'argocd',
        roleArn: `arn:aws:iam::${MEMBER}:role/argocd`,
        level: 'view' as const,
        memberNamespaces: ['apps', 'web'],
      },
      {
        name: 'deployer',
        roleArn: 'arn:aws:iam::111122223333:role/platform/deployer',
        level: 'admin' as const,
      },
      {
        name: 'ops',
        roleArn: `arn:aws:iam::${MEMBER}:role/ops`,
        level: 'edit' as const,
        memberNamespaces: ['ops'],
      },
    ];
    const stack = new Stack(new App(), 'Terms', { env: { account: MEMBER, region: 'us-east-1' } });
    new CpsyncMemberRoles(stack, 'Cpsync', {
      cpsyncAccount: '123456789012',
      accessGrants: {
        manager: 'cpsync',
        consumerRoleArns: terms.map((t) => t.roleArn),
        consumerNames: terms.map((t) => t.name),
        consumers: terms,
      },
    });
    const resources = Template.fromStack(stack).toJSON().Resources as Record<string, CfnResource>;
    const readerId = Object.keys(resources).find(
      (id) => resources[id]!.Properties.RoleName === 'cpsync-reader',
    )!;
    const policies = rolePolicies(resources, readerId, templateResolver(resources, {}, MEMBER).resolve);
    const entryOf = (roleArn: string) => accessEntryArn(MEMBER, roleArn);
    const POLICIES = {
      view: 'AmazonEKSViewPolicy',
      edit: 'AmazonEKSEditPolicy',
      admin: 'AmazonEKSAdminPolicy',
    };
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...terms),
        fc.constantFrom('view', 'edit', 'admin', 'cluster-admin'),
        fc.constantFrom('cluster', 'namespace'),
        fc.uniqueArray(fc.constantFrom('apps', 'web', 'ops', 'kube-system', 'default'), { maxLength: 3 }),
        async (consumer, level, scope, namespaces) => {
          const policy =
            level === 'cluster-admin'
              ? 'AmazonEKSClusterAdminPolicy'
              : POLICIES[level as keyof typeof POLICIES];
          const decision = await decide(
            {
              principal: reader,
              action: 'eks:AssociateAccessPolicy',
              resource: entryOf(consumer.roleArn),
              account: MEMBER,
              context: {
                'aws:ResourceTag/app.kubernetes.io/managed-by': 'cpsync',
                'eks:policyArn': `arn:aws:eks::aws:cluster-access-policy/${policy}`,
                'eks:accessScope': scope,
                ...(scope === 'namespace' && namespaces.length > 0 ? { 'eks:namespaces': namespaces } : {}),
              },
            },
            policies,
          );
          const own = consumer.memberNamespaces;
          const itsTerms =
            level === consumer.level &&
            (own
              ? scope === 'namespace' && namespaces.length > 0 && namespaces.every((n) => own.includes(n))
              : scope === 'cluster');
          assert.equal(
            decision,
            itsTerms ? 'Allowed' : 'ImplicitlyDenied',
            JSON.stringify({ consumer: consumer.name, level, scope, namespaces }),
          );
        },
      ),
      { numRuns: 120, seed: 20261202 },
    );
    // Its entry tagged with its own name only; any level's policy taken off its entry (its level changed).
    for (const consumer of terms)
      for (const name of terms.map((t) => t.name)) {
        const create = await decide(
          {
            principal: reader,
            action: 'eks:CreateAccessEntry',
            resource: `arn:aws:eks:us-east-1:${MEMBER}:cluster/checkout`,
            account: MEMBER,
            context: {
              'eks:accessEntryType': 'STANDARD',
              'eks:principalArn': consumer.roleArn,
              'aws:RequestTag/app.kubernetes.io/managed-by': 'cpsync',
              'aws:RequestTag/cpsync.io/consumer': name,
              'aws:TagKeys': ['app.kubernetes.io/managed-by', 'cpsync.io/consumer'],
            },
          },
          policies,
        );
        assert.equal(
          create,
          name === consumer.name ? 'Allowed' : 'ImplicitlyDenied',
          `${consumer.name} as ${name}`,
        );
      }
    for (const level of ['view', 'edit', 'admin'] as const)
      assert.equal(
        await decide(
          {
            principal: reader,
            action: 'eks:DisassociateAccessPolicy',
            resource: entryOf(terms[0]!.roleArn),
            account: MEMBER,
            context: {
              'aws:ResourceTag/app.kubernetes.io/managed-by': 'cpsync',
              'eks:policyArn': `arn:aws:eks::aws:cluster-access-policy/${POLICIES[level]}`,
            },
          },
          policies,
        ),
        'Allowed',
      );
  });

  it("takes the accessGrants manager from the configuration it is given (its entries are the manager's, not cpsync's), or requires it", async () => {
    const MEMBER = '210987654321';
    const argocd = `arn:aws:iam::${MEMBER}:role/argocd`;
    const app = new App();
    const stack = new Stack(app, 'Platform', { env: { account: MEMBER, region: 'us-east-1' } });
    new CpsyncMemberRoles(stack, 'Cpsync', {
      cpsyncAccount: '123456789012',
      config: {
        ...CONFIG,
        manager: 'platform',
        features: { accessGrants: 'on' },
        consumers: [
          {
            name: 'argocd',
            namespaces: ['cluster-inventory'],
            level: 'edit',
            identities: { eks: { roleArn: argocd } },
          },
        ],
      },
    });
    const resources = Template.fromStack(stack).toJSON().Resources as Record<string, CfnResource>;
    const resolver = templateResolver(resources, {}, MEMBER);
    const [readerId, reader] = Object.entries(resources).find(
      ([, r]) => r.Type === 'AWS::IAM::Role' && r.Properties.RoleName === 'cpsync-reader',
    )!;
    // The reader's name and external id, from providers.eks.
    assert.deepEqual(
      JSON.stringify(reader.Properties.AssumeRolePolicyDocument).match(/"sts:ExternalId":"([^"]+)"/)?.[1],
      'my-external-id',
    );
    const policies = rolePolicies(resources, readerId, resolver.resolve);
    const create = (manager: string) =>
      decide(
        {
          principal: `arn:aws:sts::${MEMBER}:assumed-role/cpsync-reader/cpsync`,
          action: 'eks:CreateAccessEntry',
          resource: `arn:aws:eks:us-east-1:${MEMBER}:cluster/checkout`,
          account: MEMBER,
          context: {
            'eks:accessEntryType': 'STANDARD',
            'eks:principalArn': argocd,
            'aws:RequestTag/app.kubernetes.io/managed-by': manager,
            'aws:RequestTag/cpsync.io/consumer': 'argocd',
            'aws:TagKeys': ['app.kubernetes.io/managed-by', 'cpsync.io/consumer'],
          },
        },
        policies,
      );
    assert.equal(await create('platform'), 'Allowed', "an entry marked as the configuration's manager's");
    assert.equal(await create('cpsync'), 'ImplicitlyDenied', 'not the default manager’s');
    // The consumer's own level, at its own scope (the cluster: it names no member namespaces), and no other.
    const associate = (policy: string, accessScope: string, namespaces?: string[]) =>
      decide(
        {
          principal: `arn:aws:sts::${MEMBER}:assumed-role/cpsync-reader/cpsync`,
          action: 'eks:AssociateAccessPolicy',
          resource: accessEntryArn(MEMBER, argocd),
          account: MEMBER,
          context: {
            'aws:ResourceTag/app.kubernetes.io/managed-by': 'platform',
            'eks:policyArn': `arn:aws:eks::aws:cluster-access-policy/${policy}`,
            'eks:accessScope': accessScope,
            ...(namespaces ? { 'eks:namespaces': namespaces } : {}),
          },
        },
        policies,
      );
    assert.equal(await associate('AmazonEKSEditPolicy', 'cluster'), 'Allowed');
    assert.equal(await associate('AmazonEKSAdminPolicy', 'cluster'), 'ImplicitlyDenied', 'above its level');
    assert.equal(await associate('AmazonEKSViewPolicy', 'cluster'), 'ImplicitlyDenied', 'another level');

    const other = new Stack(new App(), 'Other', { env: { account: MEMBER, region: 'us-east-1' } });
    assert.throws(
      () =>
        new CpsyncMemberRoles(other, 'NoManager', {
          cpsyncAccount: '123456789012',
          accessGrants: { consumerRoleArns: [argocd] } as never,
        }),
      /accessGrants\.manager is required/,
    );
    assert.throws(
      () =>
        new CpsyncMemberRoles(other, 'Both', {
          cpsyncAccount: '123456789012',
          config: CONFIG,
          externalId: 'x-y',
        }),
      /give either config or externalId, not both/,
    );
    const providers = (CONFIG as unknown as { providers: Record<string, Record<string, unknown>> }).providers;
    assert.throws(
      () =>
        new CpsyncMemberRoles(other, 'TwoPartitions', {
          cpsyncAccount: '123456789012',
          config: {
            ...CONFIG,
            providers: { ...providers, eks: { ...providers.eks, regions: ['us-east-1', 'cn-north-1'] } },
          },
        }),
      /CpsyncMemberRoles props\.config:\n\s+- providers\.eks\.regions\[1\]: cn-north-1 is in the aws-cn partition/,
    );
  });

  it('gives the functions EKS access-entry permissions only with accessGrants on (and, to revoke, while consumers stay configured), cdk-nag clean', async () => {
    const consumers = [
      {
        name: 'argocd',
        namespaces: ['cluster-inventory'],
        level: 'view',
        identities: { eks: { roleArn: 'arn:aws:iam::123456789012:role/argocd' } },
      },
    ];
    let workerPolicies: ReturnType<typeof rolePolicies> = [];
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
        workerPolicies = rolePolicies(resources, roleIdOf(resources, 'CpsyncScopeWorker'), resolver.resolve);
        for (const prefix of [
          'CpsyncScopeWorker',
          'CpsyncEksEventHandler',
          'CpsyncFollowUp',
          'CpsyncWebhook',
          'CpsyncScopeEnumerator',
        ]) {
          const roleId = roleIdOf(resources, prefix);
          byFunction[prefix] = [
            ...new Set(
              grantsOf(rolePolicies(resources, roleId, resolver.resolve))
                .map((g) => g.action)
                .filter((a) => /AccessEntr|AccessPolic|TagResource/.test(a)),
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
      'eks:ListAccessEntries',
      'eks:ListAssociatedAccessPolicies',
      'eks:TagResource',
    ];
    // cpsync's own account among those read: its functions grant there themselves.
    const providers = EXAMPLE.providers as Record<string, Record<string, unknown>>;
    const ownAccount = {
      ...CONFIG,
      providers: {
        ...providers,
        eks: { ...providers.eks, accounts: [...(providers.eks!.accounts as string[]), '123456789012'] },
      },
    };
    const on = accessActions({ ...ownAccount, features: { accessGrants: 'on' }, consumers });
    assert.deepEqual(on, {
      CpsyncScopeWorker: full,
      CpsyncEksEventHandler: full,
      CpsyncFollowUp: full,
      CpsyncWebhook: [],
      CpsyncScopeEnumerator: [],
    });
    // In cpsync's own account too, the consumer's own level only (view, the whole cluster).
    const associate = (policy: string) =>
      decide(
        {
          principal: 'arn:aws:sts::123456789012:assumed-role/CpsyncScopeWorker/fn',
          action: 'eks:AssociateAccessPolicy',
          resource: accessEntryArn('123456789012', 'arn:aws:iam::123456789012:role/argocd'),
          account: '123456789012',
          context: {
            'aws:ResourceTag/app.kubernetes.io/managed-by': 'cpsync',
            'eks:policyArn': `arn:aws:eks::aws:cluster-access-policy/${policy}`,
            'eks:accessScope': 'cluster',
          },
        },
        workerPolicies,
      );
    assert.equal(await associate('AmazonEKSViewPolicy'), 'Allowed');
    assert.equal(await associate('AmazonEKSAdminPolicy'), 'ImplicitlyDenied');
    const turningOff = accessActions({ ...ownAccount, consumers });
    assert.deepEqual(turningOff.CpsyncScopeWorker, [
      'eks:DeleteAccessEntry',
      'eks:DescribeAccessEntry',
      'eks:ListAccessEntries',
      'eks:ListAssociatedAccessPolicies',
    ]);
    const off = accessActions(ownAccount);
    assert.ok(
      Object.values(off).every((actions) => actions.length === 0),
      JSON.stringify(off),
    );
    // Only other accounts read: nothing on cpsync's own (the member roles grant in theirs).
    const elsewhere = accessActions({ ...CONFIG, features: { accessGrants: 'on' }, consumers });
    assert.ok(
      Object.values(elsewhere).every((actions) => actions.length === 0),
      JSON.stringify(elsewhere),
    );
    // The regions the configuration lists hold the grants in cpsync's own account too (cdk-nag clean as above).
    accessActions({
      ...ownAccount,
      providers: { ...ownAccount.providers, eks: { ...ownAccount.providers.eks, regions: ['eu-west-1'] } },
      features: { accessGrants: 'on' },
      consumers,
    });
    const create = (region: string) =>
      decide(
        {
          principal: 'arn:aws:sts::123456789012:assumed-role/CpsyncScopeWorker/fn',
          action: 'eks:CreateAccessEntry',
          resource: `arn:aws:eks:${region}:123456789012:cluster/checkout`,
          account: '123456789012',
          context: {
            'eks:accessEntryType': 'STANDARD',
            'eks:principalArn': 'arn:aws:iam::123456789012:role/argocd',
            'aws:RequestTag/app.kubernetes.io/managed-by': 'cpsync',
            'aws:RequestTag/cpsync.io/consumer': 'argocd',
            'aws:TagKeys': ['app.kubernetes.io/managed-by', 'cpsync.io/consumer'],
          },
        },
        workerPolicies,
      );
    assert.equal(await create('eu-west-1'), 'Allowed');
    assert.equal(await create('us-east-1'), 'ImplicitlyDenied');
  });

  it('holds every grant in a member account to the regions the configuration lists, any region when it lists none (property)', async () => {
    const MEMBER = '210987654321';
    const argocd = `arn:aws:iam::${MEMBER}:role/argocd`;
    const REGIONS = ['us-east-1', 'us-west-2', 'eu-west-1', 'ap-southeast-2'];
    const principal = `arn:aws:sts::${MEMBER}:assumed-role/cpsync-reader/cpsync`;
    const providers = EXAMPLE.providers as Record<string, Record<string, unknown>>;
    const tagged = { 'aws:ResourceTag/app.kubernetes.io/managed-by': 'cpsync' };
    const entry = (region: string) => accessEntryArn(MEMBER, argocd).replace(':us-east-1:', `:${region}:`);
    /** The configuration granting `argocd` its view, with `regions` listed (none: any region). */
    const granting = (regions: string[]) => ({
      ...CONFIG,
      providers: {
        ...providers,
        eks: { ...providers.eks, regions: regions.length > 0 ? regions : undefined },
      },
      features: { accessGrants: 'on' },
      consumers: [
        {
          name: 'argocd',
          namespaces: ['cluster-inventory'],
          level: 'view',
          identities: { eks: { roleArn: argocd } },
        },
      ],
    });
    await fc.assert(
      fc.asyncProperty(
        fc.subarray(REGIONS),
        fc.constantFrom(...REGIONS, 'eu-central-2', 'me-south-1'),
        async (listed, asked) => {
          const stack = new Stack(new App(), 'Regions', { env: { account: MEMBER, region: 'us-east-1' } });
          new CpsyncMemberRoles(stack, 'Cpsync', { cpsyncAccount: '123456789012', config: granting(listed) });
          const resources = Template.fromStack(stack).toJSON().Resources as Record<string, CfnResource>;
          const readerId = Object.keys(resources).find(
            (id) => resources[id]!.Properties.RoleName === 'cpsync-reader',
          )!;
          const policies = rolePolicies(resources, readerId, templateResolver(resources, {}, MEMBER).resolve);
          const ask = (action: string, resource: string, context: Record<string, string | string[]>) =>
            decide({ principal, action, resource, account: MEMBER, context }, policies);
          const expected = listed.length === 0 || listed.includes(asked) ? 'Allowed' : 'ImplicitlyDenied';
          const marks = { 'app.kubernetes.io/managed-by': 'cpsync', 'cpsync.io/consumer': 'argocd' };
          const requestTags = {
            ...Object.fromEntries(Object.entries(marks).map(([k, v]) => [`aws:RequestTag/${k}`, v])),
            'aws:TagKeys': Object.keys(marks),
          };
          const decisions = {
            create: await ask('eks:CreateAccessEntry', `arn:aws:eks:${asked}:${MEMBER}:cluster/checkout`, {
              'eks:accessEntryType': 'STANDARD',
              'eks:principalArn': argocd,
              ...requestTags,
            }),
            tag: await ask('eks:TagResource', entry(asked), requestTags),
            associate: await ask('eks:AssociateAccessPolicy', entry(asked), {
              ...tagged,
              'eks:policyArn': 'arn:aws:eks::aws:cluster-access-policy/AmazonEKSViewPolicy',
              'eks:accessScope': 'cluster',
            }),
            remove: await ask('eks:DeleteAccessEntry', entry(asked), {
              ...tagged,
              'aws:ResourceTag/cpsync.io/consumer': 'argocd',
            }),
            disassociate: await ask('eks:DisassociateAccessPolicy', entry(asked), {
              ...tagged,
              'eks:policyArn': 'arn:aws:eks::aws:cluster-access-policy/AmazonEKSAdminPolicy',
            }),
            list: await ask('eks:ListAccessEntries', `arn:aws:eks:${asked}:${MEMBER}:cluster/checkout`, {}),
            describe: await ask('eks:DescribeAccessEntry', entry(asked), {}),
          };
          assert.deepEqual(
            decisions,
            {
              create: expected,
              tag: expected,
              associate: expected,
              remove: expected,
              disassociate: expected,
              list: expected,
              describe: expected,
            },
            `${asked} with ${listed.join(', ') || 'no regions'} listed`,
          );
        },
      ),
      { numRuns: 20 },
    );
    // Each listed region's wildcard resources acknowledged: cdk-nag clean.
    const outdir = temporaryDirectory('cpsync-member-regions-');
    try {
      const app = new App({ outdir });
      new CpsyncMemberRoles(
        new Stack(app, 'Regions', { env: { account: MEMBER, region: 'us-east-1' } }),
        'Cpsync',
        { cpsyncAccount: '123456789012', config: granting(['eu-west-1', 'us-west-2']) },
      );
      Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
      app.synth();
      const report = JSON.parse(readFileSync(join(outdir, 'validation-report.json'), 'utf8')) as {
        pluginReports: unknown[];
      };
      assert.deepEqual(report.pluginReports, []);
    } finally {
      rmSync(outdir, { recursive: true, force: true });
    }
  });
});
