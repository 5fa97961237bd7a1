import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runKneeSweep } from './validate-sweep-run.js';

test('a sweep finds the knee the profile implies (the small profile saturates at max_num_seqs per worker)', async () => {
  const { cli, seqs, points, knee, recommended, html } = await runKneeSweep(60_000);
  assert.match(cli.stderr, /readiness: 1 of 1 workers ready/);
  assert.deepEqual(points.map((p) => p.concurrencyPerGpu), [seqs / 2, seqs, seqs * 2]);
  assert.equal(knee, seqs, JSON.stringify(points));
  assert.equal(recommended, seqs / 2);
  // How much doubling pays below the knee and costs above it is a wall-clock figure: perf/validate-sweep.ts prints it.
  assert.match(cli.stdout, new RegExp(`knee: ${seqs} per GPU; recommended: ${seqs / 2} per GPU`));
  assert.match(html, /data-chart-id="sweep-throughput"/);
});
