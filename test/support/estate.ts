import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEmulators } from '../env/emulators.ts';
import { localHub, uniqueNamespace } from './hub.ts';

/**
 * What the end-to-end, fault and function tests start from: the shared local hub, a namespace of their
 * own on it (`<name>-…`), and the local clouds with their files in a new temporary directory.
 */
export async function estateOnHub(name: string, log?: (line: string) => void) {
  const state = await localHub();
  const namespace = uniqueNamespace(name);
  const emulators = await startEmulators({
    directory: mkdtempSync(join(tmpdir(), `cpsync-${name}-`)),
    namespace,
    ...(log ? { log } : {}),
  });
  return { state, namespace, emulators };
}
