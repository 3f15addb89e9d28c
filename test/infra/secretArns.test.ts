/**
 * Secrets named in the configuration by ARN, complete or partial: what the functions are granted is judged by
 * the IAM policy simulator against the secret's real ARN (its name, `-` and six random alphanumeric characters).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { CpsyncStack } from '../../infra/CpsyncStack.ts';
import { secretResourceArns } from '../../infra/parts.ts';
import { decide, rolePolicies } from '../support/iam.ts';
import { CONFIG, ENV, EXAMPLE, NO_BUNDLING } from '../support/infra.ts';
import { placeholderRefs, roleIdOf, templateResolver, type CfnResource } from '../support/template.ts';

const SECRETS = `arn:aws:secretsmanager:us-east-1:${ENV.account}:secret:`;

describe('secret ARNs in the configuration', () => {
  it('are told complete from partial by their shape: a name not ending in - and six alphanumerics is partial; one that does may be either, and both are matched', () => {
    const cases: Array<[string, string[]]> = [
      ['cpsync/azure', ['cpsync/azure-??????']],
      ['hub-kubeconfig', ['hub-kubeconfig-??????']],
      ['cpsync/hub-abc', ['cpsync/hub-abc-??????']],
      ['cpsync/hub_config', ['cpsync/hub_config-??????']],
      // A partial ARN of a secret named so, or the complete ARN of `cpsync/hub`: both.
      ['cpsync/hub-config', ['cpsync/hub-config', 'cpsync/hub-config-??????']],
      ['cpsync/hub-Xy12Ab', ['cpsync/hub-Xy12Ab', 'cpsync/hub-Xy12Ab-??????']],
    ];
    for (const [name, matched] of cases)
      assert.deepEqual(
        secretResourceArns(`${SECRETS}${name}`),
        matched.map((m) => `${SECRETS}${m}`),
        name,
      );
    assert.throws(
      () => secretResourceArns('arn:aws:s3:::bucket/key', 'hub.kubeconfigSecretArn'),
      /hub\.kubeconfigSecretArn: arn:aws:s3:::bucket\/key is not a Secrets Manager secret ARN/,
    );
  });

  it('let the functions read exactly the secret each names, whatever its suffix, and no secret whose name only begins alike', async () => {
    const providers = EXAMPLE.providers as Record<string, Record<string, unknown>>;
    const config = {
      ...CONFIG,
      // A partial ARN whose name ends in - and six letters, and one that does not.
      hub: { kubeconfigSecretArn: `${SECRETS}cpsync/hub-config` },
      providers: {
        ...providers,
        gke: { ...providers.gke, credentials: { secretArn: `${SECRETS}cpsync/gcp` } },
      },
    };
    const app = new App({ context: NO_BUNDLING });
    const stack = new CpsyncStack(app, 'Secrets', { env: ENV, cpsync: { config } });
    const resources = Template.fromStack(stack).toJSON().Resources as Record<string, CfnResource>;
    const { resolve } = templateResolver(resources, placeholderRefs(resources));
    const roleId = Object.keys(resources).find(
      (id) => resources[id]!.Type === 'AWS::IAM::Role' && id.startsWith('CpsyncScopeWorker'),
    )!;
    const policies = rolePolicies(resources, roleId, resolve);
    const read = (name: string) =>
      decide(
        {
          principal: `arn:aws:sts::${ENV.account}:assumed-role/${roleId}/worker`,
          action: 'secretsmanager:GetSecretValue',
          resource: `${SECRETS}${name}`,
          account: ENV.account,
        },
        policies,
      );
    assert.equal(await read('cpsync/hub-config-Xy12Ab'), 'Allowed', 'the secret named cpsync/hub-config');
    assert.equal(await read('cpsync/hub-config'), 'Allowed', 'or cpsync/hub, if the ARN was complete');
    assert.equal(await read('cpsync/hub-config-other-Xy12Ab'), 'ImplicitlyDenied');
    assert.equal(await read('cpsync/hub-Xy12Ab'), 'ImplicitlyDenied');
    assert.equal(await read('cpsync/gcp-Ab12Cd'), 'Allowed');
    assert.equal(await read('cpsync/gcp-extra-Ab12Cd'), 'ImplicitlyDenied');
    assert.equal(await read('cpsync/gcp'), 'ImplicitlyDenied');
  });

  it("give the scope enumerator a cloud's secret only where it discovers that cloud's projects or subscriptions; the functions that read clusters, always", async () => {
    const providers = EXAMPLE.providers as Record<string, Record<string, unknown>>;
    const gcp = `${SECRETS}cpsync/gcp-Ab12Cd`;
    const azure = `${SECRETS}cpsync/azure-Ef34Gh`;
    const readers = async (gkeProjects: unknown, aksSubscriptions: unknown) => {
      const config = {
        ...CONFIG,
        providers: {
          ...providers,
          gke: { ...providers.gke, projects: gkeProjects, credentials: { secretArn: gcp } },
          aks: {
            ...providers.aks,
            subscriptions: aksSubscriptions,
            credential: { tenantId: 'tenant', clientId: 'client', clientSecret: { secretArn: azure } },
          },
        },
      };
      const stack = new CpsyncStack(new App({ context: NO_BUNDLING }), 'Secrets', {
        env: ENV,
        cpsync: { config },
      });
      const resources = Template.fromStack(stack).toJSON().Resources as Record<string, CfnResource>;
      const { resolve } = templateResolver(resources, placeholderRefs(resources));
      const who: Record<string, string[]> = {};
      for (const fn of ['CpsyncScopeEnumerator', 'CpsyncScopeWorker', 'CpsyncWebhook', 'CpsyncFollowUp']) {
        const roleId = roleIdOf(resources, fn);
        for (const [cloud, arn] of [
          ['gke', gcp],
          ['aks', azure],
        ] as const) {
          const decision = await decide(
            {
              principal: `arn:aws:sts::${ENV.account}:assumed-role/${roleId}/fn`,
              action: 'secretsmanager:GetSecretValue',
              resource: arn,
              account: ENV.account,
            },
            rolePolicies(resources, roleId, resolve),
          );
          if (decision === 'Allowed') (who[cloud] ??= []).push(fn);
        }
      }
      return who;
    };
    const listed = ['acme-data'];
    const subscriptions = ['00000000-1111-2222-3333-444444444444'];
    const readingClusters = ['CpsyncScopeWorker', 'CpsyncWebhook', 'CpsyncFollowUp'];
    assert.deepEqual(await readers(listed, subscriptions), { gke: readingClusters, aks: readingClusters });
    assert.deepEqual(await readers({ search: { query: 'parent:folders/123' } }, subscriptions), {
      gke: ['CpsyncScopeEnumerator', ...readingClusters],
      aks: readingClusters,
    });
    assert.deepEqual(await readers(listed, { all: true }), {
      gke: readingClusters,
      aks: ['CpsyncScopeEnumerator', ...readingClusters],
    });
  });
});
