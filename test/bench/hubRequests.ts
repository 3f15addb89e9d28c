/**
 * What the Kubernetes hub's requests cost the calling process, by the way they are sent (adapters/hub/
 * connections.ts): client-node's own `fetch()` path against undici's `request()`, through KubernetesHub against
 * the real local hub. Each measured process creates `profiles` profiles as a full sync does (a read that finds
 * none, the object applied, the status applied), changes each one's status (one write), and lists them all
 * (pages of 500); its own CPU per profile for each, and the writes the kube-apiserver counted. The paths take
 * turns, each in a fresh process (their own JIT and connections), `rounds` times.
 *
 * node test/bench/hubRequests.ts                                           (prints the table)
 * node test/bench/hubRequests.ts child <hub directory> <library> <namespace> <profiles>   (a measured process)
 */
import pLimit from 'p-limit';
import { KubernetesHub } from '../../adapters/hub/KubernetesHub.ts';
import type { HubHttpLibrary } from '../../adapters/hub/connections.ts';
import { readState, startHub, stopHub } from '../env/hub.ts';
import { syntheticProfiles } from '../support/fixtures.ts';
import { adminKubeConfig } from '../support/hub.ts';
import { apiserverProfileRequests, requestsBetween } from '../support/hubCounts.ts';
import { temporaryDirectory } from '../support/tmp.ts';
import { median, sayTurns, takingTurns } from './turns.ts';

/** Requests in flight at once, as a scope's writes are. */
const CONCURRENCY = 8;

interface Measured {
  /** CPU of the process per profile: created (read, object, status), status changed, listed. */
  createdMillis: number;
  changedMillis: number;
  listedMillis: number;
  /** Writes the kube-apiserver counted per created profile, and per changed one. */
  writesPerCreated: number;
  writesPerChanged: number;
}

async function child(directory: string, library: HubHttpLibrary, namespace: string, count: number) {
  const state = readState(directory)!;
  const hub = new KubernetesHub({ kubeConfig: adminKubeConfig(state), httpLibrary: library });
  await hub.ensureNamespace({ name: namespace });
  const all = (await syntheticProfiles(count + 100)).map((profile) => {
    profile.metadata.namespace = namespace;
    return profile;
  });
  const limit = pLimit(CONCURRENCY);
  const create = (profiles: typeof all) =>
    Promise.all(
      profiles.map((profile) =>
        limit(async () => {
          await hub.get(profile.metadata);
          await hub.applyObject(profile);
          await hub.applyStatus(profile);
        }),
      ),
    );
  const cpu = () => {
    const used = process.cpuUsage();
    return (used.user + used.system) / 1000;
  };
  await create(all.slice(count)); // warm: the connection, V8's optimised code
  const profiles = all.slice(0, count);
  let counted = await apiserverProfileRequests(state);
  let started = cpu();
  await create(profiles);
  const createdMillis = (cpu() - started) / count;
  const created = requestsBetween(counted, (counted = await apiserverProfileRequests(state)));
  started = cpu();
  await Promise.all(
    profiles.map((profile) =>
      limit(() =>
        hub.applyStatus({
          ...profile,
          status: { ...profile.status, version: { kubernetes: '1.99.0' } },
        }),
      ),
    ),
  );
  const changedMillis = (cpu() - started) / count;
  const changed = requestsBetween(counted, await apiserverProfileRequests(state));
  started = cpu();
  const listed = await hub.list(namespace, {});
  const listedMillis = (cpu() - started) / listed.length;
  const measured: Measured = {
    createdMillis,
    changedMillis,
    listedMillis,
    writesPerCreated: created.writes / count,
    writesPerChanged: changed.writes / count,
  };
  process.send!(measured, () => process.exit(0));
}

/** Each request path's figures, `rounds` fresh processes each, taking turns against one hub. */
export async function hubRequestPaths(profiles = 2000, rounds = 3): Promise<Map<HubHttpLibrary, Measured[]>> {
  const directory = temporaryDirectory('cpsync-hub-requests-');
  await startHub(directory);
  try {
    return await takingTurns<HubHttpLibrary, Measured>(
      import.meta.filename,
      ['fetch', 'request'],
      rounds,
      (library, round) => [directory, library, `bench-${library}-${round}`, String(profiles)],
    );
  } finally {
    await stopHub(directory);
  }
}

/** The section: a row per request path, medians of its rounds. */
export async function reportHubRequestPaths(say: (line?: string) => void, profiles = 2000, rounds = 3) {
  const results = await hubRequestPaths(profiles, rounds);
  const ms = (values: number[]) => `${median(values).toFixed(3)} ms`;
  sayTurns(
    say,
    {
      title: 'The Kubernetes hub: CPU per request path',
      text: `KubernetesHub against the real local kube-apiserver, in a process of its own per path and round (median of ${rounds}, the paths taking turns): ${profiles.toLocaleString('en')} profiles created as a full sync creates them (a read that finds none, the object applied, the status applied), each one's status changed, all listed (pages of 500); ${CONCURRENCY} requests in flight. CPU of the calling process per profile; writes as the kube-apiserver counted them.`,
      columns: [
        'request path',
        'created (read + 2 writes)',
        'status changed (1 write)',
        'listed',
        'writes per created / changed profile',
      ],
      labels: {
        fetch: "client-node's own (undici `fetch()`)",
        request: 'undici `request()` (the default)',
      },
      cells: (runs) => [
        ms(runs.map((r) => r.createdMillis)),
        ms(runs.map((r) => r.changedMillis)),
        ms(runs.map((r) => r.listedMillis)),
        `${median(runs.map((r) => r.writesPerCreated)).toFixed(2)} / ${median(runs.map((r) => r.writesPerChanged)).toFixed(2)}`,
      ],
    },
    results,
  );
}

if (process.argv[2] === 'child')
  await child(process.argv[3]!, process.argv[4] as HubHttpLibrary, process.argv[5]!, Number(process.argv[6]));
else if (import.meta.main) await reportHubRequestPaths((line = '') => console.log(line));
