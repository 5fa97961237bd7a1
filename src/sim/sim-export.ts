import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describeGate } from '../gate/index.js';
import { writeAiperfExports } from '../report/index.js';
import type { SimResult } from './run-scenario.js';
import { runScenario, simWorkerId } from './run-scenario.js';
import type { Scenario } from './scenario.js';

/** Options of {@link writeSimRun}. */
export interface SimExportOptions {
  /** Wall-clock time the virtual clock's 0 is written as (exports carry epochs). @default 2026-01-01T00:00:00Z */
  startEpochMs?: number;
  /** tailgate's version for the export header. */
  version?: string;
}

/** Requests open at each of `times` (ms), from the records' start and end. */
function openAt(results: SimResult, times: readonly number[]): number[] {
  const starts = results.records.map((r) => r.startMs).sort((a, b) => a - b);
  const ends = results.records.map((r) => r.endMs).sort((a, b) => a - b);
  let i = 0;
  let j = 0;
  return times.map((t) => {
    while (i < starts.length && starts[i]! <= t) i++;
    while (j < ends.length && ends[j]! <= t) j++;
    return i - j;
  });
}

/** The simulated trial's scrape, in the layout validate's collector writes: each worker's gauges, the router's in-flight and queue. */
function scrapeOf(r: SimResult, workers: number): Record<string, unknown> {
  const targets: Record<string, { tMs: number[]; values: Record<string, number[]>; errors: number; lastError: null }> = {};
  const router: Record<string, number[]> = {};
  let tMs: number[] = [];
  for (let w = 0; w < workers; w++) {
    const id = simWorkerId(w);
    const s = r.perWorkerInflight[id];
    if (!s) continue;
    tMs = s.tMs;
    targets[id] = { tMs: s.tMs, values: { 'vllm:num_requests_running': s.running ?? [], 'vllm:num_requests_waiting': s.waiting ?? [] }, errors: 0, lastError: null };
    router[`inflight:${id}`] = s.inflight;
  }
  const open = openAt(r, tMs);
  // What the clients have open and no worker holds waits in the router's queue.
  router['router:queue_length'] = open.map((n, i) => Math.max(0, n - Object.keys(router).filter((k) => k.startsWith('inflight:')).reduce((sum, k) => sum + (router[k]![i] ?? 0), 0)));
  targets['router'] = { tMs, values: router, errors: 0, lastError: null };
  return { targets };
}

function inputConfig(s: Scenario, seed: number): Record<string, unknown> {
  return {
    endpoint: { model_names: [s.model], type: 'chat', streaming: true, urls: ['sim://'] },
    input: {
      random_seed: s.datasetSeed,
      dataset_sampling_strategy: s.datasetSampling,
      prompt: { input_tokens: s.inputTokens, output_tokens: s.outputTokens },
      conversation: { num_dataset_entries: s.datasetEntries },
    },
    loadgen: {
      concurrency: s.load.kind === 'closed' ? s.load.concurrency : null,
      request_rate: s.load.kind === 'rate' ? s.load.ratePerS : null,
      request_count: s.requestCount,
      warmup_request_count: s.warmupRequestCount,
    },
    tailgate: { simulated: true, fleet_seed: seed },
  };
}

/**
 * Writes simulated trials as `tailgate validate` writes live ones: `verdict.json` (inputs,
 * workers, each trial's verdict, shape, worker and metrics) and per trial `trial-N/` with the
 * AIPerf exports and the scrape series (worker gauges, router in-flight and queue), so
 * `tailgate compare` reads a simulated run as it reads a live one. Trials need `recordMode: 'records'`.
 *
 * @example await writeSimRun('out/sim', scenario, [runScenario(scenario, 'round-robin', 1)]);
 */
export async function writeSimRun(dir: string, scenario: Scenario, results: readonly SimResult[], opts: SimExportOptions = {}): Promise<void> {
  const epoch = opts.startEpochMs ?? Date.UTC(2026, 0, 1);
  const workers = Array.from({ length: scenario.workers }, (_, i) => simWorkerId(i));
  await mkdir(dir, { recursive: true });
  const trials = [];
  for (const [i, r] of results.entries()) {
    const label = `trial-${i + 1}`;
    const sub = join(dir, label);
    await mkdir(sub, { recursive: true });
    await writeAiperfExports(sub, {
      summary: r.summary,
      records: r.records,
      inputConfig: inputConfig(scenario, r.seed),
      exportLevel: 'records',
      startTime: new Date(epoch + r.summary.startMs),
      endTime: new Date(epoch + r.summary.endMs),
      originEpochMs: epoch + r.summary.startMs,
      ...(opts.version === undefined ? {} : { version: opts.version }),
      runInfo: { random_seed: scenario.datasetSeed },
      extra: { simulated: true, policy: r.policy, fleet_seed: r.seed, faults: r.faults, scrape: scrapeOf(r, scenario.workers) },
    });
    trials.push({
      index: i + 1, label, concurrency: scenario.load.kind === 'closed' ? scenario.load.concurrency : null,
      verdict: r.pass ? 'pass' : 'fail', shape: r.shape.shape, worker: r.shape.worker, explanation: r.shape.explanation, evidence: r.shape.evidence, locus: null,
      metrics: r.summary.metrics, perWorker: r.summary.perWorker, artifacts: `${label}/`, seed: r.seed, policy: r.policy,
    });
  }
  const doc = {
    schemaVersion: 1,
    tool: 'tailgate simulate',
    scenario: scenario.name,
    description: scenario.description,
    seed: results[0]?.seed ?? null,
    inputs: { model: scenario.model, gpus: scenario.workers, gates: scenario.gates.map((g) => ({ metric: g.metric, stat: g.stat, op: g.op, threshold: g.threshold, tolerance: g.tolerance, text: describeGate(g) })) },
    verdict: results.every((r) => r.pass) ? 'pass' : 'fail',
    readiness: { workers: workers.map((id) => ({ id, url: `sim://${id}` })) },
    trials,
  };
  await writeFile(join(dir, 'verdict.json'), `${JSON.stringify(doc, null, 2)}\n`);
}

/** Most trials `--export` writes per scenario and policy (each keeps every record). */
export const EXPORT_TRIALS_MAX = 5;

/**
 * `tailgate simulate --export DIR`: the first trials (seeds `seed`, `seed + 1`, ... as the Monte
 * Carlo's) of each scenario and policy run again keeping every record, written by
 * {@link writeSimRun} under `DIR/<scenario>-<policy>/`. Returns the folders written.
 *
 * @example await exportSimulated('out', [PRESETS['aicr-h100']!], ['round-robin'], 3, 1); // ['out/aicr-h100-round-robin']
 */
export async function exportSimulated(dir: string, scenarios: readonly Scenario[], policies: readonly SimResult['policy'][], trials: number, seed: number, opts: SimExportOptions = {}): Promise<string[]> {
  const out: string[] = [];
  for (const s of scenarios) {
    for (const p of policies) {
      const results = Array.from({ length: Math.min(trials, EXPORT_TRIALS_MAX) }, (_, t) => runScenario(s, p, seed + t));
      const sub = join(dir, `${s.name}-${p}`);
      await writeSimRun(sub, s, results, opts);
      out.push(sub);
    }
  }
  return out;
}
