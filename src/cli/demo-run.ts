import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { request } from 'undici';
import { TailgateError, formatMs, type RequestRecord } from '../core/index.js';
import { runBench, writeBenchArtifacts, type BenchResult } from '../bench/index.js';
import { classifyTrial, judgeGates, metricValue, type Gate, type GateResult, type ShapeVerdict, type WorkerSeries } from '../gate/index.js';
import { renderHtmlReport, runCharts, workerNames, workerOrder, type Chart, type ReportSection } from '../report/index.js';
import type { PolicyName } from '../routing/index.js';
import { Collector, parsePrometheusText, sumSamples, type CollectorSeries } from '../scrape/index.js';
import type { Summary } from '../stats/index.js';
import { spawnTailgate, type TailgateChild } from './child.js';
import { VERSION } from './program.js';

/** The size of one demo run: the fleet, the load, and the stall that hits one worker. */
export interface DemoPlan {
  name: 'default' | 'quick' | 'full' | 'simulate';
  workers: number;
  profile: string;
  tokensPerChunk: number;
  concurrency: number;
  requestCount: number;
  warmupRequestCount: number;
  inputTokens: number;
  outputTokens: number;
  stallWorker: number;
  /**
   * From the start of the bench (warm-up included), so every policy meets the stall at the same
   * moment; a warm-up still running then (a loaded machine) moves it to the start of profiling,
   * since a stall the warm-up absorbs is never measured.
   */
  stallAtMs: number;
  stallForMs: number;
}

/** Sized so the default run fits in about a minute on two cores; `full` is the seed's scale. */
export const DEMO_PLANS: Readonly<Record<DemoPlan['name'], DemoPlan>> = {
  simulate: {
    name: 'simulate', workers: 8, profile: 'h100-qwen3-8b', tokensPerChunk: 1, concurrency: 2048, requestCount: 16384,
    warmupRequestCount: 2048, inputTokens: 128, outputTokens: 128, stallWorker: 3, stallAtMs: 6000, stallForMs: 15_000,
  },
  default: {
    name: 'default', workers: 8, profile: 'small', tokensPerChunk: 1, concurrency: 128, requestCount: 960,
    warmupRequestCount: 128, inputTokens: 128, outputTokens: 64, stallWorker: 3, stallAtMs: 4000, stallForMs: 6000,
  },
  quick: {
    name: 'quick', workers: 8, profile: 'small', tokensPerChunk: 1, concurrency: 64, requestCount: 640,
    warmupRequestCount: 64, inputTokens: 128, outputTokens: 48, stallWorker: 3, stallAtMs: 2500, stallForMs: 4000,
  },
  full: {
    name: 'full', workers: 8, profile: 'h100-qwen3-8b', tokensPerChunk: 4, concurrency: 2048, requestCount: 16384,
    warmupRequestCount: 2048, inputTokens: 128, outputTokens: 128, stallWorker: 3, stallAtMs: 15_000, stallForMs: 20_000,
  },
};

/** The policies the demo runs under the stall, in the report's order. */
export const DEMO_POLICIES: readonly PolicyName[] = ['round-robin', 'least-loaded', 'p2c', 'adaptive'];

/** One run of the demo (the healthy baseline or one policy under the stall), judged. */
export interface DemoRun {
  name: string;
  policy: PolicyName;
  stalled: boolean;
  summary: Summary;
  outputTokensPerS: number;
  ttftP50Ms: number;
  ttftP99Ms: number;
  requestLatencyP99Ms: number;
  /** The busiest worker's share of all in-flight (time-averaged from the router's gauges). */
  maxWorkerShare: number;
  gates: GateResult[];
  verdict: 'pass' | 'fail';
  shape: ShapeVerdict;
  charts: Chart[];
}

/** What the demo ran and judged, and where its files went. */
export interface DemoResult {
  plan: DemoPlan;
  seed: number;
  gates: Gate[];
  runs: DemoRun[];
  wallMs: number;
  outDir: string;
  cancelled: boolean;
}

/** What to run: the plan's scale, the seed, the output folder, the policies. */
export interface DemoOptions {
  plan: DemoPlan;
  seed: number;
  outDir: string;
  policies?: readonly PolicyName[];
  /** One line per step for people; the progress line on a TTY goes through `onProgress`. */
  onLine?: (line: string) => void;
  onProgress?: (text: string) => void;
  signal?: AbortSignal;
}

const MODEL = 'Qwen/Qwen3-8B';

/**
 * Gates a team would set from its healthy baseline, in the proportions of the seed's own gates
 * (healthy ~0.7 s TTFT p99 against a 2 s ceiling): a throughput floor at 80% of healthy and a
 * TTFT p99 ceiling at 3x healthy, at least healthy + 500 ms (a short run's p99 is noisy), with the
 * reference's 0.9 / 1.1 tolerances on top.
 */
