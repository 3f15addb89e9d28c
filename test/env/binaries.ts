/**
 * Builds the local hub's kube-apiserver and etcd from their Go modules at the versions pinned in
 * `test/env/tools/*` (go.mod + go.sum), once: the binaries are cached by version under the user's
 * cache, so a second run (or a fresh clone on the same machine) does not rebuild.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const KUBERNETES_VERSION = 'v1.34.4';
const ETCD_VERSION = 'v3.6.16';

const TOOLS = join(dirname(fileURLToPath(import.meta.url)), 'tools');

function binaryDirectory(): string {
  const base =
    process.env.CPSYNC_CACHE_DIR ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'cpsync');
  return join(base, 'bin');
}

export interface Binary {
  name: string;
  version: string;
  /** Directory of the Go module (go.mod + go.sum) the binary is built in. */
  module: string;
  pkg: string;
  ldflags: string;
}

const [major, minor] = KUBERNETES_VERSION.slice(1).split('.');
const BINARIES: Binary[] = [
  {
    name: 'etcd',
    version: ETCD_VERSION,
    module: join(TOOLS, 'etcd'),
    pkg: 'go.etcd.io/etcd/server/v3',
    ldflags: '-s -w',
  },
  {
    name: 'kube-apiserver',
    version: KUBERNETES_VERSION,
    module: join(TOOLS, 'kube-apiserver'),
    pkg: 'k8s.io/kubernetes/cmd/kube-apiserver',
    ldflags: [
      '-s -w',
      `-X k8s.io/component-base/version.gitVersion=${KUBERNETES_VERSION}`,
      `-X k8s.io/component-base/version.gitMajor=${major}`,
      `-X k8s.io/component-base/version.gitMinor=${minor}`,
      '-X k8s.io/component-base/version.gitTreeState=clean',
    ].join(' '),
  },
];

/**
 * Builds one binary to a temporary name of this process and renames it into place, so two test runs
 * building at the same moment never share a half-written file; if the other one finished first, its
 * binary is kept.
 */
function build(binary: Binary, target: string, log: (line: string) => void): void {
  log(`building ${binary.name} ${binary.version} (once; cached in ${dirname(target)})`);
  const started = Date.now();
  const partial = `${target}.${process.pid}.${Date.now()}.partial`;
  const result = spawnSync(
    'go',
    ['build', '-trimpath', '-mod=readonly', '-ldflags', binary.ldflags, '-o', partial, binary.pkg],
    {
      cwd: binary.module,
      env: { ...process.env, CGO_ENABLED: '0', GOFLAGS: '' },
      stdio: ['ignore', 'inherit', 'inherit'],
    },
  );
  if (result.error || result.status !== 0) {
    rmSync(partial, { force: true });
    if (existsSync(target)) return; // another run built it meanwhile
    if (result.error) throw new Error(`cannot run go to build ${binary.name}: ${result.error.message}`);
    throw new Error(`go build of ${binary.name} ${binary.version} failed (exit ${result.status})`);
  }
  // rename() replaces atomically: a binary another run put there meanwhile is the same build.
  renameSync(partial, target);
  log(`built ${binary.name} in ${((Date.now() - started) / 1000).toFixed(0)} s`);
}

/** The path of a binary in `directory`, built first if it is not there yet. */
export function ensureBinary(
  binary: Binary,
  directory: string,
  log: (line: string) => void = () => {},
): string {
  mkdirSync(directory, { recursive: true });
  const target = join(directory, `${binary.name}-${binary.version}`);
  if (!existsSync(target)) build(binary, target, log);
  return target;
}

/** Paths of the hub binaries, building any that are not cached yet. */
export function ensureBinaries(log: (line: string) => void = () => {}): {
  etcd: string;
  kubeApiserver: string;
} {
  const [etcd, kubeApiserver] = BINARIES.map((binary) => ensureBinary(binary, binaryDirectory(), log));
  return { etcd: etcd!, kubeApiserver: kubeApiserver! };
}

/** A digest of every file under `directory`: the version of a binary built from local sources. */
function sourceDigest(directory: string): string {
  const hash = createHash('sha256');
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir).sort()) {
      const path = join(dir, entry);
      if (statSync(path).isDirectory()) walk(path);
      else hash.update(`${path.slice(directory.length)}\0`).update(readFileSync(path));
    }
  };
  walk(directory);
  return hash.digest('hex').slice(0, 12);
}

