import { accessSync, constants, existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parse } from 'yaml';
import { ConfigError, parseConfig, type CpsyncConfig } from '../adapters/compose/config.ts';

/** The file read when no --config is given (an empty configuration when it does not exist). */
const DEFAULT_CONFIG_FILE = 'cpsync.yaml';
/** The source of a configuration that comes from no file. */
export const DEFAULTS_SOURCE = '(defaults)';
/** The largest configuration read: a real one is a few KB; anything near this is a mistake, refused before it is parsed. */
const MAX_CONFIG_BYTES = 1024 * 1024;

/** What is wrong with a file the configuration names, or undefined when it can be read. */
function unreadable(path: string): string | undefined {
  const full = resolve(path);
  try {
    if (!statSync(full).isFile()) return `${path} is not a file`;
    accessSync(full, constants.R_OK);
    return undefined;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code === 'ENOENT' ? `${path}: no such file` : `${path} cannot be read (${code ?? 'error'})`;
  }
}

/**
 * What is wrong with a kubeconfig file for a hub (never quoting it: it may hold credentials): it must
 * be a YAML document with contexts, and name the configured context (or a current one).
 */
function kubeconfigProblem(path: string, context: string | undefined): string | undefined {
  let document: unknown;
  try {
    document = parse(readFileSync(resolve(path), 'utf8'));
  } catch {
    return `${path} is not valid YAML`;
  }
  const kubeconfig = (typeof document === 'object' && document !== null ? document : {}) as {
    contexts?: unknown;
    'current-context'?: unknown;
  };
  const names = Array.isArray(kubeconfig.contexts)
    ? kubeconfig.contexts
        .map((c) => (c as { name?: unknown } | null)?.name)
        .filter((n) => typeof n === 'string')
    : [];
  if (names.length === 0) return `${path} has no contexts: it is not a kubeconfig`;
  const wanted = context ?? kubeconfig['current-context'];
  if (typeof wanted !== 'string' || wanted === '')
    return `${path} has no current-context; set hub.context to one of: ${names.join(', ')}`;
  if (!names.includes(wanted))
    return `context ${JSON.stringify(wanted)} is not in ${path} (it has: ${names.join(', ')})`;
  return undefined;
}

/**
 * The checks a configuration can pass only on this machine: every file it names exists and can be
 * read, and the hub's kubeconfig has the context it asks for. Done when the configuration is read,
 * so that `validate-config` finds what a run would otherwise fail on.
 */
function localProblems(config: CpsyncConfig): string[] {
  const issues: string[] = [];
  const file = (field: string, path: string | undefined) => {
    if (path === undefined) return false;
    const problem = unreadable(path);
    if (problem) issues.push(`${field}: ${problem}`);
    return problem === undefined;
  };
  const { gke, aks } = config.providers;
  if (gke?.credentials && 'file' in gke.credentials)
    file('providers.gke.credentials.file', gke.credentials.file);
  if (aks?.credential && 'federatedTokenFile' in aks.credential)
    file('providers.aks.credential.federatedTokenFile', aks.credential.federatedTokenFile);
  if (aks?.credential && 'clientSecret' in aks.credential && 'file' in aks.credential.clientSecret)
    file('providers.aks.credential.clientSecret.file', aks.credential.clientSecret.file);
  if (config.hub && 'kubeconfig' in config.hub && file('hub.kubeconfig', config.hub.kubeconfig)) {
    const problem = kubeconfigProblem(config.hub.kubeconfig, config.hub.context);
    if (problem) issues.push(`hub.${config.hub.context ? 'context' : 'kubeconfig'}: ${problem}`);
  }
  return issues;
}

/**
 * The configuration with every relative path it names (the file hub, a kubeconfig, the outbox, a jsonl
 * bus, credential and secret files) resolved against `base`, the configuration file's directory: a
 * file means the same wherever cpsync is run from.
 */
function resolvePaths(config: CpsyncConfig, base: string): CpsyncConfig {
  const at = (path: string) => resolve(base, path);
  const { hub, outbox, bus, providers, webhook } = config;
  const gke = providers.gke;
  const aks = providers.aks;
  const credential = aks?.credential;
  const fileRef = <T extends { file: string } | { secretArn: string }>(ref: T): T =>
    'file' in ref ? { ...ref, file: at(ref.file) } : ref;
  return {
    ...config,
    ...(hub && 'directory' in hub ? { hub: { ...hub, directory: at(hub.directory) } } : {}),
    ...(hub && 'kubeconfig' in hub ? { hub: { ...hub, kubeconfig: at(hub.kubeconfig) } } : {}),
    ...(outbox && 'directory' in outbox ? { outbox: { ...outbox, directory: at(outbox.directory) } } : {}),
    ...(bus && 'jsonl' in bus ? { bus: { jsonl: at(bus.jsonl) } } : {}),
    providers: {
      ...providers,
      ...(gke?.credentials ? { gke: { ...gke, credentials: fileRef(gke.credentials) } } : {}),
      ...(aks && credential
        ? {
            aks: {
              ...aks,
              credential:
                'federatedTokenFile' in credential
                  ? { ...credential, federatedTokenFile: at(credential.federatedTokenFile) }
                  : { ...credential, clientSecret: fileRef(credential.clientSecret) },
            },
          }
        : {}),
    },
    webhook: webhook.azure ? { ...webhook, azure: { key: fileRef(webhook.azure.key) } } : webhook,
  };
}

/** Reads and validates a YAML configuration; a missing default file means the embedded defaults. */
export function loadConfig(path: string | undefined): { config: CpsyncConfig; source: string } {
  const file = path ?? DEFAULT_CONFIG_FILE;
  if (!existsSync(file)) {
    if (path) throw new ConfigError([`${file}: no such file`], file);
    return { config: parseConfig({}, DEFAULTS_SOURCE), source: DEFAULTS_SOURCE };
  }
  const size = statSync(file).size;
  if (size > MAX_CONFIG_BYTES)
    throw new ConfigError(
      [
        `the file is ${(size / 1024 / 1024).toFixed(1)} MiB; a configuration is at most ${MAX_CONFIG_BYTES / 1024 / 1024} MiB`,
      ],
      file,
    );
  let document: unknown;
  try {
    document = parse(readFileSync(file, 'utf8'), { maxAliasCount: 100 });
  } catch (error) {
    throw new ConfigError([`not valid YAML: ${(error as Error).message.split('\n')[0]}`], file);
  }
  const config = resolvePaths(parseConfig(document, file), dirname(resolve(file)));
  const problems = localProblems(config);
  if (problems.length > 0) throw new ConfigError(problems, file);
  return { config, source: file };
}
