import { TailgateError } from '../core/index.js';
import { choiceArg, collect, intArg, positiveArg as positiveNumber } from './args.js';
import { BENCH_DEFAULTS, type AdaptiveScaleOptions, type BenchDefaults, type BenchOptions } from '../bench/index.js';
import { longName, rowsFor, type FlagsOf } from './option-table.js';

const row = rowsFor<BenchOptions>();

/** AIPerf's `--adaptive-scale*` flags, as `tailgate bench` declares them (rows of its table; adaptiveScaleOf reads them), with their defaults from `A`. */
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

/** The adaptive-scale flags as parsed. */
type AdaptiveFlags = FlagsOf<ReturnType<typeof adaptiveFlags>>;

/**
 * `BenchOptions.adaptiveScale` from the flags (seconds to ms); a setting given without `--adaptive-scale`
 * is refused rather than ignored.
 *
 * @example adaptiveScaleOf({ adaptiveScale: true, adaptiveSustainDuration: 60, adaptiveScaleSla: ['ttft:p95:le:500'] })
 * @throws TailgateError CLI_USAGE
 */
export function adaptiveScaleOf(flags: AdaptiveFlags): AdaptiveScaleOptions | undefined {
  if (flags.adaptiveScale !== true) {
    const table = adaptiveFlags(BENCH_DEFAULTS.adaptive);
    const given = (Object.keys(table) as Array<keyof AdaptiveFlags>).find((k) => flags[k] !== undefined);
    if (given !== undefined) throw new TailgateError('CLI_USAGE', `--${longName(given, table[given])} sets AIPerf's adaptive scale: give --adaptive-scale too`);
    return undefined;
  }
  const ms = (s: number | undefined): number | undefined => (s === undefined ? undefined : s * 1000);
  const out: AdaptiveScaleOptions = { sla: flags.adaptiveScaleSla ?? [] };
  const set = <K extends keyof AdaptiveScaleOptions>(k: K, v: AdaptiveScaleOptions[K] | undefined): void => {
    if (v !== undefined) out[k] = v;
  };
  set('control', flags.adaptiveScaleControl);
  set('controlVariable', flags.adaptiveControlVariable);
  set('controlMin', flags.adaptiveControlMin);
  set('controlMax', flags.adaptiveControlMax);
  set('assessmentPeriodMs', ms(flags.adaptiveScaleAssessmentPeriod));
  set('sustainDurationMs', ms(flags.adaptiveSustainDuration));
  set('minCompletedRequests', flags.adaptiveMinCompletedRequests);
  set('stepPolicy', flags.adaptiveStepPolicy);
  set('baseStep', flags.adaptiveBaseStep);
  set('maxStepMultiplier', flags.adaptiveMaxStepMultiplier);
  set('stepPercent', flags.adaptiveStepPercent);
  return out;
}
