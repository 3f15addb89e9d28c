/** The event contract: detail-types, types, JSON Schemas and the validator. */
export {
  DEFAULT_SOURCE,
  DetailType,
  MAX_DETAIL_BYTES,
  PUT_EVENTS_MAX_BYTES,
  SCHEMA_VERSION,
} from './detailTypes.ts';
export { DETAIL_SCHEMAS } from './schemas.ts';
export type * from './types.ts';
export { DetailValidator } from './validate.ts';
