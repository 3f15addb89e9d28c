/**
 * Where a process's CPU went, from a V8 CPU profile (`node --cpu-prof`; the bench's
 * `CPSYNC_BENCH_NODE_FLAGS=--cpu-prof --cpu-prof-dir=<dir>`): self time per package and per function. A frame
 * in the bundle (dist/cpsync/) is traced back through the bundle's source map to the module it came from, so
 * `@kubernetes/client-node`, `undici`, the AWS SDK and cpsync's own modules are told apart.
 *
 *   node test/bench/cpuProfile.ts <file.cpuprofile> [functions to list, default 40]
 */
import { existsSync, readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { fileURLToPath } from 'node:url';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}

interface CpuProfile {
  nodes: Array<{ id: number; callFrame: CallFrame; children?: number[] }>;
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileSummary {
  totalMillis: number;
  /** Self time per package (or `node:` internals, `cpsync`, V8's own entries), most first. */
  packages: Array<[string, number]>;
  /**
   * Self time per package where Node's built-in modules and V8's natives are charged to the package that called
   * them (the nearest caller that is neither): what each package's work costs, its I/O and parsing included.
   */
  callers: Array<[string, number]>;
  /** Self time per function (`package function (module:line)`), most first. */
  functions: Array<[string, number]>;
}

/** The package a source path belongs to: `@scope/name` or `name` under node_modules, else cpsync's own. */
function packageOf(source: string): string {
  const match = /node_modules\/((?:@[^/]+\/)?[^/]+)\/(.*)$/.exec(source);
  if (match) return match[1]!;
  if (source.startsWith('node:')) return 'node (built-in modules)';
  return 'cpsync';
}

const maps = new Map<string, SourceMap | undefined>();

function sourceMapOf(url: string): SourceMap | undefined {
  if (!maps.has(url)) {
    let map: SourceMap | undefined;
    if (url.startsWith('file://')) {
      const path = `${fileURLToPath(url)}.map`;
      if (existsSync(path)) map = new SourceMap(JSON.parse(readFileSync(path, 'utf8')) as never);
      // A bundle rebuilt since the profile was taken has other chunks: its frames would all count as cpsync's.
      else if (url.includes('/dist/'))
        console.error(`no source map for ${url} (rebuilt since?): its frames count as cpsync's`);
    }
    maps.set(url, map);
  }
  return maps.get(url);
}

/** Where a frame came from: its package and a short name of its module and line. */
function originOf(frame: CallFrame): { pkg: string; name: string; where: string } {
  if (!frame.url) return { pkg: frame.functionName || '(anonymous)', name: frame.functionName, where: '' };
  const map = sourceMapOf(frame.url);
  const entry = map?.findEntry(frame.lineNumber, frame.columnNumber);
  const mapped = entry && 'originalSource' in entry ? entry : undefined;
  const source = mapped ? mapped.originalSource : frame.url;
  const line = mapped ? mapped.originalLine + 1 : frame.lineNumber + 1;
  // A package's own source map names its sources relative to it: the frame's file tells the package then.
  const pkg = packageOf(
    (frame.url.includes('/node_modules/') ? frame.url : source).replace(/^file:\/\//, ''),
  );
  const module = source.replace(/^.*node_modules\//, '').replace(/^.*\/work\/[^/]+\//, '');
  const name = (mapped as { name?: string } | undefined)?.name || frame.functionName || '(anonymous)';
  return { pkg, name, where: `${module.replace(/^(\.\.\/)+/, '')}:${line}` };
}

/** V8's and Node's own frames, charged to their caller in `callers`. */
const isRuntime = (pkg: string, frame: CallFrame) =>
  pkg === 'node (built-in modules)' || (!frame.url && !pkg.startsWith('('));

export function summarise(profile: CpuProfile): ProfileSummary {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parentOf = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id);
  const selfMicros = new Map<number, number>();
  profile.samples.forEach((id, i) =>
    selfMicros.set(id, (selfMicros.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)),
  );
  const packages = new Map<string, number>();
  const callers = new Map<string, number>();
  const functions = new Map<string, number>();
  let total = 0;
  for (const [id, micros] of selfMicros) {
    const frame = byId.get(id)!.callFrame;
    const { pkg, name: fn, where } = originOf(frame);
    total += micros;
    packages.set(pkg, (packages.get(pkg) ?? 0) + micros);
    let caller = pkg;
    for (
      let at = parentOf.get(id), own = frame;
      isRuntime(caller, own) && at !== undefined;
      at = parentOf.get(at)
    ) {
      own = byId.get(at)!.callFrame;
      if (own.url || own.functionName === '(root)')
        caller = own.functionName === '(root)' ? pkg : originOf(own).pkg;
    }
    callers.set(caller, (callers.get(caller) ?? 0) + micros);
    const name = `${pkg} ${fn}${where ? ` (${where})` : ''}`;
    functions.set(name, (functions.get(name) ?? 0) + micros);
  }
  const sorted = (map: Map<string, number>) =>
    [...map].map(([key, micros]): [string, number] => [key, micros / 1000]).sort((a, b) => b[1] - a[1]);
  return {
    totalMillis: total / 1000,
    packages: sorted(packages),
    callers: sorted(callers),
    functions: sorted(functions),
  };
}

if (import.meta.main) {
  const [file, count] = process.argv.slice(2);
  if (!file) throw new Error('usage: node test/bench/cpuProfile.ts <file.cpuprofile> [functions to list]');
  const summary = summarise(JSON.parse(readFileSync(file, 'utf8')) as CpuProfile);
  const share = (millis: number) =>
    `${millis.toFixed(0).padStart(7)} ms ${((100 * millis) / summary.totalMillis).toFixed(1).padStart(5)} %`;
  console.log(
    `${file}: ${summary.totalMillis.toFixed(0)} ms sampled (idle included)\n\nself time by package:`,
  );
  for (const [pkg, millis] of summary.packages.slice(0, 25)) console.log(`${share(millis)}  ${pkg}`);
  console.log("\nself time by package, Node's and V8's own work charged to the package that called it:");
  for (const [pkg, millis] of summary.callers.slice(0, 25)) console.log(`${share(millis)}  ${pkg}`);
  console.log('\nself time by function:');
  for (const [name, millis] of summary.functions.slice(0, Number(count ?? 40)))
    console.log(`${share(millis)}  ${name}`);
}
