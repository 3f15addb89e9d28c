/**
 * The follow-up queue's message names a cluster its cloud could hold, and a GKE cluster's id is compared exactly:
 * a look at a name GKE cannot hold (a spelling of a real cluster's in other letters) is answered not found, and
 * must never stand for that cluster — which would delete its profile as confirmed gone.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { isGkeSelfLink } from '../../../adapters/gke/mapCluster.ts';
import { LookMessage } from '../../../functions/chases.ts';

const look = (ref: Record<string, unknown>) => ({
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
});
