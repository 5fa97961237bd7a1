import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { createRng, type RequestRecord } from '../core/index.js';
import {
  LogHistogram, PERCENTILES, SummaryBuilder, describe, inflightEvents, isMetricBlock, peakInflight, percentile, summarize, syntheticError, syntheticRecord, timeSeries,
  type InflightPeak,
} from './index.js';

test('percentile interpolates linearly between ranks like numpy', () => {
  const s = [1, 2, 3, 4];
  assert.equal(percentile(s, 50), 2.5);
  assert.equal(percentile(s, 0), 1);
  assert.equal(percentile(s, 100), 4);
  // np.percentile([10,20,30,40,50], 99) == 49.6
  assert.ok(Math.abs(percentile([10, 20, 30, 40, 50], 99) - 49.6) < 1e-9);
  assert.ok(Number.isNaN(percentile([], 50)));
  assert.equal(percentile([7], 99), 7);
});

test("describe's percentiles, min and max are those of a full sort, with duplicates, long runs and any order", () => {
  fc.assert(
    fc.property(
      fc.array(fc.oneof(fc.integer({ min: -5, max: 5 }), fc.double({ min: -1e6, max: 1e6, noNaN: true })), { minLength: 1, maxLength: 400 }),
      fc.constantFrom('as drawn', 'ascending', 'descending', 'constant'),
      (drawn, order) => {
        const xs = order === 'constant' ? drawn.map(() => drawn[0]!) : order === 'ascending' ? [...drawn].sort((a, b) => a - b) : order === 'descending' ? [...drawn].sort((a, b) => b - a) : drawn;
        const sorted = Float64Array.from(xs).sort();
        const b = describe(Float64Array.from(xs), 'ms')!;
        // === rather than Object.is: a selection may place -0 where a sort places 0.
        for (const q of PERCENTILES) assert.ok(b[`p${q}`] === percentile(sorted, q), `p${q}`);
        assert.ok(b.min === sorted[0] && b.max === sorted[sorted.length - 1]);
        assert.equal(b.count, xs.length);
      },
    ),
    { numRuns: 500 },
  );
  // Large: a million values over 13 distinct ones (long runs of equal values), and a sawtooth.
  for (const xs of [Float64Array.from({ length: 1 << 20 }, (_, i) => (i * 7919) % 13), Float64Array.from({ length: 100_000 }, (_, i) => i % 1000)]) {
    const sorted = xs.slice().sort();
    const b = describe(xs, 'ms')!;
    for (const q of PERCENTILES) assert.equal(b[`p${q}`], percentile(sorted, q));
  }
});

test('describe gives every AIPerf stat with population std', () => {
  const b = describe(Float64Array.from([4, 2, 8, 6]), 'ms')!;
  assert.equal(b.avg, 5);
  assert.equal(b.min, 2);
  assert.equal(b.max, 8);
  assert.equal(b.count, 4);
  assert.equal(b.sum, 20);
  assert.equal(b.std, Math.sqrt(5)); // np.std([2,4,6,8]) = sqrt(5)
  for (const q of PERCENTILES) assert.equal(typeof b[`p${q}`], 'number');
  assert.equal(describe(new Float64Array(0), 'ms'), null);
});

