import type { Chart } from './report-doc.js';
import { escapeXml } from './escape.js';

/** Ten colours that stay distinct on white (Tableau 10); past ten, dashes tell series apart. */
export const SERIES_COLOURS = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22', '#17becf'];
const DASHES = ['', '6 3', '2 3', '8 3 2 3'];

const W = 800;
const PLOT_H = 260;
const M = { left: 70, right: 20, top: 34, bottom: 44 };
/** Small multiples: panel height, and the room around each panel for its title and ticks. */
const FACET = { h: 90, title: 20, left: 44, right: 10, bottom: 22 };
const MAX_POINTS = 1500;
/** Generous width of one character at 11 px (system-ui digits and letters are ~6-7 px). */
const CHAR_W = 7;
/** The same for a panel title, 10 px bold. */
const FACET_CHAR_W = 6.8;
const BAND_FILL = '#f2b8b5';
const LIMIT_COLOUR = '#b00020';

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

interface Domain {
  xMin: number;
  xMax: number;
  yMin: number;
  yMax: number;
  yTicks: number[];
  log: boolean;
}

interface Box {
  x: number;
  y: number;
  w: number;
  h: number;
}

type Points = [number, number][];

/** The data's x and y ranges, widened to take in markers, bands, limit lines and a fixed x domain. */
function domainOf(chart: Chart, series: { points: Points }[]): Domain {
  let xMin = Number.POSITIVE_INFINITY;
  let xMax = Number.NEGATIVE_INFINITY;
  let yLo = Number.POSITIVE_INFINITY;
  let yHi = Number.NEGATIVE_INFINITY;
  let posLo = Number.POSITIVE_INFINITY;
  let posHi = Number.NEGATIVE_INFINITY;
  const takeY = (y: number): void => {
    if (y < yLo) yLo = y;
    if (y > yHi) yHi = y;
    if (y > 0 && y < posLo) posLo = y;
    if (y > 0 && y > posHi) posHi = y;
  };
  const takeX = (x: number): void => {
    if (!Number.isFinite(x)) return;
    if (x < xMin) xMin = x;
    if (x > xMax) xMax = x;
  };
  for (const s of series) {
    for (const [x, y] of s.points) {
      takeX(x);
      takeY(y);
    }
  }
  for (const l of chart.limits ?? []) if (Number.isFinite(l.y)) takeY(l.y);
  for (const mk of chart.markers ?? []) takeX(mk.x);
  for (const b of chart.bands ?? []) [b.from, b.to].forEach(takeX);
  if (chart.xDomain && chart.xDomain[1] > chart.xDomain[0]) [xMin, xMax] = chart.xDomain;
  if (!Number.isFinite(xMin)) [xMin, xMax] = [0, 1];
  if (xMax === xMin) [xMin, xMax] = [xMin - 1, xMax + 1];

  if (chart.yLog === true) {
    const lo = Number.isFinite(posLo) ? posLo : 1;
    const hi = Number.isFinite(posHi) ? posHi : 10;
    const yMin = 10 ** Math.floor(Math.log10(lo));
    let yMax = 10 ** Math.ceil(Math.log10(hi));
    if (yMax === yMin) yMax = yMin * 10;
    const yTicks: number[] = [];
    for (let e = Math.log10(yMin); e <= Math.log10(yMax) + 1e-9; e++) yTicks.push(10 ** e);
    return { xMin, xMax, yMin, yMax, yTicks, log: true };
  }
  const lo = Number.isFinite(yLo) ? Math.min(0, yLo) : 0;
  const top = Number.isFinite(yHi) && yHi > lo ? yHi : lo + 1;
  // Round the domain out to whole ticks so the top of the data sits under a labelled line.
  const rough = niceTicks(lo, top);
  const step = rough.length > 1 ? rough[1]! - rough[0]! : 1;
  const yMin = Math.floor(lo / step + 1e-9) * step;
  const yMax = Math.ceil(top / step - 1e-9) * step;
  return { xMin, xMax, yMin, yMax, yTicks: niceTicks(yMin, yMax), log: false };
}

