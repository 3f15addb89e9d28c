/**
 * `cpsync report` and `cpsync list --summary` on the local estate with clusters that need a look (one
 * missing from its provider's listing, one stopped, one whose CA data is not PEM), the page opened from
 * disk in a real headless browser (Chromium from the OS packages; `CPSYNC_CHROMIUM` names another).
 */
import assert from 'node:assert/strict';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import {
  AZURE_SUBSCRIPTION,
  GCP_PROJECT,
  gkeCluster,
  startEmulators,
  type Emulators,
} from '../env/emulators.ts';
import { runCli } from '../support/cli.ts';
import { openPage, runChromium as chromium } from '../support/chromium.ts';
import { temporaryDirectory } from '../support/tmp.ts';

describe('the inventory at a glance: cpsync report in a real browser, cpsync list --summary', () => {
  let emulators: Emulators;
  let page: string;
  let summary: string;
  let cli: (...args: string[]) => Promise<{ stdout: string }>;

  before(async () => {
    emulators = await startEmulators({ directory: temporaryDirectory('cpsync-report-') });
    cli = async (...args: string[]) => {
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
      ...html2.matchAll(/<tr data-profile="[^"]+">(?:<td>[^<]*<\/td>){6}<td>([^<]*)<\/td>/g),
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

  it('shows hostile cloud strings as text under a policy that runs only its own script: no injected markup, script or link acts, no override reverses a line, a long unbroken value wraps in its column', async () => {
    const hostile =
      '1.31<img src=x onerror="document.body.dataset.pwned=1"><script>document.body.dataset.pwned=2</script>' +
      '<a href="javascript:alert(1)">x</a>\u202egnp.exe\u200b' +
      'A'.repeat(400);
    const gke = emulators.gke.clusters.get(GCP_PROJECT)!;
    emulators.gke.clusters.set(GCP_PROJECT, [
      ...gke,
      gkeCluster('hostile', 'europe-west1', {
        currentMasterVersion: hostile,
        status: 6,
        conditions: [
          { code: 'GCE_STOCKOUT', message: `</li><style>*{display:none}</style>${'B'.repeat(300)}` },
        ],
      }),
    ]);
    await cli('sync', '--provider', 'gke');
    const hostilePage = join(emulators.directory, 'report-hostile.html');
    await cli('report', '--output', hostilePage);
    const opened = await openPage(pathToFileURL(hostilePage).href, { width: 1280 });
    try {
      assert.deepEqual(
        opened.problems,
        [],
        'no error, no refusal: the page’s own style and script are allowed by hash',
      );
      assert.equal(await opened.evaluate('document.body.dataset.pwned'), undefined, 'no injected script ran');
      assert.equal(
        await opened.evaluate(
          'document.querySelectorAll("img, iframe, object, embed, a, form, base").length',
        ),
        0,
        'no injected element',
      );
      assert.equal(await opened.evaluate('document.scripts.length'), 1);
      assert.equal(await opened.evaluate('document.styleSheets.length'), 1);
      assert.equal(
        await opened.evaluate('getComputedStyle(document.querySelector(".card.gke")).borderLeftColor'),
        'rgb(26, 115, 232)',
        'the page’s own style applies',
      );
      const row = await opened.evaluate<string>(
        'Array.from(document.querySelectorAll("#clusters tr")).find((r) => r.textContent.includes("hostile")).textContent',
      );
      assert.ok(row.includes('<img src=x onerror='), 'the markup is shown as text');
      assert.ok(
        row.includes('\\u{202e}gnp.exe\\u{200b}'),
        'the override and the zero-width space are shown, not acted on',
      );
      assert.ok(!/[\u202e\u200b]/.test(row));
      const width = await opened.evaluate<number>('document.documentElement.scrollWidth');
      assert.ok(width <= 1280, `the page fits 1280 px (${width} px): long values wrap in their column`);
      const policy = await opened.evaluate<string>(
        'document.querySelector("meta[http-equiv=Content-Security-Policy]").content',
      );
      assert.doesNotMatch(policy, /unsafe-inline/);
      assert.match(policy, /script-src 'sha256-[A-Za-z0-9+/]+=*'/);
    } finally {
      await opened.close();
    }
  });

  it('a report of 30,000 clusters opens and sorts in Chromium: every row there, the attention list bounded', async () => {
    const { summarize, reportHtml } = await import('../../cli/inventoryReport.ts');
    const { syntheticProfiles } = await import('../support/fixtures.ts');
    const big = join(emulators.directory, 'report-30000.html');
    writeFileSync(
      big,
      reportHtml(summarize(await syntheticProfiles(30_000)), { generatedAt: 'now', source: 'synthetic' }),
    );
    const opened = await openPage(`${pathToFileURL(big).href}#sort=version:desc`);
    try {
      assert.deepEqual(opened.problems, []);
      assert.equal(await opened.evaluate('document.querySelectorAll("#clusters tbody tr").length'), 30_000);
      assert.equal(
        await opened.evaluate('document.getElementById("clusters").dataset.sortedBy'),
        'version:desc',
      );
      assert.equal(
        await opened.evaluate(
          'document.querySelector("#clusters tbody tr").cells[4].textContent.slice(0, 4)',
        ),
        '1.32',
      );
      assert.equal(await opened.evaluate('document.querySelectorAll("#attention li").length'), 500);
      assert.match(
        await opened.evaluate<string>('document.getElementById("attention-more").textContent'),
        /more/,
      );
      console.log(
        `report of 30,000 clusters: ${(statSync(big).size / 1048576).toFixed(1)} MiB, data-ready after ${(opened.readyMillis / 1000).toFixed(1)} s (sorted; the bench measures it)`,
      );
    } finally {
      await opened.close();
    }
  });
});
