/**
 * `cpsync report` and `cpsync list --summary` on the local estate with clusters that need a look (one
 * missing from its provider's listing, one stopped, one whose CA data is not PEM), the page opened from
 * disk in a real headless browser (Chromium from the OS packages; `CPSYNC_CHROMIUM` names another).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import { AZURE_SUBSCRIPTION, GCP_PROJECT, startEmulators, type Emulators } from '../env/emulators.ts';
import { runCli } from '../support/cli.ts';
import { temporaryDirectory } from '../support/tmp.ts';

const CHROMIUM = process.env.CPSYNC_CHROMIUM ?? 'chromium';

/** Runs headless Chromium on `url`; resolves to what it printed (the DOM after scripts with --dump-dom). */
function chromium(
  args: string[],
  url: string,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const profile = temporaryDirectory('cpsync-chromium-');
    const child = spawn(
      CHROMIUM,
      [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--no-first-run',
        `--user-data-dir=${profile}`,
        '--enable-logging=stderr',
        '--v=0',
        ...args,
        url,
      ],
      { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: profile } },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', (error) =>
      reject(
        new Error(
          `cannot run ${CHROMIUM} (install the chromium package, or set CPSYNC_CHROMIUM): ${error.message}`,
        ),
      ),
    );
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('the inventory at a glance: cpsync report in a real browser, cpsync list --summary', () => {
  let emulators: Emulators;
  let page: string;
  let summary: string;

  before(async () => {
    emulators = await startEmulators({ directory: temporaryDirectory('cpsync-report-') });
    const cli = async (...args: string[]) => {
      const run = await runCli([...args, '--config', emulators.configPath], {
        cwd: emulators.directory,
        env: emulators.env,
      });
      assert.ok(run.code === 0, `${args.join(' ')}: ${run.stderr}`);
      return run;
    };
    await cli('sync');
    // Three clusters that need a look: gone from its listing (in grace), stopped, CA data that is not PEM.
    const gke = emulators.gke.clusters.get(GCP_PROJECT)!;
    emulators.gke.clusters.set(
      GCP_PROJECT,
      gke
        .filter((c) => c.name !== 'edge')
        .map((c) =>
          c.name === 'analytics'
            ? {
                ...c,
                masterAuth: { clusterCaCertificate: Buffer.from('not a certificate').toString('base64') },
              }
            : c,
        ),
    );
    const batch = emulators.arm.clusters.get(AZURE_SUBSCRIPTION)!.find((c) => c.name === 'batch')!;
    batch.properties.powerState = { code: 'Stopped' };
    await cli('sync');
    summary = (await cli('list', '--summary')).stdout;
    page = join(emulators.directory, 'report.html');
    await cli('report', '--output', page);
  });

  after(async () => emulators?.stop());

  it('list --summary counts clouds, scopes and versions, and names what needs a look', () => {
    assert.match(summary, /^7 cluster\(s\): 2 aks, 3 eks, 2 gke$/m);
    assert.match(summary, /eks\/210987654321\/us-east-1: 2/);
    assert.match(summary, /eks: 1\.31 × 3/);
    assert.match(summary, /gke: 1\.30 × 2/);
    assert.match(summary, /need a look: 3/);
    assert.match(summary, /edge\): missing \(NotFoundInProvider\)/);
    assert.match(summary, /batch\): stopped \(Stopped\)/);
    assert.match(summary, /analytics\): no CA data \(NotPEMCertificates\)/);
  });

  it('the page is self-contained, loads in Chromium with no console error, and shows the estate: counts, chart, attention, a sortable table', async () => {
    const html = readFileSync(page, 'utf8');
    assert.doesNotMatch(html, /(src|href)=["']?(https?:)?\/\//, 'nothing external');
    const url = `${pathToFileURL(page).href}#sort=nodes:desc`;
    const dom = await chromium(['--dump-dom'], url);
    assert.equal(dom.code, 0, dom.stderr);
    assert.doesNotMatch(dom.stderr, /Uncaught|Refused to|CONSOLE\(\d+\).*error/i, dom.stderr);
    const html2 = dom.stdout;
    assert.match(html2, /<body data-ready="true">/, 'the page script ran to its end');
    const count = (cloud: string) =>
      new RegExp(`data-cloud-count="${cloud}"[^>]*><span class="n">(\\d+)<`).exec(html2)?.[1];
    assert.deepEqual([count('all'), count('eks'), count('gke'), count('aks')], ['7', '3', '2', '2']);
    assert.match(html2, /data-cloud="eks"[\s\S]*?data-version="1\.31" data-count="3"/);
    assert.match(html2, /data-cloud="aks"[\s\S]*?data-version="1\.30" data-count="2"/);
    const attention = [...html2.matchAll(/<li data-profile="([^"]+)"/g)].map((m) => m[1]!.split('-')[2]);
    assert.deepEqual(attention.sort(), ['analytics', 'batch', 'edge']);
    // Sorted by the script from the URL: node counts descending, rows without one last.
    assert.match(html2, /<table id="clusters" data-sorted-by="nodes:desc">/);
    const nodes = [
      ...html2.matchAll(/<tr data-profile="[^"]+">(?:<td[^>]*>[^<]*<\/td>){6}<td data-value="([^"]*)">/g),
    ].map((m) => m[1]);
    assert.equal(nodes.length, 7);
    // The stopped AKS cluster (batch) runs no node.
    assert.deepEqual(nodes.slice(0, 5), ['5', '3', '3', '3', '0']);
    const screenshot = join(emulators.directory, 'report.png');
    const shot = await chromium([`--screenshot=${screenshot}`, '--window-size=1280,1400'], url);
    assert.equal(shot.code, 0, shot.stderr);
    const png = readFileSync(screenshot);
    assert.equal(png.subarray(1, 4).toString(), 'PNG');
    assert.ok(statSync(screenshot).size > 20_000, 'a page with content, not a blank one');
    console.log(`report screenshot: ${screenshot}`);
  });
});
