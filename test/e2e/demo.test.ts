/**
 * `npm run demo` as a new user runs it: to the end, showing exactly the three changes it makes, leaving
 * no process or file behind; and stopped by Ctrl-C midway, it cleans up the same.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const DEMO = fileURLToPath(new URL('../env/demo.ts', import.meta.url));
/** The environment variable that marks one demo's processes. */
const MARK = 'CPSYNC_DEMO_TEST_RUN';

/** Process ids whose command line includes `text`. */
async function processesOf(text: string): Promise<number[]> {
  return processesWhere((pid) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(text));
}

/**
 * Process ids that carry `mark` in their environment: every process a demo started (moto, the cpsync command,
 * anything they started) inherits it, and no other suite's processes have it.
 */
async function processesMarked(mark: string): Promise<number[]> {
  return processesWhere((pid) => readFileSync(`/proc/${pid}/environ`, 'utf8').includes(`${MARK}=${mark}\0`));
}

function processesWhere(test: (pid: string) => boolean): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry) && entry !== String(process.pid))
    .filter((pid) => {
      try {
        return test(pid);
      } catch {
        return false;
      }
    })
    .map(Number);
}

function runDemo(mark: string, onOutput?: (text: string, kill: () => void) => void) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, [DEMO], { env: { ...process.env, [MARK]: mark } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => {
      stdout += c.toString();
      onOutput?.(stdout, () => child.kill('SIGINT'));
    });
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('npm run demo', () => {
  it('runs to the end: dry run, sync, list, three changes announced exactly, a quiet re-sync; nothing left behind', async () => {
    const mark = randomUUID();
    const run = await runDemo(mark);
    assert.equal(run.code, 0, run.stderr);
    const out = run.stdout;
    assert.match(out, /\$ cpsync sync --dry-run/);
    assert.equal((out.match(/ClusterProfile Created/g) ?? []).length, 9, '7 at first, then ml, then ai');
    const following = out.indexOf('A cluster the cloud is still creating');
    const afterChange = out.slice(out.indexOf('Changing the clouds'), following);
    const changes = afterChange.split('\n').filter((l) => /ClusterProfile (Created|Updated|Deleted)/.test(l));
    assert.deepEqual(changes.map((l) => l.trim().split(' (')[0]).sort(), [
      'ClusterProfile Created: gke ml',
      'ClusterProfile Deleted: eks checkout',
      'ClusterProfile Updated: aks web',
    ]);
    assert.match(afterChange, /\[status\.version\.kubernetes\]/);
    assert.match(out, /0 created, 0 updated, 0 deleted, 7 unchanged/);
    // A cluster being created: written at once without endpoint, followed until ready.
    const followed = out.slice(following);
    assert.match(followed, /ClusterProfile Created: gke ai/);
    assert.match(
      followed,
      /following 1 cluster\(s\) the clouds are still changing: gke\/\S+\/ai \(GKE PROVISIONING\)/,
    );
    assert.match(followed, /ai: settled \(updated\) after \d+ s/);
    assert.match(followed, /ClusterProfile Updated: gke ai .*status\.accessProviders/);
    assert.match(out, /^Done in \d+ s\./m);
    const directory = /removing (\S+)/.exec(out)?.[1];
    assert.ok(directory, out);
    assert.equal(existsSync(directory), false);
    assert.deepEqual(await processesMarked(mark), [], 'no process of the demo is left (moto stopped)');
  });

  it('stopped by Ctrl-C midway, stops everything it started and removes its files', async () => {
    const mark = randomUUID();
    let killed = false;
    const run = await runDemo(mark, (text, kill) => {
      if (!killed && text.includes('$ cpsync list')) {
        killed = true;
        kill();
      }
    });
    assert.ok(killed, run.stdout);
    assert.equal(run.code, 130, run.stderr);
    const directory = /removing (\S+)/.exec(run.stdout)?.[1];
    assert.ok(directory, run.stdout);
    assert.equal(existsSync(directory), false);
    assert.deepEqual(await processesOf(directory), []);
    assert.deepEqual(await processesMarked(mark), [], 'no process of the demo is left (moto stopped)');
  });
});
