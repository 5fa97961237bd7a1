import { InvalidArgumentError } from 'commander';
import { choiceArg, collect, intArg } from './args.js';
import type { BenchDefaults, BenchOptions } from '../bench/index.js';
import { rowsFor } from './option-table.js';

const row = rowsFor<BenchOptions>();

const positiveNumber = (value: string): number => {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError('expected a number > 0');
  return n;
};

/** AIPerf's `--adaptive-scale*` flags, as `tailgate bench` declares them (rows of its table; bench/adaptive-scale.ts reads them), with their defaults from `A`. */
export function adaptiveFlags(A: BenchDefaults['adaptive']) {
  return {
    adaptiveScale: row<boolean>({ help: 'AIPerf\'s adaptive scale: the profiling phase raises its concurrency while every --adaptive-scale-sla passes over a window, then holds the last passing value (needs --benchmark-duration, --adaptive-sustain-duration; writes adaptive_scale_events.jsonl and adaptive_scale_summary.json)' }),
    adaptiveScaleControl: row<string>({ arg: '<spec>', help: 'variable:min,max:type, e.g. concurrency:1,64:int (bench moves concurrency or prefill_concurrency)' }),
    adaptiveControlVariable: row<string>({ arg: '<name>', help: 'the load the adaptive scale moves: concurrency or prefill_concurrency (with --prefill-concurrency); AIPerf\'s request_rate and users are refused' }),
    adaptiveControlMin: row({ arg: '<n>', help: 'where the adaptive scale starts', parse: positiveNumber, defaultNote: String(A.controlMin) }),
    adaptiveControlMax: row({ arg: '<n>', help: 'the highest value it tries', parse: positiveNumber, defaultNote: '--concurrency' }),
    adaptiveScaleAssessmentPeriod: row({ arg: '<s>', aliases: ['--adaptive-assessment-period'], help: 'seconds per SLA window (at least 1)', parse: positiveNumber, defaultNote: String(A.assessmentPeriodMs / 1000) }),
    adaptiveSustainDuration: row({ arg: '<s>', help: 'seconds to hold the boundary once found', parse: positiveNumber }),
    adaptiveMinCompletedRequests: row({ arg: '<n>', help: 'completions an SLA window needs to decide (AIPerf\'s YAML min_completed_requests)', parse: intArg(1), defaultNote: String(A.minCompletedRequests) }),
    adaptiveStepPolicy: row({ arg: '<policy>', help: `sla_margin (base step x 1-${A.maxStepMultiplier} by the SLA margin) or fixed_percent_step (AIPerf's YAML strategy.step_policy)`, parse: choiceArg(['sla_margin', 'fixed_percent_step'] as const), defaultNote: A.stepPolicy }),
    adaptiveBaseStep: row({ arg: '<n>', help: 'sla_margin\'s base step', parse: intArg(1), defaultNote: String(A.baseStep) }),
    adaptiveMaxStepMultiplier: row({ arg: '<n>', help: 'sla_margin\'s largest multiplier', parse: intArg(1), defaultNote: String(A.maxStepMultiplier) }),
    adaptiveStepPercent: row({ arg: '<pct>', help: 'fixed_percent_step\'s step, percent of the value', parse: positiveNumber, defaultNote: String(A.stepPercent) }),
    adaptiveScaleSla: row({ arg: '<filter...>', help: 'metric:stat:op:threshold, repeatable, e.g. time_to_first_token:p95:le:3000 (ms; every filter must pass)', parse: collect }),
  };
}
