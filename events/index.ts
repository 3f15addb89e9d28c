/**
 * The event contract and the subscriber kit: detail-types, types, JSON Schemas, the validating parser
 * and typed EventBridge pattern builders. Importable as `cpsync/events`.
 */
export {
  DEFAULT_SOURCE,
  DetailType,
  MAX_DETAIL_BYTES,
  PUT_EVENTS_MAX_BYTES,
  SCHEMA_MAJOR,
  SCHEMA_VERSION,
} from './detailTypes.ts';
export {
  CpsyncEventError,
  CpsyncEventSchema,
  CpsyncEventTextSchema,
  isEvent,
  parseCpsyncEvent,
} from './parse.ts';
export { patterns } from './patterns.ts';
export type * from './patterns.ts';
export { DETAIL_SCHEMAS } from './schemas.ts';
export type * from './types.ts';
export { DetailValidator } from './validate.ts';
