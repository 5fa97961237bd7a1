import { TailgateError, createRng } from '../core/index.js';
import type { EngineProfile } from '../engine/index.js';
import type { Level, LevelFigures } from './level.js';
import { nelderMead, nonNegativeLeastSquares } from './least-squares.js';
import { predictLevel, simLevelOf } from './predict.js';
import { CALIBRATE_DEFAULTS } from './defaults.js';

/** The parameters a fit can set, and whether the data pinned each one down. */
export type FittedName = 'stepBaseMs' | 'prefillMsPerToken' | 'decodeMsPerToken' | 'frontendOverheadMs' | 'maxNumSeqs' | 'kvBlocks';

/** One fitted parameter with its 95% interval. */
export interface FittedParam {
  name: FittedName;
  value: number;
  low: number;
  high: number;
  /** False: the data says little about it (the value is the base profile's or a rough estimate; see the warnings). */
  pinned: boolean;
  /** How it was found, in a few words. */
  method: string;
}

/** Options of {@link fitProfile}. */
export interface FitOptions {
  /** Where the fields the data cannot show come from (block size, token budget, ...). */
  base: EngineProfile;
  /** The fitted profile's name. @default 'calibrated' */
  name?: string;
  /** Seed of the bootstrap and the simulations. @default 1 */
  seed?: number;
  /** Rounds of "simulate, measure the analytic model's error, refit" before the search. @default 2 */
  rounds?: number;
  /** Simulated evaluations of the prefill/frontend search (each runs every level). @default 30 */
  evaluations?: number;
  /** Bootstrap resamples for the step-time intervals. @default 400 */
  resamples?: number;
  /** Skip the intervals (leave-one-out refits need only the values). @default false */
  noIntervals?: boolean;
}

/** What {@link fitProfile} found. */
export interface FitResult {
  profile: EngineProfile;
  params: FittedParam[];
  warnings: string[];
  /** Simulated runs the fit made. */
  simulations: number;
}

/** A level as the step-time regression sees it (per worker, per ms). */
interface StepRow {
  /** Mean step time: the ITL mean. */
  stepMs: number;
  /** Prefill tokens per step: request rate x step time x prompt tokens prefilled. */
  prefill: number;
  /** Decodes per step: request rate x step time x (output tokens - 1). */
  decode: number;
  /** Standard error of stepMs. */
  se: number;
}

/** Relative spread of the prefill/decode ratio below which the two costs cannot be told apart. */
const COLLINEAR_SPREAD = 0.15;
const MIN_STEP_BASE_MS = 0.01;
const HUBER_K = 2;
/** The frontend times (shares of the lowest TTFT) the search starts from. */
const FRONTEND_GRID = [0, 1 / 32, 1 / 8, 1 / 4, 1 / 2];
/** Multiples of a value a profile scan tries on each side. */
const SCAN = [0.95, 0.85, 0.6, 0.3, 0];
/** Floors of the relative standard errors a level's TTFT p50 and ITL mean are weighed by. */
const TTFT_REL_SE_FLOOR = 0.05;
const ITL_REL_SE_FLOOR = 0.02;
/** The relative error a level's TTFT p99 (and p50, beside a mean) is weighed by (a tail is noisier than a mean). */
const TTFT_P99_REL_SE = 0.1;
/** Fewer measured requests than this, and a TTFT p99 lies between the slowest two: one disturbed request, not weighed. */
const TAIL_MIN_REQUESTS = 100;
/** A parameter whose 95% interval is wider than this share of its value is reported as not pinned down. */
const LOOSE_SHARE = 0.5;

/**
 * Checks that levels can be fitted together: at least two, one model, one server.
 *
 * @throws TailgateError CONFIG_INVALID naming the file and what is wrong
 */
export function checkLevels(levels: readonly Level[]): void {
  if (levels.length === 0) throw new TailgateError('CLI_USAGE', 'give at least two RUNs (bench output directories or profile_export_aiperf.json files)');
  if (levels.length === 1) throw new TailgateError('CONFIG_INVALID', `${levels[0]!.source}: a single load level cannot be fitted: give runs at two or more concurrencies or rates`);
  const first = levels[0]!;
  for (const l of levels.slice(1)) {
    if (l.model !== first.model) throw new TailgateError('CONFIG_INVALID', `${l.source}: model "${l.model}" differs from "${first.model}" in ${first.source}: fit one model at a time`);
    if (l.server !== first.server) throw new TailgateError('CONFIG_INVALID', `${l.source}: server ${l.server || '(none named)'} differs from ${first.server || '(none named)'} in ${first.source}: fit one server at a time`);
    if (l.workers !== first.workers) throw new TailgateError('CONFIG_INVALID', `${l.source}: ${l.workers} workers differ from ${first.workers} in ${first.source}: fit one fleet size at a time`);
  }
}

