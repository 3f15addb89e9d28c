import { PROPERTY_VALUE_MAX_LENGTH } from './constants.ts';

const ELLIPSIS = '…';

/** A property value within the CRD's 1..1024 characters, cut with an ellipsis when longer. */
export function fitValue(value: string): string {
  if (value.length <= PROPERTY_VALUE_MAX_LENGTH) return value;
  return value.slice(0, PROPERTY_VALUE_MAX_LENGTH - ELLIPSIS.length) + ELLIPSIS;
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
