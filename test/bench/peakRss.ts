/** Preloaded (`node --import`) into a benchmarked process: reports its peak resident set size and CPU time on exit. */
process.on('exit', () => {
  const usage = process.resourceUsage();
  process.stderr.write(`peak-rss-bytes ${usage.maxRSS * 1024}\n`);
  process.stderr.write(`cpu-micros ${usage.userCPUTime + usage.systemCPUTime}\n`);
});