/**
 * Fits an engine profile to measured load levels (docs/calibrate.md has the method):
 * 1. step time: mean step = base + prefill cost x prefill tokens per step + decode cost x decodes
 *    per step, where in steady state per step the engine prefills (request rate x step x prompt
 *    tokens) and decodes (request rate x step x (output tokens - 1)); with the ITL mean as the
 *    step, that is linear in the three costs: non-negative least squares on relative errors;
 * 2. the simulator runs every level; the gap between its ITL and the formula on its own rates
 *    (ramp-up, drain, uneven steps) is taken off the measured ITL and 1 is solved again (twice);
 * 3. prefill cost and frontend time: a grid, then Nelder-Mead, on the simulator's TTFT (mean or
 *    p50, and p99) and ITL against the measured ones (Huber loss), base and decode cost following
 *    from 1 for each candidate; one more round of 2 and a shorter search.
 * Intervals: a parametric bootstrap of base and decode cost over the ITL's standard errors;
 * profile scans (objective within 3.84 of the best) for prefill cost and frontend time.
 *
 * @example
 * const fit = fitProfile(runs.map(readRun), { base: getProfile('small') });
 * fit.profile.decodeMsPerToken;
 * @throws TailgateError CONFIG_INVALID for levels that cannot be fitted (see `checkLevels`)
 */
