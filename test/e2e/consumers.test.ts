/**
 * What consumers of the inventory can do with what cpsync writes, proven with code no one here wrote:
 * the upstream access library (sigs.k8s.io/cluster-inventory-api v0.1.3), client-go's exec credential
 * path, multicluster-runtime's cluster-inventory-api provider (v0.24.1) and the upstream secretreader
 * plugin, built from their Go modules, against profiles the real CLI wrote into the real hub from the
 * local estate. One cluster of each cloud points at a member cluster (a second kube-apiserver) whose
 * token webhook verifies tokens as the clouds do; `cpsync credentials`, bundled as the one file
 * consumers carry, is the exec plugin of every access provider. The provider files are the ones
 * `cpsync consumers access-library` and `cpsync consumers multicluster-runtime` print for the configuration,
 * and the access library reads the hub as an identity bound only by the RBAC the first one prints.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { parse, stringify } from 'yaml';
import { KubernetesHub } from '../../adapters/hub/KubernetesHub.ts';
import { clientCertificate, kubeconfigYaml } from '../env/hub.ts';
import { isDns1123Subdomain } from '../../core/domain/naming.ts';
import type { ClusterProfile } from '../../core/domain/model/clusterProfile.ts';
import { ensureConsumerBinaries } from '../env/binaries.ts';
import { EKS_ACCOUNT, GCP_PROJECT, type Emulators } from '../env/emulators.ts';
import { AT_MEMBER, serveFromMember, startEstateMember, type Member } from '../env/member.ts';
import { HUB_CREDENTIALS } from '../support/aws.ts';
import { runCli } from '../support/cli.ts';
import { estateOnHub } from '../support/estate.ts';
import { adminKubeConfig, localHub, userKubeConfig } from '../support/hub.ts';
import { consumerKit, printedPart, type ConsumerKit } from '../support/consumerKit.ts';
import { applyPrinted } from '../support/hubManifests.ts';

const EXTENSION = 'client.authentication.k8s.io/exec';

interface Line {
  [key: string]: unknown;
}

function lines(text: string): Line[] {
  return text
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Line);
}

const extensionOf = (p: ClusterProfile) =>
  p.status!.accessProviders![0]!.cluster!.extensions!.find((e) => e.name === EXTENSION)!.extension;

describe('consumers reach the clusters through what cpsync writes (upstream access library, client-go exec, multicluster-runtime)', () => {
  let emulators: Emulators;
  let member: Member;
  let namespace: string;
  let hubKubeconfig: string;
  let hub: KubernetesHub;
  let binaries: { consumer: string; secretreader: string };
  let providerFile: string;
  let runtimeProviderFile: string;
  /** The access library's program on the hub: a user bound only by the RBAC `cpsync consumers` printed. */
  let consumerKubeconfig: string;
  let consumerUser: string;
  let removeConsumerRbac: (() => Promise<void>) | undefined;
  let consumerEnv: Record<string, string>;
  let kit: ConsumerKit;
  let configPath: string;
  let memberProfiles: Record<'eks' | 'gke' | 'aks', string>;
  let restoreEdge: () => void;

  const sync = async () => {
    const run = await runCli(['sync', '--config', configPath], {
      cwd: emulators.directory,
      env: emulators.env,
    });
    assert.ok(run.code === 0 || run.code === 1, run.stderr);
    return run;
  };
  const profiles = () => hub.list(namespace, { 'x-k8s.io/cluster-manager': 'cpsync' });
  /** Runs a program to its end without blocking this process (the local clouds and the webhook answer from it). */
  const run = (command: string, args: string[]) =>
    new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = spawn(command, args, { env: consumerEnv });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      child.on('close', (code) => resolve({ code, stdout, stderr }));
    });
  const consumer = async (args: string[], file = providerFile, kubeconfig = hubKubeconfig) => {
    const done = await run(binaries.consumer, [
      ...args,
      '-kubeconfig',
      kubeconfig,
      '-namespace',
      namespace,
      '-provider-file',
      file,
    ]);
    assert.equal(done.code, 0, done.stderr);
    return lines(done.stdout);
  };
  /** Runs the bundled plugin (the one file consumers carry) with `flags`. */
  const plugin = (...flags: string[]) =>
    run(process.execPath, [join(emulators.directory, 'cpsync-credentials.mjs'), ...flags]);
  /** The token the plugin prints for `flags`. */
  const pluginToken = async (...flags: string[]) => {
    const done = await plugin(...flags);
    assert.equal(done.code, 0, done.stderr);
    return (JSON.parse(done.stdout) as { status: { token: string } }).status.token;
  };

  before(async () => {
    const estate = await estateOnHub('consumers', (line) => console.log(line));
    ({ emulators, namespace } = estate);
    hubKubeconfig = estate.state.kubeconfig;
    hub = new KubernetesHub({ kubeConfig: adminKubeConfig(estate.state) });
    binaries = ensureConsumerBinaries((line) => console.log(`[consumer] ${line}`));

    member = await startEstateMember(emulators, AT_MEMBER.eks, (line) => console.log(`[member] ${line}`));
    // One cluster of each cloud is served by the member, with the member's real CA.
    const edge = serveFromMember(emulators, member);
    restoreEdge = () => {
      const clusters = emulators.gke.clusters.get(GCP_PROJECT)!;
      if (!clusters.some((c) => c.name === AT_MEMBER.gke)) clusters.push(edge);
    };

    // The real CLI writes the inventory into the shared hub.
    const document = parse(readFileSync(emulators.configPath, 'utf8')) as Record<string, unknown>;
    configPath = join(emulators.directory, 'consumers.yaml');
    writeFileSync(
      configPath,
      stringify({ ...document, hub: { kubeconfig: hubKubeconfig }, bus: { stdout: true } }),
    );
    const first = await sync();
    assert.equal(first.code, 0, first.stderr);

    // The plugin as consumers carry it: one bundled file, run by Node, nothing else of the project; the provider
    // files and the access library's hub RBAC as cpsync prints them for this configuration.
    kit = consumerKit(emulators);
    consumerEnv = kit.env;
    consumerUser = `fleet-${namespace.slice(-6)}`;
    const subject = ['--subject', `user:${consumerUser}`];
    providerFile = await printedPart(
      kit,
      configPath,
      'access-library',
      'provider-file',
      join(emulators.directory, 'access-library-providers.json'),
      subject,
    );
    runtimeProviderFile = await printedPart(
      kit,
      configPath,
      'multicluster-runtime',
      'provider-file',
      join(emulators.directory, 'multicluster-runtime-providers.json'),
    );
    const rbac = await printedPart(
      kit,
      configPath,
      'access-library',
      'rbac',
      join(emulators.directory, 'access-library-rbac.yaml'),
      subject,
    );
    removeConsumerRbac = await applyPrinted(adminKubeConfig(estate.state), readFileSync(rbac, 'utf8'));
    const { cert, key } = clientCertificate(estate.state, consumerUser);
    consumerKubeconfig = join(emulators.directory, 'access-library.kubeconfig');
    writeFileSync(
      consumerKubeconfig,
      kubeconfigYaml(estate.state.server, estate.state.caCert, consumerUser, cert, key),
      {
        mode: 0o600,
      },
    );
    const byName = new Map((await profiles()).map((p) => [p.spec.displayName, p]));
    memberProfiles = {
      eks: [...(await profiles())].find(
        (p) => p.spec.displayName === AT_MEMBER.eks && extensionOf(p).region === 'us-east-1',
      )!.metadata.name,
      gke: byName.get(AT_MEMBER.gke)!.metadata.name,
      aks: byName.get(AT_MEMBER.aks)!.metadata.name,
    };
  });

  after(async () => {
    await removeConsumerRbac?.();
    await member?.stop();
    await emulators?.stop();
  });

  it('the access library, reading the hub as an identity bound only by the printed RBAC, builds a rest.Config for every profile with the printed provider file, its CA loads, and client-go runs cpsync credentials for a token of each cloud', async () => {
    const stored = await profiles();
    assert.equal(stored.length, emulators.clusters);
    const results = await consumer(['tokens'], providerFile, consumerKubeconfig);
    assert.equal(results.length, stored.length);
    const expected = { eks: 'k8s-aws-v1.', gke: 'ya29.', aks: 'jwt' } as Record<string, string>;
    for (const result of results) {
      assert.equal(result.error, undefined, JSON.stringify(result));
      assert.equal(result.built, true, JSON.stringify(result));
      assert.equal(result.caData, true, `${String(result.profile)} carries CA data client-go loads`);
      assert.equal(result.token, expected[String(result.accessProvider)], JSON.stringify(result));
    }
    // The identity reads ClusterProfiles where the access library reads them, and nothing else.
    const identity = userKubeConfig(await localHub(), consumerUser);
    const status = (call: Promise<unknown>) =>
      call.then(
        () => 200,
        (error: { code?: number }) => error.code,
      );
    const profilesIn = (ns: string) =>
      identity.makeApiClient(CustomObjectsApi).listNamespacedCustomObject({
        group: 'multicluster.x-k8s.io',
        version: 'v1alpha1',
        namespace: ns,
        plural: 'clusterprofiles',
      });
    assert.equal(await status(profilesIn(namespace)), 200);
    assert.equal(await status(profilesIn('default')), 403);
    assert.equal(await status(identity.makeApiClient(CoreV1Api).listNamespacedSecret({ namespace })), 403);
  });

  it('a consumer reaches the member cluster of each cloud with the plugin token and lists its namespaces', async () => {
    for (const provider of ['eks', 'gke', 'aks'] as const) {
      // An EKS token is a URL presigned to the second: one made in the same second as a token the member
      // accepted before (another case) is the same string, which the member may take from its cache
      // without asking the webhook. A new second makes a new token.
      await new Promise((resolve) => setTimeout(resolve, 1_100));
      const before = member.reviews.length;
      const [result] = await consumer(['reach', '-profile', memberProfiles[provider]]);
      assert.equal(
        result!.error,
        undefined,
        `${provider}: ${JSON.stringify(result)} ${JSON.stringify(member.reviews.slice(before))}`,
      );
      assert.ok((result!.namespaces as string[]).includes('kube-system'), provider);
      const reviewed = member.reviews.slice(before);
      assert.ok(
        reviewed.some((r) => r.kind === provider && r.authenticated),
        `${provider}: ${JSON.stringify(reviewed)}`,
      );
    }
  });

  it('the member refuses no token, a forged token, and a real token signed for another cluster', async () => {
    const ask = (token?: string) =>
      new Promise<number>((resolve, reject) => {
        const req = request(
          `${member.server}/api/v1/namespaces`,
          {
            ca: Buffer.from(member.caData, 'base64'),
            headers: token ? { authorization: `Bearer ${token}` } : {},
          },
          (response) => {
            response.resume();
            resolve(response.statusCode ?? 0);
          },
        );
        req.on('error', reject);
        req.end();
      });
    const otherCluster = await pluginToken(
      '--provider',
      'eks',
      '--cluster-name',
      'payments',
      '--region',
      'us-east-1',
    );
    const rightCluster = await pluginToken(
      '--provider',
      'eks',
      '--cluster-name',
      AT_MEMBER.eks,
      '--region',
      'us-east-1',
    );
    const forgedJwt = `${Buffer.from('{"alg":"RS256"}').toString('base64url')}.${Buffer.from(
      JSON.stringify({ aud: '6dae42f8-4368-4678-94ff-3960e28e3630', iss: 'x' }),
    ).toString('base64url')}.c2lnbmF0dXJl`;
    assert.equal(await ask(), 401, 'no token');
    assert.equal(await ask('not-a-token'), 401, 'garbage');
    assert.equal(await ask(otherCluster), 401, 'an EKS token signed for another cluster');
    assert.equal(await ask('ya29.not-issued-by-google'), 401, 'a Google token nobody issued');
    assert.equal(await ask(forgedJwt), 401, 'a JWT Entra did not sign');
    assert.equal(await ask(rightCluster), 200, 'the same plugin, for the member, in flags mode');
  });

  it("says when each cloud's token expires, never later than it does: a consumer refreshing at 80 % of the lifetime (Sveltos) always holds a valid token", async () => {
    const runs = {
      eks: ['--provider', 'eks', '--cluster-name', AT_MEMBER.eks, '--region', 'us-east-1'],
      gke: ['--provider', 'gke'],
      aks: ['--provider', 'aks', '--tenant-id', emulators.arm.tenantId],
    } as const;
    for (const [provider, flags] of Object.entries(runs)) {
      const asked = Date.now();
      const done = await plugin(...flags);
      assert.equal(done.code, 0, `${provider}: ${done.stderr}`);
      const { token, expirationTimestamp } = (
        JSON.parse(done.stdout) as { status: { token: string; expirationTimestamp?: string } }
      ).status;
      assert.ok(expirationTimestamp, `${provider}: an expirationTimestamp, so consumers refresh`);
      const said = Date.parse(expirationTimestamp);
      // When the token really stops being accepted, as its verifier judges it.
      let real: number;
      if (provider === 'eks') {
        // aws-iam-authenticator: 15 minutes from the presigned URL's date (the member's webhook checks the same).
        const url = new URL(Buffer.from(token.slice('k8s-aws-v1.'.length), 'base64url').toString());
        const d = url.searchParams.get('X-Amz-Date')!;
        real =
          Date.parse(
            `${d.slice(0, 4)}-${d.slice(4, 6)}-${d.slice(6, 8)}T${d.slice(9, 11)}:${d.slice(11, 13)}:${d.slice(13, 15)}Z`,
          ) +
          15 * 60_000;
      } else if (provider === 'gke') {
        const info = (await (
          await fetch(`${emulators.gke.endpoint}/tokeninfo?access_token=${encodeURIComponent(token)}`)
        ).json()) as { expires_in: number };
        real = asked + info.expires_in * 1000;
      } else {
        real =
          (JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()) as { exp: number }).exp *
          1000;
      }
      assert.ok(
        said <= real + 1000,
        `${provider}: said ${new Date(said).toISOString()}, expires ${new Date(real).toISOString()}`,
      );
      assert.ok(said - asked >= 5 * 60_000, `${provider}: a lifetime of minutes, not seconds`);
      // Sveltos refreshes at 80 % of the lifetime it is told: still inside the real one.
      const refreshAt = asked + 0.8 * (said - asked);
      assert.ok(refreshAt < real, provider);
    }
  });

  it("assumes the role named by --role-name in the cluster's account before signing an EKS token", async () => {
    emulators.proxy.clear();
    const done = await plugin(
      '--provider',
      'eks',
      '--cluster-name',
      AT_MEMBER.eks,
      '--region',
      'us-east-1',
      '--account',
      EKS_ACCOUNT,
      '--role-name',
      'cluster-reader',
    );
    assert.equal(done.code, 0, done.stderr);
    const assumed = emulators.proxy.calls.filter((c) => c.operation === 'AssumeRole');
    assert.equal(assumed.length, 1);
    assert.match(
      decodeURIComponent(assumed[0]!.body),
      new RegExp(`RoleArn=arn:aws:iam::${EKS_ACCOUNT}:role/cluster-reader`),
    );
    const token = (JSON.parse(done.stdout) as { status: { token: string } }).status.token;
    const url = new URL(Buffer.from(token.slice('k8s-aws-v1.'.length), 'base64url').toString());
    assert.ok(url.searchParams.get('X-Amz-Security-Token'), 'signed with the role session');
    assert.ok(!url.searchParams.get('X-Amz-Credential')!.startsWith(HUB_CREDENTIALS.accessKeyId));
  });

  it('every profile meets the community EKS plugin contract and the upstream secretreader contract; same-named clusters never collide', async () => {
    const stored = await profiles();
    const names = stored.map((p) => String(extensionOf(p).clusterName));
    assert.equal(new Set(names).size, stored.length, 'clusterName is unique');
    for (const profile of stored) {
      const extension = extensionOf(profile);
      assert.ok(isDns1123Subdomain(String(extension.clusterName)), 'a valid Secret name');
      if (extension.provider === 'eks') {
        assert.ok(extension.clusterId && extension.region, `${profile.metadata.name}: clusterId and region`);
        assert.equal(extension.accountId, EKS_ACCOUNT);
      }
    }
    const payments = stored.filter((p) => p.spec.displayName === 'payments');
    assert.equal(payments.length, 2);
    assert.notEqual(extensionOf(payments[0]!).clusterName, extensionOf(payments[1]!).clusterName);

    // The upstream secretreader plugin reads the Secret named by clusterName: one per profile, each its own.
    const kubeconfig = parse(readFileSync(hubKubeconfig, 'utf8')) as {
      contexts: Array<{ context: Record<string, string> }>;
    };
    for (const c of kubeconfig.contexts) c.context.namespace = namespace;
    const readerKubeconfig = join(emulators.directory, 'secretreader.kubeconfig');
    writeFileSync(readerKubeconfig, stringify(kubeconfig), { mode: 0o600 });
    const core = adminKubeConfig(await localHub()).makeApiClient(CoreV1Api);
    const secretOf = (name: string) => `secret-of-${name}`;
    for (const name of names)
      await core.createNamespacedSecret({
        namespace,
        body: { metadata: { name }, stringData: { token: secretOf(name) } },
      });
    const file = kit.providersFile(
      'secretreader-providers',
      binaries.secretreader,
      [],
      [{ name: 'KUBECONFIG', value: readerKubeconfig }],
    );
    const sha = (text: string) => createHash('sha256').update(text).digest('hex');
    const results = await consumer(['tokens'], file);
    assert.equal(results.length, stored.length);
    const byProfile = new Map(stored.map((p) => [p.metadata.name, String(extensionOf(p).clusterName)]));
    for (const result of results) {
      assert.equal(result.error, undefined, JSON.stringify(result));
      assert.equal(
        result.tokenSha256,
        sha(secretOf(byProfile.get(String(result.profile))!)),
        String(result.profile),
      );
    }
  });

  it('multicluster-runtime engages the members, does not engage one missing from its listing (Unknown), and lets it go once deleted', async () => {
    const engage = () => {
      const child = spawn(
        binaries.consumer,
        [
          'engage',
          '-kubeconfig',
          hubKubeconfig,
          '-namespace',
          namespace,
          '-provider-file',
          runtimeProviderFile,
        ],
        { env: consumerEnv },
      );
      const seen: Line[] = [];
      let log = '';
      child.stdout.on('data', (chunk: Buffer) => seen.push(...lines(chunk.toString())));
      child.stderr.on('data', (chunk: Buffer) => (log = (log + chunk.toString()).slice(-20_000)));
      return { child, seen, log: () => log };
    };
    const waitFor = async (what: string, test: () => boolean, millis = 90_000) => {
      const until = Date.now() + millis;
      while (!test()) {
        if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
        await new Promise((r) => setTimeout(r, 250));
      }
    };
    const key = (provider: keyof typeof AT_MEMBER) => `${namespace}/${memberProfiles[provider]}`;
    const engagedIn = (seen: Line[], name: string) =>
      seen.find((l) => l.event === 'engaged' && l.cluster === name);
    const stop = (child: ChildProcessWithoutNullStreams) =>
      new Promise<void>((resolve) => {
        child.once('close', () => resolve());
        child.kill('SIGTERM');
      });

    const first = engage();
    const second: { current?: ReturnType<typeof engage> } = {};
    try {
      await waitFor('the three member profiles engaged', () =>
        (['eks', 'gke', 'aks'] as const).every((p) => engagedIn(first.seen, key(p))),
      );
      for (const provider of ['eks', 'gke', 'aks'] as const) {
        const event = engagedIn(first.seen, key(provider))!;
        assert.equal(event.error, undefined, JSON.stringify(event));
        assert.ok(Number(event.namespaces) >= 4, `${provider} listed the member's namespaces`);
      }

      // The GKE cluster disappears from a complete listing: Unknown, NotFoundInProvider.
      emulators.gke.clusters.set(
        GCP_PROJECT,
        emulators.gke.clusters.get(GCP_PROJECT)!.filter((c) => c.name !== AT_MEMBER.gke),
      );
      await sync();
      const missing = (await profiles()).find((p) => p.metadata.name === memberProfiles.gke)!;
      const healthy = missing.status!.conditions!.find((c) => c.type === 'ControlPlaneHealthy')!;
      assert.deepEqual([healthy.status, healthy.reason], ['Unknown', 'NotFoundInProvider']);

      // A consumer starting now engages the other members, not the missing one.
      second.current = engage();
      await waitFor('the other members engaged', () =>
        (['eks', 'aks'] as const).every((p) => engagedIn(second.current!.seen, key(p))),
      );
      await waitFor('the provider to find the missing profile not ready', () =>
        second.current!.log().includes('not healthy yet'),
      );
      assert.equal(engagedIn(second.current.seen, key('gke')), undefined);

      // Past the deletion grace the profile is deleted, and the engaged cluster is let go.
      for (let i = 0; i < 4 && (await profiles()).some((p) => p.metadata.name === memberProfiles.gke); i++)
        await sync();
      assert.ok(!(await profiles()).some((p) => p.metadata.name === memberProfiles.gke));
      await waitFor('the deleted profile disengaged', () =>
        first.seen.some((l) => l.event === 'disengaged' && l.cluster === key('gke')),
      );
      assert.ok(!first.seen.some((l) => l.event === 'disengaged' && l.cluster !== key('gke')));
    } finally {
      await stop(first.child);
      if (second.current) await stop(second.current.child);
      restoreEdge();
      await sync();
    }
  });
});
