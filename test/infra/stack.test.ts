import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { App, Duration, Stack, Validations } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { SecurityGroup, SubnetType, Vpc } from 'aws-cdk-lib/aws-ec2';
import { EventBus } from 'aws-cdk-lib/aws-events';
import { AwsSolutionsChecks } from 'cdk-nag';
import { Cpsync } from '../../infra/Cpsync.ts';
import { DETAIL_SCHEMAS } from '../../events/schemas.ts';
import { CpsyncStack } from '../../infra/CpsyncStack.ts';
import { venvBin } from '../env/python.ts';
import { CONFIG, ENV, EXAMPLE, NO_BUNDLING } from '../support/infra.ts';
import { FUNCTION_ENTRY_FILE } from '../../infra/bundling.ts';
import { temporaryDirectory } from '../support/tmp.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function lightStack(props: Partial<ConstructorParameters<typeof Cpsync>[2]> = {}) {
  const app = new App({ context: NO_BUNDLING });
  const stack = new CpsyncStack(app, 'Test', { env: ENV, cpsync: { config: CONFIG, ...props } });
  return Template.fromStack(stack);
}

describe('the CDK app', () => {
  let outdir: string;
  let template: Template;
  let json: Record<string, unknown>;

  before(() => {
    outdir = temporaryDirectory('cpsync-cdk-');
    const app = new App({ outdir });
    // cpsync's own account is read too (its functions read its clusters with their own role).
    const providers = EXAMPLE.providers as Record<string, Record<string, unknown>>;
    const accounts = [...(providers.eks!.accounts as string[]), ENV.account];
    const stack = new CpsyncStack(app, 'Cpsync', {
      env: ENV,
      cpsync: {
        config: { ...CONFIG, providers: { ...providers, eks: { ...providers.eks, accounts } } },
        archiveRetention: Duration.days(30),
      },
    });
    Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
    app.synth();
    template = Template.fromStack(stack);
    json = JSON.parse(readFileSync(join(outdir, 'Cpsync.template.json'), 'utf8')) as Record<string, unknown>;
  });

  it('synthesizes with zero unacknowledged cdk-nag AwsSolutions findings', () => {
    const report = JSON.parse(readFileSync(join(outdir, 'validation-report.json'), 'utf8')) as {
      pluginReports: unknown[];
    };
    assert.deepEqual(report.pluginReports, []);
  });

  it('cdk-nag does report findings when nothing is acknowledged (the checks really run)', () => {
    const app = new App({ context: NO_BUNDLING });
    const stack = new Stack(app, 'Bare', { env: ENV });
    new Cpsync(stack, 'Cpsync', { config: CONFIG });
    Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
    assert.throws(() => app.synth(), /Validation failed/);
  });

  it('creates the bus, an archive, the 15-minute schedule, the queue with its DLQ, the outbox and the idempotency tables', () => {
    template.hasResourceProperties('AWS::Events::EventBus', { Name: 'cpsync' });
    template.hasResourceProperties('AWS::Events::Archive', {
      RetentionDays: 30,
      EventPattern: { source: ['cpsync'] },
    });
    template.hasResourceProperties('AWS::Scheduler::Schedule', {
      ScheduleExpression: 'rate(15 minutes)',
      Target: Match.objectLike({
        Input: Match.stringLikeRegexp('aws.scheduler.execution-id'),
        RetryPolicy: Match.objectLike({ MaximumRetryAttempts: 2 }),
      }),
    });
    template.resourceCountIs('AWS::SQS::Queue', 4);
    template.hasResourceProperties('AWS::SQS::Queue', {
      RedrivePolicy: Match.objectLike({ maxReceiveCount: 3 }),
      SqsManagedSseEnabled: true,
    });
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      BatchSize: 1,
    });
    template.hasResourceProperties('AWS::DynamoDB::Table', {
      KeySchema: [{ AttributeName: 'eventId', KeyType: 'HASH' }],
      BillingMode: 'PAY_PER_REQUEST',
      TimeToLiveSpecification: { AttributeName: 'expiresAt', Enabled: true },
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
    });
    template.hasResourceProperties('AWS::DynamoDB::Table', {
      KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }],
      BillingMode: 'PAY_PER_REQUEST',
      TimeToLiveSpecification: { AttributeName: 'expiration', Enabled: true },
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
    });
  });

  it('keeps what cpsync granted in a ledger table of its own only while accessGrants is on or consumers are configured: no TTL, retained, read per account, written by the functions that sync', () => {
    const without = lightStack();
    assert.ok(
      !Object.values(without.findResources('AWS::DynamoDB::Table')).some((t) =>
        JSON.stringify(t).includes('byAccount'),
      ),
      'no ledger without the feature',
    );
    const consumers = [
      {
        name: 'argocd',
        namespaces: ['cluster-inventory'],
        level: 'view',
        identities: { gke: { principal: 'argocd@ops.iam.gserviceaccount.com' } },
      },
    ];
    const granting = lightStack({ config: { ...CONFIG, consumers } });
    const [id, table] = Object.entries(granting.findResources('AWS::DynamoDB::Table')).find(([, t]) =>
      JSON.stringify(t).includes('byAccount'),
    )!;
    assert.equal(table.DeletionPolicy, 'Retain');
    assert.deepEqual(table.Properties.KeySchema, [{ AttributeName: 'cluster', KeyType: 'HASH' }]);
    assert.equal(table.Properties.TimeToLiveSpecification, undefined);
    assert.deepEqual(
      table.Properties.GlobalSecondaryIndexes.map((i: { IndexName: string; KeySchema: unknown }) => [
        i.IndexName,
        i.KeySchema,
      ]),
      [['byAccount', [{ AttributeName: 'account', KeyType: 'HASH' }]]],
    );
    // The functions are told where it is, and the four that sync clusters may query, read, put and delete only.
    const functions = Object.values(granting.findResources('AWS::Lambda::Function'));
    const documents = functions.map((f) => JSON.stringify(f.Properties.Environment.Variables.CPSYNC_CONFIG));
    assert.ok(documents.every((d) => d.includes('ledger')));
    const policies = Object.values(granting.findResources('AWS::IAM::Policy')).filter((p) =>
      JSON.stringify(p).includes(id),
    );
    assert.equal(policies.length, 4);
    for (const policy of policies) {
      const actions = (
        policy.Properties.PolicyDocument.Statement as Array<{ Action: string | string[]; Resource: unknown }>
      )
        .filter((st) => JSON.stringify(st.Resource).includes(id))
        .flatMap((st) => st.Action);
      assert.deepEqual([...new Set(actions)].sort(), [
        'dynamodb:BatchGetItem',
        'dynamodb:DeleteItem',
        'dynamodb:PutItem',
        'dynamodb:Query',
      ]);
    }
  });

  it('keeps the remembered answers in a table of its own while EKS or AKS is configured: removed with the stack, read per scope, written only by the functions that sync', () => {
    const [id, table] = Object.entries(template.findResources('AWS::DynamoDB::Table')).find(([key]) =>
      key.startsWith('CpsyncAnswers'),
    )!;
    assert.equal(table.DeletionPolicy, 'Delete');
    assert.deepEqual(table.Properties.KeySchema, [{ AttributeName: 'cluster', KeyType: 'HASH' }]);
    assert.deepEqual(
      table.Properties.GlobalSecondaryIndexes.map((i: { IndexName: string; KeySchema: unknown }) => [
        i.IndexName,
        i.KeySchema,
      ]),
      [
        [
          'byScope',
          [
            { AttributeName: 'scope', KeyType: 'HASH' },
            { AttributeName: 'region', KeyType: 'RANGE' },
          ],
        ],
      ],
    );
    const functions = template.findResources('AWS::Lambda::Function');
    for (const fn of Object.values(functions))
      assert.match(
        JSON.stringify(fn.Properties.Environment.Variables.CPSYNC_CONFIG),
        /\\"answers\\":\{\\"table\\":/,
      );
    // The four functions that read clusters may put and delete, the scope worker alone query the index; none may
    // read an item or scan.
    const policies = Object.entries(template.findResources('AWS::IAM::Policy')).filter(([, p]) =>
      JSON.stringify(p).includes(id),
    );
    assert.deepEqual(
      policies
        .map(([, p]) => JSON.stringify(p.Properties.Roles).match(/Cpsync(\w+?)ServiceRole/)?.[1])
        .sort(),
      ['EksEventHandler', 'FollowUp', 'ScopeWorker', 'Webhook'],
    );
    for (const [, policy] of policies) {
      const worker = JSON.stringify(policy.Properties.Roles).includes('CpsyncScopeWorker');
      const statements = (
        policy.Properties.PolicyDocument.Statement as Array<{ Action: string | string[]; Resource: unknown }>
      ).filter((st) => JSON.stringify(st.Resource).includes(id));
      const byResource = statements.map((st) => [
        JSON.stringify(st.Resource).includes('index/byScope'),
        [st.Action].flat().sort(),
      ]);
      assert.deepEqual(byResource, [
        [false, ['dynamodb:DeleteItem', 'dynamodb:PutItem']],
        ...(worker ? [[true, ['dynamodb:Query']]] : []),
      ]);
    }
    const gkeOnly = lightStack({
      config: { ...CONFIG, providers: { gke: (EXAMPLE.providers as Record<string, unknown>).gke } },
    });
    assert.ok(
      !Object.keys(gkeOnly.findResources('AWS::DynamoDB::Table')).some((key) =>
        key.startsWith('CpsyncAnswers'),
      ),
      'no answers table for GKE alone',
    );
  });

  it("counts the listings that missed each cluster in a table of its own, whatever the clouds: put by the scope worker alone, a cluster's count begun again by every function that reads clusters", () => {
    for (const stack of [
      template,
      lightStack({
        config: { ...CONFIG, providers: { gke: (EXAMPLE.providers as Record<string, unknown>).gke } },
      }),
    ]) {
      const [id, table] = Object.entries(stack.findResources('AWS::DynamoDB::Table')).find(([key]) =>
        key.startsWith('CpsyncAbsences'),
      )!;
      assert.equal(table.DeletionPolicy, 'Delete');
      assert.deepEqual(table.Properties.KeySchema, [{ AttributeName: 'cluster', KeyType: 'HASH' }]);
      assert.deepEqual(
        table.Properties.GlobalSecondaryIndexes.map((i: { IndexName: string }) => i.IndexName),
        ['byScope'],
      );
      for (const fn of Object.values(stack.findResources('AWS::Lambda::Function')))
        assert.match(
          JSON.stringify(fn.Properties.Environment.Variables.CPSYNC_CONFIG),
          /\\"absences\\":\{\\"table\\":/,
        );
      const granted = Object.values(stack.findResources('AWS::IAM::Policy')).flatMap((policy) => {
        const role = JSON.stringify(policy.Properties.Roles).match(/Cpsync(\w+?)ServiceRole/)?.[1];
        return (
          policy.Properties.PolicyDocument.Statement as Array<{
            Action: string | string[];
            Resource: unknown;
          }>
        )
          .filter((st) => JSON.stringify(st.Resource).includes(id))
          .map((st) => [
            role,
            JSON.stringify(st.Resource).includes('index/byScope'),
            [st.Action].flat().sort().join(),
          ]);
      });
      assert.deepEqual(granted.sort(), [
        ['EksEventHandler', false, 'dynamodb:DeleteItem'],
        ['FollowUp', false, 'dynamodb:DeleteItem'],
        ['ScopeWorker', false, 'dynamodb:BatchGetItem,dynamodb:DeleteItem,dynamodb:PutItem'],
        ['ScopeWorker', true, 'dynamodb:Query'],
        ['Webhook', false, 'dynamodb:DeleteItem'],
      ]);
    }
  });

  it('runs five Node 24 arm64 functions with retained logs and the configuration in their environment', () => {
    template.resourcePropertiesCountIs(
      'AWS::Lambda::Function',
      { Runtime: 'nodejs24.x', Architectures: ['arm64'] },
      5,
    );
    template.resourcePropertiesCountIs('AWS::Logs::LogGroup', { RetentionInDays: 30 }, 5);
    const functions = template.findResources('AWS::Lambda::Function');
    for (const fn of Object.values(functions)) {
      const variables = (fn as { Properties: { Environment: { Variables: Record<string, unknown> } } })
        .Properties.Environment.Variables;
      const document = JSON.stringify(variables.CPSYNC_CONFIG);
      assert.match(document, /\\"outbox\\":\{\\"table\\":/);
      assert.match(document, /\\"idempotency\\":\{\\"table\\":/);
      assert.match(document, /\\"eventBridge\\":\{\\"busName\\":/);
      assert.match(document, /cpsync-reader/);
    }
  });

  it('follows clusters in change: a delayed follow-up queue with its DLQ and alarm, a chase table, the knobs from props', () => {
    const queues = template.findResources('AWS::SQS::Queue');
    const follow = Object.entries(queues).find(
      ([id]) => id.startsWith('CpsyncFollow') && !id.includes('Dead'),
    )!;
    const dead = Object.keys(queues).find((id) => id.startsWith('CpsyncFollowDeadLetters'))!;
    assert.deepEqual(follow[1].Properties.RedrivePolicy, {
      deadLetterTargetArn: { 'Fn::GetAtt': [dead, 'Arn'] },
      maxReceiveCount: 3,
    });
    assert.equal(follow[1].Properties.SqsManagedSseEnabled, true);
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [dead, 'QueueName'] } }],
    });
    template.hasResourceProperties('AWS::DynamoDB::Table', {
      KeySchema: [{ AttributeName: 'cluster', KeyType: 'HASH' }],
      TimeToLiveSpecification: { AttributeName: 'expiresAt', Enabled: true },
    });
    const followUp = Object.keys(template.findResources('AWS::Lambda::Function')).find((id) =>
      id.startsWith('CpsyncFollowUp'),
    )!;
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: { Ref: followUp },
      EventSourceArn: { 'Fn::GetAtt': [follow[0], 'Arn'] },
      FunctionResponseTypes: ['ReportBatchItemFailures'],
    });
    // Every function that syncs clusters is told where chases go; the enumerator syncs none.
    const functions = template.findResources('AWS::Lambda::Function');
    const told = Object.entries(functions)
      .filter(([, fn]) => fn.Properties.Environment.Variables.CPSYNC_FOLLOW_QUEUE_URL)
      .map(([id]) => id.replace(/^Cpsync|[0-9A-F]{8}$/g, ''))
      .sort();
    assert.deepEqual(told, ['EksEventHandler', 'FollowUp', 'ScopeWorker', 'Webhook']);
    // The configuration is joined with the tables' names: its text, escaped once more.
    const knobs = (fn: unknown) => {
      const text = JSON.stringify(fn);
      const start = text.indexOf('{', text.indexOf('\\"follow\\":'));
      let depth = 0;
      let end = start;
      do depth += text[end] === '{' ? 1 : text[end] === '}' ? -1 : 0;
      while (depth > 0 && ++end < text.length);
      const { eks, ...rest } = JSON.parse(text.slice(start, end + 1).replaceAll('\\"', '"')) as Record<
        string,
        unknown
      >;
      assert.deepEqual(Object.keys(eks as object).sort(), [
        'maxDelaySeconds',
        'maxLooks',
        'minDelaySeconds',
        'tightening',
        'typicalSeconds',
      ]);
      return JSON.stringify(rest);
    };
    assert.equal(
      knobs(functions[followUp]),
      JSON.stringify({ firstDelaySeconds: 10, maxDelaySeconds: 20, maxMinutes: 180 }),
    );
    // The props override the configuration, checked as the configuration is.
    const app = new App({ context: NO_BUNDLING });
    const stack = new CpsyncStack(app, 'Followed', {
      env: ENV,
      cpsync: {
        config: CONFIG,
        follow: {
          firstDelay: Duration.seconds(5),
          maxDelay: Duration.minutes(1),
          maxDuration: Duration.hours(2),
        },
      },
    });
    const overridden = Object.values(Template.fromStack(stack).findResources('AWS::Lambda::Function'))[0]!;
    assert.equal(
      knobs(overridden),
      JSON.stringify({ firstDelaySeconds: 5, maxDelaySeconds: 60, maxMinutes: 120 }),
    );
    assert.throws(
      () =>
        new CpsyncStack(new App({ context: NO_BUNDLING }), 'Slow', {
          env: ENV,
          cpsync: { config: CONFIG, follow: { maxDelay: Duration.minutes(20) } },
        }),
      /follow\.maxDelaySeconds: .*900/,
    );
  });

  it('routes EKS CloudTrail calls from the default bus to the EKS handler', () => {
    template.hasResourceProperties('AWS::Events::Rule', {
      EventPattern: {
        source: ['aws.eks'],
        'detail-type': ['AWS API Call via CloudTrail'],
        detail: {
          eventSource: ['eks.amazonaws.com'],
          eventName: Match.arrayWith([
            'CreateCluster',
            'DeleteCluster',
            'UpdateClusterVersion',
            'TagResource',
          ]),
        },
      },
      Targets: [
        Match.objectLike({ RetryPolicy: { MaximumRetryAttempts: 4, MaximumEventAgeInSeconds: 3600 } }),
      ],
    });
    const rule = Object.values(template.findResources('AWS::Events::Rule'))[0] as {
      Properties: Record<string, unknown>;
    };
    assert.equal(rule.Properties.EventBusName, undefined, 'the default bus');
  });

  it('exposes the webhook as a Function URL that authenticates callers itself, and makes the Event Grid key secret', () => {
    template.hasResourceProperties('AWS::Lambda::Url', { AuthType: 'NONE' });
    template.hasResourceProperties('AWS::SecretsManager::Secret', {
      GenerateSecretString: { PasswordLength: 40, ExcludePunctuation: true },
    });
    template.hasOutput('WebhookUrl', {});
    // What `cpsync doctor --function` invokes: the scope worker.
    const worker = Object.keys(template.findResources('AWS::Lambda::Function')).find((id) =>
      id.startsWith('CpsyncScopeWorker'),
    )!;
    template.hasOutput('DoctorFunction', { Value: { Ref: worker } });
  });

  it('names every function role the hub must let in, as an output (one `hub install --eks-role` each)', () => {
    const functions = Object.values(template.findResources('AWS::Lambda::Function')) as Array<{
      Properties: { Role: { 'Fn::GetAtt': [string, string] } };
    }>;
    const roles = functions.map((fn) => fn.Properties.Role['Fn::GetAtt'][0]).sort();
    const output = template.findOutputs('HubRoles').HubRoles as {
      Value: { 'Fn::Join': [string, Array<{ 'Fn::GetAtt': [string, string] }>] };
    };
    const [separator, parts] = output.Value['Fn::Join'];
    assert.equal(separator, ' ');
    assert.deepEqual(
      parts.map((part) => part['Fn::GetAtt']).sort(),
      roles.map((role) => [role, 'Arn']),
    );
    // The five functions of cpsync, each with a role of its own.
    assert.equal(new Set(roles).size, 5);
  });

  it('grants exactly: sts:AssumeRole into the member role name, EKS reads in its own account, PutEvents on its bus only', () => {
    // (What each function's calls need is proven under the Lambda runtime: lambdaRuntime.test.ts evaluates
    // every call against these policies.)
    const policies = Object.values(template.findResources('AWS::IAM::Policy')).map((p) => JSON.stringify(p));
    const worker = policies.find((p) => p.includes('ScopeWorkerServiceRole'))!;
    const statements = (
      JSON.parse(worker) as {
        Properties: {
          PolicyDocument: {
            Statement: Array<{ Action: string | string[]; Resource: unknown; Condition?: unknown }>;
          };
        };
      }
    ).Properties.PolicyDocument.Statement;
    const find = (action: string) =>
      statements.filter((s) => (Array.isArray(s.Action) ? s.Action : [s.Action]).includes(action));
    // The member role of each account the configuration lists, and of no other account.
    assert.deepEqual(
      find('sts:AssumeRole').map((s) => s.Resource),
      [
        ['111122223333', '444455556666', ENV.account].map((account) => ({
          'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, `:iam::${account}:role/cpsync-reader`]],
        })),
      ],
    );
    const busId = Object.keys(template.findResources('AWS::Events::EventBus'))[0]!;
    assert.deepEqual(
      find('events:PutEvents').map((s) => s.Resource),
      [{ 'Fn::GetAtt': [busId, 'Arn'] }],
    );
    assert.deepEqual(
      find('eks:DescribeNodegroup').map((s) => s.Action),
      ['eks:DescribeNodegroup'],
    );
    // The example names its regions: none are listed. STS GetCallerIdentity needs no permission.
    assert.deepEqual(find('eks:ListClusters')[0]!.Action, 'eks:ListClusters');
    assert.deepEqual(find('ec2:DescribeRegions'), []);
    assert.deepEqual(find('sts:GetCallerIdentity'), []);
    const outboxId = Object.keys(template.findResources('AWS::DynamoDB::Table')).find((id) =>
      id.includes('Outbox'),
    )!;
    assert.deepEqual(
      statements.filter((s) => JSON.stringify(s.Resource).includes(outboxId)).map((s) => s.Action),
      [['dynamodb:Scan', 'dynamodb:BatchWriteItem']],
      'the outbox: a scan, and batches of puts and deletes',
    );
    const idempotencyId = Object.keys(template.findResources('AWS::DynamoDB::Table')).find((id) =>
      id.includes('Idempotency'),
    )!;
    assert.deepEqual(
      statements
        .filter((s) => JSON.stringify(s.Resource).includes(idempotencyId))
        .map((s) => [s.Action, s.Resource, s.Condition]),
      [
        [
          ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem'],
          { 'Fn::GetAtt': [idempotencyId, 'Arn'] },
          {
            'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['cpsync.scope#*'] },
            Null: { 'dynamodb:LeadingKeys': 'false' },
          },
        ],
      ],
      "the scope worker's own work's records only",
    );
    const enumerator = policies.find((p) => p.includes('ScopeEnumeratorServiceRole'))!;
    assert.ok(!enumerator.includes(idempotencyId), 'the enumerator keeps no idempotency records');
    assert.doesNotMatch(
      enumerator,
      /eks:(ListClusters|ListNodegroups|DescribeNodegroup)|cluster\/\*|sts:AssumeRole/,
      'the enumerator reads no clusters (only the hub), and enters no member account when regions are named',
    );
    assert.match(enumerator, /"sqs:SendMessage"/);
    assert.doesNotMatch(enumerator, /sqs:GetQueue/, 'the enumerator has the queue URL already');
    const webhook = policies.find((p) => p.includes('WebhookServiceRole'))!;
    assert.doesNotMatch(
      webhook,
      /eks:(ListClusters|ListNodegroups|DescribeNodegroup)|cluster\/\*|sts:AssumeRole/,
      'the webhook serves GKE and AKS only (it reads the hub, no EKS cluster)',
    );
    assert.doesNotMatch(policies.join(), /secretsmanager:DescribeSecret/, 'secrets are only read');
    const all = statements.flatMap((s) => (Array.isArray(s.Action) ? s.Action : [s.Action]));
    assert.ok(!all.some((a) => a === '*' || a.endsWith(':*')), `no wildcard actions: ${all.join(', ')}`);
    assert.ok(
      !all.includes('organizations:ListAccounts'),
      'explicit account lists need no Organizations access',
    );
  });

  it('registers a draft-04 JSON Schema per detail-type, and alarms on the DLQ, failed scopes and function errors', () => {
    template.resourceCountIs('AWS::EventSchemas::Registry', 1);
    template.resourcePropertiesCountIs(
      'AWS::EventSchemas::Schema',
      { Type: 'JSONSchemaDraft4' },
      Object.keys(DETAIL_SCHEMAS).length,
    );
    template.hasResourceProperties('AWS::EventSchemas::Schema', {
      SchemaName: 'cpsync@ClusterProfileAnnounced',
    });
    template.hasResourceProperties('AWS::EventSchemas::Schema', {
      SchemaName: 'cpsync@InventoryScopeSynced',
    });
    template.resourceCountIs('AWS::CloudWatch::Alarm', 8);
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'FailedScopes',
      Namespace: 'cpsync',
    });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'ApproximateNumberOfMessagesVisible',
    });
  });

  it('is clean under cfn-lint', () => {
    const file = join(outdir, 'Cpsync.template.json');
    writeFileSync(file, JSON.stringify(json));
    // W3005: the CDK adds DependsOn on each function's role although Fn::GetAtt already orders them.
    const result = spawnSync(venvBin('cfn-lint'), ['--ignore-checks', 'W3005', '--', file], {
      encoding: 'utf8',
    });
    assert.equal(result.status, 0, result.stdout + result.stderr);
  });

  it('bundles each function into an entry without cloud SDKs and chunks with only the clouds it serves', () => {
    const entries: Record<string, string> = {};
    const everything: Record<string, string> = {};
    const sizes: Record<string, string> = {};
    const functions = template.findResources('AWS::Lambda::Function');
    for (const [id, fn] of Object.entries(functions)) {
      const properties = (fn as { Properties: { Code: { S3Key?: string }; Handler?: string } }).Properties;
      const key = properties.Code.S3Key;
      if (!key) continue;
      assert.equal(properties.Handler, 'index.handler');
      const directory = join(outdir, `asset.${key.replace(/\.zip$/, '')}`);
      const files = readdirSync(directory, { recursive: true, encoding: 'utf8' }).filter((f) =>
        f.endsWith('.mjs'),
      );
      const name = id.replace(/^Cpsync|[0-9A-F]{8}$/g, '');
      entries[name] = readFileSync(join(directory, FUNCTION_ENTRY_FILE), 'utf8');
      everything[name] = files.map((f) => readFileSync(join(directory, f), 'utf8')).join('\n');
      sizes[name] =
        `entry ${(entries[name].length / 1024).toFixed(0)} KB of ${(everything[name].length / 1024 / 1024).toFixed(2)} MB`;
    }
    // The sizes that matter are reported (with the required libraries' floors) by `npm run bench`.
    console.log(
      `function bundles (minified): ${Object.entries(sizes)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ')}`,
    );
    assert.deepEqual(Object.keys(everything).sort(), [
      'EksEventHandler',
      'FollowUp',
      'ScopeEnumerator',
      'ScopeWorker',
      'Webhook',
    ]);
    const google = (text: string) => text.includes('google.container.v1.ClusterManager');
    const azure = (text: string) => text.includes('azsdk-js-arm-containerservice');
    for (const [name, text] of Object.entries(everything)) {
      assert.doesNotMatch(text, /from\s*"@aws-sdk\//, `${name} carries the AWS SDK it uses`);
      assert.ok(!google(entries[name]!) && !azure(entries[name]!), `${name}: no cloud SDK in the entry`);
      const onlyEks = name === 'EksEventHandler';
      assert.equal(
        google(text),
        !onlyEks,
        `${name}: Google's container client ${onlyEks ? 'left out' : 'bundled'}`,
      );
      assert.equal(
        azure(text),
        !onlyEks,
        `${name}: Azure's container service client ${onlyEks ? 'left out' : 'bundled'}`,
      );
    }
  });

  /** `npx cdk synth` with `args`, offline and without AWS credentials. */
  function cdkSynth(
    args: string[],
    out = temporaryDirectory('cpsync-synth-'),
    extra: NodeJS.ProcessEnv = {},
  ) {
    const env = Object.fromEntries(
      Object.entries(process.env).filter(
        ([key]) => !key.startsWith('AWS_') && !key.startsWith('CDK_DEFAULT'),
      ),
    );
    return spawnSync(
      join(ROOT, 'node_modules/.bin/cdk'),
      ['synth', '--quiet', '--no-notices', '--output', out, ...args],
      {
        cwd: ROOT,
        env: { ...env, AWS_EC2_METADATA_DISABLED: 'true', CDK_DISABLE_CLI_TELEMETRY: 'true', ...extra },
        encoding: 'utf8',
      },
    );
  }

  it('refuses at synth a configuration whose hub the functions cannot use, saying what to set', () => {
    // The example's hub is a directory (the CLI's): deploying it as it is would have nothing to write to.
    const result = cdkSynth(['-c', 'config=cpsync.example.yaml']);
    assert.notEqual(result.status, 0, 'the synth fails');
    assert.match(
      result.stderr,
      /cpsync\.example\.yaml has hub\.directory, which the Lambda functions cannot use/,
    );
    assert.match(
      result.stderr,
      /hub\.eks \{ clusterName, region \}.*hub\.kubeconfigSecretArn.*-c hubCluster=/,
    );
    const missing = cdkSynth(['-c', 'config=no-such-cpsync.yaml']);
    assert.notEqual(missing.status, 0);
    assert.match(missing.stderr, /no-such-cpsync\.yaml not found/);
  });

  it('synthesizes with `npx cdk synth`, offline and without AWS credentials, given the EKS hub', () => {
    const out = temporaryDirectory('cpsync-synth-');
    const result = cdkSynth(['-c', 'hubCluster=cpsync-hub', '-c', 'hubRegion=eu-west-1'], out);
    assert.equal(result.status, 0, result.stderr.slice(-3000));
    const synthesized = JSON.parse(readFileSync(join(out, 'Cpsync.template.json'), 'utf8')) as {
      Resources: Record<string, { Type: string }>;
    };
    assert.equal(
      Object.values(synthesized.Resources).filter((r) => r.Type === 'AWS::Lambda::Function').length,
      5,
    );
    const text = JSON.stringify(synthesized);
    assert.ok(
      text.includes('cpsync-hub') && text.includes('eu-west-1'),
      'the functions are given the EKS hub',
    );
  });

  it("puts the EKS hub in the region cdk deploys to when -c hubRegion is not given (the stack's partition)", () => {
    const out = temporaryDirectory('cpsync-synth-');
    const result = cdkSynth(['-c', 'hubCluster=cpsync-hub'], out, { AWS_REGION: 'cn-north-1' });
    assert.equal(result.status, 0, result.stderr.slice(-3000));
    const text = JSON.stringify(JSON.parse(readFileSync(join(out, 'Cpsync.template.json'), 'utf8')));
    // The functions may describe the hub cluster in cn-north-1, in the stack's own partition.
    assert.match(
      text,
      /"arn:",\{"Ref":"AWS::Partition"\},":eks:cn-north-1:",\{"Ref":"AWS::AccountId"\},":cluster\/cpsync-hub"/,
    );
    assert.doesNotMatch(text, /":eks:us-east-1:",\{"Ref":"AWS::AccountId"\},":cluster\/cpsync-hub"/);
  });

  it('traces with X-Ray and maps stack traces to the sources only when asked (both cost cold starts), cdk-nag still clean', () => {
    const functionsOf = (stack: Template) =>
      Object.values(stack.findResources('AWS::Lambda::Function')).map(
        (fn) =>
          (
            fn as {
              Properties: {
                TracingConfig?: { Mode: string };
                Environment: { Variables: Record<string, unknown> };
              };
            }
          ).Properties,
      );
    for (const fn of functionsOf(template)) {
      assert.equal(fn.TracingConfig, undefined);
      assert.equal(fn.Environment.Variables.POWERTOOLS_TRACE_ENABLED, undefined);
      assert.equal(fn.Environment.Variables.NODE_OPTIONS, undefined);
    }
    const app = new App({ context: NO_BUNDLING });
    const stack = new CpsyncStack(app, 'Traced', {
      env: ENV,
      cpsync: { config: CONFIG, tracing: true, stackTraceSourceMaps: true },
    });
    Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
    app.synth();
    const traced = functionsOf(Template.fromStack(stack));
    assert.equal(traced.length, 5);
    for (const fn of traced) {
      assert.deepEqual(fn.TracingConfig, { Mode: 'Active' });
      assert.equal(fn.Environment.Variables.POWERTOOLS_TRACE_ENABLED, 'true');
      assert.equal(fn.Environment.Variables.NODE_OPTIONS, '--enable-source-maps');
    }
  });

  it('publishes to an existing bus instead of making one', () => {
    const app = new App({ context: NO_BUNDLING });
    const stack = new Stack(app, 'Existing', { env: ENV });
    const bus = EventBus.fromEventBusName(stack, 'Shared', 'platform-events');
    new Cpsync(stack, 'Cpsync', { config: CONFIG, eventBus: bus });
    const existing = Template.fromStack(stack);
    existing.resourceCountIs('AWS::Events::EventBus', 0);
    existing.resourceCountIs('AWS::Events::Archive', 0);
  });

  it('places the functions in a VPC (subnets, security groups) so the member probe reaches private endpoints, its slots following the schedule', () => {
    const app = new App({ context: NO_BUNDLING });
    const stack = new Stack(app, 'Private', { env: ENV });
    const vpc = new Vpc(stack, 'Vpc', { maxAzs: 2, natGateways: 1 });
    const group = new SecurityGroup(stack, 'Probe', { vpc, allowAllOutbound: true });
    new Cpsync(stack, 'Cpsync', {
      config: { ...CONFIG, features: { memberProbe: 'on' }, memberProbe: {} },
      vpc,
      vpcSubnets: { subnetType: SubnetType.PRIVATE_WITH_EGRESS },
      securityGroups: [group],
      syncInterval: Duration.minutes(30),
    });
    const template = Template.fromStack(stack);
    const functions = Object.values(template.findResources('AWS::Lambda::Function')) as Array<{
      Properties: {
        VpcConfig?: { SecurityGroupIds: unknown[]; SubnetIds: unknown[] };
        Environment: { Variables: { CPSYNC_CONFIG: string } };
      };
    }>;
    const cpsync = functions.filter((f) => f.Properties.Environment?.Variables?.CPSYNC_CONFIG);
    assert.equal(cpsync.length, 5);
    for (const f of cpsync) {
      assert.equal(f.Properties.VpcConfig?.SubnetIds.length, 2);
      assert.deepEqual(f.Properties.VpcConfig?.SecurityGroupIds, [
        { 'Fn::GetAtt': [stack.getLogicalId(group.node.defaultChild as never), 'GroupId'] },
      ]);
      // The configuration is joined with the tables' names: its text, escaped once more.
      assert.match(
        JSON.stringify(f.Properties.Environment.Variables.CPSYNC_CONFIG),
        /\\"memberProbe\\":\{\\"everyMinutes\\":60,\\"slotMinutes\\":30,/,
      );
    }
    // Outside a VPC unless one is given.
    const plain = Object.values(lightStack().findResources('AWS::Lambda::Function')) as Array<{
      Properties: { VpcConfig?: unknown };
    }>;
    assert.ok(plain.every((f) => f.Properties.VpcConfig === undefined));
    assert.throws(
      () => new Cpsync(stack, 'NoVpc', { config: CONFIG, securityGroups: [group] }),
      /vpcSubnets and securityGroups need vpc/,
    );
  });

  it('archives the events of the configured source', () => {
    const app = new App({ context: NO_BUNDLING });
    const stack = new Stack(app, 'Sourced', { env: ENV });
    new Cpsync(stack, 'Cpsync', {
      config: { ...CONFIG, bus: { eventBridge: { busName: 'ignored', source: 'acme.inventory' } } },
      archiveRetention: Duration.days(7),
    });
    Template.fromStack(stack).hasResourceProperties('AWS::Events::Archive', {
      EventPattern: { source: ['acme.inventory'] },
    });
  });

  it('grants Organizations listing only when accounts are discovered, and DescribeCluster on the EKS hub', () => {
    const discovered = lightStack({
      config: { ...CONFIG, providers: { eks: { accounts: { organization: {} } } } },
    });
    const text = JSON.stringify(discovered.findResources('AWS::IAM::Policy'));
    assert.match(text, /organizations:ListAccounts/);
    assert.match(text, /cluster\/hub/);
    // Discovered accounts are not known when the stack is made: their member role in any account.
    assert.match(text, /:iam::\*:role\/cpsync-reader/);
  });

  it('lets every function describe the EKS hub even when EKS is not a configured cloud', () => {
    const gkeOnly = lightStack({
      config: {
        ...CONFIG,
        providers: { gke: (CONFIG as unknown as { providers: Record<string, unknown> }).providers.gke },
      },
    });
    const functions = Object.values(gkeOnly.findResources('AWS::Lambda::Function'));
    const policies = Object.values(gkeOnly.findResources('AWS::IAM::Policy')).filter((policy) =>
      JSON.stringify(policy).includes('eks:DescribeCluster'),
    );
    assert.equal(functions.length, 5);
    assert.equal(policies.length, 5, 'one policy per function grants it');
    for (const policy of policies) assert.match(JSON.stringify(policy), /cluster\/hub/);
    assert.doesNotMatch(JSON.stringify(gkeOnly.findResources('AWS::IAM::Policy')), /sts:AssumeRole"/);
  });

  it('refuses bad props with a message that names them', () => {
    const app = new App({ context: NO_BUNDLING });
    const stack = new Stack(app, 'Bad', { env: ENV });
    assert.throws(
      () =>
        new Cpsync(stack, 'A', {
          config: CONFIG,
          eventBus: EventBus.fromEventBusName(stack, 'B', 'x'),
          eventBusName: 'y',
        }),
      /either eventBus or eventBusName, not both/,
    );
    assert.throws(
      () => new Cpsync(stack, 'C', { config: { manager: 'Not Valid' } }),
      /Cpsync props\.config:\n\s+- manager: must be a DNS-1123 label/,
    );
    assert.throws(
      () => new Cpsync(stack, 'D', { config: { ...CONFIG, hub: { directory: './inventory' } } }),
      /config\.hub must be hub\.eks .* or hub\.kubeconfigSecretArn/,
    );
    // EKS regions of two AWS partitions: one deployment lists one partition, with its credentials and roles.
    const providers = (CONFIG as unknown as { providers: Record<string, Record<string, unknown>> }).providers;
    const twoPartitions = (regions: string[], homeRegion?: string) => ({
      ...CONFIG,
      providers: { ...providers, eks: { ...providers.eks, regions, ...(homeRegion ? { homeRegion } : {}) } },
    });
    assert.throws(
      () => new Cpsync(stack, 'E', { config: twoPartitions(['us-east-1', 'cn-north-1']) }),
      /Cpsync props\.config:\n\s+- providers\.eks\.regions\[1\]: cn-north-1 is in the aws-cn partition, but the home region us-east-1 \(providers\.eks\.homeRegion\) is in aws:/,
    );
    assert.throws(
      () => new Cpsync(stack, 'F', { config: twoPartitions(['eu-west-1'], 'us-gov-west-1') }),
      /providers\.eks\.regions\[0\]: eu-west-1 is in the aws partition, but the home region us-gov-west-1 \(providers\.eks\.homeRegion\) is in aws-us-gov/,
    );
  });
});
