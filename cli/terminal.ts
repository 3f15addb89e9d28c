/** What the command prints on a terminal: cloud strings shown, never acted on. */
import { printable, printableJson } from '../core/domain/text.ts';

export { printable, printableJson };

/** `text` of several lines (cpsync's own messages, one finding a line): each line made printable. */
export function printableLines(text: string): string {
  return text.split('\n').map(printable).join('\n');
}
