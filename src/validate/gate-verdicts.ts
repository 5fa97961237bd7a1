import { describeGate, figureText, judgeGatesAcrossTrials, type GateAcrossTrials, type PassRule } from '../gate/index.js';
import { workerNames } from '../report/index.js';
import type { SummaryInput } from './outcome.js';
import type { Readiness } from './readiness.js';
import type { TrialOutcome } from './trial.js';

/** The trials a verdict rests on, the rule it applied, and each gate judged that way. */
export interface VerdictBasis {
  trials: readonly TrialOutcome[];
  rule: PassRule;
  gates: GateAcrossTrials[];
  /** `worker 2 (10.0.0.3:8000)`: workers named as the charts name them (readiness order). */
  workerName: (id: string) => string;
}

/** Names a worker id as the charts do, `worker 2 (10.0.0.3:8000)`, by the readiness order. */
export function workerNamerFor(readiness: Pick<Readiness, 'workers'>): (id: string) => string {
  const order = readiness.workers.map((w) => w.id);
  return (id) => workerNames([id], order).get(id) ?? id;
}

/**
 * What the verdict was judged on: every trial under the pass rule; for a sweep, the recommended
 * level alone (rule `all` over that one run); for a search, the largest passing level's trials. JUnit, summary.md and the console all read this.
 */
export function verdictBasis(s: Pick<SummaryInput, 'o' | 'trials' | 'aggregate' | 'sweep' | 'readiness' | 'search'>): VerdictBasis {
  const workerName = workerNamerFor(s.readiness);
  if (s.search) {
    const found = s.search.maxPassingPerGpu;
    const trials = found === null ? [] : s.trials.filter((t) => t.concurrencyPerGpu === found);
    const opts = { confidenceLevel: s.o.confidenceLevel };
    return { trials, rule: s.o.passRule, gates: trials.length > 0 ? judgeGatesAcrossTrials(trials.map((t) => t.summary), s.o.gates, s.o.passRule, opts) : [], workerName };
  }
  if (s.sweep) {
    const rec = s.sweep.recommendedConcurrencyPerGpu;
    const trials = rec === null ? [] : s.trials.filter((t) => t.concurrencyPerGpu === rec).slice(0, 1);
    return { trials, rule: 'all', gates: trials.length > 0 ? judgeGatesAcrossTrials(trials.map((t) => t.summary), s.o.gates, 'all') : [], workerName };
  }
  const gates = s.aggregate?.gates ?? (s.trials.length > 0 ? judgeGatesAcrossTrials(s.trials.map((t) => t.summary), s.o.gates, s.o.passRule) : []);
  return { trials: s.trials, rule: s.o.passRule, gates, workerName };
}

const n2 = (v: number): string => (Math.round(v * 100) / 100).toLocaleString('en-US');

const RULE_TEXT: Record<PassRule, string> = { all: 'every trial', majority: 'more than half the trials', median: 'the median across trials' };

/** `rule majority (more than half the trials)`. */
export function ruleText(rule: PassRule): string {
  return `rule ${rule} (${RULE_TEXT[rule]})`;
}

/** `shape knee-jitter`, with the worker (named as the charts name it) when the shape names one. */
export function shapeText(t: TrialOutcome, name: (id: string) => string): string {
  return `shape ${t.shape.shape}${t.shape.worker ? ` (${name(t.shape.worker)})` : ''}`;
}

/**
 * Why one trial failed, naming only the gates it failed (figure, limit) and its shape:
 * `trial-2: TTFT p99 2,310 ms past the 2,200 ms ceiling (2,000 x1.1); shape knee-jitter`.
 */
export function trialFailureText(t: TrialOutcome, name: (id: string) => string): string {
  const failed = t.gates.filter((g) => !g.pass).map(figureText);
  const why = failed.length > 0 ? failed.join(', ') : t.error !== null ? `could not run: ${t.error}` : t.interrupted ? 'interrupted' : t.timedOut ? 'stopped by --trial-timeout' : 'gates held but the run did not measure the fleet';
  return `${t.label}: ${why}; ${shapeText(t, name)}`;
}

/** One line on a gate under the rule: `PASS output_token_throughput.avg >= 150 (x0.9): 3 of 3 trials, median 812`. */
export function gateVerdictLine(g: GateAcrossTrials, rule: PassRule): string {
  const med = g.median === null ? 'no figure' : `median ${n2(g.median)}`;
  const ci = g.stat?.ci;
  const interval = ci ? `, mean ${n2(g.stat!.mean)} with ${n2(ci.level * 100)}% interval [${n2(ci.low)}, ${n2(ci.high)}]${g.straddles ? ' holding the limit' : ''}` : '';
  return `${g.pass ? 'PASS' : 'FAIL'} ${describeGate(g.gate)} under rule ${rule}: ${g.passedTrials} of ${g.trialPasses.length} trials within the limit ${g.gate.op} ${n2(g.limit)}, ${med}${interval}`;
}

