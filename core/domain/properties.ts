import { PROPERTY_VALUE_MAX_LENGTH } from './constants.ts';

const ELLIPSIS = '…';

/**
 * `value` within `max` characters as the API server counts them (code points, not UTF-16 units), cut with
 * an ellipsis when longer — never inside a character (half a surrogate pair is refused by the hub).
 */
export function fitText(value: string, max: number): string {
  // UTF-16 length bounds the code point count: most values need no split at all.
  if (value.length <= max) return value;
  const characters = Array.from(value);
  if (characters.length <= max) return value;
  return characters.slice(0, max - 1).join('') + ELLIPSIS;
}

/** A property value within the CRD's 1..1024 characters, cut with an ellipsis when longer. */
export function fitValue(value: string): string {
  return fitText(value, PROPERTY_VALUE_MAX_LENGTH);
}

/**
 * The longest prefix of `values` whose JSON array fits in one property value, and how many were left
 * out. The result is always valid JSON, so readers can parse it whatever was cut.
 */
export function fitJsonArray(values: readonly string[]): { json: string; omitted: number } {
  const kept: string[] = [];
  let length = 2; // []
  for (const value of values) {
    const encoded = JSON.stringify(value);
    const added = encoded.length + (kept.length > 0 ? 1 : 0);
    if (length + added > PROPERTY_VALUE_MAX_LENGTH) break;
    kept.push(value);
    length += added;
  }
  return { json: JSON.stringify(kept), omitted: values.length - kept.length };
}

/** Sorted distinct non-empty values. */
export function distinctSorted(values: readonly string[]): string[] {
  return [...new Set(values.map((value) => value.trim()).filter(Boolean))].sort();
}
