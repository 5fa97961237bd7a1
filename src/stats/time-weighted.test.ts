import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { RequestRecord } from '../core/index.js';
import { syntheticRecord } from './synthetic.js';
import { sortedIndices, timeWeightedMetrics } from './time-weighted.js';

test('sortedIndices (the natural-run merge) orders as a plain sort by key, flag, then index: ties, runs and shuffles alike', () => {
  // keys from a small set (many ties), built as runs already in order (as a request's events come) or shuffled
  const keys = fc.array(fc.integer({ min: 0, max: 6 }), { maxLength: 120 });
  fc.assert(
    fc.property(keys, fc.array(fc.integer({ min: 0, max: 1 }), { maxLength: 120 }), fc.boolean(), fc.boolean(), (raw, rawFlags, runs, withFlags) => {
      const n = raw.length;
      const ks = Float64Array.from(runs ? raw.map((k, i) => k + (i % 4) * 10) : raw);
      const flags = withFlags ? Uint8Array.from({ length: n }, (_, i) => rawFlags[i] ?? 0) : null;
      const want = Array.from({ length: n }, (_, i) => i).sort((i, j) => ks[i]! - ks[j]! || (flags ? flags[i]! - flags[j]! : 0) || i - j);
      assert.deepEqual([...sortedIndices(ks, flags, n)], want);
    }),
    { numRuns: 300, seed: 11 },
  );
});

test('sortedIndices on clustered keys (most at nearly one of two times, a few far out or infinite): the same as a plain sort', () => {
  const key = fc.oneof(
    { weight: 8, arbitrary: fc.integer({ min: 0, max: 3 }).map((k) => (k % 2 === 0 ? 1000 : -1000) + k * 1e-9) },
    { weight: 2, arbitrary: fc.double({ min: -2000, max: 2000, noNaN: true }) },
  );
  const infinite = fc.constantFrom(Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY);
  fc.assert(
    fc.property(fc.array(fc.tuple(key, fc.integer({ min: 0, max: 1 })), { maxLength: 400, size: 'max' }), fc.option(fc.tuple(infinite, fc.nat())), (events, inf) => {
      if (inf !== null && events.length > 0) events[inf[1] % events.length]![0] = inf[0];
      const ks = Float64Array.from(events, ([k]) => k);
      const flags = Uint8Array.from(events, ([, f]) => f);
      const want = events.map((_, i) => i).sort((i, j) => (ks[i] === ks[j] ? 0 : ks[i]! - ks[j]!) || flags[i]! - flags[j]! || i - j);
      assert.deepEqual([...sortedIndices(ks, flags, events.length)], want);
    }),
    { numRuns: 200, seed: 5 },
  );
});

test('time-weighted load over random records: each curve\'s average is its area over the window (requests open, requests before a first token, tokens held), never below 0', () => {
  const one = fc.record({ startMs: fc.integer({ min: 0, max: 50 }), ttftMs: fc.integer({ min: 1, max: 20 }), itlMs: fc.integer({ min: 0, max: 10 }), tokens: fc.integer({ min: 1, max: 5 }), inputTokens: fc.integer({ min: 1, max: 300 }) });
  fc.assert(
    fc.property(fc.array(one, { minLength: 1, maxLength: 40 }), fc.boolean(), (specs, streamed) => {
      const records: RequestRecord[] = specs.map((s, i) => {
        const r = syntheticRecord({ id: `r${i}`, ...s });
        // a run that did not stream has one chunk per answer
        return streamed ? r : { ...r, chunkMs: [r.firstTokenMs!], endMs: r.endMs + 1 };
      });
      const tokens = (r: RequestRecord) => ({ isl: r.inputTokens.client, osl: r.outputTokens.client! });
      const m = timeWeightedMetrics(records, tokens);
      const start = Math.min(...records.map((r) => r.startMs));
      const window = Math.max(...records.map((r) => r.endMs)) - start;
      const near = (got: number, want: number, what: string) => assert.ok(Math.abs(got - want) <= 1e-9 * Math.max(1, Math.abs(want)), `${what}: ${got} vs ${want}`);
      near(m['effective_concurrency']!.avg, records.reduce((s, r) => s + r.endMs - r.startMs, 0) / window, 'in flight');
      near(m['effective_prefill_concurrency']?.avg ?? 0, records.reduce((s, r) => s + r.firstTokenMs! - r.startMs, 0) / window, 'before a first token');
      // tokens held: the prompt from start to end; the answer's first token from the first chunk, the
      // rest spread over the later chunks (one that lands at the end counts just before it); all at the first token without streaming
      const streaming = records.some((r) => r.chunkMs.length >= 2);
      let area = 0;
      for (const r of records) {
        const { isl, osl } = tokens(r);
        area += isl * (r.endMs - r.startMs);
        const c = r.chunkMs.length;
        if (!streaming) area += osl * (r.endMs - r.firstTokenMs!);
        else if (c >= 2) {
          area += r.endMs - r.firstTokenMs!;
          for (let k = 1; k < c; k++) area += ((osl - 1) / (c - 1)) * (r.endMs - Math.min(r.chunkMs[k]!, r.endMs - 1e-6));
        }
      }
      const tif = m['tokens_in_flight']!;
      near(tif.avg, area / window, 'tokens in flight');
      for (const b of Object.values(m)) assert.ok(b.min >= 0 && b.min <= b.p50 && b.p50 <= b.p90 && b.p90 <= b.p99 && b.p99 <= b.max, JSON.stringify(b));
    }),
    { numRuns: 300, seed: 7 },
  );
});

