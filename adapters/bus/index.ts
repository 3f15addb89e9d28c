/** Buses: Amazon EventBridge, or JSON lines (stdout or a file). */
export {
  entrySize,
  EventBridgeBus,
  MAX_ENTRIES_PER_CALL,
  MAX_RETRIES,
  type EventBridgeBusOptions,
} from './EventBridgeBus.ts';
export { jsonLine, JsonLinesFileBus, StreamBus } from './JsonLinesBus.ts';