export function gatesFromBaseline(healthy: Summary): Gate[] {
  const tput = metricValue(healthy, 'output_token_throughput', 'avg') ?? 0;
  const ttftP99 = metricValue(healthy, 'time_to_first_token', 'p99') ?? 0;
  return [
    { metric: 'output_token_throughput', stat: 'avg', op: '>=', threshold: Math.round(tput * 0.8), tolerance: 0.9 },
    { metric: 'time_to_first_token', stat: 'p99', op: '<=', threshold: Math.round(Math.max(ttftP99 * 3, ttftP99 + 500)), tolerance: 1.1 },
  ];
}

/** Per-worker in-flight from the router's gauges, within the measured window. */
function workerSeriesOf(series: CollectorSeries, fromMs: number, toMs: number): Record<string, WorkerSeries> {
  const router = series.targets['router'];
  const perWorker: Record<string, WorkerSeries> = {};
  if (!router) return perWorker;
  const keep = router.tMs.map((t, i) => [t, i] as const).filter(([t]) => t >= fromMs && t <= toMs);
  for (const [key, values] of Object.entries(router.values)) {
    if (!key.startsWith('inflight:')) continue;
    perWorker[key.slice('inflight:'.length)] = { tMs: keep.map(([t]) => t), inflight: keep.map(([, i]) => (Number.isNaN(values[i]) ? 0 : values[i]!)) };
  }
  return perWorker;
}

/** The busiest worker's share of all in-flight, from time-averaged per-worker in-flight. */
export function maxWorkerShare(perWorker: Record<string, WorkerSeries>): number {
  const means = Object.values(perWorker).map((s) => s.inflight.reduce((a, b) => a + b, 0) / Math.max(1, s.inflight.length));
  const total = means.reduce((a, b) => a + b, 0);
  return total > 0 ? Math.max(...means) / total : 0;
}

