/**
 * The engine's ports on files, as `cpsync sync` makes them with a file hub: a hub, a bus of JSON lines, an outbox
 * and an intent log, in a temporary directory of their own (removed when the process exits); or with another hub
 * (the real kube-apiserver) and its leases in place of the file hub.
 */
import { existsSync, readFileSync } from 'node:fs';
import { JsonLinesFileBus } from '../../adapters/bus/JsonLinesBus.ts';
import { FileHub } from '../../adapters/hub/FileHub.ts';
import { FileIntentLog } from '../../adapters/outbox/FileIntentLog.ts';
import { FileAbsenceStore } from '../../adapters/outbox/FileAbsenceStore.ts';
import { FileOutbox } from '../../adapters/outbox/FileOutbox.ts';
import type { EnginePorts } from '../../core/sync/types.ts';
import { temporaryDirectory } from './tmp.ts';

/** Ports on files for `sources`, and the detail types of the events the bus has received, in order. */
export function filePorts(
  sources: EnginePorts['sources'],
  prefix = 'cpsync-ports-',
  hub?: Pick<EnginePorts, 'hub' | 'leases'>,
): { ports: EnginePorts; events: () => string[] } {
  const directory = temporaryDirectory(prefix);
  const ports: EnginePorts = {
    sources,
    ...(hub ?? { hub: new FileHub({ directory: `${directory}/hub` }) }),
    bus: new JsonLinesFileBus(`${directory}/events.jsonl`),
    outbox: new FileOutbox(`${directory}/outbox`),
    intents: new FileIntentLog(`${directory}/outbox`),
    absences: new FileAbsenceStore(`${directory}/outbox`),
  };
  const events = () =>
    (existsSync(`${directory}/events.jsonl`) ? readFileSync(`${directory}/events.jsonl`, 'utf8') : '')
      .trim()
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line)['detail-type'] as string);
  return { ports, events };
}
