/**
 * AIPerf's `--adaptive-scale` settings and its SLA filters (docs/reference.md#aiperf-adaptive-scale):
 * one run ramps a control value while every SLA filter passes over an assessment window, then holds
 * the last passing value. This file parses and checks the settings and evaluates the filters on a
 * window; adaptive-controller.ts drives the load.
 */
import { TailgateError, type RequestRecord } from '../core/index.js';
import { percentile, recordMetrics } from '../stats/index.js';
import { ADAPTIVE_DEFAULTS, type StepPolicy } from './defaults.js';

/** The load dimensions AIPerf's adaptive scale can move; bench moves `concurrency` and `prefill_concurrency`. */
export const ADAPTIVE_CONTROL_VARIABLES = ['concurrency', 'prefill_concurrency', 'request_rate', 'users'] as const;
/** One of AIPerf's control variables. */
export type AdaptiveControlVariable = (typeof ADAPTIVE_CONTROL_VARIABLES)[number];
/** An SLA filter's comparison: observed lt, le, gt or ge the threshold. */
export type SlaOp = 'lt' | 'le' | 'gt' | 'ge';

/** One SLA filter, AIPerf's `metric:stat:op:threshold` (latencies in ms). */
export interface SlaFilter {
  metric: string;
  stat: string;
  op: SlaOp;
  threshold: number;
}

/** `BenchOptions.adaptiveScale`: AIPerf's adaptive-scale flags (and its YAML-only strategy fields). */
export interface AdaptiveScaleOptions {
  /** `--adaptive-scale-control variable:min,max:type` (not with the expanded three). */
  control?: string;
  /** `--adaptive-control-variable`. @default 'concurrency' */
  controlVariable?: string;
  /** `--adaptive-control-min`. @default ADAPTIVE_DEFAULTS.controlMin */
  controlMin?: number;
  /** `--adaptive-control-max`. @default the phase's `concurrency` */
  controlMax?: number;
  /** `--adaptive-scale-assessment-period`, ms (AIPerf: at least 1 s). @default ADAPTIVE_DEFAULTS.assessmentPeriodMs */
  assessmentPeriodMs?: number;
  /** `--adaptive-sustain-duration`, ms: how long to hold the boundary (required). */
  sustainDurationMs?: number;
  /** `--adaptive-scale-sla`, repeatable: `metric:stat:op:threshold` (at least one). */
  sla?: readonly string[];
  /** YAML `min_completed_requests`: completions a window needs to decide. @default ADAPTIVE_DEFAULTS.minCompletedRequests */
  minCompletedRequests?: number;
  /** YAML `strategy.step_policy`. @default ADAPTIVE_DEFAULTS.stepPolicy */
  stepPolicy?: StepPolicy;
  /** YAML `strategy.base_step`. @default ADAPTIVE_DEFAULTS.baseStep */
  baseStep?: number;
  /** YAML `strategy.max_step_multiplier`. @default ADAPTIVE_DEFAULTS.maxStepMultiplier */
  maxStepMultiplier?: number;
  /** YAML `strategy.step_percent`. @default ADAPTIVE_DEFAULTS.stepPercent */
  stepPercent?: number;
  /** Where `adaptive_scale_events.jsonl` is appended as the run goes and the summary written; null: kept in the result only. */
  artifactDir?: string;
}

/** The checked settings. */
export interface ResolvedAdaptiveScale {
  variable: 'concurrency' | 'prefill_concurrency';
  min: number;
  max: number;
  assessmentPeriodMs: number;
  sustainDurationMs: number;
  sla: SlaFilter[];
  minCompletedRequests: number;
  stepPolicy: StepPolicy;
  baseStep: number;
  maxStepMultiplier: number;
  stepPercent: number;
  artifactDir: string | null;
}

