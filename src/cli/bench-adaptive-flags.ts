import { InvalidArgumentError } from 'commander';
import { choiceArg, collect, intArg } from './args.js';
import type { BenchOptions } from '../bench/index.js';
import { rowsFor } from './option-table.js';

const row = rowsFor<BenchOptions>();

const positiveNumber = (value: string): number => {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError('expected a number > 0');
  return n;
};

/** AIPerf's `--adaptive-scale*` flags, as `tailgate bench` declares them (rows of BENCH_FLAGS; bench/adaptive-scale.ts reads them). */
export const ADAPTIVE_FLAGS = {
  adaptiveScale: row<boolean>({ help: 'AIPerf\'s adaptive scale: the profiling phase raises its concurrency while every --adaptive-scale-sla passes over a window, then holds the last passing value (needs --benchmark-duration, --adaptive-sustain-duration; writes adaptive_scale_events.jsonl and adaptive_scale_summary.json)' }),
  adaptiveScaleControl: row<string>({ arg: '<spec>', help: 'variable:min,max:type, e.g. concurrency:1,64:int (bench moves concurrency or prefill_concurrency)' }),
  adaptiveControlVariable: row<string>({ arg: '<name>', help: 'the load the adaptive scale moves: concurrency or prefill_concurrency (with --prefill-concurrency); AIPerf\'s request_rate and users are refused' }),
  adaptiveControlMin: row({ arg: '<n>', help: 'where the adaptive scale starts (default 1)', parse: positiveNumber }),
  adaptiveControlMax: row({ arg: '<n>', help: 'the highest value it tries (default --concurrency)', parse: positiveNumber }),
  adaptiveScaleAssessmentPeriod: row({ arg: '<s>', aliases: ['--adaptive-assessment-period'], help: 'seconds per SLA window (default 30, at least 1)', parse: positiveNumber }),
  adaptiveSustainDuration: row({ arg: '<s>', help: 'seconds to hold the boundary once found', parse: positiveNumber }),
  adaptiveMinCompletedRequests: row({ arg: '<n>', help: 'completions an SLA window needs to decide (default 1; AIPerf\'s YAML min_completed_requests)', parse: intArg(1) }),
  adaptiveStepPolicy: row({ arg: '<policy>', help: 'sla_margin (default: base step x 1-4 by the SLA margin) or fixed_percent_step (AIPerf\'s YAML strategy.step_policy)', parse: choiceArg(['sla_margin', 'fixed_percent_step'] as const) }),
  adaptiveBaseStep: row({ arg: '<n>', help: 'sla_margin\'s base step (default 10)', parse: intArg(1) }),
  adaptiveMaxStepMultiplier: row({ arg: '<n>', help: 'sla_margin\'s largest multiplier (default 4)', parse: intArg(1) }),
  adaptiveStepPercent: row({ arg: '<pct>', help: 'fixed_percent_step\'s step, percent of the value (default 25)', parse: positiveNumber }),
  adaptiveScaleSla: row({ arg: '<filter...>', help: 'metric:stat:op:threshold, repeatable, e.g. time_to_first_token:p95:le:3000 (ms; every filter must pass)', parse: collect }),
};
