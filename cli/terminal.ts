/** What the command prints on a terminal: cloud strings shown, never acted on. */

/**
 * `text` safe to print on a terminal: control characters (C0, DEL, C1: escape sequences, carriage returns,
 * newlines, title and hyperlink sequences), bidirectional overrides and zero-width characters shown as
 * `\u{…}` instead of acted on (or hidden).
 */
export function printable(text: string): string {
  return text.replace(
    // eslint-disable-next-line no-control-regex
    /[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]/g,
    (c) => `\\u{${c.codePointAt(0)!.toString(16)}}`,
  );
}

/** `text` of several lines (cpsync's own messages, one finding a line): each line made printable. */
export function printableLines(text: string): string {
  return text.split('\n').map(printable).join('\n');
}