const LATENCY_STATS = new Set(['avg', 'min', 'max', 'p1', 'p5', 'p10', 'p25', 'p50', 'p75', 'p90', 'p95', 'p99']);
const RATE_STATS = new Set(['avg', 'min', 'max']);
const TTFT = new Set(['time_to_first_token', 'ttft']);
const ITL = new Set(['inter_token_latency', 'itl', 'tpot']);
const QUALITY = new Set(['request_latency', ...TTFT, ...ITL]);
const THROUGHPUT = new Set(['throughput', 'request_throughput', 'completed_request_throughput']);
const SUCCESS = new Set(['success_rate', 'request_success_rate']);
const ERROR = new Set(['error_rate', 'request_error_rate']);
const CANCEL = new Set(['cancellation_rate', 'request_cancellation_rate']);
const RATE = new Set([...THROUGHPUT, 'output_token_throughput', 'goodput', 'goodput_ratio', ...SUCCESS, ...ERROR, ...CANCEL]);

function usage(message: string): TailgateError {
  return new TailgateError('CLI_USAGE', message);
}

/**
 * Parses one `--adaptive-scale-sla` value.
 *
 * @example parseSlaFilter('time_to_first_token:p95:le:3000') // { metric: 'time_to_first_token', stat: 'p95', op: 'le', threshold: 3000 }
 */
export function parseSlaFilter(text: string): SlaFilter {
  const parts = text.split(':').map((p) => p.trim());
  const [metric, stat, op, value] = parts;
  const threshold = Number(value);
  if (parts.length !== 4 || !metric || !stat || value === '' || !Number.isFinite(threshold)) {
    throw usage(`--adaptive-scale-sla "${text}": expected metric:stat:op:threshold, e.g. request_latency:p95:le:30000`);
  }
  if (op !== 'lt' && op !== 'le' && op !== 'gt' && op !== 'ge') throw usage(`--adaptive-scale-sla "${text}": the operator must be lt, le, gt or ge`);
  const stats = QUALITY.has(metric) ? LATENCY_STATS : RATE.has(metric) ? RATE_STATS : null;
  if (stats === null) {
    throw usage(`--adaptive-scale-sla "${text}": AIPerf's adaptive scale supports request_latency, time_to_first_token, inter_token_latency, request throughput, output_token_throughput, goodput, goodput_ratio, success_rate, error_rate and cancellation_rate`);
  }
  if (!stats.has(stat)) throw usage(`--adaptive-scale-sla "${text}": ${metric} takes the stats ${[...stats].join(', ')}`);
  return { metric, stat, op, threshold };
}

/**
 * Parses `--adaptive-scale-control variable:min,max:type` (`int` for concurrency and users, `float` for a rate).
 *
 * @example parseAdaptiveControl('concurrency:1,400:int') // { variable: 'concurrency', min: 1, max: 400 }
 */
export function parseAdaptiveControl(text: string): { variable: string; min: number; max: number } {
  const m = /^([^:]*):([^,:]*),([^:]*):(.*)$/.exec(text);
  if (!m) throw usage(`--adaptive-scale-control "${text}": expected variable:min,max:type, for example concurrency:1,1000:int`);
  const [, variable, minText, maxText, type] = m.map((s) => s.trim()) as [string, string, string, string, string];
  if (variable === '') throw usage('--adaptive-scale-control requires a control variable');
  if (type !== 'int' && type !== 'float') throw usage(`--adaptive-scale-control type must be 'int' or 'float', got '${type}'`);
  const bound = (s: string, name: string): number => {
    const n = Number(s);
    if (s === '' || !Number.isFinite(n) || (type === 'int' && !Number.isInteger(n))) throw usage(`--adaptive-scale-control ${name} bound must be ${type === 'int' ? 'an integer' : 'a number'}`);
    return n;
  };
  return { variable, min: bound(minText, 'min'), max: bound(maxText, 'max') };
}

/** What the load settings around the adaptive scale are (it moves a closed loop's concurrency). */
export interface AdaptiveLoad {
  concurrency: number | undefined;
  benchmarkDurationMs: number | undefined;
  openLoop: boolean;
  concurrencyRampMs: number | undefined;
  threads: number | undefined;
  prefillConcurrency: number | undefined;
  prefillConcurrencyRampMs: number | undefined;
}

