/** Cloud strings as people see them (a terminal, a chat message, a report): shown, never acted on. */

/**
 * `text` with every character that acts instead of showing — control characters (C0, DEL, C1: escape
 * sequences, carriage returns, newlines, title and hyperlink sequences), bidirectional overrides and
 * isolates, zero-width characters — written as `\u{…}`.
 */
export function printable(text: string): string {
  return text.replace(
    // eslint-disable-next-line no-control-regex
    /[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]/g,
    (c) => `\\u{${c.codePointAt(0)!.toString(16)}}`,
  );
}
