/**
 * Which lease holders are gone, for both lease stores (lock files and Kubernetes Leases): a holder of
 * this machine whose process has ended, or a run of this very process that gave its lease up (even if
 * telling the hub failed). One module, so the record of what this process gave up is shared.
 */
import { HOST, processAlive } from '../shared/files.ts';

export { HOST };

/** Leases (`name` and holder) that runs of this process gave up, even when telling the hub failed. */
const released = new Set<string>();

/** Records that a run of this process gave up `name`. */
export function leaseReleased(name: string, holder: string): void {
  released.add(`${name}\n${holder}`);
}

/** Records that a run of this process holds `name` (again). */
export function leaseTaken(name: string, holder: string): void {
  released.delete(`${name}\n${holder}`);
}

/**
 * Runs `take`, an attempt of this process at lease `name` for `holder`, with the holder counted as live while it
 * runs: a lease the attempt writes is the holder's from the moment it is written, and this process's own looks (a
 * run listing the shares of an account, in this very process) must not take it for one given up earlier and remove
 * it before the attempt has returned. When the attempt does not take the lease, a holder given up before is so again.
 */
export async function takingLease<T extends { acquired: boolean }>(
  name: string,
  holder: string,
  take: () => Promise<T>,
): Promise<T> {
  const key = `${name}\n${holder}`;
  const givenUp = released.delete(key);
  let answer: T | undefined;
  try {
    answer = await take();
    return answer;
  } finally {
    if (givenUp && !answer?.acquired) released.add(key);
  }
}

/**
 * Whether lease `name`, recorded for `holder` on `host` by process `pid`, is abandoned: its process,
 * on this machine, is gone — or is this process, and the run gave it up. A lease of another machine is
 * abandoned only once it runs out.
 */
export function holderGone(host: string | undefined, pid: number, name: string, holder: string): boolean {
  if (host !== HOST || !(pid > 0)) return false;
  return pid === process.pid ? released.has(`${name}\n${holder}`) : !processAlive(pid);
}
