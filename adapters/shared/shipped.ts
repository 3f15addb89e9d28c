/** Files cpsync ships beside its code (manifests), read the same way from the bundle and from the sources. */
import { readFileSync } from 'node:fs';

/**
 * A shipped file's text. The bundled command carries it (esbuild imports it as text: `bundled` must be a
 * static `import(…, { with: { type: 'text' } })`); run from the sources, where Node imports no text, it is read
 * from `file` instead.
 */
export async function shippedText(bundled: () => Promise<{ default: string }>, file: URL): Promise<string> {
  try {
    return (await bundled()).default;
  } catch {
    return readFileSync(file, 'utf8');
  }
}