test('summarize: AIPerf definitions over profiling records only', () => {
  const records = [
    syntheticRecord({ phase: 'warmup', startMs: 0, ttftMs: 5000, itlMs: 10, tokens: 10, worker: 'a' }),
    syntheticRecord({ startMs: 1000, ttftMs: 100, itlMs: 10, tokens: 11, worker: 'a', serverTokens: true }),
    syntheticRecord({ startMs: 1000, ttftMs: 300, itlMs: 20, tokens: 11, worker: 'b', serverTokens: true }),
    syntheticRecord({ startMs: 1100, ttftMs: 200, itlMs: 0, tokens: 1, worker: 'b' }),
    syntheticError({ startMs: 1200, endMs: 1250, status: 503, error: 'Service Unavailable', worker: 'b' }),
    syntheticError({ startMs: 1210, endMs: 1260, status: 503, error: 'Service Unavailable', worker: 'b' }),
  ];
  const s = summarize(records, { goodput: { time_to_first_token: 250 } });
  assert.equal(s.profilingCount, 5);
  assert.equal(s.okCount, 3);
  assert.equal(s.errorCount, 2);
  const ttft = s.metrics.time_to_first_token;
  assert.ok(isMetricBlock(ttft));
  assert.equal(ttft.count, 3);
  assert.equal(ttft.min, 100);
  assert.equal(ttft.max, 300);
  assert.equal(ttft.p50, 200);
  // ITL only for OSL >= 2: (latency - ttft) / (osl - 1) = 10 and 20.
  const itl = s.metrics.inter_token_latency;
  assert.ok(isMetricBlock(itl));
  assert.equal(itl.count, 2);
  assert.equal(itl.avg, 15);
  const perUser = s.metrics.output_token_throughput_per_user;
  assert.ok(isMetricBlock(perUser));
  assert.equal(perUser.max, 100);
  // Duration = max end - min start over profiling = (1000 + 300 + 200) - 1000 = 500 ms.
  assert.equal(s.durationMs, 500);
  assert.deepEqual(s.metrics.benchmark_duration, { unit: 'sec', avg: 0.5 });
  assert.deepEqual(s.metrics.output_token_throughput, { unit: 'tokens/sec', avg: 23 / 0.5 });
  assert.deepEqual(s.metrics.request_throughput, { unit: 'requests/sec', avg: 6 });
  assert.deepEqual(s.metrics.request_count, { unit: 'requests', avg: 3 });
  assert.deepEqual(s.metrics.error_request_count, { unit: 'requests', avg: 2 });
  assert.deepEqual(s.metrics.goodput, { unit: 'requests/sec', avg: 4 }); // 2 of 3 under 250 ms
  assert.equal(isMetricBlock(s.metrics.usage_completion_tokens) && s.metrics.usage_completion_tokens.count, 2);
  assert.equal(s.tokenSources.disagreementPct, 0);
  assert.deepEqual(s.errorSummary, [{ kind: 'http_error', status: 503, message: 'Service Unavailable', count: 2 }]);
  assert.equal(s.perWorker.a!.requests, 1);
  assert.equal(s.perWorker.b!.requests, 4);
  assert.equal(s.perWorker.b!.shareOfRequests, 0.8);
  assert.equal(s.perWorker.a!.ttftP99Ms, 100);
  assert.equal(s.perWorker.b!.peakInflight, 4); // all four of b's requests overlap at 1210 ms
  const icl = s.metrics.inter_chunk_latency;
  assert.ok(isMetricBlock(icl));
  assert.equal(icl.count, 20);
});

test('summarize rejects unknown goodput tags with a clear error', () => {
  assert.throws(() => summarize([], { goodput: { ttft: 1 } }), (e: Error & { code?: string }) => e.code === 'CONFIG_INVALID' && /ttft/.test(e.message));
});

test('summarize of nothing is well-formed', () => {
  const s = summarize([]);
  assert.equal(s.okCount, 0);
  assert.equal(s.metrics.time_to_first_token, undefined);
  assert.deepEqual(s.metrics.output_token_throughput, { unit: 'tokens/sec', avg: 0 });
});

test('token disagreement between client and server is reported', () => {
  const r = syntheticRecord({ startMs: 0, ttftMs: 10, itlMs: 1, tokens: 100, serverTokens: true });
  r.outputTokens.server = 110;
  assert.equal(summarize([r]).tokenSources.disagreementPct, 10);
});

