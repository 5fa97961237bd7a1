import { describeGate } from '../gate/index.js';
import type { JunitCase, JunitSuite } from '../report/index.js';
import { gateFailureText, gateTrialLines, shapeText, verdictBasis, verdictFailureText } from './gate-verdicts.js';
import type { SummaryInput } from './outcome.js';
import type { TrialOutcome } from './trial.js';

/** Input of {@link junitSuites}: what the summaries read, plus when the run started. */
export interface JunitSuitesInput extends Omit<SummaryInput, 'outDir'> {
  startedAt: Date;
}

const READINESS = 'tailgate.validate.readiness';
const GATES = 'tailgate.validate.gates';

function trialLine(t: TrialOutcome, name: (id: string) => string): string {
  const figures = t.gates.map((g) => `${g.gate.metric}.${g.gate.stat}=${g.value === null ? 'missing' : Math.round(g.value * 100) / 100}`).join(' ');
  return `${t.label} (concurrency ${t.concurrency}): ${t.pass ? 'pass' : 'fail'}, ${shapeText(t, name)}${figures ? `, ${figures}` : ''}`;
}

/**
 * JUnit suites that agree with the verdict: `readiness` (workers ready, serve probe), then
 * `gates`: one case per gate judged across trials by the pass rule (for a sweep, at the
 * recommended level) and one `verdict` case that fails exactly when the verdict is fail or flaky.
 * Per-trial figures go to each case's `system-out` and the suite's; a failure names only the
 * gates that failed, with figure, limit and shape.
 *
 * @example
 * junitXml(junitSuites({ ...summaryInput, startedAt }));
 */
export function junitSuites(s: JunitSuitesInput): JunitSuite[] {
  const r = s.readiness;
  const suites: JunitSuite[] = [
    {
      name: 'readiness',
      timestamp: s.startedAt,
      timeMs: r.waitedMs + (r.probe?.latencyMs ?? 0),
      cases: [
        { name: `workers ready (${r.expected} expected)`, classname: READINESS, timeMs: r.waitedMs, failure: r.ok || r.probe?.ok === false ? null : r.message, failureType: 'NotReady' },
        ...(r.probe ? [{ name: 'serve probe', classname: READINESS, timeMs: r.probe.latencyMs, failure: r.probe.ok ? null : `serve probe failed: ${r.probe.error ?? 'no content'}`, failureType: 'NotReady' }] : []),
      ],
    },
  ];
  const basis = verdictBasis(s);
  const trialMs = (ts: readonly TrialOutcome[]): number => ts.reduce((a, t) => a + t.wallMs, 0);
  const cases: JunitCase[] = basis.gates.map((g, i) => ({
    name: describeGate(g.gate),
    classname: GATES,
    timeMs: trialMs(basis.trials),
    failure: g.pass ? null : gateFailureText(g, basis, i),
    systemOut: gateTrialLines(basis, i),
  }));
  cases.push({
    name: s.search ? 'verdict (largest passing concurrency)' : s.sweep ? 'verdict (recommended sweep level)' : `verdict (pass rule ${s.o.passRule})`,
    classname: 'tailgate.validate',
    timeMs: trialMs(s.trials),
    failure: verdictFailureText(s),
    failureType: s.verdict === 'flaky' ? 'Flaky' : s.verdict === 'cancelled' ? 'Cancelled' : 'VerdictFailure',
    systemOut: s.reason,
  });
  const first = s.trials.find((t) => t.bench !== null)?.bench?.startTime;
  const warnings = s.trials.flatMap((t) => t.warnings);
  const unit = (u: string): string => (u === 'count' ? '' : u);
  const facts: Record<string, string> = {
    verdict: s.verdict,
    passRule: s.sweep ? 'sweep' : s.o.passRule,
    trialsRun: String(s.trials.length),
    trialsPassed: String(s.trials.filter((t) => t.pass).length),
    concurrency: String(s.o.concurrency),
    seed: String(s.o.randomSeed),
  };
  const searched = (s.search?.points ?? []).map((p, i) => `search ${i + 1}: ${p.concurrencyPerGpu} per GPU ${p.pass ? 'passes' : 'fails'}: ${p.why}`);
  const systemOut = [...s.trials.map((t) => trialLine(t, basis.workerName)), ...searched, ...warnings.map((w) => `WARNING ${w.trial}: ${w.message}; locus ${w.locus}`)].join('\n');
  suites.push({
    name: 'gates',
    timestamp: first ?? s.startedAt,
    timeMs: trialMs(s.trials),
    properties: [
      ...Object.entries(facts).map(([name, value]) => ({ name, value })),
      // Warnings are facts, never failures (unless --fail-on-warning failed the verdict case).
      ...warnings.map((w, i) => ({ name: `warning.${i + 1}`, value: `${w.trial} ${w.worker} ${w.rule} ${w.figure} ${w.value}${unit(w.unit)} (fleet median ${w.fleetMedian}${unit(w.unit)}) [${w.source}] locus ${w.locus}` })),
    ],
    cases,
    systemOut,
  });
  return suites;
}