/** Colour and dash of series i: ten colours, then the same colours dashed. */
function styleOf(i: number): { colour: string; dash: string } {
  return { colour: SERIES_COLOURS[i % SERIES_COLOURS.length]!, dash: DASHES[Math.floor(i / SERIES_COLOURS.length) % DASHES.length]! };
}

const dashAttr = (dash: string): string => (dash ? ` stroke-dasharray="${dash}"` : '');

/** One plot area: frame, grid and ticks, shaded bands, markers, limit lines, then the series. */
function drawPlot(out: string[], box: Box, dom: Domain, chart: Chart, series: { name: string; points: Points; i: number }[], xTickCount: number, labelBands: boolean): void {
  const sx = (x: number): number => box.x + ((x - dom.xMin) / (dom.xMax - dom.xMin)) * box.w;
  const ty = (y: number): number => (dom.log ? Math.log10(Math.max(y, dom.yMin)) : y);
  const sy = (y: number): number => box.y + box.h - ((ty(y) - ty(dom.yMin)) / (ty(dom.yMax) - ty(dom.yMin) || 1)) * box.h;
  const right = box.x + box.w;
  const bottom = box.y + box.h;
  out.push(`<rect class="plot" x="${r1(box.x)}" y="${box.y}" width="${r1(box.w)}" height="${box.h}" fill="#fbfbfd" stroke="#d0d4dc"/>`);
  for (const b of chart.bands ?? []) {
    const x0 = Math.max(box.x, sx(b.from));
    const x1 = Math.min(right, sx(b.to));
    if (!(x1 > x0)) continue;
    out.push(`<rect class="band" x="${r1(x0)}" y="${box.y}" width="${r1(x1 - x0)}" height="${box.h}" fill="${BAND_FILL}" fill-opacity="0.35"><title>${escapeXml(b.label)}</title></rect>`);
    if (labelBands) out.push(`<text class="band-label" x="${r1(x0 + 4)}" y="${box.y + 13}" font-size="11" fill="#8a1c14">${escapeXml(b.label)}</text>`);
  }
  for (const t of dom.yTicks) {
    const y = r1(sy(t));
    out.push(`<line class="grid" x1="${r1(box.x)}" x2="${r1(right)}" y1="${y}" y2="${y}" stroke="#e6e8ee"/>`);
    out.push(`<text class="tick" x="${r1(box.x - 5)}" y="${y}" font-size="11" text-anchor="end" dominant-baseline="middle">${escapeXml(tickLabel(t))}</text>`);
  }
  for (const t of niceTicks(dom.xMin, dom.xMax, xTickCount)) {
    const x = r1(sx(t));
    out.push(`<line class="tick-mark" x1="${x}" x2="${x}" y1="${bottom}" y2="${bottom + 4}" stroke="#555"/>`);
    out.push(`<text class="tick" x="${x}" y="${bottom + 15}" font-size="11" text-anchor="middle">${escapeXml(tickLabel(t))}</text>`);
  }
  out.push(
    `<line class="axis" x1="${r1(box.x)}" x2="${r1(right)}" y1="${bottom}" y2="${bottom}" stroke="#555"/>`,
    `<line class="axis" x1="${r1(box.x)}" x2="${r1(box.x)}" y1="${box.y}" y2="${bottom}" stroke="#555"/>`,
  );
  (chart.markers ?? []).forEach((mk, k) => {
    if (!Number.isFinite(mk.x)) return;
    const x = r1(sx(mk.x));
    // Labels stagger down so markers at one x stay readable, and turn left in the plot's right half.
    const left = sx(mk.x) > box.x + box.w / 2;
    out.push(`<line class="marker" x1="${x}" x2="${x}" y1="${box.y}" y2="${bottom}" stroke="${LIMIT_COLOUR}" stroke-dasharray="4 3"/>`);
    out.push(`<text class="marker-label" x="${x}" y="${box.y + 12 + 13 * k}" dx="${left ? -4 : 4}"${left ? ' text-anchor="end"' : ''} font-size="11" fill="${LIMIT_COLOUR}">${escapeXml(mk.label)}</text>`);
  });
  for (const l of chart.limits ?? []) {
    if (!Number.isFinite(l.y)) continue;
    const y = r1(sy(l.y));
    out.push(
      `<line class="limit" data-limit="${l.y}" x1="${r1(box.x)}" x2="${r1(right)}" y1="${y}" y2="${y}" stroke="${LIMIT_COLOUR}" stroke-width="1.5" stroke-dasharray="8 4"/>`,
      // Above the line when there is room, else below it.
      `<text class="limit-label" x="${r1(right - 4)}" y="${y}" dy="${sy(l.y) - box.y > 16 ? -5 : 13}" font-size="11" text-anchor="end" fill="${LIMIT_COLOUR}" paint-order="stroke" stroke="#fff" stroke-width="3">${escapeXml(l.label)}</text>`,
    );
  }
  for (const s of series) {
    const { colour, dash } = styleOf(s.i);
    const pts = decimate(s.points, dom.xMin, dom.xMax, box.w);
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
      `<path class="series" data-series="${escapeXml(s.name)}" d="${d}" fill="none" stroke="${colour}" stroke-width="1.8" stroke-linejoin="round" stroke-linecap="round"${dashAttr(dash)}><title>${escapeXml(s.name)}</title></path>`,
    );
  }
}