test('inter-chunk latency falls back to a histogram within its error bound', () => {
  const recs = Array.from({ length: 200 }, (_, i) => syntheticRecord({ startMs: i, ttftMs: 50, itlMs: 5 + (i % 17), tokens: 20 }));
  const exact = summarize(recs).metrics.inter_chunk_latency;
  const approx = summarize(recs, { exactChunkGapLimit: 10 }).metrics.inter_chunk_latency;
  assert.ok(isMetricBlock(exact) && isMetricBlock(approx));
  assert.equal(approx.count, exact.count);
  assert.equal(approx.min, exact.min);
  assert.equal(approx.max, exact.max);
  assert.ok(Math.abs(approx.avg - exact.avg) < 1e-9);
  assert.ok(Math.abs(approx.std - exact.std) < 1e-9);
  for (const q of [50, 90, 99] as const) assert.ok(Math.abs(approx[`p${q}`] / exact[`p${q}`] - 1) < 0.002, `p${q}`);
});

test('LogHistogram merges exactly', () => {
  const a = new LogHistogram();
  const b = new LogHistogram();
  const all = new LogHistogram();
  for (let i = 1; i <= 1000; i++) {
    (i % 2 ? a : b).add(i);
    all.add(i);
  }
  a.merge(b);
  assert.deepEqual(a.toBlock('ms'), all.toBlock('ms'));
  assert.ok(Math.abs(a.percentile(50) / 500.5 - 1) < 0.002);
});

test('timeSeries: in-flight peaks per worker, tokens at chunk times, TTFT by start', () => {
  const recs = [
    syntheticRecord({ startMs: 0, ttftMs: 100, itlMs: 100, tokens: 10, worker: 'a' }), // chunks 100..1000
    syntheticRecord({ startMs: 0, ttftMs: 1500, itlMs: 100, tokens: 5, worker: 'b' }), // chunks 1500..1900
    syntheticRecord({ startMs: 1200, ttftMs: 50, itlMs: 10, tokens: 2, worker: 'b' }), // 1250..1260
  ];
  const ts = timeSeries(recs, { bucketMs: 1000 });
  assert.deepEqual(ts.tMs, [0, 1000]);
  assert.deepEqual(ts.inflight, [2, 2]);
  assert.deepEqual(ts.perWorkerInflight.a, [1, 1]); // a ends exactly at 1000
  assert.deepEqual(ts.perWorkerInflight.b, [1, 2]);
  assert.deepEqual(ts.outputTokensPerS, [9, 8]); // 9 of a's chunks in [0,1000), 1 + 5 + 2 after
  assert.deepEqual(ts.ttftP99Ms, [1500 - 0.01 * (1500 - 100), 50]);
  const sum = ts.outputTokensPerS.reduce((x, y) => x + y, 0);
  assert.equal(sum, 17);
});

test('timeSeries with a window carries the level in from before it', () => {
  const recs = [syntheticRecord({ startMs: 0, ttftMs: 100, itlMs: 100, tokens: 30, worker: 'a' })];
  const ts = timeSeries(recs, { bucketMs: 500, fromMs: 1000, toMs: 2000 });
  assert.deepEqual(ts.inflight, [1, 1]);
  assert.deepEqual(ts.perWorkerInflight.a, [1, 1]);
});

test('summarize and timeSeries handle 100k records quickly enough to be usable', () => {
  const recs = Array.from({ length: 100_000 }, (_, i) =>
    syntheticRecord({ startMs: i * 0.5, ttftMs: 100 + (i % 50), itlMs: 8, tokens: 16, worker: `w${i % 8}` }));
  const s = summarize(recs);
  assert.equal(s.okCount, 100_000);
  assert.equal(Object.keys(s.perWorker).length, 8);
  const ts = timeSeries(recs, { bucketMs: 1000 });
  assert.equal(ts.tMs.length, Math.ceil((recs.at(-1)!.endMs) / 1000));
});

test('non-streaming responses: TTFT and latency, but no inter-token figures', () => {
  const r = syntheticRecord({ startMs: 0, ttftMs: 400, itlMs: 0, tokens: 1 });
  r.outputTokens.client = 64; // one message carrying 64 tokens
  const s = summarize([r]);
  assert.equal(isMetricBlock(s.metrics.request_latency) && s.metrics.request_latency.max, 400);
  assert.equal(s.metrics.inter_token_latency, undefined);
  assert.equal(s.metrics.output_token_throughput_per_user, undefined);
  assert.equal(isMetricBlock(s.metrics.output_sequence_length) && s.metrics.output_sequence_length.avg, 64);
});

