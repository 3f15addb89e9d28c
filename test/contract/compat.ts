/**
 * Whether a new JSON Schema (draft-04) still accepts every value an old one accepted: the changes that
 * would reject an event a subscriber of the old version could have received, each named by its path.
 * Written for the keywords the event schemas use; a keyword it cannot judge is reported, never passed.
 */
type Schema = Record<string, unknown>;

const JUDGED = new Set([
  '$schema',
  'id',
  'title',
  'description',
  '$ref',
  'definitions',
  'type',
  'enum',
  'required',
  'properties',
  'additionalProperties',
  'items',
  'pattern',
  'format',
  'minLength',
  'maxLength',
  'minItems',
  'maxItems',
  'minimum',
  'maximum',
]);

function resolve(schema: Schema, root: Schema): Schema {
  let current = schema;
  for (let hops = 0; typeof current.$ref === 'string' && hops < 10; hops++) {
    const path = current.$ref.replace(/^#\//, '').split('/');
    current = path.reduce<Schema>((node, key) => (node[key] ?? {}) as Schema, root);
  }
  return current;
}

function types(schema: Schema): Set<string> | undefined {
  if (schema.type === undefined) return undefined;
  return new Set(Array.isArray(schema.type) ? (schema.type as string[]) : [schema.type as string]);
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

export function breakingChanges(
  before: Schema,
  after: Schema,
  path = '',
  roots: { before: Schema; after: Schema } = { before, after },
): string[] {
  const old = resolve(before, roots.before);
  const now = resolve(after, roots.after);
  const at = path || '/';
  const problems: string[] = [];
  for (const key of Object.keys(now))
    if (!JUDGED.has(key)) problems.push(`${at}: keyword ${key} cannot be judged; review the change by hand`);

  const oldTypes = types(old);
  const newTypes = types(now);
  if (newTypes) {
    const lost = oldTypes
      ? [...oldTypes].filter((t) => !newTypes.has(t) && !(t === 'integer' && newTypes.has('number')))
      : ['any type'];
    if (lost.length > 0) problems.push(`${at}: no longer accepts ${lost.join(', ')}`);
  }
  if (Array.isArray(now.enum)) {
    const allowed = now.enum as unknown[];
    const lost = Array.isArray(old.enum)
      ? (old.enum as unknown[]).filter((v) => !allowed.some((a) => same(a, v)))
      : ['values outside the new enum'];
    if (lost.length > 0)
      problems.push(`${at}: no longer accepts ${lost.map((v) => JSON.stringify(v)).join(', ')}`);
  }
  const oldRequired = new Set((old.required as string[] | undefined) ?? []);
  for (const field of (now.required as string[] | undefined) ?? [])
    if (!oldRequired.has(field)) problems.push(`${at}: ${field} is newly required`);

  for (const [keyword, tighter] of [
    ['minLength', (a: number, b: number) => b > a],
    ['minItems', (a: number, b: number) => b > a],
    ['minimum', (a: number, b: number) => b > a],
    ['maxLength', (a: number, b: number) => b < a],
    ['maxItems', (a: number, b: number) => b < a],
    ['maximum', (a: number, b: number) => b < a],
  ] as const) {
    const b = now[keyword] as number | undefined;
    if (b === undefined) continue;
    const a = old[keyword] as number | undefined;
    if (a === undefined || tighter(a, b))
      problems.push(`${at}: ${keyword} tightened to ${b} (was ${a ?? 'unset'})`);
  }
  for (const keyword of ['pattern', 'format'] as const)
    if (now[keyword] !== undefined && !same(now[keyword], old[keyword]))
      problems.push(`${at}: ${keyword} ${JSON.stringify(now[keyword])} added or changed`);

  const oldProps = (old.properties ?? {}) as Record<string, Schema>;
  const newProps = (now.properties ?? {}) as Record<string, Schema>;
  const newExtra = now.additionalProperties as Schema | boolean | undefined;
  const oldExtra = old.additionalProperties as Schema | boolean | undefined;
  for (const [name, schema] of Object.entries(oldProps)) {
    const child = `${path}/${name}`;
    if (newProps[name]) problems.push(...breakingChanges(schema, newProps[name], child, roots));
    else if (newExtra === false) problems.push(`${child}: removed (and other fields are refused)`);
    else if (newExtra && typeof newExtra === 'object')
      problems.push(...breakingChanges(schema, newExtra, child, roots));
  }
  for (const [name, schema] of Object.entries(newProps)) {
    if (oldProps[name] || oldExtra === false) continue;
    // The old schema took any value (or the value its additionalProperties allowed) under this name.
    const oldAllowed = oldExtra && typeof oldExtra === 'object' ? oldExtra : {};
    problems.push(...breakingChanges(oldAllowed, schema, `${path}/${name}`, roots));
  }
  if (newExtra === false && oldExtra !== false)
    problems.push(`${at}: fields it does not name are now refused`);
  else if (newExtra && typeof newExtra === 'object' && oldExtra !== false)
    problems.push(
      ...breakingChanges(
        oldExtra && typeof oldExtra === 'object' ? oldExtra : {},
        newExtra,
        `${path}/*`,
        roots,
      ),
    );

  if (now.items && typeof now.items === 'object')
    problems.push(...breakingChanges((old.items ?? {}) as Schema, now.items as Schema, `${path}[]`, roots));
  return problems;
}