const CONSUMER = join(TOOLS, 'consumer');

/**
 * The consumer test binaries, built from `test/env/tools/consumer` (the upstream access library,
 * multicluster-runtime and its cluster-inventory-api provider) and cached by a digest of its sources:
 * `consumer` and the upstream `secretreader` plugin.
 */
export function ensureConsumerBinaries(log: (line: string) => void = () => {}): {
  consumer: string;
  secretreader: string;
} {
  const version = sourceDigest(CONSUMER);
  const consumer = ensureBinary(
    { name: 'consumer', version, module: CONSUMER, pkg: '.', ldflags: '-s -w' },
    binaryDirectory(),
    log,
  );
  const secretreader = ensureBinary(
    {
      name: 'secretreader',
      version,
      module: CONSUMER,
      pkg: 'sigs.k8s.io/cluster-inventory-api/plugins/secretreader/cmd/plugin',
      ldflags: '-s -w',
    },
    binaryDirectory(),
    log,
  );
  return { consumer, secretreader };
}

const ARGOCD = join(TOOLS, 'argocd');

/**
 * The Argo CD cluster-Secret reader, built from `test/env/tools/argocd` (Argo CD's released Go module:
 * `util/db.SecretToCluster` and the Cluster's rest config) and cached by a digest of its sources. It
 * reads one Secret as JSON on stdin and prints `{"cluster": …, "rest": …}`; on an error it exits 1.
 * `render` is the ClusterProfile integration's rendering of a profile; `clusters` runs the ApplicationSet
 * controller's cluster generator (`applicationset/generators`) over the Secrets of Argo CD's namespace.
 */
export function ensureArgoCdBinary(log: (line: string) => void = () => {}): string {
  return ensureBinary(
    { name: 'argocd-cluster', version: sourceDigest(ARGOCD), module: ARGOCD, pkg: '.', ldflags: '-s -w' },
    binaryDirectory(),
    log,
  );
}

const KUEUE = join(TOOLS, 'kueue');

/**
 * Kueue's MultiKueue cluster controller, built from `test/env/tools/kueue` (Kueue's released Go module,
 * `multikueue.SetupControllers`) and cached by a digest of its sources, with the directory of Kueue's CRDs
 * in that module (what a Kueue installation applies).
 */
export function ensureKueue(log: (line: string) => void = () => {}): { binary: string; crds: string } {
  const binary = ensureBinary(
    { name: 'kueue-multikueue', version: sourceDigest(KUEUE), module: KUEUE, pkg: '.', ldflags: '-s -w' },
    binaryDirectory(),
    log,
  );
  const listed = spawnSync('go', ['list', '-m', '-json', 'sigs.k8s.io/kueue'], {
    cwd: KUEUE,
    env: { ...process.env, GOFLAGS: '' },
    encoding: 'utf8',
  });
  if (listed.status !== 0) throw new Error(`go list of sigs.k8s.io/kueue failed: ${listed.stderr}`);
  const { Dir } = JSON.parse(listed.stdout) as { Dir: string };
  return { binary, crds: join(Dir, 'config', 'components', 'crd', 'bases') };
}

/** The AWS Lambda Runtime Interface Emulator's module version (it has no tags: a pinned pseudo-version). */
const LAMBDA_RIE_VERSION = 'v0.0.0-20261030222936-bef5c4ba774d';

/**
 * The AWS Lambda Runtime Interface Emulator, built from its Go module at the version pinned in
 * `test/env/tools/lambda-rie` and cached like the hub's binaries.
 */
export function ensureLambdaRie(log: (line: string) => void = () => {}): string {
  return ensureBinary(
    {
      name: 'aws-lambda-rie',
      version: LAMBDA_RIE_VERSION,
      module: join(TOOLS, 'lambda-rie'),
      pkg: 'github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie',
      ldflags: '-s -w',
    },
    binaryDirectory(),
    log,
  );
}

/** Where the test tools that are not Go binaries are cached (the Lambda runtime interface client). */
export function cacheDirectory(): string {
  return dirname(binaryDirectory());
}
