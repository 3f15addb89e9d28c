/**
 * The items each function may touch in the tables cpsync keeps per cluster and per delivery, judged by an IAM policy
 * simulator against the synthesized roles: a function's own clouds' chases, answers, missed-listing counts (put by
 * the scope worker alone) and grant records, and its own work's idempotency records (IAM's `dynamodb:LeadingKeys`,
 * every key of a batch).
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import fc from 'fast-check';
import { CpsyncStack } from '../../infra/CpsyncStack.ts';
import { ONCE_WORK } from '../../functions/onceWork.ts';
import { decide, rolePolicies } from '../support/iam.ts';
import { ARGOCD_CONSUMER, CONFIG, ENV, NO_BUNDLING } from '../support/infra.ts';
import { placeholderRefs, roleIdOf, templateResolver, type CfnResource } from '../support/template.ts';

type Cloud = 'eks' | 'gke' | 'aks';
const FUNCTIONS: Record<string, { clouds: Cloud[]; work: string }> = {
  CpsyncScopeWorker: { clouds: ['eks', 'gke', 'aks'], work: ONCE_WORK.scopeWorker },
  CpsyncFollowUp: { clouds: ['eks', 'gke', 'aks'], work: ONCE_WORK.followUp },
  CpsyncEksEventHandler: { clouds: ['eks'], work: ONCE_WORK.eksEventHandler },
  CpsyncWebhook: { clouds: ['gke', 'aks'], work: ONCE_WORK.webhook },
};
type Table = 'Chases' | 'Answers' | 'Absences' | 'Grants' | 'Idempotency';
/** What each function does with each table's items (as the stack grants it), one action each way. */
const ACTIONS: Record<Table, string[]> = {
  Chases: ['dynamodb:UpdateItem', 'dynamodb:DeleteItem'],
  Answers: ['dynamodb:PutItem', 'dynamodb:DeleteItem'],
  Absences: ['dynamodb:BatchGetItem', 'dynamodb:PutItem', 'dynamodb:DeleteItem'],
  Grants: ['dynamodb:BatchGetItem', 'dynamodb:PutItem', 'dynamodb:DeleteItem'],
  Idempotency: ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem'],
};

describe("the items of cpsync's tables each function may touch", () => {
  let resources: Record<string, CfnResource>;
  let resolve: (value: unknown) => unknown;

  before(() => {
    const stack = new CpsyncStack(new App({ context: NO_BUNDLING }), 'Keys', {
      env: ENV,
      cpsync: {
        config: {
          ...CONFIG,
          features: { accessGrants: 'on' },
          consumers: [ARGOCD_CONSUMER],
        },
      },
    });
    resources = Template.fromStack(stack).toJSON().Resources as Record<string, CfnResource>;
    ({ resolve } = templateResolver(resources, placeholderRefs(resources)));
  });

  /** The key an item of `cloud` has in `table`, from `rest` (an id's own characters). */
  const keyOf = (table: Table, cloud: Cloud, rest: string) => {
    const providerId = {
      eks: `arn:aws:eks:us-east-1:111122223333:cluster/${rest}`,
      gke: `https://container.googleapis.com/v1/projects/acme/locations/us-central1/clusters/${rest}`,
      aks: `/subscriptions/00000000-1111-2222-3333-444444444444/resourcegroups/rg/providers/microsoft.containerservice/managedclusters/${rest}`,
    }[cloud];
    if (table === 'Grants') return providerId;
    if (table === 'Answers' || table === 'Absences') return `${cloud}/${providerId}`;
    return `${cloud}/111122223333/us-east-1/${rest}`;
  };

  it('holds each function to its own clouds’ chases, answers, missed-listing counts and grant records, and its own work’s idempotency records, for every key of a call (property)', async () => {
    const tableArn = (table: Table) => {
      const id = Object.keys(resources).find(
        (key) => resources[key]!.Type === 'AWS::DynamoDB::Table' && key.startsWith(`Cpsync${table}`),
      );
      assert.ok(id, `the stack has the ${table} table`);
      return `arn:aws:dynamodb:${ENV.region}:${ENV.account}:table/${id}`;
    };
    const rest = fc.stringMatching(/^[a-z0-9-]{1,20}$/);
    const cloud = fc.constantFrom<Cloud>('eks', 'gke', 'aks');
    const works = Object.values(FUNCTIONS).map((f) => f.work);
    // A key of the table, or one near another's: a cloud's or a work's prefix in another case, cut or run on.
    const key = (table: Table) =>
      table === 'Idempotency'
        ? fc
            .tuple(fc.constantFrom(...works), fc.constantFrom('#', '', '2#', '-x#'), rest, fc.boolean())
            .map(([work, after, hash, upper]) => `${upper ? 'CPSYNC' : 'cpsync'}.${work}${after}${hash}`)
        : fc.oneof(
            fc.tuple(cloud, rest).map(([c, r]) => keyOf(table, c, r)),
            fc.tuple(cloud, rest, fc.constantFrom('upper', 'prefixed', 'suffixed')).map(([c, r, how]) => {
              const k = keyOf(table, c, r);
              return how === 'upper' ? k.toUpperCase() : how === 'prefixed' ? `x${k}` : k.replace('/', 'x/');
            }),
          );
    // The oracle: what each function's clouds and work are, read from the keys' documented shapes.
    const allowed = (fn: string, table: Table, k: string, action: string) => {
      const { clouds, work } = FUNCTIONS[fn]!;
      // The deletion grace's counts are kept by the function that lists scopes; the others only begin a count again.
      if (table === 'Absences' && action !== 'dynamodb:DeleteItem') return fn === 'CpsyncScopeWorker';
      if (table === 'Idempotency') return k.startsWith(`cpsync.${work}#`);
      if (clouds.length === 3) return true;
      if (table === 'Grants') return clouds.includes('eks') ? k.startsWith('arn:') : !k.startsWith('arn:');
      return clouds.some((c) => k.startsWith(`${c}/`));
    };
    const table = fc.constantFrom<Table>('Chases', 'Answers', 'Absences', 'Grants', 'Idempotency');
    const seen = { allowed: 0, refused: 0 };
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...Object.keys(FUNCTIONS)),
        table.chain((t) => fc.tuple(fc.constant(t), fc.array(key(t), { minLength: 1, maxLength: 3 }))),
        async (fn, [t, keys]) => {
          const roleId = roleIdOf(resources, fn);
          const policies = rolePolicies(resources, roleId, resolve);
          for (const action of ACTIONS[t]) {
            const expected = keys.every((k) => allowed(fn, t, k, action)) ? 'Allowed' : 'ImplicitlyDenied';
            seen[expected === 'Allowed' ? 'allowed' : 'refused'] += 1;
            // One key a call, but for a batch read.
            const asked = action === 'dynamodb:BatchGetItem' ? [keys] : keys.map((k) => [k]);
            const decisions = await Promise.all(
              asked.map((leading) =>
                decide(
                  {
                    principal: `arn:aws:sts::${ENV.account}:assumed-role/${roleId}/fn`,
                    action,
                    resource: tableArn(t),
                    account: ENV.account,
                    context: { 'dynamodb:LeadingKeys': leading },
                  },
                  policies,
                ),
              ),
            );
            const decision = decisions.every((d) => d === 'Allowed') ? 'Allowed' : 'ImplicitlyDenied';
            assert.equal(decision, expected, `${fn} ${action} on ${t}: ${keys.join(', ')}`);
          }
        },
      ),
      { numRuns: 200, seed: 20261203 },
    );
    assert.ok(seen.allowed > 20 && seen.refused > 20, JSON.stringify(seen));
  });
});
