/**
 * Preloaded (`node --import`) into a benchmarked process: reports its peak resident set size and CPU time on
 * exit (and the system time within it), and (where /proc has them) the CPU time of each kind of thread: the main thread that runs cpsync,
 * V8's workers (optimising compilers, concurrent garbage collection) and libuv's pool (file system, DNS).
 */
import { readdirSync, readFileSync } from 'node:fs';

/** Clock ticks per second of /proc's times (USER_HZ, 100 on Linux). */
const TICKS = 100;

function threadCpuMillis(): Record<string, number> {
  const byKind: Record<string, number> = {};
  try {
    for (const task of readdirSync('/proc/self/task')) {
      const name = readFileSync(`/proc/self/task/${task}/comm`, 'utf8').trim();
      const fields = readFileSync(`/proc/self/task/${task}/stat`, 'utf8').split(') ')[1]!.split(' ');
      const kind =
        name === 'MainThread'
          ? 'main'
          : name.startsWith('V8')
            ? 'v8'
            : name.startsWith('libuv')
              ? 'libuv'
              : 'other';
      byKind[kind] = (byKind[kind] ?? 0) + ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS;
    }
  } catch {
    // No /proc: the totals alone.
  }
  return byKind;
}

process.on('exit', () => {
  const usage = process.resourceUsage();
  process.stderr.write(`peak-rss-bytes ${usage.maxRSS * 1024}\n`);
  process.stderr.write(`cpu-micros ${usage.userCPUTime + usage.systemCPUTime}\n`);
  // The kernel's share (file system, sockets): how much of it there is depends on the disk as much as on cpsync.
  process.stderr.write(`cpu-system-micros ${usage.systemCPUTime}\n`);
  process.stderr.write(`thread-cpu-millis ${JSON.stringify(threadCpuMillis())}\n`);
});
