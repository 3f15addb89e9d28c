/* eslint-disable @typescript-eslint/no-explicit-any -- events taken apart as plain JSON */
/** The subscriber kit's parser and pattern builders, on their own (EventBridge's matching: test/integration/events). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parse } from '@aws-lambda-powertools/parser';
import { SqsEnvelope } from '@aws-lambda-powertools/parser/envelopes/sqs';
import {
  CpsyncEventError,
  CpsyncEventSchema,
  CpsyncEventTextSchema,
  isEvent,
  parseCpsyncEvent,
  patterns,
} from '../../../events/index.ts';
import { releaseFiles } from '../../contract/golden.ts';
import { SCHEMA_VERSION } from '../../../events/detailTypes.ts';

const golden = releaseFiles(SCHEMA_VERSION, 'golden') as Record<string, any>;
const created = () => structuredClone(golden['clusterprofile-created']);

function problemsOf(value: unknown): string[] {
  try {
    parseCpsyncEvent(value);
  } catch (error) {
    assert.ok(error instanceof CpsyncEventError);
    return error.problems;
  }
  assert.fail('parsed');
}

describe('parseCpsyncEvent', () => {
  it('reads a whole EventBridge event, object or JSON text, narrowed by detail-type', () => {
    const event = parseCpsyncEvent(JSON.stringify(created()));
    assert.ok(isEvent(event, 'ClusterProfile Created'));
    assert.equal(event.detail.profile?.metadata.name, created().detail.name);
    assert.equal(isEvent(event, 'ClusterProfile Deleted'), false);
  });

  it('reads a later minor version with fields it does not know', () => {
    const event = created();
    event.detail.schemaVersion = '1.9';
    event.detail.reason = 'a field a later minor version added';
    event.detail.cluster.tier = 'gold';
    assert.equal(parseCpsyncEvent(event).detail.schemaVersion, '1.9');
  });

  it('refuses another major version, saying which it reads', () => {
    const event = created();
    event.detail.schemaVersion = '2.0';
    assert.deepEqual(problemsOf(event), [
      "detail.schemaVersion is 2.0: this reader takes schema 1.x; a 2.x event needs the subscriber kit of cpsync's 2.x contract",
    ]);
  });

  it('names each field that is wrong', () => {
    const event = created();
    delete event.detail.eventId;
    event.detail.cluster.provider = 'oke';
    event['detail-type'] = 'ClusterProfile Created';
    const problems = problemsOf(event);
    assert.ok(problems.includes("detail must have required property 'eventId'"), problems.join('\n'));
    assert.ok(
      problems.includes('detail.cluster.provider must be equal to one of the allowed values (eks, gke, aks)'),
      problems.join('\n'),
    );
    const other = created();
    other['detail-type'] = 'ClusterProfile Renamed';
    assert.match(
      problemsOf(other).join(),
      /detail-type is "ClusterProfile Renamed", not one cpsync publishes/,
    );
    assert.match(problemsOf('{not json').join(), /^not JSON/);
    assert.match(problemsOf({ ...created(), time: 'yesterday' }).join(), /time is not a date-time/);
  });

  it('is a Powertools parser schema, also inside the SQS envelope a rule → queue delivers', () => {
    const event = created();
    assert.equal(parse(event, undefined, CpsyncEventSchema).detail.eventId, event.detail.eventId);
    const record = (body: unknown, id: string) => ({
      messageId: id,
      receiptHandle: 'r',
      body: JSON.stringify(body),
      attributes: {
        ApproximateReceiveCount: '1',
        SentTimestamp: '1700000000000',
        SenderId: 'AIDA',
        ApproximateFirstReceiveTimestamp: '1700000000000',
      },
      messageAttributes: {},
      md5OfBody: 'x',
      eventSource: 'aws:sqs',
      eventSourceARN: 'arn:aws:sqs:us-east-1:123456789012:q',
      awsRegion: 'us-east-1',
    });
    const parsed = parse(
      { Records: [record(event, '1'), record(golden['clusterprofile-deleted'], '2')] },
      SqsEnvelope,
      CpsyncEventTextSchema,
    );
    assert.deepEqual(
      parsed.map((e) => e['detail-type']),
      ['ClusterProfile Created', 'ClusterProfile Deleted'],
    );
    const bad = { ...event, detail: { ...event.detail, schemaVersion: '2.1' } };
    assert.throws(
      () => parse({ Records: [record(bad, '1')] }, SqsEnvelope, CpsyncEventTextSchema),
      (error: Error) =>
        /"schemaVersion"[\s\S]*is 2\.1: this reader takes schema 1\.x/.test(
          String((error.cause as Error).message),
        ),
    );
  });
});

describe('pattern builders', () => {
  it('build the documented shapes', () => {
    assert.deepEqual(patterns.created(), { source: ['cpsync'], 'detail-type': ['ClusterProfile Created'] });
    assert.deepEqual(
      patterns.changed({
        fields: ['status.version.kubernetes'],
        fieldPrefixes: ['status.conditions'],
        provider: 'eks',
        namespace: ['a', 'b'],
      }),
      {
        source: ['cpsync'],
        'detail-type': ['ClusterProfile Updated'],
        detail: {
          cluster: { provider: ['eks'] },
          namespace: ['a', 'b'],
          changedFields: ['status.version.kubernetes', { prefix: 'status.conditions' }],
        },
      },
    );
    assert.deepEqual(
      patterns.scopeSynced({ outcome: 'failed', account: '111122223333', source: 'acme.cpsync' }),
      {
        source: ['acme.cpsync'],
        'detail-type': ['Inventory Scope Synced'],
        detail: { scope: { account: ['111122223333'] }, outcome: ['failed'] },
      },
    );
  });

  it('refuse what EventBridge would refuse, naming the option', () => {
    assert.throws(() => patterns.created({ region: [] }), /pattern option region is an empty list/);
    assert.throws(() => patterns.deleted({ account: '' }), /pattern option account has ""/);
    assert.throws(() => patterns.changed({}), /patterns.changed needs fields or fieldPrefixes/);
  });
});
