/** Preloaded (`node --import`) into a benchmarked process: reports its peak resident set size on exit. */
process.on('exit', () => {
  process.stderr.write(`peak-rss-bytes ${process.resourceUsage().maxRSS * 1024}\n`);
});