/** AIPerf's rules for moving prefill_concurrency: a concurrency to cap it, no prefill ramp; bench also needs the gate itself. */
function checkPrefillControl(load: AdaptiveLoad): void {
  if (load.prefillConcurrencyRampMs !== undefined) throw usage('adaptive_scale control.variable=prefill_concurrency cannot be combined with prefill_ramp');
  if (load.concurrency === undefined) throw usage('adaptive_scale prefill_concurrency requires concurrency');
  if (load.prefillConcurrency === undefined) throw usage('--adaptive-scale on prefill_concurrency moves the --prefill-concurrency limit: give --prefill-concurrency (and --streaming)');
}

/** Checks the settings as AIPerf does (its messages where it has them). @throws TailgateError CLI_USAGE */
export function resolveAdaptiveScale(a: AdaptiveScaleOptions, load: AdaptiveLoad): ResolvedAdaptiveScale {
  const expanded = a.controlVariable !== undefined || a.controlMin !== undefined || a.controlMax !== undefined;
  if (a.control !== undefined && expanded) {
    throw usage('Use either --adaptive-scale-control or --adaptive-control-variable/--adaptive-control-min/--adaptive-control-max, not both.');
  }
  const compact = a.control === undefined ? null : parseAdaptiveControl(a.control);
  const variable = compact?.variable ?? a.controlVariable ?? 'concurrency';
  if (!(ADAPTIVE_CONTROL_VARIABLES as readonly string[]).includes(variable)) throw usage(`--adaptive-control-variable ${variable}: AIPerf's are ${ADAPTIVE_CONTROL_VARIABLES.join(', ')}`);
  if (variable !== 'concurrency' && variable !== 'prefill_concurrency') {
    throw usage(`--adaptive-scale on ${variable}: in AIPerf the controller moves ${variable}; tailgate bench moves concurrency and prefill_concurrency only, so it refuses the run`);
  }
  if (load.benchmarkDurationMs === undefined) throw usage('--adaptive-scale requires --benchmark-duration (AIPerf: adaptive_scale requires duration)');
  if (a.sustainDurationMs === undefined) throw usage('--adaptive-scale requires --adaptive-sustain-duration');
  if (!(a.sustainDurationMs > 0)) throw usage('--adaptive-sustain-duration must be > 0');
  const sla = (a.sla ?? []).map(parseSlaFilter);
  if (sla.length === 0) throw usage('--adaptive-scale requires at least one --adaptive-scale-sla filter');
  if (sla.some((f) => f.metric === 'goodput' || f.metric === 'goodput_ratio') && !sla.some((f) => QUALITY.has(f.metric))) {
    throw usage('quality goodput SLA requires at least one request_latency, time_to_first_token, or inter_token_latency quality filter');
  }
  if (load.openLoop) throw usage(`--adaptive-scale on ${variable} runs in bench's closed loop: drop --request-rate, --user-centric-rate and --fixed-schedule`);
  if (variable === 'concurrency' && load.concurrencyRampMs !== undefined) throw usage('adaptive_scale cannot be combined with concurrency_ramp; control.variable=concurrency already adjusts concurrency');
  if (variable === 'prefill_concurrency') checkPrefillControl(load);
  if ((load.threads ?? 1) > 1) throw usage('--adaptive-scale runs on one thread: drop --threads');
  const min = compact?.min ?? a.controlMin ?? ADAPTIVE_DEFAULTS.controlMin;
  const max = compact?.max ?? a.controlMax ?? (variable === 'concurrency' ? load.concurrency : load.prefillConcurrency);
  if (max === undefined) throw usage('adaptive_scale control.max could not be inferred: give --concurrency or --adaptive-control-max');
  if (!(min > 0)) throw usage('adaptive_scale control.min must be > 0');
  if (max <= min) throw usage('adaptive_scale control.max must be > control.min');
  if (!Number.isInteger(min) || !Number.isInteger(max)) throw usage(`adaptive_scale control.min and control.max must be integers for ${variable}`);
  if (variable === 'concurrency' && load.concurrency !== undefined && min > load.concurrency) throw usage('adaptive_scale control.min must be <= concurrency');
  if (variable === 'prefill_concurrency' && max > load.concurrency!) throw usage('adaptive_scale prefill_concurrency control.max must be <= concurrency');
  const period = a.assessmentPeriodMs ?? ADAPTIVE_DEFAULTS.assessmentPeriodMs;
  if (!(period >= 1000)) throw usage('--adaptive-scale-assessment-period must be >= 1 (seconds)');
  const positiveInt = (name: string, v: number | undefined, fallback: number): number => {
    if (v !== undefined && (!Number.isInteger(v) || v < 1)) throw usage(`${name} must be an integer >= 1`);
    return v ?? fallback;
  };
  const stepPercent = a.stepPercent ?? ADAPTIVE_DEFAULTS.stepPercent;
  if (!(stepPercent > 0)) throw usage('adaptive_scale strategy.step_percent must be > 0');
  return {
    variable, min, max, assessmentPeriodMs: period, sustainDurationMs: a.sustainDurationMs, sla,
    minCompletedRequests: positiveInt('adaptive_scale min_completed_requests', a.minCompletedRequests, ADAPTIVE_DEFAULTS.minCompletedRequests),
    stepPolicy: a.stepPolicy ?? ADAPTIVE_DEFAULTS.stepPolicy,
    baseStep: positiveInt('adaptive_scale strategy.base_step', a.baseStep, ADAPTIVE_DEFAULTS.baseStep),
    maxStepMultiplier: positiveInt('adaptive_scale strategy.max_step_multiplier', a.maxStepMultiplier, ADAPTIVE_DEFAULTS.maxStepMultiplier),
    stepPercent,
    artifactDir: a.artifactDir ?? null,
  };
}

