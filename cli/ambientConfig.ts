import { existsSync, writeFileSync } from 'node:fs';
import { stringify } from 'yaml';
import { discoverAmbient, type AmbientDiscovery } from '../adapters/compose/ambient.ts';
import { parseConfig, type CpsyncConfig } from '../adapters/compose/config.ts';
import { CpsyncError } from '../core/domain/errors.ts';

/** No configuration and no cloud answered: what to do next. */
class NothingToSyncError extends CpsyncError {}

const HOW_TO_START =
  'write a configuration (docs/configuring.md, or `cpsync init` once a cloud\'s default credentials work), or see cpsync work offline with the local estate (docs/getting-started.md, "See it work offline")';

function describe(discovery: AmbientDiscovery): string {
  return discovery.clouds.map((c) => `  ${c.provider}: ${c.detail}`).join('\n');
}

/** Ambient discovery, said on `log`; throws NothingToSyncError (naming each cloud's reason) when nothing answered. */
export async function ambientDiscovery(
  log: (line: string) => void,
  env: NodeJS.ProcessEnv = process.env,
): Promise<AmbientDiscovery> {
  const discovery = await discoverAmbient(env);
  if (Object.keys(discovery.providers).length === 0)
    throw new NothingToSyncError(
      `no configuration file (cpsync.yaml) and no cloud credentials found:\n${describe(discovery)}\nTo start: ${HOW_TO_START}.`,
    );
  log(
    `no configuration file (cpsync.yaml): syncing what your default credentials reach\n${describe(discovery)}`,
  );
  return discovery;
}

/** The configuration a run without a file uses: the embedded defaults and the clouds discovery found. */
export function ambientConfig(discovery: AmbientDiscovery): CpsyncConfig {
  return parseConfig({ providers: discovery.providers }, '(ambient credentials)');
}

const COMMENTS: Record<string, string> = {
  eks: 'the account your AWS credentials are in; list more (cpsync assumes roleName in each), or use { organization: {} }; regions: every enabled region unless listed',
  gke: 'every project the identity can see (projects: { search: { query: ... } } narrows it); or a list of project ids',
  aks: 'every subscription the identity can see; or a list of subscription ids',
};

/**
 * `cpsync init`: a starter configuration from what discovery found, commented, valid by construction
 * (it is parsed before it is written). Refuses to overwrite a file.
 */
export async function writeStarterConfig(path: string, log: (line: string) => void): Promise<void> {
  if (existsSync(path)) throw new NothingToSyncError(`${path} already exists; not overwritten`);
  const discovery = await ambientDiscovery(() => {});
  const document = {
    manager: 'cpsync',
    inventory: { namespace: 'cluster-inventory' },
    providers: discovery.providers,
    hub: { directory: './inventory' },
    bus: { stdout: true },
    outbox: { directory: '.cpsync/outbox' },
  };
  parseConfig(document, path);
  const providers = Object.entries(discovery.providers)
    .map(([name, value]) => `  # ${COMMENTS[name]}\n${stringify({ [name]: value }).replace(/^/gm, '  ')}`)
    .join('');
  const text = [
    `# cpsync configuration written by \`cpsync init\` from what your default credentials reach.`,
    '# Every option and its default: cpsync.example.yaml. Check it with `cpsync validate-config`.',
    '',
    '# Who writes the profiles (spec.clusterManager.name and the x-k8s.io/cluster-manager label).',
    stringify({ manager: document.manager }).trimEnd(),
    '# The hub namespace the profiles are written to.',
    stringify({ inventory: document.inventory }).trimEnd(),
    'providers:',
    providers.trimEnd(),
    '# Where profiles go: a directory of YAML files here; a cluster with `hub: { kubeconfig: ~/.kube/config }`.',
    stringify({ hub: document.hub }).trimEnd(),
    '# Where change events go: JSON lines on stdout here; `bus: { eventBridge: { busName: ... } }` in AWS.',
    stringify({ bus: document.bus }).trimEnd(),
    '# Events wait here until the bus took them (never lost between runs).',
    stringify({ outbox: document.outbox }).trimEnd(),
    '',
  ].join('\n');
  writeFileSync(path, text, { flag: 'wx' });
  log(`wrote ${path}:\n${describe(discovery)}`);
}