test('error groups stay bounded when every message is unique', () => {
  const recs = Array.from({ length: 100 }, (_, i) => syntheticError({ startMs: i, endMs: i + 1, outcome: 'timeout', status: null, error: `timed out: request ${i}` }));
  const groups = summarize(recs).errorSummary;
  assert.equal(groups.length, 20);
  assert.equal(groups.reduce((n, g) => n + g.count, 0), 100);
  assert.equal(groups.at(-1)!.message, '81 other distinct errors (timeout)');
  assert.equal(groups.at(-1)!.kind, 'timeout');
});

test('LogHistogram ignores non-finite values and spans wide ranges', () => {
  const h = new LogHistogram();
  for (const v of [Number.NaN, Number.POSITIVE_INFINITY, 1e-6, 0, 5, 1e9]) h.add(v);
  const b = h.toBlock('ms')!;
  assert.equal(b.count, 4);
  assert.equal(b.min, 0);
  assert.equal(b.max, 1e9);
});

test('peak in-flight matches a sweep of the ordered events, ties and unnamed workers included', () => {
  const rng = createRng(5);
  const records: RequestRecord[] = Array.from({ length: 3000 }, (_, i) => {
    const startMs = rng.int(0, 400);
    const r = syntheticRecord({ startMs, ttftMs: rng.int(0, 20), itlMs: 1, tokens: rng.int(1, 30), worker: `w${rng.int(0, 5)}` });
    if (i % 7 === 0) r.worker = null;
    if (i % 11 === 0) r.endMs = startMs - 1; // an end before its start counts as at the start
    return r;
  });
  const ev = inflightEvents(records);
  const overall: InflightPeak = { peak: 0, atMs: null };
  const byWorker: Record<string, InflightPeak> = {};
  const open = new Map<string, number>();
  let total = 0;
  for (let k = 0; k < ev.t.length; k++) {
    total += ev.delta[k]!;
    if (total > overall.peak) Object.assign(overall, { peak: total, atMs: ev.t[k]! });
    const w = records[ev.rec[k]!]!.worker;
    if (w === null) continue;
    const c = (open.get(w) ?? 0) + ev.delta[k]!;
    open.set(w, c);
    const p = (byWorker[w] ??= { peak: 0, atMs: null });
    if (c > p.peak) Object.assign(p, { peak: c, atMs: ev.t[k]! });
  }
  const got = peakInflight(records);
  assert.deepEqual(got.overall, overall);
  assert.deepEqual(Object.keys(got.byWorker).sort(), Object.keys(byWorker).sort());
  for (const [w, p] of Object.entries(byWorker)) assert.deepEqual(got.byWorker[w], p, w);
});

test('SummaryBuilder: inter-chunk gaps move to the histogram in order when they pass the limit', () => {
  const recs = Array.from({ length: 200 }, (_, i) => syntheticRecord({ startMs: i, ttftMs: 50, itlMs: 5 + (i % 17) / 3, tokens: 20 }));
  const all = new SummaryBuilder({ exactChunkGapLimit: 0 });
  const late = new SummaryBuilder({ exactChunkGapLimit: 1000 });
  for (const r of recs) {
    all.add(r);
    late.add(r);
  }
  const histogram = JSON.stringify(all.build());
  assert.equal(JSON.stringify(late.build()), histogram);
  assert.equal(JSON.stringify(summarize(recs, { exactChunkGapLimit: 1000 })), histogram, 'summarize past the limit: the histogram from the start');
  // 200 records x 19 gaps: a limit of exactly 3800 keeps them all exact.
  assert.equal(JSON.stringify(summarize(recs, { exactChunkGapLimit: 3800 })), JSON.stringify(summarize(recs)));
  assert.notEqual(JSON.stringify(summarize(recs, { exactChunkGapLimit: 3799 })), JSON.stringify(summarize(recs)));
});
