/**
 * The example subscribers from the configuration (`subscribers`): the stack, and the default app `cdk deploy`
 * runs, make them with the same constructs users compose themselves, settings from the configuration only.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { App, Duration, Validations } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { AwsSolutionsChecks } from 'cdk-nag';
import { stringify } from 'yaml';
import { CpsyncStack } from '../../infra/CpsyncStack.ts';
import { ArgoCdClusterSync, ChatNotifier } from '../../infra/subscribers.ts';
import { venvBin } from '../env/python.ts';
import { CONFIG, ENV, NO_BUNDLING } from '../support/infra.ts';
import { temporaryDirectory } from '../support/tmp.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SECRETS = `arn:aws:secretsmanager:${ENV.region}:${ENV.account}:secret:`;
/** A partial ARN whose name ends in - and six letters: granted both ways. */
const WEBHOOK = `${SECRETS}cpsync/chat-notify`;
const KUBECONFIG = `${SECRETS}argocd/kubeconfig-Xy12Ab`;
const SUBSCRIBERS = {
  chat: {
    webhookSecretArn: WEBHOOK,
    format: 'teams',
    quietSeconds: 120,
    batchingWindowSeconds: 10,
    minIntervalMillis: 1500,
  },
  argocd: {
    namespace: 'gitops',
    kubeconfigSecretArn: KUBECONFIG,
    credentialsArgs: ['--role-name', 'argocd'],
    reconcileEveryMinutes: 30,
    unguardedHub: 'trust',
    missingProfileGraceMinutes: 90,
  },
};

type Resources = Record<string, { Type: string; Properties: Record<string, unknown> }>;
const byPrefix = (resources: Resources, type: string, prefix: string) =>
  Object.entries(resources).find(([id, r]) => r.Type === type && id.startsWith(prefix))![1];
const variablesOf = (fn: { Properties: Record<string, unknown> }) =>
  (fn.Properties.Environment as { Variables: Record<string, unknown> }).Variables;

