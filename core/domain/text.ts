/** Cloud strings as people see them (a terminal, a chat message, a report): shown, never acted on. */

/**
 * Characters that act instead of showing, or show as something they are not: controls (C0, DEL, C1: escape
 * sequences, carriage returns, newlines, title and hyperlink sequences), format characters (bidirectional
 * marks, overrides and isolates, the Arabic letter mark, the soft hyphen, zero-width characters, tag
 * characters, the byte order mark…), the line and paragraph separators, and lone surrogates.
 */
const ACTING = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/gu;

/**
 * `value`, a URL as someone gave it (parsed or not), with whatever stands between its scheme and its last `@` shown
 * as `***`: a user name and password, however spelled (`@`, `/`, `?`, `#` or `:` in them included). Where the rest
 * holds an `@` too, more is hidden than the user name and password: never less.
 */
export function withoutUserinfo(value: string): string {
  const at = value.lastIndexOf('@');
  if (at < 0) return value;
  const scheme = /^[a-z][a-z0-9+.-]*:\/\//i.exec(value)?.[0] ?? '';
  return `${scheme}***${value.slice(at)}`;
}

/** `text` with every character that acts instead of showing (`ACTING`) written as `\u{…}`. */
export function printable(text: string): string {
  return text.replace(ACTING, (c) => `\\u{${c.codePointAt(0)!.toString(16)}}`);
}

/** `text` as JSON writes a string's code units: `\uXXXX` each (an astral character as its surrogate pair). */
function jsonEscapes(text: string): string {
  let escaped = '';
  for (let i = 0; i < text.length; i++) escaped += `\\u${text.charCodeAt(i).toString(16).padStart(4, '0')}`;
  return escaped;
}

/**
 * `value` as JSON (`JSON.stringify`'s, indented by `indent`) in which no character acts: the controls, format
 * characters and separators JSON allows raw in a string are written as `\u` escapes too. It parses back to
 * the same value.
 */
export function printableJson(value: unknown, indent?: number): string {
  // JSON.stringify escapes C0 controls and lone surrogates itself; outside strings it writes only ASCII.
  return JSON.stringify(value, null, indent).replace(/[\u007f-\u009f\p{Cf}\p{Zl}\p{Zp}]/gu, jsonEscapes);
}

/**
 * The longest prefix of `text` of at most `max` UTF-16 code units that does not end inside a surrogate pair:
 * a cut never leaves half a character.
 */
export function cut(text: string, max: number): string {
  if (text.length <= max) return text;
  const end = Math.max(0, Math.floor(max));
  const last = text.charCodeAt(end - 1);
  const next = text.charCodeAt(end);
  const splitsPair = last >= 0xd800 && last <= 0xdbff && next >= 0xdc00 && next <= 0xdfff;
  return text.slice(0, splitsPair ? end - 1 : end);
}
