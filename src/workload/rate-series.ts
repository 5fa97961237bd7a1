import { readFileSync } from 'node:fs';
import { TailgateError } from '../core/index.js';

/** One control point of AIPerf's `--request-rate-series`: the rate at `time_s` seconds into the phase. */
export interface RatePoint {
  timeS: number;
  qps: number;
}

const bad = (message: string): TailgateError => new TailgateError('CONFIG_INVALID', message);

/**
 * Parses AIPerf's request-rate series JSON: `{"points": [{"time_s": 0, "qps": 5}, ...]}` or the bare
 * array; the rules are AIPerf's (`aiperf/config/rate_series.py`): only `points` at the top, only
 * `time_s` (>= 0) and `qps` (> 0) in a point, at least two points, times strictly increasing.
 *
 * @example parseRateSeries('[{"time_s":0,"qps":2},{"time_s":10,"qps":8}]', 'a.json') // [{timeS:0,qps:2},{timeS:10,qps:8}]
 */
export function parseRateSeries(text: string, source: string): RatePoint[] {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    throw bad(`--request-rate-series ${source}: not valid JSON`);
  }
  let list: unknown = doc;
  if (doc !== null && typeof doc === 'object' && !Array.isArray(doc)) {
    const keys = Object.keys(doc);
    if (keys.length !== 1 || keys[0] !== 'points') throw bad(`--request-rate-series ${source}: the JSON must contain exactly one top-level key: points (got ${keys.join(', ') || 'none'})`);
    list = (doc as { points: unknown }).points;
  } else if (!Array.isArray(doc)) throw bad(`--request-rate-series ${source}: must be an object with points or a points array`);
  if (!Array.isArray(list)) throw bad(`--request-rate-series ${source}: points must be an array`);
  const points = list.map((p: unknown, i) => pointOf(p, i, source));
  checkRateSeries(points, source);
  return points;
}

/**
 * AIPerf's rules on a series' points, for one given as data as well as one read from a file: at least
 * two, times finite, >= 0 and strictly increasing, rates finite and > 0 (a rate of 0 would never
 * send the next request).
 *
 * @throws TailgateError CONFIG_INVALID naming `source`
 */
export function checkRateSeries(points: readonly RatePoint[], source: string): void {
  if (points.length < 2) throw bad(`--request-rate-series ${source}: needs at least two points (got ${points.length})`);
  points.forEach((p, i) => {
    if (!Number.isFinite(p.timeS) || p.timeS < 0) throw bad(`--request-rate-series ${source}: point ${i}: time_s must be a finite number >= 0 (got ${p.timeS})`);
    if (!Number.isFinite(p.qps) || p.qps <= 0) throw bad(`--request-rate-series ${source}: point ${i}: qps must be a finite number > 0 (got ${p.qps})`);
    if (i > 0 && p.timeS <= points[i - 1]!.timeS) throw bad(`--request-rate-series ${source}: time_s values must be strictly increasing (point ${i}: ${p.timeS} after ${points[i - 1]!.timeS})`);
  });
}

function pointOf(p: unknown, i: number, source: string): RatePoint {
  if (p === null || typeof p !== 'object' || Array.isArray(p)) throw bad(`--request-rate-series ${source}: point ${i} must be an object {"time_s", "qps"}`);
  const extra = Object.keys(p).filter((k) => k !== 'time_s' && k !== 'qps');
  if (extra.length > 0) throw bad(`--request-rate-series ${source}: point ${i} has unknown key ${extra[0]} (only time_s and qps)`);
  const { time_s: t, qps } = p as { time_s?: unknown; qps?: unknown };
  // Types here; the ranges, for data given in code too, in checkRateSeries.
  if (typeof t !== 'number') throw bad(`--request-rate-series ${source}: point ${i}: time_s must be a finite number >= 0 (got ${JSON.stringify(t)})`);
  if (typeof qps !== 'number') throw bad(`--request-rate-series ${source}: point ${i}: qps must be a finite number > 0 (got ${JSON.stringify(qps)})`);
  return { timeS: t, qps };
}

/** Reads and parses a `--request-rate-series` file; a missing file is one clear line. */
export function readRateSeries(path: string): RatePoint[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw bad(`--request-rate-series ${path}: cannot read the file (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
  return parseRateSeries(text, path);
}

/**
 * The rate at `t` seconds: linear between points, the first point's rate before it and the last
 * point's after it, as AIPerf's RateSeriesController holds them.
 */
export function rateAt(points: readonly RatePoint[], t: number): number {
  const first = points[0]!;
  const last = points[points.length - 1]!;
  if (t <= first.timeS) return first.qps;
  if (t >= last.timeS) return last.qps;
  let i = 1;
  while (points[i]!.timeS < t) i++;
  const a = points[i - 1]!;
  const b = points[i]!;
  return a.qps + ((b.qps - a.qps) * (t - a.timeS)) / (b.timeS - a.timeS);
}

/**
 * A rate schedule as a piecewise-linear rate over time, with AIPerf's order: an optional linear ramp
 * (`--request-rate-ramp-duration`, from the first rate x 0.1 s / ramp, AIPerf's update interval, to
 * the first rate), then the series, its time 0 at the ramp's end (AIPerf's `start_delay`).
 */
export function seriesWithRamp(points: readonly RatePoint[], rampMs: number): RatePoint[] {
  if (rampMs <= 0) return [...points];
  const rampS = rampMs / 1000;
  const q0 = points[0]!.qps;
  return [{ timeS: 0, qps: Math.min(q0, (q0 * 0.1) / rampS) }, { timeS: rampS, qps: q0 }, ...points.map((p) => ({ timeS: rampS + p.timeS, qps: p.qps }))];
}

/**
 * Inverts the cumulative rate: the time (s) by which the piecewise-linear rate has sent `n` requests
 * (n = integral of the rate from 0). Arrivals drawn at one request per second and mapped through it
 * follow the varying rate with their shape kept (Poisson stays Poisson, constant stays evenly spaced
 * in expected count) — the continuous form of AIPerf's 0.1 s rate updates.
 *
 * @example timeForCount([{timeS:0,qps:2},{timeS:10,qps:2}], 4) // 2
 */
export function timeForCount(points: readonly RatePoint[], n: number): number {
  if (n <= 0) return 0;
  let sent = 0;
  let t = 0;
  // Before the first point the first rate holds; the segments follow; after the last its rate holds.
  const knots: RatePoint[] = [{ timeS: 0, qps: points[0]!.qps }, ...points.filter((p) => p.timeS > 0)];
  for (let i = 1; i < knots.length; i++) {
    const a = knots[i - 1]!;
    const b = knots[i]!;
    const dt = b.timeS - a.timeS;
    const area = ((a.qps + b.qps) * dt) / 2;
    if (sent + area >= n) return a.timeS + solveSegment(a.qps, (b.qps - a.qps) / dt, n - sent);
    sent += area;
    t = b.timeS;
  }
  return t + (n - sent) / points[points.length - 1]!.qps;
}

/** Smallest x >= 0 with r0 x + slope x^2 / 2 = need (the rate r0 + slope x stays > 0 on the segment). */
function solveSegment(r0: number, slope: number, need: number): number {
  if (Math.abs(slope) < 1e-12) return need / r0;
  return (-r0 + Math.sqrt(Math.max(0, r0 * r0 + 2 * slope * need))) / slope;
}
