import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { readExecInfo, resolveTarget, TargetError } from '../../../../adapters/credentials/target.ts';
import { eksRoleArn, TokenError } from '../../../../adapters/credentials/tokens.ts';
import { credentialsMain } from '../../../../cli/credentials.ts';
import { canonicalServer } from '../../../../core/domain/endpoints.ts';

function sink() {
  let text = '';
  const stream = new Writable({
    write(chunk, _encoding, done) {
      text += String(chunk);
      done();
    },
  });
  return { stream, text: () => text };
}

const NOW = new Date('2026-11-23T10:00:00.000Z');
const SECRET = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY';
/** Static AWS keys: an EKS token is signed locally, so these runs need no network. */
const AWS = {
  AWS_ACCESS_KEY_ID: 'AKIAIOSFODNN7EXAMPLE',
  AWS_SECRET_ACCESS_KEY: SECRET,
  AWS_EC2_METADATA_DISABLED: 'true',
};

/** Runs the plugin in this process with `env` as its whole environment (the SDK credential chains read process.env). */
async function plugin(args: string[], env: NodeJS.ProcessEnv) {
  const stdout = sink();
  const stderr = sink();
  const saved = { ...process.env };
  for (const key of Object.keys(process.env)) if (key !== 'PATH' && key !== 'HOME') delete process.env[key];
  Object.assign(process.env, env);
  try {
    const code = await credentialsMain(args, {
      stdout: stdout.stream,
      stderr: stderr.stream,
      env: process.env,
      now: () => NOW,
    });
    return { code, stdout: stdout.text(), stderr: stderr.text() };
  } finally {
    for (const key of Object.keys(process.env)) delete process.env[key];
    Object.assign(process.env, saved);
  }
}

/** An EKS endpoint as DescribeCluster gives one in eu-west-1. */
const EKS_SERVER = 'https://0A1B2C3D4E5F60718293A4B5C6D7E8F9.gr7.eu-west-1.eks.amazonaws.com';

const execInfo = (apiVersion: string, config?: Record<string, unknown>, server = EKS_SERVER) =>
  JSON.stringify({
    apiVersion,
    kind: 'ExecCredential',
    spec: { interactive: false, ...(config ? { cluster: { server, config } } : {}) },
  });

