/**
 * What the inventory looks like as a whole: clusters per cloud and per scope, the Kubernetes version
 * spread of each cloud, and the clusters that need a look (unhealthy, missing from their provider's
 * listing, stopped, without CA data or endpoint) — as text (`cpsync list --summary`) and as one
 * self-contained HTML page (`cpsync report`: no external script, font or stylesheet; works from disk).
 */
import {
  CONDITION_CONTROL_PLANE_HEALTHY,
  CONDITION_JOINED,
  LABEL_ACCOUNT,
  LABEL_PROVIDER,
  LABEL_REGION,
  PROPERTY_CA_OMITTED,
  PROPERTY_LOCATION,
  PROPERTY_NODE_COUNT,
  PROPERTY_POWER_STATE,
} from '../core/domain/constants.ts';
import { createHash } from 'node:crypto';
import type { ClusterProfile } from '../core/domain/model/clusterProfile.ts';
import { own } from '../core/domain/own.ts';
import { printable } from './terminal.ts';

export interface ClusterRow {
  namespace: string;
  name: string;
  displayName: string;
  provider: string;
  account: string;
  region: string;
  location: string;
  version: string;
  healthy: string;
  nodes: string;
  attention: string[];
}

export interface InventorySummary {
  total: number;
  byCloud: Array<{ provider: string; count: number }>;
  byScope: Array<{ provider: string; account: string; region: string; count: number }>;
  /** Per cloud, the clusters of each Kubernetes minor version (highest first). */
  versions: Array<{ provider: string; versions: Array<{ version: string; count: number }> }>;
  attention: ClusterRow[];
  clusters: ClusterRow[];
}

const byKey =
  <T>(key: (t: T) => string) =>
  (a: T, b: T) =>
    key(a).localeCompare(key(b));

function minorOf(version: string): string {
  return /^v?(\d+\.\d+)/.exec(version)?.[1] ?? (version || 'unknown');
}

function compareVersions(a: string, b: string): number {
  const [am = 0, an = 0] = a.split('.').map(Number);
  const [bm = 0, bn = 0] = b.split('.').map(Number);
  return bm - am || bn - an || a.localeCompare(b);
}

/** One profile as the report and `cpsync list` show it. */
export function clusterRow(profile: ClusterProfile): ClusterRow {
  const prop = (name: string) => profile.status?.properties?.find((p) => p.name === name)?.value;
  const condition = (type: string) => profile.status?.conditions?.find((c) => c.type === type);
  const healthy = condition(CONDITION_CONTROL_PLANE_HEALTHY);
  const joined = condition(CONDITION_JOINED);
  const attention: string[] = [];
  const power = prop(PROPERTY_POWER_STATE);
  const stopped = power !== undefined && power !== 'Running';
  if (joined?.status === 'False') attention.push(`missing (${joined.reason ?? 'not listed'})`);
  else if (stopped) attention.push(`stopped (${power})`);
  else if (healthy?.status === 'False')
    attention.push(`unhealthy (${healthy.reason ?? healthy.message ?? ''})`);
  const caOmitted = prop(PROPERTY_CA_OMITTED);
  if (caOmitted) attention.push(`no CA data (${caOmitted})`);
  if ((profile.status?.accessProviders ?? []).length === 0) attention.push('no endpoint');
  const labels = profile.metadata.labels ?? {};
  return {
    namespace: profile.metadata.namespace,
    name: profile.metadata.name,
    displayName: profile.spec?.displayName ?? '',
    provider: labels[LABEL_PROVIDER] ?? '',
    account: labels[LABEL_ACCOUNT] ?? '',
    region: labels[LABEL_REGION] ?? '',
    location: prop(PROPERTY_LOCATION) ?? '',
    version: profile.status?.version?.kubernetes ?? '',
    healthy: healthy ? `${healthy.status}${healthy.reason ? ` (${healthy.reason})` : ''}` : '',
    nodes: prop(PROPERTY_NODE_COUNT) ?? '',
    attention,
  };
}

export function summarize(profiles: readonly ClusterProfile[]): InventorySummary {
  const clusters = profiles.map(clusterRow).sort(byKey((r) => `${r.provider} ${r.displayName} ${r.name}`));
  const count = (key: (r: ClusterRow) => string) => {
    const counts = new Map<string, number>();
    for (const r of clusters) counts.set(key(r), (counts.get(key(r)) ?? 0) + 1);
    return counts;
  };
  const byCloud = [...count((r) => r.provider)]
    .map(([provider, n]) => ({ provider, count: n }))
    .sort(byKey((c) => c.provider));
  const byScope = [...count((r) => `${r.provider}\u0000${r.account}\u0000${r.region}`)]
    .map(([key, n]) => {
      const [provider = '', account = '', region = ''] = key.split('\u0000');
      return { provider, account, region, count: n };
    })
    .sort(byKey((s) => `${s.provider} ${s.account} ${s.region}`));
  const versions = byCloud.map(({ provider }) => {
    const counts = new Map<string, number>();
    for (const r of clusters.filter((c) => c.provider === provider))
      counts.set(minorOf(r.version), (counts.get(minorOf(r.version)) ?? 0) + 1);
    return {
      provider,
      versions: [...counts]
        .map(([version, n]) => ({ version, count: n }))
        .sort((a, b) => compareVersions(a.version, b.version)),
    };
  });
  return {
    total: clusters.length,
    byCloud,
    byScope,
    versions,
    attention: clusters.filter((r) => r.attention.length > 0),
    clusters,
  };
}

