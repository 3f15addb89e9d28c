import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Outbox } from '../../core/ports.ts';
import type { ChangeIntent } from '../../core/intents.ts';
import type { CpsyncEvent } from '../../events/types.ts';

const EVENT_ID = /^[0-9a-f-]{36}$/;
const INTENT_ID = /^[0-9a-f]{32}$/;
const INTENTS = 'intents';

/** A file's text, or undefined when another run removed it in the meantime. */
async function readIfThere(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/** Pending events as one JSON file each in a directory; written atomically, removed once published. */
export class FileOutbox implements Outbox {
  readonly #directory: string;

  constructor(directory: string) {
    this.#directory = directory;
  }

  async add(events: readonly CpsyncEvent[]): Promise<void> {
    if (events.length === 0) return;
    await mkdir(this.#directory, { recursive: true });
    for (const event of events) {
      const id = event.detail.eventId;
      if (!EVENT_ID.test(id))
        throw new Error(`outbox: event id ${JSON.stringify(id)} is not a cpsync event id`);
      const path = join(this.#directory, `${id}.json`);
      await writeFile(`${path}.tmp`, JSON.stringify(event), 'utf8');
      await rename(`${path}.tmp`, path);
    }
  }

  async pending(): Promise<CpsyncEvent[]> {
    let names: string[];
    try {
      names = await readdir(this.#directory);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw error;
    }
    const events: CpsyncEvent[] = [];
    for (const name of names.filter((n) => n.endsWith('.json')).sort()) {
      const text = await readIfThere(join(this.#directory, name));
      if (text !== undefined) events.push(JSON.parse(text) as CpsyncEvent);
    }
    return events.sort((a, b) => a.time.localeCompare(b.time));
  }

  async remove(eventIds: readonly string[]): Promise<void> {
    for (const id of eventIds)
      if (EVENT_ID.test(id)) await rm(join(this.#directory, `${id}.json`), { force: true });
  }

  async addIntents(intents: readonly ChangeIntent[]): Promise<void> {
    if (intents.length === 0) return;
    const directory = join(this.#directory, INTENTS);
    await mkdir(directory, { recursive: true });
    for (const intent of intents) {
      if (!INTENT_ID.test(intent.id))
        throw new Error(`outbox: intent id ${JSON.stringify(intent.id)} is not a cpsync intent id`);
      const path = join(directory, `${intent.id}.json`);
      await writeFile(`${path}.tmp`, JSON.stringify(intent), 'utf8');
      await rename(`${path}.tmp`, path);
    }
  }

  async intents(): Promise<ChangeIntent[]> {
    const directory = join(this.#directory, INTENTS);
    let names: string[];
    try {
      names = await readdir(directory);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw error;
    }
    const intents: ChangeIntent[] = [];
    for (const name of names.filter((n) => n.endsWith('.json')).sort()) {
      const text = await readIfThere(join(directory, name));
      if (text !== undefined) intents.push(JSON.parse(text) as ChangeIntent);
    }
    return intents;
  }

  async removeIntents(ids: readonly string[]): Promise<void> {
    for (const id of ids)
      if (INTENT_ID.test(id)) await rm(join(this.#directory, INTENTS, `${id}.json`), { force: true });
  }
}
