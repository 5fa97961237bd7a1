import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { startFleet } from '../src/fleet/index.js';
import { startRouter } from '../src/router/index.js';
import { runCli, type CliResult } from './helpers.js';

const MODEL = 'm';

/** Runs `tailgate validate` with extra node flags (here: a preload that starves its event loop). */
function runValidateCli(args: string[], nodeArgs: string[]): Promise<CliResult> {
  return runCli(['validate', ...args], { timeoutMs: 60_000, nodeArgs });
}

test('a starved load generator gives locus client, with its self-check as evidence', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'tailgate-telemetry-client-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const fleet = await startFleet({ workers: 4, port: 0, profile: 'small', model: MODEL, gpuMetricsPort: 0 });
  t.after(() => fleet.close());
  const router = await startRouter({ port: 0, backends: fleet.workers.map((w) => w.url), policy: 'round-robin' });
  t.after(() => router.close());
  // Something else on the client host takes the generator's CPU: its event loop is blocked 150 ms of every 200.
  const starve = join(dir, 'starve.mjs');
  await writeFile(starve, 'setInterval(() => { const end = Date.now() + 150; while (Date.now() < end); }, 50).unref();\n');
  const out = join(dir, 'out');
  const r = await runValidateCli(
    ['--url', router.url, '--gpus', '4', '--model', MODEL, '--concurrency-per-gpu', '4', '--synthetic-input-tokens-mean', '16', '--output-tokens-mean', '8',
      '--request-count', '48', '--warmup-request-count', '0', '--trials', '1', '--max-ttft-p99', '100', '--ready-timeout', '5s', '--trial-timeout', '60s',
      '--gpu-metrics', fleet.gpuMetricsUrl!, '--out', out],
    ['--import', pathToFileURL(starve).href],
  );
  assert.equal(r.code, 1, r.stderr + r.stdout);
  const trial = (JSON.parse(await readFile(join(out, 'verdict.json'), 'utf8')) as { trials: { shape: string; evidence: Record<string, unknown>; locus: { locus: string; worker: string | null; evidence: Record<string, unknown> } | null }[] }).trials[0]!;
  assert.equal(trial.locus?.locus, 'client', JSON.stringify({ shape: trial.shape, locus: trial.locus }));
  assert.equal(trial.locus.worker, null);
  assert.ok(Number(trial.locus.evidence['eventLoopDelayP99Ms']) > 100, JSON.stringify(trial.locus.evidence));
  assert.equal(trial.shape, 'client-bound');
  assert.match(r.stdout, /locus client/);
});