describe('cpsync credentials: what it reads', () => {
  it('takes the cluster from the profile extension client-go hands over, flags winning', () => {
    const info = readExecInfo(
      execInfo('client.authentication.k8s.io/v1beta1', {
        provider: 'eks',
        clusterName: 'cpsync-eks-payments-0a1b2c3d4e',
        cluster: 'payments',
        clusterId: 'payments',
        region: 'eu-west-1',
        accountId: '111122223333',
        somethingNew: true,
      }),
    )!;
    assert.equal(info.apiVersion, 'client.authentication.k8s.io/v1beta1');
    assert.deepEqual(resolveTarget(info.extension, {}), {
      provider: 'eks',
      cluster: 'payments',
      region: 'eu-west-1',
      accountId: '111122223333',
    });
    assert.deepEqual(resolveTarget(info.extension, { region: 'us-east-1' }), {
      provider: 'eks',
      cluster: 'payments',
      region: 'us-east-1',
      accountId: '111122223333',
    });
    assert.deepEqual(
      resolveTarget({ provider: 'aks', cluster: 'web', tenantId: 't', subscriptionId: 's' }, {}),
      { provider: 'aks', cluster: 'web', tenantId: 't', subscriptionId: 's' },
    );
    assert.deepEqual(resolveTarget(undefined, { provider: 'gke', project: 'p', location: 'europe-west1' }), {
      provider: 'gke',
      projectId: 'p',
      location: 'europe-west1',
    });
  });

  it('names what is missing or malformed', () => {
    assert.equal(readExecInfo(undefined), undefined);
    assert.throws(() => readExecInfo('{'), /KUBERNETES_EXEC_INFO is not JSON/);
    assert.throws(() => readExecInfo('{"kind":"ExecCredential"}'), /KUBERNETES_EXEC_INFO: apiVersion/);
    assert.throws(
      () => readExecInfo(execInfo('client.authentication.k8s.io/v1', { provider: 'openshift' })),
      /exec extension: provider/,
    );
    assert.throws(() => resolveTarget(undefined, {}), /provideClusterInfo: true/);
    assert.throws(
      () => resolveTarget({ provider: 'eks', region: 'eu-west-1' }, {}),
      /the cluster name is missing/,
    );
    assert.throws(() => resolveTarget({ provider: 'eks', cluster: 'x' }, {}), TargetError);
    // A region or account that would put something else into the STS host or the role ARN.
    for (const region of ['evil.example.net/x#', 'eu-west-1.evil.example.net', 'EU-WEST-1', 'eu-west-1 ', ''])
      assert.throws(
        () => resolveTarget({ provider: 'eks', cluster: 'x', region: region || ' ' }, {}),
        /is not an AWS region/,
        region,
      );
    // From the flags (Argo CD's exec args) as from the extension.
    assert.throws(
      () => resolveTarget(undefined, { provider: 'eks', clusterName: 'x', region: 'evil.example.net/x#' }),
      /is not an AWS region/,
    );
    assert.throws(
      () =>
        resolveTarget(undefined, { provider: 'eks', clusterName: 'x', region: 'eu-west-1', account: '1x' }),
      /is not an AWS account id/,
    );
    assert.throws(
      () => resolveTarget({ provider: 'eks', cluster: 'x', region: 'eu-west-1', accountId: '1:role/x' }, {}),
      /is not an AWS account id/,
    );
    for (const region of ['eu-west-1', 'us-gov-west-1', 'cn-north-1', 'us-isob-east-1', 'ap-southeast-4'])
      assert.equal(
        (resolveTarget({ provider: 'eks', cluster: 'x', region }, {}) as { region: string }).region,
        region,
      );
  });

  it('assumes the role named by an ARN pattern or a role name, in the partition of the region', async () => {
    const target = {
      provider: 'eks',
      cluster: 'c',
      region: 'cn-north-1',
      accountId: '111122223333',
    } as const;
    const settings = { env: {}, now: () => NOW };
    assert.equal(await eksRoleArn(target, settings), undefined);
    assert.equal(
      await eksRoleArn(target, { ...settings, roleArn: 'arn:aws:iam::{accountId}:role/reader-{region}' }),
      'arn:aws:iam::111122223333:role/reader-cn-north-1',
    );
    assert.equal(
      await eksRoleArn(target, { ...settings, roleName: 'reader' }),
      'arn:aws-cn:iam::111122223333:role/reader',
    );
    await assert.rejects(
      () => eksRoleArn({ ...target, accountId: undefined }, { ...settings, roleName: 'reader' }),
      TokenError,
    );
  });
});

