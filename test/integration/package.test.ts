/**
 * The package as a user gets it: `npm pack` (which builds), the tarball unpacked as an installed
 * dependency, then `import … from 'cpsync/events'` from plain JavaScript and type-checked TypeScript
 * (NodeNext resolution through the exports map and the published declarations), and the `cpsync`
 * command run from node_modules.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { temporaryDirectory } from '../support/tmp.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BIN = join(ROOT, 'node_modules', '.bin');
const golden = join(ROOT, 'test/contract/releases/1.2/golden/clusterprofile-created.json');

describe('the published subscriber kit (cpsync/events)', () => {
  let project: string;
  let files: string[];

  before(() => {
    project = temporaryDirectory('cpsync-subscriber-');
    const packed = join(project, 'packed');
    mkdirSync(packed);
    const output = execFileSync('npm', ['pack', '--json', '--pack-destination', packed], {
      cwd: ROOT,
      encoding: 'utf8',
      env: { ...process.env, PATH: `${BIN}:${process.env.PATH}`, npm_config_loglevel: 'error' },
    });
    files = (
      JSON.parse(output.slice(output.indexOf('['))) as Array<{ files: Array<{ path: string }> }>
    )[0]!.files.map((f) => f.path);
    const installed = join(project, 'node_modules', 'cpsync');
    mkdirSync(installed, { recursive: true });
    const tarball = join(
      packed,
      readdirSync(packed).find((n) => n.endsWith('.tgz'))!,
    );
    execFileSync('tar', ['-xzf', tarball, '-C', installed, '--strip-components=1']);
    // Its dependencies, as npm would install them beside it.
    for (const dependency of [
      'zod',
      'ajv',
      'ajv-draft-04',
      'fast-deep-equal',
      'fast-uri',
      'json-schema-traverse',
      'require-from-string',
    ])
      symlinkSync(join(ROOT, 'node_modules', dependency), join(project, 'node_modules', dependency));
    mkdirSync(join(project, 'node_modules', '@types'), { recursive: true });
    symlinkSync(
      join(ROOT, 'node_modules', '@types', 'node'),
      join(project, 'node_modules', '@types', 'node'),
    );
    writeFileSync(
      join(project, 'package.json'),
      JSON.stringify({ name: 'subscriber', type: 'module', private: true }),
    );
  });

  it('packs the built kit, its declarations, the versioning policy and the docs, not the sources or tests', () => {
    for (const path of [
      'dist/events/index.js',
      'dist/events/index.d.ts',
      'dist/events/schemas/clusterprofile-created.json',
      'events/VERSIONING.md',
      'docs/events.md',
      'package.json',
      'cli/cpsync.mjs',
      'dist/cpsync/cpsync.mjs',
    ])
      assert.ok(files.includes(path), `${path} in the package`);
    const sources = files.filter((f) => f.startsWith('test/') || (f.endsWith('.ts') && !f.endsWith('.d.ts')));
    assert.deepEqual(sources, [], 'no sources, no tests');
    // The command is the bundle: no compiled copy of the functions, the CLI or the adapters beside it.
    const compiled = files.filter((f) => /^dist\/(functions|cli|adapters|infra)\//.test(f));
    assert.deepEqual(compiled, [], 'only the kit is compiled file by file');
  });

  it('runs the cpsync command from node_modules, the bundle alone, without its dependencies installed', () => {
    // npm links the bin as node_modules/.bin/cpsync; the launcher it points to is what runs.
    const bin = join(project, 'node_modules', 'cpsync', 'cli', 'cpsync.mjs');
    const run = (...args: string[]) =>
      spawnSync(process.execPath, [bin, ...args], { cwd: project, encoding: 'utf8' });
    const version = run('--version');
    assert.equal(version.status, 0, version.stderr);
    assert.equal(
      version.stdout.trim(),
      (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version,
    );
    writeFileSync(join(project, 'cpsync.yaml'), 'providers:\n  gke:\n    projects: [demo-project]\n');
    const valid = run('validate-config');
    assert.equal(valid.status, 0, valid.stderr);
    assert.equal(valid.stdout, 'cpsync.yaml: valid\n');
    writeFileSync(join(project, 'cpsync.yaml'), 'providers:\n  gke:\n    projects: demo-project\n');
    const invalid = run('validate-config');
    assert.equal(invalid.status, 2);
    assert.match(invalid.stderr, /cpsync\.yaml.*providers\.gke\.projects/s);
  });

  it('is imported by name from JavaScript and parses an event, refusing another major by name', () => {
    writeFileSync(
      join(project, 'consumer.mjs'),
      `import { readFileSync } from 'node:fs';
import { parseCpsyncEvent, patterns, CpsyncEventError } from 'cpsync/events';
const event = parseCpsyncEvent(readFileSync(${JSON.stringify(golden)}, 'utf8'));
let refused = '';
try { parseCpsyncEvent({ ...event, detail: { ...event.detail, schemaVersion: '2.0' } }); } catch (e) { refused = e instanceof CpsyncEventError ? e.problems[0] : 'wrong error'; }
console.log(JSON.stringify({ type: event['detail-type'], name: event.detail.name, pattern: patterns.deleted({ provider: 'gke' }), refused }));
`,
    );
    const result = spawnSync(process.execPath, ['consumer.mjs'], { cwd: project, encoding: 'utf8' });
    assert.equal(result.status, 0, result.stderr);
    const out = JSON.parse(result.stdout) as Record<string, unknown>;
    assert.equal(out.type, 'ClusterProfile Created');
    assert.equal(
      out.name,
      (JSON.parse(readFileSync(golden, 'utf8')) as { detail: { name: string } }).detail.name,
    );
    assert.deepEqual(out.pattern, {
      source: ['cpsync'],
      'detail-type': ['ClusterProfile Deleted'],
      detail: { cluster: { provider: ['gke'] } },
    });
    assert.match(String(out.refused), /schemaVersion is 2\.0: this reader takes schema 1\.x/);
  });

  it('types a subscriber: the detail narrows by detail-type, and a wrong field does not compile', () => {
    writeFileSync(
      join(project, 'consumer.ts'),
      `import { parseCpsyncEvent, isEvent, type CpsyncEventBridgeEvent } from 'cpsync/events';
export function describe(raw: unknown): string {
  const event: CpsyncEventBridgeEvent = parseCpsyncEvent(raw);
  if (isEvent(event, 'ClusterProfile Updated')) return event.detail.changedFields.join(',');
  if (event['detail-type'] === 'Inventory Scope Synced') return event.detail.outcome;
  return event['detail-type'];
}
`,
    );
    writeFileSync(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          target: 'ES2023',
          strict: true,
          noEmit: true,
          types: ['node'],
        },
        files: ['consumer.ts'],
      }),
    );
    const tsc = join(BIN, 'tsc');
    const clean = spawnSync(tsc, ['-p', 'tsconfig.json'], { cwd: project, encoding: 'utf8' });
    assert.equal(clean.status, 0, clean.stdout);
    writeFileSync(
      join(project, 'consumer.ts'),
      `import { parseCpsyncEvent, isEvent } from 'cpsync/events';
const event = parseCpsyncEvent({});
if (isEvent(event, 'ClusterProfile Deleted')) console.log(event.detail.outcome);
`,
    );
    const wrong = spawnSync(tsc, ['-p', 'tsconfig.json'], { cwd: project, encoding: 'utf8' });
    assert.notEqual(wrong.status, 0);
    assert.match(wrong.stdout, /Property 'outcome' does not exist/);
  });
});
