/**
 * A real local hub: etcd + kube-apiserver on loopback, RBAC on, certificates made here, the vendored
 * ClusterProfile CRD installed unchanged. Used by the tests and by `npm run hub:start`/`hub:stop`.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpsRequest, type RequestOptions } from 'node:https';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { KubeConfig } from '@kubernetes/client-node';
import { parse } from 'yaml';
import { ensureBinaries } from './binaries.ts';
import { freePort } from './net.ts';
import { NEW_EC_KEY, openssl } from './openssl.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const CRD_PATH = join(ROOT, 'adapters/hub/manifests/crd/multicluster.x-k8s.io_clusterprofiles.yaml');

export interface HubState {
  directory: string;
  server: string;
  etcdPid: number;
  apiserverPid: number;
  /** Admin kubeconfig (system:masters). */
  kubeconfig: string;
  /** Paths of the CA certificate and key, to mint client certificates for other identities. */
  caCert: string;
  caKey: string;
}

/** A client certificate signed by the hub CA for user `cn` (and group `org` when given). */
function writeExtension(pki: string, cn: string, san: string): string {
  const path = join(pki, `${cn.replace(/[^a-z0-9-]/gi, '_')}.ext`);
  writeFileSync(path, `subjectAltName=${san}\n`);
  return path;
}

export function clientCertificate(
  state: Pick<HubState, 'caCert' | 'caKey' | 'directory'>,
  cn: string,
  org?: string,
  /** Subject alternative names (e.g. `IP:127.0.0.1`): makes a certificate a server can present. */
  san?: string,
): { cert: string; key: string } {
  const pki = join(state.directory, 'pki');
  const base = join(pki, `client-${cn.replace(/[^a-z0-9-]/gi, '_')}`);
  const subject = org ? `/O=${org}/CN=${cn}` : `/CN=${cn}`;
  openssl(
    ['req', '-new', ...NEW_EC_KEY, '-keyout', `${base}.key`, '-out', `${base}.csr`, '-subj', subject],
    pki,
  );
  openssl(
    [
      'x509',
      '-req',
      '-in',
      `${base}.csr`,
      '-CA',
      state.caCert,
      '-CAkey',
      state.caKey,
      '-CAcreateserial',
      '-days',
      '2',
      ...(san ? ['-extfile', writeExtension(pki, cn, san)] : []),
      '-out',
      `${base}.crt`,
    ],
    pki,
  );
  return { cert: readFileSync(`${base}.crt`, 'utf8'), key: readFileSync(`${base}.key`, 'utf8') };
}

function makePki(directory: string, address: string): { caCert: string; caKey: string } {
  const pki = join(directory, 'pki');
  mkdirSync(pki, { recursive: true });
  openssl(
    [
      'req',
      '-x509',
      ...NEW_EC_KEY,
      '-days',
      '2',
      '-keyout',
      'ca.key',
      '-out',
      'ca.crt',
      '-subj',
      '/CN=cpsync-local-hub-ca',
    ],
    pki,
  );
  openssl(
    [
      'req',
      '-new',
      ...NEW_EC_KEY,
      '-keyout',
      'apiserver.key',
      '-out',
      'apiserver.csr',
      '-subj',
      '/CN=kube-apiserver',
    ],
    pki,
  );
  writeFileSync(
    join(pki, 'san.ext'),
    `subjectAltName=IP:127.0.0.1,${address === '127.0.0.1' ? '' : `IP:${address},`}DNS:localhost,DNS:kubernetes.default.svc\n`,
  );
  openssl(
    [
      'x509',
      '-req',
      '-in',
      'apiserver.csr',
      '-CA',
      'ca.crt',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-days',
      '2',
      '-extfile',
      'san.ext',
      '-out',
      'apiserver.crt',
    ],
    pki,
  );
  openssl(['genpkey', '-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048', '-out', 'sa.key'], pki);
  openssl(['pkey', '-in', 'sa.key', '-pubout', '-out', 'sa.pub'], pki);
  return { caCert: join(pki, 'ca.crt'), caKey: join(pki, 'ca.key') };
}

/** A kubeconfig for `server` with a client certificate. */
export function kubeconfigYaml(
  server: string,
  caCert: string,
  user: string,
  cert: string,
  key: string,
): string {
  const b64 = (text: string) => Buffer.from(text).toString('base64');
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: 'local-hub',
        cluster: { server, 'certificate-authority-data': b64(readFileSync(caCert, 'utf8')) },
      },
    ],
    users: [{ name: user, user: { 'client-certificate-data': b64(cert), 'client-key-data': b64(key) } }],
    contexts: [{ name: user, context: { cluster: 'local-hub', user } }],
    'current-context': user,
  });
}

/**
 * Whether the hub process `pid` of `directory` still runs: a pid the system has given to another process since
 * (pids wrap at /proc/sys/kernel/pid_max, 32,768 here, within a test run) is not ours, and is never signalled.
 */