/** Legend rows from `top`: every name in full, wrapped so none runs past the right edge. */
function drawLegend(out: string[], top: number, names: string[]): number {
  let lx = M.left;
  let ly = top;
  const room = W - M.left - M.right;
  names.forEach((full, i) => {
    const fits = Math.floor((room - 40) / CHAR_W);
    const name = full.length > fits ? `${full.slice(0, fits - 1)}…` : full;
    const w = 26 + name.length * CHAR_W + 14;
    if (lx + w > W - M.right && lx > M.left) {
      lx = M.left;
      ly += 18;
    }
    const { colour, dash } = styleOf(i);
    out.push(
      `<g class="legend-item"><line x1="${lx}" x2="${lx + 20}" y1="${ly}" y2="${ly}" stroke="${colour}" stroke-width="3"${dashAttr(dash)}/><text x="${lx + 25}" y="${ly}" font-size="11" dominant-baseline="middle">${escapeXml(name)}<title>${escapeXml(full)}</title></text></g>`,
    );
    lx += w;
  });
  return names.length > 0 ? ly + 18 : top;
}

/**
 * One chart as an inline SVG (`<svg class="chart" data-chart-id=...>`): axes with ticks and
 * labels, one `<path class="series">` per series (and no other paths), shaded bands (fault
 * windows), dashed limit lines with their label, vertical markers. Overlaid series get a legend
 * that wraps and never clips; `facets` draws one small panel per series instead, titled with the
 * series' name, on one shared x and y scale, so no line hides another.
 *
 * @example
 * lineChartSvg({ id: 'ttft', title: 'TTFT p99', xLabel: 's', yLabel: 'ms', kind: 'line',
 *   series: [{ name: 'p99', points: [[0, 120], [1, 180]] }], limits: [{ y: 2200, label: 'limit 2200 ms' }] });
 */
