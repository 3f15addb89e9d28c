/**
 * The configuration the stack writes is the one its functions accept: every function's `CPSYNC_CONFIG` is
 * read out of the synthesized template (CloudFormation's tokens resolved as a deploy would resolve them) and
 * parsed by the functions' own reader, for every example and test configuration and for generated ones.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import fc from 'fast-check';
import { configDocument, parseConfig, type CpsyncConfig } from '../../adapters/compose/config.ts';
import { configFromEnvironment } from '../../functions/runtime.ts';
import { CpsyncStack } from '../../infra/CpsyncStack.ts';
import { CONFIG, ENV, EXAMPLE, NO_BUNDLING } from '../support/infra.ts';
import { templateResolver, type CfnResource } from '../support/template.ts';

/**
 * What each resource's `Ref` answers when deployed: a secret's ARN, a queue's URL, else the name the
 * resource would get (`<logical id>-ref`).
 */
function deployedRefs(resources: Record<string, CfnResource>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(resources).map(([id, { Type }]) => [
      id,
      Type === 'AWS::SecretsManager::Secret'
        ? `arn:aws:secretsmanager:${ENV.region}:${ENV.account}:secret:${id}-AbCdEf`
        : Type === 'AWS::SQS::Queue'
          ? `https://sqs.${ENV.region}.amazonaws.com/${ENV.account}/${id}`
          : `${id}-ref`,
    ]),
  );
}

/** Each function of the template: its logical id and its CPSYNC_CONFIG text, when it has one. */
function functionConfigs(template: Template): Array<{ id: string; text?: string }> {
  const resources = template.toJSON().Resources as Record<string, CfnResource>;
  const { resolve } = templateResolver(resources, deployedRefs(resources));
  return Object.entries(template.findResources('AWS::Lambda::Function')).map(([id, resource]) => {
    const variables = (resource as { Properties: { Environment?: { Variables?: Record<string, unknown> } } })
      .Properties.Environment?.Variables;
    return variables?.CPSYNC_CONFIG === undefined
      ? { id }
      : { id, text: String(resolve(variables.CPSYNC_CONFIG)) };
  });
}

const WEBHOOK_SECRET = `arn:aws:secretsmanager:${ENV.region}:${ENV.account}:secret:cpsync/chat-webhook`;
const ARGOCD_SECRET = `arn:aws:secretsmanager:${ENV.region}:${ENV.account}:secret:cpsync/argocd-AbC123`;
/** The Argo CD subscriber's own kubeconfig of a hub reached with one (never cpsync's). */
const ARGOCD_HUB_SECRET = `arn:aws:secretsmanager:${ENV.region}:${ENV.account}:secret:hub/subscriber-DeF456`;
const kubeconfigHub = (config: unknown) => {
  const hub = (config as { hub?: object }).hub;
  return hub !== undefined && 'kubeconfigSecretArn' in hub;
};

/** Synthesizes the deployable stack for `config`, with both example subscribers asked for by it. */
function synthesize(config: unknown): Template {
  const app = new App({ context: NO_BUNDLING });
  const stack = new CpsyncStack(app, 'Cpsync', {
    env: ENV,
    cpsync: {
      config: {
        ...(config as object),
        subscribers: {
          chat: { webhookSecretArn: WEBHOOK_SECRET },
          argocd: {
            kubeconfigSecretArn: ARGOCD_SECRET,
            ...(kubeconfigHub(config) ? { hubKubeconfigSecretArn: ARGOCD_HUB_SECRET } : {}),
          },
        },
      },
    },
  });
  return Template.fromStack(stack);
}

/**
 * What a function reads from its environment equals what was configured, with the stack's own parts filled
 * in, and no more than it uses: no function is told of the subscribers' settings; the Argo CD subscriber reads
 * the hub and the inventory, not the clouds or the consumers; the chat notifier no configuration at all.
 */
