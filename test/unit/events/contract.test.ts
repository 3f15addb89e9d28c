/* eslint-disable @typescript-eslint/no-explicit-any -- events taken apart as plain JSON */
/**
 * Contract stability (events/VERSIONING.md): the golden events of every released version are still
 * events of the current contract, the current builders still make the current golden events, a
 * subscriber of an earlier version still reads today's events, and no schema change since a release
 * rejects what that release accepted.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  DETAIL_SCHEMAS,
  DetailType,
  DetailValidator,
  SCHEMA_VERSION,
  parseCpsyncEvent,
} from '../../../events/index.ts';
import { compileDetailSchemas, tolerant } from '../../../events/parse.ts';
import { breakingChanges } from '../../contract/compat.ts';
import { currentGolden, releaseFiles, releases } from '../../contract/golden.ts';

type Golden = { 'detail-type': string; detail: { schemaVersion: string } };

/** A release's detail schemas by detail-type (each schema's title is its detail-type). */
function schemasOf(version: string): Record<string, Record<string, unknown>> {
  const files = version === SCHEMA_VERSION ? DETAIL_SCHEMAS : releaseFiles(version, 'schemas');
  return Object.fromEntries(
    Object.values(files).map((schema) => [
      (schema as { title: string }).title,
      schema as Record<string, unknown>,
    ]),
  );
}

const golden = (version: string) => releaseFiles(version, 'golden') as Record<string, Golden>;
const versions = releases();
const previous = versions.filter((v) => v !== SCHEMA_VERSION);

describe('event contract stability', () => {
  it('keeps the current version and at least one earlier release under test/contract/releases', () => {
    assert.ok(versions.includes(SCHEMA_VERSION), `no golden events of ${SCHEMA_VERSION}`);
    assert.ok(previous.length > 0);
    for (const version of previous)
      assert.ok(Object.keys(releaseFiles(version, 'schemas')).length > 0, `${version} has no frozen schemas`);
  });

  it('the current builders make exactly the golden events of the current version', () => {
    assert.deepEqual(currentGolden(), golden(SCHEMA_VERSION));
    const kinds = new Set(Object.values(golden(SCHEMA_VERSION)).map((e) => e['detail-type']));
    assert.deepEqual(
      [...kinds].sort(),
      Object.values(DetailType).sort(),
      'a golden event of every detail-type',
    );
  });

  for (const version of versions)
    it(`the golden events of ${version} are events of ${version}, of the current contract, and read by the kit`, () => {
      const own = new DetailValidator(schemasOf(version));
      const current = new DetailValidator();
      const events = Object.entries(golden(version));
      assert.ok(events.length > 0);
      for (const [name, event] of events) {
        assert.equal(event.detail.schemaVersion, version, name);
        assert.deepEqual(own.errors(event['detail-type'], event.detail), [], `${name} under ${version}`);
        assert.deepEqual(
          current.errors(event['detail-type'], event.detail),
          [],
          `${name} under ${SCHEMA_VERSION}`,
        );
        assert.equal(parseCpsyncEvent(event)['detail-type'], event['detail-type']);
      }
    });

  for (const version of previous)
    it(`a subscriber of ${version} (reading as the policy says) reads every current event of a detail-type it knows`, () => {
      const readers = compileDetailSchemas(
        Object.fromEntries(Object.entries(schemasOf(version)).map(([t, s]) => [t, tolerant(s)])),
      );
      let read = 0;
      for (const [name, event] of Object.entries(golden(SCHEMA_VERSION))) {
        const validate = readers.get(event['detail-type']);
        if (!validate) continue; // a detail-type added later reaches only rules that name it
        assert.ok(validate(event.detail), `${name}: ${JSON.stringify(validate.errors)}`);
        read++;
      }
      assert.ok(read >= 5, `read ${read}`);
    });

  const pairs = versions.slice(1).map((version, i) => [versions[i]!, version] as const);
  for (const [from, to] of pairs)
    it(`no schema change from ${from} to ${to} rejects an event ${from} accepted`, () => {
      const before = schemasOf(from);
      const after = schemasOf(to);
      for (const [type, schema] of Object.entries(before)) {
        assert.ok(after[type], `${to} dropped the detail-type ${type}`);
        assert.deepEqual(breakingChanges(schema, after[type]), [], type);
      }
    });

  it('the compatibility check names each kind of breaking change', () => {
    const base = structuredClone(DETAIL_SCHEMAS[DetailType.Created]) as Record<string, any>;
    const mutations: Array<[string, (s: Record<string, any>) => void, RegExp]> = [
      ['a new required field', (s) => s.required.push('priority'), /priority is newly required/],
      [
        'an enum value removed',
        (s) => (s.properties.cluster.properties.provider.enum = ['eks', 'gke']),
        /"aks"/,
      ],
      ['a pattern added', (s) => (s.properties.name.pattern = '^[a-z]+$'), /\/name: pattern/],
      ['a length tightened', (s) => (s.properties.name.maxLength = 63), /maxLength tightened to 63/],
      ['a field removed', (s) => delete s.properties.profileOmitted, /\/profileOmitted: removed/],
      ['a type narrowed', (s) => (s.properties.changedFields.type = 'string'), /no longer accepts array/],
      [
        'a definition tightened',
        (s) => (s.definitions.scope.properties.region.minLength = 3),
        /minLength tightened/,
      ],
      [
        'a new field constrained where any was taken',
        (s) => (s.definitions.change.properties.before = { type: 'string' }),
        /no longer accepts any type/,
      ],
      [
        'a keyword it cannot judge',
        (s) => (s.properties.name.oneOf = [{}]),
        /keyword oneOf cannot be judged/,
      ],
    ];
    assert.deepEqual(breakingChanges(base, structuredClone(base)), []);
    for (const [what, mutate, expected] of mutations) {
      const changed = structuredClone(base);
      mutate(changed);
      const problems = breakingChanges(base, changed);
      assert.ok(
        problems.some((p) => expected.test(p)),
        `${what}: ${JSON.stringify(problems)}`,
      );
    }
    // Additive changes are not breaking.
    const additive = structuredClone(base);
    additive.properties.priority = { type: 'string' };
    additive.properties.cluster.properties.provider.enum.push('oke');
    additive.properties.name.maxLength = 300;
    assert.deepEqual(breakingChanges(base, additive), []);
  });
});
