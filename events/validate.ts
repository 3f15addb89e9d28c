import type { ValidateFunction } from 'ajv';
import { compileDetailSchemas } from './parse.ts';
import { DETAIL_SCHEMAS } from './schemas.ts';

/**
 * The strict check of a detail against its detail-type's JSON Schema, as published: what cpsync writes
 * must be exactly the contract (no field it does not name). Subscribers read with `parseCpsyncEvent`.
 */
export class DetailValidator {
  readonly #validators: Map<string, ValidateFunction>;

  constructor(schemas: Readonly<Record<string, object>> = DETAIL_SCHEMAS) {
    this.#validators = compileDetailSchemas(schemas);
  }

  /** Errors of `detail` against the schema of `detailType`; empty when valid. */
  errors(detailType: string, detail: unknown): string[] {
    const validate = this.#validators.get(detailType);
    if (!validate)
      return [
        `unknown detail-type ${JSON.stringify(detailType)}; known: ${[...this.#validators.keys()].join(', ')}`,
      ];
    if (validate(detail)) return [];
    return (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? 'is invalid'}`);
  }
}
