// `--num-profile-runs`: per-run folders as AIPerf lays them out and the aggregate with t-based
// confidence intervals, checked against an independent computation (printed t table, df = 4).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFleet } from '../src/fleet/index.js';
import { converged, type ConfidenceBlock } from '../src/bench/index.js';
import type { Summary } from '../src/stats/index.js';
import { runCli } from './helpers.js';

const MODEL = 'Qwen/Qwen3-8B';
/** Two-sided 95% Student t critical value for 4 degrees of freedom, from the printed table. */
const T_975_DF4 = 2.776445;

test('--num-profile-runs 5 writes profile_runs/run_0001..5 and an aggregate whose intervals match an independent computation', async (t) => {
  const fleet = await startFleet({ workers: 1, port: 0, profile: 'small', model: MODEL });
  t.after(() => fleet.close());
  const dir = mkdtempSync(join(tmpdir(), 'tailgate-multirun-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const r = await runCli([
    'bench', '-m', MODEL, '--tokenizer', 'builtin', '-u', fleet.workers[0]!.url, '--streaming', '--concurrency', '2', '--request-count', '6',
    '--warmup-request-count', '2', '--isl', '16', '--osl', '4', '--num-profile-runs', '5', '--artifact-dir', dir,
  ], { timeoutMs: 120_000, env: { CI: '1' } });
  assert.equal(r.code, 0, r.stderr);

  const runs = [1, 2, 3, 4, 5].map((k) => {
    const path = join(dir, 'profile_runs', `run_000${k}`, 'profile_export_aiperf.json');
    assert.ok(existsSync(path), path);
    return JSON.parse(readFileSync(path, 'utf8')) as Record<string, { avg: number; p99?: number }> & { run_info: { trial: number; run_label: string; random_seed: number }; warmup_metrics?: unknown };
  });
  runs.forEach((run, i) => {
    assert.equal(run.run_info.trial, i);
    assert.equal(run.run_info.run_label, `run_000${i + 1}`);
    assert.equal(run.run_info.random_seed, 42, 'one seed for every run, 42 when none is given (AIPerf)');
    assert.equal(run.warmup_metrics !== undefined, i === 0, 'warm-up only before the first run');
  });

  const agg = JSON.parse(readFileSync(join(dir, 'aggregate', 'profile_export_aiperf_aggregate.json'), 'utf8')) as {
    schema_version: string; generator: { name: string; version: string }; num_profile_runs: number; num_successful_runs: number; confidence_level: number; metrics: Record<string, ConfidenceBlock>;
  };
  assert.equal(agg.schema_version, '1.0');
  assert.equal(agg.generator.name, 'tailgate', 'the aggregate says who made it');
  assert.equal(agg.num_profile_runs, 5);
  assert.equal(agg.num_successful_runs, 5);
  assert.equal(agg.confidence_level, 0.95);
  for (const [key, pick] of [['request_throughput_avg', (x: (typeof runs)[number]) => x['request_throughput']!.avg], ['time_to_first_token_p99', (x: (typeof runs)[number]) => x['time_to_first_token']!.p99!]] as const) {
    const v = runs.map(pick);
    const mean = v.reduce((a, b) => a + b, 0) / 5;
    const std = Math.sqrt(v.reduce((a, b) => a + (b - mean) ** 2, 0) / 4);
    const se = std / Math.sqrt(5);
    const b = agg.metrics[key]!;
    const close = (a: number, e: number, what: string): void => assert.ok(Math.abs(a - e) <= 1e-6 * Math.max(1, Math.abs(e)), `${key} ${what}: ${a} vs ${e}`);
    close(b.mean, mean, 'mean');
    close(b.std, std, 'std');
    close(b.se, se, 'se');
    close(b.cv, std / mean, 'cv');
    close(b.t_critical, T_975_DF4, 't');
    close(b.ci_low, mean - T_975_DF4 * se, 'ci_low');
    close(b.ci_high, mean + T_975_DF4 * se, 'ci_high');
  }
  assert.match(readFileSync(join(dir, 'aggregate', 'profile_export_aiperf_aggregate.csv'), 'utf8'), /^Metric,mean,std,cv,se,ci_low,ci_high,t_critical,unit\n/);
});

test('convergence: judged from the third run, by interval width over the mean or by CV', () => {
  const s = (v: number): Summary => ({ metrics: { request_latency: { unit: 'ms', avg: v } } }) as unknown as Summary;
  const c = { metric: 'request_latency', stat: 'avg', mode: 'ci_width' as const, threshold: 0.1 };
  assert.equal(converged([s(100), s(100)], c, 0.95).converged, false, 'two runs are never enough');
  assert.equal(converged([s(100), s(101), s(100)], c, 0.95).converged, true);
  assert.equal(converged([s(100), s(150), s(60)], c, 0.95).converged, false);
  assert.equal(converged([s(100), s(101), s(99)], { ...c, mode: 'cv', threshold: 0.05 }, 0.95).converged, true);
});

