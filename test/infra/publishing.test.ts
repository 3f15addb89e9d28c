/**
 * Who may put what on cpsync's bus, as IAM judges the synthesized template: cpsync's five functions may put
 * cpsync's own events there (its source, its detail-types) and nothing else, on no other bus; no other role of
 * the stack (the example subscribers' among them) may put events at all. Judged by an IAM policy simulator over
 * generated entries: sources and detail-types near cpsync's (case, spaces, prefixes and suffixes), and calls
 * mixing cpsync's entries with another's.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { CpsyncStack } from '../../infra/CpsyncStack.ts';
import { DEFAULT_SOURCE, DetailType } from '../../events/detailTypes.ts';
import { decide, grantsOf, rolePolicies } from '../support/iam.ts';
import { CONFIG, ENV, NO_BUNDLING } from '../support/infra.ts';
import { placeholderRefs, templateResolver, type CfnResource } from '../support/template.ts';

const SECRETS = `arn:aws:secretsmanager:${ENV.region}:${ENV.account}:secret:`;
const SUBSCRIBERS = {
  chat: { webhookSecretArn: `${SECRETS}cpsync/chat-notify`, quietSeconds: 60 },
  argocd: { namespace: 'argocd', kubeconfigSecretArn: `${SECRETS}argocd/kubeconfig-Xy12Ab` },
};
const FUNCTIONS = [
  'CpsyncScopeEnumerator',
  'CpsyncScopeWorker',
  'CpsyncEksEventHandler',
  'CpsyncWebhook',
  'CpsyncFollowUp',
];
const DETAIL_TYPES: readonly string[] = Object.values(DetailType);

/** A stack with both example subscribers, synthesized without bundling: its resources and resolver. */
function synthesize(source?: string) {
  const app = new App({ context: NO_BUNDLING });
  const config = {
    ...CONFIG,
    ...(source ? { bus: { eventBridge: { busName: 'ignored', source } } } : {}),
    subscribers: SUBSCRIBERS,
  };
  const stack = new CpsyncStack(app, 'Publishing', { env: ENV, cpsync: { config } });
  const resources = Template.fromStack(stack).toJSON().Resources as Record<string, CfnResource>;
  const { resolve, arnOf } = templateResolver(resources, placeholderRefs(resources), ENV.account);
  const busId = Object.keys(resources).find((id) => resources[id]!.Type === 'AWS::Events::EventBus')!;
  const roles = Object.keys(resources).filter((id) => resources[id]!.Type === 'AWS::IAM::Role');
  const roleOf = (prefix: string) => {
    const id = roles.find((role) => role.startsWith(prefix));
    assert.ok(id, `a role of ${prefix}`);
    return id;
  };
  return { resources, resolve, arnOf, bus: arnOf(busId), roles, roleOf };
}

/** IAM's decision for a PutEvents call of `roleId` with `entries` on `bus`. */
async function putEvents(
  stack: ReturnType<typeof synthesize>,
  roleId: string,
  bus: string,
  entries: ReadonlyArray<{ source: string; detailType: string }>,
): Promise<string> {
  return decide(
    {
      principal: `arn:aws:sts::${ENV.account}:assumed-role/${roleId}/session`,
      action: 'events:PutEvents',
      resource: bus,
      account: ENV.account,
      context: {
        'events:source': [...new Set(entries.map((e) => e.source))],
        'events:detail-type': [...new Set(entries.map((e) => e.detailType))],
      },
    },
    rolePolicies(stack.resources, roleId, stack.resolve),
  );
}

/** Strings near `word`: its case changed, spaced, cut, lengthened, or anything else. */
const near = (word: string) =>
  fc.oneof(
    fc.constantFrom(
      word.toUpperCase(),
      word[0]!.toUpperCase() + word.slice(1),
      ` ${word}`,
      `${word} `,
      `${word}.`,
      `${word}*`,
      word.slice(0, -1),
      `aws.${word}`,
      `${word}.evil`,
      '',
      '*',
    ),
    fc.tuple(fc.string({ maxLength: 4 }), fc.string({ maxLength: 4 })).map(([a, b]) => `${a}${word}${b}`),
    fc.string({ minLength: 1, maxLength: 24 }),
  );

describe("who may put events on cpsync's bus", () => {
  const stack = synthesize();
  const ours = fc.record({
    source: fc.constant<string>(DEFAULT_SOURCE),
    detailType: fc.constantFrom(...DETAIL_TYPES),
  });

  it("allows each of cpsync's functions its own events: its source, every detail-type it publishes, up to 10 a call", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...FUNCTIONS),
        fc.array(ours, { minLength: 1, maxLength: 10 }),
        async (fn, entries) => {
          assert.equal(await putEvents(stack, stack.roleOf(fn), stack.bus, entries), 'Allowed');
        },
      ),
      { numRuns: 60 },
    );
  });

  it('refuses them any other source or detail-type, alone or beside their own entries, and any other bus', async () => {
    const stranger = fc.oneof(
      fc.record({
        source: near(DEFAULT_SOURCE).filter((s) => s !== DEFAULT_SOURCE),
        detailType: fc.constantFrom(...DETAIL_TYPES),
      }),
      fc.record({
        source: fc.constant(DEFAULT_SOURCE),
        detailType: fc
          .oneof(
            fc.constantFrom(...DETAIL_TYPES).chain((t) => near(t)),
            fc.string({ maxLength: 30 }),
          )
          .filter((t) => !DETAIL_TYPES.includes(t)),
      }),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...FUNCTIONS),
        fc.array(ours, { maxLength: 9 }),
        stranger,
        fc.nat(),
        async (fn, own, odd, at) => {
          const entries = [...own];
          entries.splice(at % (own.length + 1), 0, odd);
          const decision = await putEvents(stack, stack.roleOf(fn), stack.bus, entries);
          assert.notEqual(decision, 'Allowed', `${fn} put ${JSON.stringify(odd)}`);
        },
      ),
      { numRuns: 150 },
    );
    for (const fn of FUNCTIONS) {
      const elsewhere = `arn:aws:events:${ENV.region}:${ENV.account}:event-bus/default`;
      const entry = [{ source: DEFAULT_SOURCE, detailType: DetailType.Created }];
      assert.notEqual(await putEvents(stack, stack.roleOf(fn), elsewhere, entry), 'Allowed', fn);
    }
  });

  it('follows the configured source', async () => {
    const configured = synthesize('acme.cpsync');
    const entry = (source: string) => [{ source, detailType: DetailType.Updated }];
    for (const fn of FUNCTIONS) {
      const role = configured.roleOf(fn);
      assert.equal(await putEvents(configured, role, configured.bus, entry('acme.cpsync')), 'Allowed');
      assert.notEqual(await putEvents(configured, role, configured.bus, entry(DEFAULT_SOURCE)), 'Allowed');
    }
  });

  it("gives no other role of the stack, the example subscribers' included, PutEvents", () => {
    const publishers = stack.roles.filter((id) =>
      grantsOf(rolePolicies(stack.resources, id, stack.resolve)).some((g) =>
        /^events:(PutEvents|\*)$|^\*$/.test(g.action),
      ),
    );
    assert.deepEqual(
      publishers.map((id) => FUNCTIONS.find((fn) => id.startsWith(fn)) ?? id).sort(),
      [...FUNCTIONS].sort(),
    );
    // The subscribers are there to be judged.
    assert.ok(stack.roles.some((id) => /Chat/.test(id)) && stack.roles.some((id) => /ArgoCd/.test(id)));
  });
});
