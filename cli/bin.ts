#!/usr/bin/env node
import { setFlagsFromString } from 'node:v8';
import { main } from './program.ts';

// V8 lets the heap grow to several times what is live before it collects; a sync allocates a lot of
// short-lived data (one listing, profile and event after another), so on a large estate the process
// would hold hundreds of MB of garbage. Collecting once the heap is 30 % over what is live keeps a
// 10,000-cluster sync under 512 MB (BENCHMARKS.md). A --heap-growing-percent given to Node wins.
const given = [...process.execArgv, process.env.NODE_OPTIONS ?? ''].some((flag) =>
  flag.includes('heap-growing-percent'),
);
if (!given) setFlagsFromString('--heap-growing-percent=30');

process.exitCode = await main(process.argv.slice(2));
