/**
 * `npm run docs`: writes the pages generated from the code — docs/reference/configuration.md from the configuration
 * schema, docs/reference/events.md from the events' JSON Schemas, docs/reference/cli.md from the `cpsync` command. test/unit/docs.test.ts fails when a committed page
 * differs from what this writes.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { CLI_PAGE, cliReference } from './cliReference.ts';
import { configReference, REFERENCE_PAGE } from './configReference.ts';
import { eventsReference, EVENTS_PAGE } from './eventsReference.ts';

for (const [page, text] of [
  [REFERENCE_PAGE, configReference()],
  [EVENTS_PAGE, eventsReference()],
  [CLI_PAGE, cliReference()],
] as const) {
  mkdirSync(dirname(page), { recursive: true });
  writeFileSync(page, text);
  console.log(`wrote ${page}`);
}