export function fitProfile(levels: readonly Level[], opts: FitOptions): FitResult {
  checkLevels(levels);
  const warnings: string[] = [];
  const sims = levels.map(simLevelOf);
  let simulations = 0;
  const simulate = (p: EngineProfile): LevelFigures[] => {
    simulations += sims.length;
    return sims.map((s) => predictLevel(s, p, opts.seed ?? CALIBRATE_DEFAULTS.seed));
  };
  const rows = levels.map((l) => stepRow(l, itlMean(l)));
  const ratios = rows.map((r) => r.prefill / r.decode);
  const collinear = Math.max(...ratios) / Math.min(...ratios) - 1 < COLLINEAR_SPREAD;
  const priorRatio = opts.base.decodeMsPerToken > 0 ? opts.base.prefillMsPerToken / opts.base.decodeMsPerToken : 0;
  if (collinear) warnings.push(`every level prefills about ${fmt(Math.min(...ratios))} prompt tokens per decode: the ITL cannot tell prefill from decode cost, so the prefill cost rests on TTFT alone (started from the base profile's ratio, ${fmt(priorRatio)} x decode cost). Levels with different input/output lengths pin it down.`);
  let [stepBase, prefill, decode] = fitStep(rows, rows.map((r) => r.stepMs), collinear ? priorRatio : null);
  const capFit = fitCap(levels, opts.base, warnings);
  const kvFit = fitKv(levels, opts.base, warnings);
  const fMax = Math.max(0.1, Math.min(...levels.map((l) => ttftOf(l.measured, ttftMean(l)))));
  let frontend = fMax / 4;
  const profileOf = (): EngineProfile => ({ ...opts.base, name: opts.name ?? CALIBRATE_DEFAULTS.name, stepBaseMs: stepBase, prefillMsPerToken: prefill, decodeMsPerToken: decode, frontendOverheadMs: frontend, maxNumSeqs: capFit.value, kvBlocks: Math.round(kvFit.value) });
  // Prefill cost and frontend time are searched on the simulator's TTFT and ITL; base and decode
  // cost follow from them in closed form (least squares on the ITL targets).
  let targets = rows.map((r) => r.stepMs);
  // Each level weighs by its figures' relative standard errors, floored (a live clock's own error).
  const ttftRelSe = levels.map((l) => Math.max(TTFT_REL_SE_FLOOR, (l.measured.ttftMeanSeMs ?? 0) / ttftOf(l.measured, ttftMean(l))));
  const itlRelSe = levels.map((l) => Math.max(ITL_REL_SE_FLOOR, (l.measured.itlMeanSeMs ?? 0) / itlOf(l.measured, itlMean(l))));
  const aScale = Math.max(prefill, priorRatio * decode, 1e-4);
  // Prefill may take at most 90% of any level's step (the rest is base and decodes).
  const aMax = 0.9 * Math.min(...rows.map((r) => (r.prefill > 0 ? r.stepMs / r.prefill : Number.POSITIVE_INFINITY)));
  const set = (x: readonly number[]): void => {
    prefill = Math.min(Math.abs(x[0]!) * aScale, aMax);
    frontend = Math.min(fMax, Math.abs(x[1]!));
    [stepBase, decode] = fitGivenPrefill(rows, targets, prefill);
  };
  const error = (x: readonly number[]): number => {
    set(x);
    const got = simulate(profileOf());
    // A weak prior on the prefill cost (the base profile's, within a factor of ten) keeps it sane where the data is flat in it.
    const prior = opts.base.prefillMsPerToken > 0 && prefill > 0 ? (Math.log(prefill / opts.base.prefillMsPerToken) / Math.log(10)) ** 2 : 0;
    return got.reduce((e, g, i) => {
      const l = levels[i]!;
      const m = l.measured;
      // TTFT p99 is the frontend's queue when a wave of requests arrives together: it pins the frontend time
      // (given a hundred requests or more: below that it is the slowest one or two).
      // A tail and a median of a few dozen requests are noisier than the mean: their errors scale with it.
      const tail = l.requestCount >= TAIL_MIN_REQUESTS && m.ttftP99Ms !== null && g.ttftP99Ms !== null ? huber(Math.log(g.ttftP99Ms / m.ttftP99Ms) / Math.max(TTFT_P99_REL_SE, 3 * ttftRelSe[i]!)) : 0;
      // With a mean to fit as well, the median still counts: a mean can be all tail.
      const median = ttftMean(l) && Number.isFinite(m.ttftP50Ms) ? huber(Math.log(g.ttftP50Ms / m.ttftP50Ms) / Math.max(TTFT_P99_REL_SE, 1.25 * ttftRelSe[i]!)) : 0;
      return e + huber(Math.log(ttftOf(g, ttftMean(l)) / ttftOf(m, ttftMean(l))) / ttftRelSe[i]!) + huber(Math.log(itlOf(g, itlMean(l)) / itlOf(m, itlMean(l))) / itlRelSe[i]!) + tail + median;
    }, prior);
  };
  const evaluations = opts.evaluations ?? 30;
  // The simulator's own ITL against the linear formula on its own rates is the formula's error
  // at each level (ramp-up, drain, uneven steps); it is taken off the measured ITL and refitted.
  const correct = (): void => {
    const got = simulate(profileOf());
    targets = rows.map((r, i) => {
      const simRow = stepRow({ ...levels[i]!, measured: got[i]! }, itlMean(levels[i]!));
      return r.stepMs - (simRow.stepMs - (stepBase + prefill * simRow.prefill + decode * simRow.decode));
    });
  };
  frontend = fMax / 8;
  for (let round = 0; round < (opts.rounds ?? 2); round++) {
    correct();
    [stepBase, prefill, decode] = fitStep(rows, targets, collinear ? priorRatio : null);
    prefill = Math.min(prefill, aMax);
  }
  // TTFT is a staircase in the frontend time (a request waits for the next step boundary), so a
  // coarse grid picks the start and the simplex polishes from there.
  // The prefill cost joins the grid at the fitted value, a quarter and four times it, and the base profile's.
  const aGrid = [...new Set([prefill, prefill / 4, Math.min(4 * prefill, aMax), Math.min(opts.base.prefillMsPerToken, aMax)])];
  const grid = aGrid.flatMap((a) => FRONTEND_GRID.map((g) => [a / aScale, g * fMax]));
  const scores = grid.map((x) => error(x));
  let x = grid[scores.indexOf(Math.min(...scores))]!;
  x = nelderMead(error, x, [0.3 * Math.max(Math.abs(x[0]!), 0.05), Math.max(x[1]! / 2, fMax / 16)], evaluations);
  set(x);
  correct();
  x = nelderMead(error, x, [0.1 * Math.max(Math.abs(x[0]!), 0.1), 0.1 * Math.max(Math.abs(x[1]!), 1)], Math.ceil(evaluations / 3));
  set(x);
  const best = error(x);
  const profile = profileOf();
  if (opts.noIntervals === true) {
    const params = [point('stepBaseMs', stepBase), point('prefillMsPerToken', prefill), point('decodeMsPerToken', decode), point('frontendOverheadMs', frontend), capFit, kvFit];
    return { profile, params, warnings, simulations };
  }
  const seed = opts.seed ?? CALIBRATE_DEFAULTS.seed;
  // Profile scans: the values whose objective stays within 3.84 (chi-square, one degree of freedom) of the best.
  const [aLow, aHigh] = scanInterval((v) => error([v / aScale, x[1]!]), prefill, best);
  const [fLow, fHigh] = scanInterval((v) => error([x[0]!, v]), frontend, best);
  set(x);
  const boot = bootstrapStep(rows, targets, prefill, opts.resamples ?? 400, seed);
  const params: FittedParam[] = [
    { name: 'stepBaseMs', value: stepBase, low: boot[0]![0], high: boot[0]![1], pinned: true, method: 'least squares on ITL mean (given the prefill cost), bootstrap interval' },
    { name: 'prefillMsPerToken', value: prefill, low: aLow, high: aHigh, pinned: true, method: 'Nelder-Mead on simulated TTFT mean and ITL mean' },
    { name: 'decodeMsPerToken', value: decode, low: boot[1]![0], high: boot[1]![1], pinned: true, method: 'least squares on ITL mean (given the prefill cost), bootstrap interval' },
    { name: 'frontendOverheadMs', value: frontend, low: fLow, high: fHigh, pinned: true, method: 'Nelder-Mead on simulated TTFT mean and ITL mean' },
    capFit,
    kvFit,
  ];
  for (const p of params) {
    if (p.pinned && p.value > 0 && (p.high - p.low) / 2 > LOOSE_SHARE * p.value) {
      p.pinned = false;
      warnings.push(`${p.name} is poorly determined by these levels: ${fmt(p.value)} (95% interval ${fmt(p.low)} to ${fmt(p.high)})`);
    }
  }
  return { profile, params, warnings, simulations };
}

