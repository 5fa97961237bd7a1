import type { Chart } from './report-doc.js';
import { escapeXml } from './escape.js';

/** Ten colours that stay distinct on white (Tableau 10); past ten, dashes tell series apart. */
export const SERIES_COLOURS = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22', '#17becf'];
const DASHES = ['', '6 3', '2 3', '8 3 2 3'];

const W = 800;
const PLOT_H = 260;
const M = { left: 70, right: 20, top: 34, bottom: 44 };
const MAX_POINTS = 1500;

/** "Nice" tick values covering [lo, hi], about `count` of them. */
export function niceTicks(lo: number, hi: number, count = 5): number[] {
  if (!(hi > lo)) return [lo];
  const raw = (hi - lo) / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = ([1, 2, 2.5, 5, 10].find((m) => m * mag >= raw) ?? 10) * mag;
  const out: number[] = [];
  for (let v = Math.ceil(lo / step - 1e-9) * step; v <= hi + step * 1e-9; v += step) out.push(Math.abs(v) < step * 1e-9 ? 0 : v);
  return out;
}

/** Compact tick label: 950, 1.5k, 2M, 0.25. */
export function tickLabel(v: number): string {
  const a = Math.abs(v);
  const trim = (x: number, d: number): string => String(Number(x.toFixed(d)));
  if (a >= 1e9) return `${trim(v / 1e9, 2)}G`;
  if (a >= 1e6) return `${trim(v / 1e6, 2)}M`;
  if (a >= 1e3) return `${trim(v / 1e3, 2)}k`;
  if (a >= 100 || a === 0) return trim(v, 0);
  if (a >= 1) return trim(v, 2);
  return trim(v, 4);
}

/** Keeps the first, lowest, highest and last point of each pixel column: peaks survive. */
function decimate(points: [number, number][], x0: number, x1: number, columns: number): [number, number][] {
  if (points.length <= MAX_POINTS) return points;
  const out: [number, number][] = [];
  let col = -1;
  let group: [number, number][] = [];
  const flush = (): void => {
    if (group.length === 0) return;
    let lo = group[0]!;
    let hi = group[0]!;
    for (const p of group) {
      if (p[1] < lo[1]) lo = p;
      if (p[1] > hi[1]) hi = p;
    }
    const keep = new Set([group[0]!, lo, hi, group[group.length - 1]!]);
    for (const p of group) if (keep.has(p)) out.push(p);
    group = [];
  };
  for (const p of points) {
    const c = Math.floor(((p[0] - x0) / (x1 - x0 || 1)) * columns);
    if (c !== col) {
      flush();
      col = c;
    }
    group.push(p);
  }
  flush();
  return out;
}

const r1 = (v: number): string => (Math.round(v * 10) / 10).toString();

/**
 * One chart as an inline SVG (`<svg class="chart" data-chart-id=...>`): axes with ticks and
 * labels, one `<path>` per series (and no other paths), a legend, optional vertical markers.
 *
 * @example
 * lineChartSvg({ id: 'ttft', title: 'TTFT p99', xLabel: 's', yLabel: 'ms', kind: 'line',
 *   series: [{ name: 'p99', points: [[0, 120], [1, 180]] }] });
 */
