/**
 * The example configuration tells the truth: it names every option the schema knows, and every value
 * marked `# default` is exactly what the schema fills in when the key is left out.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { parse } from 'yaml';
import { configSchema, parseConfig } from '../../adapters/compose/config.ts';

const TEXT = readFileSync(new URL('../../cpsync.example.yaml', import.meta.url), 'utf8');

interface Def {
  type: string;
  shape?: Record<string, { _zod: { def: Def } }>;
  innerType?: { _zod: { def: Def } };
  options?: Array<{ _zod: { def: Def } }>;
  element?: { _zod: { def: Def } };
  in?: { _zod: { def: Def } };
}

/** Every option path of the schema (`providers.eks.roleName`), through optional, default, union and array. */
function optionPaths(def: Def, prefix: string[] = []): string[][] {
  switch (def.type) {
    case 'object':
      return Object.entries(def.shape ?? {}).flatMap(([key, value]) => [
        [...prefix, key],
        ...optionPaths(value._zod.def, [...prefix, key]),
      ]);
    case 'optional':
    case 'default':
    case 'prefault':
    case 'nullable':
      return optionPaths(def.innerType!._zod.def, prefix);
    case 'pipe':
      return optionPaths(def.in!._zod.def, prefix);
    case 'union':
      return (def.options ?? []).flatMap((o) => optionPaths(o._zod.def, prefix));
    case 'array':
      return optionPaths(def.element!._zod.def, prefix);
    default:
      return [];
  }
}

function at(value: unknown, path: string[]): unknown {
  return path.reduce<unknown>((v, key) => (v as Record<string, unknown> | undefined)?.[key], value);
}

function without(document: unknown, path: string[]): unknown {
  const copy = structuredClone(document) as Record<string, unknown>;
  const parent = at(copy, path.slice(0, -1)) as Record<string, unknown>;
  delete parent[path.at(-1)!];
  return copy;
}

/** The key paths of lines that carry a `# default` marker, found by indentation. */
function markedDefaults(text: string): string[][] {
  const stack: Array<{ indent: number; key: string }> = [];
  const marked: string[][] = [];
  for (const line of text.split('\n')) {
    const match = /^(\s*)([A-Za-z][\w-]*):(.*)$/.exec(line);
    if (!match) continue;
    const indent = match[1]!.length;
    while (stack.length > 0 && stack.at(-1)!.indent >= indent) stack.pop();
    stack.push({ indent, key: match[2]! });
    if (/#\s*default\b/.test(match[3]!)) marked.push(stack.map((s) => s.key));
  }
  return marked;
}

describe('the example configuration (cpsync.example.yaml)', () => {
  const document = parse(TEXT) as unknown;

  it('is valid', () => {
    parseConfig(document, 'cpsync.example.yaml');
  });

  it('names every option the schema knows, in a value or in a comment', () => {
    const def = (configSchema as unknown as { _zod: { def: Def } })._zod.def;
    const missing = [...new Set(optionPaths(def).map((p) => p.join('.')))].filter(
      (path) => !new RegExp(`\\b${path.split('.').at(-1)}:`).test(TEXT),
    );
    assert.deepEqual(missing, []);
  });

  it('marks as "# default" only the values the schema fills in when the key is left out', () => {
    const marked = markedDefaults(TEXT);
    assert.ok(marked.length >= 15, `only ${marked.length} defaults marked`);
    const full = parseConfig(document, 'example');
    for (const path of marked) {
      const shown = at(full, path);
      const filled = at(parseConfig(without(document, path), 'example without the key'), path);
      assert.deepEqual(
        shown,
        filled,
        `${path.join('.')}: the example shows ${JSON.stringify(shown)}, the default is ${JSON.stringify(filled)}`,
      );
    }
  });

  it('marks as "# default" in its commented-out subscribers section only the schema’s defaults, and the section is valid', () => {
    // The section as a user uncomments it: the lines from `# subscribers:` on, their `# ` taken off.
    const lines = TEXT.split('\n');
    const from = lines.findIndex((line) => line.startsWith('# subscribers:'));
    assert.ok(from > 0, 'the example has a commented-out subscribers section');
    const section = lines
      .slice(from)
      .filter((line) => line.startsWith('#'))
      .map((line) => line.replace(/^# ?/, ''))
      .join('\n');
    const uncommented = { ...(document as object), ...(parse(section) as object) };
    const marked = markedDefaults(section);
    assert.ok(marked.length >= 7, `only ${marked.length} defaults marked`);
    const full = parseConfig(uncommented, 'example with subscribers');
    for (const path of marked) {
      const shown = at(full, path);
      const filled = at(parseConfig(without(uncommented, path), 'without the key'), path);
      assert.deepEqual(
        shown,
        filled,
        `${path.join('.')}: shows ${JSON.stringify(shown)}, default ${JSON.stringify(filled)}`,
      );
    }
  });
});
