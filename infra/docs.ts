/**
 * `npm run docs`: writes the pages generated from the code (docs/reference/configuration.md, from the
 * configuration schema). test/unit/docs.test.ts fails when a committed page differs from what this writes.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { configReference, REFERENCE_PAGE } from './configReference.ts';

mkdirSync(dirname(REFERENCE_PAGE), { recursive: true });
writeFileSync(REFERENCE_PAGE, configReference());
console.log(`wrote ${REFERENCE_PAGE}`);
