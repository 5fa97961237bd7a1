import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { writeBenchArtifacts } from '../bench/index.js';
import { TailgateError } from '../core/index.js';
import { aggregateTrials, findKnee, metricValue, type KneeResult, type TrialsAggregate } from '../gate/index.js';
import { junitXml, renderHtmlReport } from '../report/index.js';
import type { ValidateInput } from './input.js';
import { VALIDATE_DEFAULTS, requestCountFor, resolveValidateOptions, warmupCountFor, type ResolvedValidateOptions, type ValidateEvent } from './options.js';
import type { PredictedSweep, SummaryInput, SweepExtender, SweepOutcome, ValidateResult, Verdict } from './outcome.js';
import { serveProbe, waitForWorkers, type Readiness } from './readiness.js';
import { validateReportDoc } from './report-doc.js';
import { consoleSummary, summaryMarkdown } from './summary-text.js';
import { runTrial, type TrialOutcome } from './trial.js';
import { gateVerdictLine, straddleText, trialFailureText, workerNamerFor } from './gate-verdicts.js';
import { junitSuites } from './junit-suites.js';
import { autoStop } from './trials-auto.js';
import { searchMaxConcurrency, type LevelJudgement, type SearchOutcome } from './search.js';
import { TAILGATE_VERSION, trialJson, verdictJson } from './verdict-doc.js';

/** Options of {@link runValidate}: the flags/recipe fields, plus where progress goes and a stop signal. */
export interface ValidateOptions extends ValidateInput {
  /** Progress lines (readiness, trials). @default none */
  onEvent?: ValidateEvent;
  /** Stops the run; what was measured is still judged and written. */
  signal?: AbortSignal;
  /** Predicts `--predict-beyond` levels from the sweep's run folders (the CLI calibrates an engine model). */
  extendSweep?: SweepExtender;
}

function reasonFor(verdict: Verdict, trials: readonly TrialOutcome[], o: ResolvedValidateOptions, agg: TrialsAggregate | null, interrupted: boolean, readiness: Readiness): string {
  const passed = trials.filter((t) => t.pass).length;
  const firstFail = trials.find((t) => !t.pass);
  const failText = firstFail ? `${firstFail.label}: ${firstFail.shape.shape}${firstFail.shape.worker ? ` (${workerNamerFor(readiness)(firstFail.shape.worker)})` : ''}: ${firstFail.shape.explanation}` : '';
  const stop = interrupted ? ` Interrupted after ${trials.length} of ${o.trials} trials.` : '';
  if (verdict === 'pass') {
    const a = agg?.stats['output_token_throughput.avg'];
    const b = agg?.stats['time_to_first_token.p99'];
    const figures = a && b ? `: throughput median ${Math.round(a.median).toLocaleString('en-US')} tok/s, TTFT p99 median ${Math.round(b.median).toLocaleString('en-US')} ms` : '';
    return `${passed} of ${trials.length} trials passed under rule ${o.passRule}${figures}.${failText ? ` Failed: ${failText}` : ''}`;
  }
  if (trials.length === 0) return `No trial ran.${stop}`;
  if (verdict === 'flaky') return `Flaky: ${passed} of ${trials.length} trials passed, which rule ${o.passRule} does not accept. ${failText}${stop}`;
  return `${trials.length - passed} of ${trials.length} trials failed. ${failText}${stop}`;
}

