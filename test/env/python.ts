/**
 * The project-local Python virtualenv (`.venv`) with the tools in `test/env/requirements.txt`,
 * created on first use and re-installed when that file changes.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const VENV = join(ROOT, '.venv');
const REQUIREMENTS = join(ROOT, 'test/env/requirements.txt');

function run(command: string, args: string[]): void {
  const result = spawnSync(command, args, { stdio: ['ignore', 'inherit', 'inherit'] });
  if (result.error) throw new Error(`cannot run ${command}: ${result.error.message}`);
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} failed (exit ${result.status})`);
}

/** Path of a program installed in the virtualenv, installing the requirements first if needed. */
export function venvBin(program: string, log: (line: string) => void = () => {}): string {
  const stamp = join(VENV, '.requirements.sha256');
  const wanted = createHash('sha256').update(readFileSync(REQUIREMENTS)).digest('hex');
  if (!existsSync(stamp) || readFileSync(stamp, 'utf8') !== wanted) {
    log('installing test tools into .venv (once)');
    if (!existsSync(join(VENV, 'bin', 'python'))) run(process.env.PYTHON ?? 'python3', ['-m', 'venv', VENV]);
    run(join(VENV, 'bin', 'pip'), ['install', '--quiet', '--disable-pip-version-check', '-r', REQUIREMENTS]);
    writeFileSync(stamp, wanted);
  }
  return join(VENV, 'bin', program);
}
