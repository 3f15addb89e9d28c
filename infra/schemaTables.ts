/**
 * Markdown tables of a JSON Schema's keys (type, default, description), for the reference pages `npm run docs`
 * writes (infra/docs.ts).
 */

export interface JsonSchema {
  description?: string;
  $ref?: string;
  type?: string;
  const?: unknown;
  enum?: unknown[];
  default?: unknown;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: JsonSchema | boolean;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  pattern?: string;
  format?: string;
}

export const code = (value: string) => (value.includes('`') ? `\`\` ${value} \`\`` : `\`${value}\``);
/** A table cell: no line breaks, and no `|` that would end the cell. */
export const cell = (text: string) => text.replace(/\s*\n\s*/g, ' ').replace(/\|/g, '\\|');

function bounds(low: number | undefined, high: number | undefined, unit: string): string {
  if (low === 1 && high === undefined) return ', non-empty';
  if (low !== undefined && high !== undefined) return `, ${low}–${high}${unit}`;
  if (low !== undefined) return `, at least ${low}${unit}`;
  if (high !== undefined) return `, at most ${high}${unit}`;
  return '';
}

/** One form of a union: an object form by its keys (`{ kubeconfig, context? }`), any other by its type. */
function formOf(schema: JsonSchema): string {
  if (schema.type !== 'object' || !schema.properties) return typeOf(schema);
  // A long form reads better by its rows than by its keys.
  if (Object.keys(schema.properties).length > 4) return 'object';
  const keys = Object.keys(schema.properties).map((key) =>
    schema.required?.includes(key) ? key : `${key}?`,
  );
  return code(`{ ${keys.join(', ')} }`);
}

/** A schema's type in words: `integer, 1–64`, `list of string`, `eks`, `gke` or `aks`. */
export function typeOf(schema: JsonSchema): string {
  if (schema.const !== undefined) return code(JSON.stringify(schema.const));
  if (schema.enum) return schema.enum.map((value) => code(String(value))).join(', ');
  if (schema.anyOf) return schema.anyOf.map(formOf).join(' or ');
  switch (schema.type) {
    case 'string': {
      const pattern =
        schema.pattern && schema.format !== 'starts_with' && schema.pattern.length <= 48
          ? `, matching ${code(schema.pattern)}`
          : '';
      const prefix =
        schema.format === 'starts_with' ? `, starting ${code(schema.pattern!.slice(1, -2))}` : '';
      const format = schema.format && schema.format !== 'starts_with' ? ` (${schema.format})` : '';
      return `string${format}${bounds(schema.minLength, schema.maxLength, ' characters')}${prefix}${pattern}`;
    }
    case 'integer':
    case 'number': {
      const low = schema.minimum ?? schema.exclusiveMinimum;
      const above = schema.exclusiveMinimum !== undefined ? `, above ${schema.exclusiveMinimum}` : '';
      const range = above
        ? `${above}${bounds(undefined, schema.maximum, '')}`
        : bounds(low, schema.maximum, '');
      return `${schema.type}${range}`;
    }
    case 'boolean':
      return 'boolean';
    case 'array':
      return `list of ${schema.items ? typeOf(schema.items) : 'any'}${bounds(schema.minItems, schema.maxItems, ' items')}`;
    case 'object':
      if (schema.properties) return 'object';
      if (typeof schema.additionalProperties === 'object')
        return `map of name → ${typeOf(schema.additionalProperties) || 'any'}`;
      return 'object';
    default:
      return 'any';
  }
}

export function defaultOf(schema: JsonSchema): string {
  if (schema.default === undefined) return '';
  if (
    typeof schema.default === 'object' &&
    schema.default !== null &&
    Object.keys(schema.default).length === 0
  )
    return Array.isArray(schema.default) ? code('[]') : '';
  return code(
    typeof schema.default === 'string' && schema.default !== ''
      ? schema.default
      : JSON.stringify(schema.default),
  );
}

export interface Row {
  path: string;
  type: string;
  default: string;
  description: string;
}

/**
 * A row per key under `schema` (forms of a union each add theirs; a key two forms share is one row), described by
 * `descriptions` (by key path) or the schema's own `description`; the keys under a path in `leaves` are left out.
 */
export function rows(
  schema: JsonSchema,
  path: string[],
  descriptions: ReadonlyMap<string, string>,
  out: Map<string, Row>,
  leaves: ReadonlySet<string> = new Set(),
): void {
  if (leaves.has(path.join('.'))) return;
  for (const form of schema.anyOf ?? []) rows(form, path, descriptions, out, leaves);
  if (schema.items) rows(schema.items, path, descriptions, out, leaves);
  if (typeof schema.additionalProperties === 'object')
    rows(schema.additionalProperties, path, descriptions, out, leaves);
  for (const [key, property] of Object.entries(schema.properties ?? {})) {
    const at = [...path, key];
    const name = at.join('.');
    const required = schema.required?.includes(key) && property.default === undefined ? 'required; ' : '';
    const row: Row = {
      path: name,
      type: `${required}${typeOf(property)}`,
      default: defaultOf(property),
      description: descriptions.get(name) ?? property.description ?? '',
    };
    const before = out.get(name);
    if (!before) out.set(name, row);
    else if (before.type !== row.type) before.type = `${before.type}; or ${row.type}`;
    rows(property, at, descriptions, out, leaves);
  }
}

/** The rows as a Markdown table (without the default column when `defaults` is false). */
export function table(list: Row[], defaults = true): string[] {
  const columns = (row: Row) =>
    defaults ? [row.type, row.default, row.description] : [row.type, row.description];
  return [
    defaults ? '| key | type | default | description |' : '| field | type | description |',
    defaults ? '| --- | --- | --- | --- |' : '| --- | --- | --- |',
    ...list.map((row) => `| ${[code(row.path), ...columns(row).map(cell)].join(' | ')} |`),
  ];
}
