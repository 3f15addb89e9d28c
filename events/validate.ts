import AjvModule from 'ajv-draft-04';
import type { ValidateFunction } from 'ajv';
import { DetailType } from './detailTypes.ts';
import { DETAIL_SCHEMAS } from './schemas.ts';

/** Subscriber helper: checks a detail against its detail-type's JSON Schema. */
export class DetailValidator {
  readonly #validators = new Map<string, ValidateFunction>();

  constructor() {
    // The package is CommonJS; its class is the default export's default.
    type AjvClass = typeof AjvModule.default;
    const Ajv: AjvClass = (AjvModule as unknown as { default: AjvClass }).default;
    const ajv = new Ajv({ allErrors: true, strict: false });
    ajv.addFormat(
      'date-time',
      (value: string) => !Number.isNaN(Date.parse(value)) && /^\d{4}-\d{2}-\d{2}T/.test(value),
    );
    for (const [type, schema] of Object.entries(DETAIL_SCHEMAS))
      this.#validators.set(type, ajv.compile(schema));
  }

  /** Errors of `detail` against the schema of `detailType`; empty when valid. */
  errors(detailType: string, detail: unknown): string[] {
    const validate = this.#validators.get(detailType);
    if (!validate)
      return [
        `unknown detail-type ${JSON.stringify(detailType)}; known: ${Object.values(DetailType).join(', ')}`,
      ];
    if (validate(detail)) return [];
    return (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? 'is invalid'}`);
  }
}