/** `cpsync list --summary`. */
export function formatInventorySummary(summary: InventorySummary): string {
  const lines = [
    `${summary.total} cluster(s): ${summary.byCloud.map((c) => `${c.count} ${c.provider}`).join(', ') || 'none'}`,
    '',
    'by scope:',
    ...summary.byScope.map((s) => `  ${s.provider}/${s.account}/${s.region}: ${s.count}`),
    '',
    'Kubernetes versions:',
    ...summary.versions.map(
      (v) => `  ${v.provider}: ${v.versions.map((x) => `${x.version} × ${x.count}`).join(', ')}`,
    ),
    '',
    `need a look: ${summary.attention.length}`,
    ...summary.attention.map(
      (r) => `  ${r.namespace}/${r.name} (${r.provider} ${r.displayName}): ${r.attention.join('; ')}`,
    ),
  ];
  return `${lines.map(printable).join('\n')}\n`;
}

/**
 * `text` as HTML text or an attribute value: markup characters escaped, and characters that act
 * instead of showing (controls, bidi overrides, zero-width) shown as `\u{…}` — a right-to-left
 * override in a cluster's name cannot reverse what follows it.
 */
const escape = (text: string) =>
  printable(text).replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c,
  );

/** The CSP source of an inline element's exact text: the page runs and styles only what it was written with. */
const sha256 = (text: string) => `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;

/** Clusters listed under "Need a look"; the table below holds every one. */
const MAX_ATTENTION_ITEMS = 500;

const COLORS: Record<string, string> = { eks: '#e47911', gke: '#1a73e8', aks: '#0078d4' };

/** One horizontal bar per version of one cloud, as inline SVG (no script needed to see it). */
function versionChart(entry: InventorySummary['versions'][number]): string {
  const max = Math.max(1, ...entry.versions.map((v) => v.count));
  const barHeight = 22;
  const height = entry.versions.length * (barHeight + 6) + 6;
  const bars = entry.versions
    .map((v, i) => {
      const y = 6 + i * (barHeight + 6);
      const width = Math.max(2, Math.round((v.count / max) * 300));
      return `<g data-version="${escape(v.version)}" data-count="${v.count}"><text x="0" y="${y + 16}" class="label">${escape(v.version)}</text><rect x="70" y="${y}" width="${width}" height="${barHeight}" rx="3" fill="${own(COLORS, entry.provider) ?? '#666'}"/><text x="${78 + width}" y="${y + 16}" class="label">${v.count}</text></g>`;
    })
    .join('');
  return `<figure class="chart" data-cloud="${escape(entry.provider)}"><figcaption>${escape(entry.provider.toUpperCase())}</figcaption><svg role="img" aria-label="Kubernetes versions of ${escape(entry.provider)} clusters" width="420" height="${height}" viewBox="0 0 420 ${height}">${bars}</svg></figure>`;
}

const COLUMNS: Array<[keyof ClusterRow, string]> = [
  ['displayName', 'Cluster'],
  ['provider', 'Cloud'],
  ['account', 'Account'],
  ['location', 'Location'],
  ['version', 'Version'],
  ['healthy', 'Healthy'],
  ['nodes', 'Nodes'],
  ['attention', 'Needs a look'],
  ['name', 'Profile'],
];

/** The sorting script: click a header to sort by it (again to reverse); `#sort=<column>` sorts on load. */
const SCRIPT = `
(function () {
  var table = document.getElementById('clusters');
  var body = table.tBodies[0];
  function sortBy(column, descending) {
    var index = Array.prototype.findIndex.call(table.tHead.rows[0].cells, function (c) { return c.dataset.column === column; });
    if (index < 0) return;
    // Each row's key read once; numbers compare as numbers, the rest by one collator.
    var collator = new Intl.Collator(undefined, { numeric: true });
    var keyed = Array.prototype.map.call(body.rows, function (row) {
      var text = row.cells[index].textContent;
      return { row: row, text: text, number: text === '' ? NaN : Number(text) };
    });
    keyed.sort(function (a, b) {
      var order = !isNaN(a.number) && !isNaN(b.number) ? a.number - b.number : collator.compare(a.text, b.text);
      return descending ? -order : order;
    });
    var sorted = document.createDocumentFragment();
    keyed.forEach(function (k) { sorted.appendChild(k.row); });
    body.appendChild(sorted);
    table.dataset.sortedBy = column + (descending ? ':desc' : '');
  }
  Array.prototype.forEach.call(table.tHead.rows[0].cells, function (cell) {
    cell.addEventListener('click', function () {
      sortBy(cell.dataset.column, table.dataset.sortedBy === cell.dataset.column);
    });
  });
  var wanted = /sort=([^&:]+)(:desc)?/.exec(location.hash);
  if (wanted) sortBy(wanted[1], !!wanted[2]);
  document.body.dataset.ready = 'true';
})();
`;

