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
