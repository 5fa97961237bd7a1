import { studentTQuantile } from '../stats/index.js';
import { statValue, trialFigures, type FigureDef, type TrialFigure } from './figures.js';
import type { RunSide } from './load-run.js';
import { COMPARE_DEFAULTS } from './defaults.js';

/** One figure of A against B. */
export interface FigureComparison {
  def: FigureDef;
  /** A's and B's value (the mean over trials when there are several). */
  a: number;
  b: number;
  /** b - a. */
  diff: number;
  /** b / a; null when a is 0. */
  ratio: number | null;
  /** Interval of b - a at `level`; null when neither trials nor samples give one. */
  interval: [number, number] | null;
  /** Hedges' g over trials, else Cohen's d over the samples inside the trials; null when undefined. */
  effect: number | null;
  /** What the interval and effect stand on. */
  basis: 'trials' | 'samples' | 'values';
  nA: number;
  nB: number;
  /** Each trial's own value, A's and B's, in trial order. */
  trialValues: { a: number[]; b: number[] };
  /** The interval excludes 0 (or there is none) and the change passes the figure's materiality. */
  beyondNoise: boolean;
  /** How much this figure explains the gap: its change on a log scale, for a worker's figure beyond the other workers' change; 0 when within noise. */
  score: number;
}

const mean = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;
const variance = (xs: readonly number[]): number => {
  const m = mean(xs);
  return xs.length > 1 ? xs.reduce((a, b) => a + (b - m) ** 2, 0) / (xs.length - 1) : 0;
};
const clampEffect = (x: number): number => Math.max(-99, Math.min(99, x));

/** Welch's interval of mean(b) - mean(a) and the standardized difference (pooled sd). */
function welch(a: readonly number[], b: readonly number[], level: number): { interval: [number, number]; effect: number | null } {
  const va = variance(a);
  const vb = variance(b);
  const d = mean(b) - mean(a);
  const se2 = va / a.length + vb / b.length;
  const df = se2 === 0 ? 1 : se2 ** 2 / ((va / a.length) ** 2 / Math.max(1, a.length - 1) + (vb / b.length) ** 2 / Math.max(1, b.length - 1));
  const half = se2 === 0 ? 0 : studentTQuantile(1 - (1 - level) / 2, Math.max(1, df)) * Math.sqrt(se2);
  const pooled = Math.sqrt(((a.length - 1) * va + (b.length - 1) * vb) / Math.max(1, a.length + b.length - 2));
  const correction = 1 - 3 / (4 * (a.length + b.length) - 9);
  const effect = pooled > 0 ? clampEffect((d / pooled) * (a.length + b.length > 3 ? correction : 1)) : d === 0 ? 0 : null;
  return { interval: [d - half, d + half], effect };
}

/** Distribution-free interval of a quantile from its order statistics (normal approximation of the binomial). */
function quantileInterval(xs: readonly number[], q: number, level: number): [number, number] {
  const s = Float64Array.from(xs).sort();
  const n = s.length;
  const z = studentTQuantile(1 - (1 - level) / 2, 1e6);
  const half = z * Math.sqrt(n * q * (1 - q));
  const lo = Math.max(0, Math.floor(n * q - half) - 1);
  const hi = Math.min(n - 1, Math.ceil(n * q + half));
  return [s[lo]!, s[hi]!];
}

/** Interval of b - a from the samples inside the trials: Welch for means, order statistics for quantiles. */
function sampleInterval(def: FigureDef, a: number[], b: number[], level: number): { interval: [number, number] | null; effect: number | null } {
  if (a.length < MIN_SAMPLES || b.length < MIN_SAMPLES) return { interval: null, effect: null };
  const w = welch(a, b, level);
  if (def.stat === 'mean') return w;
  if (def.stat === 'p99' || def.stat === 'p50') {
    const q = def.stat === 'p99' ? 0.99 : 0.5;
    const ia = quantileInterval(a, q, level);
    const ib = quantileInterval(b, q, level);
    return { interval: [ib[0] - ia[1], ib[1] - ia[0]], effect: w.effect };
  }
  return { interval: null, effect: w.effect };
}

/** The change of a figure, on the log scale its kind is weighed on. */
export function logChange(def: FigureDef, a: number, b: number): number {
  if (def.kind === 'bits') return a === b ? 0 : 1.5;
  const floor = def.kind === 'share' ? 0.01 : def.kind === 'count' ? Math.max(def.material, 1e-9) : 1e-9;
  return Math.log((Math.max(0, b) + floor) / (Math.max(0, a) + floor));
}

function material(def: FigureDef, a: number, b: number): boolean {
  if (def.kind === 'bits') return a !== b;
  if (def.kind === 'ratio') return Math.abs(logChange(def, a, b)) >= Math.log(def.material);
  return Math.abs(b - a) >= def.material;
}

