/** The convergence oracle of the fault matrix sees each way a hub can differ from the clouds. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { convergenceProblems, type LiveCluster } from '../support/oracle.ts';

const live = new Map<string, LiveCluster>(
  [
    {
      providerId: 'arn:aws:eks:us-east-1:1:cluster/a',
      name: 'a',
      version: '1.31',
      location: 'us-east-1',
      endpointHost: 'a.example',
    },
    { providerId: 'arn:aws:eks:us-east-1:1:cluster/b', name: 'b', version: '1.30', location: 'us-east-1' },
  ].map((c) => [c.providerId.toLowerCase(), c]),
);
const profile = (id: string, version: string, server?: string) => ({
  metadata: { namespace: 'inv', name: id.split('/').pop()!, annotations: { 'cpsync.io/provider-id': id } },
  status: { version: { kubernetes: version }, accessProviders: server ? [{ cluster: { server } }] : [] },
});

describe('the convergence oracle', () => {
  it('finds nothing when every live cluster has its one profile, version and server', () => {
    assert.deepEqual(
      convergenceProblems(live, [
        profile('arn:aws:eks:us-east-1:1:cluster/a', '1.31', 'https://A.example:443'),
        profile('arn:aws:eks:us-east-1:1:cluster/b', '1.30'),
      ]),
      [],
    );
  });

  it('names a missing profile, a stale version, a wrong server, a duplicate and a profile of a gone cluster', () => {
    const problems = convergenceProblems(live, [
      profile('arn:aws:eks:us-east-1:1:cluster/a', '1.30', 'https://elsewhere.example'),
      profile('arn:aws:eks:us-east-1:1:cluster/gone', '1.29'),
      profile('arn:aws:eks:us-east-1:1:cluster/gone', '1.29'),
    ]);
    assert.equal(problems.length, 5, problems.join('\n'));
    assert.match(problems.join('\n'), /a: version 1\.30, the cloud says 1\.31/);
    assert.match(problems.join('\n'), /a: servers elsewhere\.example, the cloud says a\.example/);
    assert.match(problems.join('\n'), /b \(.*\): 0 profiles/);
    assert.match(problems.join('\n'), /cluster\/gone, which no cloud holds/);
  });
});