describe('cpsync credentials: what it prints', () => {
  it('answers an ExecCredential in the version it was asked in, with an expiry client-go caches by', async () => {
    for (const version of ['client.authentication.k8s.io/v1', 'client.authentication.k8s.io/v1beta1']) {
      const run = await plugin([], {
        ...AWS,
        KUBERNETES_EXEC_INFO: execInfo(version, {
          provider: 'eks',
          clusterId: 'payments',
          region: 'eu-west-1',
        }),
      });
      assert.equal(run.code, 0, run.stderr);
      const credential = JSON.parse(run.stdout) as {
        apiVersion: string;
        kind: string;
        status: { token: string; expirationTimestamp: string };
      };
      assert.equal(credential.apiVersion, version);
      assert.equal(credential.kind, 'ExecCredential');
      assert.equal(credential.status.expirationTimestamp, '2026-11-23T10:14:00Z');
      const url = new URL(
        Buffer.from(credential.status.token.slice('k8s-aws-v1.'.length), 'base64url').toString(),
      );
      assert.equal(url.host, 'sts.eu-west-1.amazonaws.com');
      assert.equal(url.searchParams.get('Action'), 'GetCallerIdentity');
      assert.match(url.searchParams.get('X-Amz-SignedHeaders')!, /x-k8s-aws-id/);
      assert.equal(run.stderr, '');
    }
  });

  it('works from flags alone (Argo CD passes no cluster info), presigning against the STS endpoint of the environment', async () => {
    const run = await plugin(['--provider', 'eks', '--cluster-name', 'payments', '--region', 'us-east-1'], {
      ...AWS,
      AWS_ENDPOINT_URL_STS: 'http://127.0.0.1:4566',
      KUBERNETES_EXEC_INFO: execInfo('client.authentication.k8s.io/v1'),
    });
    assert.equal(run.code, 0, run.stderr);
    const token = (JSON.parse(run.stdout) as { status: { token: string } }).status.token;
    assert.match(
      Buffer.from(token.slice(11), 'base64url').toString(),
      /^http:\/\/127\.0\.0\.1:4566\/\?Action=/,
    );
  });

  it('fails with one line on stderr, exit 1, never a stack trace or a secret', async () => {
    const cases: Array<[string[], NodeJS.ProcessEnv, RegExp]> = [
      [[], { ...AWS }, /^cpsync credentials: no cluster information: set provideClusterInfo: true/],
      [[], { ...AWS, KUBERNETES_EXEC_INFO: '{"apiVersion":' }, /KUBERNETES_EXEC_INFO is not JSON/],
      [
        ['--provider', 'eks', '--cluster-name', 'x'],
        { ...AWS },
        /^cpsync credentials: eks: the region is missing/,
      ],
      [
        ['--provider', 'gke'],
        { GOOGLE_APPLICATION_CREDENTIALS: `/nonexistent/${SECRET}.json` },
        /^cpsync credentials: gke: cannot read the credentials file/,
      ],
      [
        ['--provider', 'eks', '--cluster-name', 'x', '--region', 'eu-west-1', '--role-name', 'reader'],
        { ...AWS },
        /needs the cluster's account/,
      ],
    ];
    for (const [args, env, expected] of cases) {
      const run = await plugin(args, env);
      assert.equal(run.code, 1, `${args.join(' ')}: ${run.stderr}`);
      assert.equal(run.stdout, '');
      assert.match(run.stderr, expected);
      assert.equal(run.stderr.trim().split('\n').length, 1, run.stderr);
      assert.doesNotMatch(run.stderr, /\n\s+at /);
      if (!expected.source.includes('credentials file')) assert.ok(!run.stderr.includes(SECRET));
    }
    const usage = await plugin(['--provider', 'openshift'], AWS);
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /--provider.*openshift/);
  });

  it('refuses a --timeout longer than a timer holds, which would fail every request at once, and takes the longest it can hold', async () => {
    const flags = ['--provider', 'eks', '--cluster-name', 'payments', '--region', 'us-east-1'];
    const env = { ...AWS, KUBERNETES_EXEC_INFO: execInfo('client.authentication.k8s.io/v1') };
    for (const timeout of ['2147484', '2200000', '1e10']) {
      const run = await plugin([...flags, '--timeout', timeout], env);
      assert.notEqual(run.code, 0, timeout);
      assert.equal(run.stdout, '');
      assert.match(run.stderr, new RegExp(`--timeout: expected at most 2147483 seconds, got "${timeout}"`));
    }
    const longest = await plugin([...flags, '--timeout', '2147483'], env);
    assert.equal(longest.code, 0, longest.stderr);
    assert.match(longest.stdout, /"token":"k8s-aws-v1\./);
  });
});

