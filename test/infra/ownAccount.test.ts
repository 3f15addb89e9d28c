/**
 * What the functions are granted on cpsync's own account (read with their own role, not a member role): its
 * clusters, node groups and regions, and the accessGrants feature's access entries — only when the
 * configuration reads that account (it lists it, or the accounts are discovered). An environment-agnostic
 * stack, whose account is known only at deploy, holds those grants under a CloudFormation condition.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { App, Validations } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { CpsyncStack } from '../../infra/CpsyncStack.ts';
import { venvBin } from '../env/python.ts';
import { grantsOf, rolePolicies } from '../support/iam.ts';
import { ARGOCD_CONSUMER, CONFIG, ENV, EXAMPLE, NO_BUNDLING } from '../support/infra.ts';
import { placeholderRefs, templateResolver, type CfnResource } from '../support/template.ts';
import { temporaryDirectory } from '../support/tmp.ts';

const providers = EXAMPLE.providers as Record<string, Record<string, unknown>>;
/** The example configuration reading EKS in `accounts`, with the accessGrants feature on for one consumer. */
const reading = (accounts: unknown) => ({
  ...CONFIG,
  providers: { ...providers, eks: { ...providers.eks, accounts } },
  features: { accessGrants: 'on' },
  consumers: [ARGOCD_CONSUMER],
});
const FUNCTIONS = ['CpsyncScopeWorker', 'CpsyncEksEventHandler', 'CpsyncFollowUp'];
/** What reads or grants in cpsync's own account (the EKS hub's DescribeCluster aside). */
const OWN =
  /^(eks:(ListClusters|DescribeCluster|ListNodegroups|DescribeNodegroup|\w*Access\w*|TagResource)|ec2:DescribeRegions)$/;

/** Synthesizes the stack for `config` (in `env`, or environment-agnostic), cdk-nag checked; its template. */
function synthesize(config: unknown, env: typeof ENV | undefined, outdir: string) {
  const app = new App({ outdir, context: NO_BUNDLING });
  const stack = new CpsyncStack(app, 'Own', { ...(env ? { env } : {}), cpsync: { config } });
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  app.synth();
  const report = JSON.parse(readFileSync(join(outdir, 'validation-report.json'), 'utf8')) as {
    pluginReports: unknown[];
  };
  assert.deepEqual(report.pluginReports, [], 'cdk-nag clean');
  return Template.fromStack(stack).toJSON() as {
    Resources: Record<string, CfnResource & { Condition?: string }>;
    Conditions?: Record<string, unknown>;
  };
}

/** Each cluster-reading function's grants on its own account, as `action resource`. */
function ownGrants(resources: Record<string, CfnResource>, account = ENV.account) {
  const { resolve } = templateResolver(resources, placeholderRefs(resources), account);
  return Object.fromEntries(
    FUNCTIONS.map((prefix) => {
      const roleId = Object.keys(resources).find(
        (id) => resources[id]!.Type === 'AWS::IAM::Role' && id.startsWith(prefix),
      )!;
      const grants = grantsOf(rolePolicies(resources, roleId, resolve))
        .filter((g) => OWN.test(g.action) && !g.resource.endsWith(':cluster/hub'))
        .map((g) => `${g.action} ${g.resource}`);
      return [prefix, [...new Set(grants)].sort()];
    }),
  );
}

describe("grants on cpsync's own account", () => {
  it('are made only when the configuration reads that account: listed, or discovered through Organizations', () => {
    const outdir = temporaryDirectory('cpsync-own-account-');
    try {
      const elsewhere = ownGrants(synthesize(reading(['111122223333']), ENV, outdir).Resources);
      assert.deepEqual(elsewhere, {
        CpsyncScopeWorker: [],
        CpsyncEksEventHandler: [],
        CpsyncFollowUp: [],
      });
      for (const accounts of [['111122223333', ENV.account], { organization: {} }]) {
        const granted = ownGrants(synthesize(reading(accounts), ENV, outdir).Resources);
        for (const prefix of FUNCTIONS) {
          const actions = granted[prefix]!.map((g) => g.split(' ')[0]);
          for (const action of [
            'eks:ListClusters',
            'eks:DescribeCluster',
            'eks:DescribeNodegroup',
            'eks:CreateAccessEntry',
            'eks:DeleteAccessEntry',
          ])
            assert.ok(actions.includes(action), `${prefix} ${JSON.stringify(accounts)}: ${action}`);
          assert.ok(
            granted[prefix]!.every((g) => g.endsWith(' *') || g.includes(`:${ENV.account}:`)),
            `${prefix}: only its own account's resources: ${granted[prefix]!.join(', ')}`,
          );
        }
      }
    } finally {
      rmSync(outdir, { recursive: true, force: true });
    }
  });

  it('are held under a condition on the account when the stack is environment-agnostic, cfn-lint and cdk-nag clean', () => {
    const outdir = temporaryDirectory('cpsync-own-account-');
    try {
      // Twelve accounts: more than one Fn::Or takes.
      const accounts = Array.from({ length: 12 }, (_, i) => String(100000000000 + i));
      const template = synthesize(reading(accounts), undefined, outdir);
      const conditional = Object.entries(template.Resources).filter(([, r]) => r.Condition);
      assert.deepEqual(
        conditional.map(([id, r]) => [r.Type, id.replace(/[0-9A-F]{8}$/, '')]).sort(),
        FUNCTIONS.map((prefix) => ['AWS::IAM::Policy', `${prefix}OwnAccount`]).sort(),
      );
      const [name] = new Set(conditional.map(([, r]) => r.Condition!));
      const condition = JSON.stringify(template.Conditions![name!]);
      for (const account of accounts)
        assert.ok(
          condition.includes(`{"Fn::Equals":[{"Ref":"AWS::AccountId"},"${account}"]}`),
          `${account} in ${condition}`,
        );
      // Deployed in an account the list names, the grants are there; in another, the policies are not made.
      const inList = ownGrants(template.Resources, accounts[11]);
      assert.ok(inList.CpsyncScopeWorker!.some((g) => g.startsWith('eks:ListClusters ')));
      const unconditional = Object.fromEntries(
        Object.entries(template.Resources).filter(([, r]) => !r.Condition),
      );
      assert.deepEqual(ownGrants(unconditional, '999999999999').CpsyncScopeWorker, []);

      const file = join(outdir, 'Own.template.json');
      writeFileSync(file, JSON.stringify(template));
      // W3005: the CDK adds DependsOn on each function's role although Fn::GetAtt already orders them.
      const lint = spawnSync(venvBin('cfn-lint'), ['--ignore-checks', 'W3005', '--', file], {
        encoding: 'utf8',
      });
      assert.equal(lint.status, 0, lint.stdout + lint.stderr);
    } finally {
      rmSync(outdir, { recursive: true, force: true });
    }
  });
});
