/**
 * AIPerf's adaptive-scale controller (`ramp_until_fail`), over bench's closed loop: every assessment
 * window it judges the SLA filters on what completed; while they pass it raises the limit it moves
 * (the session concurrency or the prefill gate's capacity; discover), at the first failing window it
 * goes back to the last passing value and holds it (sustain) until the sustain duration has passed
 * with a passing window. It writes AIPerf's
 * `adaptive_scale_events.jsonl` line by line as it decides and `adaptive_scale_summary.json` at the end
 * (schema version 2, field names as AIPerf's; docs/reference.md#aiperf-adaptive-scale).
 */
import { randomUUID } from 'node:crypto';
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RequestRecord } from '../core/index.js';
import { percentile } from '../stats/index.js';
import {
  judgeableWithoutSuccesses, slaKey, slaMargin, slaValues, passes, windowEntry, windowThroughput,
  type ResolvedAdaptiveScale, type WindowStats,
} from './adaptive-scale.js';

/** AIPerf's artifact schema version. */
export const ADAPTIVE_SCHEMA_VERSION = 2;
/** AIPerf's file names, in the run's artifact directory: the events, a line per decision as it is made. */
export const ADAPTIVE_EVENTS_FILE = 'adaptive_scale_events.jsonl';
/** The summary, written once the controller completes. */
export const ADAPTIVE_SUMMARY_FILE = 'adaptive_scale_summary.json';

type Phase = 'discover' | 'sustain' | 'complete';
type Json = Record<string, unknown>;

/** What the controller acts on: the concurrency limit, the end of sending, the in-flight count. */
export interface AdaptiveHooks {
  setLimit(value: number): void;
  stopSending(): void;
  inflight(): number;
  /** Wall-clock epoch ms of the run clock's 0 (times given to the controller are run-clock ms). */
  originEpochMs: number;
  useServerTokenCount: boolean;
}

/** The controller's outcome, kept in the bench result. */
export interface AdaptiveScaleResult {
  events: Json[];
  summary: Json;
}

/** Counts of one window for an event: what it measured. */
interface Counts {
  slaValue: number | null;
  throughput: number;
  samples: number;
  errors: number;
  cancelled?: number;
}

const FAILED_REASONS = new Set(['no_sustainable_concurrency_found', 'sustain_failed_sla_unrecoverable', 'sustain_failed_after_recovery']);

/** ISO-8601 UTC with microseconds and `Z`, as AIPerf stamps its events. */
function isoUtc(epochMs: number): string {
  const micros = Math.round((epochMs % 1000) * 1000) % 1_000_000;
  return `${new Date(Math.floor(epochMs)).toISOString().slice(0, 19)}.${String(micros).padStart(6, '0')}Z`;
}

/** JSON with every object's keys sorted, as AIPerf writes these files (orjson OPT_SORT_KEYS). */
function sortedJson(value: unknown, indent?: number): string {
  const sort = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(sort);
    if (v !== null && typeof v === 'object') return Object.fromEntries(Object.keys(v).sort().map((k) => [k, sort((v as Json)[k])]));
    return v;
  };
  return JSON.stringify(sort(value), null, indent);
}

/** Drives one profiling phase's concurrency; see the file comment. Times are run-clock ms. */
export class AdaptiveScaleController {
  readonly #cfg: ResolvedAdaptiveScale;
  readonly #hooks: AdaptiveHooks;
  readonly #runId = randomUUID();
  readonly #primary;
  #phase: Phase = 'discover';
  #current: number;
  #boundary: number | null = null;
  #lastPassing: number | null = null;
  #firstFailing: number | null = null;
  #sustainStartMs: number | null = null;
  #recoveryUsed = false;
  #sustainWindows = 0;
  #sustainPassed = 0;
  #iteration = 0;
  #completedReason: string | null = null;
  #window: WindowStats;
  readonly #events: Json[] = [];
  readonly #candidates: Json[] = [];
  #summary: Json | null = null;

