import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRng, type RequestRecord, type Rng } from '../src/core/index.js';
import { AIPERF_FILES, writeAiperfExports } from '../src/report/index.js';
import { metricValue } from '../src/gate/index.js';
import { summarize } from '../src/stats/index.js';
import { runCli } from './helpers.js';

// Times are multiples of 1/8 ms on whole-millisecond origins: every sum and difference is exact in
// binary floating point, so "exactly the same percentiles" can be asserted bit for bit.
const Q = 0.125;

function record(rng: Rng, shard: number, i: number): RequestRecord {
  const startMs = rng.int(0, 8000) * Q;
  const worker = `10.0.0.${rng.int(1, 4)}:8000`;
  if (rng.next() < 0.05) {
    return {
      id: `s${shard}-r${i}`, phase: 'profiling', worker, startMs, firstTokenMs: null, chunkMs: [], endMs: startMs + rng.int(1, 400) * Q,
      inputTokens: { client: 128, server: null }, outputTokens: { client: 0, server: null },
      outcome: 'http_error', status: 503, error: 'worker overloaded', redispatched: false, migrated: false,
    };
  }
  const first = startMs + rng.int(40, 4000 + (shard === 2 ? 40_000 : 0)) * Q;
  const chunks = [first];
  const n = rng.int(1, 24);
  for (let k = 1; k < n; k++) chunks.push(chunks[k - 1]! + rng.int(8, 400) * Q);
  return {
    id: `s${shard}-r${i}`, phase: i < 3 ? 'warmup' : 'profiling', worker, startMs, firstTokenMs: first, chunkMs: chunks, endMs: chunks[n - 1]! + 2 * Q,
    inputTokens: { client: 128, server: 128 }, outputTokens: { client: n, server: rng.next() < 0.5 ? n : null },
    outcome: 'ok', status: 200, error: null, redispatched: rng.next() < 0.02, migrated: false,
  };
}

const shift = (r: RequestRecord, d: number): RequestRecord => ({
  ...r, startMs: r.startMs + d, endMs: r.endMs + d, firstTokenMs: r.firstTokenMs === null ? null : r.firstTokenMs + d, chunkMs: r.chunkMs.map((c) => c + d),
});

test('merging 4 bench shards gives exactly the percentiles of one run over the same records', async () => {
  const root = mkdtempSync(join(tmpdir(), 'tailgate-merge-'));
  const rng = createRng(7);
  const base = Date.UTC(2026, 11, 2, 16, 0, 0);
  const all: RequestRecord[] = [];
  const shardPercentiles: number[] = [];
  for (let s = 0; s < 4; s++) {
    // Each pod has its own clock origin: the common start plus its own lag.
    const originMs = base + [3, 0, 11, 2500][s]!;
    const records = Array.from({ length: 150 }, (_, i) => record(rng, s, i));
    all.push(...records.map((r) => shift(r, originMs - base)));
    const summary = summarize(records);
    shardPercentiles.push(metricValue(summary, 'time_to_first_token', 'p99')!);
    const dir = join(root, `shard-${s}`);
    mkdirSync(dir);
    await writeAiperfExports(dir, {
      summary, records, exportLevel: 'records',
      inputConfig: { endpoint: { model_names: ['m'] }, loadgen: { concurrency: 8, request_count: 147, warmup_request_count: 3 } },
      startTime: new Date(originMs), endTime: new Date(originMs + 6000), originEpochMs: originMs,
      extra: { shard: { index: s, count: 4 }, start_lag_ms: originMs - base },
    });
  }

  const out = join(root, 'merged');
  const r = await runCli(['merge', root, '--out', out], { timeoutMs: 60_000 });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /merged 4 shards, 588 records/);
  assert.match(r.stderr, /1 shard\(s\) started late: .*shard-3/);

  const merged = JSON.parse(readFileSync(join(out, AIPERF_FILES.json), 'utf8')) as Record<string, Record<string, unknown>>;
  const expected = JSON.parse(JSON.stringify(summarize(all).metrics)) as Record<string, Record<string, unknown>>;
  assert.ok(Object.keys(expected).length >= 10);
  for (const [tag, block] of Object.entries(expected)) assert.deepEqual(merged[tag], block, tag);
  const p99 = merged['time_to_first_token']!['p99'] as number;
  const naive = shardPercentiles.reduce((a, b) => a + b, 0) / 4;
  assert.notEqual(p99, naive, 'an average of shard percentiles is not the percentile');
  assert.deepEqual((merged['input_config']!['loadgen'] as Record<string, unknown>)['concurrency'], 32);
  assert.deepEqual(merged['tailgate']!['late_shards'], [join(root, 'shard-3')]);
  const lines = readFileSync(join(out, AIPERF_FILES.jsonl), 'utf8').trim().split('\n');
  assert.equal(lines.length, 588);
  assert.match(readFileSync(join(out, AIPERF_FILES.csv), 'utf8'), /^Metric,avg,min,max,p1/);

  // The merged export is itself a shard: merging it again changes nothing.
  const again = join(root, 'again');
  assert.equal((await runCli(['merge', out, '--out', again], { timeoutMs: 60_000 })).code, 0);
  const twice = JSON.parse(readFileSync(join(again, AIPERF_FILES.json), 'utf8')) as Record<string, unknown>;
  for (const tag of Object.keys(expected)) assert.deepEqual(twice[tag], expected[tag], tag);
});