/** Trials per side from which the trials themselves are the samples (fewer give intervals too wide to say anything: t(0.975, 1) = 12.7). */
const MIN_TRIALS = 3;
/** Samples per side below which no interval is drawn from them (a short trial has few per-second samples). */
const MIN_SAMPLES = 5;

function compareOne(def: FigureDef, fa: TrialFigure[], fb: TrialFigure[], level: number): FigureComparison {
  const va = fa.map((f) => f.value);
  const vb = fb.map((f) => f.value);
  let basis: FigureComparison['basis'];
  let interval: [number, number] | null;
  let effect: number | null;
  let a: number;
  let b: number;
  if (va.length >= MIN_TRIALS && vb.length >= MIN_TRIALS) {
    basis = 'trials';
    ({ interval, effect } = welch(va, vb, level));
    a = mean(va);
    b = mean(vb);
  } else {
    const sa = fa.flatMap((f) => f.samples);
    const sb = fb.flatMap((f) => f.samples);
    ({ interval, effect } = sampleInterval(def, sa, sb, level));
    basis = interval === null ? 'values' : 'samples';
    // Pooled over the trials, the statistic of the samples; a figure without samples is the mean of its trials' values.
    const pooled = def.stat !== 'last' && def.ownValue !== true;
    a = pooled && sa.length > 0 ? statValue(def.stat, sa) : mean(va);
    b = pooled && sb.length > 0 ? statValue(def.stat, sb) : mean(vb);
  }
  const diff = b - a;
  // Samples inside a trial are not independent of one another: with two trials a side, the trials must not overlap either.
  const apart = va.length < 2 || vb.length < 2 || basis === 'trials' || Math.min(...vb) > Math.max(...va) || Math.max(...vb) < Math.min(...va);
  const excludesZero = (interval === null || interval[0] > 0 || interval[1] < 0) && apart;
  const beyondNoise = excludesZero && material(def, a, b);
  return { def, a, b, diff, ratio: a !== 0 ? b / a : null, interval, effect, basis, nA: va.length, nB: vb.length, trialValues: { a: va, b: vb }, beyondNoise, score: beyondNoise ? Math.abs(logChange(def, a, b)) : 0 };
}

const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((x, y) => x - y);
  const m = s.length >> 1;
  return s.length === 0 ? 0 : s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

/** A worker's figure explains only what sets it apart: its change beyond the median change of the other workers. */
function concentrate(rows: FigureComparison[]): void {
  const byMetric = new Map<string, FigureComparison[]>();
  for (const r of rows) if (r.def.scope === 'worker') byMetric.set(r.def.metric, [...(byMetric.get(r.def.metric) ?? []), r]);
  for (const list of byMetric.values()) {
    if (list.length < 2) continue;
    const changes = list.map((r) => logChange(r.def, r.a, r.b));
    list.forEach((r, i) => {
      const others = median(changes.filter((_, j) => j !== i));
      const own = changes[i]! - others;
      const ownMaterial = r.def.kind === 'bits' ? own !== 0 : r.def.kind === 'ratio' ? Math.abs(own) >= Math.log(r.def.material) : Math.abs(r.diff - median(list.filter((_, j) => j !== i).map((x) => x.diff))) >= r.def.material;
      r.score = r.beyondNoise && ownMaterial ? Math.abs(own) : 0;
      if (r.score === 0) r.beyondNoise = r.beyondNoise && ownMaterial;
    });
  }
}

/** Options of {@link compareSides}. */
export interface CompareOptions {
  /** Level of every interval. @default 0.95 */
  level?: number;
}

/**
 * Every figure both sides have, compared: difference, ratio, interval, effect size, and whether it
 * is beyond run-to-run noise; diagnostic figures scored by how much they explain the gap.
 *
 * @example compareSides(await readRunSide('A', ['a']), await readRunSide('B', ['b'])).filter((c) => c.beyondNoise);
 */
export function compareSides(a: RunSide, b: RunSide, opts: CompareOptions = {}): FigureComparison[] {
  const level = opts.level ?? COMPARE_DEFAULTS.level;
  const collect = (s: RunSide): Map<string, TrialFigure[]> => {
    const m = new Map<string, TrialFigure[]>();
    for (const t of s.trials) for (const [k, f] of trialFigures(t)) {
        const list = m.get(k);
        if (list) list.push(f);
        else m.set(k, [f]);
      }
    return m;
  };
  const fa = collect(a);
  const fb = collect(b);
  const rows: FigureComparison[] = [];
  for (const [k, listA] of fa) {
    const listB = fb.get(k);
    if (!listB) continue;
    rows.push(compareOne({ ...listA[0]!.def, gated: listA[0]!.def.gated || listB[0]!.def.gated }, listA, listB, level));
  }
  concentrate(rows);
  return rows.sort((x, y) => Number(y.def.gated) - Number(x.def.gated) || Number(y.def.outcome === true) - Number(x.def.outcome === true) || y.score - x.score || x.def.key.localeCompare(y.def.key, 'en', { numeric: true }));
}