test('--concurrency 1,2 sweeps with AIPerf\'s layout: one folder per value, and sweep_aggregate/ across them', async (t) => {
  const fleet = await startFleet({ workers: 1, port: 0, profile: 'small', model: MODEL });
  t.after(() => fleet.close());
  const dir = mkdtempSync(join(tmpdir(), 'tailgate-sweep-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const r = await runCli(['bench', '-m', MODEL, '--tokenizer', 'builtin', '-u', fleet.workers[0]!.url, '--streaming', '--concurrency', '1,2',
    '--request-count', '4', '--isl', '16', '--osl', '4', '--artifact-dir', dir], { timeoutMs: 120_000 });
  assert.equal(r.code, 0, r.stderr);
  const throughput: number[] = [];
  for (const [k, c] of [[0, 1], [1, 2]] as const) {
    const path = join(dir, `concurrency_${c}`, 'profile_export_aiperf.json');
    const doc = JSON.parse(readFileSync(path, 'utf8')) as { input_config: { loadgen: { concurrency: number } }; run_info: { variation_label: string; variation_index: number; variation_values: Record<string, number>; random_seed: number }; request_count: { avg: number }; request_throughput: { avg: number } };
    assert.equal(doc.run_info.random_seed, k, 'each sweep value its own seed, base + index, as AIPerf');
    assert.equal(doc.input_config.loadgen.concurrency, c);
    assert.equal(doc.run_info.variation_index, k);
    assert.equal(doc.run_info.variation_label, `concurrency_${c}`);
    assert.deepEqual(doc.run_info.variation_values, { 'phases.profiling.concurrency': c });
    assert.equal(doc.request_count.avg, 4);
    throughput.push(doc.request_throughput.avg);
  }
  type Sweep = { aggregation_type: string; num_profile_runs: number; metadata: { sweep_parameters: { name: string; values: number[] }[] }; per_combination_metrics: { parameters: Record<string, number>; metrics: Record<string, Record<string, number | string>> }[]; best_configurations: Record<string, { parameters: Record<string, number>; metric: number }>; pareto_optimal: Record<string, number>[] };
  const sweep = JSON.parse(readFileSync(join(dir, 'sweep_aggregate', 'profile_export_aiperf_sweep.json'), 'utf8')) as Sweep;
  assert.equal(sweep.aggregation_type, 'sweep');
  assert.equal(sweep.num_profile_runs, 2);
  assert.deepEqual(sweep.metadata.sweep_parameters, [{ name: 'concurrency', values: [1, 2] }]);
  assert.deepEqual(sweep.per_combination_metrics.map((c) => c.parameters), [{ concurrency: 1 }, { concurrency: 2 }]);
  sweep.per_combination_metrics.forEach((c, k) => assert.deepEqual(c.metrics['request_throughput_avg'], { mean: throughput[k], unit: 'requests/sec' }, 'one trial: the mean only'));
  const best = throughput[0]! >= throughput[1]! ? 1 : 2;
  assert.deepEqual(sweep.best_configurations['best_throughput']!.parameters, { concurrency: best });
  assert.ok(sweep.pareto_optimal.some((p) => p['concurrency'] === best), 'the best throughput is never dominated');
  const csv = readFileSync(join(dir, 'sweep_aggregate', 'profile_export_aiperf_sweep.csv'), 'utf8');
  assert.match(csv, /^concurrency,request_latency_avg_mean,/);
  assert.match(csv, /\nBest Configurations\nConfiguration,concurrency,Metric,Unit\nBest Throughput,/);
  assert.match(csv, /\nMetadata\nField,Value\nAggregation Type,sweep\n/);
});

test('a sweep with --num-profile-runs 2 runs AIPerf\'s repeated order: profile_runs/trial_NNNN/<value>, aggregate/<value>, aggregate/sweep_aggregate', async (t) => {
  const fleet = await startFleet({ workers: 1, port: 0, profile: 'small', model: MODEL });
  t.after(() => fleet.close());
  const dir = mkdtempSync(join(tmpdir(), 'tailgate-sweep-trials-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const r = await runCli(['bench', '-m', MODEL, '--tokenizer', 'builtin', '-u', fleet.workers[0]!.url, '--streaming', '--concurrency', '1,2', '--num-profile-runs', '2',
    '--request-count', '4', '--isl', '16', '--osl', '4', '--artifact-dir', dir], { timeoutMs: 180_000 });
  assert.equal(r.code, 0, r.stderr);
  for (const c of [1, 2]) {
    const runs = [1, 2].map((i) => JSON.parse(readFileSync(join(dir, 'profile_runs', `trial_000${i}`, `concurrency_${c}`, 'profile_export_aiperf.json'), 'utf8')) as { request_throughput: { avg: number }; run_info: { trial: number } });
    assert.deepEqual(runs.map((d) => d.run_info.trial), [0, 1]);
    const agg = JSON.parse(readFileSync(join(dir, 'aggregate', `concurrency_${c}`, 'profile_export_aiperf_aggregate.json'), 'utf8')) as { metrics: Record<string, { mean: number }> };
    const mean = (runs[0]!.request_throughput.avg + runs[1]!.request_throughput.avg) / 2;
    assert.ok(Math.abs(agg.metrics['request_throughput_avg']!.mean - mean) < 1e-9);
    const sweep = JSON.parse(readFileSync(join(dir, 'aggregate', 'sweep_aggregate', 'profile_export_aiperf_sweep.json'), 'utf8')) as { num_profile_runs: number; per_combination_metrics: { parameters: Record<string, number>; metrics: Record<string, Record<string, number>> }[] };
    assert.equal(sweep.num_profile_runs, 4);
    const m = sweep.per_combination_metrics.find((p) => p.parameters['concurrency'] === c)!.metrics['request_throughput_avg']!;
    assert.ok(Math.abs(m['mean']! - mean) < 1e-9);
    assert.equal(m['min'], Math.min(runs[0]!.request_throughput.avg, runs[1]!.request_throughput.avg));
    for (const k of ['std', 'max', 'cv', 'se', 'ci_low', 'ci_high', 't_critical']) assert.equal(typeof m[k], 'number', k);
  }
});
