/* eslint-disable @typescript-eslint/no-explicit-any -- events taken apart as plain JSON */
/**
 * The kit's pattern builders against EventBridge's matching (moto): for each pattern a rule with a queue
 * target, a corpus of real events published through the EventBridge bus, and each queue must hold exactly
 * the events the pattern is meant to select — judged by a predicate written here from the builder's
 * documented meaning, not by the pattern.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import {
  CreateEventBusCommand,
  DeleteRuleCommand,
  EventBridgeClient,
  PutRuleCommand,
  PutTargetsCommand,
  RemoveTargetsCommand,
} from '@aws-sdk/client-eventbridge';
import { CreateQueueCommand, GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { normalize } from '../../../core/domain/normalize.ts';
import type { ObservedCluster } from '../../../core/domain/model/observedCluster.ts';
import {
  buildAccessEvent,
  buildAnnounceEvent,
  buildChangeEvent,
  buildOrphanEvent,
  buildScopeEvent,
} from '../../../core/sync/events.ts';
import { patterns, type EventPattern } from '../../../events/index.ts';
import type { CpsyncEvent } from '../../../events/types.ts';
import { startMoto, type MotoServer } from '../../env/moto.ts';
import { HUB_CREDENTIALS } from '../../support/aws.ts';
import { drainQueue, type ReceivedEvent, publishTo } from '../../support/events.ts';
import { aksCluster, eksCluster, gkeCluster, NOW } from '../../support/fixtures.ts';
import { inventoryOptions } from '../../support/settings.ts';

const BUS = 'patterns';
const options = inventoryOptions();

const CLUSTERS: Array<[ObservedCluster, string]> = [
  [eksCluster({ name: 'payments', region: 'us-east-1', account: '111122223333' }), 'team-a'],
  [eksCluster({ name: 'search', region: 'eu-west-1', account: '444455556666' }), 'team-b'],
  [gkeCluster({ name: 'analytics', account: 'acme-data' }), 'team-a'],
  [aksCluster({ name: 'web' }), 'team-c'],
];

const UPDATES = [
  [{ field: 'status.version.kubernetes', before: '1.30', after: '1.31' }],
  [{ field: 'status.conditions[ControlPlaneHealthy]', before: 'True', after: 'False' }],
  [{ field: 'metadata.labels[team]', before: 'x', after: 'y' }],
  [
    { field: 'status.version.kubernetes', before: '1.31', after: '1.32' },
    { field: 'status.properties[cpsync.io/node-count]', before: '3', after: '4' },
  ],
];

/** Every kind of event, from every kind of cluster, made by the real builders. */
function corpus(): CpsyncEvent[] {
  const events: CpsyncEvent[] = [];
  for (const [cluster, namespace] of CLUSTERS) {
    const profile = normalize(cluster, options, NOW);
    profile.metadata = { ...profile.metadata, namespace, uid: `uid-${cluster.name}`, resourceVersion: '7' };
    const context = {
      syncId: 'corpus',
      occurredAt: NOW,
      scope: { provider: cluster.provider, account: cluster.account, region: cluster.region },
    };
    events.push(
      buildChangeEvent({ kind: 'created', profile, changes: [{ field: 'spec', after: {} }] }, context),
    );
    UPDATES.forEach((changes, i) =>
      events.push(
        buildChangeEvent({ kind: 'updated', profile, changes, previousResourceVersion: String(i) }, context),
      ),
    );
    events.push(
      buildChangeEvent({ kind: 'deleted', profile, changes: [{ field: 'metadata', before: {} }] }, context),
    );
    events.push(buildAnnounceEvent(profile, context));
    for (const kind of ['complete', 'partial', 'failed'] as const)
      events.push(
        buildScopeEvent(
          {
            outcome: {
              scope: context.scope,
              kind,
              ...(kind === 'failed' ? { failure: { reason: 'AccessDenied' as const, message: 'no' } } : {}),
            },
            counts: { listed: 1, created: 0, updated: 0, deleted: 0, unchanged: 1, failed: 0, invalid: 0 },
            durationMs: 3,
          },
          { ...context, syncId: `corpus-${kind}` },
        ),
      );
    events.push(buildOrphanEvent([`${namespace}/${cluster.name}`], context));
    for (const [action, consumer] of [
      ['grant', 'argocd'],
      ['revoke', 'kueue'],
    ] as const)
      events.push(
        buildAccessEvent(
          {
            action,
            providerId: cluster.providerId,
            consumer,
            identity: `${consumer}-identity`,
            ...(action === 'grant' ? { level: 'view' as const } : {}),
            message: action,
            profile,
          },
          context,
        ),
      );
  }
  return events;
}

