import { rename, writeFile } from 'node:fs/promises';

/**
 * Writes a whole file or leaves the old one: the text goes to a temporary file of this process that
 * is then renamed over it, so a reader (or another process) never sees half a file.
 */
export async function replaceFile(path: string, text: string): Promise<void> {
  const temporary = `${path}.${process.pid}.tmp`;
  await writeFile(temporary, text, 'utf8');
  await rename(temporary, path);
}