export function lineChartSvg(chart: Chart): string {
  const series = chart.series.map((s, i) => ({
    name: s.name,
    i,
    points: s.points.filter((p) => Number.isFinite(p[0]) && Number.isFinite(p[1])).sort((a, b) => a[0] - b[0]),
  }));
  const dom = domainOf(chart, series);
  const body: string[] = [];
  let H: number;
  if (chart.facets === true && series.length > 1) {
    const cols = Math.min(series.length, 4);
    const cellW = (W - M.left + FACET.left - M.right) / cols;
    const cellH = FACET.title + FACET.h + FACET.bottom;
    series.forEach((s, k) => {
      const cx = M.left - FACET.left + (k % cols) * cellW;
      const cy = M.top + Math.floor(k / cols) * cellH;
      const box = { x: cx + FACET.left, y: cy + FACET.title, w: cellW - FACET.left - FACET.right, h: FACET.h };
      const { colour } = styleOf(s.i);
      body.push(`<g class="facet" data-series="${escapeXml(s.name)}">`);
      // The title may start over the tick labels' margin; a long one is squeezed to the panel's
      // width (at most 30%), past that it ends in an ellipsis (the full name is its tooltip).
      const room = cellW - 8 - FACET.right;
      const fits = Math.floor((room * 1.3) / FACET_CHAR_W);
      const title = s.name.length > fits ? `${s.name.slice(0, fits - 1)}…` : s.name;
      const squeeze = title.length * FACET_CHAR_W > room ? ` textLength="${r1(room)}" lengthAdjust="spacingAndGlyphs"` : '';
      body.push(`<text class="facet-title" x="${r1(cx + 8)}" y="${cy + 13}" font-size="10" font-weight="600" fill="${colour}"${squeeze}>${escapeXml(title)}<title>${escapeXml(s.name)}</title></text>`);
      drawPlot(body, box, dom, chart, [s], 4, false);
      body.push('</g>');
    });
    const plotsBottom = M.top + Math.ceil(series.length / cols) * cellH;
    body.push(`<text class="axis-label" x="${M.left + (W - M.left - M.right) / 2}" y="${plotsBottom + 12}" font-size="12" text-anchor="middle">${escapeXml(chart.xLabel)}</text>`);
    body.push(`<text class="axis-label" transform="translate(14 ${(M.top + plotsBottom) / 2}) rotate(-90)" font-size="12" text-anchor="middle">${escapeXml(chart.yLabel)}${dom.log ? ' (log)' : ''}</text>`);
    H = plotsBottom + 22;
    const bands = [...new Set((chart.bands ?? []).map((b) => b.label))];
    if (bands.length > 0) {
      body.push(`<g class="band-note"><rect x="${M.left}" y="${H - 4}" width="20" height="10" fill="${BAND_FILL}" fill-opacity="0.6"/><text x="${M.left + 25}" y="${H + 1}" font-size="11" dominant-baseline="middle">${escapeXml(bands.join('; '))}</text></g>`);
      H += 18;
    }
  } else {
    const box = { x: M.left, y: M.top, w: W - M.left - M.right, h: PLOT_H };
    drawPlot(body, box, dom, chart, series, 8, true);
    body.push(
      `<text class="axis-label" x="${M.left + box.w / 2}" y="${M.top + PLOT_H + 34}" font-size="12" text-anchor="middle">${escapeXml(chart.xLabel)}</text>`,
      `<text class="axis-label" transform="translate(16 ${M.top + PLOT_H / 2}) rotate(-90)" font-size="12" text-anchor="middle">${escapeXml(chart.yLabel)}${dom.log ? ' (log)' : ''}</text>`,
    );
    const legendTop = M.top + PLOT_H + M.bottom;
    H = drawLegend(body, legendTop, series.map((s) => s.name)) + 6;
  }
  return [
    `<svg class="chart" data-chart-id="${escapeXml(chart.id)}" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" role="img" aria-label="${escapeXml(chart.title)}">`,
    `<title>${escapeXml(chart.title)}</title>`,
    `<text class="chart-title" x="${M.left}" y="20" font-size="15" font-weight="600">${escapeXml(chart.title)}</text>`,
    ...body,
    '</svg>',
  ].join('\n');
}