/** AIPerf's curves and statistics written out plainly (arrays, comparator sorts), each sum in the same order as the module. */
function plainTimeWeighted(records: readonly RequestRecord[], tokensOf: (r: RequestRecord) => { isl: number; osl: number }): Record<string, object> {
  const prof = records.filter((r) => r.phase === 'profiling' && r.endMs >= r.startMs);
  if (prof.length === 0) return {};
  const start = Math.min(...prof.map((r) => r.startMs));
  const end = Math.max(...prof.map((r) => r.endMs));
  const stats = (events: [number, number][], unit: string): object | null => {
    if (events.length === 0 || end - start <= 0) return null;
    const flag = (i: number) => (events[i]![1] > 0 ? 1 : 0);
    const order = events.map((_, i) => i).sort((i, j) => events[i]![0] - events[j]![0] || flag(i) - flag(j) || i - j);
    let sum = 0;
    const sums = order.map((i) => (sum += events[i]![1]));
    const peak = Math.max(0, ...sums.map(Math.abs));
    const ts = order.map((i) => events[i]![0]);
    const steps = [0, ...sums.map((v) => (Math.abs(v) < 1e-9 * peak ? 0 : v))].map((v, k) => {
      const from = k === 0 ? start : Math.max(ts[k - 1]!, start);
      return { v, d: Math.max(0, Math.min(k < ts.length ? ts[k]! : end, end) - from) };
    });
    const held = steps.filter((s) => s.d > 0);
    if (held.length === 0) return null;
    const avg = held.reduce((a, s) => a + s.v * s.d, 0) / (end - start);
    const std = Math.sqrt(held.reduce((a, s) => a + s.d * (s.v - avg) ** 2, 0) / (end - start));
    const sorted = held.map((s, h) => ({ ...s, h })).sort((a, b) => a.v - b.v || a.h - b.h);
    const heldMs = sorted.reduce((a, s) => a + s.d, 0);
    const pct = (q: number) => {
      let cum = 0;
      return (sorted.find((s) => (cum += s.d) / heldMs >= q) ?? sorted[sorted.length - 1]!).v;
    };
    const vs = held.map((s) => s.v);
    return { unit, avg, min: Math.min(...vs), max: Math.max(...vs), p50: pct(0.5), p90: pct(0.9), p95: pct(0.95), p99: pct(0.99), std };
  };
  const streamed = prof.some((r) => r.outcome === 'ok' && r.chunkMs.length >= 2);
  const tokens = prof.flatMap((r): [number, number][] => {
    if (r.outcome !== 'ok' || r.firstTokenMs === null || r.firstTokenMs <= r.startMs) return [];
    const { isl, osl } = tokensOf(r);
    const c = r.chunkMs.length;
    if (!streamed) return [[r.startMs, isl], [r.firstTokenMs, osl], [r.endMs, -(isl + osl)]];
    if (c < 2) return [[r.startMs, isl], [r.endMs, -isl]];
    const later = r.chunkMs.slice(1).map((t): [number, number] => [Math.min(t, r.endMs - 1e-6), (osl - 1) / (c - 1)]);
    return [[r.startMs, isl], [r.firstTokenMs, 1], ...later, [r.endMs, -(isl + osl)]];
  });
  const curves: [string, [number, number][], string][] = [
    ['effective_concurrency', prof.flatMap((r): [number, number][] => [[r.startMs, 1], [r.endMs, -1]]), 'requests'],
    ['effective_prefill_concurrency', prof.flatMap((r): [number, number][] => (r.firstTokenMs === null || r.firstTokenMs < r.startMs ? [] : [[r.startMs, 1], [r.firstTokenMs, -1]])), 'requests'],
    ['tokens_in_flight', tokens, 'tokens'],
  ];
  return Object.fromEntries(curves.flatMap(([tag, events, unit]) => {
    const b = stats(events, unit);
    return b ? [[tag, b]] : [];
  }));
}

test('timeWeightedMetrics equals the plain computation bit for bit: tied and fractional stamps, tokens split unevenly over chunks, huge prompts, failures, warm-up', () => {
  const stamp = fc.oneof(fc.integer({ min: 0, max: 40 }), fc.double({ min: 0, max: 40, noNaN: true }));
  const one = fc.record({
    startMs: stamp,
    ttftMs: fc.oneof(fc.constant(0), stamp),
    gaps: fc.array(fc.oneof(stamp, fc.constant(-1)), { maxLength: 6 }),
    tailMs: fc.oneof(fc.constant(0), stamp),
    isl: fc.oneof(fc.integer({ min: 0, max: 300 }), fc.integer({ min: 0, max: 1e7 })),
    osl: fc.integer({ min: 1, max: 20 }),
    ok: fc.boolean(),
    warmup: fc.boolean(),
  });
  fc.assert(
    fc.property(fc.array(one, { minLength: 1, maxLength: 30, size: 'max' }), (specs) => {
      const records: RequestRecord[] = specs.map((s, i) => {
        const first = s.startMs + s.ttftMs;
        const chunkMs = [first];
        for (const g of s.gaps) chunkMs.push(chunkMs[chunkMs.length - 1]! + g);
        const endMs = Math.max(...chunkMs) + s.tailMs;
        const r = syntheticRecord({ id: `r${i}`, startMs: s.startMs, ttftMs: s.ttftMs, itlMs: 1, tokens: s.osl, inputTokens: s.isl });
        return { ...r, chunkMs, endMs, phase: s.warmup && i % 3 === 0 ? 'warmup' : 'profiling', outcome: s.ok ? 'ok' : 'http_error' };
      });
      const tokens = (r: RequestRecord) => ({ isl: r.inputTokens.client, osl: r.outputTokens.client });
      assert.deepEqual(timeWeightedMetrics(records, tokens), plainTimeWeighted(records, tokens));
    }),
    { numRuns: 400, seed: 38 },
  );
});
