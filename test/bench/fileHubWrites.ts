/**
 * What a created profile costs the file hub, written as the engine writes it: a read that finds none, then the
 * object and its status in one write (`applyWhole`), or apart (the object, then the status, which reads the
 * file back first), as a hub without `applyWhole` is written. Each measured process creates `profiles` profiles
 * in a directory of its own; its CPU per profile, and the writes each profile took as the hub counts them (its
 * resourceVersion moves on with each write). The two ways take turns, each in a fresh process, `rounds` times.
 *
 * node test/bench/fileHubWrites.ts                                   (prints the table)
 * node test/bench/fileHubWrites.ts child <whole|apart> <profiles>     (a measured process)
 */
import { rmSync } from 'node:fs';
import pLimit from 'p-limit';
import { FileHub } from '../../adapters/hub/FileHub.ts';
import { syntheticProfiles } from '../support/fixtures.ts';
import { temporaryDirectory } from '../support/tmp.ts';
import { median, medianAndRange, sayTurns, takingTurns } from './turns.ts';

type Way = 'whole' | 'apart';

/** Writes in flight at once, as a scope's are. */
const CONCURRENCY = 8;

interface Measured {
  createdMillis: number;
  writesPerProfile: number;
}

async function child(way: Way, count: number): Promise<void> {
  const directory = temporaryDirectory('cpsync-bench-file-hub-');
  try {
    const hub = new FileHub({ directory });
    const all = await syntheticProfiles(count + 200);
    const limit = pLimit(CONCURRENCY);
    const create = (profiles: typeof all) =>
      Promise.all(
        profiles.map((profile) =>
          limit(async () => {
            await hub.get(profile.metadata);
            if (way === 'whole') await hub.applyWhole(profile);
            else {
              await hub.applyObject(profile);
              await hub.applyStatus(profile);
            }
          }),
        ),
      );
    await create(all.slice(count)); // warm: V8's optimised code, the namespace's index
    const profiles = all.slice(0, count);
    const before = process.cpuUsage();
    await create(profiles);
    const used = process.cpuUsage(before);
    let writes = 0;
    for (const profile of profiles)
      writes += Number((await hub.get(profile.metadata))?.metadata.resourceVersion ?? 0);
    const measured: Measured = {
      createdMillis: (used.user + used.system) / 1000 / count,
      writesPerProfile: writes / count,
    };
    process.send!(measured, () => process.exit(0));
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}

/** The section: a row per way, medians of its rounds. */
export async function reportFileHubWrites(say: (line?: string) => void, profiles = 5000, rounds = 5) {
  const results = await takingTurns<Way, Measured>(
    import.meta.filename,
    ['apart', 'whole'],
    rounds,
    (way) => [way, String(profiles)],
  );
  sayTurns(
    say,
    {
      title: 'The file hub: CPU per created profile',
      text: `FileHub in a directory of its own, in a process of its own per way and round (median of ${rounds}, range in brackets, the ways taking turns): ${profiles.toLocaleString('en')} profiles created as a full sync creates them (a read that finds none, then the writes), ${CONCURRENCY} at once. CPU of the process per profile; writes per profile as the hub counted them (its resourceVersion, which moves on with each write).`,
      columns: ['written', 'CPU per created profile', 'writes per profile'],
      labels: {
        apart: 'the object, then the status (read back first): a hub without `applyWhole`',
        whole: 'object and status in one write, `applyWhole` (what the engine uses)',
      },
      cells: (runs) => [
        medianAndRange(
          runs.map((r) => r.createdMillis),
          3,
          ' ms',
        ),
        median(runs.map((r) => r.writesPerProfile)).toFixed(2),
      ],
    },
    results,
  );
}

if (process.argv[2] === 'child') await child(process.argv[3] as Way, Number(process.argv[4]));
else if (import.meta.main) await reportFileHubWrites((line = '') => console.log(line));