/** One successful request of a window. */
export interface WindowSample {
  latencyMs: number;
  ttftMs: number | null;
  itlMs: number | null;
  osl: number;
}

/** What completed in one assessment window. */
export interface WindowStats {
  samples: WindowSample[];
  errors: number;
  cancelled: number;
  startMs: number;
  endMs: number;
}

/** A finished request as the window counts it: a success sample, an error, or a cancellation (AIPerf's 499). */
export function windowEntry(r: RequestRecord, useServerTokenCount: boolean): WindowSample | 'error' | 'cancelled' {
  if (r.outcome === 'aborted' && r.status === 499) return 'cancelled';
  if (r.outcome !== 'ok') return 'error';
  const m = recordMetrics(r, undefined, useServerTokenCount);
  return { latencyMs: m.requestLatencyMs, ttftMs: m.ttftMs, itlMs: m.itlMs, osl: m.osl };
}

/** AIPerf's key of a filter in `sla_values`: `metric:stat:op:threshold` with the threshold as Python's `:g`. */
export function slaKey(f: SlaFilter): string {
  return `${f.metric}:${f.stat}:${f.op}:${formatG(f.threshold)}`;
}

/** Python's `format(x, 'g')`: six significant digits, no trailing zeros, exponent below 1e-4 and from 1e6. */
export function formatG(x: number): string {
  if (x === 0) return '0';
  const exp = Math.floor(Math.log10(Math.abs(Number(x.toPrecision(6)))));
  const strip = (s: string): string => (s.includes('.') ? s.replace(/\.?0+$/, '') : s);
  if (exp < -4 || exp >= 6) {
    const [mant, e] = x.toExponential(5).split('e') as [string, string];
    const n = Number(e);
    return `${strip(mant)}e${n < 0 ? '-' : '+'}${String(Math.abs(n)).padStart(2, '0')}`;
  }
  return strip(x.toFixed(Math.max(0, 5 - exp)));
}

/** Seconds of a window, for its rates. */
function windowSeconds(w: WindowStats): number {
  return (w.endMs - w.startMs) / 1000;
}

/** Request throughput of a window: successes per second. */
export function windowThroughput(w: WindowStats): number {
  const s = windowSeconds(w);
  return s > 0 ? w.samples.length / s : 0;
}