/**
 * A failed gate's message: first line the gate, the rule and the figure it was judged by; then
 * one line per trial that failed this gate (its figure against the limit, its shape).
 */
export function gateFailureText(g: GateAcrossTrials, basis: VerdictBasis, index: number): string {
  const head = basis.rule === 'median'
    ? `${describeGate(g.gate)} fails under ${ruleText('median')}: ${g.median === null ? 'no trial produced the figure' : `median ${figureText({ gate: g.gate, value: g.median, limit: g.limit, pass: false })}`}`
    : `${describeGate(g.gate)} fails under ${ruleText(basis.rule)}: ${g.passedTrials} of ${g.trialPasses.length} trials within the limit ${g.gate.op} ${Math.round(g.limit * 100) / 100}`;
  const lines = basis.trials.flatMap((t) => {
    const r = t.gates[index];
    return r && !r.pass ? [`${t.label}: ${figureText(r)}; ${shapeText(t, basis.workerName)}`] : [];
  });
  return [head, ...lines].join('\n');
}

/** Per-trial figures of one gate, for JUnit `system-out`: `trial-1: PASS ... = 812.3, limit >= 135 (150 x0.9)`. */
export function gateTrialLines(basis: VerdictBasis, index: number): string {
  const lines = basis.trials.map((t) => {
    const r = t.gates[index];
    return r ? `${t.label}: ${r.pass ? 'pass' : 'fail'} ${figureText(r)}` : `${t.label}: not judged`;
  });
  const g = basis.gates[index];
  if (g) lines.push(gateVerdictLine(g, basis.rule));
  return lines.join('\n');
}

/**
 * The verdict's failure message (null when it passed): the verdict, how many trials passed under
 * the rule, then each failed trial with only the gates it failed and its shape.
 */
export function verdictFailureText(s: Pick<SummaryInput, 'o' | 'verdict' | 'reason' | 'trials' | 'aggregate' | 'sweep' | 'readiness' | 'search'>): string | null {
  if (s.verdict === 'pass') return null;
  const v = s.verdict.toUpperCase();
  if (!s.readiness.ok || s.trials.length === 0 || s.search || s.verdict === 'cancelled') return `${v}: ${s.reason}`;
  const basis = verdictBasis(s);
  const passed = basis.trials.filter((t) => t.pass).length;
  const head = s.sweep
    ? `${v}: ${basis.trials.length === 0 ? 'no recommended operating point' : `the recommended point (${basis.trials[0]!.concurrencyPerGpu} per GPU) ${passed > 0 ? 'passed but the run was cut short' : 'failed'}`}`
    : `${v} under ${ruleText(basis.rule)}: ${passed} of ${basis.trials.length} trials passed${s.o.trials > basis.trials.length ? ` (${s.o.trials} planned)` : ''}`;
  const straddling = s.verdict === 'flaky' ? straddleText(basis.gates.filter((g) => !g.pass), s.o.confidenceLevel) : '';
  const warned = s.o.failOnWarning && basis.trials.every((t) => t.pass) ? s.trials.flatMap((t) => t.warnings).map((w) => `${w.trial}: --fail-on-warning: ${w.message}`) : [];
  return [head, ...basis.trials.filter((t) => !t.pass).map((t) => trialFailureText(t, basis.workerName)), ...(straddling ? [straddling] : []), ...warned].join('\n');
}


/**
 * The honest flaky, in words: each gated figure whose interval holds its limit strictly inside,
 * e.g. `time_to_first_token.p99: the 95% interval [1,950, 2,420] holds the limit 2,200; the figure
 * sits at the limit, so more trials would not settle it.` Empty when none does.
 */
export function straddleText(gates: readonly GateAcrossTrials[], level: number): string {
  return gates.filter((g) => g.straddles).map((g) => {
    const ci = g.stat!.ci!;
    return `${g.gate.metric}.${g.gate.stat}: the ${n2(level * 100)}% interval [${n2(ci.low)}, ${n2(ci.high)}] holds the limit ${g.gate.op} ${n2(g.limit)}; the figure sits at the limit, so more trials would not settle it.`;
  }).join(' ');
}
