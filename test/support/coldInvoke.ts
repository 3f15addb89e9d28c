/**
 * One cold start of a bundled function, as Lambda makes it: a fresh Node process imports the bundle's
 * `index.mjs` (module initialisation), then invokes its handler once with the event in a file. Prints one
 * JSON line: the handler's result, the two durations, and which files of the bundle were loaded (so a test
 * can see which cloud's SDK a message made the function load).
 *
 * node test/support/coldInvoke.ts <bundle directory> <event.json | ->   (`-`: module initialisation only)
 */
import { readFileSync } from 'node:fs';
import { registerHooks } from 'node:module';
import { join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { lambdaContext } from './lambda.ts';

const [directory, eventFile] = process.argv.slice(2);
if (!directory || !eventFile) throw new Error('usage: coldInvoke.ts <bundle directory> <event.json>');
const event = eventFile === '-' ? undefined : (JSON.parse(readFileSync(eventFile, 'utf8')) as unknown);
const loaded: string[] = [];
const root = pathToFileURL(`${directory}/`).href;
registerHooks({
  load(url, context, nextLoad) {
    if (url.startsWith(root)) loaded.push(relative(directory, fileURLToPath(url)));
    return nextLoad(url, context);
  },
});
const started = performance.now();
const { handler } = (await import(pathToFileURL(join(directory, 'index.mjs')).href)) as {
  handler: (event: unknown, context: unknown) => Promise<unknown>;
};
const initialised = performance.now();
let result: unknown;
if (event === undefined) {
  process.stdout.write(`${JSON.stringify({ initMillis: initialised - started, loaded })}\n`);
  process.exit(0);
}
try {
  result = await handler(event, lambdaContext());
} catch (error) {
  // The error's own stack, without Node's quote of the (minified) source line.
  process.stderr.write(`${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
}
const done = performance.now();
process.stdout.write(
  `${JSON.stringify({ result, initMillis: initialised - started, invokeMillis: done - initialised, loaded })}\n`,
);
// Lambda freezes the process here; the open connections are the SDKs' keep-alive pools.
process.exit(0);
