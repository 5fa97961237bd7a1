// The adaptive-scale controller as a table: windows of synthetic records whose TTFT depends on the limit
// the controller set, and the decisions AIPerf's ramp_until_fail makes on them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { syntheticError, syntheticRecord } from '../stats/index.js';
import { AdaptiveScaleController } from './adaptive-controller.js';
import { formatG, latencyStat, resolveAdaptiveScale, type AdaptiveScaleOptions } from './adaptive-scale.js';

const LOAD = { concurrency: 64, benchmarkDurationMs: 600_000, openLoop: false, concurrencyRampMs: undefined, threads: undefined, prefillConcurrency: undefined, prefillConcurrencyRampMs: undefined };

/** Runs windows of 1 s: each gets 10 requests with TTFT `ttftAt(limit)` (or errors), returns the summary and the limits set. */
function drive(opts: AdaptiveScaleOptions, ttftAt: (limit: number) => number | 'error', windows = 20): { summary: Record<string, unknown>; limits: number[]; events: string[] } {
  const limits: number[] = [];
  let stopped = false;
  const ctl = new AdaptiveScaleController(resolveAdaptiveScale(opts, LOAD), {
    setLimit: (v) => limits.push(v), stopSending: () => (stopped = true), inflight: () => 0, originEpochMs: 1.7e12, useServerTokenCount: false,
  }, 0);
  for (let w = 0; w < windows && !stopped; w++) {
    const t = w * 1000;
    const ttft = ttftAt(limits.at(-1)!);
    for (let i = 0; i < 10; i++) {
      const startMs = t + i * 50;
      ctl.record(ttft === 'error' ? syntheticError({ startMs, endMs: startMs + 10 }) : syntheticRecord({ startMs, ttftMs: ttft, itlMs: 5, tokens: 4 }));
    }
    ctl.assess(t + 1000);
  }
  ctl.finish(windows * 1000, false);
  const { summary, events } = ctl.result();
  return { summary, limits, events: events.map((e) => String(e['event'])) };
}

const SLA = { sla: ['ttft:p95:le:100'], sustainDurationMs: 2000, assessmentPeriodMs: 1000 };

test('ramp until fail: doubling 1 -> 2 -> 4 -> 8 -> 16 fails, 8 is held for the sustain duration', () => {
  const r = drive({ ...SLA, controlMin: 1, controlMax: 64, stepPolicy: 'fixed_percent_step', stepPercent: 100 }, (n) => (n <= 10 ? 20 : 500));
  assert.deepEqual(r.limits, [1, 2, 4, 8, 16, 8]);
  assert.equal(r.summary['status'], 'completed');
  assert.equal(r.summary['completed_reason'], 'sustain_duration_completed');
  assert.deepEqual(r.summary['result'], { last_passing_value: 8, first_failing_value: 16, boundary_value: 8 });
  assert.equal(r.summary['sustain_windows'], 2);
  assert.equal(r.summary['sla_passed_during_sustain'], true);
});

test('sla_margin steps: base step x the margin x 4 (at least 1, at most 4), as AIPerf sizes them', () => {
  // TTFT 20 ms under a 100 ms SLA: margin 0.8 -> x3 -> step 30; 60 ms: margin 0.4 -> x1 -> step 10.
  const r = drive({ ...SLA, controlMin: 1, controlMax: 64 }, (n) => (n < 31 ? 20 : n < 50 ? 60 : 500));
  assert.deepEqual(r.limits.slice(0, 4), [1, 31, 41, 51]);
  assert.equal(r.summary['boundary_value'], 41);
});

test('terminal outcomes: failing at the minimum, passing at the maximum, a sustain that fails after its one recovery', () => {
  const none = drive({ ...SLA, controlMin: 4, controlMax: 8 }, () => 500);
  assert.equal(none.summary['status'], 'failed');
  assert.equal(none.summary['completed_reason'], 'no_sustainable_concurrency_found');
  assert.equal(none.events.at(-1), 'adaptive_failed');
  const max = drive({ ...SLA, controlMin: 4, controlMax: 8, stepPolicy: 'fixed_percent_step', stepPercent: 100 }, () => 20);
  assert.equal(max.summary['status'], 'incomplete');
  assert.equal(max.summary['completed_reason'], 'max_control_value_reached_without_saturation');
  // Passes until 16, then everything fails, also at the boundary: one step down (8 - 8), then failed.
  let sustaining = false;
  const fall = drive({ ...SLA, controlMin: 2, controlMax: 64, stepPolicy: 'fixed_percent_step', stepPercent: 100 }, (n) => {
    if (n >= 16) sustaining = true;
    return sustaining ? 500 : 20;
  });
  assert.deepEqual(fall.limits, [2, 4, 8, 16, 8, 2]);
  assert.equal(fall.summary['completed_reason'], 'sustain_failed_after_recovery');
  const errors = drive({ ...SLA, controlMin: 1, controlMax: 8, stepPolicy: 'fixed_percent_step', stepPercent: 100 }, (n) => (n >= 4 ? 'error' : 20));
  assert.deepEqual(errors.summary['result'], { last_passing_value: 2, first_failing_value: 4, boundary_value: 2 }, 'a window with only errors fails');
});

test('sla_values keys use Python\'s :g threshold format', () => {
  assert.deepEqual([30000, 0.01, 1e6, 2.5, 1e-5, 123456789].map(formatG), ['30000', '0.01', '1e+06', '2.5', '1e-05', '1.23457e+08']);
});

test('a window\'s min and max over more samples than a spread takes (300k)', () => {
  const values = Array.from({ length: 300_000 }, (_, i) => 5 + ((i * 7919) % 300_000));
  assert.deepEqual([latencyStat(values, 'min'), latencyStat(values, 'max'), latencyStat(values, 'p50')], [5, 300_004, 150_004.5]);
});
