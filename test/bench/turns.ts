/**
 * Measured processes that take turns: each way of doing a thing runs in a fresh process of its own (its own JIT,
 * connections and caches), `rounds` times, the order swapped every round so neither always runs first.
 */
import { fork } from 'node:child_process';

/** Each way's figures, one per round: what its process sent before exiting 0. */
export async function takingTurns<Way extends string, Measured>(
  script: string,
  ways: readonly [Way, Way],
  rounds: number,
  args: (way: Way, round: number) => string[],
): Promise<Map<Way, Measured[]>> {
  const results = new Map<Way, Measured[]>(ways.map((way) => [way, []]));
  for (let round = 0; round < rounds; round++)
    for (const way of round % 2 ? [ways[1], ways[0]] : ways) {
      const measured = await new Promise<Measured>((done, fail) => {
        const worker = fork(script, ['child', ...args(way, round)]);
        worker.on('message', (message) => done(message as Measured));
        worker.on('exit', (code) =>
          code === 0 ? undefined : fail(new Error(`the measured process exited ${code}`)),
        );
      });
      results.get(way)!.push(measured);
    }
  return results;
}

/** The middle value (the upper of the two middle ones for an even count). */
export const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** Rounds' figures as a turn-taking table gives them: the median, then the range in brackets. */
export const medianAndRange = (values: number[], digits: number, unit = '') =>
  `${median(values).toFixed(digits)}${unit} (${Math.min(...values).toFixed(digits)}–${Math.max(...values).toFixed(digits)})`;

/**
 * A turn-taking bench's section: its title, what it measured, and a table with a row per way (its label, then the
 * cells made of its rounds' figures).
 */
export function sayTurns<Way extends string, Measured>(
  say: (line?: string) => void,
  section: {
    title: string;
    text: string;
    columns: string[];
    labels: Record<Way, string>;
    cells: (runs: Measured[]) => string[];
  },
  results: Map<Way, Measured[]>,
): void {
  say(`## ${section.title}`);
  say('');
  say(section.text);
  say('');
  say(`| ${section.columns.join(' | ')} |`);
  say(`| ${section.columns.map(() => '---').join(' | ')} |`);
  for (const [way, runs] of results) say(`| ${[section.labels[way], ...section.cells(runs)].join(' | ')} |`);
  say('');
}
