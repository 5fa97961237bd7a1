// AIPerf's time-weighted load metrics (analysis/sweepline*.py): effective_concurrency (requests in
// flight), effective_prefill_concurrency (requests before their first token) and tokens_in_flight
// (prompt tokens from the start, output tokens as they stream), each a step function weighted by
// how long each value held over the run window. Checked by hand on two requests, then on a fleet
// run's exports against the records the same run wrote.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFleet } from '../src/fleet/index.js';
import { syntheticRecord, timeWeightedMetrics } from '../src/stats/index.js';
import type { RequestRecord } from '../src/core/index.js';
import { runCli } from './helpers.js';

function rec(startMs: number, chunkMs: number[], endMs: number, isl: number, osl: number): RequestRecord {
  return { ...syntheticRecord({ id: `r${startMs}`, startMs, ttftMs: chunkMs[0]! - startMs, itlMs: 0, tokens: osl, inputTokens: isl }), chunkMs, firstTokenMs: chunkMs[0]!, endMs };
}

test('by hand: two overlapping streamed requests', () => {
  // A: 0 -> 110, first token at 10, chunks at 60 and 110, ISL 100, OSL 11. B: 50 -> 130, first token 80, chunk 130, ISL 50, OSL 3.
  const records = [rec(0, [10, 60, 110], 110, 100, 11), rec(50, [80, 130], 130, 50, 3)];
  const m = timeWeightedMetrics(records, (r) => ({ isl: r.inputTokens.client, osl: r.outputTokens.client }));
  const c = m['effective_concurrency']!;
  // 1 on [0, 50), 2 on [50, 110), 1 on [110, 130).
  assert.ok(Math.abs(c.avg - 190 / 130) < 1e-9);
  assert.deepEqual([c.min, c.max, c.p50, c.p90, c.unit], [1, 2, 1, 2, 'requests'], '1 holds 70 of 130 ms: the median');
  assert.ok(Math.abs(c.std - Math.sqrt((70 * (1 - 190 / 130) ** 2 + 60 * (2 - 190 / 130) ** 2) / 130)) < 1e-9);
  // In prefill: A on [0, 10), B on [50, 80).
  assert.ok(Math.abs(m['effective_prefill_concurrency']!.avg - 40 / 130) < 1e-9);
  // Tokens: 100 on [0,10), 101 to 50, 151 to 60, 156 to 80, 157 to 110 (A's last chunk lands just before its end), 51 to 130.
  const tif = m['tokens_in_flight']!;
  assert.ok(Math.abs(tif.avg - (100 * 10 + 101 * 40 + 151 * 10 + 156 * 20 + 157 * 30 + 51 * 20) / 130) < 1e-3, String(tif.avg));
  assert.equal(tif.unit, 'tokens');
  assert.ok(Math.abs(tif.max - 162) < 1e-9, 'A holds 100 + 11 and B 51 just before A ends');
});

test('by hand: a request that did not stream holds its output from the first token (AIPerf\'s request-level curve)', () => {
  // AIPerf's own example: start 0, first token 10, end 110, ISL 100, OSL 11 -> 100 for 10 ms, 111 for 100 ms.
  const m = timeWeightedMetrics([rec(0, [10], 110, 100, 11)], (r) => ({ isl: r.inputTokens.client, osl: r.outputTokens.client }));
  assert.ok(Math.abs(m['tokens_in_flight']!.avg - (100 * 10 + 111 * 100) / 110) < 1e-9);
  assert.equal(m['effective_concurrency']!.avg, 1);
});

test('tailgate bench against the fleet writes the three metrics, equal to what its own records give', async (t) => {
  const fleet = await startFleet({ workers: 1, port: 0, profile: 'small', model: 'm' });
  t.after(() => fleet.close());
  const dir = await mkdtemp(join(tmpdir(), 'tailgate-tw-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const res = await runCli(['bench', '-m', 'm', '--url', fleet.workers[0]!.url, '--tokenizer', 'builtin', '--streaming', '--concurrency', '4', '--request-count', '24', '--isl', '64', '--osl', '16', '--artifact-dir', dir]);
  assert.equal(res.code, 0, res.stderr);
  const doc = JSON.parse(await readFile(join(dir, 'profile_export_aiperf.json'), 'utf8')) as Record<string, Record<string, number> | undefined>;
  const lines = (await readFile(join(dir, 'profile_export.jsonl'), 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as { metadata: { request_start_ns: number; request_end_ns: number }; metrics: Record<string, { value: number }> });
  assert.equal(lines.length, 24);
  // The mean of a step function is its area over the window: the time each request was open, summed.
  const start = Math.min(...lines.map((l) => l.metadata.request_start_ns));
  const end = Math.max(...lines.map((l) => l.metadata.request_end_ns));
  const open = lines.reduce((s, l) => s + (l.metadata.request_end_ns - l.metadata.request_start_ns), 0);
  const ec = doc['effective_concurrency']!;
  assert.ok(Math.abs(ec.avg! - open / (end - start)) < 0.01, `effective_concurrency ${ec.avg} vs ${open / (end - start)} from the records`);
  assert.ok(ec.max === 4 && ec.avg! > 1 && ec.avg! <= 4, 'a closed loop at 4 holds up to 4 in flight');
  const prefillMs = lines.reduce((s, l) => s + l.metrics['time_to_first_token']!.value, 0);
  assert.ok(Math.abs(doc['effective_prefill_concurrency']!.avg! - (prefillMs * 1e6) / (end - start)) < 0.01);
  const tif = doc['tokens_in_flight']!;
  assert.equal(tif.unit as unknown, 'tokens');
  assert.ok(tif.max! <= 4 * (64 + 16) && tif.avg! > 64, `tokens_in_flight ${tif.avg} (max ${tif.max}): at least one prompt held, never more than 4 requests' worth`);
  assert.ok(!('p1' in tif) && !('count' in tif), 'the fields AIPerf writes for a time-weighted metric, no more');
  const csv = await readFile(join(dir, 'profile_export_aiperf.csv'), 'utf8');
  assert.match(csv, /^Effective Concurrency,[0-9.]+,[0-9.]+,4\.00,,,,,[0-9.]+,,[0-9.]+,[0-9.]+,[0-9.]+,[0-9.]+$/m, 'a distribution row: avg, min, max, the percentiles AIPerf gives, std');
  assert.match(csv, /^Tokens In Flight \(tokens\),/m);
});