const STYLE = `
body { font: 14px/1.45 system-ui, sans-serif; margin: 24px; color: #1f2328; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 17px; margin: 28px 0 8px; }
.muted { color: #656d76; } .cards { display: flex; gap: 12px; flex-wrap: wrap; }
.card { border-left: 6px solid; padding: 8px 16px; background: #f6f8fa; border-radius: 4px; min-width: 90px; }
.card .n { display: block; font-size: 26px; font-weight: 600; }
.charts { display: flex; gap: 24px; flex-wrap: wrap; } figure { margin: 0; } figcaption { font-weight: 600; }
.label { font-size: 12px; fill: #1f2328; }
table { border-collapse: collapse; } th, td { padding: 4px 10px; border-bottom: 1px solid #d0d7de; text-align: left; }
#clusters th { cursor: pointer; user-select: none; } #clusters th:hover { background: #f6f8fa; }
.card.eks { border-color: #e47911; } .card.gke { border-color: #1a73e8; } .card.aks { border-color: #0078d4; }
.card.all { border-color: #1f2328; } .card.other { border-color: #666; }
/* Cloud strings: long unbroken ones wrap inside their column; each keeps its own direction. */
td, #attention li { overflow-wrap: anywhere; unicode-bidi: isolate; }
#clusters { table-layout: fixed; width: 100%; } #clusters td { vertical-align: top; } #attention strong, #attention span { unicode-bidi: isolate; }
`;

/** The page's policy: nothing from anywhere; only its own style and script, by hash. */
const CSP = `default-src 'none'; style-src ${sha256(STYLE)}; script-src ${sha256(SCRIPT)}; img-src 'none'; base-uri 'none'; form-action 'none'`;

/** `cpsync report`: the whole page, every byte of it inline. */
export function reportHtml(
  summary: InventorySummary,
  context: { generatedAt: string; source: string },
): string {
  const cell = (r: ClusterRow, key: keyof ClusterRow) => {
    const value = Array.isArray(r[key]) ? (r[key] as string[]).join('; ') : String(r[key]);
    return `<td>${escape(value)}</td>`;
  };
  const cards = summary.byCloud
    .map(
      (c) =>
        `<div class="card ${own(COLORS, c.provider) ? c.provider : 'other'}" data-cloud-count="${escape(c.provider)}"><span class="n">${c.count}</span><span>${escape(c.provider.toUpperCase())}</span></div>`,
    )
    .join('');
  const scopes = summary.byScope
    .map(
      (s) =>
        `<tr data-scope="${escape(`${s.provider}/${s.account}/${s.region}`)}"><td>${escape(s.provider)}</td><td>${escape(s.account)}</td><td>${escape(s.region)}</td><td>${s.count}</td></tr>`,
    )
    .join('');
  const attention = summary.attention
    .slice(0, MAX_ATTENTION_ITEMS)
    .map(
      (r) =>
        `<li data-profile="${escape(r.name)}"><strong>${escape(r.displayName)}</strong> <span class="muted">${escape(`${r.provider} · ${r.namespace}/${r.name}`)}</span>: ${escape(r.attention.join('; '))}</li>`,
    )
    .join('');
  const rows = summary.clusters
    .map((r) => `<tr data-profile="${escape(r.name)}">${COLUMNS.map(([key]) => cell(r, key)).join('')}</tr>`)
    .join('');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${CSP}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>cpsync inventory — ${summary.total} clusters</title>
<style>${STYLE}</style>
</head>
<body>
<h1>cpsync inventory</h1>
<p class="muted">${summary.total} clusters in ${escape(context.source)} · generated ${escape(context.generatedAt)}</p>
<div class="cards"><div class="card all" data-cloud-count="all"><span class="n">${summary.total}</span><span>ALL</span></div>${cards}</div>
<h2>Kubernetes versions per cloud</h2>
<div class="charts">${summary.versions.map(versionChart).join('')}</div>
<h2>Need a look (${summary.attention.length})</h2>
<ul id="attention">${attention || '<li class="muted">nothing: every cluster is listed, healthy, running, with CA data and an endpoint</li>'}</ul>${summary.attention.length > MAX_ATTENTION_ITEMS ? `<p class="muted" id="attention-more">…and ${summary.attention.length - MAX_ATTENTION_ITEMS} more: sort the table by “Needs a look”.</p>` : ''}
<h2>By account and region</h2>
<table id="scopes"><thead><tr><th>Cloud</th><th>Account</th><th>Region</th><th>Clusters</th></tr></thead><tbody>${scopes}</tbody></table>
<h2>Clusters</h2>
<p class="muted">Click a column to sort by it; again to reverse.</p>
<table id="clusters"><thead><tr>${COLUMNS.map(([key, title]) => `<th data-column="${key}">${title}</th>`).join('')}</tr></thead><tbody>${rows}</tbody></table>
<script>${SCRIPT}</script>
</body>
</html>
`;
}
