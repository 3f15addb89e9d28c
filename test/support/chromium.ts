/**
 * A page opened in real headless Chromium (the OS package; `CPSYNC_CHROMIUM` names another), driven over
 * the DevTools protocol (Node's own WebSocket): what the page logged, refused (CSP) or threw, values read
 * from its DOM, and how long it took to be ready. The browser and its profile directory go on `close()`.
 */
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { rmSync } from 'node:fs';
import { temporaryDirectory } from './tmp.ts';

const CHROMIUM = process.env.CPSYNC_CHROMIUM ?? 'chromium';

export interface OpenedPage {
  /** Console messages, log entries (CSP refusals among them) and uncaught exceptions, as text. */
  problems: string[];
  /** Milliseconds from navigation to `document.body.dataset.ready === 'true'`. */
  readyMillis: number;
  /** The value of a JavaScript expression evaluated in the page (DevTools evaluation, outside its CSP). */
  evaluate<T>(expression: string): Promise<T>;
  close(): Promise<void>;
}

/**
 * Headless Chromium with a profile directory of its own and nothing of this user's environment but PATH. Its
 * temporary folder is the profile directory too: Chromium puts its singleton socket in a folder of its own under
 * TMPDIR (`org.chromium.Chromium.*`), which a stopped browser leaves behind.
 */
function spawnChromium(profile: string, args: string[], options: SpawnOptions = {}): ChildProcess {
  return spawn(
    CHROMIUM,
    ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', `--user-data-dir=${profile}`, ...args],
    { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: profile, TMPDIR: profile }, ...options },
  );
}

const cannotRun = (error: Error) =>
  new Error(
    `cannot run ${CHROMIUM} (install the chromium package, or set CPSYNC_CHROMIUM): ${error.message}`,
  );

/** Runs headless Chromium on `url` with `args`; resolves to what it printed (the DOM after scripts with --dump-dom). */
export function runChromium(
  args: string[],
  url: string,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const profile = temporaryDirectory('cpsync-chromium-');
    const child = spawnChromium(profile, ['--enable-logging=stderr', '--v=0', ...args, url]);
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', (error) => reject(cannotRun(error)));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

interface Message {
  id?: number;
  method?: string;
  params?: Record<string, unknown>;
  result?: Record<string, unknown>;
  error?: { message: string };
  sessionId?: string;
}

/** Opens `url` at `width`×`height` and waits (up to `timeoutMillis`) for the page to say it is ready. */
export async function openPage(
  url: string,
  { width = 1280, height = 900, timeoutMillis = 120_000 } = {},
): Promise<OpenedPage> {
  const profile = temporaryDirectory('cpsync-chromium-');
  const child: ChildProcess = spawnChromium(profile, ['--remote-debugging-port=0', 'about:blank'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
  const close = async () => {
    child.kill('SIGKILL');
    await exited;
    rmSync(profile, { recursive: true, force: true });
  };
  try {
    const endpoint = await new Promise<string>((resolve, reject) => {
      let stderr = '';
      child.once('error', (error) => reject(cannotRun(error)));
      child.stderr!.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
        const found = /DevTools listening on (ws:\/\/\S+)/.exec(stderr);
        if (found) resolve(found[1]!);
      });
      child.once('close', () => reject(new Error(`chromium ended before it listened: ${stderr}`)));
    });
    const socket = new WebSocket(endpoint);
    await new Promise((resolve, reject) => {
      socket.addEventListener('open', resolve, { once: true });
      socket.addEventListener('error', reject, { once: true });
    });
    let next = 0;
    const waiting = new Map<number, { resolve: (m: Message) => void; reject: (e: Error) => void }>();
    const problems: string[] = [];
    socket.addEventListener('message', (event: MessageEvent) => {
      const message = JSON.parse(String(event.data)) as Message;
      if (message.id !== undefined) {
        const waiter = waiting.get(message.id);
        waiting.delete(message.id);
        if (message.error) waiter?.reject(new Error(message.error.message));
        else waiter?.resolve(message);
        return;
      }
      const p = message.params ?? {};
      if (message.method === 'Runtime.consoleAPICalled')
        problems.push(
          `console.${String(p.type)}: ${(p.args as Array<{ value?: unknown }>).map((a) => String(a.value)).join(' ')}`,
        );
      if (message.method === 'Log.entryAdded') {
        const entry = p.entry as { level: string; source: string; text: string };
        problems.push(`${entry.level} (${entry.source}): ${entry.text}`);
      }
      if (message.method === 'Runtime.exceptionThrown')
        problems.push(`uncaught: ${JSON.stringify((p.exceptionDetails as { text?: string }).text)}`);
    });
    const send = (method: string, params: Record<string, unknown> = {}, sessionId?: string) =>
      new Promise<Message>((resolve, reject) => {
        const id = ++next;
        waiting.set(id, { resolve, reject });
        socket.send(JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) }));
      });
    const target = (await send('Target.createTarget', { url: 'about:blank' })).result!.targetId;
    const session = (await send('Target.attachToTarget', { targetId: target, flatten: true })).result!
      .sessionId as string;
    const inPage = (method: string, params: Record<string, unknown> = {}) => send(method, params, session);
    await inPage('Runtime.enable');
    await inPage('Log.enable');
    await inPage('Page.enable');
    await inPage('Emulation.setDeviceMetricsOverride', {
      width,
      height,
      deviceScaleFactor: 1,
      mobile: false,
    });
    const evaluate = async <T>(expression: string): Promise<T> => {
      const answer = await inPage('Runtime.evaluate', { expression, returnByValue: true });
      return (answer.result!.result as { value: T }).value;
    };
    const started = performance.now();
    await inPage('Page.navigate', { url });
    for (;;) {
      if ((await evaluate<string | undefined>('document.body && document.body.dataset.ready')) === 'true')
        break;
      if (performance.now() - started > timeoutMillis)
        throw new Error(`the page was not ready within ${timeoutMillis} ms: ${problems.join('; ')}`);
      await new Promise((r) => setTimeout(r, 10));
    }
    const readyMillis = performance.now() - started;
    return {
      problems,
      readyMillis,
      evaluate,
      close: async () => {
        socket.close();
        await close();
      },
    };
  } catch (error) {
    await close();
    throw error;
  }
}
