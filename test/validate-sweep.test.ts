import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getProfile } from '../src/engine/index.js';
import { startFleet } from '../src/fleet/index.js';
import { runCli } from './helpers.js';

test('a sweep finds the knee the profile implies (the small profile saturates at max_num_seqs per worker)', async (t) => {
  const fleet = await startFleet({ workers: 1, port: 0, profile: 'small', model: 'm', tokensPerChunk: 2 });
  t.after(() => fleet.close());
  const out = await mkdtemp(join(tmpdir(), 'tailgate-sweep-'));
  t.after(() => rm(out, { recursive: true, force: true }));
  const url = fleet.workers[0]!.url;
  const seqs = getProfile('small').maxNumSeqs;
  // One worker, addressed directly: readiness comes from --worker-url /health.
  const r = await runCli(
    ['validate', '--url', url, '--worker-url', url, '--model', 'm', '--gpus', '1', '--sweep', `${seqs / 2},${seqs},${seqs * 2}`,
      '--max-ttft-p99', '2000', '--synthetic-input-tokens-mean', '16', '--output-tokens-mean', '48', '--request-count', '192',
      '--warmup-request-count', '0', '--request-timeout-seconds', '30', '--ready-timeout', '5s', '--out', out],
    { timeoutMs: 60_000 },
  );
  assert.ok(r.code === 0 || r.code === 1, r.stderr);
  assert.match(r.stderr, /readiness: 1 of 1 workers ready/);
  const v = JSON.parse(await readFile(join(out, 'verdict.json'), 'utf8')) as {
    sweep: { points: { concurrencyPerGpu: number; throughputPerGpu: number; ttftP99Ms: number }[]; kneeConcurrencyPerGpu: number | null; recommendedConcurrencyPerGpu: number | null };
  };
  const pts = v.sweep.points;
  assert.deepEqual(pts.map((p) => p.concurrencyPerGpu), [seqs / 2, seqs, seqs * 2]);
  assert.equal(v.sweep.kneeConcurrencyPerGpu, seqs, JSON.stringify(pts));
  assert.equal(v.sweep.recommendedConcurrencyPerGpu, seqs / 2);
  // How much doubling pays below the knee and costs above it is a wall-clock figure: perf/validate-sweep.ts prints it.
  assert.match(r.stdout, new RegExp(`knee: ${seqs} per GPU; recommended: ${seqs / 2} per GPU`));
  const html = await readFile(join(out, 'report.html'), 'utf8');
  assert.match(html, /data-chart-id="sweep-throughput"/);
});