function alive(pid: number, directory: string): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(directory);
  } catch {
    return false;
  }
}

async function waitFor(
  what: string,
  check: () => Promise<boolean>,
  timeoutMs: number,
  logFile: string,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 250));
  }
  const tail = existsSync(logFile) ? readFileSync(logFile, 'utf8').split('\n').slice(-30).join('\n') : '';
  throw new Error(`${what} did not become ready within ${timeoutMs / 1000} s; last log lines:\n${tail}`);
}

/** One request to the hub with the kubeconfig's credentials, the body sent as it is (no typed model in between). */
async function rawRequest(
  config: KubeConfig,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; text: string }> {
  const server = config.getCurrentCluster()!.server;
  const options: RequestOptions = {
    method,
    headers: { 'content-type': 'application/json', accept: 'application/json' },
  };
  await config.applyToHTTPSOptions(options);
  return new Promise((done, fail) => {
    const request = httpsRequest(`${server}${path}`, options, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (text += chunk));
      response.on('end', () => done({ status: response.statusCode ?? 0, text }));
    });
    request.on('error', fail);
    request.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

/**
 * Installs the vendored CRD byte-for-byte in meaning: the YAML is sent as JSON without passing through
 * the client's typed model, which would drop the `x-kubernetes-*` extensions (and with them the
 * `spec.clusterManager` immutability rule and the list-map keys).
 */
async function installCrd(kubeconfig: string): Promise<void> {
  await installCustomResourceDefinition(kubeconfig, parse(readFileSync(CRD_PATH, 'utf8')) as CrdDocument);
}

interface CrdDocument {
  metadata: { name: string };
  spec: { group: string; names: { plural: string }; versions: Array<{ name: string; served: boolean }> };
}

/** Installs a CRD as its YAML says (see installCrd) and returns once its resource is served. */
export async function installCustomResourceDefinition(kubeconfig: string, crd: CrdDocument): Promise<void> {
  const config = new KubeConfig();
  config.loadFromFile(kubeconfig);
  const created = await rawRequest(
    config,
    'POST',
    '/apis/apiextensions.k8s.io/v1/customresourcedefinitions',
    crd,
  );
  if (created.status !== 201)
    throw new Error(`installing the CRD failed (${created.status}): ${created.text}`);
  const name = crd.metadata.name;
  await waitFor(
    `CRD ${name}`,
    async () => {
      const current = await rawRequest(
        config,
        'GET',
        `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`,
      );
      const status = JSON.parse(current.text) as {
        status?: { conditions?: Array<{ type: string; status: string }> };
      };
      return status.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True') ?? false;
    },
    30_000,
    '',
  );
  // Established is not yet servable: the resource's storage comes up a moment later (429 until then).
  await waitFor(
    'ClusterProfile storage',
    async () =>
      (
        await rawRequest(
          config,
          'GET',
          `/apis/${crd.spec.group}/${crd.spec.versions.find((v) => v.served)!.name}/${crd.spec.names.plural}`,
        )
      ).status === 200,
    30_000,
    '',
  );
}

/** Deletes a CRD and returns once it is gone (its objects with it). */
export async function deleteCustomResourceDefinition(kubeconfig: string, name: string): Promise<void> {
  const config = new KubeConfig();
  config.loadFromFile(kubeconfig);
  const path = `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`;
  const deleted = await rawRequest(config, 'DELETE', path);
  if (deleted.status !== 200 && deleted.status !== 202 && deleted.status !== 404)
    throw new Error(`deleting the CRD failed (${deleted.status}): ${deleted.text}`);
  await waitFor(
    `CRD ${name} gone`,
    async () => (await rawRequest(config, 'GET', path)).status === 404,
    60_000,
    '',
  );
}

function stateFile(directory: string): string {
  return join(directory, 'state.json');
}

export function readState(directory: string): HubState | undefined {
  if (!existsSync(stateFile(directory))) return undefined;
  const state = JSON.parse(readFileSync(stateFile(directory), 'utf8')) as HubState;
  return alive(state.apiserverPid, directory) && alive(state.etcdPid, directory) ? state : undefined;
}

/**
 * Starts a hub whose files live in `directory` (wiped first) and returns once the CRD is established.
 * Idempotent: a hub already running from `directory` is returned as it is.
 */
export interface HubOptions {
  /** Loopback address and port the kube-apiserver serves on. @default 127.0.0.1 and a free port */
  address?: string;
  port?: number;
  /** Authorizers, in order. @default ['RBAC'] */
  authorizationModes?: string[];
  /** More kube-apiserver flags (a member cluster's token webhook). */
  apiserverArgs?: string[];
  /** Install the ClusterProfile CRD. @default true */
  crd?: boolean;
}

export async function startHub(
  directory: string,
  log: (line: string) => void = () => {},
  options: HubOptions = {},
): Promise<HubState> {
  const running = readState(directory);
  if (running) return running;
  await stopHub(directory);
  rmSync(directory, { recursive: true, force: true });
  mkdirSync(directory, { recursive: true });
  const binaries = ensureBinaries(log);
  const address = options.address ?? '127.0.0.1';
  const { caCert, caKey } = makePki(directory, address);
  const [etcdPort, peerPort] = [await freePort(), await freePort()];
  const apiPort = options.port ?? (await freePort());

  const etcdLog = join(directory, 'etcd.log');
  const etcd = spawn(
    binaries.etcd,
    [
      '--name=hub',
      `--data-dir=${join(directory, 'etcd')}`,
      `--listen-client-urls=http://127.0.0.1:${etcdPort}`,
      `--advertise-client-urls=http://127.0.0.1:${etcdPort}`,
      `--listen-peer-urls=http://127.0.0.1:${peerPort}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${peerPort}`,
      `--initial-cluster=hub=http://127.0.0.1:${peerPort}`,
      '--unsafe-no-fsync',
      '--log-level=warn',
    ],
    { detached: true, stdio: ['ignore', openSync(etcdLog, 'a'), openSync(etcdLog, 'a')] },
  );
  etcd.unref();

  const pki = join(directory, 'pki');
  const apiLog = join(directory, 'kube-apiserver.log');
  const server = `https://${address}:${apiPort}`;
  const apiserver = spawn(
    binaries.kubeApiserver,
    [
      `--etcd-servers=http://127.0.0.1:${etcdPort}`,
      `--bind-address=${address}`,
      `--advertise-address=${address}`,
      `--secure-port=${apiPort}`,
      `--tls-cert-file=${join(pki, 'apiserver.crt')}`,
      `--tls-private-key-file=${join(pki, 'apiserver.key')}`,
      `--client-ca-file=${caCert}`,
      `--authorization-mode=${(options.authorizationModes ?? ['RBAC']).join(',')}`,
      '--anonymous-auth=false',
      '--service-account-issuer=https://kubernetes.default.svc',
      `--service-account-key-file=${join(pki, 'sa.pub')}`,
      `--service-account-signing-key-file=${join(pki, 'sa.key')}`,
      '--service-cluster-ip-range=10.96.0.0/24',
      '--enable-priority-and-fairness=false',
      process.env.CPSYNC_HUB_PROFILING ? '--profiling=true' : '--profiling=false',
      `--cert-dir=${pki}`,
      '--v=1',
      ...(options.apiserverArgs ?? []),
    ],
    { detached: true, stdio: ['ignore', openSync(apiLog, 'a'), openSync(apiLog, 'a')] },
  );
  apiserver.unref();

  const admin = clientCertificate({ caCert, caKey, directory }, 'cpsync-admin', 'system:masters');
  const kubeconfig = join(directory, 'kubeconfig');
  writeFileSync(kubeconfig, kubeconfigYaml(server, caCert, 'admin', admin.cert, admin.key), { mode: 0o600 });
  const state: HubState = {
    directory,
    server,
    etcdPid: etcd.pid!,
    apiserverPid: apiserver.pid!,
    kubeconfig,
    caCert,
    caKey,
  };
  writeFileSync(stateFile(directory), JSON.stringify(state, null, 2));

  const config = new KubeConfig();
  config.loadFromFile(kubeconfig);
  const ready = async () => {
    if (!alive(apiserver.pid!, directory)) throw new Error('kube-apiserver exited');
    return (await rawRequest(config, 'GET', '/readyz')).status === 200;
  };
  try {
    await waitFor('kube-apiserver', ready, 90_000, apiLog);
    if (options.crd !== false) await installCrd(kubeconfig);
  } catch (error) {
    await stopHub(directory);
    throw error;
  }
  log(`hub ready at ${server} (kubeconfig ${kubeconfig})`);
  return state;
}

async function terminate(pid: number, directory: string): Promise<void> {
  if (!alive(pid, directory)) return;
  try {
    process.kill(-pid, 'SIGTERM');
  } catch {
    process.kill(pid, 'SIGTERM');
  }
  for (let i = 0; i < 40 && alive(pid, directory); i++) await new Promise((r) => setTimeout(r, 125));
  if (alive(pid, directory)) process.kill(pid, 'SIGKILL');
}

/** Stops the hub running from `directory`, if any. */
export async function stopHub(directory: string): Promise<void> {
  if (!existsSync(stateFile(directory))) return;
  const state = JSON.parse(readFileSync(stateFile(directory), 'utf8')) as HubState;
  await terminate(state.apiserverPid, directory);
  await terminate(state.etcdPid, directory);
  rmSync(stateFile(directory), { force: true });
}

/** Signals the hub's processes to stop without waiting: for process exit handlers, which cannot wait. */
export function stopHubNow(directory: string): void {
  if (!existsSync(stateFile(directory))) return;
  const state = JSON.parse(readFileSync(stateFile(directory), 'utf8')) as HubState;
  for (const pid of [state.apiserverPid, state.etcdPid]) {
    if (!alive(pid, directory)) continue;
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  rmSync(directory, { recursive: true, force: true });
}