describe('the example subscribers from the configuration', () => {
  it('are made by the stack as the constructs make them for a user, with the configuration’s settings, cdk-nag and cfn-lint clean', () => {
    const outdir = temporaryDirectory('cpsync-subscribers-');
    try {
      const app = new App({ outdir, context: NO_BUNDLING });
      const stack = new CpsyncStack(app, 'Configured', {
        env: ENV,
        cpsync: { config: { ...CONFIG, subscribers: SUBSCRIBERS } },
      });
      Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
      app.synth();
      const report = JSON.parse(readFileSync(join(outdir, 'validation-report.json'), 'utf8')) as {
        pluginReports: unknown[];
      };
      assert.deepEqual(report.pluginReports, [], 'cdk-nag clean');
      const file = join(outdir, 'Configured.template.json');
      // W3005: the CDK adds DependsOn on each function's role although Fn::GetAtt already orders them.
      const lint = spawnSync(venvBin('cfn-lint'), ['--ignore-checks', 'W3005', '--', file], {
        encoding: 'utf8',
      });
      assert.equal(lint.status, 0, lint.stdout + lint.stderr);
      assert.ok(stack.chatNotifier && stack.argoCdClusterSync);

      const resources = Template.fromStack(stack).toJSON().Resources as Resources;
      const chat = variablesOf(byPrefix(resources, 'AWS::Lambda::Function', 'ChatFunction'));
      assert.equal(chat.CPSYNC_CONFIG, undefined, 'the notifier reads no configuration of cpsync’s');
      assert.deepEqual(
        [chat.CHAT_WEBHOOK_SECRET, chat.CHAT_FORMAT, chat.CHAT_QUIET_SECONDS, chat.CHAT_MIN_INTERVAL_MS],
        [WEBHOOK, 'teams', '120', '1500'],
      );
      const mapping = Object.values(resources).find(
        (r) =>
          r.Type === 'AWS::Lambda::EventSourceMapping' &&
          JSON.stringify(r.Properties.FunctionName).includes('ChatFunction'),
      )!;
      assert.equal(mapping.Properties.MaximumBatchingWindowInSeconds, 10);
      const argo = variablesOf(byPrefix(resources, 'AWS::Lambda::Function', 'ArgoCdFunction'));
      assert.deepEqual(
        [
          argo.ARGOCD_NAMESPACE,
          argo.ARGOCD_KUBECONFIG_SECRET_ARN,
          argo.ARGOCD_CREDENTIALS_ARGS,
          argo.ARGOCD_UNGUARDED_HUB,
          argo.ARGOCD_MISSING_PROFILE_GRACE_MINUTES,
        ],
        ['gitops', KUBECONFIG, '["--role-name","argocd"]', 'trust', '90'],
      );
      // The Argo CD function reaches the hub as an identity of its own: its role is not among those mapped to cpsync's
      // user, but an output of its own; the notifier's is in neither.
      const outputs = Template.fromStack(stack).findOutputs('*');
      const hubRoles = JSON.stringify(outputs.HubRoles);
      const roleOf = (prefix: string) =>
        (
          byPrefix(resources, 'AWS::Lambda::Function', prefix).Properties.Role as {
            'Fn::GetAtt': [string, string];
          }
        )['Fn::GetAtt'][0];
      assert.ok(hubRoles.includes(`"${roleOf('CpsyncScopeWorker')}"`), hubRoles);
      assert.ok(!hubRoles.includes(`"${roleOf('ArgoCdFunction')}"`), hubRoles);
      assert.ok(!hubRoles.includes(`"${roleOf('ChatFunction')}"`), hubRoles);
      assert.deepEqual(outputs.ArgoCdHubRole!.Value, { 'Fn::GetAtt': [roleOf('ArgoCdFunction'), 'Arn'] });
      const schedule = byPrefix(resources, 'AWS::Scheduler::Schedule', 'ArgoCdReconcile');
      assert.equal(schedule.Properties.ScheduleExpression, 'rate(30 minutes)');
      // Each reads its own secret, by the ARN's shape: the partial one ending in six letters both ways.
      const secretReads = (prefix: string) =>
        Object.values(resources)
          .filter((r) => r.Type === 'AWS::IAM::Policy' && JSON.stringify(r.Properties.Roles).includes(prefix))
          .flatMap(
            (r) =>
              (r.Properties.PolicyDocument as { Statement: Array<{ Action: unknown; Resource: unknown }> })
                .Statement,
          )
          .filter((st) => st.Action === 'secretsmanager:GetSecretValue')
          .flatMap((st) => [st.Resource].flat());
      assert.deepEqual(secretReads('ChatFunction'), [WEBHOOK, `${WEBHOOK}-??????`]);
      assert.deepEqual(
        secretReads('ArgoCdFunction').filter((arn) => String(arn).includes('argocd/')),
        [KUBECONFIG, `${KUBECONFIG}-??????`],
      );

      // A user composing the same constructs with the same settings gets the same template.
      const composed = new CpsyncStack(new App({ context: NO_BUNDLING }), 'Configured', {
        env: ENV,
        cpsync: { config: CONFIG },
      });
      new ChatNotifier(composed, 'Chat', {
        cpsync: composed.cpsync,
        webhookSecretArn: WEBHOOK,
        format: 'teams',
        quiet: Duration.minutes(2),
        batchingWindow: Duration.seconds(10),
        minInterval: Duration.millis(1500),
      });
      new ArgoCdClusterSync(composed, 'ArgoCd', {
        cpsync: composed.cpsync,
        namespace: 'gitops',
        argoCdKubeconfigArn: KUBECONFIG,
        credentialsArgs: ['--role-name', 'argocd'],
        reconcileEvery: Duration.minutes(30),
        unguardedHub: 'trust',
        missingProfileGrace: Duration.minutes(90),
      });
      assert.deepEqual(Template.fromStack(composed).toJSON(), Template.fromStack(stack).toJSON());
    } finally {
      rmSync(outdir, { recursive: true, force: true });
    }
  });

  it('are not made when the configuration does not ask; bad settings are refused at synth, naming the field', () => {
    const plain = new CpsyncStack(new App({ context: NO_BUNDLING }), 'Plain', {
      env: ENV,
      cpsync: { config: CONFIG },
    });
    assert.equal(plain.chatNotifier, undefined);
    assert.equal(plain.argoCdClusterSync, undefined);
    assert.equal(Object.keys(Template.fromStack(plain).findResources('AWS::Lambda::Function')).length, 5);
    const refused = (subscribers: unknown) => () =>
      new CpsyncStack(new App({ context: NO_BUNDLING }), 'Bad', {
        env: ENV,
        cpsync: { config: { ...CONFIG, subscribers } },
      });
    assert.throws(
      refused({ chat: { webhookSecretArn: 'arn:aws:s3:::hooks/slack' } }),
      /subscribers\.chat\.webhookSecretArn: must be a Secrets Manager secret ARN/,
    );
    assert.throws(
      refused({ chat: { webhookSecretArn: WEBHOOK, quietSeconds: 901 } }),
      /subscribers\.chat\.quietSeconds: /,
    );
    assert.throws(refused({ argocd: { namespace: 'Argo CD' } }), /subscribers\.argocd\.namespace: /);
    // A grace no longer than the full sync's interval (15 minutes here) would remove a Secret before cpsync writes
    // its profile again; 0 (at once) is taken.
    assert.throws(
      refused({ argocd: { missingProfileGraceMinutes: 15 } }),
      /ArgoCdClusterSync: missingProfileGrace \(15 minutes\) must be longer than the full sync's interval \(15 minutes\), or 0/,
    );
    assert.doesNotThrow(refused({ argocd: { missingProfileGraceMinutes: 0 } }));
    // On a hub reached with a kubeconfig (cpsync's identity), the subscriber needs a kubeconfig of its own.
    const HUB = `${SECRETS}hub/cpsync-AbCdEf`;
    const OWN = `${SECRETS}hub/argocd-GhIjKl`;
    const onKubeconfigHub = (argocd: Record<string, unknown>) =>
      new CpsyncStack(new App({ context: NO_BUNDLING }), 'KubeconfigHub', {
        env: ENV,
        cpsync: { config: { ...CONFIG, hub: { kubeconfigSecretArn: HUB }, subscribers: { argocd } } },
      });
    assert.throws(
      () => onKubeconfigHub({}),
      /ArgoCdClusterSync: the hub is reached with a kubeconfig \(hub\.kubeconfigSecretArn\), which is cpsync's own identity: give the subscriber a kubeconfig of its own identity on the hub \(the configuration's subscribers\.argocd\.hubKubeconfigSecretArn/,
    );
    const own = Template.fromStack(onKubeconfigHub({ hubKubeconfigSecretArn: OWN })).toJSON()
      .Resources as Resources;
    const argoFunction = byPrefix(own, 'AWS::Lambda::Function', 'ArgoCdFunction');
    // Its configuration names its own kubeconfig of the hub (the template joins the text around the stack's tokens).
    const given = JSON.stringify(variablesOf(argoFunction).CPSYNC_CONFIG);
    assert.ok(given.includes(`kubeconfigSecretArn\\":\\"${OWN}`) && !given.includes(HUB), given);
    const argoRole = (argoFunction.Properties.Role as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
    const reads = Object.values(own)
      .filter((r) => r.Type === 'AWS::IAM::Policy' && JSON.stringify(r.Properties.Roles).includes(argoRole))
      .flatMap(
        (r) =>
          (r.Properties.PolicyDocument as { Statement: Array<{ Action: unknown; Resource: unknown }> })
            .Statement,
      )
      .filter((st) => [st.Action].flat().includes('secretsmanager:GetSecretValue'))
      .flatMap((st) => [st.Resource].flat().map(String));
    assert.ok(
      reads.some((arn) => arn.startsWith(OWN)),
      JSON.stringify(reads),
    );
    assert.ok(!reads.some((arn) => arn.startsWith(HUB)), JSON.stringify(reads));
    assert.throws(refused({ slack: {} }), /subscribers: Unrecognized key: "slack"/);
    // The constructs take the webhook's secret one way.
    const stack = new CpsyncStack(new App({ context: NO_BUNDLING }), 'Both', {
      env: ENV,
      cpsync: { config: CONFIG },
    });
    const secret = Secret.fromSecretNameV2(stack, 'Url', 'chat');
    assert.throws(
      () => new ChatNotifier(stack, 'Chat', { cpsync: stack.cpsync }),
      /give either webhookSecret or webhookSecretArn/,
    );
    assert.throws(
      () =>
        new ChatNotifier(stack, 'Chat2', {
          cpsync: stack.cpsync,
          webhookSecret: secret,
          webhookSecretArn: WEBHOOK,
        }),
      /give either webhookSecret or webhookSecretArn/,
    );
  });

  it('are deployed by the default app (`npx cdk synth -c config=<file>`, offline) when its file asks', () => {
    const directory = temporaryDirectory('cpsync-app-subscribers-');
    try {
      const file = join(directory, 'cpsync.yaml');
      writeFileSync(file, stringify({ ...CONFIG, subscribers: SUBSCRIBERS }));
      const out = join(directory, 'cdk.out');
      const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('AWS_')));
      const result = spawnSync(
        join(ROOT, 'node_modules/.bin/cdk'),
        ['synth', '--quiet', '--no-notices', '--output', out, '-c', `config=${file}`],
        {
          cwd: ROOT,
          env: { ...env, AWS_EC2_METADATA_DISABLED: 'true', CDK_DISABLE_CLI_TELEMETRY: 'true' },
          encoding: 'utf8',
        },
      );
      assert.equal(result.status, 0, result.stderr.slice(-3000));
      const template = JSON.parse(readFileSync(join(out, 'Cpsync.template.json'), 'utf8')) as {
        Resources: Resources;
      };
      const functions = Object.keys(template.Resources)
        .filter((id) => template.Resources[id]!.Type === 'AWS::Lambda::Function')
        .map((id) => id.replace(/[0-9A-F]{8}$/, ''))
        .sort();
      assert.deepEqual(functions, [
        'ArgoCdFunction',
        'ChatFunction',
        'CpsyncEksEventHandler',
        'CpsyncFollowUp',
        'CpsyncScopeEnumerator',
        'CpsyncScopeWorker',
        'CpsyncWebhook',
      ]);
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });
});
