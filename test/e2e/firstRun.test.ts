/**
 * A first run as a new user meets it: no configuration file, only the default credentials of each cloud
 * (pointed at the local clouds through the environment: AWS_ENDPOINT_URL, CPSYNC_GKE_ENDPOINT,
 * CPSYNC_AKS_ENDPOINT, AZURE_AUTHORITY_HOST). `cpsync sync` syncs what they reach and names what it
 * skipped; with no cloud at all it exits 2 and says how to start; `cpsync init` writes a configuration
 * that syncs the same clusters.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parse } from 'yaml';
import { startConnectProxy } from '../env/connectProxy.ts';
import { EKS_ACCOUNT, localGoogleFederation, startEmulators, type Emulators } from '../env/emulators.ts';
import { accountCredentials } from '../support/aws.ts';
import { hasStackTrace, runCli } from '../support/cli.ts';
import { temporaryDirectory } from '../support/tmp.ts';

/** The profiles a file hub directory holds, by their display name and provider. */
function filedProfiles(directory: string): string[] {
  const found: string[] = [];
  const walk = (dir: string) => {
    if (!existsSync(dir)) return;
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.yaml')) {
        const profile = parse(readFileSync(path, 'utf8')) as {
          kind?: string;
          metadata: { labels?: Record<string, string> };
          spec: { displayName: string };
        };
        if (profile.kind === 'ClusterProfile')
          found.push(`${profile.metadata.labels?.['cpsync.io/provider']}/${profile.spec.displayName}`);
      }
    }
  };
  walk(directory);
  return found.sort();
}

