/**
 * The follow-up queue's message names a cluster its cloud could hold, and a GKE cluster's id is compared exactly:
 * a look at a name GKE cannot hold (a spelling of a real cluster's in other letters) is answered not found, and
 * must never stand for that cluster — which would delete its profile as confirmed gone.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { isGkeSelfLink } from '../../../adapters/gke/mapCluster.ts';
import type { ObservedCluster } from '../../../core/domain/model/observedCluster.ts';
import { refOf } from '../../../core/sync/steps.ts';
import { follower, LookMessage } from '../../../functions/chases.ts';

const look = (ref: object) => ({
  chaseId: '6f1c7c2a-0d7e-4a4f-8a55-2a0d7a1f3b10',
  attempt: 1,
  ref,
  state: 'GKE PROVISIONING',
  startedAt: 0,
  delaySeconds: 10,
});

/** A GKE cluster name as GKE takes them: a lowercase letter, then lowercase letters, digits and hyphens, at most 40. */
const gkeName = fc
  .tuple(
    fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz'),
    fc.string({ unit: fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz0123456789-'), maxLength: 38 }),
    fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz0123456789'),
  )
  .map(([first, middle, last]) => `${first}${middle}${last}`);
const location = fc.constantFrom('europe-west1', 'us-central1', 'us-central1-a', 'asia-northeast3-b');
const project = fc.constantFrom('acme-data', 'acme-prod');

/** `text` with the letters `flips` picks in upper case (at least one: another spelling). */
const respelled = (text: string, flips: number[]) => {
  const letters = [...text].map((c, i) => (/[a-z]/.test(c) ? i : -1)).filter((i) => i >= 0);
  const picked = new Set(flips.map((f) => letters[f % letters.length]!));
  return [...text].map((c, i) => (picked.has(i) ? c.toUpperCase() : c)).join('');
};

describe('follow-up messages and GKE ids', () => {
  it('takes a GKE cluster GKE could hold, refuses every spelling of it in other letters, and no such spelling is its id (property)', () => {
    fc.assert(
      fc.property(
        gkeName,
        location,
        project,
        fc.array(fc.nat(), { minLength: 1, maxLength: 4 }),
        (name, at, inProject, flips) => {
          const ref = (n: string, l: string) => ({
            scope: { provider: 'gke', account: inProject, region: '*' },
            name: n,
            location: l,
          });
          assert.equal(LookMessage.safeParse(look(ref(name, at))).success, true, name);
          const selfLink = `https://container.googleapis.com/v1/projects/${inProject}/locations/${at}/clusters/${name}`;
          assert.equal(isGkeSelfLink(selfLink, inProject, at, name), true);
          for (const [n, l] of [
            [respelled(name, flips), at],
            [name, respelled(at, flips)],
          ] as const) {
            assert.equal(LookMessage.safeParse(look(ref(n, l))).success, false, `${n} at ${l}`);
            assert.equal(isGkeSelfLink(selfLink, inProject, l, n), false, `${n} at ${l}`);
          }
          assert.equal(isGkeSelfLink(selfLink, respelled(inProject, flips), at, name), false);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('takes the look at every cluster its cloud can hold, as cpsync makes it from the cloud’s answer (property)', () => {
    // The clouds' documented rules, not the validators': EKS names (letters, digits, _ and -, up to 100), AKS names
    // (up to 63, alphanumeric at both ends) in resource groups of Unicode letters and digits, _, -, . and ( ) (up to
    // 90, not ending in a period), GKE names in regions and zones.
    const from = (alphabet: string, min: number, max: number) =>
      fc.string({ unit: fc.constantFrom(...alphabet), minLength: min, maxLength: max });
    const alnum = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
    const eks = fc
      .tuple(from(alnum, 1, 1), from(`${alnum}_-`, 0, 99))
      .map(([first, rest]) => ({ provider: 'eks' as const, name: first + rest, region: 'eu-west-1' }));
    const aksName = fc.oneof(
      from(alnum, 1, 1),
      fc
        .tuple(from(alnum, 1, 1), from(`${alnum}_-`, 0, 61), from(alnum, 1, 1))
        .map(([first, middle, last]) => first + middle + last),
    );
    const aks = fc
      .tuple(
        aksName,
        fc.string({
          unit: fc.constantFrom(...'abcXYZ09_-().éßſıÅKｋ𝐤ДЖ漢字', '\u0301'),
          minLength: 1,
          maxLength: 80,
        }),
      )
      .filter(([, group]) => !group.endsWith('.'))
      .map(([name, group]) => ({
        provider: 'aks' as const,
        name,
        region: 'westeurope',
        resourceGroup: group,
      }));
    const gke = fc
      .tuple(
        gkeName,
        fc.constantFrom('europe-west1', 'northamerica-northeast1', 'me-central2', 'africa-south1'),
        fc.option(fc.constantFrom('a', 'b', 'c'), { nil: undefined }),
      )
      .map(([name, region, zone]) => ({
        provider: 'gke' as const,
        name,
        region,
        ...(zone ? { zone: `${region}-${zone}` } : {}),
      }));
    fc.assert(
      fc.property(fc.oneof(eks, aks, gke), (cluster) => {
        const ref = refOf(
          {
            provider: cluster.provider,
            account: 'acme',
            region: cluster.provider === 'eks' ? cluster.region : '*',
          },
          cluster as unknown as ObservedCluster,
        );
        const parsed = LookMessage.safeParse(look(ref));
        assert.ok(parsed.success, `${JSON.stringify(ref)}: ${parsed.error?.message}`);
      }),
      { numRuns: 500 },
    );
  });

  it('refuses a look at a name no cloud of its kind can hold, for every provider (property)', () => {
    const junk = fc.oneof(
      fc.string({ minLength: 1, maxLength: 60 }).filter((s) => /[^A-Za-z0-9_-]/.test(s)),
      fc.constant('orders/../payments'),
      fc.constant('-leading'),
      fc.constant('x'.repeat(254)),
    );
    fc.assert(
      fc.property(junk, fc.constantFrom('eks', 'gke', 'aks'), (name, provider) => {
        const ref = {
          scope: { provider, account: provider === 'eks' ? '111122223333' : 'acme', region: 'us-east-1' },
          name,
          ...(provider === 'gke' ? { location: 'europe-west1' } : {}),
          ...(provider === 'aks' ? { resourceGroup: 'rg' } : {}),
        };
        assert.equal(LookMessage.safeParse(look(ref)).success, false, `${provider} ${JSON.stringify(name)}`);
      }),
      { numRuns: 300 },
    );
  });

  it('leaves to the schedule, sending nothing, a cluster whose look the follow-up function would refuse', async () => {
    // Were anything sent, it would go to an address nothing listens at (and fail the call), with credentials of
    // no account: no traffic leaves this machine, no credential chain is asked.
    const saved = { ...process.env };
    Object.assign(process.env, {
      AWS_ENDPOINT_URL: 'http://127.0.0.1:9',
      AWS_ACCESS_KEY_ID: 'AKIAIOSFODNN7EXAMPLE',
      AWS_SECRET_ACCESS_KEY: 'not-a-secret',
      AWS_REGION: 'us-east-1',
      AWS_EC2_METADATA_DISABLED: 'true',
    });
    try {
      const follow = follower({ CPSYNC_FOLLOW_QUEUE_URL: 'http://127.0.0.1:9/queue' });
      const outcome = await follow(
        { follow: {} } as never,
        {
          scope: { provider: 'gke', account: 'acme-data', region: '*' },
          name: 'Orders',
          location: 'europe-west1',
        },
        'GKE PROVISIONING',
      );
      assert.equal(outcome, 'off');
    } finally {
      process.env = saved;
    }
  });
});
