/**
 * Lenient readers for cloud payloads: SDKs type what they return, but a cloud (or a proxy, or an
 * emulator) can still send something else. Mappers read through these and never throw; what is
 * missing is left out, and the core then refuses a cluster without its essentials by name.
 */

export function str(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return undefined;
}

export function num(value: unknown): number | undefined {
  if (typeof value === 'number' && Number.isFinite(value)) return value;
  if (typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value)))
    return Number(value);
  return undefined;
}

export function arr(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

export function obj(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};
}

/**
 * A string-to-string map: entries whose values are not strings are dropped. Every key is an own entry, even
 * one spelled like a prototype's (`__proto__`, which an assignment would not keep).
 */
export function strings(value: unknown): Record<string, string> {
  return Object.fromEntries(
    Object.entries(obj(value)).flatMap(([key, entry]): Array<[string, string]> => {
      const text = str(entry);
      return text === undefined ? [] : [[key, text]];
    }),
  );
}

/** An ISO-8601 time from a Date or a string, when it is one. */
export function isoTime(value: unknown): string | undefined {
  const date = value instanceof Date ? value : typeof value === 'string' ? new Date(value) : undefined;
  return date && !Number.isNaN(date.getTime()) ? date.toISOString() : undefined;
}