describe('a first run without a configuration file: the default credentials of each cloud', () => {
  let emulators: Emulators;
  /** The environment of a machine whose three clouds' default credentials work (the local clouds). */
  let ambient: Record<string, string>;
  /** Nothing of this machine's own: no credentials, no metadata probe, an empty home. */
  let bare: Record<string, string>;

  before(async () => {
    emulators = await startEmulators({ directory: temporaryDirectory('cpsync-first-run-') });
    const aws = await accountCredentials(emulators.moto.endpoint, EKS_ACCOUNT);
    const google = localGoogleFederation(emulators.directory, emulators.gke);
    emulators.gke.projects.push({ projectId: 'acme-data', state: 'ACTIVE' });
    emulators.arm.subscriptions.push({
      subscriptionId: '00000000-1111-2222-3333-444444444444',
      displayName: 'prod',
      state: 'Enabled',
    });
    const home = temporaryDirectory('cpsync-home-');
    bare = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: home,
      AWS_EC2_METADATA_DISABLED: 'true',
      METADATA_SERVER_DETECTION: 'none',
      AWS_CONFIG_FILE: join(home, 'none'),
      AWS_SHARED_CREDENTIALS_FILE: join(home, 'none'),
    };
    ambient = {
      ...bare,
      AWS_ACCESS_KEY_ID: aws.accessKeyId,
      AWS_SECRET_ACCESS_KEY: aws.secretAccessKey,
      AWS_SESSION_TOKEN: aws.sessionToken!,
      AWS_REGION: 'us-east-1',
      AWS_ENDPOINT_URL: emulators.proxy.endpoint,
      GOOGLE_APPLICATION_CREDENTIALS: google,
      CPSYNC_GKE_ENDPOINT: emulators.gke.endpoint,
      AZURE_TENANT_ID: emulators.arm.tenantId,
      AZURE_CLIENT_ID: emulators.arm.clientId,
      AZURE_CLIENT_SECRET: emulators.arm.clientSecret,
      AZURE_AUTHORITY_HOST: emulators.arm.endpoint,
      CPSYNC_AKS_ENDPOINT: emulators.arm.endpoint,
      NODE_EXTRA_CA_CERTS: emulators.env.NODE_EXTRA_CA_CERTS!,
    };
  });

  after(async () => emulators?.stop());

  const workspace = () => mkdtempSync(join(emulators.directory, 'ws-'));
  /** The clusters of the local estate, as the clouds hold them. */
  const estate = [
    'aks/batch',
    'aks/web',
    'eks/checkout',
    'eks/payments',
    'eks/payments',
    'gke/analytics',
    'gke/edge',
  ];

  it('syncs every cloud whose default credentials work into ./inventory, and says which it used', async () => {
    const cwd = workspace();
    const run = await runCli(['sync'], { cwd, env: ambient, clean: true });
    assert.equal(run.code, 0, run.stderr);
    assert.match(
      run.stderr,
      /no configuration file \(cpsync\.yaml\): syncing what your default credentials reach/,
    );
    assert.match(run.stderr, new RegExp(`eks: account ${EKS_ACCOUNT}, every enabled region`));
    assert.match(run.stderr, /gke: every project the identity can see/);
    assert.match(run.stderr, /aks: every subscription the identity can see/);
    assert.deepEqual(filedProfiles(join(cwd, 'inventory')), estate);
    assert.equal(
      run.stdout.split('\n').filter((l) => l.includes('"ClusterProfile Created"')).length,
      estate.length,
    );
  });

  /** `cpsync sync` in a new workspace, the ambient environment naming a loopback proxy (and `more`). */
  async function syncBehindProxy(more: Record<string, string> = {}) {
    const proxy = await startConnectProxy();
    try {
      const cwd = workspace();
      const env = { ...ambient, HTTPS_PROXY: proxy.endpoint, HTTP_PROXY: proxy.endpoint, ...more };
      const run = await runCli(['sync'], { cwd, env, clean: true });
      return { run, profiles: filedProfiles(join(cwd, 'inventory')), reached: new Set(proxy.targets) };
    } finally {
      await proxy.stop();
    }
  }
  const hostOf = (endpoint: string) => new URL(endpoint).host;

  it('reaches every cloud through the proxy the environment names (HTTPS_PROXY, HTTP_PROXY)', async () => {
    // Google's and Azure's clients follow the variables themselves (the Google clients load their proxy
    // agent on demand, which the bundled command must hand over by name, as Node does); the AWS clients
    // through agents cpsync makes with Node's own proxy support. The local clouds answer on loopback, which
    // is not exempt: only NO_PROXY exempts a host.
    const { run, profiles, reached } = await syncBehindProxy();
    assert.equal(run.code, 0, run.stderr);
    assert.deepEqual(profiles, estate);
    for (const [cloud, endpoint] of [
      ['AWS', emulators.proxy.endpoint],
      ['GKE', emulators.gke.endpoint],
      ['ARM', emulators.arm.endpoint],
    ] as const)
      assert.ok(reached.has(hostOf(endpoint)), `${cloud}: the proxy saw only ${[...reached].join(', ')}`);
  });

  it('reaches a cloud directly when NO_PROXY names its host', async () => {
    const { run, profiles, reached } = await syncBehindProxy({ NO_PROXY: hostOf(emulators.proxy.endpoint) });
    assert.equal(run.code, 0, run.stderr);
    assert.deepEqual(profiles, estate);
    assert.ok(!reached.has(hostOf(emulators.proxy.endpoint)), 'AWS went through the proxy');
    assert.ok(reached.has(hostOf(emulators.gke.endpoint)), 'GKE did not');
  });

  it('refuses a proxy variable that is no proxy URL, naming it without its password, before reaching anything', async () => {
    const { run, profiles, reached } = await syncBehindProxy({
      HTTPS_PROXY: 'http://cpsync:s3cret@proxy corp:8080',
    });
    assert.equal(run.code, 2, run.stderr);
    assert.match(
      run.stderr,
      /environment variable HTTPS_PROXY is not a proxy URL: "http:\/\/\*\*\*@proxy corp:8080"/,
    );
    assert.ok(!hasStackTrace(run.stderr), run.stderr);
    assert.doesNotMatch(run.stdout + run.stderr, /s3cret/);
    assert.deepEqual(profiles, []);
    assert.deepEqual([...reached], []);
  });

  it('names a cloud it skipped, and why, and syncs the others', async () => {
    const cwd = workspace();
    const { GOOGLE_APPLICATION_CREDENTIALS: _google, ...withoutGoogle } = ambient;
    const run = await runCli(['sync'], { cwd, env: withoutGoogle, clean: true });
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stderr, /gke: skipped: no Google credentials/);
    assert.deepEqual(
      filedProfiles(join(cwd, 'inventory')),
      estate.filter((c) => !c.startsWith('gke/')),
    );
  });

  it('never deletes the profiles of a cloud it skipped on a later run', async () => {
    const cwd = workspace();
    const full = await runCli(['sync'], { cwd, env: ambient, clean: true });
    assert.equal(full.code, 0, full.stderr);
    const { GOOGLE_APPLICATION_CREDENTIALS: _google, ...withoutGoogle } = ambient;
    const later = await runCli(['sync'], { cwd, env: withoutGoogle, clean: true });
    assert.equal(later.code, 0, later.stderr);
    assert.match(later.stderr, /gke: skipped/);
    assert.deepEqual(filedProfiles(join(cwd, 'inventory')), estate);
    assert.doesNotMatch(later.stdout, /ClusterProfile (Deleted|Updated)/);
  });

  it('quotes no credential in anything a first run shows or writes', async () => {
    const cwd = workspace();
    const runs = [
      await runCli(['sync'], { cwd, env: ambient, clean: true }),
      await runCli(['init'], { cwd, env: ambient, clean: true }),
      await runCli(['sync'], { cwd, env: bare, clean: true, wrapper: ['unshare', '-rn'] }),
    ];
    const shown = [
      ...runs.flatMap((r) => [r.stdout, r.stderr]),
      readFileSync(join(cwd, 'cpsync.yaml'), 'utf8'),
      ...readdirSync(join(cwd, 'inventory'), { recursive: true, withFileTypes: true })
        .filter((e) => e.isFile())
        .map((e) => readFileSync(join(e.parentPath, e.name), 'utf8')),
    ].join('\n');
    for (const secret of [
      ambient.AWS_SECRET_ACCESS_KEY!,
      ambient.AWS_SESSION_TOKEN!,
      ambient.AZURE_CLIENT_SECRET!,
      readFileSync(join(emulators.directory, 'gke-subject-token'), 'utf8'),
    ])
      assert.ok(!shown.includes(secret), 'a credential was quoted');
  });

  it("with no cloud at all: exit 2, each cloud's reason and how to start; never a silent zero", async () => {
    const cwd = workspace();
    // A network namespace of its own (loopback only): the credential chains' metadata probes fail at once.
    const run = await runCli(['sync'], { cwd, env: bare, clean: true, wrapper: ['unshare', '-rn'] });
    assert.equal(run.code, 2, run.stderr);
    assert.match(run.stderr, /no configuration file \(cpsync\.yaml\) and no cloud credentials found/);
    assert.match(run.stderr, /eks: skipped: no AWS credentials/);
    assert.match(run.stderr, /gke: skipped: no Google credentials/);
    assert.match(run.stderr, /^ {2}aks: skipped: /m, 'one cloud a line');
    assert.match(run.stderr, /To start: .*cpsync init.*See it work offline/);
    assert.ok(!hasStackTrace(run.stderr), run.stderr);
    // cpsync speaks first and alone: no library's warning or deprecation notice (MetadataLookupWarning).
    assert.match(run.stderr.split('\n')[0]!, /^cpsync: /, run.stderr);
    assert.doesNotMatch(run.stderr, /Warning|\(node:\d+\)/, run.stderr);
    assert.ok(!existsSync(join(cwd, 'inventory')));
  });

  it('a configured cloud without credentials fails its scope by name: no library warning, no crash, no stack trace', async () => {
    const cwd = workspace();
    writeFileSync(join(cwd, 'cpsync.yaml'), 'providers:\n  gke:\n    projects: [acme-data]\n');
    // A metadata server that answers 500 (as a broken one does), in a network namespace of the run's own:
    // Google's credential chain warns (MetadataLookupWarning) and its client rejects every method it made.
    writeFileSync(
      join(cwd, 'metadata.mjs'),
      [
        "import { createServer } from 'node:http';",
        'const parent = process.ppid;',
        "createServer((q, r) => { r.writeHead(500, { 'Metadata-Flavor': 'Google' }); r.end('boom'); }).listen(8089, '127.0.0.1');",
        'setInterval(() => { if (process.ppid !== parent) process.exit(0); }, 100);',
      ].join('\n'),
    );
    const run = await runCli(['sync'], {
      cwd,
      env: { ...bare, GCE_METADATA_HOST: '127.0.0.1:8089' },
      clean: true,
      wrapper: [
        'unshare',
        '-rn',
        'sh',
        '-c',
        `ip link set lo up; "$0" ${join(cwd, 'metadata.mjs')} >/dev/null 2>&1 & sleep 0.5; "$0" "$@"`,
      ],
    });
    assert.equal(run.code, 1, run.stderr);
    assert.match(run.stderr, /gke\/acme-data\/\*: failed — .*Could not load the default credentials/);
    assert.doesNotMatch(run.stderr, /Warning|\(node:\d+\)/, run.stderr);
    assert.ok(!hasStackTrace(run.stderr), run.stderr);
  });

  it('cpsync init writes a configuration validate-config accepts, that syncs the same clusters, and never overwrites', async () => {
    const cwd = workspace();
    const init = await runCli(['init'], { cwd, env: ambient, clean: true });
    assert.equal(init.code, 0, init.stderr);
    assert.match(init.stderr, /wrote cpsync\.yaml/);
    const text = readFileSync(join(cwd, 'cpsync.yaml'), 'utf8');
    assert.match(text, /^# cpsync configuration written by `cpsync init`/);
    assert.match(text, new RegExp(`- "?${EKS_ACCOUNT}"?`));
    const valid = await runCli(['validate-config'], { cwd, env: ambient, clean: true });
    assert.equal(valid.code, 0, valid.stderr);
    assert.match(valid.stdout, /cpsync\.yaml: valid/);
    // Run from elsewhere: the file's relative paths (./inventory, the outbox) are the file's directory's.
    const elsewhere = workspace();
    const sync = await runCli(['sync', '--config', join(cwd, 'cpsync.yaml')], {
      cwd: elsewhere,
      env: ambient,
      clean: true,
    });
    assert.equal(sync.code, 0, sync.stderr);
    assert.doesNotMatch(sync.stderr, /no configuration file/);
    assert.deepEqual(filedProfiles(join(cwd, 'inventory')), estate);
    assert.deepEqual(readdirSync(elsewhere), [], 'nothing written where it was run from');
    const again = await runCli(['init'], { cwd, env: ambient, clean: true });
    assert.equal(again.code, 2);
    assert.match(again.stderr, /cpsync\.yaml already exists; not overwritten/);
    assert.equal(readFileSync(join(cwd, 'cpsync.yaml'), 'utf8'), text);
  });
});
