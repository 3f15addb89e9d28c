/**
 * What a full sync's look for orphans costs at the end of a run, in the file hub: every profile read whole and
 * judged (`inventoryProfiles`, then `findOrphans`: how it was done until 2026-11-29), or the labels alone listed
 * and only the orphaned scopes' profiles read whole (`inventoryOrphans`, what the run does). Each measured process
 * writes `profiles` synthetic profiles (three clouds, 100 accounts each) into a directory of its own, then a
 * fresh hub on that directory lists one scope (which reads the namespace's index, as a run's first scope does) and
 * looks for orphans once, with one account of the 300 dropped from the configuration. The two ways take turns.
 *
 * node test/bench/orphanLook.ts                                   (prints the table)
 * node test/bench/orphanLook.ts child <whole|labels> <profiles>   (a measured process)
 */
import { rmSync } from 'node:fs';
import { FileHub } from '../../adapters/hub/FileHub.ts';
import { LABEL_ACCOUNT, LABEL_PROVIDER } from '../../core/domain/constants.ts';
import { findOrphans } from '../../core/domain/orphans.ts';
import { ALL_REGIONS, type Scope } from '../../core/domain/model/scope.ts';
import type { Provider } from '../../core/domain/model/observedCluster.ts';
import { inventoryOrphans, inventoryProfiles } from '../../core/sync/inventory.ts';
import { syntheticProfiles } from '../support/fixtures.ts';
import { inventoryOptions } from '../support/settings.ts';
import { temporaryDirectory } from '../support/tmp.ts';
import { median, medianAndRange, sayTurns, takingTurns } from './turns.ts';

type Way = 'whole' | 'labels';

interface Measured {
  cpuMillisPerProfile: number;
  orphanedProfiles: number;
}

async function child(way: Way, count: number): Promise<void> {
  const directory = temporaryDirectory('cpsync-bench-orphans-');
  try {
    const profiles = await syntheticProfiles(count);
    const writer = new FileHub({ directory });
    await writer.ensureNamespace({ name: 'inventory' });
    for (const profile of profiles) await writer.applyWhole(profile);
    const options = inventoryOptions({ namespace: 'inventory' });
    const scopes = new Map<string, Scope>();
    for (const { metadata } of profiles) {
      const provider = metadata.labels![LABEL_PROVIDER] as Provider;
      const account = metadata.labels![LABEL_ACCOUNT]!;
      scopes.set(`${provider}/${account}`, { provider, account, region: ALL_REGIONS });
    }
    const [dropped, ...configured] = [...scopes.values()];
    const determined = new Set<Provider>(['eks', 'gke', 'aks']);
    const hub = new FileHub({ directory });
    await hub.list('inventory', { [LABEL_ACCOUNT]: dropped!.account });
    const before = process.cpuUsage();
    const orphans =
      way === 'whole'
        ? findOrphans((await inventoryProfiles(hub, options)).profiles, configured, determined)
        : await inventoryOrphans(hub, options, configured, determined);
    const used = process.cpuUsage(before);
    const measured: Measured = {
      cpuMillisPerProfile: (used.user + used.system) / 1000 / count,
      orphanedProfiles: orphans.reduce((sum, o) => sum + o.profiles.length, 0),
    };
    process.send!(measured, () => process.exit(0));
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}

/** The section: a row per way, medians of its rounds. */
export async function reportOrphanLook(say: (line?: string) => void, profiles = 10_000, rounds = 5) {
  const results = await takingTurns<Way, Measured>(
    import.meta.filename,
    ['whole', 'labels'],
    rounds,
    (way) => [way, String(profiles)],
  );
  sayTurns(
    say,
    {
      title: "The file hub: a full sync's look for orphans",
      text: `${profiles.toLocaleString('en')} profiles in a file hub (three clouds, 100 accounts each), one account dropped from the configuration; the look made once by a fresh hub whose index a scope's list has read, as at the end of a run, in a process of its own per way and round (median of ${rounds}, range in brackets, the ways taking turns). \`node test/bench/orphanLook.ts\`, or \`npm run bench -- --only orphan-look\`.`,
      columns: ['the look', 'CPU per profile in the hub, ms', 'orphaned profiles found'],
      labels: {
        whole: 'every profile read whole, then judged (until 2026-11-29)',
        labels: 'labels listed, the orphaned scopes read whole (`inventoryOrphans`, what a run does)',
      },
      cells: (runs) => [
        medianAndRange(
          runs.map((r) => r.cpuMillisPerProfile),
          4,
        ),
        String(median(runs.map((r) => r.orphanedProfiles))),
      ],
    },
    results,
  );
}

if (process.argv[2] === 'child') await child(process.argv[3] as Way, Number(process.argv[4]));
else if (import.meta.main) await reportOrphanLook((line = '') => console.log(line));