describe('cpsync credentials: where the token goes', () => {
  const eks = { provider: 'eks', clusterId: 'payments', region: 'eu-west-1', accountId: '111122223333' };
  const aks = { provider: 'aks', cluster: 'web', tenantId: '0c1d2e3f-0000-4000-8000-000000000001' };
  const run = (server: string, config: Record<string, unknown>, extra: NodeJS.ProcessEnv = {}) =>
    plugin([], {
      ...AWS,
      ...extra,
      KUBERNETES_EXEC_INFO: execInfo('client.authentication.k8s.io/v1', config, server),
    });

  it('sends no token to a server the profile or kubeconfig names that is not where such a cluster is reached', async () => {
    /** Hosts no token may go to, however spelled: loopback, metadata and link-local, other domains, other regions. */
    const elsewhere = fc.oneof(
      fc.constantFrom(
        'https://127.0.0.1',
        'https://2130706433',
        'https://0x7f000001:6443',
        'https://[::1]',
        'https://169.254.169.254',
        'https://metadata.google.internal',
        'https://localhost:6443',
        'http://0A1B.gr7.eu-west-1.eks.amazonaws.com',
        'https://user@0A1B.gr7.eu-west-1.eks.amazonaws.com',
        'https://0A1B.gr7.eu-west-1.eks.amazonaws.com.evil.example',
        'https://eks.amazonaws.com.evil.example',
        'https://0A1B.gr7.us-east-1.eks.amazonaws.com',
        'https://web-dns-abc123.hcp.westeurope.azmk8s.io',
      ),
      fc.domain().map((host) => `https://${host}`),
      fc.ipV4().map((ip) => `https://${ip}`),
    );
    await fc.assert(
      fc.asyncProperty(elsewhere, async (server) => {
        const answer = await run(server, eks);
        assert.equal(answer.code, 1);
        assert.equal(answer.stdout, '', 'no token printed');
        assert.match(answer.stderr, /^cpsync credentials: eks: the server .* is not .*: no token/);
      }),
      { numRuns: 60 },
    );
    // Told that EKS runs on this machine, the plugin takes loopback servers for it too, and no other server more.
    await fc.assert(
      fc.asyncProperty(
        elsewhere.filter((server) => canonicalServer(server) !== undefined),
        async (server) => {
          const answer = await run(server, eks, { CPSYNC_LOCAL_CLOUDS: 'eks' });
          assert.equal(answer.code, 1, server);
          assert.equal(answer.stdout, '', 'no token printed');
          assert.match(
            answer.stderr,
            /^cpsync credentials: eks: the server .* is not an EKS endpoint in eu-west-1/,
          );
        },
      ),
      { numRuns: 30 },
    );
    const azure = await run('https://0A1B.gr7.eu-west-1.eks.amazonaws.com', aks);
    assert.equal(azure.code, 1);
    assert.match(azure.stderr, /is not an AKS endpoint/);
  });

  it('refuses a cluster described without the server the token is sent to (client-go always gives it)', async () => {
    for (const extra of [{}, { CPSYNC_LOCAL_CLOUDS: 'eks' }]) {
      const answer = await plugin([], {
        ...AWS,
        ...extra,
        KUBERNETES_EXEC_INFO: JSON.stringify({
          apiVersion: 'client.authentication.k8s.io/v1',
          kind: 'ExecCredential',
          spec: { interactive: false, cluster: { config: eks } },
        }),
      });
      assert.equal(answer.code, 1);
      assert.equal(answer.stdout, '', 'no token printed');
      assert.match(
        answer.stderr,
        /KUBERNETES_EXEC_INFO: spec\.cluster\.server: missing: the server the token is sent to is always given with the cluster/,
      );
    }
    // Without the cluster (provideClusterInfo: false), the flags say which cluster, as before.
    const byFlags = await plugin(
      ['--provider', 'eks', '--cluster-name', 'payments', '--region', 'eu-west-1'],
      {
        ...AWS,
        KUBERNETES_EXEC_INFO: JSON.stringify({
          apiVersion: 'client.authentication.k8s.io/v1',
          kind: 'ExecCredential',
          spec: { interactive: false },
        }),
      },
    );
    assert.equal(byFlags.code, 0, byFlags.stderr);
  });

  it("sends the token to the cluster's own endpoint, however the kubeconfig spells it, and to loopback only for clouds it is told run here", async () => {
    for (const server of [EKS_SERVER, `${EKS_SERVER}:443`, `${EKS_SERVER}/`, EKS_SERVER.toLowerCase()]) {
      const answer = await run(server, eks);
      assert.equal(answer.code, 0, answer.stderr);
      assert.match(answer.stdout, /"token":"k8s-aws-v1\./);
    }
    assert.equal((await run('https://127.0.0.1:6443', eks)).code, 1);
    assert.equal((await run('https://127.0.0.1:6443', eks, { CPSYNC_LOCAL_CLOUDS: 'gke,aks' })).code, 1);
    assert.equal((await run('https://127.0.0.1:6443', eks, { CPSYNC_LOCAL_CLOUDS: 'eks' })).code, 0);
    assert.equal((await run(EKS_SERVER, eks, { CPSYNC_LOCAL_CLOUDS: 'eks' })).code, 0);
    assert.equal(
      (
        await plugin(['--local-clouds', 'eks'], {
          ...AWS,
          KUBERNETES_EXEC_INFO: execInfo('client.authentication.k8s.io/v1', eks, 'https://127.0.0.1:6443'),
        })
      ).code,
      0,
    );
  });
});
