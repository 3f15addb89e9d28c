import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { noticesOf } from '../../../../../functions/subscribers/chat/notices.ts';
import { goldenEvent, parsed } from './golden.ts';

describe('chat notices (what is worth a message)', () => {
  it('a created cluster: where it is and its Kubernetes version', () => {
    const [notice, ...rest] = noticesOf(parsed(goldenEvent('clusterprofile-created')));
    assert.equal(rest.length, 0);
    assert.equal(notice!.kind, 'created');
    assert.match(notice!.text, /^created \(\w+ \S+ \S+(, Kubernetes \S+)?\)$/);
  });

  it('a deleted cluster', () => {
    const notices = noticesOf(parsed(goldenEvent('clusterprofile-deleted')));
    assert.deepEqual(
      notices.map((n) => n.kind),
      ['deleted'],
    );
    assert.match(notices[0]!.text, /^deleted \(/);
  });

  it('an update: the version change and the health change, each a notice of its kind', () => {
    const notices = noticesOf(parsed(goldenEvent('clusterprofile-updated')));
    assert.deepEqual(
      notices.map((n) => [n.kind, n.subject, n.text]),
      [
        [
          'upgraded',
          'analytics',
          'Kubernetes 1.30.5-gke.1014001 → 1.31.1-gke.1146000 (gke acme-data europe-west1)',
        ],
        ['health', 'analytics', 'ControlPlaneHealthy is now True (was False) (gke acme-data europe-west1)'],
      ],
    );
  });

  it('an update that carries no values says which fields changed, not how', () => {
    const event = goldenEvent('clusterprofile-updated');
    event.detail.changes = event.detail.changes.map((c: { field: string }) => ({ field: c.field }));
    assert.deepEqual(
      noticesOf(parsed(event)).map((n) => n.text),
      [
        'Kubernetes version changed (gke acme-data europe-west1)',
        'ControlPlaneHealthy changed (gke acme-data europe-west1)',
      ],
    );
  });

  it('an update of labels or properties only is not worth a message', () => {
    const event = goldenEvent('clusterprofile-updated');
    event.detail.changedFields = ['metadata.labels'];
    event.detail.changes = [{ field: 'metadata.labels', before: {}, after: { env: 'prod' } }];
    assert.deepEqual(noticesOf(parsed(event)), []);
  });

  it('every copy of a cluster (its projections) has one key: its member id, else its provider id', () => {
    const copy = goldenEvent('clusterprofile-created');
    copy.detail.namespace = 'team-a';
    const [original] = noticesOf(parsed(goldenEvent('clusterprofile-created')));
    const [projected] = noticesOf(parsed(copy));
    assert.equal(projected!.key, original!.key);
    assert.match(original!.key, /^cluster:/);
    const anonymous = goldenEvent('clusterprofile-created');
    delete anonymous.detail.cluster.inventoryMemberId;
    assert.equal(noticesOf(parsed(anonymous))[0]!.key, `cluster:${anonymous.detail.cluster.providerId}`);
  });

  it('a failed scope says why; a complete scope and the other events are not worth a message', () => {
    const failed = noticesOf(parsed(goldenEvent('inventory-scope-synced-failed')));
    assert.deepEqual(
      failed.map((n) => n.kind),
      ['scopeFailed'],
    );
    assert.match(failed[0]!.text, /^could not be synced: \w+: /);
    assert.match(failed[0]!.key, /^scope:/);
    for (const name of [
      'inventory-scope-synced-complete',
      'inventory-scope-orphaned',
      'clusterprofile-announced',
      'consumer-access-granted',
      'consumer-access-revoked',
    ])
      assert.deepEqual(noticesOf(parsed(goldenEvent(name))), [], name);
  });

  it('a scope synced in part names what failed and what was not listed', () => {
    const event = goldenEvent('inventory-scope-synced-complete');
    event.detail.outcome = 'partial';
    event.detail.counts.failed = 2;
    event.detail.missing = ['europe-west1-b'];
    const [notice] = noticesOf(parsed(event));
    assert.equal(notice!.kind, 'scopePartial');
    assert.equal(notice!.text, 'synced in part: 2 failed; not listed: europe-west1-b');
  });
});
