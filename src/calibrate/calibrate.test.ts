import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expandRuns, levelOf } from './read-run.js';
import { nelderMead, nonNegativeLeastSquares } from './least-squares.js';

test('non-negative least squares: exact where the answer is non-negative, a coefficient held at zero where it would go below', () => {
  // y = 2 + 3x exactly.
  assert.deepEqual(nonNegativeLeastSquares([[1, 0], [1, 1], [1, 2]], [2, 5, 8])!.map((v) => Number(v.toFixed(9))), [2, 3]);
  // y falls with x: the slope is held at 0 and the intercept is the mean.
  const x = nonNegativeLeastSquares([[1, 0], [1, 1], [1, 2]], [3, 2, 1])!;
  assert.equal(x[1], 0);
  assert.ok(Math.abs(x[0]! - 2) < 1e-9);
});

test('Nelder-Mead finds the least point of a smooth bowl from a start away from it', () => {
  const [a, b] = nelderMead(([x, y]) => (x! - 1) ** 2 + 10 * (y! + 2) ** 2, [4, 4], [1, 1], 300);
  assert.ok(Math.abs(a! - 1) < 1e-3 && Math.abs(b! + 2) < 1e-3, `${a}, ${b}`);
});

test('a level is read from what the file has: rate runs, p50-only files, lengths from the config', () => {
  const l = levelOf({
    input_config: { loadgen: { request_rate: 2.5, concurrency: null }, input: { prompt: { input_tokens: { mean: 300 }, output_tokens: { mean: 40 } } } },
    time_to_first_token: { p50: 80, p95: 120 },
    inter_token_latency: { p50: 12, p95: 20 },
    output_token_throughput: { avg: 100 },
  }, 'pub.json');
  assert.deepEqual(l.load, { kind: 'rate', ratePerS: 2.5 });
  assert.equal(l.label, 'rate=2.5/s');
  assert.equal(l.inputTokens, 300);
  assert.equal(l.measured.ttftP99Ms, null);
  assert.ok(Number.isNaN(l.measured.itlMeanMs), 'no mean: the fit reads the p50');
  assert.equal(l.measured.requestsPerS, 100 / 40);
  assert.equal(l.measured.latencyP50Ms, 80 + 39 * 12);
});

test('a validate output directory stands for each of its runs, in numeric order', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tailgate-expand-'));
  for (const sub of ['sweep-128', 'sweep-16', 'notes']) mkdirSync(join(dir, sub));
  for (const sub of ['sweep-128', 'sweep-16']) writeFileSync(join(dir, sub, 'profile_export_aiperf.json'), '{}');
  assert.deepEqual(expandRuns([dir, join(dir, 'x.json')]), [join(dir, 'sweep-16'), join(dir, 'sweep-128'), join(dir, 'x.json')]);
  assert.throws(() => expandRuns([join(dir, 'notes')]), /notes: no profile_export_aiperf\.json in it or in its subdirectories/);
});