function assertRoundTrip(config: unknown, label: string): void {
  const configured = parseConfig(config, label);
  const functions = functionConfigs(synthesize(config));
  // The five functions of the construct and the two subscribers.
  assert.equal(functions.length, 7, `${label}: functions`);
  assert.deepEqual(
    functions.filter((f) => f.text === undefined).map((f) => f.id.replace(/[0-9A-F]{8}$/, '')),
    ['ChatFunction'],
    `${label}: only the chat notifier has no configuration`,
  );
  for (const { id, text } of functions) {
    if (text === undefined) continue;
    assert.ok(
      !text.includes('subscribers') &&
        !text.includes('cpsync/chat-webhook') &&
        !text.includes('cpsync/argocd'),
      `${label}: ${id} is not told of the subscribers`,
    );
    let read: CpsyncConfig;
    try {
      read = configFromEnvironment({ CPSYNC_CONFIG: text });
    } catch (error) {
      assert.fail(`${label}: ${id} refuses the configuration the stack gave it: ${(error as Error).message}`);
    }
    const argoCd = id.startsWith('ArgoCd');
    const { bus, outbox, idempotency, webhook, memberProbe, answers, absences, ...rest } = read;
    const {
      bus: _bus,
      outbox: _outbox,
      idempotency: _idempotency,
      webhook: _webhook,
      memberProbe: _probe,
      answers: _answers,
      absences: _absences,
      ...wanted
    } = configured;
    assert.deepEqual(
      rest,
      argoCd
        ? {
            ...wanted,
            providers: { off: [] },
            consumers: [],
            ...(kubeconfigHub(config) ? { hub: { kubeconfigSecretArn: ARGOCD_HUB_SECRET } } : {}),
          }
        : wanted,
      `${label}: ${id} reads the configuration that was deployed`,
    );
    assert.match(JSON.stringify(bus), /"busName":"CpsyncBus[0-9A-F]+-ref"/, `${label}: ${id} bus`);
    assert.match(JSON.stringify(outbox), /"table":"CpsyncOutbox[0-9A-F]+-ref"/, `${label}: ${id} outbox`);
    assert.match(idempotency?.table ?? '', /^CpsyncIdempotency[0-9A-F]+-ref$/, `${label}: ${id} idempotency`);
    assert.equal(memberProbe.slotMinutes, 15, `${label}: ${id} member probe slots follow the schedule`);
    // The clouds' remembered answers, in the stack's table, for the functions that read clusters.
    if (argoCd || (!configured.providers.eks && !configured.providers.aks))
      assert.equal(answers, undefined, `${label}: ${id} has no answers table`);
    else assert.match(answers?.table ?? '', /^CpsyncAnswers[0-9A-F]+-ref$/, `${label}: ${id} answers`);
    // The deletion grace's counts, in the stack's table (whatever the clouds).
    assert.match(absences?.table ?? '', /^CpsyncAbsences[0-9A-F]+-ref$/, `${label}: ${id} absences`);
    if (argoCd) assert.deepEqual(webhook, {}, `${label}: ${id} has no webhook keys`);
    else if (configured.providers.aks) assert.ok(webhook.azure, `${label}: ${id} has the Event Grid key`);
  }
}

describe('the configuration the stack deploys', () => {
  it('is accepted by every function, for the example and the test configurations', () => {
    assertRoundTrip(CONFIG, 'the test configuration');
    assertRoundTrip(
      {
        ...EXAMPLE,
        hub: { kubeconfigSecretArn: 'arn:aws:secretsmanager:us-east-1:123456789012:secret:hub-AbCdEf' },
      },
      'the example with a kubeconfig secret',
    );
    const providers = EXAMPLE.providers as Record<string, unknown>;
    assertRoundTrip(
      { ...CONFIG, providers: { ...providers, gke: 'off', aks: 'off' } },
      'providers set to off',
    );
    assertRoundTrip(
      {
        ...CONFIG,
        inventory: {
          ...(EXAMPLE.inventory as Record<string, unknown>),
          preferPrivateEndpoints: true,
          clusterSets: { fleet: ['cluster-inventory'] },
        },
        features: { projections: 'on' },
      },
      'ClusterSets in their list form and the older privateEndpoints switch',
    );
  });

  it('parses back to the same configuration for any valid document (configDocument)', () => {
    const state = fc.constantFrom<'absent' | 'off' | 'on'>('absent', 'off', 'on');
    const providers = EXAMPLE.providers as Record<string, unknown>;
    fc.assert(
      fc.property(
        fc.record({ eks: state, gke: state, aks: state }),
        fc.dictionary(
          fc.constantFrom('projections', 'privateEndpoints', 'memberProbe', 'certificateAuthority'),
          fc.constantFrom('on', 'off', true, false),
        ),
        fc.option(fc.boolean(), { nil: undefined }),
        fc.constantFrom<unknown>(
          undefined,
          { fleet: ['cluster-inventory'] },
          { 'cluster-inventory': 'fleet' },
        ),
        (states, features, older, clusterSets) => {
          const document = {
            ...CONFIG,
            providers: Object.fromEntries(
              Object.entries(states)
                .filter(([, s]) => s !== 'absent')
                .map(([name, s]) => [name, s === 'off' ? 'off' : providers[name]]),
            ),
            features: older === undefined ? features : { ...features, privateEndpoints: older },
            inventory: {
              ...(EXAMPLE.inventory as Record<string, unknown>),
              ...(older === undefined ? {} : { preferPrivateEndpoints: older }),
              ...(clusterSets === undefined ? {} : { clusterSets }),
            },
          };
          const parsed = parseConfig(document, 'generated');
          const again = parseConfig(JSON.parse(JSON.stringify(configDocument(parsed))), 'round trip');
          assert.deepEqual(again, parsed);
        },
      ),
      { seed: 20261124, numRuns: 200 },
    );
  });
});