/** What an event is, for the predicates. */
interface Seen {
  type: string;
  provider: string;
  region: string;
  account: string;
  namespace?: string;
  fields: string[];
  outcome?: string;
  consumer?: string;
}

function seen(event: CpsyncEvent): Seen {
  const d = event.detail as unknown as Record<string, any>;
  const about = d.cluster ?? d.scope;
  return {
    type: event.detailType,
    provider: about.provider,
    region: about.region,
    account: about.account,
    namespace: d.namespace,
    fields: d.changedFields ?? [],
    outcome: d.outcome,
    consumer: d.consumer,
  };
}

describe('pattern builders against EventBridge (moto: rule → SQS)', () => {
  let moto: MotoServer;
  let eventBridge: EventBridgeClient;
  let sqs: SQSClient;
  const events = corpus();
  let rules = 0;

  before(async () => {
    moto = await startMoto();
    const aws = { endpoint: moto.endpoint, region: 'us-east-1', credentials: HUB_CREDENTIALS };
    eventBridge = new EventBridgeClient(aws);
    sqs = new SQSClient(aws);
    await eventBridge.send(new CreateEventBusCommand({ Name: BUS }));
  });

  after(async () => {
    eventBridge?.destroy();
    sqs?.destroy();
    await moto?.stop();
  });

  /** A rule with `pattern` delivering to a new queue; returns the queue's URL and a way to remove the rule. */
  async function ruleWith(pattern: EventPattern) {
    const name = `rule-${++rules}`;
    const url = (await sqs.send(new CreateQueueCommand({ QueueName: name }))).QueueUrl!;
    const arn = (
      await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }))
    ).Attributes!.QueueArn!;
    await eventBridge.send(
      new PutRuleCommand({ Name: name, EventBusName: BUS, EventPattern: JSON.stringify(pattern) }),
    );
    await eventBridge.send(
      new PutTargetsCommand({ Rule: name, EventBusName: BUS, Targets: [{ Id: 'q', Arn: arn }] }),
    );
    return {
      url,
      remove: async () => {
        await eventBridge.send(new RemoveTargetsCommand({ Rule: name, EventBusName: BUS, Ids: ['q'] }));
        await eventBridge.send(new DeleteRuleCommand({ Name: name, EventBusName: BUS }));
      },
    };
  }

  const publish = (events: readonly CpsyncEvent[]) => publishTo(moto.endpoint, BUS, events);

  const ids = (list: Array<CpsyncEvent | ReceivedEvent>) =>
    list.map((e) => e.detail.eventId as string).sort();

  const CASES: Array<[string, EventPattern, (e: Seen) => boolean]> = [
    ['created()', patterns.created(), (e) => e.type === 'ClusterProfile Created'],
    [
      'deleted({ provider: gke })',
      patterns.deleted({ provider: 'gke' }),
      (e) => e.type === 'ClusterProfile Deleted' && e.provider === 'gke',
    ],
    [
      'updated({ region: [us-east-1, westeurope] })',
      patterns.updated({ region: ['us-east-1', 'westeurope'] }),
      (e) => e.type === 'ClusterProfile Updated' && ['us-east-1', 'westeurope'].includes(e.region),
    ],
    [
      "changed({ fields: ['status.version.kubernetes'] })",
      patterns.changed({ fields: ['status.version.kubernetes'] }),
      (e) => e.type === 'ClusterProfile Updated' && e.fields.includes('status.version.kubernetes'),
    ],
    [
      "changed({ fieldPrefixes: ['status.conditions'], provider: 'eks' })",
      patterns.changed({ fieldPrefixes: ['status.conditions'], provider: 'eks' }),
      (e) =>
        e.type === 'ClusterProfile Updated' &&
        e.provider === 'eks' &&
        e.fields.some((f) => f.startsWith('status.conditions')),
    ],
    [
      'profileChanges({ namespace: team-a })',
      patterns.profileChanges({ namespace: 'team-a' }),
      (e) =>
        e.type.startsWith('ClusterProfile ') &&
        e.type !== 'ClusterProfile Announced' &&
        e.namespace === 'team-a',
    ],
    [
      'inventory({ account: 444455556666 })',
      patterns.inventory({ account: '444455556666' }),
      (e) => e.type.startsWith('ClusterProfile ') && e.account === '444455556666',
    ],
    ['announced()', patterns.announced(), (e) => e.type === 'ClusterProfile Announced'],
    [
      "scopeSynced({ outcome: 'failed' })",
      patterns.scopeSynced({ outcome: 'failed' }),
      (e) => e.type === 'Inventory Scope Synced' && e.outcome === 'failed',
    ],
    [
      "scopeSynced({ outcome: ['partial', 'failed'], provider: 'aks' })",
      patterns.scopeSynced({ outcome: ['partial', 'failed'], provider: 'aks' }),
      (e) => e.type === 'Inventory Scope Synced' && e.outcome !== 'complete' && e.provider === 'aks',
    ],
    [
      'scopeOrphaned({ provider: eks })',
      patterns.scopeOrphaned({ provider: 'eks' }),
      (e) => e.type === 'Inventory Scope Orphaned' && e.provider === 'eks',
    ],
    ['access()', patterns.access(), (e) => e.type.startsWith('Consumer Access ')],
    [
      "access({ consumer: 'argocd', provider: 'eks' })",
      patterns.access({ consumer: 'argocd', provider: 'eks' }),
      (e) => e.type.startsWith('Consumer Access ') && e.consumer === 'argocd' && e.provider === 'eks',
    ],
    [
      "created({ source: 'acme.cpsync' }) (another source)",
      patterns.created({ source: 'acme.cpsync' }),
      () => false,
    ],
  ];

  it(`a rule with each of ${CASES.length} patterns receives exactly the events it should`, async () => {
    const queues = [];
    for (const [, pattern] of CASES) queues.push(await ruleWith(pattern));
    await publish(events);
    const figures: string[] = [];
    for (const [i, [name, , wanted]] of CASES.entries()) {
      const received = await drainQueue(queues[i]!.url);
      const expected = events.filter((e) => wanted(seen(e)));
      assert.deepEqual(ids(received), ids(expected), name);
      if (name !== CASES.at(-1)![0])
        assert.ok(expected.length > 0, `${name} selects something of the corpus`);
      figures.push(`${name}: ${received.length}/${events.length}`);
      await queues[i]!.remove();
    }
    console.log(`patterns proven against EventBridge (received / published):\n  ${figures.join('\n  ')}`);
  });

  it('random filters select what they say (property, 12 runs)', async () => {
    const pick = <T>(values: T[]) => fc.option(fc.subarray(values, { minLength: 1 }), { nil: undefined });
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('created', 'updated', 'deleted', 'profileChanges', 'changed') as fc.Arbitrary<
          'created' | 'updated' | 'deleted' | 'profileChanges' | 'changed'
        >,
        pick(['eks', 'gke', 'aks'] as const),
        pick(['us-east-1', 'eu-west-1', 'europe-west1', 'westeurope']),
        pick(['team-a', 'team-b', 'team-c']),
        fc.subarray(['status.version.kubernetes', 'metadata.labels[team]'], { minLength: 1 }),
        async (kind, provider, region, namespace, fields) => {
          const filter = {
            ...(provider ? { provider } : {}),
            ...(region ? { region } : {}),
            ...(namespace ? { namespace } : {}),
          };
          const pattern =
            kind === 'changed' ? patterns.changed({ ...filter, fields }) : patterns[kind](filter);
          const types =
            kind === 'profileChanges'
              ? ['ClusterProfile Created', 'ClusterProfile Updated', 'ClusterProfile Deleted']
              : [`ClusterProfile ${kind === 'changed' ? 'Updated' : kind[0]!.toUpperCase() + kind.slice(1)}`];
          const wanted = (e: Seen) =>
            types.includes(e.type) &&
            (!provider || (provider as readonly string[]).includes(e.provider)) &&
            (!region || region.includes(e.region)) &&
            (!namespace || namespace.includes(e.namespace!)) &&
            (kind !== 'changed' || e.fields.some((f) => fields.includes(f)));
          const rule = await ruleWith(pattern);
          await publish(events);
          const received = await drainQueue(rule.url);
          await rule.remove();
          assert.deepEqual(
            ids(received),
            ids(events.filter((e) => wanted(seen(e)))),
            JSON.stringify(pattern),
          );
        },
      ),
      { numRuns: 12 },
    );
  });
});