/** Waits until no worker has a request running or waiting, so every run starts from an idle fleet. */
async function waitIdle(urls: readonly string[], timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    let busy = 0;
    for (const url of urls) {
      try {
        const res = await request(`${url}/metrics`);
        const samples = parsePrometheusText(await res.body.text());
        busy += sumSamples(samples, 'vllm:num_requests_running') + sumSamples(samples, 'vllm:num_requests_waiting');
      } catch {
        busy++;
      }
    }
    if (busy === 0) return;
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Stalls the plan's worker `inMs` from now, for the plan's duration. */
async function addStall(workerUrl: string, plan: DemoPlan, inMs: number): Promise<void> {
  const res = await request(`${workerUrl}/admin/faults`, {
    method: 'POST',
    body: `worker=${plan.stallWorker},kind=stall,at=${Math.round(inMs)}ms,for=${plan.stallForMs}ms`,
  });
  const text = await res.body.text();
  if (res.statusCode !== 200) throw new TailgateError('INTERNAL', `the fleet refused the stall fault: ${text}`);
}

/** Shapes that fail a run even when its gates pass, as in validate: it did not measure the fleet it meant to. */
const MEASURED_WRONG: ReadonlySet<string> = new Set(['errors', 'under-provisioned']);

/** Judges one run against the gates and builds its row and charts (live and simulated runs alike). */
export function judgeRun(input: {
  name: string; policy: PolicyName; stalled: boolean; plan: DemoPlan; summary: Summary; records: readonly RequestRecord[];
  perWorker: Record<string, WorkerSeries>; gates: readonly Gate[]; client?: { eventLoopDelayP99Ms: number; cpuPercent: number };
  /** The fleet's worker URLs in index order (the simulator's ids already sort that way). */
  workerOrder?: readonly string[];
  /** When the stall began, from the run's origin, if not at the plan's moment. */
  stallAtMs?: number;
}): DemoRun {
  const { plan, summary } = input;
  const judged = judgeGates(summary, input.gates);
  const shape = classifyTrial({
    summary, gates: judged, expectedWorkers: plan.workers, workerSeries: input.perWorker, ...(input.client && { client: input.client }),
  });
  const order = input.workerOrder ?? [];
  const ids = Object.keys(input.perWorker);
  const stalledId = workerOrder(ids, order)[plan.stallWorker];
  const stalledName = stalledId === undefined ? `worker ${plan.stallWorker}` : workerNames(ids, order).get(stalledId)!;
  const at = input.stallAtMs ?? plan.stallAtMs;
  const windows = input.stalled ? [{ fromMs: at, toMs: at + plan.stallForMs, label: `${stalledName} stalled` }] : [];
  return {
    name: input.name, policy: input.policy, stalled: input.stalled, summary, ...metricsOf(summary),
    maxWorkerShare: maxWorkerShare(input.perWorker), gates: judged, verdict: judged.every((g) => g.pass) && !MEASURED_WRONG.has(shape.shape) ? 'pass' : 'fail', shape,
    charts: runCharts({
      idPrefix: input.name, titlePrefix: `${input.name}: `, records: input.records, workerSeries: input.perWorker, workerOrder: order,
      gates: judged, windows, originMs: 0, bucketMs: 500,
    }),
  };
}

function metricsOf(summary: Summary) {
  const v = (m: string, s: 'avg' | 'p50' | 'p99') => metricValue(summary, m, s) ?? Number.NaN;
  return {
    outputTokensPerS: v('output_token_throughput', 'avg'),
    ttftP50Ms: v('time_to_first_token', 'p50'),
    ttftP99Ms: v('time_to_first_token', 'p99'),
    requestLatencyP99Ms: v('request_latency', 'p99'),
  };
}

/**
 * The demo: a live 8-worker fleet, a healthy baseline behind round-robin, then each policy under
 * the same stall of one worker at the same moment. Gates come from the baseline.
 */
export async function runDemo(opts: DemoOptions): Promise<DemoResult> {
  const { plan, seed } = opts;
  const say = opts.onLine ?? (() => undefined);
  const began = performance.now();
  const policies = opts.policies ?? DEMO_POLICIES;
  await mkdir(opts.outDir, { recursive: true });
  say(`starting ${plan.workers} simulated vLLM workers (profile ${plan.profile})`);
  const fleet = await spawnTailgate([
    'fleet', '--workers', String(plan.workers), '--port', '0', '--profile', plan.profile, '--model', MODEL,
    '--tokens-per-chunk', String(plan.tokensPerChunk),
  ]);
  const workerUrls = fleet.announced.map((w) => String(w['url']));
  const runs: DemoRun[] = [];
  let gates: Gate[] = [];
  let router: TailgateChild | null = null;
  try {
    const steps: { name: string; policy: PolicyName; stalled: boolean }[] = [
      { name: 'healthy', policy: 'round-robin', stalled: false },
      ...policies.map((p) => ({ name: p, policy: p, stalled: true })),
    ];
    for (const step of steps) {
      if (opts.signal?.aborted) break;
      await waitIdle(workerUrls, 30_000);
      router = await spawnTailgate(['route', '--port', '0', '--drain-delay', '0s', '--policy', step.policy, '--seed', String(seed), ...workerUrls.flatMap((u) => ['--backend', u])]);
      const routerUrl = String(router.announced.find((a) => typeof a['url'] === 'string')?.['url']);
      say(`${step.name}: ${plan.concurrency} streams through ${step.policy}${step.stalled ? `, worker ${plan.stallWorker} stalls at ${formatMs(plan.stallAtMs)} for ${formatMs(plan.stallForMs)}` : ''}`);
      const originMs = performance.now();
      const collector = new Collector({ targets: [{ id: 'router', url: `${routerUrl}/metrics` }], intervalMs: 250, originMs });
      collector.start();
      let result: BenchResult;
      let series: CollectorSeries;
      let stallAtMs = plan.stallAtMs;
      let stallPosted: Promise<void> = Promise.resolve();
      const onPhaseStart = (phase: string): void => {
        if (phase !== 'profiling') return;
        stallAtMs = Math.max(plan.stallAtMs, performance.now() - originMs);
        if (stallAtMs > plan.stallAtMs) say(`${step.name}: the warm-up ran past ${formatMs(plan.stallAtMs)}; worker ${plan.stallWorker} stalls as profiling starts, at ${formatMs(stallAtMs)}`);
        stallPosted = addStall(workerUrls[0]!, plan, stallAtMs - (performance.now() - originMs));
        stallPosted.catch(() => {}); // awaited (and thrown) once the bench returns
      };
      try {
        result = await runBench(
          {
            url: routerUrl, model: MODEL, endpointType: 'chat', streaming: true, concurrency: plan.concurrency,
            requestCount: plan.requestCount, warmupRequestCount: plan.warmupRequestCount,
            inputTokensMean: plan.inputTokens, outputTokensMean: plan.outputTokens, randomSeed: seed,
            extraInputs: { temperature: 0, ignore_eos: true }, requestTimeoutMs: 120_000, originMs,
            ...(step.stalled && { onPhaseStart }),
            ...(opts.onProgress && { onProgress: (p) => opts.onProgress!(`${step.name}: ${p.phase} ${p.completed}/${p.total ?? '?'} requests, ${p.inflight} in flight`) }),
          },
          opts.signal,
        );
      } finally {
        series = await collector.stop();
      }
      await stallPosted;
      await router.stop();
      router = null;
      if (step.name === 'healthy') gates = gatesFromBaseline(result.summary);
      const run = judgeRun({
        ...step, plan, stallAtMs, summary: result.summary, records: result.records, gates,
        perWorker: workerSeriesOf(series, result.summary.startMs, result.summary.endMs), workerOrder: workerUrls,
        client: { eventLoopDelayP99Ms: result.selfCheck.eventLoopDelayP99Ms, cpuPercent: result.selfCheck.cpuPercent },
      });
      if (result.cancelled) run.name += ' (interrupted)';
      runs.push(run);
      await writeBenchArtifacts(join(opts.outDir, step.name), result, { version: VERSION, extra: { demo_run: step.name, policy: step.policy, stalled: step.stalled } });
      say(`${step.name}: ${Math.round(run.outputTokensPerS)} tok/s, TTFT p99 ${formatMs(run.ttftP99Ms)} -> ${run.verdict}${run.verdict === 'fail' ? ` (${run.shape.shape})` : ''}`);
      if (result.cancelled) break;
    }
  } finally {
    await router?.stop();
    await fleet.stop();
  }
  const result: DemoResult = { plan, seed, gates, runs, wallMs: performance.now() - began, outDir: opts.outDir, cancelled: opts.signal?.aborted ?? false };
  await writeDemoReport(result);
  return result;
}

const pct = (x: number) => `${Math.round(x * 100)}%`;

/** The side-by-side table, as rows of strings (the terminal and the HTML report share it). */
export function demoTable(result: DemoResult): { columns: string[]; rows: string[][] } {
  return {
    columns: ['run', 'output tok/s', 'TTFT p50', 'TTFT p99', 'latency p99', 'max worker share', 'gate', 'shape'],
    rows: result.runs.map((r) => [
      r.name, String(Math.round(r.outputTokensPerS)), formatMs(r.ttftP50Ms), formatMs(r.ttftP99Ms), formatMs(r.requestLatencyP99Ms),
      pct(r.maxWorkerShare), r.verdict.toUpperCase(), r.shape.shape,
    ]),
  };
}

/** Formats rows as an aligned plain-text table. */
export function formatTable(t: { columns: string[]; rows: string[][] }): string {
  const widths = t.columns.map((c, i) => Math.max(c.length, ...t.rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [line(t.columns), line(widths.map((w) => '-'.repeat(w))), ...t.rows.map(line)].join('\n');
}

/** Writes `report.html` and `demo.json` into the result's directory. */
export async function writeDemoReport(result: DemoResult): Promise<void> {
  const table = demoTable(result);
  const gateText = result.gates.map((g) => `${g.metric}.${g.stat} ${g.op} ${g.threshold} (x${g.tolerance})`).join('; ');
  const sections: ReportSection[] = [
    {
      title: 'Side by side',
      text: `Gates from the healthy baseline: ${gateText}.\n\nEvery policy ran the same seeded closed-loop load while worker ${result.plan.stallWorker} stalled at the same moment.`,
      table,
    },
    ...result.runs.map((r) => ({ title: `${r.name}: ${r.verdict} (${r.shape.shape})`, text: r.shape.explanation, charts: r.charts })),
  ];
  await writeFile(
    join(result.outDir, 'report.html'),
    renderHtmlReport({
      title: 'tailgate demo: one stalled worker, four routing policies',
      subtitle: `${result.plan.workers} simulated vLLM workers, ${result.plan.concurrency} streams, ${result.plan.inputTokens}/${result.plan.outputTokens} tokens`,
      meta: { seed: String(result.seed), plan: result.plan.name, version: VERSION, wall: formatMs(result.wallMs) },
      sections,
    }),
  );
  const json = {
    version: VERSION, seed: result.seed, plan: result.plan, gates: result.gates, wallMs: Math.round(result.wallMs), cancelled: result.cancelled,
    runs: result.runs.map((r) => ({
      name: r.name, policy: r.policy, stalled: r.stalled, outputTokensPerS: r.outputTokensPerS, ttftP50Ms: r.ttftP50Ms, ttftP99Ms: r.ttftP99Ms,
      requestLatencyP99Ms: r.requestLatencyP99Ms, maxWorkerShare: r.maxWorkerShare, verdict: r.verdict, shape: r.shape.shape,
      worker: r.shape.worker, explanation: r.shape.explanation, gates: r.gates.map((g) => ({ ...g.gate, value: g.value, limit: g.limit, pass: g.pass })),
    })),
  };
  await writeFile(join(result.outDir, 'demo.json'), `${JSON.stringify(json, null, 2)}\n`);
}