/** A latency stat (ms) over values; Infinity when there are none (AIPerf fails TTFT/ITL filters then). */
export function latencyStat(values: readonly number[], stat: string): number {
  if (values.length === 0) return Number.POSITIVE_INFINITY;
  if (stat === 'avg') return values.reduce((a, b) => a + b, 0) / values.length;
  // Loops, not Math.min(...): a busy window holds more samples than a spread's argument limit (~120k).
  if (stat === 'min') return values.reduce((m, v) => Math.min(m, v), Number.POSITIVE_INFINITY);
  if (stat === 'max') return values.reduce((m, v) => Math.max(m, v), Number.NEGATIVE_INFINITY);
  return percentile([...values].sort((a, b) => a - b), Number(stat.slice(1)));
}

/** Whether an observed value passes a filter. */
export function passes(f: SlaFilter, observed: number): boolean {
  switch (f.op) {
    case 'lt':
      return observed < f.threshold;
    case 'le':
      return observed <= f.threshold;
    case 'gt':
      return observed > f.threshold;
    case 'ge':
      return observed >= f.threshold;
  }
}

/** Successes that pass every per-request quality filter (latency, TTFT, ITL), for goodput. */
function goodCount(w: WindowStats, filters: readonly SlaFilter[]): number {
  const quality = filters.filter((f) => QUALITY.has(f.metric));
  const valueOf = (s: WindowSample, metric: string): number | null => (metric === 'request_latency' ? s.latencyMs : TTFT.has(metric) ? s.ttftMs : s.itlMs);
  return w.samples.filter((s) => quality.every((f) => {
    const v = valueOf(s, f.metric);
    return v !== null && passes(f, v);
  })).length;
}

/** One filter's value over a window, as AIPerf computes it (error rate in percent, other rates as ratios). */
export function slaValue(f: SlaFilter, w: WindowStats, filters: readonly SlaFilter[]): number {
  const total = w.samples.length + w.errors + w.cancelled;
  const seconds = windowSeconds(w);
  const m = f.metric;
  if (m === 'request_latency') return latencyStat(w.samples.map((s) => s.latencyMs), f.stat);
  if (TTFT.has(m)) return latencyStat(w.samples.flatMap((s) => (s.ttftMs === null ? [] : [s.ttftMs])), f.stat);
  if (ITL.has(m)) return latencyStat(w.samples.flatMap((s) => (s.itlMs === null ? [] : [s.itlMs])), f.stat);
  if (THROUGHPUT.has(m)) return windowThroughput(w);
  if (m === 'output_token_throughput') return seconds > 0 ? w.samples.reduce((a, s) => a + s.osl, 0) / seconds : 0;
  if (m === 'goodput') return seconds > 0 ? goodCount(w, filters) / seconds : 0;
  if (m === 'goodput_ratio') return total > 0 ? goodCount(w, filters) / total : 0;
  if (SUCCESS.has(m)) return total > 0 ? w.samples.length / total : 0;
  if (ERROR.has(m)) return w.samples.length + w.errors > 0 ? (100 * w.errors) / (w.samples.length + w.errors) : 0;
  return total > 0 ? w.cancelled / total : 0;
}

/** Every filter's value, keyed as AIPerf keys `sla_values`. */
export function slaValues(filters: readonly SlaFilter[], w: WindowStats): Record<string, number> {
  return Object.fromEntries(filters.map((f) => [slaKey(f), slaValue(f, w, filters)]));
}

/** A window with no success can still be judged when every filter is an error or cancellation rate that covers what failed. */
export function judgeableWithoutSuccesses(filters: readonly SlaFilter[], w: WindowStats): boolean {
  if (!filters.every((f) => ERROR.has(f.metric) || CANCEL.has(f.metric))) return false;
  if (w.errors > 0 && w.cancelled > 0) return false;
  if (w.errors > 0 && !filters.some((f) => ERROR.has(f.metric))) return false;
  return !(w.cancelled > 0 && !filters.some((f) => CANCEL.has(f.metric)));
}

/** How far an observed value is inside a filter, relative to its threshold (negative: outside); null when it cannot say. */
export function slaMargin(f: SlaFilter, observed: number | undefined): number | null {
  if (observed === undefined || f.threshold === 0) return null;
  const t = Math.abs(f.threshold);
  return f.op === 'lt' || f.op === 'le' ? (f.threshold - observed) / t : (observed - f.threshold) / t;
}