/** Whether a level's file gives means (the fit compares means then: smoother in the parameters than medians). */
const ttftMean = (l: Level): boolean => Number.isFinite(l.measured.ttftMeanMs);
const itlMean = (l: Level): boolean => Number.isFinite(l.measured.itlMeanMs);
const ttftOf = (f: LevelFigures, mean: boolean): number => (mean ? f.ttftMeanMs : f.ttftP50Ms);
const itlOf = (f: LevelFigures, mean: boolean): number => (mean ? f.itlMeanMs : f.itlP50Ms);

/** A level's step-time regression row (`mean`: read the ITL mean, else its median); request rate per worker per ms. */
function stepRow(level: Level, mean: boolean): StepRow {
  const rate = level.measured.requestsPerS / level.workers / 1000;
  const t = itlOf(level.measured, mean);
  const hit = level.serverMetrics?.prefixHitRatio ?? 0;
  return {
    stepMs: t,
    prefill: rate * t * level.inputTokens * (1 - hit),
    decode: rate * t * (level.outputTokens - 1),
    se: level.measured.itlMeanSeMs ?? 0.02 * t,
  };
}

/** Non-negative least squares on relative errors; with `ratio`, prefill cost = ratio x decode cost. */
function fitStep(rows: readonly StepRow[], targets: readonly number[], ratio: number | null): [number, number, number] {
  const w = targets.map((t) => 1 / Math.max(t, 1e-9));
  if (ratio !== null) {
    const x = nonNegativeLeastSquares(rows.map((r, i) => [w[i]!, (r.decode + ratio * r.prefill) * w[i]!]), targets.map((t, i) => t * w[i]!)) ?? [0, 0];
    return [x[0]!, ratio * x[1]!, x[1]!];
  }
  const x = nonNegativeLeastSquares(rows.map((r, i) => [w[i]!, r.prefill * w[i]!, r.decode * w[i]!]), targets.map((t, i) => t * w[i]!)) ?? [0, 0, 0];
  return [x[0]!, x[1]!, x[2]!];
}

/** Base and decode cost by least squares on relative errors, the prefill cost given. */
function fitGivenPrefill(rows: readonly StepRow[], targets: readonly number[], prefill: number): [number, number] {
  const w = targets.map((t) => 1 / Math.max(t, 1e-9));
  const x = nonNegativeLeastSquares(rows.map((r, i) => [w[i]!, r.decode * w[i]!]), targets.map((t, i) => (t - prefill * rows[i]!.prefill) * w[i]!)) ?? [0, 0];
  // A step always costs something (the schema needs a positive base).
  return [Math.max(x[0]!, MIN_STEP_BASE_MS), x[1]!];
}

