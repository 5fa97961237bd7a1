import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCompare } from '../src/compare/index.js';
import type { FaultSpec } from '../src/engine/index.js';
import { startFleet } from '../src/fleet/index.js';
import { startRouter } from '../src/router/index.js';
import { runValidate } from '../src/validate/index.js';
import { runCli } from './helpers.js';

/**
 * Validates a 4-worker loopback fleet (small profile, GPU telemetry on) behind a round-robin
 * router: 2 trials of 192 requests at 32 streams, 16 in / 16 out (48 a worker: a worker failing 10%
 * answers none of them with an error 0.6% of the time); writes the output folder `out`.
 */
async function validateFleet(out: string, plant: { throttles?: { worker: number; atMs: number; forMs: number; factor: number }[]; faults?: FaultSpec[] } = {}): Promise<string> {
  const fleet = await startFleet({ workers: 4, port: 0, profile: 'small', model: 'm', gpuMetricsPort: 0, throttles: plant.throttles ?? [], faults: plant.faults ?? [] });
  const router = await startRouter({ port: 0, backends: fleet.workers.map((w) => w.url), policy: 'round-robin' });
  try {
    await runValidate({
      url: router.url, model: 'm', gpus: 4, concurrencyPerGpu: 8, syntheticInputTokensMean: 16, outputTokensMean: 16,
      trials: 2, requestCount: 192, warmupRequestCount: 8, out, gpuMetrics: [fleet.gpuMetricsUrl!], maxTtftP99: 5000,
      readyTimeout: 5000, trialTimeout: 60_000,
    });
  } finally {
    await router.close();
    await fleet.close();
  }
  return out;
}

test('live fleets on loopback: a throttled GPU and a worker failing a tenth of its requests are each ranked first, naming the worker', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'tailgate-compare-live-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const healthy = await validateFleet(join(dir, 'healthy'));

  const throttled = await validateFleet(join(dir, 'throttled'), { throttles: [{ worker: 2, atMs: 0, forMs: 600_000, factor: 3 }] });
  const r = await runCompare({ a: [healthy], b: [throttled], outDir: join(dir, 'cmp-throttle') });
  assert.equal(r.finding.worker, 2, r.finding.paragraph);
  assert.match(r.finding.paragraph, /^B's worker 2 \(127\.0\.0\.1:\d+\) .*slower steps .*at lowered GPU clocks .*GPU side: throttled/);
  const json = JSON.parse(await readFile(join(dir, 'cmp-throttle', 'compare.json'), 'utf8')) as { worker: number; figures: { key: string; beyondNoise: boolean }[] };
  assert.equal(json.worker, 2);
  assert.ok(json.figures.find((f) => f.key === 'worker 2 GPU SM clock')?.beyondNoise, 'the throttled GPU clock is beyond noise');

  const failing = await validateFleet(join(dir, 'failing'), { faults: [{ worker: 1, kind: 'error', atMs: 0, forMs: 600_000, rate: 0.1 }] });
  const cli = await runCli(['compare', healthy, failing, '--out', join(dir, 'cmp-errors')]);
  assert.equal(cli.code, 0, cli.stderr);
  assert.match(cli.stdout, /^tailgate compare: DIFFERENT/);
  // The client sees the errors, or the router retries them on another worker and counts them: either way worker 1 is named first.
  assert.match(cli.stdout, /\nB's worker 1 \(127\.0\.0\.1:\d+\) (fails \d+\.\d% of its requests \(A 0\.0%\)|has [\d.]+ requests failed by the router \(A 0 requests\)).*: the worker answers errors/);
  assert.match(await readFile(join(dir, 'cmp-errors', 'compare.html'), 'utf8'), /<svg class="chart"/);
});