  constructor(cfg: ResolvedAdaptiveScale, hooks: AdaptiveHooks, startMs: number) {
    this.#cfg = cfg;
    this.#hooks = hooks;
    this.#primary = cfg.sla[0]!;
    this.#current = cfg.min;
    this.#window = { samples: [], errors: 0, cancelled: 0, startMs, endMs: startMs };
    if (cfg.artifactDir !== null) {
      mkdirSync(cfg.artifactDir, { recursive: true });
      writeFileSync(join(cfg.artifactDir, ADAPTIVE_EVENTS_FILE), '');
    }
    hooks.setLimit(this.#current);
    this.#emit(startMs, 'adaptive_phase_started', 'adaptive scale discover phase started', { slaValue: null, throughput: 0, samples: 0, errors: 0 });
  }

  /** The events so far and the summary (once complete). */
  result(): AdaptiveScaleResult {
    return { events: this.#events, summary: this.#summary ?? {} };
  }

  /** A finished profiling request; in sustain, requests sent before it began are not counted (AIPerf's pre-sustain rule). */
  record(r: RequestRecord): void {
    if (this.#phase === 'complete') return;
    if (this.#phase === 'sustain' && r.startMs < this.#sustainStartMs!) return;
    const e = windowEntry(r, this.#hooks.useServerTokenCount);
    if (e === 'error') this.#window.errors++;
    else if (e === 'cancelled') this.#window.cancelled++;
    else this.#window.samples.push(e);
  }

  /** Judges the window that ends at `atMs` and acts on it (AIPerf's assess_window). */
  assess(atMs: number): void {
    if (this.#phase === 'complete') return;
    const w = this.#window;
    w.endMs = atMs;
    this.#window = { samples: [], errors: 0, cancelled: 0, startMs: atMs, endMs: atMs };
    const n = w.samples.length;
    const c: Counts = { slaValue: null, throughput: windowThroughput(w), samples: n, errors: w.errors, cancelled: w.cancelled };
    const zeroOk = n === 0 && w.errors + w.cancelled > 0 && judgeableWithoutSuccesses(this.#cfg.sla, w);
    try {
      if (n === 0 && w.errors + w.cancelled > 0 && !zeroOk) {
        this.#emit(atMs, 'adaptive_window', 'no successful requests in assessment window', c, { passed: false });
        this.#candidate(w, false, 'error_threshold');
        this.#failedWindow(atMs, c);
        return;
      }
      if (n < this.#cfg.minCompletedRequests && !zeroOk) {
        this.#emit(atMs, 'adaptive_window', 'inconclusive: completed request count below minimum', c, { passed: null });
        this.#candidate(w, false, 'insufficient_samples');
        return;
      }
      const values = slaValues(this.#cfg.sla, w);
      const primary = values[slaKey(this.#primary)]!;
      const passing = this.#cfg.sla.every((f) => passes(f, values[slaKey(f)]!));
      const judged = { ...c, slaValue: primary };
      this.#emit(atMs, 'adaptive_window', 'SLA window evaluated', judged, { passed: passing, slaValues: values });
      this.#candidate(w, passing, 'sla_miss');
      if (this.#phase === 'discover') this.#discover(atMs, passing, judged, values);
      else this.#sustain(atMs, passing, judged, values);
    } finally {
      this.#iteration++;
    }
  }

  /** The phase ended (duration, count or interrupt) before the controller did: AIPerf's phase_stopped / phase_cancelled. */
  finish(atMs: number, cancelled: boolean): void {
    if (this.#phase === 'complete') return;
    this.#complete(atMs, cancelled ? 'phase_cancelled' : 'phase_stopped', cancelled ? 'adaptive_failed' : 'adaptive_complete', { slaValue: null, throughput: 0, samples: 0, errors: 0 });
  }

  #discover(atMs: number, passing: boolean, c: Counts, values: Record<string, number>): void {
    if (passing) {
      this.#lastPassing = this.#current;
      if (this.#current >= this.#cfg.max) {
        this.#complete(atMs, 'max_control_value_reached_without_saturation', 'adaptive_incomplete', c);
        return;
      }
      const before = this.#current;
      const next = Math.min(this.#cfg.max, before + this.#step(before, values));
      this.#set(next);
      this.#emit(atMs, 'adaptive_decision', `SLA value ${c.slaValue!.toFixed(3)} passes configured filters`, c, { before, stepSize: next - before, slaValues: values });
      return;
    }
    this.#firstFailing = this.#current;
    if (this.#lastPassing === null) {
      this.#complete(atMs, 'no_sustainable_concurrency_found', 'adaptive_failed', c);
      return;
    }
    this.#enterSustain(atMs, c, `SLA value ${c.slaValue!.toFixed(3)} breaches configured filters`);
  }

  #failedWindow(atMs: number, c: Counts): void {
    const reason = 'all requests failed in assessment window';
    if (this.#phase === 'discover') {
      this.#firstFailing = this.#current;
      if (this.#lastPassing === null) this.#complete(atMs, 'no_sustainable_concurrency_found', 'adaptive_failed', { ...c, samples: 0 });
      else this.#enterSustain(atMs, c, reason);
    } else this.#sustain(atMs, false, c, undefined, reason);
  }

  #sustain(atMs: number, passing: boolean, c: Counts, values?: Record<string, number>, reason?: string): void {
    this.#sustainWindows++;
    if (passing) {
      this.#sustainPassed++;
      this.#lastPassing = this.#current;
      this.#recoveryUsed = false;
      this.#emit(atMs, 'adaptive_decision', `SLA value ${c.slaValue!.toFixed(3)} passes configured filters during sustain`, c);
      if (atMs - this.#sustainStartMs! >= this.#cfg.sustainDurationMs) this.#complete(atMs, 'sustain_duration_completed', 'adaptive_complete', c);
      return;
    }
    if (this.#recoveryUsed) {
      this.#complete(atMs, 'sustain_failed_after_recovery', 'adaptive_failed', c);
      return;
    }
    this.#recoveryUsed = true;
    const before = this.#current;
    // Back to the last passing value when below; else one step down (at least the minimum).
    const last = Math.max(this.#cfg.min, this.#lastPassing ?? this.#cfg.min);
    const target = last < before ? last : Math.max(this.#cfg.min, before - this.#step(before, values));
    if (target === before && before === this.#cfg.min) {
      this.#complete(atMs, 'sustain_failed_sla_unrecoverable', 'adaptive_failed', c);
      return;
    }
    this.#set(target);
    const why = reason ?? `SLA value ${c.slaValue === null ? 'n/a' : c.slaValue.toFixed(3)} breaches configured filters during sustain`;
    this.#emit(atMs, 'adaptive_decision', why, c, { before, stepSize: Math.abs(before - target), ...(values && { slaValues: values }) });
  }

  #enterSustain(atMs: number, c: Counts, reason: string): void {
    const boundary = Math.max(this.#cfg.min, this.#lastPassing!);
    const before = this.#current;
    this.#boundary = boundary;
    this.#set(boundary);
    this.#phase = 'sustain';
    this.#sustainStartMs = atMs;
    const counts = { ...c, cancelled: 0 };
    this.#emit(atMs, 'sustain_started', `holding boundary_value=${boundary}`, counts, { before, phase: 'sustain' });
    this.#emit(atMs, 'boundary_discovered', reason, counts, { before: boundary, phase: 'sustain' });
  }

  /** The next step up (or down in a recovery): a fixed percent of the value, or base step x a multiplier from the SLA margin. */
  #step(current: number, values?: Record<string, number>): number {
    const cfg = this.#cfg;
    if (cfg.stepPolicy === 'fixed_percent_step') return Math.max(1, Math.ceil((current * cfg.stepPercent) / 100));
    if (!values) return cfg.baseStep;
    const margins = cfg.sla.map((f) => slaMargin(f, values[slaKey(f)])).filter((m): m is number => m !== null);
    if (margins.length === 0) return cfg.baseStep;
    const margin = Math.max(0, Math.min(...margins));
    return cfg.baseStep * Math.max(1, Math.min(cfg.maxStepMultiplier, Math.trunc(margin * cfg.maxStepMultiplier)));
  }

  #set(value: number): void {
    this.#current = value;
    this.#hooks.setLimit(value);
  }

  /** The filter closest to failing (smallest margin) in a window's values. */
  #binding(values: Record<string, number> | undefined): string | null {
    if (!values) return null;
    let best: string | null = null;
    let bestMargin = Number.POSITIVE_INFINITY;
    for (const f of this.#cfg.sla) {
      const m = slaMargin(f, values[slaKey(f)]);
      if (m !== null && (best === null || m < bestMargin)) [best, bestMargin] = [slaKey(f), m];
    }
    return best;
  }

  #emit(atMs: number, event: string, reason: string, c: Counts, x: { before?: number; phase?: Phase; passed?: boolean | null; stepSize?: number; slaValues?: Record<string, number> } = {}): void {
    const epochMs = this.#hooks.originEpochMs + atMs;
    const ns = Math.round(epochMs * 1e6);
    const p = this.#primary;
    const cancelled = c.cancelled ?? 0;
    const line: Json = {
      schema_version: ADAPTIVE_SCHEMA_VERSION, timestamp: ns, timestamp_ns: ns, timestamp_utc: isoUtc(epochMs),
      event, phase: x.phase ?? this.#phase, control_variable: this.#cfg.variable,
      control_value_before: x.before ?? this.#current, control_value_after: this.#current, control_value: this.#current, control: this.#control(),
      boundary_value: this.#boundary, last_passing_value: this.#lastPassing, first_failing_value: this.#firstFailing,
      sla_metric: p.metric, sla_stat: p.stat, sla_op: p.op, sla_value: c.slaValue, sla_bound: p.threshold,
      sla_values: x.slaValues ?? {}, binding_sla: this.#binding(x.slaValues),
      throughput: c.throughput, sample_count: c.samples, completed: c.samples, sent: c.samples + c.errors + cancelled, in_flight: null,
      cancelled, errored: c.errors, error_count: c.errors, sla_passed: x.passed ?? null,
      strategy_type: 'ramp_until_fail', step_policy: this.#cfg.stepPolicy, step_size: x.stepSize ?? null, reason,
      run_id: this.#runId, phase_id: 'profiling', phase_name: 'profiling', phase_start_ts: null, phase_end_ts: null,
      adaptive_iteration: this.#iteration, candidate_value: x.before ?? this.#current, accepted_value: this.#current, fault_window_id: null,
    };
    this.#events.push(line);
    if (this.#cfg.artifactDir !== null) appendFileSync(join(this.#cfg.artifactDir, ADAPTIVE_EVENTS_FILE), `${sortedJson(line)}\n`);
  }

  /** The control's target and what is in flight now. */
  #control(): Json {
    return { variable: this.#cfg.variable, target_value: this.#current, actual_value: this.#hooks.inflight() };
  }

  #candidate(w: WindowStats, accepted: boolean, rejection: string): void {
    const lat = w.samples.map((s) => s.latencyMs).sort((a, b) => a - b);
    const ttft = w.samples.flatMap((s) => (s.ttftMs === null ? [] : [s.ttftMs])).sort((a, b) => a - b);
    const itl = w.samples.flatMap((s) => (s.itlMs === null ? [] : [s.itlMs])).sort((a, b) => a - b);
    const pct = (xs: number[], p: number): number => (xs.length === 0 ? 0 : percentile(xs, p));
    const total = w.samples.length + w.errors + w.cancelled;
    this.#candidates.push({
      adaptive_iteration: this.#iteration, candidate_value: this.#current, control_value: this.#current,
      start_ts: isoUtc(this.#hooks.originEpochMs + w.startMs), end_ts: isoUtc(this.#hooks.originEpochMs + w.endMs), duration_s: (w.endMs - w.startMs) / 1000,
      request_count: total, error_count: w.errors, cancelled: w.cancelled, success_count: w.samples.length,
      success_rate: total > 0 ? w.samples.length / total : 0, throughput_rps: windowThroughput(w),
      latency_p50_ms: pct(lat, 50), latency_p95_ms: pct(lat, 95), latency_p99_ms: pct(lat, 99),
      ttft_p50_ms: pct(ttft, 50), ttft_p95_ms: pct(ttft, 95), ttft_p99_ms: pct(ttft, 99),
      itl_p50_ms: pct(itl, 50), itl_p95_ms: pct(itl, 95), itl_p99_ms: pct(itl, 99),
      accepted, rejection_reason: accepted ? null : rejection,
      latency_avg_ms: lat.length > 0 ? lat.reduce((a, b) => a + b, 0) / lat.length : 0,
    });
  }

  #complete(atMs: number, reason: string, terminal: string, c: Counts): void {
    if (this.#completedReason !== null) return;
    this.#phase = 'complete';
    this.#completedReason = reason;
    this.#emit(atMs, terminal, reason, c, { phase: 'complete' });
    this.#summary = this.#summaryPayload(reason, c);
    if (this.#cfg.artifactDir !== null) writeFileSync(join(this.#cfg.artifactDir, ADAPTIVE_SUMMARY_FILE), `${sortedJson(this.#summary, 2)}\n`);
    this.#hooks.stopSending();
  }

  #summaryPayload(reason: string, c: Counts): Json {
    const cfg = this.#cfg;
    const p = this.#primary;
    const cancelled = c.cancelled ?? 0;
    const status = reason === 'max_control_value_reached_without_saturation' ? 'incomplete' : FAILED_REASONS.has(reason) ? 'failed' : 'completed';
    return {
      schema_version: ADAPTIVE_SCHEMA_VERSION, status, control_variable: cfg.variable, control_value: this.#current, control: this.#control(),
      boundary_value: this.#boundary, last_passing_value: this.#lastPassing, first_failing_value: this.#firstFailing,
      result: { last_passing_value: this.#lastPassing, first_failing_value: this.#firstFailing, boundary_value: this.#boundary },
      sustain_started_at: this.#sustainStartMs === null ? null : Math.round((this.#hooks.originEpochMs + this.#sustainStartMs) * 1e6),
      sustain_duration_seconds: cfg.sustainDurationMs / 1000, completed_reason: reason,
      sla_passed_during_sustain: this.#sustainWindows > 0 && this.#sustainPassed === this.#sustainWindows,
      sustain_windows: this.#sustainWindows, sustain_passed_windows: this.#sustainPassed,
      sla_metric: p.metric, sla_stat: p.stat, sla_op: p.op, sla_bound: p.threshold,
      sla: { metric: p.metric, stat: p.stat, op: p.op, bound: p.threshold },
      totals: { sent: c.samples + c.errors + cancelled, completed: c.samples, errored: c.errors, cancelled },
      throughput: c.throughput, candidates: this.#candidates,
      strategy_type: 'ramp_until_fail', step_policy: cfg.stepPolicy, base_step: cfg.baseStep, max_step_multiplier: cfg.maxStepMultiplier, step_percent: cfg.stepPercent,
      phase_index: null, profiling_index: null, phase_name: 'profiling', phase_kind: 'profiling',
    };
  }
}

/**
 * A concurrency limit the controller moves while the closed loop runs: a slot takes it before each
 * session and gives it back after; lowering it lets in-flight sessions finish and starts none until
 * fewer are running (AIPerf's dynamic session limit).
 */
export class DynamicLimit {
  #limit: number;
  #inUse = 0;
  #closed = false;
  #waiters: Array<(ok: boolean) => void> = [];

  constructor(limit: number) {
    this.#limit = limit;
  }

  /** Resolves true once under the limit, false once closed. */
  acquire(): Promise<boolean> {
    if (this.#closed) return Promise.resolve(false);
    if (this.#inUse < this.#limit) {
      this.#inUse++;
      return Promise.resolve(true);
    }
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  release(): void {
    this.#inUse--;
    this.#wake();
  }

  set(limit: number): void {
    this.#limit = limit;
    this.#wake();
  }

  /** No more sessions start: every waiter gets false. */
  close(): void {
    this.#closed = true;
    for (const w of this.#waiters.splice(0)) w(false);
  }

  #wake(): void {
    while (!this.#closed && this.#inUse < this.#limit && this.#waiters.length > 0) {
      this.#inUse++;
      this.#waiters.shift()!(true);
    }
  }
}