/** Base and decode cost refitted on ITL targets drawn from their standard errors: [low, high] of each. */
function bootstrapStep(rows: readonly StepRow[], targets: readonly number[], prefill: number, resamples: number, seed: number): [number, number][] {
  const rng = createRng(seed);
  const draws: number[][] = [[], []];
  for (let b = 0; b < resamples; b++) {
    fitGivenPrefill(rows, rows.map((r, i) => rng.normal(targets[i]!, r.se)), prefill).forEach((v, j) => draws[j]!.push(v));
  }
  return draws.map((d) => {
    d.sort((x, y) => x - y);
    return [d[Math.floor(0.025 * (d.length - 1))]!, d[Math.ceil(0.975 * (d.length - 1))]!];
  });
}

const point = (name: FittedName, value: number): FittedParam => ({ name, value, low: value, high: value, pinned: true, method: 'fitted (no interval asked for)' });

/** Huber's loss on a standardised residual: squared within HUBER_K, linear beyond (one disturbed level does not pull the fit). */
function huber(z: number): number {
  const a = Math.abs(z);
  return a <= HUBER_K ? a * a : 2 * HUBER_K * a - HUBER_K * HUBER_K;
}

/** [low, high]: how far a value moves each way before `objective` rises 3.84 over `best` (a grid of multiples). */
function scanInterval(objective: (v: number) => number, value: number, best: number): [number, number] {
  const limit = best + 3.84;
  let low = 0;
  for (const m of SCAN) {
    if (objective(value * m) > limit) {
      low = value * m;
      break;
    }
  }
  let high = Number.POSITIVE_INFINITY;
  for (const m of SCAN.map((k) => 2 - k).concat([3, 5])) {
    if (objective(value * m) > limit) {
      high = value * m;
      break;
    }
  }
  return [low, high];
}

/** The running cap: the most running sequences seen at a level where requests also waited. */
function fitCap(levels: readonly Level[], base: EngineProfile, warnings: string[]): FittedParam {
  const capped = levels.filter((l) => l.serverMetrics !== null && l.serverMetrics.waitingMax >= 1 && l.load.kind === 'closed' && l.serverMetrics.runningMax < l.load.concurrency / l.workers - 0.5);
  const perWorkerMax = Math.max(...levels.map((l) => (l.load.kind === 'closed' ? l.load.concurrency / l.workers : 0)));
  if (capped.length > 0) {
    const value = Math.round(Math.max(...capped.map((l) => l.serverMetrics!.runningMax)));
    return { name: 'maxNumSeqs', value, low: value, high: value, pinned: true, method: `vllm:num_requests_running peak where requests waited (${capped.map((l) => l.label).join(', ')})` };
  }
  const value = Math.max(base.maxNumSeqs, Math.ceil(perWorkerMax));
  warnings.push(`maxNumSeqs: no level shows the running cap (no server metrics with requests waiting below the concurrency); kept at ${value}, at least the highest concurrency per worker measured`);
  return { name: 'maxNumSeqs', value, low: Math.ceil(perWorkerMax), high: Number.POSITIVE_INFINITY, pinned: false, method: 'not shown by the data' };
}

/** KV capacity from cache usage: blocks the running sequences hold over the usage share, per level. */
function fitKv(levels: readonly Level[], base: EngineProfile, warnings: string[]): FittedParam {
  const estimates = levels.flatMap((l) => {
    const m = l.serverMetrics;
    if (m === null || m.kvUsageAvg === null || m.kvUsageAvg < 0.02) return [];
    const blocks = (m.runningAvg * (l.inputTokens + l.outputTokens / 2)) / base.blockSize;
    return [blocks / m.kvUsageAvg];
  });
  if (estimates.length === 0) {
    warnings.push(`kvBlocks: no level used 2% of the KV cache or more (or no server metrics); kept at ${base.kvBlocks}`);
    return { name: 'kvBlocks', value: base.kvBlocks, low: base.kvBlocks, high: base.kvBlocks, pinned: false, method: 'not shown by the data' };
  }
  estimates.sort((a, b) => a - b);
  const value = estimates[Math.floor(estimates.length / 2)]!;
  return { name: 'kvBlocks', value: Math.round(value), low: estimates[0]!, high: estimates.at(-1)!, pinned: true, method: 'running x blocks per sequence / vllm:kv_cache_usage_perc (median over levels)' };
}

/** Four significant digits. */
export function fmt(v: number): string {
  return Number.isFinite(v) ? String(Number(v.toPrecision(4))) : String(v);
}