export function lineChartSvg(chart: Chart): string {
  const series = chart.series.map((s) => ({
    name: s.name,
    points: s.points.filter((p) => Number.isFinite(p[0]) && Number.isFinite(p[1])).sort((a, b) => a[0] - b[0]),
  }));
  const all = series.flatMap((s) => s.points);
  let xMin = Number.POSITIVE_INFINITY;
  let xMax = Number.NEGATIVE_INFINITY;
  let yLo = Number.POSITIVE_INFINITY;
  let yHi = Number.NEGATIVE_INFINITY;
  let posLo = Number.POSITIVE_INFINITY;
  let posHi = Number.NEGATIVE_INFINITY;
  for (const [x, y] of all) {
    if (x < xMin) xMin = x;
    if (x > xMax) xMax = x;
    if (y < yLo) yLo = y;
    if (y > yHi) yHi = y;
    if (y > 0 && y < posLo) posLo = y;
    if (y > 0 && y > posHi) posHi = y;
  }
  for (const mk of chart.markers ?? []) {
    if (!Number.isFinite(mk.x)) continue;
    xMin = Math.min(xMin, mk.x);
    xMax = Math.max(xMax, mk.x);
  }
  if (!Number.isFinite(xMin)) [xMin, xMax] = [0, 1];
  if (xMax === xMin) [xMin, xMax] = [xMin - 1, xMax + 1];

  const log = chart.yLog === true;
  let yMin: number;
  let yMax: number;
  let yTicks: number[];
  if (log) {
    const lo = Number.isFinite(posLo) ? posLo : 1;
    const hi = Number.isFinite(posHi) ? posHi : 10;
    yMin = 10 ** Math.floor(Math.log10(lo));
    yMax = 10 ** Math.ceil(Math.log10(hi));
    if (yMax === yMin) yMax = yMin * 10;
    yTicks = [];
    for (let e = Math.log10(yMin); e <= Math.log10(yMax) + 1e-9; e++) yTicks.push(10 ** e);
  } else {
    const lo = all.length > 0 ? Math.min(0, yLo) : 0;
    const hi = all.length > 0 ? yHi : 1;
    const top = hi > lo ? hi : lo + 1;
    // Round the domain out to whole ticks so the top of the data sits under a labelled line.
    const rough = niceTicks(lo, top);
    const step = rough.length > 1 ? rough[1]! - rough[0]! : 1;
    yMin = Math.floor(lo / step + 1e-9) * step;
    yMax = Math.ceil(top / step - 1e-9) * step;
    const ticks = niceTicks(yMin, yMax);
    yTicks = ticks;
  }
  const plotW = W - M.left - M.right;
  const sx = (x: number): number => M.left + ((x - xMin) / (xMax - xMin)) * plotW;
  const ty = (y: number): number => (log ? Math.log10(Math.max(y, yMin)) : y);
  const sy = (y: number): number => M.top + PLOT_H - ((ty(y) - ty(yMin)) / (ty(yMax) - ty(yMin) || 1)) * PLOT_H;

  // Legend rows under the x axis label.
  const legendTop = M.top + PLOT_H + M.bottom;
  const items: { x: number; y: number; name: string; i: number }[] = [];
  let lx = M.left;
  let ly = legendTop;
  series.forEach((s, i) => {
    const w = 26 + Math.min(s.name.length, 40) * 6.6 + 14;
    if (lx + w > W - M.right && lx > M.left) {
      lx = M.left;
      ly += 18;
    }
    items.push({ x: lx, y: ly, name: s.name, i });
    lx += w;
  });
  const H = (items.length > 0 ? ly + 18 : legendTop) + 6;

  const out: string[] = [];
  out.push(
    `<svg class="chart" data-chart-id="${escapeXml(chart.id)}" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" role="img" aria-label="${escapeXml(chart.title)}">`,
    `<title>${escapeXml(chart.title)}</title>`,
    `<text class="chart-title" x="${M.left}" y="20" font-size="15" font-weight="600">${escapeXml(chart.title)}</text>`,
    `<rect x="${M.left}" y="${M.top}" width="${plotW}" height="${PLOT_H}" fill="#fbfbfd" stroke="#d0d4dc"/>`,
  );
  for (const t of yTicks) {
    const y = r1(sy(t));
    out.push(`<line class="grid" x1="${M.left}" x2="${W - M.right}" y1="${y}" y2="${y}" stroke="#e6e8ee"/>`);
    out.push(`<text class="tick" x="${M.left - 6}" y="${y}" font-size="11" text-anchor="end" dominant-baseline="middle">${escapeXml(tickLabel(t))}</text>`);
  }
  for (const t of niceTicks(xMin, xMax, 8)) {
    const x = r1(sx(t));
    out.push(`<line class="tick-mark" x1="${x}" x2="${x}" y1="${M.top + PLOT_H}" y2="${M.top + PLOT_H + 5}" stroke="#555"/>`);
    out.push(`<text class="tick" x="${x}" y="${M.top + PLOT_H + 17}" font-size="11" text-anchor="middle">${escapeXml(tickLabel(t))}</text>`);
  }
  out.push(
    `<line class="axis" x1="${M.left}" x2="${W - M.right}" y1="${M.top + PLOT_H}" y2="${M.top + PLOT_H}" stroke="#555"/>`,
    `<line class="axis" x1="${M.left}" x2="${M.left}" y1="${M.top}" y2="${M.top + PLOT_H}" stroke="#555"/>`,
    `<text class="axis-label" x="${M.left + plotW / 2}" y="${M.top + PLOT_H + 34}" font-size="12" text-anchor="middle">${escapeXml(chart.xLabel)}</text>`,
    `<text class="axis-label" transform="translate(16 ${M.top + PLOT_H / 2}) rotate(-90)" font-size="12" text-anchor="middle">${escapeXml(chart.yLabel)}${log ? ' (log)' : ''}</text>`,
  );
  for (const mk of chart.markers ?? []) {
    if (!Number.isFinite(mk.x)) continue;
    const x = r1(sx(mk.x));
    out.push(`<line class="marker" x1="${x}" x2="${x}" y1="${M.top}" y2="${M.top + PLOT_H}" stroke="#b00020" stroke-dasharray="4 3"/>`);
    out.push(`<text class="marker-label" x="${x}" y="${M.top + 12}" dx="4" font-size="11" fill="#b00020">${escapeXml(mk.label)}</text>`);
  }
  series.forEach((s, i) => {
    const colour = SERIES_COLOURS[i % SERIES_COLOURS.length]!;
    const dash = DASHES[Math.floor(i / SERIES_COLOURS.length) % DASHES.length]!;
    const pts = decimate(s.points, xMin, xMax, plotW);
    let d = '';
    pts.forEach((p, k) => {
      const x = r1(sx(p[0]));
      const y = r1(sy(p[1]));
      if (k === 0) d += `M${x} ${y}`;
      else if (chart.kind === 'step') d += `H${x}V${y}`;
      else d += `L${x} ${y}`;
    });
    // A lone point would be invisible as a path: give it a zero-length stroke with round caps.
    if (pts.length === 1) d += 'h0.01';
    out.push(
      `<path class="series" data-series="${escapeXml(s.name)}" d="${d}" fill="none" stroke="${colour}" stroke-width="1.8" stroke-linejoin="round" stroke-linecap="round"${dash ? ` stroke-dasharray="${dash}"` : ''}><title>${escapeXml(s.name)}</title></path>`,
    );
  });
  for (const it of items) {
    const colour = SERIES_COLOURS[it.i % SERIES_COLOURS.length]!;
    const dash = DASHES[Math.floor(it.i / SERIES_COLOURS.length) % DASHES.length]!;
    const name = it.name.length > 40 ? `${it.name.slice(0, 39)}…` : it.name;
    out.push(
      `<g class="legend-item"><line x1="${it.x}" x2="${it.x + 20}" y1="${it.y}" y2="${it.y}" stroke="${colour}" stroke-width="3"${dash ? ` stroke-dasharray="${dash}"` : ''}/><text x="${it.x + 25}" y="${it.y}" font-size="11" dominant-baseline="middle">${escapeXml(name)}</text></g>`,
    );
  }
  out.push('</svg>');
  return out.join('\n');
}
