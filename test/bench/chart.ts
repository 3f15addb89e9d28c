/**
 * The scaling curve as a small SVG the bench writes beside BENCHMARKS.md: CPU per cluster (full sync and
 * steady state) and peak RSS against the estate's size, on a logarithmic size axis.
 */

export interface CurvePoint {
  clusters: number;
  fullCpuPerCluster: number;
  steadyCpuPerCluster: number;
  peakRssMb: number;
}

const WIDTH = 720;
const HEIGHT = 300;
const PANEL = { top: 40, bottom: 50, left: 60, width: 270, gap: 90 };

const escape = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;');

/** One panel: lines of `series` over the points, its y axis from 0 to a round maximum above the targets. */
function panel(
  x0: number,
  title: string,
  unit: string,
  points: readonly CurvePoint[],
  series: ReadonlyArray<{ label: string; color: string; value: (p: CurvePoint) => number }>,
  targets: ReadonlyArray<{ label: string; value: number }>,
): string {
  const height = HEIGHT - PANEL.top - PANEL.bottom;
  const values = [...points.flatMap((p) => series.map((s) => s.value(p))), ...targets.map((t) => t.value)];
  const step = 10 ** Math.floor(Math.log10(Math.max(...values)));
  const top = Math.ceil((Math.max(...values) * 1.15) / step) * step;
  const logs = points.map((p) => Math.log10(p.clusters));
  const [lo, hi] = [Math.min(...logs), Math.max(...logs)];
  const x = (clusters: number) => x0 + ((Math.log10(clusters) - lo) / (hi - lo || 1)) * PANEL.width;
  const y = (value: number) => PANEL.top + height - (value / top) * height;
  const parts: string[] = [
    `<text x="${x0}" y="${PANEL.top - 16}" font-weight="bold">${escape(title)}</text>`,
    `<line x1="${x0}" y1="${y(0)}" x2="${x0 + PANEL.width}" y2="${y(0)}" stroke="#888"/>`,
    `<line x1="${x0}" y1="${y(0)}" x2="${x0}" y2="${y(top)}" stroke="#888"/>`,
  ];
  for (let i = 0; i <= 4; i++) {
    const value = (top / 4) * i;
    parts.push(
      `<text x="${x0 - 6}" y="${y(value) + 4}" text-anchor="end" font-size="11">${+value.toFixed(2)}</text>`,
      `<line x1="${x0}" y1="${y(value)}" x2="${x0 + PANEL.width}" y2="${y(value)}" stroke="#eee"/>`,
    );
  }
  for (const p of points)
    parts.push(
      `<text x="${x(p.clusters)}" y="${y(0) + 16}" text-anchor="middle" font-size="11">${p.clusters.toLocaleString('en')}</text>`,
    );
  parts.push(
    `<text x="${x0 + PANEL.width / 2}" y="${y(0) + 34}" text-anchor="middle" font-size="11">clusters (log scale)</text>`,
    `<text x="${x0 - 44}" y="${PANEL.top + height / 2}" font-size="11" transform="rotate(-90 ${x0 - 44} ${PANEL.top + height / 2})" text-anchor="middle">${escape(unit)}</text>`,
  );
  for (const target of targets)
    parts.push(
      `<line x1="${x0}" y1="${y(target.value)}" x2="${x0 + PANEL.width}" y2="${y(target.value)}" stroke="#c33" stroke-dasharray="4 3"/>`,
      `<text x="${x0 + PANEL.width}" y="${y(target.value) - 4}" text-anchor="end" font-size="10" fill="#c33">${escape(target.label)}</text>`,
    );
  series.forEach((s, i) => {
    const path = points.map((p) => `${x(p.clusters).toFixed(1)},${y(s.value(p)).toFixed(1)}`).join(' ');
    parts.push(`<polyline points="${path}" fill="none" stroke="${s.color}" stroke-width="2"/>`);
    for (const p of points)
      parts.push(
        `<circle cx="${x(p.clusters).toFixed(1)}" cy="${y(s.value(p)).toFixed(1)}" r="3" fill="${s.color}"/>`,
      );
    parts.push(
      `<text x="${x0 + 8}" y="${PANEL.top + 14 + i * 14}" font-size="11" fill="${s.color}">${escape(s.label)}</text>`,
    );
  });
  return parts.join('\n');
}

export function scalingChart(points: readonly CurvePoint[], caption: string): string {
  const left = PANEL.left;
  const right = PANEL.left + PANEL.width + PANEL.gap;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}" viewBox="0 0 ${WIDTH} ${HEIGHT}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    panel(
      left,
      'CPU of the cpsync process per cluster',
      'ms per cluster',
      points,
      [
        { label: 'full sync', color: '#1f77b4', value: (p) => p.fullCpuPerCluster },
        { label: 'steady-state re-sync', color: '#2ca02c', value: (p) => p.steadyCpuPerCluster },
      ],
      [
        { label: 'full ≤ 1.5', value: 1.5 },
        { label: 'steady ≤ 1.0', value: 1 },
      ],
    ),
    panel(
      right,
      'Peak RSS of the cpsync process',
      'MB',
      points,
      [{ label: 'peak RSS (the larger run)', color: '#9467bd', value: (p) => p.peakRssMb }],
      [{ label: '512 MB', value: 512 }],
    ),
    `<text x="${WIDTH / 2}" y="${HEIGHT - 8}" text-anchor="middle" font-size="10" fill="#555">${escape(caption)}</text>`,
    '</svg>',
    '',
  ].join('\n');
}
