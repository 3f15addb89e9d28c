/**
 * The string a CEL expression is, when it is a string literal alone (single-quoted with no escape, or double-quoted
 * as JSON writes it): how an admission policy's variable cpsync sets to a value (its identity, its manager) is read
 * back. Undefined for any other expression.
 */
export function celLiteral(expression: string | undefined): string | undefined {
  const text = expression?.trim();
  if (!text) return undefined;
  const single = /^'([^'\\]*)'$/.exec(text);
  if (single) return single[1];
  if (!/^"(?:[^"\\\p{Cc}]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"$/u.test(text)) return undefined;
  return JSON.parse(text) as string;
}

/** `text` as a CEL string literal: single-quoted as the shipped file writes it, escaped when it must be. */
export function celString(text: string): string {
  return /^[^'\\\p{Cc}]*$/u.test(text) ? `'${text}'` : JSON.stringify(text);
}
