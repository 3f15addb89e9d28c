/**
 * The subscriber's side of the contract: a validating parser for a whole EventBridge event (envelope and
 * detail). It reads as a subscriber of this major version must (events/VERSIONING.md): a detail of a later
 * minor version (fields it does not know) reads as long as the fields it does know are as the contract
 * says; a detail-type it does not know is refused by name (a rule's pattern should not have sent it); a detail of another major version is refused with a message that says so.
 *
 * `CpsyncEventSchema` is a zod schema, so it drops into Powertools' parser as it is:
 * `parser({ schema: CpsyncEventSchema })`; `CpsyncEventTextSchema` reads the JSON text of an SQS body.
 */
import AjvModule from 'ajv-draft-04';
import type { ValidateFunction } from 'ajv';
import { z } from 'zod';
import { DetailType, SCHEMA_MAJOR } from './detailTypes.ts';
import { DETAIL_SCHEMAS } from './schemas.ts';
import type { CpsyncEventBridgeEvent } from './types.ts';

const DETAIL_TYPES = Object.values(DetailType);

/**
 * A copy of `schema` as a tolerant reader applies it: objects may carry fields the schema does not name
 * (a later minor version may add optional ones); everything the schema does name is checked as written.
 */
export function tolerant<T>(schema: T): T {
  if (Array.isArray(schema)) return schema.map((item: unknown) => tolerant(item)) as T;
  if (schema === null || typeof schema !== 'object') return schema;
  const copy: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === 'additionalProperties' && value === false) continue;
    copy[key] = tolerant(value);
  }
  return copy as T;
}

type AjvClass = typeof AjvModule.default;
// The package is CommonJS; its class is the default export's default.
const Ajv: AjvClass = (AjvModule as unknown as { default: AjvClass }).default;

/** Compiles each detail-type's schema with the one Ajv set-up every reader of the contract uses. */
export function compileDetailSchemas(
  schemas: Readonly<Record<string, object>>,
): Map<string, ValidateFunction> {
  const ajv = new Ajv({ allErrors: true, strict: false });
  ajv.addFormat(
    'date-time',
    (value: string) => !Number.isNaN(Date.parse(value)) && /^\d{4}-\d{2}-\d{2}T/.test(value),
  );
  return new Map(Object.entries(schemas).map(([type, schema]) => [type, ajv.compile(schema)]));
}

let readers: Map<string, ValidateFunction> | undefined;
function reader(detailType: string): ValidateFunction | undefined {
  readers ??= compileDetailSchemas(
    Object.fromEntries(Object.entries(DETAIL_SCHEMAS).map(([type, schema]) => [type, tolerant(schema)])),
  );
  return readers.get(detailType);
}

/** Problems with a detail of `detailType`, each naming the field; empty when it reads. */
function detailProblems(detailType: string, detail: unknown): Array<{ path: string[]; message: string }> {
  if (detail === null || typeof detail !== 'object' || Array.isArray(detail))
    return [{ path: [], message: 'is not an object' }];
  const version = (detail as { schemaVersion?: unknown }).schemaVersion;
  if (typeof version !== 'string' || !/^\d+\.\d+$/.test(version))
    return [{ path: ['schemaVersion'], message: `is ${JSON.stringify(version)}, not a major.minor version` }];
  const major = Number(version.split('.')[0]);
  if (major !== SCHEMA_MAJOR)
    return [
      {
        path: ['schemaVersion'],
        message:
          `is ${version}: this reader takes schema ${SCHEMA_MAJOR}.x; ` +
          `a ${major}.x event needs the subscriber kit of cpsync's ${major}.x contract`,
      },
    ];
  const validate = reader(detailType)!;
  if (validate(detail)) return [];
  return (validate.errors ?? []).map((e) => ({
    path: e.instancePath.split('/').filter(Boolean),
    message:
      (e.message ?? 'is invalid') +
      (e.keyword === 'enum'
        ? ` (${(e.params as { allowedValues: unknown[] }).allowedValues.join(', ')})`
        : ''),
  }));
}

/**
 * A whole cpsync event as EventBridge delivers it (the shape of Powertools' `EventBridgeSchema`), its
 * detail checked against the contract of its detail-type. Parses to `CpsyncEventBridgeEvent`, a union
 * discriminated by `detail-type`.
 */
export const CpsyncEventSchema = z
  .object({
    version: z.string(),
    id: z.string(),
    source: z.string().min(1),
    account: z.string(),
    time: z.string().refine((value) => !Number.isNaN(Date.parse(value)), 'is not a date-time'),
    region: z.string(),
    resources: z.array(z.string()),
    'detail-type': z.enum(DETAIL_TYPES, {
      error: (issue) =>
        `is ${JSON.stringify(issue.input)}, not one cpsync publishes (${DETAIL_TYPES.join(', ')})`,
    }),
    detail: z.unknown(),
    'replay-name': z.string().optional(),
  })
  .superRefine((event, context) => {
    for (const problem of detailProblems(event['detail-type'], event.detail))
      context.addIssue({ code: 'custom', path: ['detail', ...problem.path], message: problem.message });
  })
  .transform((event) => event as unknown as CpsyncEventBridgeEvent);

/**
 * The same event as JSON text — an SQS message body from a rule with a queue target:
 * `parser({ schema: CpsyncEventTextSchema, envelope: SqsEnvelope })`.
 */
export const CpsyncEventTextSchema = z
  .string()
  .transform((text, context) => {
    try {
      return JSON.parse(text) as unknown;
    } catch (error) {
      context.addIssue({ code: 'custom', message: `is not JSON: ${(error as Error).message}` });
      return z.NEVER;
    }
  })
  .pipe(CpsyncEventSchema);

/** A cpsync event that cannot be read; `problems` name each field that is wrong. */
export class CpsyncEventError extends Error {
  override readonly name = 'CpsyncEventError';
  readonly problems: string[];
  constructor(problems: string[]) {
    super(`not a cpsync event this reader takes: ${problems.join('; ')}`);
    this.problems = problems;
  }
}

/** `issue.path` as a subscriber would write it: `detail.cluster.provider`, `detail.changes[0].field`. */
function pathText(path: PropertyKey[]): string {
  return path.reduce<string>(
    (text, key) =>
      typeof key === 'number' || /^\d+$/.test(String(key))
        ? `${text}[${String(key)}]`
        : text
          ? `${text}.${String(key)}`
          : String(key),
    '',
  );
}

/** `value` (an event object, or its JSON text) read as a cpsync event; throws `CpsyncEventError`. */
export function parseCpsyncEvent(value: unknown): CpsyncEventBridgeEvent {
  let input = value;
  if (typeof value === 'string') {
    try {
      input = JSON.parse(value);
    } catch (error) {
      throw new CpsyncEventError([`not JSON: ${(error as Error).message}`]);
    }
  }
  const result = CpsyncEventSchema.safeParse(input);
  if (result.success) return result.data;
  throw new CpsyncEventError(
    result.error.issues.map((issue) =>
      issue.path.length > 0 ? `${pathText(issue.path)} ${issue.message}` : issue.message,
    ),
  );
}

/** Narrows an event to its detail-type: `if (isEvent(event, 'ClusterProfile Created')) event.detail.profile`. */
export function isEvent<T extends DetailType>(
  event: CpsyncEventBridgeEvent,
  detailType: T,
): event is Extract<CpsyncEventBridgeEvent, { 'detail-type': T }> {
  return event['detail-type'] === detailType;
}
