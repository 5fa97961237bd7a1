// The seed validator's AIPerf command line, with `tailgate bench` for `aiperf profile` and the
// additions CI lines carry (telemetry, server metrics, repeated runs, export prefix, verbosity,
// cancellation, tokenizer revision), exits 0 against the fleet and writes AIPerf's files.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFleet } from '../src/fleet/index.js';
import { runCli } from './helpers.js';

const MODEL = 'Qwen/Qwen3-8B';

test('the seed argv plus the CI additions exits 0 against the fleet and writes AIPerf\'s files', async (t) => {
  const fleet = await startFleet({ workers: 2, port: 0, profile: 'small', model: MODEL });
  t.after(() => fleet.close());
  const dir = mkdtempSync(join(tmpdir(), 'tailgate-ci-argv-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  // The seed's argv (see src/cli/bench.test.ts), load scaled to two cores.
  const seed = [
    '--model', MODEL, '--url', fleet.workers[0]!.url, '--url', fleet.workers[1]!.url, '--endpoint-type', 'chat', '--streaming',
    '--concurrency', '8', '--request-count', '24', '--warmup-request-count', '4',
    '--synthetic-input-tokens-mean', '128', '--synthetic-input-tokens-stddev', '0',
    '--output-tokens-mean', '16', '--output-tokens-stddev', '0', '--num-dataset-entries', '100',
    '--random-seed', '100', '--extra-inputs', 'temperature:0', '--artifact-dir', dir,
  ];
  const ci = [
    '--tokenizer', 'builtin', '--tokenizer-revision', 'main', '--gpu-telemetry', 'http://127.0.0.1:9/metrics', '--no-server-metrics',
    '--num-profile-runs', '3', '--profile-export-prefix', 'ci', '-v', '--log-level', 'INFO', '--request-cancellation-rate', '10',
    '--request-cancellation-delay', '0', '--ui', 'none',
  ];
  const r = await runCli(['bench', ...seed, ...ci], { timeoutMs: 180_000 });
  assert.equal(r.code, 0, r.stderr);
  assert.doesNotMatch(r.stderr, /unknown option|error:/);
  for (const k of [1, 2, 3]) {
    const run = join(dir, 'profile_runs', `run_000${k}`);
    for (const f of ['ci.json', 'ci.csv', 'ci.jsonl', 'inputs.json']) assert.ok(existsSync(join(run, f)), `${run}/${f}`);
    const doc = JSON.parse(readFileSync(join(run, 'ci.json'), 'utf8')) as Record<string, { avg: number }> & { schema_version: string };
    assert.equal(doc.schema_version, '1.5');
    assert.ok(doc['output_token_throughput']!.avg > 0, 'the figure the seed gate reads');
  }
  assert.ok(existsSync(join(dir, 'aggregate', 'profile_export_aiperf_aggregate.json')));
});

test('--server-metrics scrapes the fleet\'s /metrics during the run into server_metrics_export.json and .csv', async (t) => {
  const fleet = await startFleet({ workers: 1, port: 0, profile: 'small', model: MODEL });
  t.after(() => fleet.close());
  const dir = mkdtempSync(join(tmpdir(), 'tailgate-server-metrics-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const url = fleet.workers[0]!.url;
  const r = await runCli(['bench', '-m', MODEL, '--tokenizer', 'builtin', '-u', url, '--streaming', '--concurrency', '2', '--request-count', '6',
    '--isl', '16', '--osl', '8', '--server-metrics', '--artifact-dir', dir], { timeoutMs: 120_000 });
  assert.equal(r.code, 0, r.stderr);
  const doc = JSON.parse(readFileSync(join(dir, 'server_metrics_export.json'), 'utf8')) as { endpoints: Record<string, { scrapes: number; metrics: Record<string, { avg: number; max: number }> }> };
  const e = doc.endpoints[`${url}/metrics`]!;
  assert.ok(e.scrapes >= 2, 'read at the start and once more at the end');
  const finished = Object.entries(e.metrics).filter(([k]) => k.startsWith('vllm:request_success_total')).reduce((n, [, b]) => n + b.max, 0);
  assert.ok(finished >= 6, `the fleet's finished-request counter as scraped: ${finished}`);
  assert.match(readFileSync(join(dir, 'server_metrics_export.csv'), 'utf8'), /^Endpoint,Metric,avg,min,max/);
});
