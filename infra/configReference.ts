/**
 * The configuration reference (docs/reference/configuration.md), made from the configuration schema itself:
 * keys, types, enums and defaults from zod's JSON Schema of `configSchema`, each key's description from the
 * comment on its property in adapters/compose/config.ts (read with the TypeScript compiler API), and the
 * features from their registry. `npm run docs` writes it; test/unit/docs.test.ts fails when it differs.
 */
import { readFileSync } from 'node:fs';
import ts from 'typescript';
import { z } from 'zod';
import { configSchema } from '../adapters/compose/config.ts';
import { FEATURES } from '../core/domain/features.ts';
import { cell, code, defaultOf, rows, table, typeOf, type JsonSchema, type Row } from './schemaTables.ts';

/** The schema's source, relative to the repository's root. */
export const CONFIG_SOURCE = 'adapters/compose/config.ts';
/** The page, relative to the repository's root. */
export const REFERENCE_PAGE = 'docs/reference/configuration.md';

/** A comment's text: the markers gone, its lines one paragraph, `@default x` said in words. */
function commentText(raw: string): string {
  const text = raw.startsWith('//')
    ? raw.replace(/^\/\/\s?/, '')
    : raw
        .replace(/^\/\*\*?/, '')
        .replace(/\*\/$/, '')
        .split('\n')
        .map((line) => line.replace(/^\s*\*\s?/, ''))
        .join('\n');
  return text
    .replace(/@default\s+(\S.*?)\s*$/gm, '(default: $1)')
    .split(/\s*\n\s*/)
    .join(' ')
    .trim();
}

/** The comments written just above a node (a TSDoc block, or `//` lines), as one text. */
function leadingComment(node: ts.Node, text: string): string | undefined {
  const ranges = ts.getLeadingCommentRanges(text, node.getFullStart()) ?? [];
  const parts = ranges.map((range) => commentText(text.slice(range.pos, range.end))).filter(Boolean);
  return parts.length > 0 ? parts.join(' ') : undefined;
}

/**
 * Each property's description by its key path (`providers.eks.nodegroupsMaxAgeMinutes`; lists, unions and
 * maps add nothing to a path). The schema is built of top-level constants used inside one another
 * (`eks` in `providers`, `consumer` in `consumers`), so each constant's comments are found at its own
 * paths and then placed wherever `configSchema` uses it.
 */
function schemaDescriptions(source: string): Map<string, string> {
  const file = ts.createSourceFile(CONFIG_SOURCE, source, ts.ScriptTarget.Latest, true);
  const constants = new Map<string, { initializer: ts.Expression; comment?: string }>();
  for (const statement of file.statements) {
    if (!ts.isVariableStatement(statement)) continue;
    const comment = leadingComment(statement, source);
    for (const declaration of statement.declarationList.declarations)
      if (ts.isIdentifier(declaration.name) && declaration.initializer)
        constants.set(declaration.name.text, {
          initializer: declaration.initializer,
          ...(comment ? { comment } : {}),
        });
  }

  interface Found {
    comments: Array<{ path: string[]; text: string }>;
    uses: Array<{ path: string[]; name: string }>;
  }
  const found = new Map<string, Found>();
  const read = (name: string): Found => {
    const known = found.get(name);
    if (known) return known;
    const result: Found = { comments: [], uses: [] };
    found.set(name, result);
    const visit = (node: ts.Node, path: string[]): void => {
      // What a transform or refinement does is not the schema's shape.
      if (ts.isArrowFunction(node) || ts.isFunctionExpression(node)) return;
      if (ts.isPropertyAssignment(node) && (ts.isIdentifier(node.name) || ts.isStringLiteral(node.name))) {
        const inner = [...path, node.name.text];
        const comment = leadingComment(node, source);
        if (comment) result.comments.push({ path: inner, text: comment });
        visit(node.initializer, inner);
        return;
      }
      if (ts.isIdentifier(node) && constants.has(node.text) && node.text !== name) {
        result.uses.push({ path, name: node.text });
        return;
      }
      ts.forEachChild(node, (child) => visit(child, path));
    };
    visit(constants.get(name)!.initializer, []);
    return result;
  };

  const descriptions = new Map<string, string>();
  const place = (name: string, prefix: string[], seen: ReadonlySet<string>): void => {
    if (seen.has(name)) return;
    const { comments, uses } = read(name);
    for (const { path, text } of comments) {
      const key = [...prefix, ...path].join('.');
      if (!descriptions.has(key)) descriptions.set(key, text);
    }
    for (const use of uses) {
      const at = [...prefix, ...use.path];
      const comment = constants.get(use.name)?.comment;
      if (at.length > 0 && comment && !descriptions.has(at.join('.')))
        descriptions.set(at.join('.'), comment);
      place(use.name, at, new Set([...seen, name]));
    }
  };
  place('configSchema', [], new Set());
  return descriptions;
}

function featuresTable(): string[] {
  return [
    '| feature | maturity | default | writes | turning it off removes |',
    '| --- | --- | --- | --- | --- |',
    ...FEATURES.map(
      (f) =>
        `| ${code(f.name)} | ${f.maturity} | ${f.default ? 'on' : 'off'} | ${cell(f.writes)} | ${cell(f.removes)} |`,
    ),
  ];
}

/** The page, from the schema and the source it is written in. */
export function configReference(source: string = readFileSync(CONFIG_SOURCE, 'utf8')): string {
  const descriptions = schemaDescriptions(source);
  const schema = z.toJSONSchema(configSchema, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
  const lines = [
    '<!-- Generated by `npm run docs` (infra/docs.ts) from adapters/compose/config.ts. Do not edit: change the schema',
    '     or the comments on its properties, then run `npm run docs`. test/unit/docs.test.ts fails when this page is stale. -->',
    '',
    '# Configuration reference',
    '',
    'Every key of the configuration document, with its type, its default and what it means, as the schema',
    `([\`${CONFIG_SOURCE}\`](../../${CONFIG_SOURCE})) states them. How to use them: [Configuring](../configuring.md);`,
    'every option in one commented file: [`cpsync.example.yaml`](../../cpsync.example.yaml). A key marked',
    '*required* must be given when its section is; a key without a default is unset when left out. An',
    'unknown key is refused, naming it.',
  ];
  for (const [key, property] of Object.entries(schema.properties ?? {})) {
    lines.push('', `## \`${key}\``, '');
    const description = descriptions.get(key);
    const type = key === 'features' ? 'map of feature name → `on` or `off`' : typeOf(property);
    const fallback = defaultOf(property);
    lines.push(
      `${type.charAt(0).toUpperCase()}${type.slice(1)}${fallback ? `; default ${fallback}` : ''}.${description ? ` ${description}` : ''}`,
    );
    if (key === 'features') {
      lines.push(
        '',
        'Each feature is `on` or `off` (`true` and `false` are read too); a name not listed here is refused.',
        'The features, from their registry ([`core/domain/features.ts`](../../core/domain/features.ts)):',
        '',
        ...featuresTable(),
      );
      continue;
    }
    const found = new Map<string, Row>();
    rows(property, [key], descriptions, found);
    if (found.size > 0) lines.push('', ...table([...found.values()]));
  }
  return `${lines.join('\n')}\n`;
}
