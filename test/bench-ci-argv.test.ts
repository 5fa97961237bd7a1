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
