/**
 * Cloud strings are data wherever the CLI shows them: a cluster whose name, version, tag and health message
 * hold controls (C0, C1), format characters (bidi overrides, the Arabic letter mark, soft hyphens, zero-width
 * and tag characters, the byte order mark), line and paragraph separators and a lone surrogate, synced by the
 * real CLI into the file hub (events as JSON lines on stdout) and listed as a table, JSON, YAML, a summary and
 * an HTML report: none of those characters comes out raw, and the JSON and YAML read back to the hub's strings.
 */
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parse, stringify } from 'yaml';
import { FileHub } from '../../adapters/hub/FileHub.ts';
import { listRow } from '../../cli/format.ts';
import { GCP_PROJECT, gkeCluster, startEmulators, type Emulators } from '../env/emulators.ts';
import { hasStackTrace, runCli, type CliRun } from '../support/cli.ts';
import { temporaryDirectory } from '../support/tmp.ts';

/** Every character class that acts instead of showing, and a lone surrogate. */
const HOSTILE =
  '\u001b]0;title\u0007\u001b[2J\r\nforged line\u009b31m\u202egnp.exe\u200b\u2066\u2028\u2029\u061c\u00ad\u{e0041}\ufeff\ud800!';
/** What must never be in the output: those characters raw (a newline only ends a line), or a lone surrogate written as U+FFFD. */
const RAW = /(?!\n)[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}\ufffd]/u;

describe('shown text: the CLI shows cloud strings as text on every output (file hub, stdout bus)', () => {
  let emulators: Emulators;
  let directory: string;
  let config: string;
  const run = async (...args: string[]): Promise<CliRun> => {
    const result = await runCli([...args, '--config', config], { cwd: directory, env: emulators.env });
    assert.ok(!hasStackTrace(result.stderr), result.stderr);
    return result;
  };
  const assertShownAsText = (what: string, text: string) => {
    const raw = RAW.exec(text);
    assert.equal(raw, null, `${what}: U+${raw?.[0].codePointAt(0)?.toString(16)} raw at ${raw?.index}`);
    assert.ok(!text.split('\n').some((line) => line.startsWith('forged line')), `${what}: no forged line`);
  };

  before(async () => {
    emulators = await startEmulators({ directory: temporaryDirectory('cpsync-shown-') });
    emulators.gke.clusters.set(GCP_PROJECT, [
      gkeCluster(`edge${HOSTILE}`, 'europe-west1-c', {
        currentMasterVersion: `1.31${HOSTILE}`,
        resourceLabels: { team: `data${HOSTILE}` },
        // Degraded, so that the summary and the report list it with the cloud's message.
        status: 6,
        conditions: [{ code: 'X', message: `broken${HOSTILE}` }],
      }),
    ]);
    directory = join(emulators.directory, 'shown');
    mkdirSync(directory, { recursive: true });
    const document = parse(readFileSync(emulators.configPath, 'utf8')) as Record<string, unknown>;
    delete document.bus;
    document.hub = { directory: join(directory, 'inventory') };
    document.outbox = { directory: join(directory, 'outbox') };
    document.inventory = { namespace: 'shown', tagAllowList: ['team'] };
    config = join(directory, 'cpsync.yaml');
    writeFileSync(config, stringify(document));
  });
  after(async () => emulators?.stop());

  it('syncs, plans and lists such a cluster with none of its characters raw, and JSON and YAML read back to the hub’s strings', async () => {
    const dryRun = await run('sync', '--provider', 'gke', '--dry-run');
    assert.equal(dryRun.code, 0, dryRun.stderr);
    assertShownAsText('sync --dry-run', dryRun.stdout + dryRun.stderr);
    assert.match(dryRun.stdout, /\\u\{202e\}gnp\.exe/, 'the plan shows the name escaped');
    const plannedJson = await run('sync', '--provider', 'gke', '--dry-run', '-o', 'json');
    assertShownAsText('sync --dry-run -o json', plannedJson.stdout + plannedJson.stderr);
    const planned = JSON.parse(plannedJson.stdout) as Array<{ displayName: string }>;
    assert.deepEqual(
      planned.map((line) => line.displayName),
      [`edge${HOSTILE}`],
      'the plan reads back to the cloud’s name',
    );

    const synced = await run('sync', '--provider', 'gke');
    assert.equal(synced.code, 0, synced.stderr);
    assertShownAsText('sync (summary and events on stdout)', synced.stdout + synced.stderr);
    const events = synced.stdout
      .trim()
      .split('\n')
      .map(
        (line) =>
          JSON.parse(line) as { 'detail-type': string; detail: { cluster?: { displayName?: string } } },
      );
    assert.deepEqual(
      events
        .filter((e) => e['detail-type'] === 'ClusterProfile Created')
        .map((e) => e.detail.cluster?.displayName),
      [`edge${HOSTILE}`],
      'the events read back to the cloud’s name',
    );

    const [profile, ...others] = await new FileHub({ directory: join(directory, 'inventory') }).list(
      'shown',
      {
        'x-k8s.io/cluster-manager': 'cpsync',
      },
    );
    assert.equal(others.length, 0);
    assert.equal(profile!.spec.displayName, `edge${HOSTILE}`, 'the hub holds the cloud’s name');
    assert.equal(
      profile!.status!.properties!.find((p) => p.name === 'cpsync.io/tag.team')?.value,
      `data${HOSTILE}`,
    );
    const row = listRow(profile!);

    const table = await run('list');
    assert.equal(table.code, 0, table.stderr);
    assertShownAsText('list', table.stdout + table.stderr);
    assert.match(table.stdout, /1\.31\\u\{1b\}\]0;title\\u\{7\}/, 'the version column shows the escapes');

    const json = await run('list', '-o', 'json');
    assertShownAsText('list -o json', json.stdout + json.stderr);
    assert.deepEqual(JSON.parse(json.stdout), [row]);
    assert.match(json.stdout, /\\u202e/);

    const yaml = await run('list', '-o', 'yaml');
    assertShownAsText('list -o yaml', yaml.stdout + yaml.stderr);
    assert.deepEqual(parse(yaml.stdout), [row]);

    const summary = await run('list', '--summary');
    assertShownAsText('list --summary', summary.stdout + summary.stderr);
    assert.match(summary.stdout, /need a look: 1/);

    const page = join(directory, 'report.html');
    const report = await run('report', '-o', page);
    assert.equal(report.code, 0, report.stderr);
    assertShownAsText('report', report.stdout + report.stderr + readFileSync(page, 'utf8'));
  });
});
