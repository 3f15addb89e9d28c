import { existsSync, readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { ConfigError, parseConfig, type CpsyncConfig } from '../core/config.ts';

/** The file read when no --config is given (an empty configuration when it does not exist). */
const DEFAULT_CONFIG_FILE = 'cpsync.yaml';

/** Reads and validates a YAML configuration; a missing default file means the embedded defaults. */
export function loadConfig(path: string | undefined): { config: CpsyncConfig; source: string } {
  const file = path ?? DEFAULT_CONFIG_FILE;
  if (!existsSync(file)) {
    if (path) throw new ConfigError([`${file}: no such file`], file);
    return { config: parseConfig({}, '(defaults)'), source: '(defaults)' };
  }
  let document: unknown;
  try {
    document = parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new ConfigError([`not valid YAML: ${(error as Error).message.split('\n')[0]}`], file);
  }
  return { config: parseConfig(document, file), source: file };
}
