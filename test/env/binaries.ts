/**
 * Builds the local hub's kube-apiserver and etcd from their Go modules at the versions pinned in
 * `test/env/tools/*` (go.mod + go.sum), once: the binaries are cached by version under the user's
 * cache, so a second run (or a fresh clone on the same machine) does not rebuild.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, renameSync } from 'node:fs';
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

interface Binary {
  name: string;
  version: string;
  module: string;
  pkg: string;
  ldflags: string;
}

const [major, minor] = KUBERNETES_VERSION.slice(1).split('.');
const BINARIES: Binary[] = [
  {
    name: 'etcd',
    version: ETCD_VERSION,
    module: 'etcd',
    pkg: 'go.etcd.io/etcd/server/v3',
    ldflags: '-s -w',
  },
  {
    name: 'kube-apiserver',
    version: KUBERNETES_VERSION,
    module: 'kube-apiserver',
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

function build(binary: Binary, target: string, log: (line: string) => void): void {
  log(`building ${binary.name} ${binary.version} (once; cached in ${dirname(target)})`);
  const started = Date.now();
  const partial = `${target}.partial`;
  const result = spawnSync(
    'go',
    ['build', '-trimpath', '-mod=readonly', '-ldflags', binary.ldflags, '-o', partial, binary.pkg],
    {
      cwd: join(TOOLS, binary.module),
      env: { ...process.env, CGO_ENABLED: '0', GOFLAGS: '' },
      stdio: ['ignore', 'inherit', 'inherit'],
    },
  );
  if (result.error) throw new Error(`cannot run go to build ${binary.name}: ${result.error.message}`);
  if (result.status !== 0)
    throw new Error(`go build of ${binary.name} ${binary.version} failed (exit ${result.status})`);
  renameSync(partial, target);
  log(`built ${binary.name} in ${((Date.now() - started) / 1000).toFixed(0)} s`);
}

/** Paths of the hub binaries, building any that are not cached yet. */
export function ensureBinaries(log: (line: string) => void = () => {}): {
  etcd: string;
  kubeApiserver: string;
} {
  const directory = binaryDirectory();
  mkdirSync(directory, { recursive: true });
  const paths: Record<string, string> = {};
  for (const binary of BINARIES) {
    const target = join(directory, `${binary.name}-${binary.version}`);
    if (!existsSync(target)) build(binary, target, log);
    paths[binary.name] = target;
  }
  return { etcd: paths.etcd!, kubeApiserver: paths['kube-apiserver']! };
}