test('merge: folders that hold no shard, and a missing --out, are one-line errors with exit 2', async () => {
  const empty = mkdtempSync(join(tmpdir(), 'tailgate-merge-empty-'));
  const r = await runCli(['merge', empty, '--out', join(empty, 'x')], { timeoutMs: 60_000 });
  assert.equal(r.code, 2);
  assert.match(r.stderr, /^tailgate: .* holds no profile_export_aiperf\.json/);
  const missing = await runCli(['merge', '/nonexistent-dir', '--out', join(empty, 'x')], { timeoutMs: 60_000 });
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /is not a folder/);
  const noOut = await runCli(['merge', empty], { timeoutMs: 60_000 });
  assert.equal(noOut.code, 2);
  assert.match(noOut.stderr, /--out/);
});

test('a distributed bench: two shards from a common start, one late; merged into one export', async (t) => {
  const { startFakeUpstream } = await import('./doubles/fake-upstream.js');
  const upstream = await startFakeUpstream('m');
  t.after(() => upstream.close());
  const root = mkdtempSync(join(tmpdir(), 'tailgate-shards-'));
  // Room for a CLI start on a loaded machine (seconds there): the first shard must arrive early.
  const startAt = Math.ceil(Date.now() / 1000) + 15;
  const shard = (i: number) =>
    runCli([
      'bench', '--url', upstream.url, '--model', 'm', '--tokenizer', 'builtin', '--streaming', '--concurrency', '4', '--request-count', '10', '--warmup-request-count', '2',
      '--synthetic-input-tokens-mean', '8', '--output-tokens-mean', '4', '--shard-count', '2', '--shard-index', String(i), '--start-at', String(startAt),
      '--artifact-dir', join(root, `shard-${i}`),
    ], { timeoutMs: 60_000 });
  const first = shard(0);
  await new Promise((r) => setTimeout(r, startAt * 1000 - Date.now() + 2000));
  const [a, b] = await Promise.all([first, shard(1)]);
  assert.equal(a.code, 0, a.stderr);
  assert.equal(b.code, 0, b.stderr);
  assert.match(a.stderr, /shard 1 of 2: waiting [\d.]+ s for the common start/);
  assert.match(b.stderr, /shard 2 of 2: LATE: started [\d.]+ s after the common start/);
  const one = JSON.parse(readFileSync(join(root, 'shard-0', AIPERF_FILES.json), 'utf8')) as Record<string, Record<string, unknown>>;
  assert.deepEqual(one['tailgate']!['shard'], { index: 0, count: 2 });
  assert.equal((one['input_config']!['loadgen'] as Record<string, unknown>)['concurrency'], 2);

  const out = join(root, 'merged');
  const m = await runCli(['merge', root, '--out', out], { timeoutMs: 60_000 });
  assert.equal(m.code, 0, m.stderr);
  assert.match(m.stdout, /merged 2 shards, 10 records/);
  assert.match(m.stderr, /1 shard\(s\) started late: .*shard-1/);
  const merged = JSON.parse(readFileSync(join(out, AIPERF_FILES.json), 'utf8')) as Record<string, Record<string, unknown>>;
  assert.equal((merged['input_config']!['loadgen'] as Record<string, unknown>)['concurrency'], 4);
  assert.equal((merged['request_count'] as Record<string, unknown> | undefined)?.['avg'] ?? merged['tailgate']!['profiling_count'], 10);
});