const medianOf = (v: readonly number[]): number => {
  const s = [...v].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length === 0 ? Number.NaN : s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

/** The curve, knee and recommendation over the levels measured (median figures when a level ran several trials). */
function sweepOutcome(o: ResolvedValidateOptions, trials: readonly TrialOutcome[], levelPass?: ReadonlyMap<number, boolean>): SweepOutcome {
  const levels = [...new Set(trials.map((t) => t.concurrencyPerGpu))].sort((a, b) => a - b);
  const points = levels.map((perGpu) => {
    const at = trials.filter((t) => t.concurrencyPerGpu === perGpu);
    const figure = (metric: string, stat: 'avg' | 'p99'): number[] => at.map((t) => metricValue(t.summary, metric, stat)).filter((v): v is number => v !== null);
    const throughput = at.length > 0 ? medianOf(figure('output_token_throughput', 'avg')) || 0 : 0;
    const pass = levelPass?.get(perGpu) ?? at.every((t) => t.pass);
    return {
      concurrencyPerGpu: perGpu,
      concurrency: perGpu * o.gpus,
      throughput,
      throughputPerGpu: throughput / o.gpus,
      ttftP99Ms: medianOf(figure('time_to_first_token', 'p99')),
      verdict: (pass ? 'pass' : 'fail') as 'pass' | 'fail',
      shape: at.find((t) => !t.pass)?.shape.shape ?? at[0]?.shape.shape ?? 'clean',
    };
  });
  const knee = kneeOf(o, points);
  return { points, knee, kneeConcurrencyPerGpu: knee.kneeConcurrency, recommendedConcurrencyPerGpu: knee.recommendedConcurrency };
}

/** The knee over levels per GPU, with the TTFT p99 gate's threshold (if any) as the recommendation's ceiling. */
function kneeOf(o: ResolvedValidateOptions, points: readonly { concurrencyPerGpu: number; throughputPerGpu: number; ttftP99Ms: number }[]): KneeResult {
  const ceiling = o.gates.find((g) => g.metric === 'time_to_first_token' && g.op === '<=' && g.stat === 'p99');
  return findKnee(points.map((p) => ({ concurrency: p.concurrencyPerGpu, throughput: p.throughputPerGpu, ttftP99Ms: p.ttftP99Ms })), ceiling ? { ttftCeilingMs: ceiling.threshold } : {});
}

/**
 * The sweep extended past its levels by `extend` (`--predict-beyond`): the predicted points, and the
 * knee and recommendation over measured and predicted levels together. A model that cannot be had
 * (levels that do not fit) is a note, not a failure: predictions never judge the run.
 */
async function predictedSweep(o: ResolvedValidateOptions, sweep: SweepOutcome, trials: readonly TrialOutcome[], extend: SweepExtender): Promise<PredictedSweep> {
  const dirs = trials.filter((t) => t.bench !== null).map((t) => join(o.outDir, t.label));
  let ext;
  try {
    const levels = o.predictBeyond.map((perGpu) => ({ concurrencyPerGpu: perGpu, requestCount: requestCountFor(o, perGpu * o.gpus), warmupRequestCount: warmupCountFor(o, perGpu * o.gpus) }));
    ext = await extend(dirs, levels, o.gpus);
  } catch (e) {
    return { source: 'none', points: [], knee: null, kneeConcurrencyPerGpu: null, recommendedConcurrencyPerGpu: null, notes: [`no prediction: ${(e as Error).message}`] };
  }
  const points = ext.points.map((p) => ({ ...p, concurrency: p.concurrencyPerGpu * o.gpus }));
  const knee = kneeOf(o, [...sweep.points, ...points]);
  return { source: ext.source, points, knee, kneeConcurrencyPerGpu: knee.kneeConcurrency, recommendedConcurrencyPerGpu: knee.recommendedConcurrency, notes: ext.notes };
}

/** One search level under the pass rule: pass or fail, and why (the failed gates with figures and limits, or the failed trials). */
function judgeLevel(at: readonly TrialOutcome[], o: ResolvedValidateOptions, name: (id: string) => string): LevelJudgement {
  const agg = aggregateTrials(at.map((t) => ({ pass: t.pass, summary: t.summary })), o.passRule, o.gates, { confidenceLevel: o.confidenceLevel });
  const pass = agg.verdict === 'pass';
  const failedGates = agg.gates.filter((g) => !g.pass).map((g) => gateVerdictLine(g, o.passRule));
  const why = pass
    ? (agg.gates.map((g) => gateVerdictLine(g, o.passRule)).join('; ') || `${agg.passed} of ${at.length} trials passed`)
    : [...failedGates, ...(failedGates.length === 0 ? at.filter((t) => !t.pass).map((t) => trialFailureText(t, name)) : [])].join('; ') || 'no trial ran';
  return { pass, why };
}

async function writeOutputs(
  o: ResolvedValidateOptions,
  s: SummaryInput,
  extra: { interrupted: boolean; startedAt: Date },
): Promise<{ files: ValidateResult['files']; doc: Record<string, unknown>; summaryText: string }> {
  await mkdir(o.outDir, { recursive: true });
  const files = {
    verdict: join(o.outDir, 'verdict.json'),
    junit: join(o.outDir, 'junit.xml'),
    summary: join(o.outDir, 'summary.md'),
    report: join(o.outDir, 'report.html'),
  };
  const doc = verdictJson({ ...s, ...extra });
  await writeFile(files.verdict, `${JSON.stringify(doc, null, 2)}\n`);
  await writeFile(files.junit, junitXml(junitSuites({ ...s, startedAt: extra.startedAt })));
  await writeFile(files.summary, summaryMarkdown(s));
  await writeFile(files.report, renderHtmlReport(validateReportDoc(s)));
  return { files, doc, summaryText: consoleSummary(s) };
}

/**
 * `tailgate validate` as a library: readiness (every expected worker, then one chat request that
 * must return content), N trials (or one per `--sweep` level), each judged against the gates and
 * given a shape with its evidence, then the verdict across trials under the pass rule. Writes
 * `verdict.json`, `junit.xml`, `summary.md`, `report.html` and each trial's AIPerf exports under
 * `outDir`. Never prints: progress goes to `onEvent`, the summary is in the result.
 *
 * @example
 * const r = await runValidate({ url: 'http://127.0.0.1:8000', model: 'm', gpus: 8, concurrencyPerGpu: 256,
 *   minThroughput: 50_000, maxTtftP99: 2000, trials: 3, out: 'out' });
 * process.exitCode = r.exitCode;
 * @throws TailgateError CONFIG_INVALID for bad options (before anything is sent)
 */
export async function runValidate(opts: ValidateOptions): Promise<ValidateResult> {
  const o = resolveValidateOptions(opts);
  // validate/ has no engine model of its own: without an extender the asked levels would be dropped unsaid.
  if (o.predictBeyond.length > 0 && opts.extendSweep === undefined) throw new TailgateError('CONFIG_INVALID', 'predictBeyond needs extendSweep: the engine model that predicts the levels (the CLI passes one that calibrates on the sweep)');
  const onEvent = opts.onEvent ?? ((): void => {});
  const signal = opts.signal;
  const startedAt = new Date();
  await mkdir(o.outDir, { recursive: true });

  const trials: TrialOutcome[] = [];
  let readiness: Readiness = await waitForWorkers(o, onEvent, signal);
  let notReadyReason: string | null = null;
  if (!readiness.ok) {
    notReadyReason = `Not ready, nothing measured: ${readiness.message}.`;
  } else {
    onEvent(`serve probe: one ${o.endpointType} request to ${o.url} (timeout ${Math.round(o.probeTimeoutMs / 1000)} s)`);
    const probe = await serveProbe(o, signal);
    readiness = { ...readiness, probe };
    if (!probe.ok) {
      readiness = { ...readiness, ok: false, message: `${readiness.message}, but the serve probe failed: ${probe.error ?? 'no content'}` };
      notReadyReason = `Not ready, nothing measured: the serve probe failed (${probe.error ?? 'no content'}).`;
    } else {
      onEvent(`serve probe: answered in ${Math.round(probe.latencyMs)} ms`);
    }
  }

  const stopped = (): boolean => signal?.aborted === true;
  /** Runs one trial at `perGpu`, writes its AIPerf exports and reports it. */
  const measure = async (perGpu: number, label: string, what: string): Promise<TrialOutcome> => {
    onEvent(`${label}: concurrency ${perGpu * o.gpus} (${perGpu} per GPU), ${what}`);
    const t = await runTrial(o, { index: trials.length + 1, label, concurrencyPerGpu: perGpu, readiness }, onEvent, signal);
    trials.push(t);
    if (t.bench) {
      await writeBenchArtifacts(join(o.outDir, label), t.bench, {
        version: TAILGATE_VERSION,
        extra: { validate: trialJson(t), scrape: t.series, host_pressure: t.host, gpu_telemetry: t.gpu?.perWorker ?? null },
      });
    }
    const tp = metricValue(t.summary, 'output_token_throughput', 'avg');
    const p99 = metricValue(t.summary, 'time_to_first_token', 'p99');
    onEvent(`${label}: ${t.pass ? 'PASS' : t.interrupted ? 'CANCELLED' : 'FAIL'} ${t.shape.shape}${t.shape.worker ? ` (${workerNamerFor(readiness)(t.shape.worker)})` : ''}, ${tp === null ? '-' : Math.round(tp)} tok/s, TTFT p99 ${p99 === null ? '-' : Math.round(p99)} ms`);
    return t;
  };
  let autoText: string | null = null;
  let search: SearchOutcome | null = null;
  const levelPass = new Map<number, boolean>();
  if (notReadyReason === null) {
    if (o.search) {
      const perLevel = o.trialsAuto ? VALIDATE_DEFAULTS.minAutoTrials : o.trials;
      search = await searchMaxConcurrency(o.search, async (perGpu) => {
        const at: TrialOutcome[] = [];
        for (let k = 1; k <= perLevel && !stopped(); k++) {
          at.push(await measure(perGpu, perLevel === 1 ? `search-${perGpu}` : `search-${perGpu}-${k}`, `search level (${o.search!.lo}:${o.search!.hi}, step ${o.search!.step})${perLevel > 1 ? `, trial ${k} of ${perLevel}` : ''}`));
        }
        if (stopped()) return null;
        const j = judgeLevel(at, o, workerNamerFor(readiness));
        levelPass.set(perGpu, j.pass);
        onEvent(`search: ${perGpu} per GPU ${j.pass ? 'passes' : 'fails'}: ${j.why}`);
        return j;
      });
    } else if (o.sweep.length > 0) {
      for (let i = 0; i < o.sweep.length && !stopped(); i++) await measure(o.sweep[i]!, `sweep-${o.sweep[i]!}`, `level ${i + 1} of ${o.sweep.length}`);
    } else {
      for (let i = 0; i < o.trials && !stopped(); i++) {
        await measure(o.concurrencyPerGpu, `trial-${i + 1}`, o.trialsAuto ? `trial ${i + 1} (auto, at most ${o.trials})` : `trial ${i + 1} of ${o.trials}`);
        if (!o.trialsAuto) continue;
        const a = autoStop(trials, o);
        onEvent(`trials auto: ${a.text}`);
        autoText = a.text;
        if (a.stop) break;
      }
    }
  }
  const interrupted = signal?.aborted === true;

  let verdict: Verdict;
  let reason: string;
  let aggregate: TrialsAggregate | null = null;
  let sweep: SweepOutcome | null = null;
  if (notReadyReason !== null) {
    verdict = 'fail';
    reason = notReadyReason;
  } else if (search) {
    sweep = sweepOutcome(o, trials, levelPass);
    const found = search.maxPassingPerGpu;
    verdict = found !== null && !interrupted ? 'pass' : 'fail';
    const bracket = found === null
      ? `No level passes the gates: ${search.lo} per GPU already fails.`
      : `The largest concurrency that passes the gates is ${found} per GPU (${found * o.gpus} total)${search.minFailingPerGpu !== null ? `; ${search.minFailingPerGpu} per GPU fails, so the answer lies in [${found}, ${search.minFailingPerGpu})` : `, the top of the range`} (step ${search.step}, ${search.points.length} levels tried).`;
    reason = `${bracket} ${sweep.knee.explanation.replace(/concurrency (\d+)/g, 'concurrency $1 per GPU')}${interrupted ? ' Interrupted.' : ''}`;
  } else if (o.sweep.length > 0) {
    sweep = sweepOutcome(o, trials);
    if (o.predictBeyond.length > 0 && opts.extendSweep !== undefined && !interrupted) {
      onEvent(`predict: levels ${o.predictBeyond.join(', ')} per GPU from ${o.predictProfile === null ? 'a model calibrated on the sweep' : `profile ${o.predictProfile}`}`);
      sweep.predicted = await predictedSweep(o, sweep, trials, opts.extendSweep);
    }
    const rec = sweep.recommendedConcurrencyPerGpu === null ? undefined : trials.find((t) => t.concurrencyPerGpu === sweep!.recommendedConcurrencyPerGpu);
    verdict = rec?.pass === true && !interrupted ? 'pass' : 'fail';
    reason = `${sweep.knee.explanation} ${rec ? `The recommended point (${rec.concurrencyPerGpu} per GPU) ${rec.pass ? 'passes' : 'fails'} the gates.` : 'No recommended operating point.'}${interrupted ? ' Interrupted.' : ''}`
      .replace(/concurrency (\d+)/g, 'concurrency $1 per GPU');
  } else {
    aggregate = aggregateTrials(trials.map((t) => ({ pass: t.pass, summary: t.summary })), o.passRule, o.gates, { confidenceLevel: o.confidenceLevel });
    verdict = interrupted && trials.length < o.trials ? (aggregate.passed > 0 ? 'flaky' : 'fail') : aggregate.verdict;
    // The median rule judges medians of gated figures; a trial that measured the wrong fleet still fails it.
    if (verdict === 'pass' && o.passRule === 'median' && trials.filter((t) => !t.pass && ['errors', 'under-provisioned'].includes(t.shape.shape)).length * 2 >= trials.length) verdict = 'fail';
    reason = reasonFor(verdict, trials, o, aggregate, interrupted, readiness);
    const straddling = straddleText(aggregate.gates, o.confidenceLevel);
    if (straddling) reason = `${reason} ${straddling}`;
  }
  const warnings = trials.flatMap((t) => t.warnings);
  if (o.failOnWarning && verdict === 'pass' && warnings.length > 0) {
    verdict = 'fail';
    reason = `The gates passed, but --fail-on-warning and ${warnings.length} worker warning(s): ${warnings.slice(0, 3).map((w) => `${w.workerName} ${w.rule}`).join('; ')}${warnings.length > 3 ? '; ...' : ''}. ${reason}`;
  }
  if (interrupted) {
    // what was measured stays in the files, but a run cut short is not judged (nor read as passed)
    verdict = 'cancelled';
    reason = `Cancelled by an interrupt after ${trials.length} trial(s)${trials.some((t) => t.interrupted) ? ', the last one cut short' : ''}; no verdict is given for a run cut short.`;
  }
  const s: SummaryInput = { o, verdict, reason, readiness, trials, aggregate, sweep, search, outDir: o.outDir, autoStop: autoText };
  const { files, doc, summaryText } = await writeOutputs(o, s, { interrupted, startedAt });
  return { verdict, exitCode: verdict === 'pass' ? 0 : verdict === 'cancelled' ? 130 : 1, reason, readiness, trials, aggregate, sweep, search, interrupted, outDir: o.outDir, files, doc, summaryText };
}
